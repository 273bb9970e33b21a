#include "core/diagnostics.h"

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
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i) out += '\n';
    out += items_[i].str();
  }
  return out;
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
