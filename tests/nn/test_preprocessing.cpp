// A model's preprocessing read from its checkpoint (nn/preprocessing.h): the tiny
// checkpoints of tools/make_preprocess_golden.py -- timm's pretrained_cfg in the
// safetensors metadata and in a hub config.json, Hugging Face's preprocessor_config.json
// -- load, and their evaluation transform gives PyTorch's tensor within 2e-5 (absolute,
// on normalised values of magnitude up to ~4: float rounding of the separable resize);
// the order of the places, fields left to the caller, the round trip of what training
// saves, and bad metadata named by file and field.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "data/golden_reader.h"
#include "engine/error.h"
#include "nn/preprocessing.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

namespace fs = std::filesystem;

std::string golden(const std::string& name) { return data_path("preprocessing/" + name); }

// An 8-bit HWC image from the golden's [C, H, W] pixel values.
data::Image image_from(const Tensor& chw) {
  const std::vector<float> v = chw.to_vector<float>();
  const int c = int(chw.dim(0)), h = int(chw.dim(1)), w = int(chw.dim(2));
  data::Image image{h, w, c, std::vector<uint8_t>(v.size())};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < c; ++k) image.pixels[(size_t(y) * w + x) * c + k] = uint8_t(v[(size_t(k) * h + y) * w + x]);
    }
  }
  return image;
}

struct Case {
  const char* name;
  const char* weights;
  const char* source;  // every field's source
  const char* describe;
};

TEST(Preprocessing, TheCheckpointsMetadataGivesPyTorchsTensor) {
  const auto expected = data::testing::read_golden(golden("expected.safetensors"));
  const Case cases[] = {
      {"timm_metadata", "timm_metadata.safetensors", "timm_metadata.safetensors (metadata pretrained_cfg)",
       "resize_shorter(18, bilinear) | centre_crop(16x16)"},
      {"timm_hub", "timm_hub/model.safetensors", "timm_hub/config.json (pretrained_cfg)",
       "resize(17x17, bicubic) | centre_crop(16x16)"},
      {"hf_vit", "hf_vit/model.safetensors", "hf_vit/preprocessor_config.json",
       "resize_shorter(18, bicubic) | centre_crop(16x16)"},
  };
  for (const Case& c : cases) {
    const nn::LoadedVit loaded = nn::load_vit(golden(c.weights), Device::cpu());
    const nn::ModelPreprocessing pre = nn::read_preprocessing(loaded);
    for (const char* field : {"mean", "std", "crop_pct", "crop_mode", "interpolation"}) {
      EXPECT_EQ(pre.sources.at(field), "from " + golden(c.source)) << c.name << " " << field;
    }
    const data::Transform transform = data::eval_transform({loaded.model->config().img_size, 3, pre.values});
    EXPECT_EQ(transform.describe().rfind(c.describe, 0), 0u) << transform.describe();
    double largest = 0;
    for (int i = 0; i < 2; ++i) {
      const Tensor out = transform.apply(image_from(expected.at("image." + std::to_string(i))));
      const Tensor& want = expected.at(std::string(c.name) + "." + std::to_string(i));
      EXPECT_TRUE(tensors_close(out, want, {2e-5, 0}, c.name));
      largest = std::max(largest, max_difference(out, want));
    }
    std::printf("%-14s max |vitune - torch| = %.2e\n", c.name, largest);
  }
}

TEST(Preprocessing, VitunesOwnCheckpointsKeepTheirDefaults) {
  const nn::ModelPreprocessing pre = nn::read_preprocessing(nn::load_vit(data_path("tiny_vit.safetensors"), Device::cpu()));
  EXPECT_EQ(pre.values.normalization.mean, std::vector<float>{0.5f});
  EXPECT_EQ(pre.values.normalization.std, std::vector<float>{0.5f});
  EXPECT_EQ(pre.values.crop_pct, 1.0);
  EXPECT_EQ(pre.values.interpolation, data::Interpolation::Bicubic);
  EXPECT_EQ(pre.sources.at("mean"), "vitune default");
}

class PreprocessingFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = ::testing::TempDir() + "/preprocessing_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }
  void write(const std::string& name, const std::string& text) { write_raw(folder_ + "/" + name, text); }
  std::string weights() const { return folder_ + "/model.safetensors"; }
  // The message of reading with `metadata`; empty when it reads.
  std::string error_reading(const std::map<std::string, std::string>& metadata = {},
                            const std::set<std::string>& given = {}) {
    try {
      nn::read_preprocessing(weights(), metadata, given);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::string folder_;
};

TEST_F(PreprocessingFiles, EachFieldComesFromTheFirstPlaceThatHasIt) {
  write("pretrained_cfg.json", R"({"mean": [0.1, 0.2, 0.3], "crop_pct": 0.95})");
  write("preprocessor_config.json", R"({"image_mean": [0.7], "image_std": [0.4], "resample": 2,
                                        "size": {"height": 20, "width": 20}, "crop_size": 16})");
  const nn::ModelPreprocessing pre =
      nn::read_preprocessing(weights(), {{"pretrained_cfg", R"({"std": [0.25], "interpolation": null})"}});
  EXPECT_EQ(pre.values.normalization.mean, (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_EQ(pre.sources.at("mean"), "from " + folder_ + "/pretrained_cfg.json");
  EXPECT_EQ(pre.values.normalization.std, std::vector<float>{0.25f});
  EXPECT_EQ(pre.sources.at("std"), "from " + weights() + " (metadata pretrained_cfg)");
  EXPECT_EQ(pre.values.crop_pct, 0.95);
  // crop_mode and interpolation from Hugging Face's file: a height/width size squashes.
  EXPECT_EQ(pre.values.crop_mode, data::CropMode::Squash);
  EXPECT_EQ(pre.values.interpolation, data::Interpolation::Bilinear);
  EXPECT_EQ(pre.sources.at("interpolation"), "from " + folder_ + "/preprocessor_config.json");
}

TEST_F(PreprocessingFiles, WhatTrainingSavesReadsBack) {
  data::Preprocessing p;
  p.normalization = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  p.crop_pct = 0.875;
  p.crop_mode = data::CropMode::Squash;
  p.interpolation = data::Interpolation::Bilinear;
  const nn::ModelPreprocessing back = nn::read_preprocessing(weights(), {{"pretrained_cfg", nn::pretrained_cfg_json(p)}});
  EXPECT_EQ(back.values.normalization.mean, p.normalization.mean);
  EXPECT_EQ(back.values.normalization.std, p.normalization.std);
  EXPECT_EQ(back.values.crop_pct, p.crop_pct);
  EXPECT_EQ(back.values.crop_mode, p.crop_mode);
  EXPECT_EQ(back.values.interpolation, p.interpolation);
}

TEST_F(PreprocessingFiles, BadMetadataNamesTheFileAndTheField) {
  const std::string meta = weights() + " (metadata pretrained_cfg)";
  EXPECT_EQ(error_reading({{"pretrained_cfg", "[1]"}}), meta + ": not a JSON object");
  EXPECT_EQ(error_reading({{"pretrained_cfg", R"({"crop_pct": 1.5})"}}),
            meta + ": field 'crop_pct' must be a number in (0, 1], got 1.5");
  EXPECT_EQ(error_reading({{"pretrained_cfg", R"({"std": [0.2, 0, 0.3]})"}}),
            meta + ": field 'std' must be a list of 1 or 3 positive numbers, got [0.2,0,0.3]");
  EXPECT_EQ(error_reading({{"pretrained_cfg", R"({"crop_mode": "border"})"}}),
            meta + ": field 'crop_mode' is \"border\"; vitune crops \"center\" or \"squash\"");
  write("pretrained_cfg.json", R"({"mean": [0.5, 0.5]})");
  EXPECT_EQ(error_reading(), folder_ + "/pretrained_cfg.json: field 'mean' must be a list of 1 or 3 numbers, got [0.5,0.5]");
  fs::remove(folder_ + "/pretrained_cfg.json");
  write("config.json", R"({"pretrained_cfg": {"interpolation": "lanczos"}})");
  EXPECT_EQ(error_reading(), folder_ + "/config.json (pretrained_cfg): field 'interpolation' is \"lanczos\"; vitune "
                                       "resizes with \"bilinear\" or \"bicubic\" (override with --interpolation)");
  // A field the caller sets is not read, so a value vitune cannot use is no error there.
  EXPECT_EQ(error_reading({}, {"interpolation"}), "");
  fs::remove(folder_ + "/config.json");
  write("preprocessor_config.json", R"({"resample": 1})");
  EXPECT_EQ(error_reading(), folder_ + "/preprocessor_config.json: field 'resample' is 1; vitune resizes with PIL "
                                       "codes 2 (bilinear) or 3 (bicubic) (override with --interpolation)");
  write("preprocessor_config.json", R"({"size": {"height": 224, "width": 200}})");
  EXPECT_EQ(error_reading(), folder_ + "/preprocessor_config.json: field 'size' must be a positive integer or a "
                                       "square {\"height\": n, \"width\": n} or {\"shortest_edge\": n}, got "
                                       "{\"height\":224,\"width\":200}");
  write("preprocessor_config.json", R"({"size": {"shortest_edge": 16}, "crop_size": 20})");
  EXPECT_EQ(error_reading(), folder_ + "/preprocessor_config.json: field 'crop_size' 20 is larger than 'size' 16");
}

}  // namespace
}  // namespace vitune::testing
