// One training run from the command line, shared by pretrain and finetune: opens the
// data, trains with a progress bar, evaluates, saves the model (LoRA adapters merged
// into the weights first) and writes the results, with what lets runs of different
// methods compare side by side: trainable parameters, peak memory, mean step time and
// the precision of the products (fp32, TF32, bf16 autocast).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/device_options.h"
#include "cli/run_options.h"
#include "nn/vit.h"

namespace vitune::cli {

struct RunOptions {
  DataOptions data;
  OptimOptions optim;
  OutputOptions output;
  DeviceOptions device;
  bool bf16 = false;  // --bf16: bf16 autocast for the training run (engine/autocast.h)

  // Registers --bf16. Only the training commands (pretrain, finetune) take it; commands
  // that do not train do not offer it, so giving it to them is an unknown-flag error.
  void add_bf16_flag(CLI::App& command);
  // "fp32", "tf32" or "bf16-autocast": the results' "precision" field. With --bf16 and
  // --tf32 both, it is "bf16-autocast" (and "tf32": true says the rest ran in TF32).
  std::string precision() const;
};

// A training run's outputs (--out, --checkpoint, --log, --results) checked and their
// folders locked before any work; with --resume they continue the run and may exist.
// `inputs` are the files the run reads.
CommandOutputs check_training_outputs(const RunOptions& options, const std::vector<std::string>& inputs);

// `results` comes in with the command's own fields and goes out with the rest. The model
// was built on --device (RunOptions::device.select()) and trains there, fed as `input`
// says; the saved model carries that preprocessing in its pretrained_cfg metadata.
void train_and_report(const std::string& command, nn::VisionTransformer& model, const ModelInput& input,
                      const RunOptions& options, nlohmann::ordered_json results);

int64_t trainable_parameter_count(const nn::VisionTransformer& model);

// Mean seconds per optimizer step: the intervals between consecutive step ends (the
// first from the start of training), leaving out each interval that also held an
// evaluation or a checkpoint write, so the figure is training work alone.
class StepTimer {
 public:
  StepTimer(const nn::TrainConfig& config, bool evaluating);
  // Called when `step` steps are done.
  void step_done(int64_t step);
  double mean_seconds() const;  // 0 when no interval was timed
  int64_t timed_steps() const { return timed_; }

 private:
  // Whether the trainer evaluates or writes a checkpoint after step `step`.
  bool extra_work_after(int64_t step) const;

  int64_t eval_every_, checkpoint_every_;
  bool evaluating_, checkpointing_;
  std::chrono::steady_clock::time_point last_;
  double total_seconds_ = 0;
  int64_t timed_ = 0;
  int64_t last_step_ = -1;
};

}  // namespace vitune::cli
