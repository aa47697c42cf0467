// Every checkpoint family tools/make_family_golden.py writes (timm avg pooling with and
// without fc_norm, no class token, no qkv bias, qk_norm, DINOv2 registers and LayerScale, DeiT
// distilled, a CLIP port with quick_gelu, open_clip's visual tower, Hugging Face Dinov2,
// CLIPVision and DeiT with and without teacher with config.json, big_vision npz prefixes,
// timm without pooling) loads and gives PyTorch's
// (also at another image size, with pos_embed resampled as timm does)
// logits within |a - b| <= 1e-5 + 1e-4 |b| (f32), on every device; the cross-entropy
// gradients saved for some families match within 1e-5 + 1e-3 |b|. The largest logit
// difference per family is printed (the README's table copies it).
#include <algorithm>
#include <cstdio>

#include "device_test.h"
#include "engine/ops.h"
#include "nn/checkpoint.h"
#include "nn/components.h"
#include "nn/pos_embed_resample.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

struct Family {
  const char* name;      // tests/golden/families/<name>.expected.safetensors
  const char* weights;   // the checkpoint, relative to tests/golden/families/
  int heads;             // the --heads a user passes (0: the file or config.json tells)
  const char* global_pool;
  const char* act;
  nn::CheckpointLayout layout;
};

const Family kFamilies[] = {
    {"timm_avg_fc_norm", "timm_avg_fc_norm.safetensors", 2, "", "", nn::CheckpointLayout::Timm},
    {"timm_avg_no_fc_norm", "timm_avg_no_fc_norm.safetensors", 2, "avg", "", nn::CheckpointLayout::Timm},
    {"timm_no_class_token", "timm_no_class_token.safetensors", 2, "", "", nn::CheckpointLayout::Timm},
    {"timm_no_qkv_bias", "timm_no_qkv_bias.safetensors", 2, "", "", nn::CheckpointLayout::Timm},
    {"timm_qk_norm", "timm_qk_norm.safetensors", 2, "", "", nn::CheckpointLayout::Timm},
    {"timm_dinov2_reg4", "timm_dinov2_reg4.safetensors", 2, "", "", nn::CheckpointLayout::Timm},
    {"timm_deit_distilled", "timm_deit_distilled.safetensors", 2, "", "", nn::CheckpointLayout::Timm},
    {"timm_clip_quickgelu", "timm_clip_quickgelu.safetensors", 2, "", "quick_gelu", nn::CheckpointLayout::Timm},
    {"open_clip_visual", "open_clip_visual.safetensors", 2, "", "quick_gelu", nn::CheckpointLayout::OpenClip},
    {"hf_dinov2", "hf_dinov2/model.safetensors", 0, "", "", nn::CheckpointLayout::HuggingFace},
    {"hf_clip_vision", "hf_clip_vision/model.safetensors", 0, "", "", nn::CheckpointLayout::HuggingFace},
    {"hf_deit", "hf_deit/model.safetensors", 0, "", "", nn::CheckpointLayout::HuggingFace},
    {"hf_deit_no_teacher", "hf_deit_no_teacher/model.safetensors", 0, "", "", nn::CheckpointLayout::HuggingFace},
    {"big_vision_params", "big_vision_params.npz", 0, "", "", nn::CheckpointLayout::GoogleNpz},
    {"big_vision_opt_target", "big_vision_opt_target.npz", 0, "", "", nn::CheckpointLayout::GoogleNpz},
    // timm global_pool='' from config.json: logits of every token, [2, 17, 5].
    {"timm_no_pool", "timm_no_pool/model.safetensors", 0, "", "", nn::CheckpointLayout::Timm},
};

std::string family_path(const std::string& name) { return data_path("families/" + name); }

nn::LoadedVit load(const Family& f, Device device) {
  nn::LoadOptions options;
  options.heads = f.heads;
  options.global_pool = f.global_pool;
  options.act = f.act;
  return nn::load_vit(family_path(f.weights), device, options);
}

class CheckpointFamilies : public OnDevice {};

TEST_P(CheckpointFamilies, LogitsMatchPyTorch) {
  for (const Family& f : kFamilies) {
    nn::LoadedVit loaded = load(f, device());
    EXPECT_EQ(loaded.layout, f.layout) << f.name;
    nn::SafetensorsFile golden = nn::read_safetensors(family_path(std::string(f.name) + ".expected.safetensors"));
    autograd::NoGradGuard no_grad;
    Tensor logits = loaded.model->forward(autograd::Variable(golden.at("images").clone().to(device()))).value();
    EXPECT_TRUE(tensors_close(logits, golden.at("logits"), kF32Forward, f.name));
    if (device() == Device::cpu()) {
      std::printf("family %-22s max |logit - PyTorch| %.2e\n", f.name, max_difference(logits, golden.at("logits")));
    }
  }
}

TEST_P(CheckpointFamilies, GradientsThroughLayerScaleAvgPoolDistillationAndQkNormMatchPyTorch) {
  int checked = 0;
  for (const Family& f : kFamilies) {
    nn::SafetensorsFile golden = nn::read_safetensors(family_path(std::string(f.name) + ".expected.safetensors"));
    const bool has_gradients = std::any_of(golden.names.begin(), golden.names.end(),
                                           [](const std::string& name) { return name.rfind("grad.", 0) == 0; });
    if (!has_gradients) continue;
    nn::LoadedVit loaded = load(f, device());
    Tensor labels = Tensor::from_vector<int64_t>({2}, {1, 3}, Device::cpu()).to(device());
    autograd::Variable loss = autograd::cross_entropy(
        loaded.model->forward(autograd::Variable(golden.at("images").clone().to(device()))), labels);
    autograd::backward(loss);
    for (const std::string& name : golden.names) {
      if (name.rfind("grad.", 0) != 0) continue;
      const std::string parameter = name.substr(5);
      EXPECT_TRUE(tensors_close(loaded.model->parameter(parameter).grad(), golden.at(name), kF32Gradient,
                                std::string(f.name) + " " + name));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 14) << "gradients saved by tools/make_family_golden.py";
}

// timm's resample_abs_pos_embed (antialiased, as its checkpoint_filter_fn): up from a 4x4 grid to 6x6 with one prefix token
// (class) and with none (registers, no_embed_class), and down to 3x3 with two (DeiT).
TEST_P(CheckpointFamilies, ResampledPositionEmbeddingsMatchTimm) {
  const struct {
    const char* family;
    int img_size;
  } cases[] = {{"timm_avg_fc_norm", 24}, {"timm_dinov2_reg4", 24}, {"timm_deit_distilled", 12}};
  for (const auto& c : cases) {
    nn::LoadOptions options;
    options.heads = 2;
    options.img_size = c.img_size;
    nn::LoadedVit loaded = nn::load_vit(family_path(std::string(c.family) + ".safetensors"), device(), options);
    EXPECT_EQ(loaded.model->config().img_size, c.img_size);
    EXPECT_NE(loaded.sources.at("img_size").find("resampled (bicubic, antialiased) from 4x4"), std::string::npos);
    const std::string name = std::string(c.family) + ".at" + std::to_string(c.img_size);
    nn::SafetensorsFile golden = nn::read_safetensors(family_path(name + ".expected.safetensors"));
    EXPECT_TRUE(tensors_close(loaded.model->pos_embed.value(), golden.at("pos_embed"), kF32Forward, name));
    autograd::NoGradGuard no_grad;
    Tensor logits = loaded.model->forward(autograd::Variable(golden.at("images").clone().to(device()))).value();
    EXPECT_TRUE(tensors_close(logits, golden.at("logits"), kF32Forward, name));
    if (device() == Device::cpu()) {
      std::printf("resampled %-28s max |logit - PyTorch| %.2e\n", name.c_str(),
                  max_difference(logits, golden.at("logits")));
    }
  }
}

// F.interpolate(mode='bicubic', align_corners=False) with antialias=True (A = -0.5, the
// kernel stretched by the scale when shrinking, weights renormalised at the borders) and
// with antialias=False, down 6x6 -> 4x4 and 7x7 -> 3x3 and up 4x4 -> 6x6; the class token is kept.
TEST(PositionEmbeddingResampling, AntialiasedAndPlainBicubicMatchPyTorch) {
  nn::SafetensorsFile golden = nn::read_safetensors(family_path("pos_embed_resample.expected.safetensors"));
  const int cases[][2] = {{6, 4}, {7, 3}, {4, 6}};
  for (const auto& c : cases) {
    const Tensor& pos = golden.at("pos." + std::to_string(c[0]));
    for (bool antialias : {true, false}) {
      const std::string name =
          "pos." + std::to_string(c[0]) + "to" + std::to_string(c[1]) + (antialias ? ".aa" : ".plain");
      Tensor resampled = nn::resample_pos_embed(pos, 1, c[1], antialias);
      EXPECT_TRUE(tensors_close(resampled, golden.at(name), kF32Forward, name));
      std::printf("%-16s max |resampled - PyTorch| %.2e\n", name.c_str(), max_difference(resampled, golden.at(name)));
    }
  }
  // The two differ: the antialiased filter is not the plain one, shrinking or enlarging.
  EXPECT_GT(max_difference(nn::resample_pos_embed(golden.at("pos.6"), 1, 4, true), golden.at("pos.6to4.plain")), 1e-2);
  EXPECT_GT(max_difference(nn::resample_pos_embed(golden.at("pos.4"), 1, 6, true), golden.at("pos.4to6.plain")), 1e-2);
}

void expect_refused(const std::string& weights, const nn::LoadOptions& options, const std::string& phrase) {
  try {
    nn::load_vit(family_path(weights), Device::cpu(), options);
    ADD_FAILURE() << weights << ": expected an error containing '" << phrase << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(CheckpointFamilyRefusals, WhatTheTensorsCannotTellIsAskedFor) {
  // dim 32 is not a multiple of 64 and nothing in or beside the file gives the head count.
  expect_refused("timm_dinov2_reg4.safetensors", {}, "pass --heads");
  nn::LoadOptions heads;
  heads.heads = 2;
  // open_clip files do not say whether the model runs gelu or quick_gelu.
  expect_refused("open_clip_visual.safetensors", heads, "pass --act quick_gelu");
}

TEST(CheckpointFamilyRefusals, TheSourceOfEachGuessableFieldIsReported) {
  nn::LoadedVit hf = nn::load_vit(family_path("hf_dinov2/model.safetensors"), Device::cpu());
  EXPECT_EQ(hf.model->config().heads, 2);
  EXPECT_NE(hf.sources.at("heads").find("config.json"), std::string::npos) << hf.sources.at("heads");
  EXPECT_NE(hf.sources.at("ln_eps").find("config.json"), std::string::npos) << hf.sources.at("ln_eps");
  nn::LoadedVit clip = nn::load_vit(family_path("hf_clip_vision/model.safetensors"), Device::cpu());
  EXPECT_EQ(clip.model->config().act, "quick_gelu");
  EXPECT_DOUBLE_EQ(clip.model->config().ln_eps, 1e-5);

  // Avg pooling without fc_norm has the tensors of token pooling: without --global-pool
  // the model runs token pooling and says that it assumed so.
  nn::LoadOptions heads;
  heads.heads = 2;
  nn::LoadedVit assumed = nn::load_vit(family_path("timm_avg_no_fc_norm.safetensors"), Device::cpu(), heads);
  EXPECT_EQ(assumed.model->config().global_pool, "token");
  EXPECT_EQ(assumed.sources.at("global_pool").rfind("assumed token", 0), 0u) << assumed.sources.at("global_pool");
  EXPECT_EQ(assumed.sources.at("heads"), "from --heads");
  heads.global_pool = "avg";
  nn::LoadedVit told = nn::load_vit(family_path("timm_avg_no_fc_norm.safetensors"), Device::cpu(), heads);
  EXPECT_EQ(told.sources.at("global_pool"), "from --global-pool");

  // A vitune checkpoint whose vit_config predates act and global_pool says so.
  nn::LoadedVit old = nn::load_vit(data_path("tiny_vit.safetensors"), Device::cpu());
  EXPECT_EQ(old.model->config().global_pool, "token");
  EXPECT_EQ(old.model->config().act, "gelu");
  EXPECT_NE(old.sources.at("global_pool").find("vitune's only choice"), std::string::npos);
  EXPECT_NE(old.sources.at("act").find("vitune's only choice"), std::string::npos);
}

// timm's global_pool='' recorded in config.json: every token goes through the final norm
// and the head; --global-pool token (reset_classifier's global_pool) pools token 0 again,
// which gives the token-0 row of the per-token logits.
TEST(CheckpointFamilyRefusals, NoPoolingReturnsEveryTokenAndGlobalPoolOverridesIt) {
  nn::LoadedVit none = nn::load_vit(family_path("timm_no_pool/model.safetensors"), Device::cpu());
  EXPECT_EQ(none.model->config().global_pool, "none");
  EXPECT_NE(none.sources.at("global_pool").find("timm_no_pool/config.json"), std::string::npos)
      << none.sources.at("global_pool");
  nn::SafetensorsFile golden = nn::read_safetensors(family_path("timm_no_pool.expected.safetensors"));
  autograd::NoGradGuard no_grad;
  autograd::Variable images(golden.at("images").clone());
  EXPECT_EQ(none.model->features(images).value().shape(), (Shape{2, 17, 32}));
  nn::LoadOptions token;
  token.global_pool = "token";
  nn::LoadedVit pooled = nn::load_vit(family_path("timm_no_pool/model.safetensors"), Device::cpu(), token);
  Tensor logits = pooled.model->forward(images).value();
  EXPECT_EQ(logits.shape(), (Shape{2, 5}));
  EXPECT_TRUE(tensors_close(logits, ops::select_token(golden.at("logits"), 0), kF32Forward, "token 0"));
}

// Hugging Face DeiT: with teacher, timm's distilled model (two heads); without, one head
// on the class token and the distillation token read as a register.
TEST(CheckpointFamilyRefusals, HuggingFaceDeitWithoutTeacherHasOneHeadOnTheClassToken) {
  nn::LoadedVit teacher = nn::load_vit(family_path("hf_deit/model.safetensors"), Device::cpu());
  EXPECT_TRUE(teacher.model->config().dist_token);
  EXPECT_NE(teacher.model->head_dist, nullptr);
  nn::LoadedVit single = nn::load_vit(family_path("hf_deit_no_teacher/model.safetensors"), Device::cpu());
  const nn::VitConfig& c = single.model->config();
  EXPECT_FALSE(c.dist_token);
  EXPECT_EQ(c.reg_tokens, 1);
  EXPECT_EQ(c.global_pool, "token");
  EXPECT_EQ(single.model->head_dist, nullptr);
  EXPECT_EQ(c.tokens(), 18);  // class, distillation and 16 patches
  EXPECT_DOUBLE_EQ(c.ln_eps, 1e-12);
}

// timm qk_norm: told by the tensors, in timm's state-dict order (qkv, q_norm, k_norm,
// proj), in the mha component, kept by save and load.
TEST(CheckpointFamilyRefusals, QkNormIsToldByTheTensorsAndBelongsToMha) {
  nn::LoadOptions heads;
  heads.heads = 2;
  nn::LoadedVit loaded = nn::load_vit(family_path("timm_qk_norm.safetensors"), Device::cpu(), heads);
  EXPECT_TRUE(loaded.model->config().qk_norm);
  std::vector<std::string> names;
  for (const nn::Parameter* p : loaded.model->parameters()) {
    if (p->name().rfind("blocks.0.attn.", 0) == 0) names.push_back(p->name());
  }
  const std::vector<std::string> expected = {
      "blocks.0.attn.qkv.weight",    "blocks.0.attn.qkv.bias",    "blocks.0.attn.q_norm.weight",
      "blocks.0.attn.q_norm.bias",   "blocks.0.attn.k_norm.weight", "blocks.0.attn.k_norm.bias",
      "blocks.0.attn.proj.weight",   "blocks.0.attn.proj.bias"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(loaded.model->parameter("blocks.1.attn.k_norm.weight").shape(), (Shape{16}));  // dim 32 / 2 heads
  EXPECT_EQ(nn::component_of("blocks.1.attn.q_norm.bias"), nn::Component::MHA);
  TempPath file("qk_norm", ".safetensors");
  nn::save_vit(file.str(), *loaded.model);
  EXPECT_TRUE(nn::load_vit(file.str(), Device::cpu()).model->config().qk_norm);
}

TEST(CheckpointFamilyRefusals, AHeadCountAssumedFromDimIsSaidToBeAssumed) {
  nn::VitConfig config;
  config.img_size = 8;
  config.patch = 4;
  config.dim = 128;
  config.depth = 1;
  config.heads = 4;
  config.num_classes = 3;
  nn::VisionTransformer model(config, Device::cpu());
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (nn::Parameter* p : model.parameters()) tensors.emplace_back(p->name(), p->value());
  TempPath file("no_metadata", ".safetensors");
  nn::write_safetensors(file.str(), tensors);
  nn::LoadedVit loaded = nn::load_vit(file.str(), Device::cpu());
  EXPECT_EQ(loaded.model->config().heads, 2);
  EXPECT_EQ(loaded.sources.at("heads").rfind("assumed dim/64", 0), 0u) << loaded.sources.at("heads");
}

VITUNE_ON_EVERY_DEVICE(CheckpointFamilies);

}  // namespace
}  // namespace vitune::testing
