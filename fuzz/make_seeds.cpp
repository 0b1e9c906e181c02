// fuzz_make_seeds SOURCE_DIR OUT_DIR: writes the seed inputs the corpus
// started from into OUT_DIR/<target>/: real configs (configs/ and
// tests/configs/bad/), safetensors headers as the checkpoint writer lays
// them out, each wire message as the senders frame it, and the worker
// plans of the example configs. scripts/fuzz.sh runs it when a target's
// corpus folder is missing.
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "coordinator/config/loader.h"
#include "core/exec/worker_plan.h"
#include "core/graph/safetensors.h"
#include "fuzz/config_planner.h"
#include "transport/params_io.h"
#include "transport/trace_wire.h"
#include "transport/wire.h"

namespace fs = std::filesystem;
using namespace devmap;

namespace {

fs::path g_out;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_out / target);
  std::ofstream(g_out / target / name, std::ios::binary) << bytes;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// The header of `layout`; with_data appends zero data, else 8 bytes
// claiming the file's full size (the safetensors target reads those).
std::string safetensors_file(const SafetensorsLayout& layout, bool with_data) {
  std::string f = safetensors_head(layout);
  if (with_data) return f + std::string(layout.data_bytes, '\0');
  return f + le64(layout.data_start + layout.data_bytes);
}

void wire_seeds(const std::string& plan) {
  wire::Hello hello{wire::kProtocolVersion, 1234, {}};
  wire::copy_name(hello.device, "cpu:1");
  write("wire_message", "hello", wire::frame(wire::MsgType::kHello, hello));
  wire::Ready ready{1000, 4096, {}};
  wire::copy_name(ready.runtime, "OpenBLAS 0.3.21");
  write("wire_message", "ready", wire::frame(wire::MsgType::kReady, ready));
  write("wire_message", "step", wire::frame(wire::MsgType::kStep, wire::Step{3, 64, 0, 64, 1, wire::kTrain, 0, 0}));
  wire::StepDone done{3, 2.3f, 0.1f, 0.01, 2, 0, 0, 0};
  std::string body(reinterpret_cast<const char*>(&done), sizeof done);
  for (const char* name : {"fc1.weight", "fc1.bias"}) {
    wire::ParamStat st{{}, 1.f, 0.1f, 3.f, 0};
    wire::copy_name(st.name, name);
    body.append(reinterpret_cast<const char*>(&st), sizeof st);
  }
  write("wire_message", "step_done", wire::frame(wire::MsgType::kStepDone, std::string_view(body)));
  {
    // A traced step: no ParamStats, a trace-event tail.
    std::string tail;
    wire::encode_trace_events(
        {TraceEvent{100, 900, 3, -1, -1, TraceKind::kStep}, TraceEvent{200, 300, 3, 1, 4, TraceKind::kForward}}, tail);
    const wire::StepDone traced{3, 2.3f, 0.1f, 0.01, 0.002, 0, 0, tail.size()};
    std::string traced_body(reinterpret_cast<const char*>(&traced), sizeof traced);
    write("wire_message", "step_done_traced",
          wire::frame(wire::MsgType::kStepDone, std::string_view(traced_body + tail)));
  }
  write("wire_message", "error", wire::frame(wire::MsgType::kError, std::string_view("worker cpu:1 failed")));
  write("wire_message", "shutdown", wire::frame(wire::MsgType::kShutdown, std::string_view()));
  wire::Bye bye{};
  bye.vm_hwm_bytes = 1 << 20;
  bye.handoffs = 10;
  bye.bytes_handed = 4096;
  bye.profile_entries = 1;
  body.assign(reinterpret_cast<const char*>(&bye), sizeof bye);
  wire::ProfileRecord rec{{}, 0, 0, 10, 0.5, 1e6, {}};
  wire::copy_name(rec.kernel, "winograd/avx512");
  wire::copy_name(rec.name, "conv1");
  body.append(reinterpret_cast<const char*>(&rec), sizeof rec);
  write("wire_message", "bye", wire::frame(wire::MsgType::kBye, std::string_view(body)));
  write("wire_message", "tensor_ready",
        wire::frame(wire::MsgType::kTensorReady, wire::TensorHandle{0, 1, 3, 0, 0, 64}));
  write("wire_message", "slot_release",
        wire::frame(wire::MsgType::kSlotRelease, wire::TensorHandle{0, 1, 3, 0, 0, 64}));
  ParamsIo io;
  io.path = "/tmp/w.safetensors.tmp";
  io.entries = {{"fc1.weight", 128, 64}, {"fc1.bias", 192, 16}};
  write("wire_message", "params_io", wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io))));
  write("wire_message", "params_done", wire::frame(wire::MsgType::kParamsDone, std::string_view()));
  if (!plan.empty()) write("wire_message", "plan", wire::frame(wire::MsgType::kPlan, std::string_view(plan)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_make_seeds SOURCE_DIR OUT_DIR\n";
    return 2;
  }
  const fs::path src = argv[1];
  g_out = argv[2];
  std::string smallest_plan;
  for (const fs::path& dir : {src / "configs", src / "tests/configs/bad"}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string prefix = dir.filename() == "bad" ? "bad_" : "";
      const std::string stem = prefix + entry.path().stem().string();
      const std::string text = read(entry.path());
      write("config_plan", stem + ".yaml", text);
      try {
        const Config config = load_config_text(text, entry.path().string());
        std::vector<SafetensorsTensor> params;
        for (const Node& n : config.graph.nodes())
          for (const ParamSpec& p : n.params) params.push_back({n.name + "." + p.name, p.shape, p.stored_as});
        write("safetensors_header", stem, safetensors_file(make_safetensors_layout(params, {{"format", "pt"}}), false));
        for (const WorkerPlan& p : fuzz::plan_workers(config)) {
          const std::string bytes = encode_worker_plan(p);
          write("worker_plan", stem + "_" + p.device.substr(0, 3) + p.device.substr(4), bytes);
          if (smallest_plan.empty() || bytes.size() < smallest_plan.size()) smallest_plan = bytes;
        }
      } catch (const Error&) {
        // a bad config: a config seed only
      }
    }
  }
  write("safetensors_header", "tiny",
        safetensors_file(
            make_safetensors_layout({{"fc.weight", Shape{4, 3}}, {"fc.bias", Shape{4}}}, {{"format", "pt"}}), true));
  write("safetensors_header", "empty", safetensors_file(make_safetensors_layout({}), true));
  wire_seeds(smallest_plan);
  return 0;
}
