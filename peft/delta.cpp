// Making, writing, reading and applying weight deltas.
#include "peft/delta.h"

#include <cstdio>
#include <cstring>

#include "engine/ops.h"
#include "nn/safetensors.h"
#include "peft/model_hash.h"

namespace vitune::peft {
namespace {

constexpr const char* kFormat = "vitune-delta";
constexpr const char* kFormatVersion = "1";
constexpr const char* kIndicesPrefix = "indices:";
constexpr const char* kValuesPrefix = "values:";
constexpr const char* kWholePrefix = "whole:";

bool is_head(const std::string& name) { return name.rfind("head.", 0) == 0; }

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// FNV-1a over the head's names, shapes and value bits: the part backbone_hash leaves
// out, checked only when the delta stores head entries relative to the base's head.
std::string head_hash(const nn::VisionTransformer& model) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&h](const void* data, size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  };
  for (const nn::Parameter* p : model.parameters()) {
    if (!is_head(p->name())) continue;
    add(p->name().data(), p->name().size() + 1);
    for (int64_t d : p->shape()) add(&d, sizeof d);
    const Tensor host = p->value().to(Device::cpu());
    add(host.raw(), host.nbytes());
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

void check_f32(const nn::Parameter& p, const char* which) {
  VITUNE_CHECK(p.value().dtype() == DType::F32, "delta: the ", which, " model's '", p.name(), "' is ",
               p.value().str(), ", expected f32");
}

// The entries of `now` whose bits differ from `before` (same shape, f32, any devices),
// compared on the host.
ModelDelta::Sparse changed_entries(const std::string& name, const Tensor& before_on_any, const Tensor& now_on_any) {
  const Tensor before = before_on_any.to(Device::cpu()), now = now_on_any.to(Device::cpu());
  const auto* a = static_cast<const uint32_t*>(before.raw());
  const auto* b = static_cast<const uint32_t*>(now.raw());
  std::vector<int64_t> indices;
  std::vector<float> values;
  for (int64_t i = 0; i < now.numel(); ++i) {
    if (a[i] == b[i]) continue;
    indices.push_back(i);
    values.push_back(now.data<float>()[i]);
  }
  const int64_t n = int64_t(indices.size());
  return {name, Tensor::from_vector<int64_t>({n}, indices, Device::cpu()), Tensor::from_vector<float>({n}, values, Device::cpu())};
}

const std::string& required_metadata(const std::map<std::string, std::string>& metadata, const std::string& key,
                                     const std::string& source) {
  auto it = metadata.find(key);
  VITUNE_CHECK(it != metadata.end(), source, ": the delta's metadata has no '", key, "'");
  return it->second;
}

int64_t metadata_count(const std::map<std::string, std::string>& metadata, const std::string& key,
                       const std::string& source) {
  const std::string& text = required_metadata(metadata, key, source);
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  VITUNE_CHECK(!text.empty() && *end == '\0' && value >= 0, source, ": metadata '", key,
               "' must be a non-negative integer, got '", text, "'");
  return value;
}

void check_sorted_unique(const std::string& source, const std::string& name, const Tensor& indices_on_any) {
  const Tensor indices = indices_on_any.to(Device::cpu());
  const int64_t* index = indices.data<int64_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    VITUNE_CHECK(index[i] >= 0, source, ": tensor '", kIndicesPrefix, name, "' has a negative index ", index[i],
                 " at position ", i);
    VITUNE_CHECK(i == 0 || index[i] > index[i - 1], source, ": tensor '", kIndicesPrefix, name,
                 "' is not sorted and unique at position ", i, " (", index[i - 1], " then ", index[i], ")");
  }
}

}  // namespace

int64_t ModelDelta::changed_entries() const {
  int64_t n = 0;
  for (const Sparse& s : sparse) n += s.indices.numel();
  return n;
}

int64_t ModelDelta::whole_entries() const {
  int64_t n = 0;
  for (const auto& [name, value] : whole) n += value.numel();
  return n;
}

ModelDelta make_delta(const nn::VisionTransformer& base, const nn::VisionTransformer& finetuned) {
  for (const nn::Parameter* b : base.parameters()) {
    VITUNE_CHECK(finetuned.find_parameter(b->name()) != nullptr, "delta: the finetuned model has no '", b->name(),
                 "', which the base has; a delta cannot remove a tensor");
    check_f32(*b, "base");
  }
  ModelDelta delta;
  for (const nn::Parameter* p : finetuned.parameters()) {
    check_f32(*p, "finetuned");
    const nn::Parameter* b = base.find_parameter(p->name());
    if (b == nullptr || b->shape() != p->shape()) {
      delta.whole.emplace_back(p->name(), p->value().to(Device::cpu()).clone());
      continue;
    }
    ModelDelta::Sparse changed = changed_entries(p->name(), b->value(), p->value());
    if (changed.indices.numel() > 0) delta.sparse.push_back(std::move(changed));
  }
  delta.metadata = {{"format", kFormat},
                    {"format_version", kFormatVersion},
                    {"base_hash", backbone_hash(base)},
                    {"base_head_hash", head_hash(base)},
                    {"finetuned_hash", backbone_hash(finetuned)},
                    {"vit_config", finetuned.config().to_json()},
                    {"changed_entries", std::to_string(delta.changed_entries())},
                    {"whole_entries", std::to_string(delta.whole_entries())},
                    {"sparse_tensors", std::to_string(delta.sparse.size())},
                    {"whole_tensors", std::to_string(delta.whole.size())},
                    {"total_parameters", std::to_string(finetuned.parameter_count())}};
  return delta;
}

void save_delta(const std::string& path, const ModelDelta& delta) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const ModelDelta::Sparse& s : delta.sparse) {
    tensors.emplace_back(kIndicesPrefix + s.name, s.indices);
    tensors.emplace_back(kValuesPrefix + s.name, s.values);
  }
  for (const auto& [name, value] : delta.whole) tensors.emplace_back(kWholePrefix + name, value);
  nn::write_safetensors(path, tensors, delta.metadata);
}

ModelDelta load_delta(const std::string& path) {
  nn::SafetensorsFile file = nn::read_safetensors(path);
  ModelDelta delta;
  delta.metadata = file.metadata;
  const std::string& format = required_metadata(file.metadata, "format", path);
  VITUNE_CHECK(format == kFormat, path, ": not a vitune delta (metadata format '", format, "', expected '", kFormat,
               "')");
  const std::string& version = required_metadata(file.metadata, "format_version", path);
  VITUNE_CHECK(version == kFormatVersion, path, ": delta format version ", version, " is not supported (expected ",
               kFormatVersion, ")");
  for (const char* key : {"base_hash", "base_head_hash", "finetuned_hash", "vit_config"}) {
    required_metadata(file.metadata, key, path);
  }
  for (const std::string& name : file.names) {
    const Tensor& t = file.tensors.at(name);
    if (starts_with(name, kWholePrefix)) {
      VITUNE_CHECK(t.dtype() == DType::F32, path, ": tensor '", name, "' is ", t.str(), ", expected f32");
      delta.whole.emplace_back(name.substr(std::strlen(kWholePrefix)), t);
    } else if (starts_with(name, kIndicesPrefix)) {
      const std::string param = name.substr(std::strlen(kIndicesPrefix));
      VITUNE_CHECK(t.dtype() == DType::I64 && t.ndim() == 1, path, ": tensor '", name, "' is ", t.str(),
                   ", expected a 1-D i64 index list");
      check_sorted_unique(path, param, t);
      auto values = file.tensors.find(kValuesPrefix + param);
      VITUNE_CHECK(values != file.tensors.end(), path, ": tensor '", name, "' has no '", kValuesPrefix, param, "'");
      const Tensor& v = values->second;
      VITUNE_CHECK(v.dtype() == DType::F32 && v.ndim() == 1 && v.numel() == t.numel(), path, ": tensor '",
                   kValuesPrefix, param, "' is ", v.str(), ", expected f32[", t.numel(), "] to match its indices");
      delta.sparse.push_back({param, t, v});
    } else {
      VITUNE_CHECK(starts_with(name, kValuesPrefix) &&
                       file.tensors.count(kIndicesPrefix + name.substr(std::strlen(kValuesPrefix))),
                   path, ": tensor '", name, "' is neither 'indices:<name>' with 'values:<name>' nor 'whole:<name>'");
    }
  }
  VITUNE_CHECK(metadata_count(file.metadata, "changed_entries", path) == delta.changed_entries() &&
                   metadata_count(file.metadata, "whole_entries", path) == delta.whole_entries(),
               path, ": the metadata's counts (", file.metadata.at("changed_entries"), " changed, ",
               file.metadata.at("whole_entries"), " whole) do not match the tensors (", delta.changed_entries(),
               " changed, ", delta.whole_entries(), " whole)");
  return delta;
}

std::unique_ptr<nn::VisionTransformer> apply_delta(const nn::VisionTransformer& base, const ModelDelta& delta,
                                                   const std::string& source) {
  const std::string& expected_hash = required_metadata(delta.metadata, "base_hash", source);
  const std::string base_hash = backbone_hash(base);
  VITUNE_CHECK(expected_hash == base_hash, source, ": the delta was made against a base with backbone hash ",
               expected_hash, ", but this base's backbone hash is ", base_hash);
  for (const ModelDelta::Sparse& s : delta.sparse) {
    if (!is_head(s.name)) continue;
    const std::string& expected_head = required_metadata(delta.metadata, "base_head_hash", source);
    VITUNE_CHECK(expected_head == head_hash(base), source, ": the delta changes entries of the base's head, but this ",
                 "base's head differs from the one it was made against (head hash ", head_hash(base), ", expected ",
                 expected_head, ")");
    break;
  }
  nn::VitConfig config =
      nn::VitConfig::from_json(required_metadata(delta.metadata, "vit_config", source), source, base.config());
  // The model is rebuilt on the host (the delta's tensors are there) and moved to the
  // base's device at the end.
  auto model = std::make_unique<nn::VisionTransformer>(config, Device::cpu());
  std::map<std::string, const Tensor*> whole;
  for (const auto& [name, value] : delta.whole) {
    VITUNE_CHECK(whole.emplace(name, &value).second, source, ": '", name, "' is stored whole twice");
  }
  for (nn::Parameter* p : model->parameters()) {
    auto w = whole.find(p->name());
    if (w != whole.end()) {
      VITUNE_CHECK(w->second->shape() == p->shape() && w->second->dtype() == DType::F32, source, ": tensor '",
                   kWholePrefix, p->name(), "' is ", w->second->str(), ", expected f32", shape_str(p->shape()));
      p->mutable_value().copy_from(*w->second);
      whole.erase(w);
      continue;
    }
    const nn::Parameter* b = base.find_parameter(p->name());
    VITUNE_CHECK(b != nullptr && b->shape() == p->shape(), source, ": the finetuned model's '", p->name(), "' ",
                 shape_str(p->shape()), " is neither stored whole in the delta nor in the base",
                 b ? " with that shape" : "");
    p->mutable_value().copy_from(b->value());
  }
  VITUNE_CHECK(whole.empty(), source, ": tensor '", kWholePrefix, whole.empty() ? "" : whole.begin()->first,
               "' is not a parameter of the model the delta describes");
  std::map<std::string, bool> seen;
  for (const ModelDelta::Sparse& s : delta.sparse) {
    nn::Parameter* p = model->find_parameter(s.name);
    VITUNE_CHECK(p != nullptr, source, ": tensor '", kIndicesPrefix, s.name,
                 "' names no parameter of the model the delta describes");
    VITUNE_CHECK(!seen[s.name], source, ": '", s.name, "' has two index lists");
    seen[s.name] = true;
    VITUNE_CHECK(base.find_parameter(s.name) != nullptr, source, ": '", s.name,
                 "' has changed entries but the base has no such tensor");
    const Tensor indices = s.indices.to(Device::cpu());
    const int64_t last = indices.numel() > 0 ? indices.data<int64_t>()[indices.numel() - 1] : -1;
    VITUNE_CHECK(last < p->numel(), source, ": tensor '", kIndicesPrefix, s.name, "' holds index ", last,
                 ", beyond the ", p->numel(), " entries of ", shape_str(p->shape()));
    check_sorted_unique(source, s.name, indices);
    Tensor flat = p->mutable_value().reshape({-1});
    ops::scatter(flat, indices, s.values.to(Device::cpu()));
  }
  const std::string& expected_result = required_metadata(delta.metadata, "finetuned_hash", source);
  VITUNE_CHECK(backbone_hash(*model) == expected_result, source, ": the rebuilt model's backbone hash ",
               backbone_hash(*model), " differs from the finetuned model's ", expected_result);
  model->to(base.device());
  return model;
}

}  // namespace vitune::peft
