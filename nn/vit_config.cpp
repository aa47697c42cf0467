// Validation and JSON form of VitConfig (the safetensors `vit_config` metadata entry).
#include "nn/vit_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace vitune::nn {

int VitConfig::hidden() const { return int(std::lround(dim * mlp_ratio)); }

void VitConfig::validate(const std::string& source) const {
  auto require = [&](bool ok, const char* field, const std::string& expected) {
    VITUNE_CHECK(ok, source, ": ", field, " must be ", expected);
  };
  require(patch >= 1 && patch <= 1024, "patch", "in [1, 1024]");
  require(img_size >= patch && img_size <= 16384 && img_size % patch == 0, "img_size",
          "a multiple of patch (" + std::to_string(patch) + ") up to 16384");
  require(in_chans >= 1 && in_chans <= 64, "in_chans", "in [1, 64]");
  require(dim >= 1 && dim <= 65536, "dim", "in [1, 65536]");
  require(depth >= 0 && depth <= 1024, "depth", "in [0, 1024]");
  require(heads >= 1 && dim % heads == 0, "heads",
          "at least 1 and divide dim (" + std::to_string(dim) + ")");
  require(mlp_ratio > 0 && std::fabs(dim * mlp_ratio - hidden()) < 1e-6, "mlp_ratio",
          "positive with dim * mlp_ratio a whole number");
  require(num_classes >= 0 && num_classes <= 1000000, "num_classes", "in [0, 1000000]");
  require(ln_eps > 0 && ln_eps < 1, "ln_eps", "in (0, 1)");
  require(reg_tokens >= 0 && reg_tokens <= 64, "reg_tokens", "in [0, 64]");
  require(global_pool == "token" || global_pool == "avg" || global_pool == "none", "global_pool",
          "\"token\", \"avg\" or \"none\"");
  require(global_pool != "token" || class_token, "global_pool",
          "\"avg\" when there is no class token (token pooling reads the class token)");
  require(!dist_token || (class_token && global_pool == "token"), "dist_token",
          "false unless class_token is true and global_pool is \"token\" (DeiT distilled)");
  require(init_values >= 0 && init_values < 1e3, "init_values", "in [0, 1000) (0: no LayerScale)");
  require(act == "gelu" || act == "quick_gelu", "act", "\"gelu\" or \"quick_gelu\"");
}

std::string VitConfig::to_json() const {
  nlohmann::ordered_json j;
  j["img_size"] = img_size;
  j["patch"] = patch;
  j["in_chans"] = in_chans;
  j["dim"] = dim;
  j["depth"] = depth;
  j["heads"] = heads;
  j["mlp_ratio"] = mlp_ratio;
  j["num_classes"] = num_classes;
  j["ln_eps"] = ln_eps;
  j["class_token"] = class_token;
  j["reg_tokens"] = reg_tokens;
  j["dist_token"] = dist_token;
  j["no_embed_class"] = no_embed_class;
  j["global_pool"] = global_pool;
  j["fc_norm"] = fc_norm;
  j["qkv_bias"] = qkv_bias;
  j["qk_norm"] = qk_norm;
  j["init_values"] = init_values;
  j["pre_norm"] = pre_norm;
  j["act"] = act;
  j["head_bias"] = head_bias;
  return j.dump();
}

VitConfig VitConfig::from_json(const std::string& text, const std::string& source, VitConfig base) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  VITUNE_CHECK(j.is_object(), source, ": vit_config is not a JSON object: ", text);
  // Each field's reader, by name: present fields must have the field's JSON type.
  auto typed = [&](const char* key, bool ok, const char* expected) {
    VITUNE_CHECK(ok, source, ": vit_config field '", key, "' must be ", expected, ", got ", j[key].dump());
  };
  auto read_int = [&](const char* key, int& field) {
    typed(key, j[key].is_number_integer(), "an integer");
    field = j[key].get<int>();
  };
  auto read_number = [&](const char* key, double& field) {
    typed(key, j[key].is_number(), "a number");
    field = j[key].get<double>();
  };
  auto read_bool = [&](const char* key, bool& field) {
    typed(key, j[key].is_boolean(), "true or false");
    field = j[key].get<bool>();
  };
  auto read_string = [&](const char* key, std::string& field) {
    typed(key, j[key].is_string(), "a string");
    field = j[key].get<std::string>();
  };
  for (auto& item : j.items()) {
    const std::string& k = item.key();
    const char* key = k.c_str();
    if (k == "img_size") read_int(key, base.img_size);
    else if (k == "patch") read_int(key, base.patch);
    else if (k == "in_chans") read_int(key, base.in_chans);
    else if (k == "dim") read_int(key, base.dim);
    else if (k == "depth") read_int(key, base.depth);
    else if (k == "heads") read_int(key, base.heads);
    else if (k == "mlp_ratio") read_number(key, base.mlp_ratio);
    else if (k == "num_classes") read_int(key, base.num_classes);
    else if (k == "ln_eps") read_number(key, base.ln_eps);
    else if (k == "class_token") read_bool(key, base.class_token);
    else if (k == "reg_tokens") read_int(key, base.reg_tokens);
    else if (k == "dist_token") read_bool(key, base.dist_token);
    else if (k == "no_embed_class") read_bool(key, base.no_embed_class);
    else if (k == "global_pool") read_string(key, base.global_pool);
    else if (k == "fc_norm") read_bool(key, base.fc_norm);
    else if (k == "qkv_bias") read_bool(key, base.qkv_bias);
    else if (k == "qk_norm") read_bool(key, base.qk_norm);
    else if (k == "init_values") read_number(key, base.init_values);
    else if (k == "pre_norm") read_bool(key, base.pre_norm);
    else if (k == "act") read_string(key, base.act);
    else if (k == "head_bias") read_bool(key, base.head_bias);
    else throw Error(cat(source, ": vit_config has unknown field '", k, "'"));
  }
  return base;
}

}  // namespace vitune::nn
