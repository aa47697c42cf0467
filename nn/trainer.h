// The training loop: batches from a data::Loader, forward, cross-entropy (optionally
// label-smoothed), backward, gradient clipping, an optimizer step at the scheduled
// learning rate; a JSON line per logged step (loss, accuracy, learning rate, gradient
// norms per component type and per layer); evaluation with top-1 and top-5 accuracy;
// checkpoints written atomically at intervals that resume bit-exactly (weights,
// optimizer state, step and the loader's position). A non-finite loss stops the run
// (and an evaluation) with a clear message naming the first parameter that holds a NaN
// or infinity, and leaves the last good checkpoint in place. Optionally under bf16
// autocast (TrainConfig::bf16_autocast).
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "data/loader.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "nn/vit.h"

namespace vitune::nn {

enum class OptimizerKind { Sgd, AdamW };
OptimizerKind parse_optimizer_kind(const std::string& text, const std::string& flag);

struct TrainConfig {
  OptimizerKind optimizer = OptimizerKind::Sgd;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  Schedule schedule;            // its base_lr is the learning rate
  double clip_norm = 0.0;       // 0: no clipping
  double label_smoothing = 0.0;
  int64_t steps = 100;          // optimizer steps in all
  int64_t log_every = 10;
  int64_t eval_every = 0;       // 0: evaluate only at the end
  int64_t checkpoint_every = 0; // 0: only at the end (when a path is given)
  std::string checkpoint_path;  // "" : no checkpoints
  std::string log_path;         // "" : no JSON lines
  // bf16 autocast (engine/autocast.h) for the run: every training step's forward, loss
  // and backward, and the evaluations the run makes. Weights, gradients and optimizer
  // state stay fp32. False leaves the process-wide setting as it is.
  bool bf16_autocast = false;
};

struct EvalResult {
  double top1 = 0, top5 = 0, loss = 0;
  int64_t examples = 0;
};
// One pass over `batches` batches of the loader (from its current position), no tape.
// Throws when the loss is not finite, naming the first non-finite parameter.
EvalResult evaluate(const VisionTransformer& model, data::Loader& loader, int64_t batches);

struct StepReport {
  int64_t step = 0;  // steps done
  double loss = 0, accuracy = 0, lr = 0, grad_norm = 0;
};

class Trainer {
 public:
  Trainer(VisionTransformer& model, const TrainConfig& config, data::Loader& train);
  ~Trainer();

  // Restores weights, optimizer state, step and loader position from a checkpoint this
  // trainer wrote (same model shape, same freeze states). The log (when one is set)
  // keeps its lines up to the checkpoint's step, and the run appends to it.
  void resume(const std::string& checkpoint);
  // Trains up to config.steps; on_step sees every step; `eval` (may be null) is run
  // every eval_every steps and at the end. Returns the last evaluation.
  EvalResult run(const std::function<void(const StepReport&)>& on_step, data::Loader* eval);

  int64_t step() const { return step_; }
  const Optimizer& optimizer() const { return *optimizer_; }
  // Writes the checkpoint now (atomically).
  void save_checkpoint(const std::string& path) const;

 private:
  void log_line(const std::string& json);

  VisionTransformer& model_;
  TrainConfig config_;
  data::Loader& train_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<Parameter*> trainable_;
  int64_t step_ = 0;
  bool resumed_ = false;  // resume() ran: the log is continued, not started anew
  std::FILE* log_ = nullptr;
};

}  // namespace vitune::nn
