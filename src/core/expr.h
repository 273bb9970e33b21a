// Axis expressions and constraints.
//
// Grammar (Python's precedence): integers, axis names, + - * / // % **, unary
// + -, parentheses; constraints add == != < <= > >= (chainable), and, or, not,
// True/False. Arithmetic is on int64 and overflow-checked; `/` must divide
// exactly (an axis is an integer), `//` and `%` floor as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace solbench {

class ExprError : public std::runtime_error {
 public:
  ExprError(std::string message, size_t position)
      : std::runtime_error(std::move(message)), position_(position) {}
  size_t position() const { return position_; }  // offset into the text

 private:
  size_t position_;
};

// Axis values looked up by name; returns nullopt for an unknown axis.
using AxisLookup = std::function<std::optional<int64_t>(std::string_view)>;

namespace detail {
struct Node;
}

class Expr {
 public:
  // Throws ExprError with the offending position on a syntax error.
  static Expr parse(std::string_view text);

  // Evaluates to an integer (booleans become 0/1). Throws ExprError for an
  // unknown axis, division by zero, inexact `/`, overflow, negative exponent.
  int64_t eval(const AxisLookup& axes) const;
  // Evaluates as a truth value (nonzero is true), for constraints.
  bool holds(const AxisLookup& axes) const { return eval(axes) != 0; }

  // Axis names the expression mentions, in first-seen order, without repeats.
  std::vector<std::string> names() const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const detail::Node> root_;
};

}  // namespace solbench
