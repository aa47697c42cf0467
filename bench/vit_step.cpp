// vit_step: times ViT steps on random data and prints one JSON line, for the PyTorch
// side-by-side script. A step is a forward pass (mode forward, without the tape) or,
// as in PyTorch's training loop, forward + cross-entropy + backward + SGD step
// (momentum 0.9) + zero_grad (mode train). Warmup steps run first and are not timed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "bench/step_workload.h"
#include "engine/allocator.h"
#include "engine/cpu/blas.h"
#include "engine/cpu/gemm_kernel.h"
#include "engine/ops.h"
#include "engine/parallel.h"
#include "nn/vit.h"

namespace {

using vitune::Error;
using vitune::autograd::Variable;

constexpr const char* kUsage =
    "usage: vit_step [--img N] [--patch N] [--chans N] [--dim N] [--depth N] [--heads N]\n"
    "                [--classes N] [--batch N] [--steps N] [--warmup N]\n"
    "                [--mode forward|train] [--threads N]\n"
    "Times ViT steps on random images and prints one JSON line:\n"
    "{\"images_per_s\", \"ms_per_step\", \"peak_bytes\", \"blas_core\", \"threads\"}.\n"
    "Defaults: the Fashion-MNIST ViT (28, patch 4, 1 channel, dim 64, depth 4, heads 4,\n"
    "10 classes), batch 128, 20 steps, 3 warmup, mode train, threads from\n"
    "VITUNE_NUM_THREADS or all cores.\n";

struct Options {
  vitune::nn::VitConfig config;
  int64_t batch = 128;
  int64_t steps = 20;
  int64_t warmup = 3;
  bool train = true;
  int threads = 0;  // 0: keep the pool's size
};

int64_t parse_integer(const std::string& flag, const std::string& text, int64_t minimum) {
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  VITUNE_CHECK(!text.empty() && *end == '\0', "vit_step: ", flag, " '", text, "': expected an integer");
  VITUNE_CHECK(value >= minimum, "vit_step: ", flag, " ", value, ": expected at least ", minimum);
  return value;
}

// Flags as "--name value" or "--name=value".
Options parse_options(int argc, char** argv) {
  Options options;
  options.config = vitune::bench::fmnist_config();
  std::map<std::string, int*> int_flags = {
      {"--img", &options.config.img_size}, {"--patch", &options.config.patch},
      {"--chans", &options.config.in_chans}, {"--dim", &options.config.dim},
      {"--depth", &options.config.depth},  {"--heads", &options.config.heads},
      {"--classes", &options.config.num_classes}, {"--threads", &options.threads}};
  std::map<std::string, int64_t*> count_flags = {
      {"--batch", &options.batch}, {"--steps", &options.steps}, {"--warmup", &options.warmup}};
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    size_t equals = flag.find('=');
    if (equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    } else {
      VITUNE_CHECK(i + 1 < argc, "vit_step: ", flag, " needs a value (see --help)");
      value = argv[++i];
    }
    if (auto it = int_flags.find(flag); it != int_flags.end()) {
      *it->second = int(parse_integer(flag, value, flag == "--threads" ? 0 : 1));
    } else if (auto count = count_flags.find(flag); count != count_flags.end()) {
      *count->second = parse_integer(flag, value, flag == "--warmup" ? 0 : 1);
    } else if (flag == "--mode") {
      VITUNE_CHECK(value == "forward" || value == "train", "vit_step: --mode '", value,
                   "': expected forward or train");
      options.train = value == "train";
    } else {
      throw Error(vitune::cat("vit_step: unknown flag '", flag, "' (see --help)"));
    }
  }
  options.config.validate("vit_step flags");
  return options;
}

// One step of the chosen mode, failing if the logits or the loss are not finite.
void run_step(vitune::bench::StepWorkload& workload, bool train) {
  if (!train) {
    Variable logits = workload.logits_without_tape();
    VITUNE_CHECK(vitune::ops::all_finite(logits.value()), "vit_step: the forward gave non-finite logits");
    return;
  }
  Variable loss = workload.loss();
  VITUNE_CHECK(vitune::ops::all_finite(loss.value()), "vit_step: the loss is not finite");
  workload.update(loss);
}

void run(const Options& options) {
  if (options.threads > 0) vitune::set_num_threads(options.threads);
  vitune::bench::StepWorkload workload(options.config, options.batch);
  for (int64_t i = 0; i < options.warmup; ++i) run_step(workload, options.train);
  vitune::reset_peak_memory(vitune::Device::cpu());
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < options.steps; ++i) run_step(workload, options.train);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"images_per_s\": %.3f, \"ms_per_step\": %.3f, \"peak_bytes\": %lld, "
              "\"gemm_kernel\": \"%s\", \"blas_core\": \"%s\", \"threads\": %d}\n",
              double(options.batch * options.steps) / seconds, 1e3 * seconds / double(options.steps),
              static_cast<long long>(vitune::memory_stats(vitune::Device::cpu()).peak_bytes),
              vitune::cpu::gemm_kernel_name().c_str(), vitune::blas_core_name(), vitune::num_threads());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(parse_options(argc, argv));
  } catch (const Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
