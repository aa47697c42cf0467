// Opening the dataset a spec names (see dataset_spec.h and data/README.md): the files
// it points at, then the class subset, the stratified subset and the limit, in that
// order.
#pragma once

#include <memory>
#include <string>

#include "data/dataset.h"
#include "data/dataset_spec.h"

namespace vitune::data {

// Where the Debian package dataset-fashion-mnist installs Fashion-MNIST.
constexpr const char* kFashionMnistFolder = "/usr/share/datasets/fashion-mnist";

std::shared_ptr<const Dataset> open_dataset(const DatasetSpec& spec);
std::shared_ptr<const Dataset> open_dataset(const std::string& spec);

}  // namespace vitune::data
