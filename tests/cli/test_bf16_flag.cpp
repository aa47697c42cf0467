// --bf16 on the training commands: pretrain and finetune run under bf16 autocast and
// write "precision": "bf16-autocast" (and "fp32" without the flag), the flag changes the
// trained weights (so it reaches the products), and commands that do not train refuse
// it as an unknown flag.
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "cli_runner.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const std::string kTrain = "\"fashion-mnist:train?classes=0-2&limit=48\"";
const std::string kCommon = " --batch-size 16 --loader-threads 1 --dim 16 --depth 1 --heads 2 --steps 3 "
                            "--optimizer sgd --lr 0.05 --schedule constant --seed 5";

std::string temp(const std::string& name) { return ::testing::TempDir() + "/bf16_" + name; }

TEST(Bf16Flag, PretrainAndFinetuneRunUnderAutocastAndSaySo) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  CliResult plain = run_vitune("pretrain --data " + kTrain + kCommon + " --overwrite --out " +
                               temp("fp32.safetensors") +
                               " --results " + temp("fp32.json"));
  ASSERT_EQ(plain.status, 0) << plain.output;
  CliResult bf16 = run_vitune("pretrain --data " + kTrain + kCommon + " --bf16 --overwrite --out " +
                              temp("bf16.safetensors") + " --results " + temp("bf16.json"));
  ASSERT_EQ(bf16.status, 0) << bf16.output;
  EXPECT_EQ(read_json(temp("fp32.json"))["precision"], "fp32");
  EXPECT_EQ(read_json(temp("bf16.json"))["precision"], "bf16-autocast");

  // Same seed, data and schedule: only the rounding of the products differs.
  nn::SafetensorsFile fp32_model = nn::read_safetensors(temp("fp32.safetensors"));
  nn::SafetensorsFile bf16_model = nn::read_safetensors(temp("bf16.safetensors"));
  const Tensor& w_fp32 = fp32_model.at("blocks.0.mlp.fc1.weight");
  const Tensor& w_bf16 = bf16_model.at("blocks.0.mlp.fc1.weight");
  EXPECT_FALSE(bitwise_equal(w_fp32, w_bf16));
  EXPECT_TRUE(tensors_close(w_bf16, w_fp32, {1e-2, 0.0}));  // three small steps apart only

  CliResult fine = run_vitune("finetune --model " + temp("bf16.safetensors") + " --data " + kTrain +
                              " --batch-size 16 --loader-threads 1 --steps 2 --train head --bf16 --overwrite --out " +
                              temp("fine.safetensors") + " --results " + temp("fine.json"));
  ASSERT_EQ(fine.status, 0) << fine.output;
  EXPECT_EQ(read_json(temp("fine.json"))["precision"], "bf16-autocast");
}

TEST(Bf16Flag, CommandsThatDoNotTrainRefuseIt) {
  CliResult eval = run_vitune("eval --model " + data_path("tiny_vit.safetensors") +
                              " --data \"fashion-mnist:test?limit=4\" --bf16");
  EXPECT_NE(eval.status, 0);
  EXPECT_NE(eval.output.find("--bf16"), std::string::npos) << eval.output;
  EXPECT_NE(eval.output.find("not expected"), std::string::npos) << eval.output;
}

}  // namespace
}  // namespace vitune::testing
