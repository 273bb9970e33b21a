#include "core/diagnostics.h"

#include <string_view>

namespace solbench {

std::string Diagnostic::str() const {
  // Compiler-style "file:line: path: message" so editors and terminals can jump
  // to the location; parts that are unknown are left out rather than shown empty.
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) out += ":" + std::to_string(line);
    out += ": ";
  } else if (line > 0) {
    out += "line " + std::to_string(line) + ": ";
  }
  if (!path.empty()) out += path + ": ";
  out += message;
  return out;
}

std::string Diagnostics::str() const {
  std::string out;
  bool first = true;
  auto line = [&](std::string_view prefix, const Diagnostic& d) {
    if (!first) out += '\n';
    first = false;
    out += prefix;
    out += d.str();
  };
  for (const auto& d : items_) line("", d);
  for (const auto& d : warnings_) line("warning: ", d);
  return out;
}

void Diagnostics::promote_warnings() {
  items_.insert(items_.end(), warnings_.begin(), warnings_.end());
  warnings_.clear();
}

InputError::InputError(Diagnostics diags)
    : std::runtime_error(diags.str()), diags_(std::move(diags)) {}

namespace {
Diagnostics one(std::string file, int line, std::string path, std::string message) {
  Diagnostics d;
  d.add(std::move(file), line, std::move(path), std::move(message));
  return d;
}
}  // namespace

InputError::InputError(std::string file, int line, std::string path, std::string message)
    : InputError(one(std::move(file), line, std::move(path), std::move(message))) {}

}  // namespace solbench
