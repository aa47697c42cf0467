// The dataset spec: one string that names a dataset and the subset of it to use, the
// same for every command, e.g.
//   fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0
// Grammar and meaning are documented in data/README.md. Parsing checks everything that
// can be checked without touching the disk; canonical() writes the spec back in a fixed
// form (keys in a fixed order, defaults that do not change the data left out), and
// parsing the canonical form gives it back unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vitune::data {

struct DatasetSpec {
  std::string kind;      // fashion-mnist, idx, cifar10, cifar100, folder, vtab, fgvc
  std::string location;  // the text after "kind:" up to "?"
  std::string root;      // root=: the folder image paths are relative to (or the IDX folder)
  int num_classes = 0;   // num_classes=: 0 means the largest label + 1
  std::vector<int64_t> classes;  // classes=: kept classes, in their new label order
  int64_t per_class = -1;        // per_class=
  double ratio = -1;             // ratio=
  int64_t part_begin = 0;        // part=begin:end (part_end -1: not given)
  int64_t part_end = -1;
  uint64_t seed = 0;   // seed=
  int64_t limit = -1;  // limit=

  // True when per_class, ratio or part select a seeded stratified subset.
  bool stratified() const { return per_class >= 0 || ratio >= 0 || part_end >= 0; }
  std::string canonical() const;
};

// Throws vitune::Error naming the spec, the bad key or value and what was expected.
DatasetSpec parse_dataset_spec(const std::string& text);

}  // namespace vitune::data
