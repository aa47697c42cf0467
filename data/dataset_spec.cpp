// Parsing dataset specs and writing them back in canonical form.
#include "data/dataset_spec.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "engine/error.h"

namespace vitune::data {

namespace {

const char* const kKinds[] = {"fashion-mnist", "idx",  "cifar10", "cifar100",
                              "folder",        "vtab", "fgvc"};
const char* const kKeys = "root, num_classes, classes, per_class, ratio, part, seed, limit";

[[noreturn]] void fail(const std::string& spec, const std::string& problem) {
  throw Error(cat("dataset spec \"", spec, "\": ", problem));
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// A decimal integer in [low, high], or fails naming the key.
int64_t parse_integer(const std::string& spec, const std::string& key, const std::string& value,
                      int64_t low, int64_t high) {
  int64_t result = 0;
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, result);
  if (value.empty() || error != std::errc() || stop != end || result < low || result > high) {
    fail(spec, cat(key, "=", value, ": expected an integer in [", low, ", ", high, "]"));
  }
  return result;
}

uint64_t parse_seed(const std::string& spec, const std::string& value) {
  uint64_t result = 0;
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, result);
  if (value.empty() || error != std::errc() || stop != end) {
    fail(spec, cat("seed=", value, ": expected a non-negative integer below 2^64"));
  }
  return result;
}

double parse_ratio(const std::string& spec, const std::string& value) {
  double result = 0;
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, result);
  if (value.empty() || error != std::errc() || stop != end || !(result > 0 && result <= 1)) {
    fail(spec, cat("ratio=", value, ": expected a number in (0, 1]"));
  }
  return result;
}

// "5-9", "3,1,7", "0-2,7": single classes and ascending ranges, in order.
std::vector<int64_t> parse_classes(const std::string& spec, const std::string& value) {
  constexpr int64_t kMaxClass = 1 << 20;
  std::vector<int64_t> classes;
  for (const std::string& item : split(value, ',')) {
    const size_t dash = item.find('-');
    if (dash == std::string::npos) {
      classes.push_back(parse_integer(spec, "classes", item, 0, kMaxClass));
      continue;
    }
    const int64_t first = parse_integer(spec, "classes", item.substr(0, dash), 0, kMaxClass);
    const int64_t last = parse_integer(spec, "classes", item.substr(dash + 1), 0, kMaxClass);
    if (last < first) fail(spec, cat("classes=", value, ": range ", item, " runs backwards"));
    for (int64_t c = first; c <= last; ++c) classes.push_back(c);
  }
  std::set<int64_t> seen;
  for (int64_t c : classes) {
    if (!seen.insert(c).second) {
      fail(spec, cat("classes=", value, ": class ", c, " is listed twice"));
    }
  }
  return classes;
}

std::string classes_text(const std::vector<int64_t>& classes) {
  std::string text;
  for (size_t i = 0; i < classes.size();) {
    size_t j = i;
    while (j + 1 < classes.size() && classes[j + 1] == classes[j] + 1) ++j;
    text += cat(text.empty() ? "" : ",", classes[i]);
    if (j > i) text += cat("-", classes[j]);
    i = j + 1;
  }
  return text;
}

// The shortest decimal that reads back as the same double.
std::string shortest(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace

DatasetSpec parse_dataset_spec(const std::string& text) {
  DatasetSpec spec;
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    fail(text,
         "expected <kind>:<location>[?<key>=<value>&...], with kind one of fashion-mnist, "
         "idx, cifar10, cifar100, folder, vtab, fgvc");
  }
  spec.kind = text.substr(0, colon);
  if (std::find(std::begin(kKinds), std::end(kKinds), spec.kind) == std::end(kKinds)) {
    fail(text, cat("unknown kind \"", spec.kind,
                   "\" (expected fashion-mnist, idx, cifar10, cifar100, folder, vtab or fgvc)"));
  }
  const size_t question = text.find('?', colon);
  spec.location = text.substr(
      colon + 1, question == std::string::npos ? std::string::npos : question - colon - 1);
  if (spec.location.empty()) {
    fail(text, spec.kind == "fashion-mnist"
                   ? "expected a split after \"fashion-mnist:\" (train or test)"
                   : cat("expected a path after \"", spec.kind, ":\""));
  }
  if (spec.kind == "fashion-mnist" && spec.location != "train" && spec.location != "test") {
    fail(text, cat("fashion-mnist split \"", spec.location, "\": expected train or test"));
  }
  if (question == std::string::npos) return spec;

  std::set<std::string> given;
  for (const std::string& option : split(text.substr(question + 1), '&')) {
    const size_t equals = option.find('=');
    if (equals == std::string::npos || equals == 0) {
      fail(text, cat("option \"", option, "\": expected key=value with key one of ", kKeys));
    }
    const std::string key = option.substr(0, equals);
    const std::string value = option.substr(equals + 1);
    if (!given.insert(key).second) fail(text, cat("key ", key, " is given twice"));
    if (key == "root") {
      if (spec.kind != "vtab" && spec.kind != "fgvc" && spec.kind != "fashion-mnist") {
        fail(text, cat("root= applies to fashion-mnist, vtab and fgvc, not ", spec.kind));
      }
      if (value.empty()) fail(text, "root=: expected a folder");
      spec.root = value;
    } else if (key == "num_classes") {
      spec.num_classes = int(parse_integer(text, key, value, 1, 1 << 30));
    } else if (key == "classes") {
      spec.classes = parse_classes(text, value);
    } else if (key == "per_class") {
      spec.per_class = parse_integer(text, key, value, 1, int64_t(1) << 40);
    } else if (key == "ratio") {
      spec.ratio = parse_ratio(text, value);
    } else if (key == "part") {
      const size_t separator = value.find(':');
      if (separator == std::string::npos) {
        fail(text, cat("part=", value, ": expected begin:end, ranks within each class"));
      }
      spec.part_begin = parse_integer(text, key, value.substr(0, separator), 0, int64_t(1) << 40);
      spec.part_end = parse_integer(text, key, value.substr(separator + 1), 0, int64_t(1) << 40);
      if (spec.part_end <= spec.part_begin) {
        fail(text, cat("part=", value, ": expected begin < end"));
      }
    } else if (key == "seed") {
      spec.seed = parse_seed(text, value);
    } else if (key == "limit") {
      spec.limit = parse_integer(text, key, value, 1, int64_t(1) << 40);
    } else {
      fail(text, cat("unknown key \"", key, "\" (expected one of ", kKeys, ")"));
    }
  }
  if (spec.per_class >= 0 && spec.ratio >= 0) fail(text, "give per_class or ratio, not both");
  if (spec.per_class >= 0 && spec.part_end > spec.per_class) {
    fail(text, cat("part=", spec.part_begin, ":", spec.part_end,
                   " reaches past per_class=", spec.per_class));
  }
  return spec;
}

std::string DatasetSpec::canonical() const {
  std::vector<std::string> options;
  if (!root.empty()) options.push_back("root=" + root);
  if (num_classes > 0) options.push_back(cat("num_classes=", num_classes));
  if (!classes.empty()) options.push_back("classes=" + classes_text(classes));
  if (per_class >= 0) options.push_back(cat("per_class=", per_class));
  if (ratio >= 0) options.push_back("ratio=" + shortest(ratio));
  if (part_end >= 0) options.push_back(cat("part=", part_begin, ":", part_end));
  if (stratified()) options.push_back(cat("seed=", seed));
  if (limit >= 0) options.push_back(cat("limit=", limit));
  std::string text = kind + ":" + location;
  for (size_t i = 0; i < options.size(); ++i) text += (i == 0 ? "?" : "&") + options[i];
  return text;
}

}  // namespace vitune::data
