// vit_step: times ViT steps on random data and prints one JSON line, for the PyTorch
// side-by-side script and the GPU benchmark. A step is a forward pass (mode forward,
// without the tape) or, as in PyTorch's training loop, forward + cross-entropy +
// backward + SGD step (momentum 0.9) + zero_grad (mode train). Warmup steps run first
// and are not timed; one more untimed step counts the GEMM FLOPs of a step, from which
// the model FLOP utilisation (MFU) against a stated peak follows. On a CUDA device the
// clock is read only after the device has finished all queued work.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "bench/step_workload.h"
#include "engine/allocator.h"
#include "engine/autocast.h"
#include "engine/cpu/blas.h"
#include "engine/cpu/gemm_kernel.h"
#include "engine/cpu/isa.h"
#include "engine/device_memory.h"
#include "engine/devices.h"
#include "engine/flop_counter.h"
#include "engine/ops.h"
#include "engine/parallel.h"
#include "nn/vit.h"

namespace {

using vitune::Device;
using vitune::Error;
using vitune::autograd::Variable;

// Dense peaks in TFLOP/s: NVIDIA's H100/H200 SXM datasheet gives 67 for FP32 and
// 989 for TF32 tensor cores with sparsity, so 495 dense; the host's is two AVX-512
// cores of the reference machine (438 GFLOP/s).
constexpr double kCudaFp32PeakTflops = 67.0;
constexpr double kCudaTf32PeakTflops = 495.0;
constexpr double kCudaBf16PeakTflops = 989.0;
constexpr double kCpuPeakTflops = 0.438;

constexpr const char* kUsage =
    "usage: vit_step [--img N] [--patch N] [--chans N] [--dim N] [--depth N] [--heads N]\n"
    "                [--classes N] [--batch N] [--steps N] [--warmup N]\n"
    "                [--mode forward|train] [--threads N]\n"
    "                [--device cpu|cuda[:N]] [--tf32] [--bf16] [--peak-tflops X]\n"
    "Times ViT steps on random images and prints one JSON line:\n"
    "{\"images_per_s\", \"ms_per_step\", \"peak_bytes\" (host allocator), \"gemm_kernel\", \"cpu_isa\",\n"
    " \"blas_core\", \"threads\", \"device\", \"tf32\", \"bf16\", \"gemm_bf16_kernel\", \"mode\", \"batch\",\n"
    " \"steps\", \"config\", \"model_flops_per_step\" (GEMM FLOPs), \"peak_tflops\", \"mfu\"} and, on a\n"
    "CUDA device, \"device_name\" and \"peak_device_bytes\".\n"
    "Defaults: the Fashion-MNIST ViT (28, patch 4, 1 channel, dim 64, depth 4, heads 4,\n"
    "10 classes), batch 128, 20 steps, 3 warmup, mode train, threads from\n"
    "VITUNE_NUM_THREADS or all cores, device cpu. --tf32 runs the CUDA GEMMs in TF32; --bf16 runs\n"
    "the step under bf16 autocast (bf16 GEMM operands, fp32 accumulation; on the CPU\n"
    "vitune's AVX-512 BF16 kernel where the CPU has AVX512_BF16, else an exact emulation).\n"
    "--peak-tflops defaults to 67 on CUDA (FP32), 495 with --tf32, 989 with --bf16\n"
    "(H100/H200 SXM dense figures) and 0.438 on the CPU.\n";

struct Options {
  vitune::nn::VitConfig config;
  int64_t batch = 128;
  int64_t steps = 20;
  int64_t warmup = 3;
  bool train = true;
  int threads = 0;  // 0: keep the pool's size
  Device device = Device::cpu();
  bool tf32 = false;
  bool bf16 = false;  // bf16 autocast
  double peak_tflops = 0.0;  // 0: the default of the device and precision
};

int64_t parse_integer(const std::string& flag, const std::string& text, int64_t minimum) {
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  VITUNE_CHECK(!text.empty() && *end == '\0', "vit_step: ", flag, " '", text, "': expected an integer");
  VITUNE_CHECK(value >= minimum, "vit_step: ", flag, " ", value, ": expected at least ", minimum);
  return value;
}

double parse_positive(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  VITUNE_CHECK(!text.empty() && *end == '\0' && value > 0.0, "vit_step: ", flag, " '", text,
               "': expected a positive number");
  return value;
}

// The device of --device, checked to exist in this build and on this machine.
Device checked_device(const std::string& text) {
  const Device device = vitune::parse_device(text, "vit_step: --device");
  if (device.is_cpu()) return device;
  VITUNE_CHECK(vitune::cuda::built_with_cuda(), "vit_step: --device ", text,
               ": this build has no CUDA backend (configure with -DVITUNE_CUDA=ON where nvcc is installed)");
  const int devices = vitune::cuda::device_count();
  VITUNE_CHECK(device.index < devices, "vit_step: --device ", text, ": ",
               devices == 0 ? std::string("no CUDA device is visible (driver missing, or CUDA_VISIBLE_DEVICES empty)")
                            : vitune::cat("this machine has ", devices, " CUDA device(s), cuda:0 to cuda:",
                                          devices - 1));
  return device;
}

// Flags as "--name value" or "--name=value"; --tf32 and --bf16 take no value.
Options parse_options(int argc, char** argv) {
  Options options;
  options.config = vitune::bench::fmnist_config();
  std::string device_text = "cpu";
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
    if (flag == "--tf32" || flag == "--bf16") {
      (flag == "--tf32" ? options.tf32 : options.bf16) = true;
      continue;
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
    } else if (flag == "--device") {
      device_text = value;
    } else if (flag == "--peak-tflops") {
      options.peak_tflops = parse_positive(flag, value);
    } else {
      throw Error(vitune::cat("vit_step: unknown flag '", flag, "' (see --help)"));
    }
  }
  options.config.validate("vit_step flags");
  options.device = checked_device(device_text);
  VITUNE_CHECK(!options.tf32 || options.device.is_cuda(),
               "vit_step: --tf32 applies to CUDA GEMMs only; give it with --device cuda");
  if (options.peak_tflops == 0.0) {
    options.peak_tflops = options.device.is_cpu() ? kCpuPeakTflops
                          : options.bf16          ? kCudaBf16PeakTflops
                          : options.tf32          ? kCudaTf32PeakTflops
                                                  : kCudaFp32PeakTflops;
  }
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

// Returns when every step queued so far has finished (at once on the host).
void wait_for(Device device) {
  if (device.is_cuda()) vitune::cuda::synchronize(device.index);
}

// `text` as a JSON string literal.
std::string json_string(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

// `value` with `digits` digits after the point.
std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

void run(const Options& options) {
  if (options.threads > 0) vitune::set_num_threads(options.threads);
  if (options.device.is_cuda()) vitune::cuda::set_tf32(options.tf32);
  vitune::AutocastBf16Scope autocast(options.bf16);
  const Device device = options.device;
  vitune::bench::StepWorkload workload(options.config, options.batch, device);
  for (int64_t i = 0; i < options.warmup; ++i) run_step(workload, options.train);

  vitune::reset_flop_counter();
  run_step(workload, options.train);
  const int64_t flops_per_step = vitune::flops_counted();

  wait_for(device);
  vitune::reset_peak_memory(Device::cpu());
  vitune::reset_peak_memory(device);
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < options.steps; ++i) run_step(workload, options.train);
  wait_for(device);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const double seconds_per_step = seconds / double(options.steps);
  const double mfu = double(flops_per_step) / seconds_per_step / (options.peak_tflops * 1e12);
  std::string line = vitune::cat(
      "{\"images_per_s\": ", fixed(double(options.batch * options.steps) / seconds, 3),
      ", \"ms_per_step\": ", fixed(1e3 * seconds_per_step, 3),
      ", \"peak_bytes\": ", vitune::memory_stats(Device::cpu()).peak_bytes,
      ", \"gemm_kernel\": ", json_string(vitune::cpu::gemm_kernel_name()),
      ", \"cpu_isa\": ", json_string(vitune::cpu::isa_name(vitune::cpu::cpu_isa())),
      ", \"blas_core\": ", json_string(vitune::blas_core_name()), ", \"threads\": ", vitune::num_threads(),
      ", \"device\": ", json_string(device.str()), ", \"tf32\": ", options.tf32 ? "true" : "false",
      ", \"bf16\": ", options.bf16 ? "true" : "false",
      ", \"gemm_bf16_kernel\": ", json_string(vitune::cpu::gemm_bf16_kernel_name()),
      ", \"mode\": ", json_string(options.train ? "train" : "forward"), ", \"batch\": ", options.batch,
      ", \"steps\": ", options.steps, ", \"config\": ", options.config.to_json(),
      ", \"model_flops_per_step\": ", flops_per_step, ", \"peak_tflops\": ", fixed(options.peak_tflops, 3),
      ", \"mfu\": ", fixed(mfu, 4));
  if (device.is_cuda()) {
    line += vitune::cat(", \"device_name\": ", json_string(vitune::cuda::device_description(device.index)),
                        ", \"peak_device_bytes\": ", vitune::memory_stats(device).peak_bytes);
  }
  std::printf("%s}\n", line.c_str());
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
