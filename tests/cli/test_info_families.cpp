// `vitune info` on the checkpoint families: how the head count, pooling, activation and
// epsilon were obtained, the family flags, and the refusals that name the flag to pass.
#include "cli_runner.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

std::string family(const std::string& name) { return data_path("families/" + name); }

void expect_lines(const CliResult& r, std::initializer_list<const char*> lines) {
  for (const char* expected : lines) EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
}

TEST(InfoFamilies, SaysWhereTheHeadCountAndTheRestCameFrom) {
  CliResult hf = run_vitune("info " + family("hf_clip_vision/model.safetensors"));
  ASSERT_EQ(hf.status, 0) << hf.output;
  expect_lines(hf, {"layout      huggingface", "heads 2", "act quick_gelu", "pre_norm yes", "head_bias no",
                    "heads       from ", "hf_clip_vision/config.json"});

  CliResult dino = run_vitune("info " + family("timm_dinov2_reg4.safetensors") + " --heads 2");
  ASSERT_EQ(dino.status, 0) << dino.output;
  expect_lines(dino, {"reg_tokens 4", "layer_scale yes", "heads       from --heads", "global_pool assumed token",
                      "(16 patches of 4x4 + 5 prefix)"});
}

TEST(InfoFamilies, ImgSizeResamplesThePositionEmbedding) {
  CliResult r = run_vitune("info " + family("timm_deit_distilled.safetensors") + " --heads 2 --img-size 24");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_lines(r, {"img_size 24", "img_size    from --img-size: pos_embed resampled (bicubic, antialiased) from 4x4 to 6x6",
                   "(36 patches of 4x4 + 2 prefix)"});
  CliResult bad = run_vitune("info " + family("timm_deit_distilled.safetensors") + " --heads 2 --img-size 22");
  EXPECT_EQ(bad.status, 1);
  expect_lines(bad, {"--img-size 22 must be a multiple of the patch size 4"});
}

TEST(InfoFamilies, SaysThePreprocessingAndWhereEachValueCameFrom) {
  CliResult hf = run_vitune("info " + data_path("preprocessing/hf_vit/model.safetensors"));
  ASSERT_EQ(hf.status, 0) << hf.output;
  const std::string file = data_path("preprocessing/hf_vit/preprocessor_config.json");
  expect_lines(hf, {"preprocess  mean 0.4,0.45,0.5, std 0.2,0.25,0.3, crop_pct 0.888889, crop_mode center, "
                    "interpolation bicubic"});
  for (const std::string field : {"mean        from ", "crop_pct    from ", "interpolation from "}) {
    EXPECT_NE(hf.output.find(field + file), std::string::npos) << field << "\n" << hf.output;
  }
  CliResult own = run_vitune("info " + data_path("tiny_vit.safetensors"));
  expect_lines(own, {"preprocess  mean 0.5, std 0.5, crop_pct 1, crop_mode center, interpolation bicubic",
                     "std         vitune default"});
}

TEST(InfoFamilies, RefusalsNameTheFlagToPass) {
  CliResult no_heads = run_vitune("info " + family("timm_no_qkv_bias.safetensors"));
  EXPECT_EQ(no_heads.status, 1);
  expect_lines(no_heads, {"pass --heads"});
  CliResult no_act = run_vitune("info " + family("open_clip_visual.safetensors") + " --heads 2");
  EXPECT_EQ(no_act.status, 1);
  expect_lines(no_act, {"pass --act quick_gelu"});
  CliResult with_act = run_vitune("info " + family("open_clip_visual.safetensors") + " --heads 2 --act quick_gelu");
  EXPECT_EQ(with_act.status, 0) << with_act.output;
  expect_lines(with_act, {"layout      open_clip", "act         from --act"});
}

}  // namespace
}  // namespace vitune::testing
