// A devmap job across the namespace hosts of scripts/testbed.sh, started
// the way a user starts one: scripts/launch.sh --hosts node1,node2 composes
// and runs mpirun, with one coordinator rank per host. Rank 0 (node1) runs
// the job's devices; the ranks first agree on the build, the config and the
// hosts. Skipped, with the reason, where the build has no MPI or namespaces
// cannot be made.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/multihost/testbed_suite.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kCoordinator = DEVMAP_COORDINATOR_BIN;
// The build folder: launch.sh runs it on every host (DEVMAP_BUILD_DIR).
const std::string kBuildDir = std::filesystem::path(kCoordinator).parent_path().parent_path().string();

const std::string kTestImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

// A small CNN split over two workers on node1, trained for a few steps.
const std::string kHostedConfig = R"(hosts: [node1, node2]
model:
  ops:
    - {name: image, op: input, shape: [1, 28, 28]}
    - {name: label, op: labels, classes: 10}
    - {name: conv1, op: conv2d, inputs: [image], filters: 8, kernel: 5, padding: 2, device: node1/cpu:0}
    - {name: relu1, op: relu, inputs: [conv1], device: node1/cpu:0}
    - {name: pool1, op: max_pool2d, inputs: [relu1], kernel: 2, device: node1/cpu:0}
    - {name: flat, op: flatten, inputs: [pool1]}
    - {name: fc1, op: dense, inputs: [flat], units: 32}
    - {name: relu2, op: relu, inputs: [fc1]}
    - {name: logits, op: dense, inputs: [relu2], units: 10}
    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}
data: {train_limit: 640, test_limit: 128}
train: {epochs: 1, batch_size: 32, seed: 3}
devices: {node1/cpu:0: {threads: 1}, node1/cpu:1: {threads: 1}}
device_map: {default: node1/cpu:1}
)";

// The same job on this machine alone: no hosts, no host in device names.
std::string local_config() {
  std::string text = std::regex_replace(kHostedConfig, std::regex("node1/"), "");
  return text.substr(text.find('\n') + 1);
}

// The same CNN as pipeline stages on two hosts: cpu:1 (the dense layers)
// on node2.
std::string stages_config() {
  return std::regex_replace(kHostedConfig, std::regex("node1/cpu:1"), "node2/cpu:1");
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The per-step losses of a metrics file written with --log-every 1.
std::vector<double> step_losses(const std::string& metrics) {
  std::vector<double> losses;
  const std::regex step("\"event\":\"step\",\"step\":([0-9]+),[^\n]*\"loss\":([-0-9.e+]+)");
  std::istringstream in(read_file(metrics));
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, step)) losses.push_back(std::stod(m[2]));
  }
  return losses;
}

class JobAcrossHosts : public TestbedSuite {
 protected:
  static void SetUpTestSuite() { bring_up(2); }
  static void TearDownTestSuite() { tear_down(); }

  // A folder every host sees at the same path (the build folder is in the
  // repository, which the test bed shows on every host; /tmp is each host's
  // own): the configs, checkpoints and runs of one test.
  void SetUp() override {
    TestbedSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    shared_ = kBuildDir + "/multihost-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(shared_);
    std::filesystem::create_directories(shared_);
  }
  void TearDown() override {
    if (!shared_.empty()) std::filesystem::remove_all(shared_);
  }

  // The shell line, run on node1, that starts `config` on node1 and node2
  // through launch.sh --hosts, over the test bed's eth0 links.
  // `hosts`: launch.sh's --hosts.
  std::string launch_line(const std::string& config, const std::vector<std::string>& args,
                          const std::string& hosts = "node1,node2") const {
    // A job that hangs fails the test (exit 124) instead of holding it.
    std::string line = "cd " + shell_quote(shared_) +
                       " && exec timeout -k 5 240 env DEVMAP_BUILD_DIR=" + shell_quote(kBuildDir) +
                       " DEVMAP_MPI_INTERFACE=eth0 DEVMAP_MPIRUN_ARGS=" +
                       shell_quote("--mca plm_rsh_agent " + std::string(DEVMAP_SOURCE_DIR) +
                                   "/scripts/testbed_rsh.sh -x DEVMAP_TESTBED_NAME=" + name() + " -wdir " + shared_) +
                       " " + shell_quote(std::string(DEVMAP_SOURCE_DIR) + "/scripts/launch.sh") + " --hosts " + hosts +
                       " " + shell_quote(config);
    for (const std::string& a : args) line += " " + shell_quote(a);
    return line;
  }
  ProcessResult launch(const std::string& config, const std::vector<std::string>& args,
                       const std::string& hosts = "node1,node2") const {
    return in_host("node1", launch_line(config, args, hosts));
  }
  // The same job's coordinator on this machine, without a launcher.
  ProcessResult run_here(const std::string& config, const std::vector<std::string>& args) const {
    std::string line =
        "cd " + shell_quote(shared_) + " && exec " + shell_quote(kCoordinator) + " " + shell_quote(config);
    for (const std::string& a : args) line += " " + shell_quote(a);
    return run_process({"sh", "-c", line}, dir_->path());
  }

  // The devmap processes still running inside `host` (by its UTS namespace:
  // the hosts share one pid namespace), one "pid name" per line.
  static std::string devmap_processes(const std::string& host) {
    return in_host(host,
                   "for p in $(pgrep -x 'coordinator|worker_cpu|devmap_run_guard|orted'); do "
                   "[ \"$(readlink /proc/$p/ns/uts)\" = \"$(readlink /proc/self/ns/uts)\" ] && "
                   "echo \"$p $(cat /proc/$p/comm)\"; done; true")
        .out;
  }

  // `job` and `extra`, then the checkpoint and metrics of run `name` in the
  // shared folder.
  std::vector<std::string> outputs_named(const std::string& name, std::vector<std::string> job,
                                         const std::vector<std::string>& extra) const {
    job.insert(job.end(), extra.begin(), extra.end());
    job.insert(job.end(), {"--set", "train.checkpoint=" + shared_ + "/" + name + ".safetensors", "--metrics",
                           shared_ + "/" + name + ".jsonl"});
    return job;
  }

  // `message`: what stderr must say about it.
  void kill_on_node2_and_expect_the_job_gone(BackgroundProcess& job, const std::string& first_checkpoint,
                                             const std::string& pattern, const std::string& message) const;

  std::string shared_;
};

TEST_F(JobAcrossHosts, TwoRanksTrainTheBitsOfTheSameJobOnOneMachineWithOrWithoutHosts) {
  write_file(shared_ + "/hosted.yaml", kHostedConfig);
  write_file(shared_ + "/local.yaml", local_config());
  ProcessResult hosted =
      launch(shared_ + "/hosted.yaml", {"--set", "train.checkpoint=" + shared_ + "/hosted.safetensors"});
  ASSERT_EQ(hosted.exit_code, 0) << hosted.err;
  // launch.sh printed the mpirun line it ran: one rank per host, TCP only.
  EXPECT_TRUE(contains(hosted.err, "launch.sh: mpirun --host node1,node2 -np 2 --map-by node --bind-to none"))
      << hosted.err;
  EXPECT_TRUE(contains(hosted.err, "--mca btl tcp,self --mca btl_tcp_if_include eth0")) << hosted.err;
  EXPECT_TRUE(contains(hosted.out, "device busy: node1/cpu:0 ")) << hosted.out;
  ProcessResult local = run_here("local.yaml", {"--set", "train.checkpoint=" + shared_ + "/local.safetensors"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  // The same epoch line and the same weights, to the bit.
  EXPECT_EQ(hosted.out.substr(0, hosted.out.find('\n')), local.out.substr(0, local.out.find('\n')));
  const std::string weights = read_file(shared_ + "/hosted.safetensors");
  EXPECT_GT(weights.size(), 1000u);
  EXPECT_TRUE(weights == read_file(shared_ + "/local.safetensors"));
  // Without a hosts section, the job spans the hosts the launcher gave it.
  ProcessResult given =
      launch(shared_ + "/local.yaml", {"--set", "train.checkpoint=" + shared_ + "/given.safetensors"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_TRUE(weights == read_file(shared_ + "/given.safetensors"));
  EXPECT_EQ(devmap_processes("node1") + devmap_processes("node2"), "");
  EXPECT_EQ(in_host("node1", "ls -A /dev/shm").out, "");
}

// mpirun interleaves the ranks' stderr, so the messages are looked for
// without the lines around them.
TEST_F(JobAcrossHosts, AHostWithoutARankStopsTheJobAtStartUp) {
  std::string text = kHostedConfig;
  text.replace(0, text.find('\n'), "hosts: [node1, node2, node3]");
  write_file(shared_ + "/three.yaml", text);
  ProcessResult r = launch(shared_ + "/three.yaml", {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, shared_ + "/three.yaml:1:1: hosts: no rank runs on node3: the launcher started ranks on "
                                        "node1, node2, and every host the config lists needs one"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "devmap: rank 1 on node2: the job did not start (rank 0 says why)")) << r.err;
  EXPECT_EQ(devmap_processes("node1") + devmap_processes("node2"), "");
}

TEST_F(JobAcrossHosts, AnotherConfigOnOneHostStopsTheJobAtStartUp) {
  // Each host's /tmp is its own: the same path holds another seed on node2.
  write_file(shared_ + "/a.yaml", kHostedConfig);
  write_file(shared_ + "/b.yaml", std::regex_replace(kHostedConfig, std::regex("seed: 3"), "seed: 4"));
  ASSERT_EQ(in_host("node1", "cp " + shell_quote(shared_ + "/a.yaml") + " /tmp/job.yaml").exit_code, 0);
  ASSERT_EQ(in_host("node2", "cp " + shell_quote(shared_ + "/b.yaml") + " /tmp/job.yaml").exit_code, 0);
  ProcessResult r = launch("/tmp/job.yaml", {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("rank 1 on node2 read another config than rank 0 on node1 "
                                                  "\\(digest [0-9a-f]{16} against [0-9a-f]{16}\\): every host "
                                                  "must read the same file with the same --set options")))
      << r.err;
  in_host("node1", "rm -f /tmp/job.yaml");
  in_host("node2", "rm -f /tmp/job.yaml");
}

// Kills what `pattern` (pgrep -x) names inside node2 once `job` has written
// `first_checkpoint`; checks that the whole job stops within 5 s, mpirun
// gone and nothing left on either host, and that stderr says `message`.
void JobAcrossHosts::kill_on_node2_and_expect_the_job_gone(BackgroundProcess& job, const std::string& first_checkpoint,
                                                           const std::string& pattern,
                                                           const std::string& message) const {
  const auto started = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(first_checkpoint) && job.wait(std::chrono::milliseconds(0)) < 0 &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_LT(job.wait(std::chrono::milliseconds(0)), 0) << "the job ended before the kill: " << job.err();
  const auto killed = std::chrono::steady_clock::now();
  ProcessResult kill =
      in_host("node2", "for p in $(pgrep -x '" + pattern +
                           "'); do "
                           "[ \"$(readlink /proc/$p/ns/uts)\" = \"$(readlink /proc/self/ns/uts)\" ] && "
                           "kill -KILL $p && echo killed && break; done; true");
  ASSERT_EQ(kill.out, "killed\n") << kill.err;
  const int code = job.wait(std::chrono::seconds(30));
  EXPECT_NE(code, 0) << job.err();
  EXPECT_NE(code, -1) << "the job still runs 30 s after the kill";
  // The job has stopped once mpirun has exited and no process or shared
  // memory of it is left on either host (workers of a killed coordinator
  // remove the run's files and exit on their own).
  auto left = [] {
    return devmap_processes("node1") + devmap_processes("node2") + in_host("node1", "ls -A /dev/shm").out +
           in_host("node2", "ls -A /dev/shm").out;
  };
  std::string remains = left();
  while (!remains.empty() && std::chrono::steady_clock::now() - killed < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    remains = left();
  }
  const double stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_EQ(remains, "");
  EXPECT_LE(stop_s, 5.0) << job.err();
  std::printf("the job stopped %.2f s after node2's %s was killed\n", stop_s, pattern.c_str());
  EXPECT_TRUE(contains(job.err(), message)) << job.err();
}

const std::vector<std::string> kSteps{"--set", "train.epochs=40",          "--set", "train.max_steps=240",
                                      "--set", "train.checkpoint_every=20"};

// `args`, the steps of the kill tests, and the checkpoint `name` in `dir`.
std::vector<std::string> kill_test_args(std::vector<std::string> args, const std::string& dir,
                                        const std::string& name) {
  args.insert(args.end(), kSteps.begin(), kSteps.end());
  args.insert(args.end(), {"--set", "train.checkpoint=" + dir + "/" + name});
  return args;
}

TEST_F(JobAcrossHosts, AKilledRankStopsTheJobOnEveryHostAndResumeContinuesIt) {
  write_file(shared_ + "/job.yaml", kHostedConfig);
  write_file(shared_ + "/local.yaml", local_config());
  BackgroundProcess job({kTestbed, "exec", "node1", "sh", "-c",
                         launch_line(shared_ + "/job.yaml", kill_test_args({}, shared_, "job.safetensors"))},
                        dir_->path(), env());
  kill_on_node2_and_expect_the_job_gone(job, shared_ + "/job.step-20.safetensors", "coordinator",
                                        "mpirun noticed that process rank 1 with PID");
  // Resumed across the hosts, it ends with the weights of a run that was
  // never stopped.
  ProcessResult resumed = launch(shared_ + "/job.yaml", kill_test_args({"--resume"}, shared_, "job.safetensors"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "resum")) << resumed.err;
  ProcessResult whole = run_here("local.yaml", kill_test_args({}, shared_, "local.safetensors"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_TRUE(read_file(shared_ + "/job.safetensors") == read_file(shared_ + "/local.safetensors"));
}

// Pipeline stages across hosts (the small CNN's dense layers on node2): a
// worker killed on node2 stops the job on both hosts, the failing rank names
// the launch.sh --hosts line that resumes it, and the resumed job ends with
// the weights of the same split trained on one machine without a stop.
TEST_F(JobAcrossHosts, AKilledWorkerOfAStageStopsTheJobAndResumeContinuesIt) {
  write_file(shared_ + "/stages.yaml", stages_config());
  write_file(shared_ + "/local.yaml", local_config());
  BackgroundProcess job({kTestbed, "exec", "node1", "sh", "-c",
                         launch_line(shared_ + "/stages.yaml", kill_test_args({}, shared_, "stages.safetensors"))},
                        dir_->path(), env());
  kill_on_node2_and_expect_the_job_gone(job, shared_ + "/stages.step-20.safetensors", "worker_cpu",
                                        "rank 1 on node2: worker_cpu for node2/cpu:1");
  EXPECT_TRUE(contains(job.err(), "resume with: " + std::string(DEVMAP_SOURCE_DIR) +
                                      "/scripts/launch.sh --hosts node1,node2 " + shared_ + "/stages.yaml"))
      << job.err();
  ProcessResult resumed = launch(shared_ + "/stages.yaml", kill_test_args({"--resume"}, shared_, "stages.safetensors"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "resum")) << resumed.err;
  ProcessResult whole = run_here(shared_ + "/local.yaml", kill_test_args({}, shared_, "local.safetensors"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_TRUE(read_file(shared_ + "/stages.safetensors") == read_file(shared_ + "/local.safetensors"));
}

// The same jobs started by Slurm's srun (scripts/testbed.sh slurm: slurmctld
// and a slurmd per host, ranks wired up through PMIx) instead of mpirun:
// pipeline stages across the hosts train the bits of the same split on one
// machine, and two replicas the bits mpirun's replicas train.
TEST_F(JobAcrossHosts, SrunStartsStagesAndReplicasAcrossTheHosts) {
  ProcessResult slurm = run_process({kTestbed, "slurm"}, dir_->path(), env());
  if (slurm.exit_code == 77) GTEST_SKIP() << slurm.first_err_line();
  ASSERT_EQ(slurm.exit_code, 0) << slurm.err;
  auto srun = [&](const std::string& config, const std::vector<std::string>& args) {
    std::string line = "exec timeout -k 5 240 " + shell_quote(kTestbed) +
                       " srun -N2 --ntasks-per-node=1 --mpi=pmix --cpu-bind=none --chdir=" + shell_quote(shared_) +
                       " env DEVMAP_BUILD_DIR=" + shell_quote(kBuildDir) + " " +
                       shell_quote(std::string(DEVMAP_SOURCE_DIR) + "/scripts/launch.sh") + " " + shell_quote(config);
    for (const std::string& a : args) line += " " + shell_quote(a);
    return run_process({"sh", "-c", line}, dir_->path(), env());
  };
  write_file(shared_ + "/stages.yaml", stages_config());
  write_file(shared_ + "/local.yaml", local_config());
  const auto before = bytes("node2");
  ProcessResult stages = srun(shared_ + "/stages.yaml", {"--set", "train.checkpoint=" + shared_ + "/s.safetensors"});
  const auto after = bytes("node2");
  ASSERT_EQ(stages.exit_code, 0) << stages.err;
  EXPECT_TRUE(contains(stages.err, "on node1/cpu:0 (1 thread), node2/cpu:1")) << stages.err;
  ProcessResult local = run_here(shared_ + "/local.yaml", {"--set", "train.checkpoint=" + shared_ + "/l.safetensors"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const std::string weights = read_file(shared_ + "/s.safetensors");
  EXPECT_GT(weights.size(), 100000u);
  EXPECT_TRUE(weights == read_file(shared_ + "/l.safetensors"));
  // pool1's activations (32 x 8 x 14 x 14 floats a step) came into node2.
  EXPECT_GE(after.first - before.first, uint64_t{20} * 32 * 8 * 14 * 14 * 4);

  const std::vector<std::string> replicas{"--set", "data_parallel.replicas=2"};
  std::vector<std::string> by_srun = replicas, by_mpirun = replicas;
  by_srun.insert(by_srun.end(), {"--set", "train.checkpoint=" + shared_ + "/rs.safetensors"});
  by_mpirun.insert(by_mpirun.end(), {"--set", "train.checkpoint=" + shared_ + "/rm.safetensors"});
  ProcessResult srun_replicas = srun(shared_ + "/local.yaml", by_srun);
  ASSERT_EQ(srun_replicas.exit_code, 0) << srun_replicas.err;
  ProcessResult mpirun_replicas = launch(shared_ + "/local.yaml", by_mpirun);
  ASSERT_EQ(mpirun_replicas.exit_code, 0) << mpirun_replicas.err;
  EXPECT_TRUE(
      contains(mpirun_replicas.err, "devmap: data parallel: 2 replicas, each trains 16 of every batch of 32 samples"))
      << mpirun_replicas.err;
  const std::string replicated = read_file(shared_ + "/rs.safetensors");
  EXPECT_GT(replicated.size(), 100000u);
  EXPECT_TRUE(replicated == read_file(shared_ + "/rm.safetensors"));
  EXPECT_EQ(devmap_processes("node1") + devmap_processes("node2"), "");
  EXPECT_EQ(in_host("node1", "ls -A /dev/shm").out + in_host("node2", "ls -A /dev/shm").out, "");
}

// Two data-parallel replicas: a worker killed on node2 stops the job on both
// hosts, and the replicas resume (each reads replica 0's checkpoint, which
// this test bed shows on both hosts) to the bits of a job never stopped.
TEST_F(JobAcrossHosts, AKilledWorkerOfAReplicaStopsTheJobAndTheReplicasResumeIt) {
  write_file(shared_ + "/local.yaml", local_config());
  const std::vector<std::string> replicas{"--set", "data_parallel.replicas=2"};
  BackgroundProcess job({kTestbed, "exec", "node1", "sh", "-c",
                         launch_line(shared_ + "/local.yaml", kill_test_args(replicas, shared_, "dp.safetensors"))},
                        dir_->path(), env());
  kill_on_node2_and_expect_the_job_gone(job, shared_ + "/dp.step-20.safetensors", "worker_cpu",
                                        "rank 1 on node2: worker_cpu for cpu:");
  std::vector<std::string> resume = replicas;
  resume.push_back("--resume");
  ProcessResult resumed = launch(shared_ + "/local.yaml", kill_test_args(resume, shared_, "dp.safetensors"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "resum")) << resumed.err;
  ProcessResult whole = launch(shared_ + "/local.yaml", kill_test_args(replicas, shared_, "whole.safetensors"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_TRUE(read_file(shared_ + "/dp.safetensors") == read_file(shared_ + "/whole.safetensors"));
}

// A checkpoint is the job's, not its layout's: 10 steps of two replicas
// resume on one machine, and 10 steps of one machine resume as two
// replicas, each to the bits of one machine that ran all 20 steps as two
// lock-step micro-batches (what two replicas compute).
TEST_F(JobAcrossHosts, CheckpointsResumeWithAnotherNumberOfReplicas) {
  write_file(shared_ + "/local.yaml", local_config());
  const std::string micro = "train.pipeline={schedule: none, micro_batches: 2}";
  auto args = [&](const std::string& name, int steps, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--set", "train.max_steps=" + std::to_string(steps), "--set",
                               "train.checkpoint=" + shared_ + "/" + name + ".safetensors"});
    return extra;
  };
  ProcessResult whole = run_here(shared_ + "/local.yaml", args("whole", 20, {"--set", micro}));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::string weights = read_file(shared_ + "/whole.safetensors");
  EXPECT_GT(weights.size(), 100000u);

  ProcessResult replicated = launch(shared_ + "/local.yaml", args("a", 10, {"--set", "data_parallel.replicas=2"}));
  ASSERT_EQ(replicated.exit_code, 0) << replicated.err;
  ProcessResult here = run_here(shared_ + "/local.yaml", args("a", 20, {"--set", micro, "--resume"}));
  ASSERT_EQ(here.exit_code, 0) << here.err;
  EXPECT_TRUE(contains(here.out, "10 of 20 steps (resumed at step 10)")) << here.out;
  EXPECT_TRUE(read_file(shared_ + "/a.safetensors") == weights);

  ProcessResult one = run_here(shared_ + "/local.yaml", args("b", 10, {"--set", micro}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ProcessResult replicas =
      launch(shared_ + "/local.yaml", args("b", 20, {"--set", "data_parallel.replicas=2", "--resume"}));
  ASSERT_EQ(replicas.exit_code, 0) << replicas.err;
  EXPECT_TRUE(contains(replicas.out, "10 of 20 steps (resumed at step 10)")) << replicas.out;
  EXPECT_TRUE(read_file(shared_ + "/b.safetensors") == weights);
}

// Four replicas, two on each host (launch.sh --hosts node1:2,node2:2): each
// trains 8 of every step's 32 samples, to the bits of one machine running
// each step as four lock-step micro-batches of 8, and leaves nothing
// behind on either host.
TEST_F(JobAcrossHosts, SeveralReplicasShareAHost) {
  write_file(shared_ + "/local.yaml", local_config());
  const std::vector<std::string> steps{"--set", "train.max_steps=10", "--log-every", "1"};
  auto with = [&](const std::string& name, const std::vector<std::string>& extra) {
    return outputs_named(name, steps, extra);
  };
  ProcessResult replicas =
      launch(shared_ + "/local.yaml", with("four", {"--set", "data_parallel.replicas=4"}), "node1:2,node2:2");
  ASSERT_EQ(replicas.exit_code, 0) << replicas.err;
  EXPECT_TRUE(contains(replicas.err, "-np 4")) << replicas.err;
  ProcessResult split =
      run_here(shared_ + "/local.yaml", with("split", {"--set", "train.pipeline={schedule: none, micro_batches: 4}"}));
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const std::vector<double> losses = step_losses(shared_ + "/four.jsonl");
  EXPECT_EQ(losses.size(), 10u);
  EXPECT_EQ(losses, step_losses(shared_ + "/split.jsonl"));
  const std::string weights = read_file(shared_ + "/four.safetensors");
  EXPECT_GT(weights.size(), 100000u);
  EXPECT_TRUE(weights == read_file(shared_ + "/split.safetensors"));
  EXPECT_EQ(devmap_processes("node1") + devmap_processes("node2"), "");
  EXPECT_EQ(in_host("node1", "ls -A /dev/shm").out + in_host("node2", "ls -A /dev/shm").out, "");
}

// A replica's device that holds no trained parameter (here cpu:1 runs only
// the flatten) takes part in the step and sends no gradients.
TEST_F(JobAcrossHosts, AReplicaDeviceWithoutParametersTakesPartWithoutGradients) {
  std::string text = local_config();
  text = std::regex_replace(text, std::regex("\\{name: flat, op: flatten, inputs: \\[pool1\\]\\}"),
                            "{name: flat, op: flatten, inputs: [pool1], device: cpu:1}");
  text = std::regex_replace(text, std::regex("device_map: \\{default: cpu:1\\}"), "device_map: {default: cpu:0}");
  ASSERT_NE(text.find("device: cpu:1}"), std::string::npos) << text;
  write_file(shared_ + "/flat.yaml", text);
  ProcessResult r = launch(shared_ + "/flat.yaml", {"--set", "data_parallel.replicas=2", "--set",
                                                    "train.checkpoint=" + shared_ + "/f.safetensors"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "device busy: cpu:0 ")) << r.out;
}

// Two replicas of the reference CNN, one per host, each training 32 of
// every step's 64 samples (one gradient chunk, train.gradient_chunk's
// default): the weights of one machine training the whole batch, and of one
// that splits each step the same way (two lock-step micro-batches of 32),
// to the bit; their losses; the same bits from run to run; the gradients
// crossing through eth0.
TEST_F(JobAcrossHosts, TwoReplicasTrainTheLossesOfOneMachineAndRepeatTheirBits) {
  const std::string config = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn.yaml";
  const std::vector<std::string> job{"--set",       "devices.cpu:0.threads=1",
                                     "--set",       "data.train_limit=3200",
                                     "--set",       "data.test_limit=256",
                                     "--set",       "train.epochs=1",
                                     "--log-every", "1"};
  auto with = [&](const std::string& name, const std::vector<std::string>& extra) {
    return outputs_named(name, job, extra);
  };
  const std::vector<std::string> replicas{"--set", "data_parallel.replicas=2"};
  const auto before = bytes("node2");
  std::vector<std::string> traced = replicas;
  traced.insert(traced.end(), {"--trace", shared_ + "/first.json", "--trace-steps", "3:4"});
  ProcessResult first = launch(config, with("first", traced));
  const auto after = bytes("node2");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ProcessResult second = launch(config, with("second", replicas));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ProcessResult split = run_here(config, with("split", {"--set", "train.pipeline={schedule: none, micro_batches: 2}"}));
  ASSERT_EQ(split.exit_code, 0) << split.err;
  ProcessResult whole = run_here(config, with("whole", {}));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  const std::vector<double> replicated = step_losses(shared_ + "/first.jsonl");
  const std::vector<double> same_split = step_losses(shared_ + "/split.jsonl");
  const std::vector<double> whole_batch = step_losses(shared_ + "/whole.jsonl");
  ASSERT_EQ(replicated.size(), 50u);
  ASSERT_EQ(same_split.size(), 50u);
  ASSERT_EQ(whole_batch.size(), 50u);
  // Each replica's half of the step is one gradient chunk of the whole
  // batch: its gradient, added to the other's in rank order, is what one
  // machine adds up over the chunks of the whole batch, and of two lock-step
  // micro-batches. The losses are those micro-batches' losses to the bit;
  // the whole batch averages its 64 per-sample losses at once, so its
  // reported loss differs from the two halves' sum by rounding alone.
  EXPECT_EQ(replicated, same_split);
  for (size_t k = 0; k < whole_batch.size(); ++k)
    EXPECT_NEAR(replicated[k], whole_batch[k], 1e-5 * whole_batch[k]) << "step " << k + 1;
  EXPECT_EQ(step_losses(shared_ + "/second.jsonl"), replicated);
  // The gradients are summed in buckets (4 MiB by default: the dense
  // layers', then the convolutions'), the first as soon as the worker says
  // its gradients are ready (GRADIENT_READY, sent before it computes the
  // convolutions' gradients), not after the step: the coordinator starts it
  // while it still waits for the step's result. Both times come from the
  // coordinator's one thread, in the order it handles the worker's
  // messages, so the check holds however loaded the machine is.
  for (int step : {3, 4}) {
    const std::string at = "\\{\"phase\":\"train\",\"step\":" + std::to_string(step);
    double first_sum = 1e300, wait_end = 0;
    int sums = 0;
    std::istringstream trace(read_file(shared_ + "/first.json"));
    const std::regex sum("\"cat\":\"allreduce\",\"ph\":\"X\",\"ts\":([0-9.]+),.*" + at + "[,}]");
    const std::regex wait("\"cat\":\"wait\",\"ph\":\"X\",\"ts\":([0-9.]+),\"dur\":([0-9.]+),.*" + at + "[,}]");
    for (std::string line; std::getline(trace, line);) {
      std::smatch m;
      if (std::regex_search(line, m, sum)) {
        first_sum = std::min(first_sum, std::stod(m[1]));
        ++sums;
      } else if (std::regex_search(line, m, wait)) {
        wait_end = std::max(wait_end, std::stod(m[1]) + std::stod(m[2]));
      }
    }
    EXPECT_EQ(sums, 2) << "step " << step;
    EXPECT_GT(wait_end, 0) << "step " << step << ": no coordinator wait slice";
    EXPECT_LT(first_sum, wait_end) << "step " << step;
  }
  const std::string weights = read_file(shared_ + "/first.safetensors");
  EXPECT_GT(weights.size(), 1000000u);
  EXPECT_TRUE(weights == read_file(shared_ + "/second.safetensors"));
  EXPECT_TRUE(weights == read_file(shared_ + "/split.safetensors"));
  EXPECT_TRUE(weights == read_file(shared_ + "/whole.safetensors"));
  // Replica 1 wrote nothing of its own: one metrics file, one checkpoint.
  EXPECT_EQ(in_host("node2", "ls -A /dev/shm /tmp | grep -c devmap; true").out, "0\n");
  // node2 sent its share of every step's gradients (3.27 M floats) through eth0.
  EXPECT_GE(after.second - before.second, uint64_t{50} * 3274634 * 4 / 2);
  EXPECT_EQ(devmap_processes("node1") + devmap_processes("node2"), "");
}

}  // namespace
}  // namespace devmap::testing

namespace devmap::testing {
namespace {

// configs/fashion_mnist_cnn_split.yaml with its convolutions (cpu:0) on
// node1 and its dense layers (cpu:1) on node2.
std::string split_across_hosts() {
  std::string text = read_file(std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml");
  text = std::regex_replace(text, std::regex("\\bcpu:1\\b"), "node2/cpu:1");
  text = std::regex_replace(text, std::regex("([^/\\w])cpu:0\\b"), "$1node1/cpu:0");
  return "hosts: [node1, node2]\n" + text;
}

// Pipeline stages across hosts: the split CNN's cut edges (pool2 forward,
// its gradient back) cross from node1 to node2 and back through MPI, four
// 1F1B micro-batches a step, and training gives the bits of the same split
// on one machine; a job stopped after 10 steps resumes to them too, node2's
// parameters coming from rank 0's checkpoint; and prediction across the
// hosts writes the one machine's predictions.
TEST_F(JobAcrossHosts, PipelineStagesOnTwoHostsTrainAndPredictTheBitsOfTheSameSplitOnOneHost) {
  write_file(shared_ + "/hosted.yaml", split_across_hosts());
  const std::vector<std::string> job{"--set",       "data.train_limit=1280",
                                     "--set",       "data.test_limit=512",
                                     "--set",       "train.epochs=1",
                                     "--set",       "train.pipeline={schedule: 1f1b, micro_batches: 4}",
                                     "--log-every", "1"};
  auto with = [&](const std::string& name, const std::vector<std::string>& extra) {
    return outputs_named(name, job, extra);
  };
  const auto before = bytes("node2");
  ProcessResult hosted = launch(shared_ + "/hosted.yaml", with("hosted", {}));
  const auto after = bytes("node2");
  ASSERT_EQ(hosted.exit_code, 0) << hosted.err;
  EXPECT_TRUE(contains(hosted.err, "training " + shared_ + "/hosted.yaml on node1/cpu:0 (1 thread), node2/cpu:1"))
      << hosted.err;
  ProcessResult local =
      run_here(std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml", with("local", {}));
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const std::vector<double> losses = step_losses(shared_ + "/hosted.jsonl");
  ASSERT_EQ(losses.size(), 20u);
  EXPECT_EQ(losses, step_losses(shared_ + "/local.jsonl"));
  EXPECT_EQ(hosted.out.substr(0, hosted.out.find('\n')), local.out.substr(0, local.out.find('\n')));
  const std::string weights = read_file(shared_ + "/hosted.safetensors");
  EXPECT_GT(weights.size(), 1000000u);
  EXPECT_TRUE(weights == read_file(shared_ + "/local.safetensors"));
  EXPECT_TRUE(read_file(shared_ + "/hosted.state.safetensors") == read_file(shared_ + "/local.state.safetensors"));
  // Every step's activations of pool2 (64 x 3136 floats) came into node2
  // through eth0, and their gradients went back; fc1's 3.2 M weights came
  // out of it twice (weights and momentum) for the checkpoint.
  const uint64_t per_step = uint64_t{64} * 3136 * 4;
  EXPECT_GE(after.first - before.first, 20 * per_step);
  EXPECT_GE(after.second - before.second, 20 * per_step + 2 * uint64_t{3136} * 1024 * 4);

  // Stopped after 10 steps, then resumed: rank 0 reads the checkpoint and
  // sends node2 its layers' weights and momentum.
  ProcessResult first = launch(shared_ + "/hosted.yaml", with("resumed", {"--set", "train.max_steps=10"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ProcessResult rest = launch(shared_ + "/hosted.yaml", with("resumed", {"--resume"}));
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  EXPECT_TRUE(read_file(shared_ + "/resumed.safetensors") == weights);

  // Prediction across the hosts (the subcommand first, then the config):
  // rank 0 reads the weights and sends node2 its layers', node2 predicts
  // and sends rank 0 its rows; the file is the one machine's, byte for byte.
  auto predict = [&](const std::string& config, const std::string& csv) {
    return std::vector<std::string>{config,
                                    "--weights",
                                    shared_ + "/hosted.safetensors",
                                    "--input",
                                    kTestImages,
                                    "--output",
                                    shared_ + "/" + csv,
                                    "--probabilities"};
  };
  const auto before_predict = bytes("node2");
  ProcessResult hosted_predict = launch("predict", predict(shared_ + "/hosted.yaml", "hosted.csv"));
  const auto after_predict = bytes("node2");
  ASSERT_EQ(hosted_predict.exit_code, 0) << hosted_predict.err;
  ProcessResult local_predict = run_here(
      "predict", predict(std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml", "local.csv"));
  ASSERT_EQ(local_predict.exit_code, 0) << local_predict.err;
  const std::string predictions = read_file(shared_ + "/hosted.csv");
  EXPECT_GT(predictions.size(), 10000u * 20);
  EXPECT_TRUE(predictions == read_file(shared_ + "/local.csv"));
  EXPECT_TRUE(contains(hosted_predict.out, "wrote 10000 predictions to " + shared_ + "/hosted.csv"))
      << hosted_predict.out;
  // The 10000 images' pool2 activations went in, their 10 scores and label came back.
  EXPECT_GE(after_predict.first - before_predict.first, uint64_t{10000} * 3136 * 4);
  EXPECT_GE(after_predict.second - before_predict.second, uint64_t{10000} * 11 * 4);
  EXPECT_EQ(devmap_processes("node1") + devmap_processes("node2"), "");
  EXPECT_EQ(in_host("node1", "ls -A /dev/shm").out + in_host("node2", "ls -A /dev/shm /tmp | grep -c devmap; true").out,
            "0\n");
}

}  // namespace
}  // namespace devmap::testing
