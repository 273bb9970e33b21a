// Diagnostics: errors (and warnings) about user input that carry their context
// (file, JSONL line, JSON path) from where they are found to the user.
// Validation collects all of them in one pass instead of stopping at the first.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace solbench {

struct Diagnostic {
  std::string file;     // path as given by the user; may be empty
  int line = 0;         // 1-based line for JSONL files; 0 when not applicable
  std::string path;     // JSON path, e.g. "inputs.weight.shape[1]"; may be empty
  std::string message;  // what was found and what was expected

  // "file:line: path: message", omitting empty parts.
  std::string str() const;
};

// Errors make the input unusable; warnings report something that was ignored
// or tolerated (the input is still used). The two are kept apart: empty(),
// size() and items() count errors only, so "did this step add an error?"
// checks (size() before and after) are not tripped by a warning.
class Diagnostics {
 public:
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  void add(std::string file, int line, std::string path, std::string message) {
    items_.push_back({std::move(file), line, std::move(path), std::move(message)});
  }
  void warn(Diagnostic d) { warnings_.push_back(std::move(d)); }
  void warn(std::string file, int line, std::string path, std::string message) {
    warnings_.push_back({std::move(file), line, std::move(path), std::move(message)});
  }
  // Both errors and warnings.
  void append(const Diagnostics& other) {
    items_.insert(items_.end(), other.items_.begin(), other.items_.end());
    warnings_.insert(warnings_.end(), other.warnings_.begin(), other.warnings_.end());
  }
  // Errors only.
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  const std::vector<Diagnostic>& warnings() const { return warnings_; }
  // Turns every warning into an error with the same text (`validate --strict`).
  void promote_warnings();
  // All messages, one per line: the errors, then the warnings, each of those
  // prefixed "warning: ".
  std::string str() const;

 private:
  std::vector<Diagnostic> items_;
  std::vector<Diagnostic> warnings_;
};

// Thrown where a caller cannot continue without valid input.
class InputError : public std::runtime_error {
 public:
  explicit InputError(Diagnostics diags);
  InputError(std::string file, int line, std::string path, std::string message);
  const Diagnostics& diagnostics() const { return diags_; }

 private:
  Diagnostics diags_;
};

}  // namespace solbench
