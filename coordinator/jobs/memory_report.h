// What the coordinator tells about memory: the plan before a run (its
// micro-batch decisions, as a metrics event) and, after it, one "device"
// event per worker with the allocator's measured peak beside the plan.
#pragma once

#include "coordinator/plan/job_memory.h"
#include "coordinator/run/worker_group.h"
#include "coordinator/telemetry/metrics_log.h"

namespace devmap {

// {"event":"memory_plan","batch":..,"micro_batch":..,"micro_batches":..,
//  "devices":[{"device":..,"planned_bytes":..,"limit_bytes":..},...],
//  "micro_batch_statistics":["batch_norm bn1 computes its statistics over
//  micro-batches of 16, not the step's 64",...],...}
void write_memory_plan_event(const JobMemory& memory, MetricsLog& metrics);

// {"event":"device","device":"cpu:0","peak_bytes":..,"planned_bytes":..,
//  "limit_bytes":..,"vm_hwm_bytes":..,...} per worker, after shutdown.
void write_device_events(const WorkerGroup& group, const JobMemory& memory, MetricsLog& metrics);

}  // namespace devmap
