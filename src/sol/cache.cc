#include "sol/cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/settings.h"

namespace solbench::sol {

namespace fs = std::filesystem;

fs::path cache_dir() {
  const fs::path home = settings().cache_home();
  return (home.empty() ? fs::path("/tmp/.cache/solbench") : home) / "sol";
}

std::string content_hash(std::initializer_list<std::string> parts) {
  uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0x84222325cbf29ce4ULL;
  auto mix = [&](unsigned char c) {
    h1 = (h1 ^ c) * 0x100000001b3ULL;
    h2 = (h2 ^ c) * 0x100000001b3ULL;
    h2 ^= h2 >> 29;
  };
  for (const std::string& p : parts) {
    uint64_t n = p.size();
    for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(n >> (8 * i)));
    for (char c : p) mix(static_cast<unsigned char>(c));
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

std::optional<json> cache_get(const std::string& kind, const std::string& key) {
  std::ifstream in(cache_dir() / kind / (key + ".json"));
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void cache_put(const std::string& kind, const std::string& key, const json& value) {
  std::error_code ec;
  fs::path dir = cache_dir() / kind;
  fs::create_directories(dir, ec);
  if (ec) return;
  // Unique per process and call: `solbench sol -j N` writes from several threads.
  static std::atomic<uint64_t> serial{0};
  fs::path tmp = dir / (key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++));
  {
    std::ofstream out(tmp);
    if (!out) return;
    out << value.dump();
    if (!out) return;
  }
  fs::rename(tmp, dir / (key + ".json"), ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace solbench::sol
