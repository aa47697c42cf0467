// Loading and saving ViTs in the layouts the field uses:
//   timm safetensors       blocks.N.attn.qkv.weight, ...            (LayerNorm eps 1e-6)
//   Hugging Face safetensors [vit.]encoder.layer.N.attention.attention.query.weight, ...
//                          q, k, v merged into qkv; classifier.* as head (eps 1e-12)
//   Google .npz            Transformer/encoderblock_N/MultiHeadDotProductAttention_1/
//                          query/kernel, ... with the kernels transposed (eps 1e-6)
// The config is inferred from the tensor shapes; what shapes cannot tell (heads, the
// LayerNorm epsilon) comes from the options, else from the safetensors metadata entry
// `vit_config`, else from the layout (npz kernels carry the heads; otherwise dim / 64).
// bf16 and f16 tensors are converted to f32. Saving writes the timm layout with
// `vit_config` in the metadata, atomically.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "nn/vit.h"

namespace vitune::nn {

enum class CheckpointLayout { Timm, HuggingFace, GoogleNpz };
const char* layout_name(CheckpointLayout layout);

struct LoadOptions {
  int heads = 0;        // 0: not given
  double ln_eps = 0.0;  // 0: not given
};

struct LoadedVit {
  std::unique_ptr<VisionTransformer> model;
  CheckpointLayout layout = CheckpointLayout::Timm;
  std::string path;
  std::map<std::string, std::string> metadata;  // safetensors __metadata__ (empty for npz)
  std::map<std::string, DType> stored_dtypes;   // per timm parameter name, as stored
};

// Reads the file on the host and builds the model on `device`.
LoadedVit load_vit(const std::string& path, Device device, const LoadOptions& options = {});

void save_vit(const std::string& path, const VisionTransformer& model,
              const std::map<std::string, std::string>& extra_metadata = {});

// The tensors of a checkpoint renamed and reshaped to timm's layout, before any model
// is built; `heads_hint` is set when the layout itself reveals the head count.
struct TimmTensors {
  std::map<std::string, Tensor> tensors;
  CheckpointLayout layout = CheckpointLayout::Timm;
  std::map<std::string, std::string> metadata;
  int heads_hint = 0;
};
TimmTensors read_as_timm(const std::string& path);

}  // namespace vitune::nn
