// pretrain, finetune and eval end to end on a little Fashion-MNIST (from its Debian
// package): results files hold what they promise, --train freezes what it should, and
// a run stopped and resumed from its checkpoint ends with the same bytes as one that
// ran straight through.
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "cli_runner.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const std::string kTrain = "\"fashion-mnist:train?classes=0-2&limit=96\"";
const std::string kTest = "\"fashion-mnist:test?classes=0-2&limit=64\"";
const std::string kLoader = " --batch-size 16 --eval-batch-size 32 --loader-threads 1";
const std::string kTiny = " --dim 16 --depth 1 --heads 2" + kLoader;

std::string temp(const std::string& name) { return ::testing::TempDir() + "/cmd_" + name; }

TEST(TrainingCommands, PretrainFinetuneEvalWriteTheirResults) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  CliResult pre = run_vitune("pretrain --data " + kTrain + " --eval-data " + kTest + kTiny +
                             " --steps 6 --overwrite --out " + temp("pre.safetensors") + " --results " +
                                 temp("pre.json") +
                             " --log " + temp("pre.jsonl") + " --log-every 2");
  ASSERT_EQ(pre.status, 0) << pre.output;
  nlohmann::json results = read_json(temp("pre.json"));
  EXPECT_EQ(results["config"]["num_classes"], 3);
  EXPECT_EQ(results["steps"], 6);
  EXPECT_EQ(results["eval"]["examples"], 64);
  EXPECT_GT(results["peak_host_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(results["trainable_parameters"], results["total_parameters"]);
  std::ifstream log(temp("pre.jsonl"));
  std::string first;
  std::getline(log, first);
  nlohmann::json line = nlohmann::json::parse(first);
  EXPECT_EQ(line["step"], 2);
  EXPECT_TRUE(line["grad_norm"]["per_component"].contains("mha"));
  EXPECT_TRUE(line["grad_norm"]["per_layer"]["0"].contains("fc1"));

  CliResult fine = run_vitune("finetune --model " + temp("pre.safetensors") + " --data " +
                              "\"fashion-mnist:train?classes=5-9&per_class=8\"" + kLoader +
                              " --steps 3 --train head --overwrite --out " + temp("fine.safetensors") + " --results " +
                              temp("fine.json"));
  ASSERT_EQ(fine.status, 0) << fine.output;
  nlohmann::json fine_results = read_json(temp("fine.json"));
  EXPECT_EQ(fine_results["config"]["num_classes"], 5);
  EXPECT_EQ(fine_results["trainable_parameters"], 16 * 5 + 5);  // the fresh head only

  CliResult eval = run_vitune("eval --model " + temp("pre.safetensors") + " --data " + kTest +
                              " --overwrite --results " + temp("eval.json"));
  ASSERT_EQ(eval.status, 0) << eval.output;
  EXPECT_EQ(read_json(temp("eval.json"))["eval"]["examples"], 64);
}

TEST(TrainingCommands, ResumeFromTheCheckpointEqualsAStraightRun) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  // A constant schedule, so that the learning rate does not depend on --steps: the first
  // half below is then exactly the straight run stopped after 4 steps.
  std::string common = "pretrain --data " + kTrain + kTiny + " --flip --optimizer sgd --lr 0.05 --schedule constant --seed 3";
  ASSERT_EQ(run_vitune(common + " --steps 8 --overwrite --out " + temp("straight.safetensors")).status, 0);
  ASSERT_EQ(run_vitune(common + " --steps 4 --checkpoint " + temp("ck.safetensors") + " --overwrite --out " +
                       temp("half.safetensors")).status, 0);
  CliResult resumed = run_vitune(common + " --steps 8 --checkpoint " + temp("ck.safetensors") + " --resume --out " +
                                 temp("resumed.safetensors"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  nn::SafetensorsFile straight = nn::read_safetensors(temp("straight.safetensors"));
  nn::SafetensorsFile again = nn::read_safetensors(temp("resumed.safetensors"));
  ASSERT_EQ(straight.names, again.names);
  for (const std::string& name : straight.names) {
    EXPECT_TRUE(bitwise_equal(straight.at(name), again.at(name))) << name;
  }
}

TEST(TrainingCommands, UnknownComponentsAndSpecsAreClearErrors) {
  CliResult bad_train = run_vitune("finetune --model " + data_path("tiny_vit.safetensors") +
                                   " --data \"fashion-mnist:train\" --train mlp --overwrite --out " +
                                       temp("x.safetensors"));
  EXPECT_EQ(bad_train.status, 1);
  EXPECT_NE(bad_train.output.find("unknown component 'mlp'"), std::string::npos) << bad_train.output;
  CliResult bad_spec = run_vitune("eval --model " + data_path("tiny_vit.safetensors") + " --data \"mnist:train\"");
  EXPECT_EQ(bad_spec.status, 1);
  EXPECT_NE(bad_spec.output.find("mnist:train"), std::string::npos) << bad_spec.output;
}

}  // namespace
}  // namespace vitune::testing
