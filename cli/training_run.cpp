// The training run behind pretrain and finetune.
#include "cli/training_run.h"

#include <cstdio>

#include "cli/progress.h"
#include "engine/allocator.h"
#include "nn/checkpoint.h"

namespace vitune::cli {

void RunOptions::add_bf16_flag(CLI::App& command) {
  command.add_flag("--bf16", bf16,
                   "bf16 autocast: the linear layers' matrix products (forward and backward) take operands "
                   "rounded to bfloat16 with fp32 accumulation; weights, gradients and optimizer state stay fp32 "
                   "(tensor cores on CUDA, an exact emulation without speed gain on the CPU)");
}

std::string RunOptions::precision() const {
  if (bf16) return "bf16-autocast";
  return device.tf32 ? "tf32" : "fp32";
}

int64_t trainable_parameter_count(const nn::VisionTransformer& model) {
  int64_t count = 0;
  for (const nn::Parameter* p : model.parameters()) count += p->trainable_count();
  return count;
}

StepTimer::StepTimer(const nn::TrainConfig& config, bool evaluating)
    : eval_every_(config.eval_every),
      checkpoint_every_(config.checkpoint_every),
      evaluating_(evaluating),
      checkpointing_(!config.checkpoint_path.empty()),
      last_(std::chrono::steady_clock::now()) {}

bool StepTimer::extra_work_after(int64_t step) const {
  bool evaluated = evaluating_ && eval_every_ > 0 && step % eval_every_ == 0;
  bool checkpointed = checkpointing_ && checkpoint_every_ > 0 && step % checkpoint_every_ == 0;
  return evaluated || checkpointed;
}

void StepTimer::step_done(int64_t step) {
  auto now = std::chrono::steady_clock::now();
  if (last_step_ < 0 || !extra_work_after(last_step_)) {
    total_seconds_ += std::chrono::duration<double>(now - last_).count();
    ++timed_;
  }
  last_ = now;
  last_step_ = step;
}

double StepTimer::mean_seconds() const { return timed_ > 0 ? total_seconds_ / double(timed_) : 0.0; }

CommandOutputs check_training_outputs(const RunOptions& options, const std::vector<std::string>& inputs) {
  const OutputOptions& out = options.output;
  VITUNE_CHECK(!out.resume || !out.checkpoint.empty(), "--resume needs --checkpoint");
  CommandOutputs outputs(out.flags);
  for (const std::string& input : inputs) outputs.input(input);
  outputs.file("--out", out.model_out, out.resume)
      .file("--checkpoint", out.checkpoint, out.resume)
      .file("--log", out.log, out.resume)
      .file("--results", out.results, out.resume);
  outputs.check_and_lock();
  return outputs;
}

void train_and_report(const std::string& command, nn::VisionTransformer& model, const ModelInput& input,
                      const RunOptions& options, nlohmann::ordered_json results) {
  const OutputOptions& out = options.output;
  const Device device = model.device();
  OpenedData train = open_training_data(options.data, input, out.seed);
  OpenedData eval;
  if (!options.data.eval_spec.empty()) eval = open_eval_data(options.data.eval_spec, options.data, input);
  nn::TrainConfig config = options.optim.train_config(train.loader->batches_per_epoch());
  config.checkpoint_path = out.checkpoint;
  config.log_path = out.log;
  config.bf16_autocast = options.bf16;
  const int64_t trainable = trainable_parameter_count(model);
  const int64_t total = model.parameter_count();

  reset_peak_memory(Device::cpu());
  reset_peak_memory(device);
  nn::Trainer trainer(model, config, *train.loader);
  if (out.resume) trainer.resume(out.checkpoint);
  const int64_t first_step = trainer.step();
  Progress progress(command, config.steps, "step", std::max<int64_t>(1, config.steps / 20));
  StepTimer step_timer(config, eval.loader != nullptr);
  char note[96];
  nn::EvalResult last = trainer.run(
      [&](const nn::StepReport& r) {
        step_timer.step_done(r.step);
        std::snprintf(note, sizeof note, "loss %.4f, lr %.2e", r.loss, r.lr);
        progress.update(r.step, note);
      },
      eval.loader.get());
  progress.finish(note);
  const int64_t peak_bytes = memory_stats(device).peak_bytes;  // the device's when on a GPU
  double seconds = progress.seconds();
  double images_per_second = double((config.steps - first_step) * options.data.batch_size) / seconds;

  const bool merge_lora = model.has_lora();
  if (merge_lora) model.merge_lora();
  nn::save_vit(out.model_out, model, {{"data", train.canonical_spec}, {"pretrained_cfg", input.pretrained_cfg()}});
  print_wrote(merge_lora ? "model (LoRA merged into the weights)" : "model", out.model_out);
  if (!out.checkpoint.empty()) print_wrote("checkpoint", out.checkpoint);
  if (!out.log.empty()) print_wrote("log", out.log);
  results["config"] = nlohmann::ordered_json::parse(model.config().to_json());
  results["preprocessing"] = nlohmann::ordered_json::parse(input.pretrained_cfg());
  results["data"] = train.canonical_spec;
  results["train_examples"] = train.dataset->size();
  results["seed"] = out.seed;
  results["steps"] = config.steps;
  results["batch_size"] = options.data.batch_size;
  results["optimizer"] = options.optim.optimizer;
  results["lr"] = options.optim.lr;
  results["schedule"] = options.optim.schedule;
  results["precision"] = options.precision();
  results["trainable_parameters"] = trainable;
  results["total_parameters"] = total;
  results["peak_memory_bytes"] = peak_bytes;
  add_device_memory(device, results);
  results["mean_step_seconds"] = step_timer.mean_seconds();
  results["timed_steps"] = step_timer.timed_steps();
  results["skipped_images"] = train.loader->skipped_images();
  results["images_per_second"] = images_per_second;
  results["model"] = out.model_out;
  if (merge_lora) results["lora_merged"] = true;
  if (eval.loader) {
    results["eval_data"] = eval.canonical_spec;
    results["eval"] = eval_json(last);
    std::printf("%s: top-1 %.2f%%, top-5 %.2f%% on %lld images of %s\n", command.c_str(), 100 * last.top1,
                100 * last.top5, (long long)last.examples, eval.canonical_spec.c_str());
  }
  write_results(out.results, results, seconds);
  std::printf("%s: %lld of %lld parameters trainable (%.3f%%), peak %s memory %.1f MiB, mean step %.4f s\n",
              command.c_str(), (long long)trainable, (long long)total,
              100.0 * double(trainable) / double(std::max<int64_t>(1, total)), device.str().c_str(),
              double(peak_bytes) / (1 << 20), step_timer.mean_seconds());
  std::printf("%s: %lld steps in %.1f s (%.0f images/s)\n", command.c_str(), (long long)(config.steps - first_step),
              seconds, images_per_second);
}

}  // namespace vitune::cli
