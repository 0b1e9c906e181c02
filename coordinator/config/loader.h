// Reads a config file: YAML, overrides, validation, the model graph.
#pragma once

#include <string>
#include <vector>

#include "coordinator/config/config.h"

namespace devmap {

// Loads, applies `overrides` ("train.epochs=1", applied in order), validates
// and builds the graph. Throws devmap::Error (kInvalidInput) whose message
// starts with "file:line:col: " for every mistake in the file, and
// "--set KEY=VALUE: " for a bad override.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same, from text (for tests and fuzzing); `name` is used in messages.
Config load_config_text(const std::string& text, const std::string& name,
                        const std::vector<std::string>& overrides = {});

}  // namespace devmap
