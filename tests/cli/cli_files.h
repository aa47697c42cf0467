// What the CLI tests read around a vitune run: whether the Fashion-MNIST package is
// installed (the tests that use it skip otherwise), and a results JSON file.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace vitune::testing {

// Both the training and the test images of the dataset-fashion-mnist package.
inline bool fashion_mnist_installed() {
  return std::ifstream("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz").good() &&
         std::ifstream("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").good();
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace vitune::testing
