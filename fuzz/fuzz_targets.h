// Fuzz targets: each takes arbitrary bytes through one of devmap's input
// paths. Contract of every target: devmap::Error is the only exception it
// lets the code under test throw (and it swallows that one); any other
// exception, a crash, a sanitizer report or a broken invariant (FUZZ_CHECK)
// is a finding. The same functions run under libFuzzer (fuzz/libfuzzer_main.cpp,
// clang preset `fuzz`) and in the normal test build, which replays the
// committed corpus in fuzz/corpus/<name>/ (tests/fuzz/).
#pragma once

#include <string_view>
#include <vector>

namespace devmap::fuzz {

// YAML bytes -> load_config_text -> program -> partition -> edges, input
// layouts, placement log -> one WorkerPlan per device, encoded, decoded and
// re-planned as a worker would.
void run_config_plan(std::string_view data);
// Bytes as a safetensors file -> the strict header parser; a header it
// accepts must lay out again to the same entries.
void run_safetensors_header(std::string_view data);
// Bytes as one ZeroMQ frame -> wire::Message::parse -> the body decoded as
// its receiver decodes that message type (PARAMS_IO and PLAN included).
void run_wire_message(std::string_view data);
// Bytes as a calibration cache file -> CalibrationCache::load; an accepted
// cache saves and loads back the same, and its values drive the placement
// planner to a finite plan or a refusal.
void run_calibration_cache(std::string_view data);
// Bytes as the FMA peak file -> read_fma_peak_cache: a peak it returns is
// finite and one a core can have.
void run_fma_peak_cache(std::string_view data);
// Bytes as a PLAN body -> decode_worker_plan -> the worker's own planning;
// a plan it accepts must encode and decode to the same bytes again.
void run_worker_plan(std::string_view data);

struct FuzzTarget {
  const char* name;  // also the corpus folder: fuzz/corpus/<name>/
  void (*run)(std::string_view data);
};

// Every target, in a fixed order.
const std::vector<FuzzTarget>& fuzz_targets();

}  // namespace devmap::fuzz
