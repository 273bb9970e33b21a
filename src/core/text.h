// Small text helpers for messages: what one line of a log or an error says.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace solbench {

// `s` without leading and trailing white space.
std::string trim(const std::string& s);

// A C++ symbol ("_Z...") as source reads it; any other name (extern "C", Triton's
// kernels) as it is, since a short plain name may demangle as a type ("f": float).
std::string demangle(const std::string& symbol);

// A uuid or hash as tables show it: its first 8 characters.
std::string short_uuid(const std::string& uuid);

// `s` cut at every `sep`, each piece trimmed ("" and a trailing `sep` add no piece).
std::vector<std::string> split_trimmed(const std::string& s, char sep);

// The first non-blank line of `s`, cut to `max` characters ("..." marks a cut).
std::string first_line(const std::string& s, size_t max = 100);

// The most telling line of a failure log: the evaluation's own message comes
// last (after the solution's or torch's captured output), so a line naming a
// round, the worker or an error is preferred; else the last line.
std::string failure_line(const std::string& log, size_t max = 100);

// How tables print a quantity (microseconds, GFLOP, MB): 4 significant
// digits in fixed notation (12345, 123.4, 1.234, 0.01234), scientific only
// below 1e-4; `zero` for 0, "-" for a negative or NaN (nothing to show).
// Columns carry the unit in their header.
std::string quantity_text(double v, const char* zero = "-");

// `s` in at most `width` characters for a table column; a cut keeps both ends
// ("gemm_...fp8"), which tell problem and solution names apart better than
// either end alone.
std::string fit(const std::string& s, size_t width);

// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to a mistyped `word` (edit distance, at most 2 and less
// than half the word), for "did you mean ...?"; nullopt when none is close.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);

}  // namespace solbench
