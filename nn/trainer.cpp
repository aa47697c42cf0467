// The training loop, evaluation and training checkpoints.
#include "nn/trainer.h"

#include <cmath>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "engine/atomic_file.h"
#include "engine/autocast.h"
#include "engine/ops.h"
#include "engine/upload.h"
#include "nn/components.h"
#include "nn/gradients.h"
#include "nn/safetensors.h"

namespace vitune::nn {

namespace {

using nlohmann::ordered_json;

constexpr const char* kOptimizerPrefix = "optim.";

// Correct predictions in the top 1 and the top k (k = min(5, classes)) of each row.
std::pair<int64_t, int64_t> correct_in_top(const Tensor& logits, const Tensor& labels) {
  Tensor values, indices;
  int64_t k = std::min<int64_t>(5, logits.dim(1));
  ops::topk_rows(logits, k, values, indices);
  const Tensor top_host = indices.to(Device::cpu()), labels_host = labels.to(Device::cpu());
  const int64_t* top = top_host.data<int64_t>();
  const int64_t* label = labels_host.data<int64_t>();
  int64_t top1 = 0, topk = 0;
  for (int64_t b = 0; b < logits.dim(0); ++b) {
    top1 += top[b * k] == label[b];
    for (int64_t j = 0; j < k; ++j) topk += top[b * k + j] == label[b];
  }
  return {top1, topk};
}

// Moves a batch, which the loader makes on the host, to the model's device.
void move_batch(data::Batch& batch, Device device) {
  batch.images = batch.images.to(device);
  batch.labels = batch.labels.to(device);
}

// A training batch on its way to the model's device: fetched from the loader and its
// upload started (engine/upload.h) while the device still works on the step before.
struct IncomingBatch {
  data::LoaderPosition from;  // the loader's position before it: where a checkpoint taken
                              // after the step before continues
  data::Batch batch;          // images and labels travel in the uploads
  Upload images, labels;
};

IncomingBatch fetch_batch(data::Loader& loader, Device device) {
  IncomingBatch incoming;
  incoming.from = loader.position();
  incoming.batch = loader.next();
  incoming.images = Upload(incoming.batch.images, device);
  incoming.labels = Upload(incoming.batch.labels, device);
  incoming.batch.images = Tensor();
  incoming.batch.labels = Tensor();
  return incoming;
}

// The batch, with its tensors on the device, ready for the work queued from now on.
data::Batch arrived(IncomingBatch& incoming) {
  incoming.batch.images = incoming.images.take();
  incoming.batch.labels = incoming.labels.take();
  return std::move(incoming.batch);
}

// A training checkpoint: weights, optimizer state, the step and the loader position the
// run continues from.
void write_training_checkpoint(const std::string& path, const VisionTransformer& model, const Optimizer& optimizer,
                               int64_t step, data::LoaderPosition position) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const Parameter* p : model.parameters()) tensors.emplace_back(p->name(), p->value());
  optimizer.export_state(kOptimizerPrefix, tensors);
  ordered_json state = {{"step", step}, {"epoch", position.epoch}, {"batch", position.batch}};
  write_safetensors(path, tensors,
                    {{"vit_config", model.config().to_json()}, {"format", "pt"}, {"trainer_state", state.dump()}});
}

ordered_json norms_json(const GradNorms& norms) {
  ordered_json per_component, per_layer;
  for (const auto& [component, value] : norms.per_component) per_component[component_name(component)] = value;
  for (const auto& [block, components] : norms.per_layer) {
    ordered_json layer;
    for (const auto& [component, value] : components) layer[component_name(component)] = value;
    per_layer[std::to_string(block)] = layer;
  }
  return {{"total", norms.total}, {"per_component", per_component}, {"per_layer", per_layer}};
}

// Names the first parameter (in model order) holding a NaN or infinity, with the index
// and value of its first such element; or says that every parameter is finite.
std::string non_finite_parameter_note(const std::vector<Parameter*>& parameters) {
  for (const Parameter* p : parameters) {
    const Tensor value = p->value().to(Device::cpu());
    for (int64_t i = 0; i < value.numel(); ++i) {
      const double x = value.item(i);
      if (!std::isfinite(x)) {
        return cat("parameter '", p->name(), "' holds ", x, " at element ", i, " of ", shape_str(p->shape()));
      }
    }
  }
  return "every parameter is finite";
}

// A resumed run continues the log of the run it resumes, from the checkpoint's step:
// the lines the interrupted run wrote after it (steps and evaluations it will redo, and
// a last line cut short by the interruption) are dropped, so the log reads as one
// uninterrupted run. Rewritten atomically; a missing log starts empty.
void keep_log_through_step(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    ordered_json entry = ordered_json::parse(line, nullptr, false);
    if (entry.is_object() && entry["step"].is_number_integer() && entry["step"].get<int64_t>() <= step) {
      kept += line + "\n";
    }
  }
  write_file_atomically(path, kept);
}

}  // namespace

OptimizerKind parse_optimizer_kind(const std::string& text, const std::string& flag) {
  if (text == "sgd") return OptimizerKind::Sgd;
  if (text == "adamw") return OptimizerKind::AdamW;
  throw Error(cat(flag, ": expected sgd or adamw, got '", text, "'"));
}

EvalResult evaluate(const VisionTransformer& model, data::Loader& loader, int64_t batches) {
  autograd::NoGradGuard no_grad;
  EvalResult result;
  double loss_sum = 0;
  int64_t top1 = 0, top5 = 0;
  for (int64_t i = 0; i < batches; ++i) {
    data::Batch batch = loader.next();
    if (batch.labels.numel() == 0) continue;
    move_batch(batch, model.device());
    Tensor logits = model.forward(autograd::Variable(batch.images)).value();
    Tensor probs;
    loss_sum += ops::cross_entropy_forward(logits, batch.labels, 0.0, probs) * double(batch.labels.numel());
    auto [c1, c5] = correct_in_top(logits, batch.labels);
    top1 += c1;
    top5 += c5;
    result.examples += batch.labels.numel();
  }
  if (result.examples > 0) {
    result.top1 = double(top1) / double(result.examples);
    result.top5 = double(top5) / double(result.examples);
    result.loss = loss_sum / double(result.examples);
  }
  VITUNE_CHECK(std::isfinite(result.loss), "evaluation: the loss is ", result.loss, " (",
               non_finite_parameter_note(model.parameters()), ")");
  return result;
}

Trainer::Trainer(VisionTransformer& model, const TrainConfig& config, data::Loader& train)
    : model_(model), config_(config), train_(train) {
  config_.schedule.validate();
  VITUNE_CHECK(config_.steps >= 1, "training needs at least one step, got ", config_.steps);
  VITUNE_CHECK(config_.clip_norm >= 0, "gradient clipping norm must be non-negative, got ", config_.clip_norm);
  for (Parameter* p : model_.parameters()) {
    if (p->state() != FreezeState::Frozen) trainable_.push_back(p);
  }
  VITUNE_CHECK(!trainable_.empty(), "every parameter is frozen: nothing to train");
  double lr = config_.schedule.base_lr;
  if (config_.optimizer == OptimizerKind::Sgd) {
    optimizer_ = std::make_unique<Sgd>(trainable_, SgdOptions{lr, config_.momentum, config_.weight_decay, config_.nesterov});
  } else {
    optimizer_ = std::make_unique<AdamW>(
        trainable_, AdamWOptions{lr, config_.beta1, config_.beta2, config_.eps, config_.weight_decay});
  }
}

Trainer::~Trainer() {
  if (log_) std::fclose(log_);
}

void Trainer::log_line(const std::string& json) {
  if (config_.log_path.empty()) return;
  if (!log_) {
    // A resumed run appends to the log of the run it continues (cut at its step by
    // resume()); a fresh run starts a new log.
    log_ = std::fopen(config_.log_path.c_str(), resumed_ ? "a" : "w");
    VITUNE_CHECK(log_ != nullptr, config_.log_path, ": cannot open the training log for writing");
  }
  VITUNE_CHECK(std::fprintf(log_, "%s\n", json.c_str()) > 0 && std::fflush(log_) == 0, config_.log_path,
               ": cannot write the training log");
}

void Trainer::save_checkpoint(const std::string& path) const {
  write_training_checkpoint(path, model_, *optimizer_, step_, train_.position());
}

void Trainer::resume(const std::string& checkpoint) {
  SafetensorsFile file = read_safetensors(checkpoint);
  auto state_text = file.metadata.find("trainer_state");
  VITUNE_CHECK(state_text != file.metadata.end(), checkpoint,
               ": not a training checkpoint (no trainer_state metadata); use it as --model instead");
  ordered_json state = ordered_json::parse(state_text->second, nullptr, false);
  VITUNE_CHECK(state.is_object() && state["step"].is_number_integer() && state["epoch"].is_number_integer() &&
                   state["batch"].is_number_integer(),
               checkpoint, ": trainer_state must hold integer step, epoch and batch, got ", state_text->second);
  for (Parameter* p : model_.parameters()) {
    const Tensor& stored = file.at(p->name());
    VITUNE_CHECK(stored.shape() == p->shape() && stored.dtype() == DType::F32, checkpoint, ": tensor '",
                 p->name(), "' is ", stored.str(), ", expected f32", shape_str(p->shape()));
    p->mutable_value().copy_from(stored);
  }
  optimizer_->import_state(kOptimizerPrefix, file.tensors, checkpoint);
  step_ = state["step"].get<int64_t>();
  train_.seek(state["epoch"].get<int64_t>(), state["batch"].get<int64_t>());
  resumed_ = true;
  if (!config_.log_path.empty()) keep_log_through_step(config_.log_path, step_);
}

EvalResult Trainer::run(const std::function<void(const StepReport&)>& on_step, data::Loader* eval) {
  // The whole loop runs under the switch; only the matrix products consult it, and the
  // optimizer, clipping and norms have none.
  AutocastBf16Scope autocast(config_.bf16_autocast || autocast_bf16());
  EvalResult last;
  auto run_eval = [&] {
    eval->seek(0, 0);
    last = evaluate(model_, *eval, eval->batches_per_epoch());
    log_line(ordered_json{{"step", step_}, {"eval_top1", last.top1}, {"eval_top5", last.top5},
                          {"eval_loss", last.loss}, {"eval_examples", last.examples}}
                 .dump());
  };
  // On a device of its own the batch of the next step is fetched, and its upload
  // started, once this step's forward pass is queued: on a GPU the copy then runs beside
  // this step's work (the emulated device runs the same sequence, so that CI tests it).
  // On the cpu there is nothing to overlap, and the batch is fetched when it is needed.
  const bool fetch_ahead = !model_.device().is_cpu();
  std::optional<IncomingBatch> ahead;
  while (step_ < config_.steps) {
    IncomingBatch incoming = ahead ? std::move(*ahead) : fetch_batch(train_, model_.device());
    ahead.reset();
    data::Batch batch = arrived(incoming);
    if (batch.labels.numel() == 0) continue;  // every image of the batch was unreadable
    double lr = config_.schedule.lr_at(step_);
    optimizer_->set_lr(lr);
    autograd::Variable logits = model_.forward(autograd::Variable(batch.images));
    if (fetch_ahead && step_ + 1 < config_.steps) ahead = fetch_batch(train_, model_.device());
    autograd::Variable loss = autograd::cross_entropy(logits, batch.labels, config_.label_smoothing);
    double loss_value = loss.value().item(0);
    VITUNE_CHECK(std::isfinite(loss_value), "the loss became ", loss_value, " at step ", step_ + 1,
                 " (learning rate ", lr, "; ", non_finite_parameter_note(model_.parameters()),
                 "); the run stops here",
                 config_.checkpoint_path.empty() ? std::string()
                                                 : "; the last good checkpoint is " + config_.checkpoint_path);
    autograd::backward(loss);
    bool logging = config_.log_every > 0 && ((step_ + 1) % config_.log_every == 0 || step_ + 1 == config_.steps);
    GradNorms norms = logging ? grad_norms(trainable_) : GradNorms{};
    double grad_norm = config_.clip_norm > 0 ? clip_grad_norm(trainable_, config_.clip_norm)
                                             : (logging ? norms.total : 0.0);
    optimizer_->step();
    optimizer_->zero_grad();
    ++step_;
    auto [top1, top5] = correct_in_top(logits.value(), batch.labels);
    StepReport report{step_, loss_value, double(top1) / double(batch.labels.numel()), lr, grad_norm};
    if (on_step) on_step(report);
    if (logging) {
      log_line(ordered_json{{"step", step_}, {"epoch", batch.epoch}, {"loss", loss_value},
                            {"accuracy", report.accuracy}, {"lr", lr}, {"grad_norm", norms_json(norms)}}
                   .dump());
    }
    bool last_step = step_ == config_.steps;
    if (!config_.checkpoint_path.empty() &&
        (last_step || (config_.checkpoint_every > 0 && step_ % config_.checkpoint_every == 0))) {
      write_training_checkpoint(config_.checkpoint_path, model_, *optimizer_, step_,
                                ahead ? ahead->from : train_.position());
    }
    if (eval && (last_step || (config_.eval_every > 0 && step_ % config_.eval_every == 0))) run_eval();
  }
  return last;
}

}  // namespace vitune::nn
