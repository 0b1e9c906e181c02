// --trace through the real binaries: a short pipelined split run (4
// micro-batches a step) writes valid Chrome trace-event JSON; every slice is
// closed and nested within its track, every flow has both ends bound to a
// send and a receive slice, and each device's busy time from the trace is
// within 10% of what --profile reports for the same run. --trace-steps A:B
// limits the training steps (and the evaluation after them) it holds. With
// offload, the parameter fetches overlap the compute of the op before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

// A minimal JSON reader (RFC 8259: objects, arrays, strings with escapes,
// numbers, true, false, null); parse() fails the test on malformed text.
struct Json {
  using Object = std::map<std::string, Json>;
  using Array = std::vector<Json>;
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v;

  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  bool is_number() const { return std::holds_alternative<double>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  const Object& object() const { return *std::get<std::shared_ptr<Object>>(v); }
  const Array& array() const { return *std::get<std::shared_ptr<Array>>(v); }
  double number() const { return std::get<double>(v); }
  const std::string& string() const { return std::get<std::string>(v); }
  bool has(const std::string& k) const { return is_object() && object().count(k) > 0; }
  const Json& at(const std::string& k) const { return object().at(k); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  bool parse(Json& out, std::string& error) {
    try {
      out = value();
      space();
      if (i_ != s_.size()) fail("text after the value");
      return true;
    } catch (const std::string& e) {
      error = e;
      return false;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw what + " at offset " + std::to_string(i_); }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    space();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(const char* word) {
    for (const char* p = word; *p; ++p, ++i_)
      if (i_ >= s_.size() || s_[i_] != *p) fail(std::string("expected ") + word);
  }
  Json value() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{string()};
    if (c == 't') return literal("true"), Json{true};
    if (c == 'f') return literal("false"), Json{false};
    if (c == 'n') return literal("null"), Json{nullptr};
    return number();
  }
  Json object() {
    expect('{');
    auto o = std::make_shared<Json::Object>();
    if (peek() == '}') return ++i_, Json{o};
    for (;;) {
      if (peek() != '"') fail("expected a key");
      std::string k = string();
      expect(':');
      (*o)[k] = value();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return Json{o};
    }
  }
  Json array() {
    expect('[');
    auto a = std::make_shared<Json::Array>();
    if (peek() == ']') return ++i_, Json{a};
    for (;;) {
      a->push_back(value());
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return Json{a};
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unexpected end in an escape");
      char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u':
          if (i_ + 4 > s_.size() ||
              !std::all_of(s_.begin() + static_cast<ptrdiff_t>(i_), s_.begin() + static_cast<ptrdiff_t>(i_ + 4),
                           [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); }))
            fail("bad \\u escape");
          out += '?';
          i_ += 4;
          break;
        default: fail("bad escape");
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Json number() {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ == from) fail("expected a digit");
    };
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return Json{std::stod(s_.substr(start, i_ - start))};
  }
  const std::string& s_;
  size_t i_ = 0;
};

struct Slice {
  std::string name, cat, phase;
  double ts = 0, dur = 0;
  int pid = 0, tid = 0;
  int64_t step = 0, micro = -1;
  double end() const { return ts + dur; }
};

struct Trace {
  std::map<int, std::string> process;  // pid -> name
  std::vector<Slice> slices;
  struct FlowEnd {
    double ts;
    int pid, tid;
    bool bound_to_end;
  };
  std::map<int64_t, std::vector<FlowEnd>> starts, finishes;  // flow id -> its "s" and "f" events
};

// Reads `path` and checks the trace-event format of every event.
Trace read_trace(const std::string& path) {
  Trace t;
  Json doc;
  std::string error;
  const std::string text = read_file(path);
  EXPECT_TRUE(JsonParser(text).parse(doc, error)) << path << ": " << error;
  if (!doc.is_object() || !doc.has("traceEvents") || !doc.at("traceEvents").is_array()) {
    ADD_FAILURE() << path << ": not an object with a traceEvents array";
    return t;
  }
  for (const Json& e : doc.at("traceEvents").array()) {
    EXPECT_TRUE(e.is_object());
    EXPECT_TRUE(e.has("ph") && e.at("ph").is_string());
    EXPECT_TRUE(e.has("name") && e.at("name").is_string());
    EXPECT_TRUE(e.has("pid") && e.at("pid").is_number());
    EXPECT_TRUE(e.has("tid") && e.at("tid").is_number());
    if (::testing::Test::HasFailure()) return t;
    const std::string ph = e.at("ph").string();
    const int pid = static_cast<int>(e.at("pid").number()), tid = static_cast<int>(e.at("tid").number());
    if (ph == "M") {
      if (e.at("name").string() == "process_name") t.process[pid] = e.at("args").at("name").string();
      continue;
    }
    EXPECT_TRUE(e.has("ts") && e.at("ts").is_number()) << e.at("name").string();
    if (ph == "X") {
      EXPECT_TRUE(e.has("dur") && e.at("dur").is_number() && e.at("dur").number() >= 0) << e.at("name").string();
      Slice s;
      s.name = e.at("name").string();
      s.cat = e.at("cat").string();
      s.ts = e.at("ts").number();
      s.dur = e.at("dur").number();
      s.pid = pid;
      s.tid = tid;
      const Json& a = e.at("args");
      s.phase = a.at("phase").string();
      s.step = static_cast<int64_t>(a.at("step").number());
      if (a.has("micro_batch")) s.micro = static_cast<int64_t>(a.at("micro_batch").number());
      t.slices.push_back(s);
    } else if (ph == "s" || ph == "f") {
      EXPECT_TRUE(e.has("id") && e.at("id").is_number());
      const auto id = static_cast<int64_t>(e.at("id").number());
      Trace::FlowEnd end{e.at("ts").number(), pid, tid, e.has("bp") && e.at("bp").string() == "e"};
      (ph == "s" ? t.starts : t.finishes)[id].push_back(end);
    } else {
      ADD_FAILURE() << "unexpected phase '" << ph << "'";
    }
  }
  return t;
}

constexpr double kEps = 0.002;  // microseconds: the file has nanoseconds

// Every slice on a (pid, tid) track lies within the slice it starts inside
// (stack discipline): slices never overlap unless nested.
void expect_nested(const Trace& t) {
  std::map<std::pair<int, int>, std::vector<Slice>> tracks;
  for (const Slice& s : t.slices) tracks[{s.pid, s.tid}].push_back(s);
  for (auto& [track, slices] : tracks) {
    std::stable_sort(slices.begin(), slices.end(),
                     [](const Slice& a, const Slice& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
    std::vector<const Slice*> open;
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end() <= s.ts + kEps) open.pop_back();
      if (!open.empty()) {
        ASSERT_LE(s.end(), open.back()->end() + kEps)
            << "on pid " << track.first << ", '" << s.name << "' at " << s.ts << " overlaps '" << open.back()->name
            << "' at " << open.back()->ts << " without nesting in it";
      }
      open.push_back(&s);
    }
  }
}

// Whether a slice of category `cat` on (pid, tid) holds time `ts`.
bool inside(const Trace& t, const std::string& cat, int pid, int tid, double ts) {
  return std::any_of(t.slices.begin(), t.slices.end(), [&](const Slice& s) {
    return s.cat == cat && s.pid == pid && s.tid == tid && s.ts <= ts + kEps && ts <= s.end() + kEps;
  });
}

struct TracedRun {
  std::string trace, metrics;
};

TracedRun train(const TempDir& dir, const std::string& name, std::vector<std::string> extra) {
  const std::string sub = dir.path() + "/" + name;
  std::filesystem::create_directories(sub);
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                   "train",
                                   kConfigs + "fashion_mnist_cnn_split.yaml",
                                   "--out-dir",
                                   sub,
                                   "--trace",
                                   sub + "/trace.json",
                                   "--set",
                                   "data.train_limit=3200",
                                   "--set",
                                   "data.test_limit=64",
                                   "--set",
                                   "train.batch_size=32",
                                   "--set",
                                   "train.max_steps=8",
                                   "--set",
                                   "train.pipeline.micro_batches=4"};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult r = run_process(args, sub, {"TMPDIR=" + sub});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("devmap: trace: " + sub + "/trace.json"), std::string::npos) << r.err;
  return TracedRun{sub + "/trace.json", sub + "/metrics.jsonl"};
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  }
  TempDir dir_;
};

TEST_F(TraceTest, PipelinedSplitRunWritesAValidNestedTimelineThatAgreesWithProfile) {
  const TracedRun run = train(dir_, "full", {"--profile"});
  const Trace t = read_trace(run.trace);
  ASSERT_FALSE(::testing::Test::HasFailure());
  // Tracks: the coordinator and one per worker, named by its device.
  ASSERT_EQ(t.process.size(), 3u);
  EXPECT_EQ(t.process.at(0), "coordinator");
  EXPECT_EQ(t.process.at(1), "cpu:0");
  EXPECT_EQ(t.process.at(2), "cpu:1");
  expect_nested(t);

  // Every op's forward and backward of every micro-batch of every step, on
  // the device that runs it (conv1 on cpu:0, fc1 on cpu:1 in this map).
  for (const auto& [op, pid] : std::vector<std::pair<std::string, int>>{{"conv1", 1}, {"fc1", 2}})
    for (const char* dir : {" forward", " backward"})
      for (int64_t step = 1; step <= 8; ++step)
        for (int64_t m = 0; m < 4; ++m)
          EXPECT_EQ(std::count_if(t.slices.begin(), t.slices.end(),
                                  [&](const Slice& s) {
                                    return s.name == op + dir && s.pid == pid && s.phase == "train" && s.step == step &&
                                           s.micro == m;
                                  }),
                    1)
              << op << dir << " step " << step << " micro-batch " << m;
  std::set<std::string> cats;
  for (const Slice& s : t.slices) cats.insert(std::to_string(s.pid) + " " + s.cat);
  for (const char* want : {"0 feed", "0 wait", "1 step", "1 send", "1 recv", "1 optimizer", "2 step", "2 send",
                           "2 recv", "2 optimizer", "1 forward", "2 backward"})
    EXPECT_TRUE(cats.count(want)) << "no '" << want << "' slice";

  // Flows: each id has one start, bound to a send slice, and one finish,
  // bound (bp "e") to a receive slice on another worker; every receive has one.
  ASSERT_FALSE(t.starts.empty());
  EXPECT_EQ(t.starts.size(), t.finishes.size());
  for (const auto& [id, ends] : t.starts) {
    ASSERT_EQ(ends.size(), 1u) << "flow " << id;
    ASSERT_EQ(t.finishes.count(id), 1u) << "flow " << id << " has no finish";
    const auto& fin = t.finishes.at(id);
    ASSERT_EQ(fin.size(), 1u) << "flow " << id;
    EXPECT_TRUE(fin[0].bound_to_end) << "flow " << id;
    EXPECT_NE(ends[0].pid, fin[0].pid) << "flow " << id;
    EXPECT_TRUE(inside(t, "send", ends[0].pid, ends[0].tid, ends[0].ts)) << "flow " << id << " starts outside a send";
    EXPECT_TRUE(inside(t, "recv", fin[0].pid, fin[0].tid, fin[0].ts)) << "flow " << id << " ends outside a receive";
  }
  EXPECT_EQ(t.finishes.size(), static_cast<size_t>(std::count_if(t.slices.begin(), t.slices.end(),
                                                                 [](const Slice& s) { return s.cat == "recv"; })));

  // Busy time per device: its STEP slices less its waits (receives, free
  // slots), against --profile's figure (DeviceBusy) for the same run. The
  // ops' own work fits in that busy time: a slot wait nests in the op that
  // writes the tensor, so it counts as a wait and not as the op's work.
  const std::vector<std::string> busy_lines = lines_with(read_file(run.metrics), "profile_busy");
  ASSERT_EQ(busy_lines.size(), 2u);
  for (const std::string& line : busy_lines) {
    const std::string device = json_field(line, "device");
    const double profiled = std::stod(json_field(line, "busy_s"));
    const int pid = device == "cpu:0" ? 1 : 2;
    auto is_op = [](const std::string& cat) {
      return cat == "forward" || cat == "backward" || cat == "sum" || cat == "optimizer";
    };
    double step = 0, waits = 0, ops = 0;
    for (const Slice& s : t.slices) {
      if (s.pid != pid) continue;
      if (s.cat == "step") step += s.dur;
      if (s.cat == "recv" || s.cat == "slot_wait") waits += s.dur;
      if (is_op(s.cat)) ops += s.dur;
      if (s.cat == "slot_wait" && std::any_of(t.slices.begin(), t.slices.end(), [&](const Slice& op) {
            return is_op(op.cat) && op.pid == s.pid && op.tid == s.tid && op.ts <= s.ts + kEps &&
                   s.end() <= op.end() + kEps;
          }))
        ops -= s.dur;
    }
    const double busy = (step - waits) * 1e-6;
    EXPECT_GT(profiled, 0) << device;
    EXPECT_NEAR(busy, profiled, 0.1 * profiled) << device;
    EXPECT_LE(ops * 1e-6, busy * 1.001) << device;
    EXPECT_GT(ops * 1e-6, 0.5 * busy) << device << ": the ops account for little of the busy time";
  }
  // The epoch event has each device's busy and idle fractions.
  const std::vector<std::string> epochs = lines_with(read_file(run.metrics), "epoch");
  ASSERT_FALSE(epochs.empty());
  for (const char* key : {"device_busy", "device_idle"}) {
    const size_t at = epochs.back().find(std::string("\"") + key + "\":{\"cpu:0\":");
    EXPECT_NE(at, std::string::npos) << key << " in " << epochs.back();
  }
}

TEST_F(TraceTest, TraceStepsLimitsTheTrainingStepsAndTheEvaluationAfterThem) {
  const TracedRun run = train(dir_, "range", {"--trace-steps", "3:5"});
  const Trace t = read_trace(run.trace);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::set<int64_t> steps;
  for (const Slice& s : t.slices) {
    EXPECT_EQ(s.phase, "train") << s.name << ": evaluation follows step 8, outside 3:5";
    steps.insert(s.step);
  }
  EXPECT_EQ(steps, (std::set<int64_t>{3, 4, 5}));
  expect_nested(t);
  // Evaluation after a traced step is traced: the run ends at step 8.
  const TracedRun last = train(dir_, "last", {"--trace-steps", "8:8"});
  const Trace tl = read_trace(last.trace);
  std::set<std::string> phases;
  for (const Slice& s : tl.slices) phases.insert(s.phase + (s.phase == "train" ? std::to_string(s.step) : ""));
  EXPECT_EQ(phases, (std::set<std::string>{"train8", "evaluation"}));
}

// A pipelined prediction keeps two rounds in flight: the first device
// starts round N+1 while the last one still works on round N.
TEST_F(TraceTest, PipelinedPredictionRoundsOverlapAcrossDevices) {
  train(dir_, "weights", {"--set", "train.max_steps=2"});
  const std::string weights = dir_.path() + "/weights/fashion_mnist_cnn_split.safetensors";
  ASSERT_TRUE(std::filesystem::exists(weights));
  const std::string trace = dir_.path() + "/predict.json";
  ProcessResult r = run_process(
      {DEVMAP_COORDINATOR_BIN, "predict", kConfigs + "fashion_mnist_cnn_split.yaml", "--weights", weights, "--input",
       "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", "--output", dir_.path() + "/p.csv", "--batch",
       "400", "--metrics", dir_.path() + "/p.jsonl", "--trace", trace, "--set", "train.pipeline.micro_batches=4"},
      dir_.path(), {"TMPDIR=" + dir_.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Trace t = read_trace(trace);
  ASSERT_FALSE(::testing::Test::HasFailure());
  expect_nested(t);
  int first = 0, last = 0;  // cpu:0 holds the convolutions, cpu:1 the logits
  for (const auto& [pid, name] : t.process) {
    if (name == "cpu:0") first = pid;
    if (name == "cpu:1") last = pid;
  }
  ASSERT_TRUE(first > 0 && last > 0);
  std::map<int64_t, Slice> first_rounds, last_rounds;
  for (const Slice& s : t.slices)
    if (s.cat == "step" && s.phase == "prediction" && (s.pid == first || s.pid == last))
      (s.pid == first ? first_rounds : last_rounds)[s.step] = s;
  ASSERT_EQ(first_rounds.size(), 25u);  // 10000 images: rounds of 400 as 4 batches of 100
  ASSERT_EQ(last_rounds.size(), 25u);
  int overlapping = 0;
  for (const auto& [step, s] : first_rounds)
    if (last_rounds.count(step - 1) && s.ts < last_rounds.at(step - 1).end()) ++overlapping;
  EXPECT_GE(overlapping, 1) << "no round started on cpu:0 before cpu:1 finished the round before it";
}

// Offload (configs/fashion_mnist_cnn_offload.yaml): the worker's copy
// thread draws each op's parameter fetch on its own track, and each fetch
// but a pass's first is queued once the op before it (that reads offloaded
// parameters) has started and is done before its own op starts. Both
// tracks are one process's clock. A fetch that begins before the op before
// it ends overlapped its compute; every such pair does so in at least one
// of the traced steps (a copy thread that the scheduler wakes late on a
// loaded machine may miss a short compute in one step, not in all).
TEST_F(TraceTest, OffloadedParametersAreFetchedWhileThePreviousOpComputes) {
  const std::string sub = dir_.path() + "/offload";
  std::filesystem::create_directories(sub);
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn_offload.yaml",
                                 "--out-dir", sub, "--trace", sub + "/trace.json", "--trace-steps", "2:7", "--set",
                                 "data.train_limit=640", "--set", "data.test_limit=64", "--set", "train.max_steps=7"},
                                sub, {"TMPDIR=" + sub});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Trace t = read_trace(sub + "/trace.json");
  ASSERT_FALSE(::testing::Test::HasFailure());
  expect_nested(t);
  ASSERT_EQ(t.process.at(1), "cpu:0");
  std::map<int64_t, std::vector<Slice>> compute, fetches, write_backs;  // by step, in time order
  for (const Slice& s : t.slices) {
    if (s.pid != 1 || s.phase != "train") continue;
    if (s.tid == 1 && (s.cat == "forward" || s.cat == "backward")) compute[s.step].push_back(s);
    if (s.tid == 2 && s.cat == "fetch") fetches[s.step].push_back(s);
    if (s.tid == 2 && s.cat == "write_back") write_backs[s.step].push_back(s);
    if (s.tid == 2) {
      EXPECT_TRUE(s.cat == "fetch" || s.cat == "write_back") << s.name;
    }
  }
  ASSERT_EQ(fetches.size(), 6u) << "steps 2 to 7";
  auto by_time = [](const Slice& a, const Slice& b) { return a.ts < b.ts; };
  std::map<std::string, int> overlapped;  // "fc1 forward" -> steps where its fetch overlapped the op before
  for (auto& [step, list] : fetches) {
    std::sort(list.begin(), list.end(), by_time);
    std::sort(compute[step].begin(), compute[step].end(), by_time);
    // Each fetch's op: its first forward or backward slice after the fetch.
    std::vector<const Slice*> ops;
    for (const Slice& f : list) {
      const std::string op = f.name.substr(6, f.name.size() - 6 - 11);  // "fetch X parameters"
      ASSERT_EQ(f.name, "fetch " + op + " parameters");
      const Slice* c = nullptr;
      for (const Slice& s : compute[step])
        if (s.ts + kEps >= f.end() && (s.name == op + " forward" || s.name == op + " backward")) {
          c = &s;
          break;
        }
      ASSERT_NE(c, nullptr) << "step " << step << ": " << f.name << " ends after its op starts";
      ops.push_back(c);
    }
    // conv1, conv2, fc1 and logits, forward then backward.
    ASSERT_EQ(list.size(), 8u) << "step " << step;
    for (size_t k = 1; k < list.size(); ++k) {
      if (ops[k]->cat != ops[k - 1]->cat) continue;  // a pass's first fetch waits for no op
      EXPECT_GE(list[k].ts + kEps, ops[k - 1]->ts) << "step " << step << ": " << list[k].name;
      overlapped[ops[k]->name] += list[k].ts < ops[k - 1]->end() ? 1 : 0;
    }
    // Each backward's gradients go back after it.
    ASSERT_EQ(write_backs[step].size(), 4u) << "step " << step;
    for (const Slice& w : write_backs[step]) {
      const std::string op = w.name.substr(11, w.name.size() - 11 - 10);  // "write back X gradients"
      ASSERT_EQ(w.name, "write back " + op + " gradients");
      const auto c = std::find_if(compute[step].begin(), compute[step].end(),
                                  [&](const Slice& s) { return s.name == op + " backward"; });
      ASSERT_NE(c, compute[step].end()) << w.name;
      EXPECT_GE(w.ts + kEps, c->end()) << "step " << step << ": " << w.name;
    }
  }
  ASSERT_EQ(overlapped.size(), 6u) << "three fetches a pass follow another op's";
  for (const auto& [what, steps] : overlapped)
    EXPECT_GT(steps, 0) << what << ": its fetch never overlapped the compute of the op before it";
}

TEST_F(TraceTest, TraceStepsNeedsTraceAndAnOrderedRange) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--trace-steps", "5:3", "--trace", dir_.path() + "/t.json"},
        std::vector<std::string>{"--trace-steps", "0:3", "--trace", dir_.path() + "/t.json"},
        std::vector<std::string>{"--trace-steps", "1:2"}}) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn_split.yaml",
                                     "--out-dir", dir_.path()};
    args.insert(args.end(), bad.begin(), bad.end());
    ProcessResult r = run_process(args, dir_.path(), {"TMPDIR=" + dir_.path()});
    EXPECT_EQ(r.exit_code, 2) << bad[1] << ": " << r.err;
    EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/t.json"));
}

}  // namespace
}  // namespace devmap::testing
