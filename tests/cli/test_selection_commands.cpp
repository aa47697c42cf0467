// anchor, select and compare-masks end to end on the tiny ViT (16x16 RGB) with two
// small CIFAR-10 binary files written here as "pretraining" and "task" data: the files
// and results hold what they promise, the mask does not depend on the batch size,
// random selection follows its seed, and another model's anchor or mask is refused.
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "cli_runner.h"
#include "engine/random.h"
#include "nn/checkpoint.h"
#include "peft/mask_file.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

std::string temp(const std::string& name) { return ::testing::TempDir() + "/select_" + name; }

// `count` CIFAR-10 records (label byte, then 32x32 R, G, B planes) of pixels drawn
// uniformly from [low, high).
void write_cifar(const std::string& path, int count, int low, int high, uint64_t seed) {
  std::string bytes;
  for (int i = 0; i < count; ++i) {
    bytes.push_back(char(i % 10));
    for (int p = 0; p < 3 * 32 * 32; ++p) {
      bytes.push_back(char(low + int(uniform01(seed, 0, uint64_t(i) * 3072 + p) * float(high - low))));
    }
  }
  write_raw(path, bytes);
}

class SelectionCommands : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    write_cifar(temp("pre.bin"), 12, 0, 256, 1);
    write_cifar(temp("task.bin"), 10, 60, 200, 2);
    CliResult anchor = run_vitune("anchor --model " + model() + " --data cifar10:" + temp("pre.bin") +
                                  " --batch-size 5 --loader-threads 1 --resize-images --overwrite --out " + temp("anchor.safetensors"));
    ASSERT_EQ(anchor.status, 0) << anchor.output;
  }
  static std::string model() { return data_path("tiny_vit.safetensors"); }
  static std::string select(const std::string& method, const std::string& out, const std::string& extra) {
    return "select --method " + method + " --model " + model() +
           " --k 3 --loader-threads 1 --resize-images --overwrite --out " + temp(out) + " " + extra;
  }
  static std::string gdfps(const std::string& out, int batch) {
    return select("gdfps", out,
                  "--anchor " + temp("anchor.safetensors") + " --data cifar10:" + temp("task.bin") +
                      " --batch-size " + std::to_string(batch));
  }
};

TEST_F(SelectionCommands, GdfpsMaskAndResultsHoldWhatTheyPromise) {
  CliResult run = run_vitune(gdfps("gdfps.safetensors", 4) + " --results " + temp("gdfps.json"));
  ASSERT_EQ(run.status, 0) << run.output;
  const nlohmann::json results = read_json(temp("gdfps.json"));
  // Rows: patch 32 + per block qkv 96, proj 32, fc1 128, fc2 32 -> 32 + 2 * 288 = 608; K = 3 each.
  EXPECT_EQ(results["selected_count"], 608 * 3);
  EXPECT_EQ(results["short_rows"], 0);
  EXPECT_EQ(results["images"], 10);
  EXPECT_EQ(results["tensors"].size(), 9u);
  EXPECT_GT(results["flops_per_image"].get<double>(), 0);
  EXPECT_GT(results["peak_host_bytes"].get<int64_t>(), 0);
  EXPECT_GE(results["wall_seconds"].get<double>(), 0);
  const peft::SelectionMask mask = peft::load_mask(temp("gdfps.safetensors"));
  EXPECT_EQ(mask.selected_count(), 608 * 3);
  EXPECT_EQ(mask.metadata.at("method"), "gdfps");
  EXPECT_EQ(mask.metadata.at("k"), "3");
  EXPECT_EQ(mask.fully_trainable.size(), 11u);
  nn::LoadedVit loaded = nn::load_vit(model(), Device::cpu());
  peft::apply_mask(*loaded.model, mask, temp("gdfps.safetensors"));
  EXPECT_EQ(loaded.model->parameter("blocks.1.mlp.fc1.weight").trainable_count(), 128 * 3);
}

TEST_F(SelectionCommands, MaskDoesNotDependOnTheBatchSize) {
  ASSERT_EQ(run_vitune(gdfps("batch1.safetensors", 1)).status, 0);
  ASSERT_EQ(run_vitune(gdfps("batch7.safetensors", 7)).status, 0);
  EXPECT_EQ(read_raw(temp("batch1.safetensors")), read_raw(temp("batch7.safetensors")));
  CliResult compare = run_vitune("compare-masks " + temp("batch1.safetensors") + " " + temp("batch7.safetensors") +
                                 " --overwrite --json " + temp("same.json"));
  ASSERT_EQ(compare.status, 0) << compare.output;
  EXPECT_EQ(read_json(temp("same.json"))["ratio"], 1.0);
  EXPECT_NE(compare.output.find("100.00%"), std::string::npos) << compare.output;
}

TEST_F(SelectionCommands, RandomSelectionFollowsItsSeed) {
  ASSERT_EQ(run_vitune(select("random", "r1.safetensors", "--seed 1")).status, 0);
  ASSERT_EQ(run_vitune(select("random", "r1b.safetensors", "--seed 1")).status, 0);
  ASSERT_EQ(run_vitune(select("random", "r2.safetensors", "--seed 2")).status, 0);
  EXPECT_EQ(read_raw(temp("r1.safetensors")), read_raw(temp("r1b.safetensors")));
  ASSERT_EQ(run_vitune("compare-masks " + temp("r1.safetensors") + " " + temp("r2.safetensors") +
                       " --overwrite --json " +
                       temp("random.json"))
                .status,
            0);
  const nlohmann::json compared = read_json(temp("random.json"));
  EXPECT_EQ(compared["count_a"], 608 * 3);
  EXPECT_LT(compared["ratio"].get<double>(), 0.5);  // about 3 / cols for independent draws
}

TEST_F(SelectionCommands, RefusesAnotherModelsAnchorAndMask) {
  nn::LoadedVit other = nn::load_vit(model(), Device::cpu());
  other.model->parameter("pos_embed").mutable_value().data<float>()[0] += 1;
  nn::save_vit(temp("other.safetensors"), *other.model);
  CliResult run = run_vitune("select --method gdfps --model " + temp("other.safetensors") + " --anchor " +
                             temp("anchor.safetensors") + " --data cifar10:" + temp("task.bin") +
                             " --k 3 --resize-images --overwrite --out " + temp("bad.safetensors"));
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("backbone hash"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(temp("anchor.safetensors")), std::string::npos) << run.output;

  ASSERT_EQ(run_vitune("select --method magnitude --k 3 --model " + temp("other.safetensors") + " --overwrite --out " +
                       temp("other_mask.safetensors"))
                .status,
            0);
  ASSERT_EQ(run_vitune(select("magnitude", "mine.safetensors", "")).status, 0);
  CliResult compare = run_vitune("compare-masks " + temp("mine.safetensors") + " " + temp("other_mask.safetensors"));
  EXPECT_NE(compare.status, 0);
  EXPECT_NE(compare.output.find("different models"), std::string::npos) << compare.output;
}

TEST_F(SelectionCommands, ExplainsMissingOrUnusedFlags) {
  CliResult no_anchor = run_vitune(select("gdfps", "x.safetensors", "--data cifar10:" + temp("task.bin")));
  EXPECT_NE(no_anchor.status, 0);
  EXPECT_NE(no_anchor.output.find("needs --anchor"), std::string::npos) << no_anchor.output;
  CliResult unknown = run_vitune(select("fisher", "x.safetensors", ""));
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.output.find("gdfps, gps, random or magnitude"), std::string::npos) << unknown.output;
  CliResult typo = run_vitune(select("magnitude", "x.safetensors", "--selectable 'blocks.*.mlp.fc9.weight'"));
  EXPECT_NE(typo.status, 0);
  EXPECT_NE(typo.output.find("fc9"), std::string::npos) << typo.output;
}

}  // namespace
}  // namespace vitune::testing
