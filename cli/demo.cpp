// `vitune demo`: the main job, end to end on the committed pretrained model and the
// Fashion-MNIST downstream task. Plasticity per component; the GD-FPS anchor and
// selection and the GPS selection; then finetuning by linear probe, full, LayerNorm-only,
// MHA-only, FC-only, GD-FPS sparse, GPS sparse and LoRA; one table and SVG charts.
// Every step is an ordinary vitune command run as a child process (its command line and
// output kept in the output folder), up to --jobs of them side by side, one thread each.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/flag_checks.h"
#include "cli/child_process.h"
#include "cli/commands.h"
#include "cli/demo_report.h"
#include "cli/output_paths.h"
#include "cli/preprocess_options.h"
#include "engine/device.h"
#include "engine/error.h"

namespace vitune::cli {
namespace {

struct DemoOptions {
  std::string model = "models/fmnist_c0-4_vit.safetensors";
  std::string pretrain_data = "fashion-mnist:train?classes=0-4";
  std::string train_data = "fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0";
  std::string eval_data = "fashion-mnist:test?classes=5-9";
  std::string out = "runs/demo";
  int64_t steps = 160;
  int64_t batch_size = 50;
  int64_t anchor_images = 2000;
  int64_t plasticity_images = 800;
  int k = 4;
  int lora_rank = 2;
  int jobs = 2;
  std::string device = "cpu";
  PreprocessOptions preprocess;  // passed on to every step
  OutputFlags output;
};

// One step of the demo: a vitune command line and where its results land.
struct Step {
  std::string id;
  std::vector<std::string> args;
};

// Runs the steps, up to `jobs` at a time, each with one compute thread (or all of them
// when it runs alone); at the first failure, stops the others and throws, naming the
// step and its log.
void run_steps(const std::vector<Step>& steps, const DemoOptions& options) {
  std::vector<ChildProcess> running;
  auto finish_one = [&] {
    auto [child, status] = wait_for_any(running);
    if (status != 0) {
      for (const ChildProcess& other : running) ::kill(other.pid, SIGTERM);
      for (const ChildProcess& other : running) wait_for(other);
      throw Error(cat("demo: step '", child.name, "' failed with status ", status, "; its output is in ",
                      child.log_path));
    }
    std::printf("demo: %s done\n", child.name.c_str());
    std::fflush(stdout);
  };
  const int threads_each = steps.size() == 1 ? options.jobs : 1;
  for (const Step& step : steps) {
    if (int(running.size()) >= options.jobs) finish_one();
    std::vector<std::string> args{"--threads", std::to_string(threads_each)};
    args.insert(args.end(), step.args.begin(), step.args.end());
    const std::vector<std::string> preprocess = options.preprocess.arguments();
    args.insert(args.end(), preprocess.begin(), preprocess.end());
    args.insert(args.end(), {"--device", options.device, "--no-lock"});  // the demo holds the locks
    if (options.output.overwrite) args.push_back("--overwrite");
    const std::string log = options.out + "/logs/" + step.id + ".out";
    std::ofstream(log) << command_line(args) << "\n";
    running.push_back(start_vitune(args, step.id, log));
  }
  while (!running.empty()) finish_one();
}

std::vector<std::string> finetune_args(const DemoOptions& o, const std::string& id, const std::string& lr) {
  const std::string run = o.out + "/runs/" + id;
  return {"finetune",  "--model", o.model, "--data", o.train_data, "--eval-data", o.eval_data,
          "--batch-size", std::to_string(o.batch_size), "--steps", std::to_string(o.steps),
          "--optimizer", "adamw", "--lr", lr, "--weight-decay", "0", "--warmup-steps",
          std::to_string(o.steps / 10), "--clip-norm", "1", "--loader-threads", "1", "--seed", "0",
          "--log-every", "5", "--out", run + ".safetensors", "--results", run + ".json", "--log", run + ".jsonl"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

void run_demo(const DemoOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  CommandOutputs outputs(o.output);
  for (const char* sub : {"", "/logs", "/runs", "/selection"}) outputs.folder("--out", o.out + sub);
  outputs.check_and_lock();
  const std::string sel = o.out + "/selection/";

  std::printf("demo: plasticity, anchor, linear probe and selection\n");
  std::fflush(stdout);
  run_steps({{"plasticity",
              {"plasticity", "--model", o.model, "--data", o.train_data, "--reference-data", o.pretrain_data, "--images",
               std::to_string(o.plasticity_images), "--out", o.out + "/plasticity.json", "--csv",
               o.out + "/plasticity.csv", "--svg", o.out + "/plasticity.svg"}},
             {"anchor",
              {"anchor", "--model", o.model, "--data", o.pretrain_data, "--images", std::to_string(o.anchor_images),
               "--out", sel + "anchor.safetensors"}},
             {"probe",
              {"probe", "--model", o.model, "--data", o.train_data, "--eval-data", o.eval_data, "--loader-threads",
               "1", "--results", o.out + "/probe.json"}}},
            o);
  const std::vector<std::string> select_common{"--model", o.model, "--data", o.train_data, "--k",
                                               std::to_string(o.k)};
  run_steps({{"select_gdfps", with({"select", "--method", "gdfps", "--anchor", sel + "anchor.safetensors"},
                                   with(select_common, {"--out", sel + "gdfps.safetensors", "--results",
                                                        sel + "gdfps.json"}))},
             {"select_gps", with({"select", "--method", "gps"},
                                 with(select_common, {"--out", sel + "gps.safetensors", "--results",
                                                      sel + "gps.json"}))}},
            o);

  std::printf("demo: finetuning (%lld steps of %lld images each)\n", (long long)o.steps, (long long)o.batch_size);
  std::fflush(stdout);
  const std::string rank = std::to_string(o.lora_rank);
  // AdamW learning rates tuned on the default model and task at 160 steps (README,
  // docs/results/sweep and docs/results/tuned): full, the masks and LoRA at the best of
  // five rates over three seeds; head, MHA and LayerNorm at the sweep's best for that
  // component; FC at the smaller of fc1's and fc2's bests (the pair was not swept).
  run_steps({{"full", with(finetune_args(o, "full", "1e-3"), {"--train", "all"})},
             {"linear_probe", with(finetune_args(o, "linear_probe", "0.0729"), {"--train", "head"})},
             {"mha", with(finetune_args(o, "mha", "0.0027"), {"--train", "mha,norm"})},
             {"fc", with(finetune_args(o, "fc", "0.0027"), {"--train", "fc1,fc2,norm"})},
             {"layernorm", with(finetune_args(o, "layernorm", "0.0729"), {"--train", "ln1,ln2,norm"})},
             {"gdfps", with(finetune_args(o, "gdfps", "1e-2"), {"--mask", sel + "gdfps.safetensors"})},
             {"gps", with(finetune_args(o, "gps", "3e-2"), {"--mask", sel + "gps.safetensors"})},
             {"lora", with(finetune_args(o, "lora", "1e-2"),
                           {"--lora", rank, "--lora-targets", "qkv,proj,fc1,fc2", "--lora-alpha",
                            std::to_string(2 * o.lora_rank)})}},
            o);

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_demo_report(o.out, seconds);
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* command = app.add_subcommand(
      "demo", "The main job: plasticity, GD-FPS and GPS selection, and eight finetuning methods side by side");
  command->add_option("--model", options->model, "Pretrained model")->capture_default_str();
  command->add_option("--pretrain-data", options->pretrain_data, "Pretraining data, for the GD-FPS anchor")
      ->capture_default_str();
  command->add_option("--data", options->train_data, "Downstream training data")->capture_default_str();
  command->add_option("--eval-data", options->eval_data, "Downstream test data")->capture_default_str();
  command->add_option("--out", options->out, "Output folder")->capture_default_str();
  command->add_option("--steps", options->steps, "Optimizer steps of every finetuning run")
      ->check(integer_from(1))
      ->capture_default_str();
  command->add_option("--batch-size", options->batch_size, "Training batch size")
      ->check(integer_from(1))
      ->capture_default_str();
  command->add_option("--anchor-images", options->anchor_images, "Pretraining images of the GD-FPS anchor")
      ->check(integer_from(1))
      ->capture_default_str();
  command->add_option("--plasticity-images", options->plasticity_images, "Images of the plasticity measurement")
      ->check(integer_in(2, 1 << 20))
      ->capture_default_str();
  command->add_option("--k", options->k, "Weights selected per output row by GD-FPS and GPS")
      ->check(integer_from(1))
      ->capture_default_str();
  command->add_option("--lora-rank", options->lora_rank, "LoRA rank (on qkv, proj, fc1 and fc2)")
      ->check(integer_from(1))
      ->capture_default_str();
  command->add_option("--jobs", options->jobs, "Steps run side by side, one thread each")
      ->check(integer_in(1, 256))
      ->capture_default_str();
  command->add_option("--device", options->device, "Where every step computes: cpu, cuda, cuda:N or emulated")
      ->capture_default_str();
  options->preprocess.add_to(*command);
  options->output.add_to(*command);
  command->callback([options] {
    parse_device(options->device, "--device");
    run_demo(*options);
  });
}

}  // namespace vitune::cli
