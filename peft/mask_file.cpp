// The selection mask file: safetensors with one i64 index tensor per selected weight,
// and in "__metadata__" the caller's entries plus format, format_version and
// fully_trainable (a JSON list of names). Indices are checked on read (i64,
// non-negative, strictly increasing) and against the tensor's size when the mask is
// applied to a model.
#include "peft/mask_file.h"

#include <nlohmann/json.hpp>
#include <set>

#include "engine/error.h"
#include "nn/safetensors.h"
#include "peft/model_hash.h"

namespace vitune::peft {

namespace {

constexpr const char* kMaskFormat = "vitune-selection-mask";
constexpr const char* kMaskFormatVersion = "1";
const char* const kRequiredMetadata[] = {"format", "format_version", "method", "k", "model_hash",
                                         "fully_trainable"};

// Indices must be i64 [n], each in [0, size), strictly increasing; size -1: unknown.
// They are read on the host.
void check_indices(const std::string& path, const std::string& name, const Tensor& indices, int64_t size) {
  VITUNE_CHECK(indices.dtype() == DType::I64 && indices.ndim() == 1, path, ": mask tensor ", name, " is ",
               indices.str(), ", expected i64[n] (sorted flat indices)");
  const Tensor host = indices.to(Device::cpu());
  const int64_t* values = host.data<int64_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    VITUNE_CHECK(values[i] >= 0, path, ": mask tensor ", name, " has a negative index ", values[i], " (entry ", i,
                 ")");
    VITUNE_CHECK(size < 0 || values[i] < size, path, ": mask tensor ", name, " index ", values[i], " (entry ", i,
                 ") is outside the tensor's ", size, " entries");
    if (i == 0) continue;
    VITUNE_CHECK(values[i] != values[i - 1], path, ": mask tensor ", name, " repeats index ", values[i],
                 " (entries ", i - 1, " and ", i, ")");
    VITUNE_CHECK(values[i] > values[i - 1], path, ": mask tensor ", name, " is not sorted: index ", values[i],
                 " (entry ", i, ") follows ", values[i - 1]);
  }
}

nlohmann::json parse_metadata_json(const std::string& path, const std::string& key, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": mask metadata \"", key, "\" is not valid JSON (", e.what(), ")"));
  }
}

}  // namespace

int64_t SelectionMask::selected_count() const {
  int64_t count = 0;
  for (const auto& entry : selected) count += entry.second.numel();
  return count;
}

void save_mask(const std::string& path, const SelectionMask& mask) {
  std::map<std::string, std::string> metadata = mask.metadata;
  metadata["format"] = kMaskFormat;
  metadata["format_version"] = kMaskFormatVersion;
  metadata["fully_trainable"] = nlohmann::json(mask.fully_trainable).dump();
  for (const char* key : kRequiredMetadata) {
    VITUNE_CHECK(metadata.count(key), path, ": the mask has no metadata \"", key, "\"");
  }
  nn::write_safetensors(path, mask.selected, metadata);
}

SelectionMask load_mask(const std::string& path) {
  nn::SafetensorsFile file = nn::read_safetensors(path);
  for (const char* key : kRequiredMetadata) {
    VITUNE_CHECK(file.metadata.count(key), path, ": not a selection mask: metadata \"", key, "\" is missing");
  }
  VITUNE_CHECK(file.metadata.at("format") == kMaskFormat, path, ": format \"", file.metadata.at("format"),
               "\", expected \"", kMaskFormat, "\"");
  VITUNE_CHECK(file.metadata.at("format_version") == kMaskFormatVersion, path, ": mask format_version ",
               file.metadata.at("format_version"), " is not supported (expected ", kMaskFormatVersion, ")");
  const nlohmann::json full = parse_metadata_json(path, "fully_trainable", file.metadata.at("fully_trainable"));
  VITUNE_CHECK(full.is_array(), path, ": mask metadata \"fully_trainable\" must be a JSON list of names");

  SelectionMask mask;
  for (const std::string& name : file.names) {
    check_indices(path, name, file.tensors.at(name), -1);
    mask.selected.emplace_back(name, file.tensors.at(name));
  }
  std::set<std::string> selected(file.names.begin(), file.names.end());
  for (const nlohmann::json& name : full) {
    VITUNE_CHECK(name.is_string(), path, ": mask metadata \"fully_trainable\" holds a non-string ", name.dump());
    VITUNE_CHECK(!selected.count(name.get<std::string>()), path, ": ", name.get<std::string>(),
                 " is both selected and fully trainable");
    mask.fully_trainable.push_back(name.get<std::string>());
  }
  mask.metadata = file.metadata;
  return mask;
}

void apply_mask(nn::VisionTransformer& model, const SelectionMask& mask, const std::string& source) {
  auto hash = mask.metadata.find("model_hash");
  VITUNE_CHECK(hash != mask.metadata.end(), source, ": the mask has no model_hash");
  const std::string model_hash = backbone_hash(model);
  VITUNE_CHECK(hash->second == model_hash, source, ": the mask was selected on the model with backbone hash ",
               hash->second, ", but this model's backbone hash is ", model_hash);
  for (const auto& [name, indices] : mask.selected) {
    const nn::Parameter* p = model.find_parameter(name);
    VITUNE_CHECK(p, source, ": the mask selects ", name, ", which the model does not have");
    check_indices(source, name, indices, p->numel());
  }
  for (const std::string& name : mask.fully_trainable) {
    VITUNE_CHECK(model.find_parameter(name), source, ": the mask trains ", name, ", which the model does not have");
  }
  for (nn::Parameter* p : model.parameters()) p->freeze();
  for (const auto& [name, indices] : mask.selected) model.parameter(name).train_entries(indices);
  for (const std::string& name : mask.fully_trainable) model.parameter(name).train();
}

}  // namespace vitune::peft
