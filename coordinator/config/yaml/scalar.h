// Strict readers for YAML scalars. Each returns nullopt when the node is not
// a scalar of that type, so the caller can report what it got.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

namespace devmap {

// Decimal integers with an optional sign: "64", "-1", "+3" (no "0x", no "1e3").
std::optional<int64_t> scalar_int(const YAML::Node& node);
std::optional<uint64_t> scalar_uint(const YAML::Node& node);
// Finite decimal numbers: "0.01", "1e-8", "3".
std::optional<double> scalar_number(const YAML::Node& node);
// true/false (also yes/no, on/off, in any case yaml-cpp accepts).
std::optional<bool> scalar_bool(const YAML::Node& node);
// Any scalar's text (quoted or not).
std::optional<std::string> scalar_string(const YAML::Node& node);

// What a node is, for "got ..." in messages: "'sixty-four'", "a list",
// "a mapping", "an empty value". Long scalars are shortened.
std::string describe_node(const YAML::Node& node);

}  // namespace devmap
