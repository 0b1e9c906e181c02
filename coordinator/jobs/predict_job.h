// The predict job: loads trained weights, runs the model's forward pass
// (split across devices by the device map) over every image of an input
// file and streams "ImageId,Label" lines (1-based ids) to a CSV file as each
// batch arrives: no process ever holds all the outputs.
#pragma once

#include <string>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/run/host_stages.h"

namespace devmap {

struct PredictOptions {
  std::string weights;         // safetensors from a train run
  std::string input;           // IDX images or CSV pixel rows
  std::string output;          // CSV to write
  int64_t batch = 0;           // images per step; 0: train.eval_batch_size
  bool probabilities = false;  // add p0..pK-1, the softmax of the logits, to each row
};

// Predicts every image; returns the process exit code. With `hosts` (a job
// whose devices span hosts) every rank runs its host's devices over the
// same batches, the other ranks send rank 0 the rows their devices
// predicted, and rank 0 alone reads the weights file and writes the
// predictions and metrics.
int run_predict(const Config& config, const RunOptions& options, const PredictOptions& predict,
                const HostStages* hosts = nullptr);

}  // namespace devmap
