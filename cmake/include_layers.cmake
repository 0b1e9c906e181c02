# The direction of use between the product's folders: each folder, then the
# folders its files may include ("core" covers every core/ folder). A
# file belongs to the longest folder listed that holds it; an include of a
# file in none of them (std, libraries, tests/, fuzz/) is not checked.
# docs/ARCHITECTURE.md draws the same picture; this table is what the build
# holds the code to (check_include_layers.cmake).
set(DEVMAP_INCLUDE_LAYERS
    "core/base: core/base"
    "core/graph: core/base core/graph"
    "core/plan: core/base core/graph core/plan"
    "core/placement: core/base core/graph core/plan core/placement"
    "core/exec: core/base core/graph core/plan core/exec"
    "kernels: core kernels"
    "transport: core transport"
    "worker: core transport worker"
    "worker_cpu: core kernels transport worker worker_cpu"
    "worker_gpu: core kernels transport worker worker_gpu"
    "coordinator/util: core transport coordinator/util"
    "coordinator/data: core coordinator/data"
    "coordinator/config/yaml: core coordinator/util coordinator/data coordinator/config/yaml"
    "coordinator/config: core coordinator/util coordinator/data coordinator/config"
    "coordinator/plan: core transport coordinator/util coordinator/data coordinator/config coordinator/plan"
    "coordinator/onnx: core coordinator/util coordinator/data coordinator/config coordinator/onnx"
    "coordinator/telemetry: core transport coordinator/util coordinator/data coordinator/config coordinator/telemetry"
    "coordinator/run: core transport coordinator/util coordinator/data coordinator/config coordinator/plan coordinator/telemetry coordinator/run"
    "coordinator/checkpoint: core transport coordinator/util coordinator/data coordinator/config coordinator/plan coordinator/telemetry coordinator/run coordinator/checkpoint"
    "coordinator/jobs: core transport coordinator/util coordinator/data coordinator/config coordinator/plan coordinator/telemetry coordinator/run coordinator/checkpoint coordinator/jobs"
    "coordinator/app: core transport coordinator/util coordinator/data coordinator/config coordinator/plan coordinator/telemetry coordinator/run coordinator/checkpoint coordinator/jobs coordinator/onnx coordinator/app")
