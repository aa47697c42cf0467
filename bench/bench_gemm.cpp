// Google Benchmark of ops::gemm (f32) at the GEMM shapes of one ViT training step:
// for the qkv, proj, fc1 and fc2 layers of a ViT-Ti/16 and a ViT-B/16 at batch 8
// (T = 8 * 197 token rows) and of the Fashion-MNIST ViT at batch 128 (T = 128 * 50,
// width 64), the forward product and both backward products as autograd::linear
// issues them. Reports GFLOP/s and the fraction of a stated peak
// (VITUNE_PEAK_GFLOPS, default 438: two AVX-512 cores at fp32), and contrasts the
// plain reference loop with ops::gemm at one small shape. The Fashion-MNIST forward
// products also run with their bias, added in the kernel or by a separate pass. The
// ViT-B/16 products run again as ops::gemm_bf16 (bf16 operands, fp32 accumulation: the
// products of --bf16), against twice that peak (vdpbf16ps does two multiply-adds per
// fp32 lane where an FMA does one), and as the emulation that runs where the CPU lacks
// AVX512_BF16 (operands rounded, then the fp32 kernel), so that one run compares the two.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cpu/blas.h"
#include "engine/cpu/gemm_kernel.h"
#include "engine/cpu/isa.h"
#include "bench/random_tensor.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace {

using vitune::Tensor;

constexpr int64_t kBatch = 8;
constexpr int64_t kTokens = 197;  // 14 x 14 patches of a 224 image, plus the cls token
constexpr int64_t kRows = kBatch * kTokens;
constexpr int64_t kFmnistRows = 128 * 50;  // batch 128, 7 x 7 patches of a 28 image plus cls
constexpr double kDefaultPeakGflops = 438.0;

struct LinearLayer {
  const char* model;
  const char* layer;
  int64_t in;
  int64_t out;
  int64_t rows;  // T, the token rows of the batch
};

std::vector<LinearLayer> vit_layers(const char* model, int64_t dim, int64_t hidden, int64_t rows = kRows) {
  return {{model, "qkv", dim, 3 * dim, rows},
          {model, "proj", dim, dim, rows},
          {model, "fc1", dim, hidden, rows},
          {model, "fc2", hidden, dim, rows}};
}

// The three products of y = x W^T for x [T, in], W [out, in]:
//   forward      y  = x W^T    gemm(false, true)   [T,in]  x [out,in]^T -> [T,out]
//   input_grad   dx = dY W     gemm(false, false)  [T,out] x [out,in]   -> [T,in]
//   weight_grad  dW += dY^T x  gemm(true, false)   [T,out]^T x [T,in]   -> [out,in]
// (the weight gradient accumulates, beta = 1, as into a parameter's gradient).
enum class Pass { Forward, InputGrad, WeightGrad };

const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::Forward: return "forward";
    case Pass::InputGrad: return "input_grad";
    case Pass::WeightGrad: return "weight_grad";
  }
  return "?";
}

struct GemmCase {
  bool trans_a;
  bool trans_b;
  double beta;
  Tensor a;
  Tensor b;
  Tensor c;
};

// An operand: seed 0, and a stream per operand (x 1, W 2, dY 3), so that a product's
// operands are the same in every pass.
Tensor random_matrix(int64_t rows, int64_t cols, uint64_t stream) {
  return vitune::bench::random_normal_tensor({rows, cols}, 0, stream);
}

GemmCase make_case(const LinearLayer& layer, Pass pass, int64_t rows) {
  switch (pass) {
    case Pass::Forward:
      return {false, true, 0.0, random_matrix(rows, layer.in, 1), random_matrix(layer.out, layer.in, 2),
              Tensor({rows, layer.out}, vitune::DType::F32, vitune::Device::cpu())};
    case Pass::InputGrad:
      return {false, false, 0.0, random_matrix(rows, layer.out, 3), random_matrix(layer.out, layer.in, 2),
              Tensor({rows, layer.in}, vitune::DType::F32, vitune::Device::cpu())};
    case Pass::WeightGrad:
      return {true, false, 1.0, random_matrix(rows, layer.out, 3), random_matrix(rows, layer.in, 1),
              Tensor::zeros({layer.out, layer.in}, vitune::DType::F32, vitune::Device::cpu())};
  }
  return {};
}

using GemmFunction = void (*)(bool, bool, double, const Tensor&, const Tensor&, double, Tensor&);

// Times `product` (which writes gemm_case.c) and sets the rate counters; flops = 2 M N K
// per call.
template <typename Product>
void run_product(benchmark::State& state, const Product& product, GemmCase& gemm_case, int64_t flops,
                 double peak_gflops) {
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    product();
    benchmark::DoNotOptimize(gemm_case.c.raw());
    benchmark::ClobberMemory();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double total_gflop = 1e-9 * double(flops) * double(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(total_gflop, benchmark::Counter::kIsRate);
  state.counters["peak_fraction"] = seconds > 0 ? total_gflop / seconds / peak_gflops : 0.0;
}

// Times `gemm` on one case.
void run_gemm(benchmark::State& state, GemmFunction gemm, GemmCase& gemm_case, int64_t flops,
              double peak_gflops) {
  run_product(
      state,
      [&] { gemm(gemm_case.trans_a, gemm_case.trans_b, 1.0, gemm_case.a, gemm_case.b, gemm_case.beta, gemm_case.c); },
      gemm_case, flops, peak_gflops);
}

std::string shape_label(int64_t m, int64_t n, int64_t k) {
  return "M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k);
}

void register_layer_pass(const char* prefix, GemmFunction gemm, const LinearLayer& layer, Pass pass,
                         double peak_gflops) {
  std::string name = std::string(prefix) + "/" + layer.model + "/" + layer.layer + "/" + pass_name(pass);
  benchmark::RegisterBenchmark(name.c_str(), [gemm, layer, pass, peak_gflops](benchmark::State& state) {
    GemmCase gemm_case = make_case(layer, pass, layer.rows);
    int64_t m = gemm_case.c.dim(0), n = gemm_case.c.dim(1);
    int64_t k = pass == Pass::Forward ? layer.in : pass == Pass::InputGrad ? layer.out : layer.rows;
    state.SetLabel(shape_label(m, n, k));
    run_gemm(state, gemm, gemm_case, 2 * m * n * k, peak_gflops);
  })->UseRealTime()->Unit(benchmark::kMillisecond);
}

// A layer's forward product with its bias: "linear_forward/..." adds it in the kernel's
// tile stores (ops::linear_forward), "gemm_then_bias_add/..." runs the product and then
// ops::add_row_broadcast, the pass over the output that the first saves.
void register_forward_with_bias(const LinearLayer& layer, bool fused, double peak_gflops) {
  std::string name = std::string(fused ? "linear_forward/" : "gemm_then_bias_add/") + layer.model + "/" + layer.layer;
  benchmark::RegisterBenchmark(name.c_str(), [layer, fused, peak_gflops](benchmark::State& state) {
    GemmCase f = make_case(layer, Pass::Forward, layer.rows);
    const Tensor bias = random_matrix(1, layer.out, 4).reshape({layer.out});
    state.SetLabel(shape_label(layer.rows, layer.out, layer.in));
    run_product(
        state,
        [&] {
          if (fused) return vitune::ops::linear_forward(f.a, f.b, bias, f.c);
          vitune::ops::gemm(false, true, 1.0, f.a, f.b, 0.0, f.c);
          vitune::ops::add_row_broadcast(f.c, bias);
        },
        f, 2 * layer.rows * layer.out * layer.in, peak_gflops);
  })->UseRealTime()->Unit(benchmark::kMillisecond);
}

// The reference triple loop and ops::gemm on one image's proj forward of ViT-Ti.
void register_small_contrast(double peak_gflops) {
  LinearLayer small{"vit_ti16", "proj", 192, 192, kTokens};
  int64_t flops = 2 * kTokens * small.out * small.in;
  std::string label = shape_label(kTokens, small.out, small.in);
  benchmark::RegisterBenchmark("gemm_reference/vit_ti16/proj/forward_one_image",
                               [=](benchmark::State& state) {
                                 GemmCase gemm_case = make_case(small, Pass::Forward, kTokens);
                                 state.SetLabel(label);
                                 run_gemm(state, vitune::ops::gemm_reference, gemm_case, flops, peak_gflops);
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gemm/vit_ti16/proj/forward_one_image", [=](benchmark::State& state) {
    GemmCase gemm_case = make_case(small, Pass::Forward, kTokens);
    state.SetLabel(label);
    run_gemm(state, vitune::ops::gemm, gemm_case, flops, peak_gflops);
  })->UseRealTime()->Unit(benchmark::kMillisecond);
}

// The bf16 emulation: round_to_bf16 on both operands, then the fp32 GEMM.
void gemm_bf16_emulated(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
                        Tensor& c) {
  vitune::ops::gemm(trans_a, trans_b, alpha, vitune::ops::round_to_bf16(a), vitune::ops::round_to_bf16(b), beta, c);
}

// VITUNE_PEAK_GFLOPS when set (a positive number), else the reference machine's peak.
double peak_gflops_from_environment() {
  const char* text = std::getenv("VITUNE_PEAK_GFLOPS");
  if (text == nullptr || *text == '\0') return kDefaultPeakGflops;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  VITUNE_CHECK(*end == '\0' && value > 0, "bench_gemm: VITUNE_PEAK_GFLOPS='", text,
               "': expected a positive number of GFLOP/s");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  double peak_gflops = 0;
  try {
    peak_gflops = peak_gflops_from_environment();
  } catch (const vitune::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("gemm_kernel", vitune::cpu::gemm_kernel_name());
  benchmark::AddCustomContext("gemm_bf16_kernel", vitune::cpu::gemm_bf16_kernel_name());
  benchmark::AddCustomContext("cpu_isa", vitune::cpu::isa_name(vitune::cpu::cpu_isa()));
  benchmark::AddCustomContext("blas_core", vitune::blas_core_name());
  benchmark::AddCustomContext("threads", std::to_string(vitune::num_threads()));
  benchmark::AddCustomContext("peak_gflops", std::to_string(peak_gflops));
  benchmark::AddCustomContext("rows_T", std::to_string(kRows) + " (batch 8 x 197 tokens); fmnist " +
                                           std::to_string(kFmnistRows) + " (batch 128 x 50 tokens)");
  const Pass passes[] = {Pass::Forward, Pass::InputGrad, Pass::WeightGrad};
  for (const LinearLayer& layer : vit_layers("fmnist", 64, 256, kFmnistRows)) {
    for (Pass pass : passes) register_layer_pass("gemm", vitune::ops::gemm, layer, pass, peak_gflops);
  }
  for (bool fused : {false, true}) {
    for (const LinearLayer& layer : vit_layers("fmnist", 64, 256, kFmnistRows)) {
      register_forward_with_bias(layer, fused, peak_gflops);
    }
  }
  for (const LinearLayer& layer : vit_layers("vit_ti16", 192, 768)) {
    for (Pass pass : passes) register_layer_pass("gemm", vitune::ops::gemm, layer, pass, peak_gflops);
  }
  for (const LinearLayer& layer : vit_layers("vit_b16", 768, 3072)) {
    for (Pass pass : passes) register_layer_pass("gemm", vitune::ops::gemm, layer, pass, peak_gflops);
  }
  for (const LinearLayer& layer : vit_layers("vit_b16", 768, 3072)) {
    for (Pass pass : passes) register_layer_pass("gemm_bf16", vitune::ops::gemm_bf16, layer, pass, 2 * peak_gflops);
    for (Pass pass : passes) register_layer_pass("gemm_bf16_emulated", gemm_bf16_emulated, layer, pass, 2 * peak_gflops);
  }
  register_small_contrast(peak_gflops);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
