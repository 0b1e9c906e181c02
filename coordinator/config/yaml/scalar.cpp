#include "coordinator/config/yaml/scalar.h"

#include <charconv>
#include <cmath>

#include "coordinator/config/yaml/messages.h"

namespace devmap {
namespace {

// The scalar's text without one leading '+', or nullopt for non-scalars.
std::optional<std::string_view> number_text(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  std::string_view text = node.Scalar();
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+') return std::nullopt;
  return text;
}

template <typename T>
std::optional<T> parse_whole(std::string_view text) {
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int64_t> scalar_int(const YAML::Node& node) {
  auto text = number_text(node);
  return text ? parse_whole<int64_t>(*text) : std::nullopt;
}

std::optional<uint64_t> scalar_uint(const YAML::Node& node) {
  auto text = number_text(node);
  return text ? parse_whole<uint64_t>(*text) : std::nullopt;
}

std::optional<double> scalar_number(const YAML::Node& node) {
  auto text = number_text(node);
  if (!text) return std::nullopt;
  // from_chars also reads "inf" and "nan": only finite numbers are numbers here.
  auto value = parse_whole<double>(*text);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

std::optional<bool> scalar_bool(const YAML::Node& node) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) return std::nullopt;
  return value;
}

std::optional<std::string> scalar_string(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  return node.Scalar();
}

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return quoted(node.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return "an empty value";
  }
  return "an empty value";
}

}  // namespace devmap
