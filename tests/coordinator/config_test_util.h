// Helpers for config tests: a minimal valid model and error capture.
#pragma once

#include <functional>
#include <string>

#include "coordinator/config/loader.h"

namespace devmap::test {

// A small valid model section (train job): image -> flatten -> dense -> loss.
inline const std::string kMinimalModel =
    "model:\n"
    "  ops:\n"
    "    - {name: image, op: input, shape: [1, 4, 4]}\n"
    "    - {name: label, op: labels, classes: 3}\n"
    "    - {name: flat, op: flatten, inputs: [image]}\n"
    "    - {name: logits, op: dense, inputs: [flat], units: 3}\n"
    "    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}\n";

// The message of the devmap::Error `fn` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The error of kMinimalModel followed by `rest`, loaded as "a.yaml".
inline std::string minimal_model_error(const std::string& rest) {
  return error_of([&] { load_config_text(kMinimalModel + rest, "a.yaml"); });
}

}  // namespace devmap::test
