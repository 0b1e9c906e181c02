// Conformance from ONNX's own backend tests (Debian's libonnx-testdata):
// every node test whose operators devmap imports is imported (the test's
// inputs bound where a node needs constants, as weights), run forward on
// the CPU kernels and compared with its expected outputs at the tolerances
// of ONNX's backend test runner (rtol 1e-3, atol 1e-7). The table of
// operators (passed, failed and why, not supported and why) is written to
// the build folder, and docs/ONNX.md must hold the same table.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "coordinator/onnx/onnx_import.h"
#include "core/base/error.h"
#include "tests/onnx/forward_runner.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;
using onnx_io::HostTensor;

const char* kNodeTests = "/usr/share/libonnx-testdata/data/node";
constexpr double kRtol = 1e-3, kAtol = 1e-7;
const char* kBegin = "<!-- conformance table: written by OnnxConformance.NodeTestsOfImportedOperators -->";
const char* kEnd = "<!-- end of conformance table -->";

struct Outcome {
  enum Kind { kPass, kFail, kUnsupported } kind = kUnsupported;
  std::string why;
};

// "needs ceil_mode = 0 (devmap's ...)" -> "needs ceil_mode = 0": the reason
// without the node's particulars, so that tests group by it.
std::string short_reason(std::string s) {
  for (const char* cut : {" (", ", has ", ": "})
    if (size_t at = s.find(cut); at != std::string::npos) s = s.substr(0, at);
  return s;
}

Outcome run_node_test(const fs::path& dir);

// The outcome, with data devmap does not read (float16, strings) as not supported.
Outcome outcome_of(const fs::path& dir) {
  try {
    return run_node_test(dir);
  } catch (const Error& e) {
    std::string why = e.what();
    if (size_t at = why.find(": tensor "); at != std::string::npos) why = why.substr(at + 2);
    if (size_t at = why.find("has ONNX data type"); at != std::string::npos) why = "data of " + why.substr(at + 4);
    return {Outcome::kUnsupported, short_reason(why)};
  }
}

Outcome run_node_test(const fs::path& dir) {
  const onnx::ModelProto model = onnx_io::read_model((dir / "model.onnx").string());
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> inputs;
  for (const auto& v : model.graph().input()) {
    if (!v.type().has_tensor_type()) return {Outcome::kUnsupported, "a sequence or optional input"};
    if (!initializers.count(v.name())) inputs.push_back(v.name());
  }
  const fs::path data = dir / "test_data_set_0";
  onnx_io::ImportOptions options;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path f = data / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(f)) continue;  // an optional input left out
    options.bound_inputs[inputs[i]] = onnx_io::tensor_values(onnx_io::read_tensor_file(f.string()), f.string());
  }
  onnx_io::ImportedModel m;
  try {
    m = onnx_io::import_model(model, options);
  } catch (const Error& e) {
    return {Outcome::kUnsupported, short_reason(e.what())};
  }
  if (!m.unsupported.empty()) return {Outcome::kUnsupported, short_reason(m.unsupported[0].need)};

  std::map<int, std::vector<float>> feed;
  int64_t batch = -1;
  for (size_t k = 0; k < m.input_nodes.size(); ++k) {
    const HostTensor& x = options.bound_inputs.at(m.input_names[k]);
    if (batch >= 0 && x.dims[0] != batch) return {Outcome::kUnsupported, "inputs of different batch sizes"};
    batch = x.dims[0];
    feed[m.input_nodes[k]] = std::vector<float>(x.values.begin(), x.values.end());
  }
  std::vector<Buffer> out;
  try {
    if (batch >= 0) out = test::run_forward(m, batch, feed);
  } catch (const std::exception& e) {
    return {Outcome::kFail, std::string("the forward threw: ") + e.what()};
  }
  for (size_t i = 0; i < m.output_nodes.size(); ++i) {
    const fs::path f = data / ("output_" + std::to_string(i) + ".pb");
    const HostTensor want = onnx_io::tensor_values(onnx_io::read_tensor_file(f.string()), f.string());
    // An output folded at import (shape arithmetic) is compared as folded.
    const int node = m.output_nodes[i];
    std::vector<double> got;
    if (node < 0) {
      got = m.output_constants.at(m.output_names[i]).values;
    } else {
      const Buffer& b = out[static_cast<size_t>(node)];
      got.assign(b.data(), b.data() + b.size());
    }
    if (static_cast<int64_t>(got.size()) != want.numel())
      return {Outcome::kFail, "output " + std::to_string(i) + " has another size"};
    for (size_t k = 0; k < got.size(); ++k) {
      const double g = got[k], w = want.values[k];
      if (std::isnan(w) && std::isnan(g)) continue;
      if (!(std::fabs(g - w) <= kAtol + kRtol * std::fabs(w))) {
        std::ostringstream why;
        why << "output " << i << " element " << k << ": " << g << ", expected " << w;
        return {Outcome::kFail, why.str()};
      }
    }
  }
  return {Outcome::kPass, ""};
}

struct Row {
  int tests = 0, passed = 0;
  std::map<std::string, int> failed, unsupported;  // why -> tests
};

std::string reasons(const std::map<std::string, int>& m) {
  std::string s;
  for (const auto& [why, count] : m) s += (s.empty() ? "" : "; ") + why + " (" + std::to_string(count) + ")";
  return s;
}

std::string docs_table() {
  std::ifstream in(std::string(DEVMAP_SOURCE_DIR) + "/docs/ONNX.md");
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  const size_t b = text.find(kBegin), e = text.find(kEnd);
  if (b == std::string::npos || e == std::string::npos) return "";
  return text.substr(b + std::string(kBegin).size() + 1, e - b - std::string(kBegin).size() - 1);
}

TEST(OnnxConformance, NodeTestsOfImportedOperators) {
  if (!fs::is_directory(kNodeTests)) GTEST_SKIP() << kNodeTests << " is absent: install libonnx-testdata";
  std::map<std::string, Row> rows;
  std::vector<std::string> failures;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNodeTests)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  int passed = 0, failed = 0, unsupported = 0;
  // A node test counts where import maps all its op types.
  const std::vector<std::string> types = onnx_io::imported_op_types();
  const std::set<std::string> imported(types.begin(), types.end());
  for (const fs::path& dir : dirs) {
    const onnx::ModelProto model = onnx_io::read_model((dir / "model.onnx").string());
    std::string op;
    bool ours = model.graph().node_size() > 0;
    for (const auto& n : model.graph().node()) {
      ours = ours && (n.domain().empty() || n.domain() == "ai.onnx") && imported.count(n.op_type());
      if (n.op_type() != "Constant" || op.empty()) op = n.op_type();
    }
    if (!ours) continue;
    const Outcome o = outcome_of(dir);
    Row& row = rows[op];
    ++row.tests;
    if (o.kind == Outcome::kPass) {
      ++row.passed;
      ++passed;
    } else if (o.kind == Outcome::kFail) {
      ++row.failed[short_reason(o.why)];
      ++failed;
      failures.push_back(dir.filename().string() + ": " + o.why);
    } else {
      ++row.unsupported[o.why];
      ++unsupported;
    }
  }
  std::ostringstream t;
  t << "| operator | node tests | passed | failed (why) | not supported (why) |\n"
    << "| --- | ---: | ---: | --- | --- |\n";
  for (const auto& [op, r] : rows) {
    int f = 0, u = 0;
    for (const auto& [w, c] : r.failed) f += c;
    for (const auto& [w, c] : r.unsupported) u += c;
    t << "| " << op << " | " << r.tests << " | " << r.passed << " | " << f << (f ? " (" + reasons(r.failed) + ")" : "")
      << " | " << u << (u ? " (" + reasons(r.unsupported) + ")" : "") << " |\n";
  }
  t << "\n"
    << passed + failed + unsupported << " node tests of the imported operators: " << passed << " pass, " << failed
    << " fail, " << unsupported << " are not supported.\n";
  const std::string table = t.str();
  const std::string path = std::string(DEVMAP_BUILD_DIR) + "/onnx_conformance.md";
  std::ofstream(path) << table;
  std::cout << table;
  for (const std::string& f : failures) ADD_FAILURE() << "failed: " << f;
  EXPECT_GT(passed, 0);
  EXPECT_EQ(docs_table(), table) << "docs/ONNX.md's table is not this run's: copy " << path
                                 << " between its conformance-table markers";
}

}  // namespace
}  // namespace devmap
