#include "report/html.h"

#include <set>
#include <stdexcept>

namespace solbench::report {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string anchor_id(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_') {
      out += char(c);
    } else {
      out += '.';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

Template& Template::text(const std::string& slot, std::string_view value) {
  text_values_[slot] = escape(value);
  return *this;
}

Template& Template::markup(const std::string& slot, std::string value) {
  markup_values_[slot] = std::move(value);
  return *this;
}

std::string Template::render() const {
  std::string out;
  std::set<std::string> used;
  size_t pos = 0;
  while (true) {
    const size_t open = text_.find("{{", pos);
    if (open == std::string_view::npos) break;
    const bool raw = text_.compare(open, 3, "{{{") == 0;
    const size_t name_at = open + (raw ? 3 : 2);
    const size_t close = text_.find(raw ? "}}}" : "}}", name_at);
    if (close == std::string_view::npos)
      throw std::logic_error("report template: unclosed slot at offset " + std::to_string(open));
    const std::string name(text_.substr(name_at, close - name_at));
    const auto& values = raw ? markup_values_ : text_values_;
    const auto it = values.find(name);
    if (it == values.end())
      throw std::logic_error("report template: slot " + std::string(raw ? "{{{" : "{{") + name +
                             (raw ? "}}}" : "}}") + " was not filled");
    out.append(text_.substr(pos, open - pos));
    out += it->second;
    used.insert((raw ? "{" : "") + name);
    pos = close + (raw ? 3 : 2);
  }
  out.append(text_.substr(pos));
  for (const auto& [name, v] : text_values_)
    if (!used.count(name)) throw std::logic_error("report template: no slot {{" + name + "}}");
  for (const auto& [name, v] : markup_values_)
    if (!used.count("{" + name))
      throw std::logic_error("report template: no slot {{{" + name + "}}}");
  return out;
}

}  // namespace solbench::report
