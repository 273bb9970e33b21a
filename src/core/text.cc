#include "core/text.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <vector>

namespace solbench {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string demangle(const std::string& symbol) {
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : symbol;
}

std::string short_uuid(const std::string& uuid) { return uuid.substr(0, 8); }

std::vector<std::string> split_trimmed(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(trim(item));
  return out;
}

std::string first_line(const std::string& s, size_t max) {
  const size_t start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  std::string l = s.substr(start, s.find('\n', start) - start);
  return l.size() > max ? l.substr(0, max - 3) + "..." : l;
}

std::string failure_line(const std::string& log, size_t max) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);)
    if (!trim(l).empty()) lines.push_back(l);
  for (const char* key : {"round ", "the worker", "did not finish", "error", "Error"})
    for (const auto& l : lines)
      if (l.find(key) != std::string::npos) return first_line(l, max);
  return lines.empty() ? "" : first_line(lines.back(), max);
}

std::string quantity_text(double v, const char* zero) {
  if (v == 0) return zero;
  if (!(v > 0)) return "-";
  if (v < 1e-4) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3e", v);
    return buf;
  }
  // Rounded to 4 significant digits first, so that 9.9996 reads 10.00, not 10.000.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  const double rounded = std::strtod(buf, nullptr);
  const int integer_digits = static_cast<int>(std::floor(std::log10(rounded))) + 1;
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, 4 - integer_digits), rounded);
  return buf;
}

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width || width < 5) return s;
  const size_t keep = width - 3, head = keep - keep / 2, tail = keep / 2;
  return s.substr(0, head) + "..." + s.substr(s.size() - tail);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::min<size_t>(3, (word.size() + 1) / 2);  // must be below this
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace solbench
