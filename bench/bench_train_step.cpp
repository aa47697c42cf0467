// Google Benchmark of whole ViT steps on the CPU: one training step (forward,
// cross-entropy, backward, SGD with momentum 0.9, zero_grad) of the Fashion-MNIST ViT
// at batch 128 and of a ViT-Ti/16 at 224 and batch 8, and the Fashion-MNIST forward
// alone under NoGradGuard. Reports images per second and the peak bytes held by the
// allocator during the timed steps. The same steps finetuning sparsely or with LoRA
// (bench/step_workload.h's methods), alone and interleaved with the full step so that
// their ratio to it is measured under the same load, with the time of each phase.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/step_workload.h"
#include "engine/allocator.h"
#include "engine/cpu/blas.h"
#include "engine/cpu/gemm_kernel.h"
#include "engine/parallel.h"
#include "nn/vit.h"

namespace {

using vitune::bench::fmnist_config;

vitune::nn::VitConfig vit_ti16_config() {
  vitune::nn::VitConfig config;
  config.img_size = 224;
  config.patch = 16;
  config.in_chans = 3;
  config.dim = 192;
  config.depth = 12;
  config.heads = 3;
  config.mlp_ratio = 4.0;
  config.num_classes = 1000;
  return config;
}

vitune::nn::VitConfig vit_b16_config() {
  vitune::nn::VitConfig config = vit_ti16_config();
  config.dim = 768;
  config.heads = 12;
  return config;
}

using vitune::bench::Method;
constexpr std::array<Method, 4> kMethods = {Method::Full, Method::Masked, Method::MaskedBiases, Method::Lora};

enum class Mode { Train, Forward };

// One untimed step first (it allocates the momentum buffers), then the timed steps with
// the allocator's peak reset so it measures the steady state.
void run_steps(benchmark::State& state, const vitune::nn::VitConfig& config, int64_t batch, Mode mode,
               Method method = Method::Full) {
  vitune::bench::StepWorkload workload(config, batch, vitune::Device::cpu(), method);
  auto step = [&] {
    if (mode == Mode::Train) {
      workload.update(workload.loss());
    } else {
      benchmark::DoNotOptimize(workload.logits_without_tape().value().raw());
    }
  };
  step();
  vitune::reset_peak_memory(vitune::Device::cpu());
  for (auto _ : state) step();
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["peak_bytes"] = benchmark::Counter(
      double(vitune::memory_stats(vitune::Device::cpu()).peak_bytes), benchmark::Counter::kDefaults,
      benchmark::Counter::kIs1024);
}

// Seconds of each phase of one training step, summed over the timed steps.
struct Phases {
  double forward = 0, backward = 0, update = 0, zero_grad = 0;
  double total() const { return forward + backward + update + zero_grad; }
};

// One training step of `workload`, its phases timed (forward includes the loss).
void timed_step(vitune::bench::StepWorkload& workload, Phases& phases) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  const Clock::time_point t0 = Clock::now();
  vitune::autograd::Variable loss = workload.loss();
  const Clock::time_point t1 = Clock::now();
  vitune::autograd::backward(loss);
  const Clock::time_point t2 = Clock::now();
  workload.optimizer->step();
  const Clock::time_point t3 = Clock::now();
  workload.optimizer->zero_grad();
  const Clock::time_point t4 = Clock::now();
  phases.forward += seconds(t0, t1);
  phases.backward += seconds(t1, t2);
  phases.update += seconds(t2, t3);
  phases.zero_grad += seconds(t3, t4);
}

// Every iteration runs one step of each method in turn, so that load on the machine
// hits them alike. Counters per method: the mean step in ms, its phases (fwd, bwd, opt,
// zero) in ms, and the ratio of its step to the full step's.
void run_methods_interleaved(benchmark::State& state, const vitune::nn::VitConfig& config, int64_t batch) {
  std::vector<std::unique_ptr<vitune::bench::StepWorkload>> workloads;
  for (Method method : kMethods) {
    workloads.push_back(std::make_unique<vitune::bench::StepWorkload>(config, batch, vitune::Device::cpu(), method));
    workloads.back()->update(workloads.back()->loss());
  }
  std::array<Phases, kMethods.size()> phases{};
  for (auto _ : state) {
    for (size_t m = 0; m < kMethods.size(); ++m) timed_step(*workloads[m], phases[m]);
  }
  const double steps = double(state.iterations());
  for (size_t m = 0; m < kMethods.size(); ++m) {
    const std::string name = vitune::bench::method_name(kMethods[m]);
    state.counters[name + "_ms"] = 1e3 * phases[m].total() / steps;
    state.counters[name + "_fwd_ms"] = 1e3 * phases[m].forward / steps;
    state.counters[name + "_bwd_ms"] = 1e3 * phases[m].backward / steps;
    state.counters[name + "_opt_ms"] = 1e3 * phases[m].update / steps;
    state.counters[name + "_zero_ms"] = 1e3 * phases[m].zero_grad / steps;
    if (m > 0) state.counters[name + "_ratio"] = phases[m].total() / phases[0].total();
  }
}

void BM_fmnist_train(benchmark::State& state) { run_steps(state, fmnist_config(), 128, Mode::Train); }
void BM_fmnist_method(benchmark::State& state) {
  const Method method = kMethods[size_t(state.range(0))];
  state.SetLabel(vitune::bench::method_name(method));
  run_steps(state, fmnist_config(), 128, Mode::Train, method);
}
void BM_fmnist_methods_interleaved(benchmark::State& state) { run_methods_interleaved(state, fmnist_config(), 128); }
void BM_vit_b16_methods_interleaved(benchmark::State& state) { run_methods_interleaved(state, vit_b16_config(), 2); }
void BM_fmnist_forward(benchmark::State& state) { run_steps(state, fmnist_config(), 128, Mode::Forward); }
void BM_vit_ti16_train(benchmark::State& state) { run_steps(state, vit_ti16_config(), 8, Mode::Train); }

BENCHMARK(BM_fmnist_train)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fmnist_forward)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vit_ti16_train)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fmnist_method)->DenseRange(0, int(kMethods.size()) - 1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fmnist_methods_interleaved)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vit_b16_methods_interleaved)->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("gemm_kernel", vitune::cpu::gemm_kernel_name());
  benchmark::AddCustomContext("blas_core", vitune::blas_core_name());
  benchmark::AddCustomContext("threads", std::to_string(vitune::num_threads()));
  try {
    benchmark::RunSpecifiedBenchmarks();
  } catch (const vitune::Error& error) {
    std::fprintf(stderr, "bench_train_step: %s\n", error.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
