// Reading a model's preprocessing from its metadata and the files beside it.
#include "nn/preprocessing.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "engine/error.h"

namespace vitune::nn {

namespace {

using Json = nlohmann::json;

// What one place says, each field unset when it does not say.
struct Partial {
  std::string label;  // the file (and entry) it came from, for sources and errors
  std::optional<std::vector<float>> mean, std;
  std::optional<double> crop_pct;
  std::optional<data::CropMode> crop_mode;
  std::optional<data::Interpolation> interpolation;
};

std::vector<float> channel_values(const Json& value, const std::string& label, const char* key, bool positive) {
  const bool shape_ok = value.is_array() && (value.size() == 1 || value.size() == 3);
  std::vector<float> out;
  for (size_t i = 0; shape_ok && i < value.size(); ++i) {
    if (!value[i].is_number() || !std::isfinite(value[i].get<double>()) || (positive && value[i].get<double>() <= 0)) {
      break;
    }
    out.push_back(value[i].get<float>());
  }
  VITUNE_CHECK(shape_ok && out.size() == value.size(), label, ": field '", key, "' must be a list of 1 or 3 ",
               positive ? "positive " : "", "numbers, got ", value.dump());
  return out;
}

data::Interpolation interpolation_named(const Json& value, const std::string& label, const char* key) {
  const std::string name = value.is_string() ? value.get<std::string>() : "";
  if (name == "bilinear") return data::Interpolation::Bilinear;
  if (name == "bicubic") return data::Interpolation::Bicubic;
  throw Error(cat(label, ": field '", key, "' is ", value.dump(),
                  "; vitune resizes with \"bilinear\" or \"bicubic\" (override with --interpolation)"));
}

// timm's keys: mean, std, crop_pct, crop_mode, interpolation.
Partial from_timm(const Json& j, const std::string& label, const std::set<std::string>& given) {
  Partial p;
  p.label = label;
  auto wanted = [&](const char* key) { return j.contains(key) && !given.count(key) && !j[key].is_null(); };
  if (wanted("mean")) p.mean = channel_values(j["mean"], label, "mean", false);
  if (wanted("std")) p.std = channel_values(j["std"], label, "std", true);
  if (wanted("crop_pct")) {
    const Json& v = j["crop_pct"];
    VITUNE_CHECK(v.is_number() && v.get<double>() > 0 && v.get<double>() <= 1, label,
                 ": field 'crop_pct' must be a number in (0, 1], got ", v.dump());
    p.crop_pct = v.get<double>();
  }
  if (wanted("crop_mode")) {
    const Json& v = j["crop_mode"];
    const std::string mode = v.is_string() ? v.get<std::string>() : "";
    VITUNE_CHECK(mode == "center" || mode == "squash", label, ": field 'crop_mode' is ", v.dump(),
                 "; vitune crops \"center\" or \"squash\"");
    p.crop_mode = mode == "center" ? data::CropMode::Centre : data::CropMode::Squash;
  }
  if (wanted("interpolation")) p.interpolation = interpolation_named(j["interpolation"], label, "interpolation");
  return p;
}

// A Hugging Face size: an integer, or a square {"height", "width"}, or
// {"shortest_edge"} (sets `shortest`).
int hf_size(const Json& v, const std::string& label, const char* key, bool* shortest) {
  auto positive = [](const Json& n) { return n.is_number_integer() && n.get<int64_t>() > 0; };
  if (positive(v)) return v.get<int>();
  if (v.is_object() && v.contains("shortest_edge") && positive(v["shortest_edge"]) && shortest) {
    *shortest = true;
    return v["shortest_edge"].get<int>();
  }
  VITUNE_CHECK(v.is_object() && v.contains("height") && v.contains("width") && positive(v["height"]) &&
                   v["height"] == v["width"],
               label, ": field '", key, "' must be a positive integer or a square {\"height\": n, \"width\": n}",
               shortest ? " or {\"shortest_edge\": n}" : "", ", got ", v.dump());
  return v["height"].get<int>();
}

// Hugging Face's keys: image_mean, image_std, resample, size, crop_size, do_center_crop.
Partial from_hugging_face(const Json& j, const std::string& label, const std::set<std::string>& given) {
  Partial p;
  p.label = label;
  if (j.contains("image_mean") && !given.count("mean")) p.mean = channel_values(j["image_mean"], label, "image_mean", false);
  if (j.contains("image_std") && !given.count("std")) p.std = channel_values(j["image_std"], label, "image_std", true);
  if (j.contains("resample") && !given.count("interpolation")) {
    const Json& v = j["resample"];
    const int code = v.is_number_integer() ? v.get<int>() : -1;
    VITUNE_CHECK(code == 2 || code == 3, label, ": field 'resample' is ", v.dump(),
                 "; vitune resizes with PIL codes 2 (bilinear) or 3 (bicubic) (override with --interpolation)");
    p.interpolation = code == 2 ? data::Interpolation::Bilinear : data::Interpolation::Bicubic;
  }
  if (!j.contains("size") || (given.count("crop_pct") && given.count("crop_mode"))) return p;
  bool shortest = false;
  const int size = hf_size(j["size"], label, "size", &shortest);
  const bool crop = j.value("do_center_crop", j.contains("crop_size")) && j.contains("crop_size");
  const int crop_size = crop ? hf_size(j["crop_size"], label, "crop_size", nullptr) : size;
  VITUNE_CHECK(crop_size <= size, label, ": field 'crop_size' ", crop_size, " is larger than 'size' ", size);
  p.crop_mode = shortest ? data::CropMode::Centre : data::CropMode::Squash;
  p.crop_pct = double(crop_size) / double(size);
  return p;
}

Json parse_object(const std::string& text, const std::string& label) {
  Json j = Json::parse(text, nullptr, false);
  VITUNE_CHECK(j.is_object(), label, ": not a JSON object");
  return j;
}

// The JSON object in `file` when it exists.
std::optional<Json> read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_object(text.str(), file.string());
}

// Every place the preprocessing may be told, highest priority first.
std::vector<Partial> read_places(const std::string& weights_path, const std::map<std::string, std::string>& metadata,
                                 const std::set<std::string>& given) {
  std::vector<Partial> places;
  auto entry = metadata.find("pretrained_cfg");
  if (entry != metadata.end()) {
    const std::string label = weights_path + " (metadata pretrained_cfg)";
    places.push_back(from_timm(parse_object(entry->second, label), label, given));
  }
  const std::filesystem::path folder = std::filesystem::path(weights_path).parent_path();
  if (auto j = read_json_file(folder / "pretrained_cfg.json")) {
    places.push_back(from_timm(*j, (folder / "pretrained_cfg.json").string(), given));
  }
  if (auto j = read_json_file(folder / "config.json")) {
    const std::string file = (folder / "config.json").string();
    if (j->contains("pretrained_cfg") && (*j)["pretrained_cfg"].is_object()) {
      places.push_back(from_timm((*j)["pretrained_cfg"], file + " (pretrained_cfg)", given));
    } else {
      places.push_back(from_timm(*j, file, given));
    }
  }
  if (auto j = read_json_file(folder / "preprocessor_config.json")) {
    places.push_back(from_hugging_face(*j, (folder / "preprocessor_config.json").string(), given));
  }
  return places;
}

// The first place's value of a field into `field`, with its source.
template <class T, class Member>
void take_first(const std::vector<Partial>& places, Member member, const char* name, T& field,
                std::map<std::string, std::string>& sources) {
  for (const Partial& place : places) {
    if (place.*member) {
      field = *(place.*member);
      sources[name] = "from " + place.label;
      return;
    }
  }
}

}  // namespace

ModelPreprocessing default_preprocessing() {
  ModelPreprocessing out;
  for (const char* field : {"mean", "std", "crop_pct", "crop_mode", "interpolation"}) {
    out.sources[field] = "vitune default";
  }
  return out;
}

ModelPreprocessing read_preprocessing(const std::string& weights_path,
                                      const std::map<std::string, std::string>& metadata,
                                      const std::set<std::string>& given) {
  const std::vector<Partial> places = read_places(weights_path, metadata, given);
  ModelPreprocessing out = default_preprocessing();
  data::Preprocessing& v = out.values;
  take_first(places, &Partial::mean, "mean", v.normalization.mean, out.sources);
  take_first(places, &Partial::std, "std", v.normalization.std, out.sources);
  take_first(places, &Partial::crop_pct, "crop_pct", v.crop_pct, out.sources);
  take_first(places, &Partial::crop_mode, "crop_mode", v.crop_mode, out.sources);
  take_first(places, &Partial::interpolation, "interpolation", v.interpolation, out.sources);
  for (const std::string& field : given) out.sources.erase(field);
  return out;
}

std::string pretrained_cfg_json(const data::Preprocessing& p) {
  return Json{{"mean", p.normalization.mean},
              {"std", p.normalization.std},
              {"crop_pct", p.crop_pct},
              {"crop_mode", data::crop_mode_name(p.crop_mode)},
              {"interpolation", data::interpolation_name(p.interpolation)}}
      .dump();
}

}  // namespace vitune::nn
