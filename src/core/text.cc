#include "core/text.h"

#include <sstream>
#include <vector>

namespace solbench {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
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

}  // namespace solbench
