// Faults that must lose nothing, on the built `vitune`: training runs killed (SIGKILL)
// at random moments and resumed end with the bits of a run never interrupted, and the
// checkpoint, model and results files are never seen half-written, and no temporary
// file or stale lock is left in the output folder at the end; a full disk (a
// file-size limit on the child) fails with a clear error and leaves the previous files
// as they were; a NaN in a weight is reported with the parameter's name.
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "engine/error.h"
#include "nn/safetensors.h"
#include "test_faults_support.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

// A fresh folder for one test, apart from other processes running the same test.
std::string temp_folder(const std::string& name) {
  const std::string folder = ::testing::TempDir() + "/faults_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}

// Every tensor of `a` equals `b`'s bit for bit, with the same names, dtypes and shapes.
::testing::AssertionResult same_bits(const std::string& a, const std::string& b) {
  nn::SafetensorsFile first = nn::read_safetensors(a), second = nn::read_safetensors(b);
  if (first.names != second.names) return ::testing::AssertionFailure() << a << " and " << b << " name other tensors";
  for (const std::string& name : first.names) {
    const Tensor& x = first.at(name);
    const Tensor& y = second.at(name);
    if (x.shape() != y.shape() || x.dtype() != y.dtype() || std::memcmp(x.raw(), y.raw(), x.nbytes()) != 0) {
      return ::testing::AssertionFailure() << "tensor '" << name << "' differs between " << a << " and " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// What a killed run may leave: each of its files is absent or complete.
void expect_whole_files(const std::string& checkpoint, const std::string& model, const std::string& results,
                        const std::string& when) {
  if (std::filesystem::exists(checkpoint)) {
    try {
      nn::SafetensorsFile file = nn::read_safetensors(checkpoint);
      EXPECT_TRUE(file.metadata.count("trainer_state")) << when;
    } catch (const Error& e) {
      ADD_FAILURE() << when << ": half-written checkpoint: " << e.what();
    }
  }
  if (std::filesystem::exists(model)) {
    EXPECT_NO_THROW(nn::read_safetensors(model)) << when << ": half-written model";
  }
  if (std::filesystem::exists(results)) {
    std::ifstream in(results);
    EXPECT_FALSE(nlohmann::json::parse(in, nullptr, false).is_discarded()) << when << ": half-written results";
  }
}

TEST(Faults, KilledRunsResumeToTheBitsOfAnUninterruptedRun) {
  const std::string folder = temp_folder("kill");
  const std::string spec = write_tiny_idx(folder + "/data");
  const std::vector<std::string> run = plus(tiny_pretrain(spec), {"--steps", "96", "--checkpoint-every", "1"});
  const std::string log = folder + "/output.txt";

  const auto started = std::chrono::steady_clock::now();
  ChildResult straight = run_vitune_args(plus(run, {"--out", folder + "/straight.safetensors"}), log);
  const double straight_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(straight.exit_status, 0) << straight.output;

  const std::string checkpoint = folder + "/run.ckpt.safetensors";
  const std::string model = folder + "/run.safetensors";
  const std::string results = folder + "/run.json";
  std::mt19937 random(7);  // fixed, so a failure repeats
  // Up to a third of the straight run: most tries are killed, each a little further on.
  std::uniform_real_distribution<double> kill_after(0.0, straight_seconds / 3);
  int kills = 0, kills_after_a_checkpoint = 0;
  bool finished = false;
  for (int attempt = 0; attempt < 40 && !finished; ++attempt) {
    std::vector<std::string> arguments =
        plus(run, {"--checkpoint", checkpoint, "--out", model, "--results", results});
    const bool resuming = std::filesystem::exists(checkpoint);
    if (resuming) arguments.push_back("--resume");
    const pid_t pid = start_vitune(arguments, log);
    const double delay = attempt < 36 ? kill_after(random) : -1;  // the last tries run to the end
    // A first run is killed only once it has written a checkpoint (at most a minute
    // later), so that however slow the start on a loaded machine, later runs resume.
    const auto first_wait_ends = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!resuming && delay >= 0 && !std::filesystem::exists(checkpoint) &&
           std::chrono::steady_clock::now() < first_wait_ends) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (delay >= 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      ::kill(pid, SIGKILL);
    }
    ChildResult result = wait_for(pid, log);
    const std::string when = cat("after attempt ", attempt, " (killed after ", delay, " s)");
    if (result.signal == SIGKILL) {
      ++kills;
      kills_after_a_checkpoint += resuming;
    } else {
      ASSERT_EQ(result.exit_status, 0) << when << ": " << result.output;
      finished = true;
    }
    expect_whole_files(checkpoint, model, results, when);
  }
  ASSERT_TRUE(finished);
  EXPECT_GE(kills, 4) << "few runs were killed before they finished (each took under " << straight_seconds << " s)";
  EXPECT_GE(kills_after_a_checkpoint, 2) << "few resumed runs were killed";
  EXPECT_TRUE(same_bits(model, folder + "/straight.safetensors")) << kills << " kills";
  // Neither the temporary files of the killed writes nor the killed runs' locks are left.
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "left behind: " << entry.path();
    EXPECT_EQ(name.find(".vitune"), std::string::npos) << "left behind: " << entry.path();
  }
  std::filesystem::remove_all(folder);
}

TEST(Faults, AFullDiskFailsClearlyAndKeepsThePreviousFiles) {
  const std::string folder = temp_folder("full_disk");
  const std::string spec = write_tiny_idx(folder + "/data");
  const std::string checkpoint = folder + "/ckpt.safetensors";
  const std::string model = folder + "/model.safetensors";
  const std::string results = folder + "/results.json";
  const std::string log = folder + "/output.txt";
  const std::vector<std::string> outputs{"--checkpoint", checkpoint, "--out", model, "--results", results,
                                         "--overwrite"};
  ChildResult first = run_vitune_args(plus(plus(tiny_pretrain(spec), {"--steps", "2"}), outputs), log);
  ASSERT_EQ(first.exit_status, 0) << first.output;
  const std::string checkpoint_before = read_bytes(checkpoint), model_before = read_bytes(model),
                    results_before = read_bytes(results);
  ASSERT_GT(checkpoint_before.size(), 8192u);
  ASSERT_GT(model_before.size(), 8192u);

  // Room for 8 KiB per file: the first checkpoint of the next run does not fit.
  ChildResult full = run_vitune_args(
      plus(plus(tiny_pretrain(spec), {"--steps", "4", "--checkpoint-every", "1"}), outputs), log, 8192);
  EXPECT_EQ(full.exit_status, 1) << full.output;
  EXPECT_NE(full.output.find("cannot write safetensors file '" + checkpoint + "': " + std::strerror(EFBIG)),
            std::string::npos)
      << full.output;

  // Without a checkpoint the model file is the first to be written.
  ChildResult full_model = run_vitune_args(
      plus(tiny_pretrain(spec), {"--steps", "3", "--out", model, "--results", results, "--overwrite"}), log, 8192);
  EXPECT_EQ(full_model.exit_status, 1) << full_model.output;
  EXPECT_NE(full_model.output.find("cannot write safetensors file '" + model + "': " + std::strerror(EFBIG)),
            std::string::npos)
      << full_model.output;

  EXPECT_EQ(read_bytes(checkpoint), checkpoint_before);
  EXPECT_EQ(read_bytes(model), model_before);
  EXPECT_EQ(read_bytes(results), results_before);
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "left behind: " << entry.path();
  }
  std::filesystem::remove_all(folder);
}

TEST(Faults, ANaNInAWeightIsReportedWithTheParametersName) {
  const std::string folder = temp_folder("nan");
  const std::string spec = write_tiny_idx(folder + "/data");
  const std::string log = folder + "/output.txt";
  const std::string good = folder + "/good.safetensors", poisoned = folder + "/nan.safetensors";
  ASSERT_EQ(run_vitune_args(plus(tiny_pretrain(spec), {"--steps", "1", "--out", good}), log).exit_status, 0)
      << read_bytes(log);

  nn::SafetensorsFile file = nn::read_safetensors(good);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : file.names) {
    Tensor copy = file.at(name).clone();
    if (name == "blocks.0.mlp.fc1.weight") copy.data<float>()[3] = std::nanf("");
    tensors.emplace_back(name, copy);
  }
  nn::write_safetensors(poisoned, tensors, file.metadata);

  const std::string expected = "parameter 'blocks.0.mlp.fc1.weight' holds nan at element 3";
  ChildResult finetune = run_vitune_args({"finetune", "--model", poisoned, "--data", spec, "--batch-size", "8",
                                          "--loader-threads", "1", "--steps", "2", "--out", folder + "/f.safetensors"},
                                         log);
  EXPECT_EQ(finetune.exit_status, 1) << finetune.output;
  EXPECT_NE(finetune.output.find(expected), std::string::npos) << finetune.output;
  EXPECT_NE(finetune.output.find("the loss became nan at step 1"), std::string::npos) << finetune.output;

  ChildResult eval = run_vitune_args({"eval", "--model", poisoned, "--data", spec, "--loader-threads", "1"}, log);
  EXPECT_EQ(eval.exit_status, 1) << eval.output;
  EXPECT_NE(eval.output.find(expected), std::string::npos) << eval.output;
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace vitune::testing
