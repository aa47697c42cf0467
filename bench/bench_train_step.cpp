// Google Benchmark of whole ViT steps on the CPU: one training step (forward,
// cross-entropy, backward, SGD with momentum 0.9, zero_grad) of the Fashion-MNIST ViT
// at batch 128 and of a ViT-Ti/16 at 224 and batch 8, and the Fashion-MNIST forward
// alone under NoGradGuard. Reports images per second and the peak bytes held by the
// allocator during the timed steps.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

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

enum class Mode { Train, Forward };

// One untimed step first (it allocates the momentum buffers), then the timed steps with
// the allocator's peak reset so it measures the steady state.
void run_steps(benchmark::State& state, const vitune::nn::VitConfig& config, int64_t batch, Mode mode) {
  vitune::bench::StepWorkload workload(config, batch, vitune::Device::cpu());
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

void BM_fmnist_train(benchmark::State& state) { run_steps(state, fmnist_config(), 128, Mode::Train); }
void BM_fmnist_forward(benchmark::State& state) { run_steps(state, fmnist_config(), 128, Mode::Forward); }
void BM_vit_ti16_train(benchmark::State& state) { run_steps(state, vit_ti16_config(), 8, Mode::Train); }

BENCHMARK(BM_fmnist_train)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fmnist_forward)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_vit_ti16_train)->UseRealTime()->Unit(benchmark::kMillisecond);

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
