// Outputs checked before the work, on the built `vitune`: a missing folder is created,
// an existing file is kept unless --overwrite is given, an output that is an input or
// another output is refused, all before the data is read; --resume continues its own
// files; a second concurrent writer to a folder is refused naming the first, and the
// lock of a killed run (and its private copy) is taken over; every command says where it wrote; numeric flags
// say in a few words what they expected.
#include <chrono>
#include <fstream>
#include <thread>

#include "device_test.h"
#include "engine/error.h"
#include "test_faults_support.h"

namespace vitune::testing {
namespace {

namespace fs = std::filesystem;

std::string temp_folder(const std::string& name) {
  const std::string folder = ::testing::TempDir() + "/outputs_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

class OutputPaths : public OnDevice {
 protected:
  void SetUp() override {
    folder_ = temp_folder(device_label({device(), 0}) + "_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    spec_ = write_tiny_idx(folder_ + "/data");
  }
  void TearDown() override { fs::remove_all(folder_); }

  // A tiny pretrain on this test's device with `more` flags.
  ChildResult pretrain(const std::vector<std::string>& more) {
    return run_vitune_args(plus(plus(tiny_pretrain(spec_), {"--device", device().str()}), more), folder_ + "/out.txt");
  }

  std::string folder_, spec_;
};

TEST_P(OutputPaths, MissingFoldersAreCreatedAndEachOutputIsReported) {
  const std::string model = folder_ + "/a/b/model.safetensors", results = folder_ + "/c/results.json",
                    log = folder_ + "/d/log.jsonl", checkpoint = folder_ + "/e/ckpt.safetensors";
  const ChildResult run =
      pretrain({"--steps", "2", "--out", model, "--results", results, "--log", log, "--log-every", "1",
                "--checkpoint", checkpoint});
  ASSERT_EQ(run.exit_status, 0) << run.output;
  for (const auto& [what, path] : std::vector<std::pair<std::string, std::string>>{
           {"model", model}, {"results", results}, {"log", log}, {"checkpoint", checkpoint}}) {
    EXPECT_TRUE(fs::exists(path)) << path;
    EXPECT_TRUE(contains(run.output, "wrote " + what + " " + path + "\n")) << run.output;
    EXPECT_FALSE(fs::exists(fs::path(path).parent_path() / ".vitune.lock")) << "lock left in " << path;
  }
}

TEST_P(OutputPaths, AnExistingOutputIsKeptUnlessOverwriteIsGiven) {
  const std::string model = folder_ + "/model.safetensors", results = folder_ + "/results.json";
  write_bytes(results, "{\"kept\": true}\n");
  // The data does not exist: the outputs are checked first, so the message is theirs.
  const ChildResult refused = run_vitune_args(
      {"pretrain", "--data", "idx:" + folder_ + "/none,x", "--out", model, "--results", results, "--device",
       device().str()},
      folder_ + "/out.txt");
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_TRUE(contains(refused.output, "--results: " + results + " already exists; pass --overwrite to replace it"))
      << refused.output;
  EXPECT_EQ(read_bytes(results), "{\"kept\": true}\n");
  EXPECT_FALSE(fs::exists(model));

  const ChildResult replaced = pretrain({"--steps", "1", "--out", model, "--results", results, "--overwrite"});
  ASSERT_EQ(replaced.exit_status, 0) << replaced.output;
  EXPECT_NE(read_bytes(results), "{\"kept\": true}\n");
}

TEST_P(OutputPaths, AnOutputThatIsAnInputOrAnotherOutputIsRefused) {
  const std::string model = folder_ + "/model.safetensors";
  ASSERT_EQ(pretrain({"--steps", "1", "--out", model}).exit_status, 0);
  const std::string before = read_bytes(model);
  const ChildResult same = run_vitune_args({"finetune", "--model", model, "--data", spec_, "--steps", "1",
                                            "--batch-size", "8", "--out", folder_ + "/./model.safetensors",
                                            "--overwrite", "--device", device().str()},
                                           folder_ + "/out.txt");
  EXPECT_EQ(same.exit_status, 1);
  EXPECT_TRUE(contains(same.output, "--out: " + folder_ + "/./model.safetensors is also an input of this command"))
      << same.output;
  EXPECT_EQ(read_bytes(model), before);

  const ChildResult twice = pretrain({"--steps", "1", "--out", folder_ + "/x.json", "--results", folder_ + "/x.json"});
  EXPECT_EQ(twice.exit_status, 1);
  EXPECT_TRUE(contains(twice.output, "--out and --results both name " + folder_ + "/x.json")) << twice.output;

  const ChildResult folder = pretrain({"--steps", "1", "--out", folder_ + "/data"});
  EXPECT_EQ(folder.exit_status, 1);
  EXPECT_TRUE(contains(folder.output, "--out: " + folder_ + "/data is a folder, expected a file path"))
      << folder.output;
}

TEST_P(OutputPaths, ResumeContinuesItsOwnCheckpointAndLog) {
  const std::vector<std::string> outputs{"--checkpoint", folder_ + "/ckpt.safetensors", "--log", folder_ + "/log.jsonl",
                                         "--log-every", "1", "--out", folder_ + "/model.safetensors"};
  ASSERT_EQ(pretrain(plus({"--steps", "2", "--schedule", "constant"}, outputs)).exit_status, 0);
  const ChildResult again = pretrain(plus({"--steps", "4", "--schedule", "constant"}, outputs));
  EXPECT_EQ(again.exit_status, 1);
  EXPECT_TRUE(contains(again.output, "already exists; pass --overwrite")) << again.output;
  const ChildResult resumed = pretrain(plus({"--steps", "4", "--schedule", "constant", "--resume"}, outputs));
  ASSERT_EQ(resumed.exit_status, 0) << resumed.output;
  std::ifstream log(folder_ + "/log.jsonl");
  int lines = 0;
  for (std::string line; std::getline(log, line);) ++lines;
  EXPECT_EQ(lines, 4);
}

TEST_P(OutputPaths, ASecondWriterToAFolderIsRefusedAndAKilledRunsLockIsTakenOver) {
  const std::string out = folder_ + "/runs";
  const std::string lock = out + "/.vitune.lock";
  const pid_t first = start_vitune(plus(plus(tiny_pretrain(spec_), {"--device", device().str()}),
                                        {"--steps", "1000000", "--out", out + "/long.safetensors"}),
                                   folder_ + "/first.txt");
  for (int i = 0; i < 600 && !fs::exists(lock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(lock)) << read_bytes(folder_ + "/first.txt");

  const ChildResult second = pretrain({"--steps", "1", "--out", out + "/other.safetensors"});
  EXPECT_EQ(second.exit_status, 1);
  EXPECT_TRUE(contains(second.output, "another vitune process is writing to this folder (pid " +
                                          std::to_string(first) + ": ")) << second.output;
  EXPECT_TRUE(contains(second.output, "pretrain")) << second.output;
  EXPECT_FALSE(fs::exists(out + "/other.safetensors"));

  ::kill(first, SIGKILL);
  ASSERT_EQ(wait_for(first, folder_ + "/first.txt").signal, SIGKILL);
  ASSERT_TRUE(fs::exists(lock));  // stale: its process is gone
  // A run killed between writing its lock and linking it into place leaves its private
  // copy, `.vitune.lock.<pid>`; the next taker removes it.
  const std::string private_copy = lock + "." + std::to_string(first);
  std::ofstream(private_copy) << first << "\n";
  ASSERT_TRUE(fs::exists(private_copy));
  const ChildResult third = pretrain({"--steps", "1", "--out", out + "/other.safetensors"});
  ASSERT_EQ(third.exit_status, 0) << third.output;
  EXPECT_FALSE(fs::exists(lock));
  EXPECT_FALSE(fs::exists(private_copy));
}

VITUNE_ON_EVERY_DEVICE(OutputPaths);

TEST(NumericFlags, SayWhatTheyExpectedInAFewWords) {
  const std::string log = ::testing::TempDir() + "/numeric_flags_" + std::to_string(::getpid()) + ".txt";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--lr", "abc"}, "--lr: expected a number, got 'abc'"},
      {{"--lr", "0"}, "--lr: expected a number > 0, got 0"},
      {{"--seed", "-1"}, "--seed: a seed must be 0 or more, got -1"},
      {{"--seed", "1.5"}, "--seed: expected a whole number, got '1.5'"},
      {{"--steps", "-3"}, "--steps: expected a whole number >= 0, got -3"},
      {{"--batch-size", "0"}, "--batch-size: expected a whole number from 1 to 65536, got 0"},
      {{"--dim", "wide"}, "--dim: expected a whole number, got 'wide'"},
      {{"--momentum", "2"}, "--momentum: expected a number from 0 to 1, got 2"},
  };
  for (const auto& [flags, message] : cases) {
    const ChildResult run = run_vitune_args(plus({"pretrain", "--data", "x", "--out", "y"}, flags), log);
    EXPECT_EQ(run.exit_status, 105) << run.output;  // CLI11's validation error
    EXPECT_TRUE(contains(run.output, message + "\n")) << run.output;
    EXPECT_LT(run.output.size(), 200u) << run.output;
  }
  fs::remove(log);
}

}  // namespace
}  // namespace vitune::testing
