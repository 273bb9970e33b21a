// HTML output: escaping of every string that did not originate in this module,
// anchors that are safe in id attributes and URL fragments, and the small
// template the page is written with.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace solbench::report {

// Text for element content and double- or single-quoted attribute values:
// & < > " ' become entities. Solution names, logs, definition names, GPU
// names, paths: everything from the store or the disk goes through this.
std::string escape(std::string_view text);

// An id for `text` that needs no escaping in an id attribute or a #fragment:
// ASCII letters, digits, '-' and '_' are kept, every other byte becomes
// ".XX" (hex), so distinct texts give distinct ids.
std::string anchor_id(std::string_view text);

// A page fragment with named slots: {{name}} takes text (escaped when filled),
// {{{name}}} takes markup built by this module (inserted as is). Rendering
// throws std::logic_error for a slot left unfilled or a value for no slot: a
// template and its caller that disagree are a bug, not a partial page.
class Template {
 public:
  explicit Template(std::string_view text) : text_(text) {}
  Template& text(const std::string& slot, std::string_view value);
  Template& markup(const std::string& slot, std::string value);
  std::string render() const;

 private:
  std::string_view text_;
  std::map<std::string, std::string> text_values_;
  std::map<std::string, std::string> markup_values_;
};

}  // namespace solbench::report
