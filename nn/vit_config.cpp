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
  return j.dump();
}

VitConfig VitConfig::from_json(const std::string& text, const std::string& source, VitConfig base) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  VITUNE_CHECK(j.is_object(), source, ": vit_config is not a JSON object: ", text);
  auto read_int = [&](const char* key, int& field) {
    if (!j.contains(key)) return;
    VITUNE_CHECK(j[key].is_number_integer(), source, ": vit_config field '", key,
                 "' must be an integer, got ", j[key].dump());
    field = j[key].get<int>();
  };
  auto read_number = [&](const char* key, double& field) {
    if (!j.contains(key)) return;
    VITUNE_CHECK(j[key].is_number(), source, ": vit_config field '", key, "' must be a number, got ",
                 j[key].dump());
    field = j[key].get<double>();
  };
  static const char* known[] = {"img_size", "patch", "in_chans", "dim", "depth",
                                "heads", "mlp_ratio", "num_classes", "ln_eps"};
  for (auto& item : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || item.key() == k;
    VITUNE_CHECK(ok, source, ": vit_config has unknown field '", item.key(), "'");
  }
  read_int("img_size", base.img_size);
  read_int("patch", base.patch);
  read_int("in_chans", base.in_chans);
  read_int("dim", base.dim);
  read_int("depth", base.depth);
  read_int("heads", base.heads);
  read_number("mlp_ratio", base.mlp_ratio);
  read_int("num_classes", base.num_classes);
  read_number("ln_eps", base.ln_eps);
  return base;
}

}  // namespace vitune::nn
