// JsonObject: builds one JSON object as text, for metrics lines. Keys are
// written in insertion order; strings are escaped; non-finite numbers are
// written as null (JSON has no NaN).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace devmap {

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value);
  JsonObject& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, int64_t value);
  JsonObject& add(std::string_view key, int value) { return add(key, static_cast<int64_t>(value)); }
  JsonObject& add(std::string_view key, bool value);
  JsonObject& add_raw(std::string_view key, std::string_view json);  // value already JSON
  std::string str() const { return body_ + "}"; }

  static std::string quote(std::string_view s);

 private:
  void key(std::string_view k);
  std::string body_ = "{";
};

}  // namespace devmap
