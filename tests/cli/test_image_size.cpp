// Images whose format fixes their size (IDX here) at another size than the model's are
// refused before any work, naming the data, both sizes and the two ways out, which both
// work: --img-size (the model at the data's size) and --resize-images. The preprocessing
// flags override what a checkpoint carries, which is what training saved. On every device.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "device_test.h"
#include "nn/preprocessing.h"
#include "nn/safetensors.h"
#include "test_faults_support.h"

namespace vitune::testing {
namespace {

namespace fs = std::filesystem;

class ImageSize : public OnDevice {
 protected:
  void SetUp() override {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');
    folder_ = ::testing::TempDir() + "/image_size_" + std::to_string(::getpid()) + "_" + test;
    fs::remove_all(folder_);
    spec_ = write_tiny_idx(folder_ + "/data");  // 8x8 images
  }
  void TearDown() override { fs::remove_all(folder_); }

  ChildResult run(std::vector<std::string> arguments) {
    return run_vitune_args(plus(std::move(arguments), {"--device", device().str()}), folder_ + "/out.txt");
  }
  // A model at 12x12 (patch 4) trained on the 8x8 images resized, with `more` flags.
  ChildResult pretrain_at_12(const std::vector<std::string>& more) {
    std::vector<std::string> arguments = tiny_pretrain(spec_);
    arguments[4] = "12";  // --img-size
    return run(plus(arguments, plus({"--steps", "1", "--out", model()}, more)));
  }
  std::string model() const { return folder_ + "/model12.safetensors"; }
  std::string eval_results() const { return folder_ + "/eval.json"; }
  std::vector<std::string> eval() const {
    return {"eval", "--model", model(), "--data", spec_, "--loader-threads", "1", "--overwrite", "--results",
            eval_results()};
  }

  std::string folder_, spec_;
};

TEST_P(ImageSize, ADifferentFixedSizeIsRefusedAndBothWaysOutWork) {
  const std::string refusal = spec_ + ": every image is 8x8 but the model takes 12x12 images; vitune does not resize "
                              "them silently. Either run the model at the data's size with --img-size 8 (the position "
                              "embedding is resampled), or resize every image to 12x12 with --resize-images";
  ChildResult refused = pretrain_at_12({});
  EXPECT_NE(refused.exit_status, 0);
  EXPECT_TRUE(contains(refused.output, refusal)) << refused.output;
  EXPECT_FALSE(fs::exists(model()));

  ChildResult trained = pretrain_at_12({"--resize-images"});
  ASSERT_EQ(trained.exit_status, 0) << trained.output;
  for (const std::vector<std::string>& command :
       {eval(), std::vector<std::string>{"anchor", "--model", model(), "--data", spec_, "--out",
                                         folder_ + "/anchor.safetensors"},
        std::vector<std::string>{"plasticity", "--protocol", "paper", "--model", model(), "--data", spec_, "--images", "8", "--out",
                                 folder_ + "/plasticity.json"}}) {
    ChildResult again = run(command);
    EXPECT_NE(again.exit_status, 0) << command[0];
    EXPECT_TRUE(contains(again.output, refusal)) << command[0] << ":\n" << again.output;
  }
  ChildResult at_data_size = run(plus(eval(), {"--img-size", "8"}));
  ASSERT_EQ(at_data_size.exit_status, 0) << at_data_size.output;
  EXPECT_EQ(read_json(eval_results())["config"]["img_size"], 8);
  ChildResult resized = run(plus(eval(), {"--resize-images"}));
  ASSERT_EQ(resized.exit_status, 0) << resized.output;
  EXPECT_EQ(read_json(eval_results())["config"]["img_size"], 12);
}

TEST_P(ImageSize, PreprocessingFlagsOverrideWhatTheCheckpointCarries) {
  ASSERT_EQ(pretrain_at_12({"--resize-images", "--normalization", "imagenet", "--interpolation", "bilinear"})
                .exit_status,
            0);
  // Training saved its preprocessing; eval reads it back.
  const std::string saved = nn::read_safetensors(model()).metadata.at("pretrained_cfg");
  const nlohmann::json cfg = nlohmann::json::parse(saved);
  EXPECT_EQ(cfg["interpolation"], "bilinear");
  ASSERT_EQ(run(plus(eval(), {"--resize-images"})).exit_status, 0);
  EXPECT_EQ(read_json(eval_results())["preprocessing"], cfg);

  ChildResult flags = run(plus(eval(), {"--resize-images", "--mean", "0.25", "--std", "0.5", "--crop-pct", "0.75",
                                        "--interpolation", "bicubic"}));
  ASSERT_EQ(flags.exit_status, 0) << flags.output;
  const nlohmann::json used = read_json(eval_results())["preprocessing"];
  EXPECT_EQ(used["mean"], nlohmann::json::array({0.25}));
  EXPECT_EQ(used["std"], nlohmann::json::array({0.5}));
  EXPECT_EQ(used["crop_pct"], 0.75);
  EXPECT_EQ(used["interpolation"], "bicubic");

  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  for (const Case& c : {Case{{"--mean", "0.1,0.2"}, "--mean: expected one value or three (R,G,B), got 2"},
                        Case{{"--std", "0"}, "--std"},
                        Case{{"--crop-pct", "0"}, "--crop-pct: expected a number in (0, 1], got 0"},
                        Case{{"--normalization", "half", "--mean", "0.2"}, "--normalization excludes --mean"},
                        Case{{"--interpolation", "lanczos"}, "--interpolation"}}) {
    ChildResult bad = run(plus(eval(), plus({"--resize-images"}, c.flags)));
    EXPECT_NE(bad.exit_status, 0) << c.message;
    EXPECT_TRUE(contains(bad.output, c.message)) << bad.output;
  }
}

VITUNE_ON_EVERY_DEVICE(ImageSize);

}  // namespace
}  // namespace vitune::testing
