// Reading config.json beside a checkpoint.
#include "nn/config_json.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"

namespace vitune::nn {

namespace {

using Json = nlohmann::json;

void read_int(const Json& j, const char* key, int& field, const std::string& path) {
  if (!j.contains(key)) return;
  VITUNE_CHECK(j[key].is_number_integer() && j[key].get<int64_t>() > 0 && j[key].get<int64_t>() <= 1 << 30, path,
               ": field '", key, "' must be a positive integer, got ", j[key].dump());
  field = j[key].get<int>();
}

// Hugging Face writes a size as one integer or as [height, width]; vitune runs square
// images and patches, so a pair must repeat one positive integer.
void read_square_size(const Json& j, const char* key, int& field, const std::string& path) {
  if (!j.contains(key)) return;
  const Json& value = j[key];
  const bool pair = value.is_array() && value.size() == 2 && value[0].is_number_integer() &&
                    value[1].is_number_integer() && value[0].get<int64_t>() > 0 && value[1].get<int64_t>() > 0;
  if (!pair) return read_int(j, key, field, path);
  VITUNE_CHECK(value[0] == value[1], path, ": field '", key, "' is ", value.dump(),
               " (height, width); vitune runs square images and patches only: expected one integer or [n, n]");
  field = value[0].get<int>();
}

// gelu and quick_gelu under the names Hugging Face and timm give them.
std::string activation(const Json& value, const char* key, const std::string& path) {
  std::string name = value.is_string() ? value.get<std::string>() : "";
  if (name == "gelu" || name == "gelu_python") return "gelu";
  if (name == "quick_gelu" || name == "quickgelu") return "quick_gelu";
  throw Error(cat(path, ": field '", key, "' is ", value.dump(),
                  "; vitune runs \"gelu\" (exact) and \"quick_gelu\" only"));
}

// timm's pooling: "token", "avg" or "" (none), read as "token", "avg" or "none".
std::string global_pool(const Json& value, const char* key, const std::string& path) {
  const std::string pool = value.is_string() ? value.get<std::string>() : "?";
  VITUNE_CHECK(pool == "token" || pool == "avg" || pool.empty(), path, ": field '", key,
               "' must be \"token\", \"avg\" or \"\" (no pooling), got ", value.dump());
  return pool.empty() ? "none" : pool;
}

}  // namespace

ConfigJson read_config_json_beside(const std::string& weights_path) {
  ConfigJson out;
  std::filesystem::path candidate = std::filesystem::path(weights_path).parent_path() / "config.json";
  std::ifstream file(candidate);
  if (!file) return out;
  out.path = candidate.string();
  std::stringstream text;
  text << file.rdbuf();
  Json j = Json::parse(text.str(), nullptr, false);
  VITUNE_CHECK(j.is_object(), out.path, ": not a JSON object");
  if (j.contains("vision_config") && j["vision_config"].is_object()) j = j["vision_config"];
  read_int(j, "num_attention_heads", out.heads, out.path);
  read_square_size(j, "image_size", out.image_size, out.path);
  read_square_size(j, "patch_size", out.patch_size, out.path);
  if (j.contains("hidden_act")) out.act = activation(j["hidden_act"], "hidden_act", out.path);
  if (j.contains("layer_norm_eps")) {
    VITUNE_CHECK(j["layer_norm_eps"].is_number(), out.path, ": field 'layer_norm_eps' must be a number, got ",
                 j["layer_norm_eps"].dump());
    out.ln_eps = j["layer_norm_eps"].get<double>();
  }
  // timm's hub config names the pooling at the top level; model_args, when it repeats
  // it, is what the model was built with.
  if (j.contains("global_pool")) out.global_pool = global_pool(j["global_pool"], "global_pool", out.path);
  if (j.contains("model_args") && j["model_args"].is_object()) {
    const Json& args = j["model_args"];
    read_int(args, "num_heads", out.heads, out.path);
    if (args.contains("act_layer")) out.act = activation(args["act_layer"], "model_args.act_layer", out.path);
    if (args.contains("global_pool")) {
      out.global_pool = global_pool(args["global_pool"], "model_args.global_pool", out.path);
    }
  }
  return out;
}

}  // namespace vitune::nn
