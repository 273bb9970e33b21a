// Diagnostics: errors about user input that carry their context (file, JSONL line,
// JSON path) from where they are found to the user. Validation collects all of
// them in one pass instead of stopping at the first.
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

class Diagnostics {
 public:
  void add(Diagnostic d) { items_.push_back(std::move(d)); }
  void add(std::string file, int line, std::string path, std::string message) {
    items_.push_back({std::move(file), line, std::move(path), std::move(message)});
  }
  void append(const Diagnostics& other) {
    items_.insert(items_.end(), other.items_.begin(), other.items_.end());
  }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  // All messages, one per line.
  std::string str() const;

 private:
  std::vector<Diagnostic> items_;
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
