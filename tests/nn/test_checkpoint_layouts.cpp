// The same weights in timm, Hugging Face (with and without the vit. prefix) and Google
// npz layouts (stored and deflated) load to bit-identical parameters and logits; saving
// round-trips; broken checkpoints give errors that say what was expected.
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "vit_fixture.h"

namespace vitune::testing {
namespace {

Tensor logits_of(nn::VisionTransformer& model) {
  TinyVit reference;
  autograd::NoGradGuard no_grad;
  return model.forward(reference.images()).value();
}

nn::LoadOptions heads_and_eps(int heads, double ln_eps) {
  nn::LoadOptions options;
  options.heads = heads;
  options.ln_eps = ln_eps;
  return options;
}

void expect_same_model(nn::LoadedVit& loaded) {
  TinyVit reference;
  for (nn::Parameter* p : reference.model().parameters()) {
    EXPECT_TRUE(bitwise_equal(loaded.model->parameter(p->name()).value(), p->value())) << p->name();
  }
  EXPECT_TRUE(bitwise_equal(logits_of(*loaded.model), logits_of(reference.model())));
}

TEST(CheckpointLayouts, HuggingFaceNeedsHeadsAndItsOwnEpsilonByDefault) {
  nn::LoadedVit hf = nn::load_vit(data_path("tiny_vit_hf.safetensors"), Device::cpu(), heads_and_eps(4, 0.0));
  EXPECT_EQ(hf.layout, nn::CheckpointLayout::HuggingFace);
  EXPECT_DOUBLE_EQ(hf.model->config().ln_eps, 1e-12);
  // dim 32 is not a multiple of 64: without --heads the error says what to pass.
  try {
    nn::load_vit(data_path("tiny_vit_hf.safetensors"), Device::cpu());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--heads"), std::string::npos) << e.what();
  }
}

TEST(CheckpointLayouts, HuggingFaceLoadsToIdenticalLogits) {
  nn::LoadedVit hf = nn::load_vit(data_path("tiny_vit_hf.safetensors"), Device::cpu(), heads_and_eps(4, 1e-6));
  expect_same_model(hf);
}

TEST(CheckpointLayouts, HuggingFaceWithoutPrefixLoadsToIdenticalLogits) {
  nn::SafetensorsFile file = nn::read_safetensors(data_path("tiny_vit_hf.safetensors"));
  std::vector<std::pair<std::string, Tensor>> renamed;
  for (const std::string& name : file.names) {
    std::string bare = name.rfind("vit.", 0) == 0 ? name.substr(4) : name;
    renamed.emplace_back(bare, file.at(name));
  }
  TempPath path_file("hf_no_prefix", ".safetensors");
  const std::string& path = path_file.str();
  nn::write_safetensors(path, renamed);
  nn::LoadedVit hf = nn::load_vit(path, Device::cpu(), heads_and_eps(4, 1e-6));
  expect_same_model(hf);
}

TEST(CheckpointLayouts, GoogleNpzStoredAndDeflatedLoadToIdenticalLogits) {
  for (const char* name : {"tiny_vit_npz_stored.npz", "tiny_vit_npz_deflated.npz"}) {
    nn::LoadedVit npz = nn::load_vit(data_path(name), Device::cpu());
    EXPECT_EQ(npz.layout, nn::CheckpointLayout::GoogleNpz);
    EXPECT_EQ(npz.model->config().heads, 4) << "heads come from the query kernel's shape";
    EXPECT_DOUBLE_EQ(npz.model->config().ln_eps, 1e-6);
    expect_same_model(npz);
  }
}

TEST(CheckpointLayouts, SaveWritesTimmLayoutThatLoadsBackExactly) {
  TinyVit vit;
  TempPath path_file("saved", ".safetensors");
  const std::string& path = path_file.str();
  nn::save_vit(path, vit.model());
  nn::LoadedVit again = nn::load_vit(path, Device::cpu());
  EXPECT_EQ(again.model->config().to_json(), vit.model().config().to_json());
  expect_same_model(again);
}

TEST(CheckpointLayouts, Bf16TensorsAreConvertedOnLoad) {
  TinyVit vit;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (nn::Parameter* p : vit.model().parameters()) tensors.emplace_back(p->name(), p->value().to(DType::BF16));
  TempPath path_file("bf16", ".safetensors");
  const std::string& path = path_file.str();
  nn::write_safetensors(path, tensors, vit.loaded.metadata);
  nn::LoadedVit loaded = nn::load_vit(path, Device::cpu());
  EXPECT_EQ(loaded.stored_dtypes.at("head.weight"), DType::BF16);
  Tensor expected = vit.model().parameter("head.weight").value().to(DType::BF16).to(DType::F32);
  EXPECT_TRUE(bitwise_equal(loaded.model->parameter("head.weight").value(), expected));
}

void expect_load_error(const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata, const std::string& phrase) {
  TempPath path_file("broken", ".safetensors");
  const std::string& path = path_file.str();
  nn::write_safetensors(path, tensors, metadata);
  try {
    nn::load_vit(path, Device::cpu());
    FAIL() << "expected an error containing '" << phrase << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(CheckpointLayouts, MissingMisshapenAndUnexpectedTensorsAreListed) {
  TinyVit vit;
  auto all = [&] {
    std::vector<std::pair<std::string, Tensor>> t;
    for (nn::Parameter* p : vit.model().parameters()) t.emplace_back(p->name(), p->value());
    return t;
  };
  auto without = all();
  without.erase(without.begin() + 10);
  expect_load_error(without, vit.loaded.metadata, "missing " + all()[10].first);

  auto misshapen = all();
  for (auto& [name, t] : misshapen) {
    if (name == "blocks.1.mlp.fc2.bias") t = Tensor::zeros({31}, DType::F32, Device::cpu());
  }
  expect_load_error(misshapen, vit.loaded.metadata, "blocks.1.mlp.fc2.bias is [31], expected [32]");

  auto extra = all();
  // timm's scale_norm (a LayerNorm before attn.proj), which vitune does not run.
  extra.emplace_back("blocks.0.attn.norm.weight", Tensor::zeros({32}, DType::F32, Device::cpu()));
  expect_load_error(extra, vit.loaded.metadata, "unexpected blocks.0.attn.norm.weight");

  // A q_norm tells qk_norm: the rest of it is missing.
  auto partial = all();
  partial.emplace_back("blocks.0.attn.q_norm.weight", Tensor::zeros({8}, DType::F32, Device::cpu()));
  expect_load_error(partial, vit.loaded.metadata, "missing blocks.0.attn.k_norm.weight [8]");

  expect_load_error({{"weights", Tensor::zeros({3}, DType::F32, Device::cpu())}}, {}, "not a ViT checkpoint");
  expect_load_error(all(), {{"vit_config", "{\"heads\": 5}"}}, "heads must be");
  expect_load_error(all(), {{"vit_config", "{\"depth\": \"two\"}"}}, "'depth' must be an integer");
}

}  // namespace
}  // namespace vitune::testing
