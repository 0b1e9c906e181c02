// Checkpoints: the weights in safetensors (named "op.param", PyTorch layouts:
// conv OIHW, dense [out, in]), so they load into an equivalent PyTorch model
// as they are; and, beside them, the training state (optimizer state as
// "op.param.optK" tensors, step and epoch as metadata). Workers write their
// own tensors straight into the file at offsets the coordinator laid out;
// the file appears under its name only when complete (temporary file,
// fsync, rename, fsync of the folder). Nothing depends on placement.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "coordinator/run/worker_group.h"
#include "core/graph/graph.h"

namespace devmap {

struct TrainingState {
  int64_t step = 0;   // steps done
  int64_t epoch = 0;  // epochs completed
  uint64_t seed = 0;
  // How a step was cut ("4 micro-batches of 16, 1f1b; gradient chunks of
  // 32; 1 replica"): a resume that cuts it otherwise says so. Empty when
  // the checkpoint predates it.
  std::string split;
};

// "x/model.safetensors" -> "x/model" (a path without the extension stays).
std::string checkpoint_base(const std::string& weights_path);
// "x/model.safetensors" -> "x/model.state.safetensors".
std::string state_path_for(const std::string& weights_path);

void save_checkpoint(WorkerGroup& workers, const Graph& graph, const OptimizerConfig& optimizer,
                     const std::string& weights_path, const TrainingState& state);

// Validates `weights_path` against the graph's parameters (every one
// present with its shape, nothing extra) and has the workers read them.
void load_weights(WorkerGroup& workers, const Graph& graph, const std::string& weights_path);

// The names of the tensors in safetensors file `path` that hold a NaN or an
// infinity (F32 data). Throws devmap::Error when the file cannot be read.
std::vector<std::string> nonfinite_tensors(const std::string& path);

// Loads the weights and the training state beside them (the optimizer
// state into the workers) and returns the state's step, epoch and seed.
// Throws devmap::Error (kInvalidInput) when either file does not fit the
// model and optimizer, or when they are from different steps.
TrainingState load_checkpoint(WorkerGroup& workers, const Graph& graph, const OptimizerConfig& optimizer,
                              const std::string& weights_path);

}  // namespace devmap
