// finetune --mask, --lora and the delta commands end to end on the tiny ViT and a little
// Fashion-MNIST: a mask run changes exactly the selected entries (and what the mask
// trains in full, and the head), a LoRA run saves a plain ViT that eval loads, results
// carry trainable count, peak memory and mean step time, export-delta then apply-delta
// rebuild the finetuned model bit for bit, and conflicting flags are clear errors.
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "cli_runner.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "peft/mask_file.h"
#include "peft/model_hash.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const std::string kData = " --data \"fashion-mnist:train?classes=5-9&per_class=8\"";
const std::string kRun = kData + " --batch-size 16 --loader-threads 1 --steps 3 --lr 0.01 --resize-images";
const std::string kQkv = "blocks.0.attn.qkv.weight";

std::string temp(const std::string& name) { return ::testing::TempDir() + "/sparse_" + name; }

// Every fifth entry of block 0's qkv weight; its bias in full.
peft::SelectionMask tiny_mask(const nn::VisionTransformer& model) {
  std::vector<int64_t> indices;
  for (int64_t i = 2; i < model.parameter(kQkv).numel(); i += 5) indices.push_back(i);
  peft::SelectionMask mask;
  mask.selected.emplace_back(kQkv, Tensor::from_vector<int64_t>({int64_t(indices.size())}, indices, Device::cpu()));
  mask.fully_trainable = {"blocks.0.attn.qkv.bias"};
  mask.metadata = {{"method", "test"}, {"k", "0"}, {"model_hash", peft::backbone_hash(model)}};
  return mask;
}

void expect_results_compare_side_by_side(const nlohmann::json& results, const std::string& method,
                                         int64_t trainable) {
  EXPECT_EQ(results["method"], method);
  EXPECT_EQ(results["trainable_parameters"], trainable);
  EXPECT_GT(results["peak_memory_bytes"].get<int64_t>(), 0);
  EXPECT_GT(results["mean_step_seconds"].get<double>(), 0.0);
  EXPECT_EQ(results["timed_steps"], 3);
}

TEST(SparseFinetune, MaskRunChangesExactlyTheSelectionAndItsDeltaRoundTrips) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string base_path = data_path("tiny_vit.safetensors");
  nn::LoadedVit base = nn::load_vit(base_path, Device::cpu());
  peft::SelectionMask mask = tiny_mask(*base.model);
  peft::save_mask(temp("mask.safetensors"), mask);
  CliResult run = run_vitune("finetune --model " + base_path + " --mask " + temp("mask.safetensors") + kRun +
                             " --overwrite --out " + temp("masked.safetensors") + " --results " + temp("masked.json"));
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("parameters trainable"), std::string::npos) << run.output;
  const int64_t selected = mask.selected_count();
  expect_results_compare_side_by_side(read_json(temp("masked.json")), "mask", selected + 96 + 5 * 32 + 5);

  nn::SafetensorsFile before = nn::read_safetensors(base_path);
  nn::SafetensorsFile after = nn::read_safetensors(temp("masked.safetensors"));
  std::vector<bool> chosen(size_t(before.at(kQkv).numel()), false);
  for (int64_t i : mask.selected[0].second.to_vector<int64_t>()) chosen[size_t(i)] = true;
  for (const std::string& name : before.names) {
    if (name.rfind("head.", 0) == 0) continue;
    const Tensor& b = before.at(name);
    const Tensor& a = after.at(name);
    if (name == kQkv) {
      int64_t changed = 0;
      for (int64_t i = 0; i < b.numel(); ++i) {
        bool same = std::memcmp(a.data<float>() + i, b.data<float>() + i, sizeof(float)) == 0;
        if (!chosen[size_t(i)]) {
          ASSERT_TRUE(same) << "unselected entry " << i << " changed";
        }
        changed += !same;
      }
      EXPECT_EQ(changed, selected);
    } else if (name == "blocks.0.attn.qkv.bias") {
      EXPECT_FALSE(bitwise_equal(a, b)) << name << " is trained in full";
    } else {
      EXPECT_TRUE(bitwise_equal(a, b)) << name << " is frozen";
    }
  }

  CliResult exported = run_vitune("export-delta --base " + base_path + " --model " + temp("masked.safetensors") +
                                  " --overwrite --out " + temp("delta.safetensors"));
  ASSERT_EQ(exported.status, 0) << exported.output;
  nn::SafetensorsFile delta = nn::read_safetensors(temp("delta.safetensors"));
  EXPECT_EQ(delta.at("indices:" + kQkv).numel(), selected);
  EXPECT_EQ(delta.at("whole:head.weight").shape(), Shape({5, 32}));
  EXPECT_EQ(delta.metadata.at("changed_entries"), std::to_string(selected + 96));
  CliResult applied = run_vitune("apply-delta --base " + base_path + " --delta " + temp("delta.safetensors") +
                                 " --overwrite --out " + temp("rebuilt.safetensors"));
  ASSERT_EQ(applied.status, 0) << applied.output;
  nn::SafetensorsFile rebuilt = nn::read_safetensors(temp("rebuilt.safetensors"));
  ASSERT_EQ(rebuilt.names, after.names);
  for (const std::string& name : after.names) EXPECT_TRUE(bitwise_equal(rebuilt.at(name), after.at(name))) << name;

  // The delta refuses a base it was not made against.
  CliResult wrong = run_vitune("apply-delta --base " + temp("masked.safetensors") + " --delta " +
                               temp("delta.safetensors") + " --overwrite --out " + temp("wrong.safetensors"));
  EXPECT_NE(wrong.status, 0);
  EXPECT_NE(wrong.output.find("backbone hash"), std::string::npos) << wrong.output;
  EXPECT_FALSE(std::ifstream(temp("wrong.safetensors")).good());
}

TEST(SparseFinetune, LoraRunSavesAPlainVitThatEvalLoads) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string base_path = data_path("tiny_vit.safetensors");
  CliResult run = run_vitune("finetune --model " + base_path + " --lora 2 --lora-targets qkv,fc1 --lora-alpha 4" +
                             kRun + " --overwrite --out " + temp("lora.safetensors") + " --results " +
                                 temp("lora.json"));
  ASSERT_EQ(run.status, 0) << run.output;
  const int64_t adapters = 2 * 2 * ((32 + 96) + (32 + 128));  // blocks x rank x (in + out), qkv and fc1
  nlohmann::json results = read_json(temp("lora.json"));
  expect_results_compare_side_by_side(results, "lora", adapters + 5 * 32 + 5);
  EXPECT_EQ(results["lora_alpha"], 4.0);
  EXPECT_EQ(results["lora_merged"], true);

  nn::SafetensorsFile before = nn::read_safetensors(base_path);
  nn::SafetensorsFile after = nn::read_safetensors(temp("lora.safetensors"));
  ASSERT_EQ(after.names.size(), before.names.size()) << "the adapters were merged, not saved";
  for (const std::string& name : before.names) {
    if (name.rfind("head.", 0) == 0) continue;
    bool merged = name.find(".weight") != std::string::npos &&
                  (name.find("attn.qkv") != std::string::npos || name.find("mlp.fc1") != std::string::npos);
    EXPECT_EQ(bitwise_equal(after.at(name), before.at(name)), !merged) << name;
  }
  CliResult eval = run_vitune("eval --model " + temp("lora.safetensors") +
                              " --data \"fashion-mnist:test?classes=5-9&limit=32\" --loader-threads 1 --resize-images");
  EXPECT_EQ(eval.status, 0) << eval.output;
}

TEST(SparseFinetune, ConflictingFlagsAreClearErrors) {
  const std::string base = " --model " + data_path("tiny_vit.safetensors") + kRun + " --overwrite --out " +
      temp("x.safetensors");
  struct Case {
    std::string flags, message;
  };
  for (const Case& c : {Case{" --mask m.safetensors --train head", "--mask and --train exclude each other"},
                        Case{" --mask m.safetensors --lora 4", "--mask and --lora exclude each other"},
                        Case{" --lora 4 --train mha", "--lora and --train exclude each other"},
                        Case{" --lora-alpha 8", "need --lora RANK"},
                        Case{" --lora 4 --lora-targets qkv,ffn", "unknown target 'ffn'"}}) {
    CliResult r = run_vitune("finetune" + base + c.flags);
    EXPECT_NE(r.status, 0) << c.flags;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.flags << ": " << r.output;
  }
}

}  // namespace
}  // namespace vitune::testing
