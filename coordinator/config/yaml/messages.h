// Message helpers for errors about what a user wrote: one-line quoting,
// "did you mean" suggestions, lists of valid choices.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace devmap {

// `text` made safe to show inside a one-line message: control characters
// escaped (\n, \t, \xNN) and anything past `max` characters cut to "...".
std::string one_line(std::string_view text, size_t max = 200);
// "'text'" with one_line(text, 60): for names and values the user wrote.
std::string quoted(std::string_view text);

// Edit distance (insert, delete, substitute, swap two neighbours: 1 each).
int edit_distance(const std::string& a, const std::string& b);

// The valid name closest to `typed` when it is close enough to be a likely
// typo (distance <= 2 and at most a third of the typed length, at least 1);
// ties go to the earlier name in `valid`.
std::optional<std::string> nearest_name(const std::string& typed, const std::vector<std::string>& valid);

// "a, b, c".
std::string join_names(const std::vector<std::string>& names);

// "unknown key 'epoch' in train (did you mean 'epochs'?)", or with
// "(valid: ...)" when no valid key is close. `where` is a phrase such as
// "in train" or "at the top level".
std::string unknown_key_message(const std::string& key, const std::string& where,
                                const std::vector<std::string>& valid);

}  // namespace devmap
