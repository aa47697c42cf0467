// Loading and saving ViTs in the layouts the field uses (nn/layout_*.cpp):
//   timm safetensors       blocks.N.attn.qkv.weight, ...: ViT, DeiT distilled (dist_token,
//                          head_dist), DINOv2 (ls1/ls2.gamma, reg_token), CLIP ports
//                          (norm_pre), avg pooling with fc_norm, no qkv bias  (eps 1e-6,
//                          1e-5 with norm_pre)
//   Hugging Face           ViT / ViTModel, DeiT (with teacher: dist_token and head_dist;
//                          without: the distillation token as one register), Dinov2Model
//                          and CLIPVision(WithProjection) safetensors, q/k/v merged into
//                          qkv, with config.json beside
//                          them read for the head count, activation and epsilon
//   open_clip / OpenAI     visual.conv1, visual.class_embedding, visual.transformer.
//                          resblocks.N.attn.in_proj_weight, ..., visual.proj (eps 1e-5);
//                          the text tower is ignored
//   Google / big_vision    .npz Transformer/encoderblock_N/..., bare or under params/ or
//                          opt/target/, kernels transposed (eps 1e-6)
// The config is inferred from the tensor names and shapes; what they cannot tell (the
// head count, LayerNorm epsilon, activation, avg pooling without fc_norm) comes from the
// options, else the safetensors metadata entry `vit_config`, else config.json beside the
// file, else the layout (npz kernels carry the head count; otherwise dim / 64 when dim
// is a multiple of 64, said so by `sources`, and an error when it is not). bf16 and f16
// tensors are converted to f32. A torch pickle is refused with how to convert it.
// LoadOptions::img_size resamples pos_embed as timm's resample_abs_pos_embed does
// (nn/pos_embed_resample.h) and `sources["img_size"]` says so.
// Saving writes the timm layout with `vit_config` in the metadata, atomically.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "nn/vit.h"

namespace vitune::nn {

enum class CheckpointLayout { Timm, HuggingFace, OpenClip, GoogleNpz };
const char* layout_name(CheckpointLayout layout);

struct LoadOptions {
  int heads = 0;            // 0: not given
  double ln_eps = 0.0;      // 0: not given
  std::string global_pool;  // "token", "avg" or "none"; empty: not given
  std::string act;          // "gelu" or "quick_gelu"; empty: not given
  int img_size = 0;         // 0: the checkpoint's; else pos_embed is resampled to this size
  bool antialias = true;    // resample as timm (F.interpolate antialias=True); false: antialias=False
};

struct LoadedVit {
  std::unique_ptr<VisionTransformer> model;
  CheckpointLayout layout = CheckpointLayout::Timm;
  std::string path;
  std::map<std::string, std::string> metadata;  // safetensors __metadata__ (empty for npz)
  std::map<std::string, DType> stored_dtypes;   // per timm parameter name, as stored
  // How the fields the tensors cannot tell were obtained: "heads", "global_pool", "act",
  // "ln_eps" -> "from --heads", "from config.json", "assumed dim/64 (pass --heads)", ...
  std::map<std::string, std::string> sources;
};

// Reads the file on the host and builds the model on `device`.
LoadedVit load_vit(const std::string& path, Device device, const LoadOptions& options = {});

void save_vit(const std::string& path, const VisionTransformer& model,
              const std::map<std::string, std::string>& extra_metadata = {});

// The tensors of a checkpoint renamed and reshaped to timm's layout, before any model
// is built, with what the layout or the config.json beside the file tells of the rest
// (each hint empty or 0 when not told; `hint_sources` says, per field name, where from).
struct TimmTensors {
  std::map<std::string, Tensor> tensors;
  CheckpointLayout layout = CheckpointLayout::Timm;
  std::map<std::string, std::string> metadata;
  int heads_hint = 0;
  std::string act_hint;
  double ln_eps_hint = 0.0;
  std::string global_pool_hint;
  int img_size_hint = 0;
  int patch_hint = 0;
  std::map<std::string, std::string> hint_sources;
};
TimmTensors read_as_timm(const std::string& path);

}  // namespace vitune::nn
