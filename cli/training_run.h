// One training run from the command line, shared by pretrain and finetune: opens the
// data, trains with a progress bar, evaluates, saves the model and writes the results.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cli/run_options.h"
#include "nn/vit.h"

namespace vitune::cli {

struct RunOptions {
  DataOptions data;
  OptimOptions optim;
  OutputOptions output;
};

// `results` comes in with the command's own fields and goes out with the rest.
void train_and_report(const std::string& command, nn::VisionTransformer& model, const RunOptions& options,
                      nlohmann::ordered_json results);

int64_t trainable_parameter_count(const nn::VisionTransformer& model);

}  // namespace vitune::cli
