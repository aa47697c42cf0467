// A model saved without pooling (global_pool "none", timm's global_pool='': an output per
// token) is refused by the commands that need one prediction per image, with a message
// naming --global-pool token|avg; with that flag it runs and evaluates exactly as the
// same weights saved with token pooling. Commands that read the blocks only (anchor) run
// it as it is. On every device.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "device_test.h"
#include "nn/checkpoint.h"
#include "test_faults_support.h"

namespace vitune::testing {
namespace {

namespace fs = std::filesystem;

class GlobalPoolNone : public OnDevice {
 protected:
  void SetUp() override {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');
    folder_ = ::testing::TempDir() + "/global_pool_none_" + std::to_string(::getpid()) + "_" + test;
    fs::remove_all(folder_);
    spec_ = write_tiny_idx(folder_ + "/data", 16);  // 8x8 grey images, 4 classes
    nn::VitConfig config;
    config.img_size = 8;
    config.patch = 4;
    config.in_chans = 1;
    config.dim = 16;
    config.depth = 1;
    config.heads = 2;
    config.num_classes = 4;
    for (const char* pool : {"none", "token"}) {
      config.global_pool = pool;
      nn::VisionTransformer model(config, Device::cpu());
      model.init_weights(11);
      nn::save_vit(model_path(pool), model);
    }
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string model_path(const std::string& pool) const { return folder_ + "/" + pool + ".safetensors"; }
  ChildResult run(std::vector<std::string> arguments) {
    return run_vitune_args(plus(std::move(arguments), {"--device", device().str(), "--loader-threads", "1"}),
                           folder_ + "/out.txt");
  }
  std::vector<std::string> eval(const std::string& pool, const std::string& results) const {
    return {"eval", "--model", model_path(pool), "--data", spec_, "--results", folder_ + "/" + results};
  }
  nlohmann::json read_json(const std::string& name) const {
    return nlohmann::json::parse(read_bytes(folder_ + "/" + name));
  }

  std::string folder_, spec_;
};

TEST_P(GlobalPoolNone, CommandsThatNeedOnePredictionPerImageRefuseItNamingTheFlag) {
  const std::string none = model_path("none");
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"eval", eval("none", "eval.json")},
      {"finetune", {"finetune", "--model", none, "--data", spec_, "--steps", "1", "--batch-size", "4", "--out",
                    folder_ + "/finetuned.safetensors"}},
      {"probe",
       {"probe", "--model", none, "--data", spec_, "--eval-data", spec_, "--results", folder_ + "/probe.json"}},
      {"select --method gps", {"select", "--method", "gps", "--model", none, "--data", spec_, "--k", "1",
                               "--batch-size", "4", "--out", folder_ + "/gps.safetensors"}},
  };
  for (const auto& [name, arguments] : commands) {
    ChildResult refused = run(arguments);
    EXPECT_EQ(refused.exit_status, 1) << name << "\n" << refused.output;
    EXPECT_TRUE(contains(refused.output, none + ": the model has no pooling (global_pool none, from the vit_config "
                                                "metadata): it gives an output per token, and `vitune " + name +
                                                "` needs one prediction per image; pass --global-pool token|avg"))
        << name << "\n" << refused.output;
  }
  EXPECT_FALSE(fs::exists(folder_ + "/eval.json"));
  EXPECT_FALSE(fs::exists(folder_ + "/finetuned.safetensors"));
}

TEST_P(GlobalPoolNone, GlobalPoolTokenRunsItAsTheTokenPooledModel) {
  ChildResult overridden = run(plus(eval("none", "overridden.json"), {"--global-pool", "token"}));
  ASSERT_EQ(overridden.exit_status, 0) << overridden.output;
  ChildResult pooled = run(eval("token", "pooled.json"));
  ASSERT_EQ(pooled.exit_status, 0) << pooled.output;
  const nlohmann::json a = read_json("overridden.json"), b = read_json("pooled.json");
  EXPECT_EQ(a["config"]["global_pool"], "token");
  EXPECT_EQ(a["eval"], b["eval"]);  // the same weights pooled the same way: the same loss, bit for bit

  ChildResult info = run_vitune_args({"info", model_path("none")}, folder_ + "/info.txt");
  ASSERT_EQ(info.exit_status, 0) << info.output;
  EXPECT_TRUE(contains(info.output, "global_pool none")) << info.output;
}

TEST_P(GlobalPoolNone, CommandsThatReadTheBlocksOnlyRunItAsItIs) {
  ChildResult anchor = run({"anchor", "--model", model_path("none"), "--data", spec_, "--images", "8",
                            "--batch-size", "4", "--out", folder_ + "/anchor.safetensors"});
  ASSERT_EQ(anchor.exit_status, 0) << anchor.output;
  EXPECT_TRUE(fs::exists(folder_ + "/anchor.safetensors"));
}

VITUNE_ON_EVERY_DEVICE(GlobalPoolNone);

}  // namespace
}  // namespace vitune::testing
