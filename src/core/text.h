// Small text helpers for messages: what one line of a log or an error says.
#pragma once

#include <string>

namespace solbench {

// `s` without leading and trailing white space.
std::string trim(const std::string& s);

// The first non-blank line of `s`, cut to `max` characters ("..." marks a cut).
std::string first_line(const std::string& s, size_t max = 100);

// The most telling line of a failure log: the evaluation's own message comes
// last (after the solution's or torch's captured output), so a line naming a
// round, the worker or an error is preferred; else the last line.
std::string failure_line(const std::string& log, size_t max = 100);

}  // namespace solbench
