// Writing and checked reading of the prior anchor file.
#include "peft/anchor.h"

#include <cmath>
#include <set>

#include "engine/error.h"
#include "nn/safetensors.h"
#include "peft/model_hash.h"

namespace vitune::peft {

const Tensor& Anchor::at(const std::string& weight_name) const {
  for (const auto& [name, mean] : means) {
    if (name == weight_name) return mean;
  }
  throw Error(cat(path, ": anchor has no entry for ", weight_name));
}

void save_anchor(const std::string& path, const ActivationStats& stats, const std::string& model_hash,
                 const std::string& data_spec) {
  VITUNE_CHECK(stats.layers().size() >= 1, path, ": no layers to write into the anchor");
  const std::map<std::string, std::string> metadata = {
      {"format", kAnchorFormat},
      {"format_version", kAnchorFormatVersion},
      {"model_hash", model_hash},
      {"data", data_spec},
      {"images", std::to_string(stats.images())},
      {"patches_per_image", std::to_string(stats.layers().front().tokens_per_image)},
      {"tokens_per_image", std::to_string(stats.layers().back().tokens_per_image)},
  };
  nn::write_safetensors(path, stats.means(), metadata);
}

namespace {

const std::string& required_metadata(const nn::SafetensorsFile& file, const std::string& key) {
  auto found = file.metadata.find(key);
  VITUNE_CHECK(found != file.metadata.end(), file.path, ": not an anchor file: metadata \"", key,
               "\" is missing");
  return found->second;
}

void check_means(const std::string& path, const std::string& name, const Tensor& mean, int64_t in_features) {
  VITUNE_CHECK(mean.dtype() == DType::F64 && mean.ndim() == 1 && mean.dim(0) == in_features, path, ": anchor ",
               name, " is ", mean.str(), ", expected f64[", in_features, "]");
  const Tensor host = mean.to(Device::cpu());
  const double* values = host.data<double>();
  for (int64_t k = 0; k < in_features; ++k) {
    VITUNE_CHECK(std::isfinite(values[k]) && values[k] >= 0, path, ": anchor ", name, "[", k, "] = ", values[k],
                 ", expected a finite mean |activation| >= 0");
  }
}

}  // namespace

Anchor load_anchor(const std::string& path, const nn::VisionTransformer& model) {
  nn::SafetensorsFile file = nn::read_safetensors(path);
  VITUNE_CHECK(required_metadata(file, "format") == kAnchorFormat, path, ": format \"",
               file.metadata.at("format"), "\", expected \"", kAnchorFormat, "\"");
  const std::string& version = required_metadata(file, "format_version");
  VITUNE_CHECK(version == kAnchorFormatVersion, path, ": anchor format_version ", version,
               " is not supported (expected ", kAnchorFormatVersion, ")");
  const std::string& stored_hash = required_metadata(file, "model_hash");
  const std::string model_hash = backbone_hash(model);
  VITUNE_CHECK(stored_hash == model_hash, path, ": the anchor was computed on the model with backbone hash ",
               stored_hash, ", but this model's backbone hash is ", model_hash);
  for (const char* key : {"data", "images", "tokens_per_image", "patches_per_image"}) required_metadata(file, key);

  Anchor anchor;
  anchor.path = path;
  anchor.metadata = file.metadata;
  std::set<std::string> expected;
  for (const MeasuredLayer& layer : measured_layers(model)) {
    expected.insert(layer.weight_name);
    auto found = file.tensors.find(layer.weight_name);
    VITUNE_CHECK(found != file.tensors.end(), path, ": anchor has no entry for ", layer.weight_name);
    check_means(path, layer.weight_name, found->second, layer.in_features);
    anchor.means.emplace_back(layer.weight_name, found->second.clone());
  }
  for (const std::string& name : file.names) {
    VITUNE_CHECK(expected.count(name), path, ": anchor has an entry \"", name,
                 "\" that is not a measured layer of this model");
  }
  return anchor;
}

}  // namespace vitune::peft
