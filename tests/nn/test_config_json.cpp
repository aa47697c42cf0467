// Hugging Face config.json sizes given as [height, width]: a square pair is read as its
// side, a non-square one is refused naming the file, the field and what vitune runs.
// timm's hub config.json: the pooling named at its top level is read (model_args wins).
#include <filesystem>
#include <fstream>

#include "nn/checkpoint.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

namespace fs = std::filesystem;

// The Hugging Face Dinov2 family's weights in a folder of their own, beside a config.json
// with `sizes` (JSON members) added to the heads and epsilon.
class ConfigJsonSizes : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = ::testing::TempDir() + "config_json_sizes_" + std::to_string(::getpid());
    fs::create_directories(folder_);
    fs::copy_file(data_path("families/hf_dinov2/model.safetensors"), weights(), fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string weights() const { return folder_ + "/model.safetensors"; }
  std::string config() const { return folder_ + "/config.json"; }
  void write_config(const std::string& sizes) const {
    std::ofstream(config()) << R"({"num_attention_heads": 2, "layer_norm_eps": 1e-6, )" << sizes << "}";
  }
  std::string load_error() const {
    try {
      nn::load_vit(weights(), Device::cpu());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }

  std::string folder_;
};

TEST_F(ConfigJsonSizes, ASquarePairIsItsSide) {
  write_config(R"("image_size": [16, 16], "patch_size": [4, 4])");
  nn::LoadedVit loaded = nn::load_vit(weights(), Device::cpu());
  EXPECT_EQ(loaded.model->config().img_size, 16);
  EXPECT_EQ(loaded.model->config().patch, 4);
  // The pair is checked against the tensors as one integer is.
  write_config(R"("image_size": [32, 32])");
  EXPECT_NE(load_error().find("says image_size 32"), std::string::npos) << load_error();
}

TEST_F(ConfigJsonSizes, ANonSquareSizeIsRefusedNamingTheFileAndField) {
  write_config(R"("image_size": [16, 12])");
  EXPECT_EQ(load_error(), config() + ": field 'image_size' is [16,12] (height, width); vitune runs square images and "
                                     "patches only: expected one integer or [n, n]");
  write_config(R"("patch_size": [4, 2])");
  EXPECT_NE(load_error().find(config() + ": field 'patch_size' is [4,2] (height, width)"), std::string::npos)
      << load_error();
  write_config(R"("image_size": [16, 16, 3])");
  EXPECT_EQ(load_error(), config() + ": field 'image_size' must be a positive integer, got [16,16,3]");
}

// timm's avg-pooled model without fc_norm has the keys of a class-token model: only its
// hub config.json's top-level global_pool tells them apart.
TEST(ConfigJsonTimm, TheTopLevelGlobalPoolIsRead) {
  const std::string folder = ::testing::TempDir() + "config_json_timm_" + std::to_string(::getpid());
  fs::create_directories(folder);
  const std::string weights = folder + "/model.safetensors", config = folder + "/config.json";
  fs::copy_file(data_path("families/timm_avg_no_fc_norm.safetensors"), weights, fs::copy_options::overwrite_existing);
  std::ofstream(config) << R"({"architecture": "vit_tiny", "global_pool": "avg", "model_args": {"num_heads": 2}})";
  EXPECT_EQ(nn::load_vit(weights, Device::cpu()).model->config().global_pool, "avg");
  std::ofstream(config) << R"({"global_pool": "avg", "model_args": {"num_heads": 2, "global_pool": "token"}})";
  EXPECT_EQ(nn::load_vit(weights, Device::cpu()).model->config().global_pool, "token");
  std::ofstream(config) << R"({"global_pool": "map", "model_args": {"num_heads": 2}})";
  try {
    nn::load_vit(weights, Device::cpu());
    ADD_FAILURE() << "global_pool map was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              config + ": field 'global_pool' must be \"token\", \"avg\" or \"\" (no pooling), got \"map\"");
  }
  fs::remove_all(folder);
}

}  // namespace
}  // namespace vitune::testing
