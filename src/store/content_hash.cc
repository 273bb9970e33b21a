// Content hashes (SHA-256 through OpenSSL's libcrypto, as the build cache uses)
// and the store's default location.
#include <openssl/evp.h>

#include <cstdlib>
#include <stdexcept>

#include "core/definition.h"
#include "core/settings.h"
#include "store/store.h"

namespace solbench::store {

namespace fs = std::filesystem;

std::string content_hash(const json& j) {
  const std::string text = j.dump();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    throw StoreError("content_hash: OpenSSL's SHA-256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

std::string definition_hash(const Definition& d) { return content_hash(to_json(d)); }

fs::path default_db_path() {
  if (const fs::path home = settings().cache_home(); !home.empty()) return home / "solbench.db";
  throw StoreError(
      "cannot place the results store: none of SOLBENCH_CACHE_DIR, XDG_CACHE_HOME or HOME is set "
      "(pass --db FILE)");
}

}  // namespace solbench::store
