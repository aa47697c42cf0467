// Compares a `vitune trace` output with a reference trace (tests/golden/tiny_trace.safetensors
// holds PyTorch's), tensor by tensor, at the tolerances of the golden tests (NaN fails):
// |got - ref| <= abs + rel |ref| with (1e-5, 1e-4) for forward values and (1e-5, 1e-3)
// for gradients (`grad.*`). Every tensor of the trace must be in the reference with its
// shape. Prints, per tensor, the error of its entry furthest outside (or least inside)
// its tolerance, and a verdict; exits 1 on any mismatch.
// A plain program (the GPU benchmark runs it where Python may be missing):
//   compare_trace TRACE.safetensors REFERENCE.safetensors
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "nn/safetensors.h"

int main(int argc, char** argv) try {
  using namespace vitune;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TRACE.safetensors REFERENCE.safetensors\n", argv[0]);
    return 2;
  }
  const nn::SafetensorsFile trace = nn::read_safetensors(argv[1]);
  const nn::SafetensorsFile reference = nn::read_safetensors(argv[2]);
  int failed = 0;
  for (const std::string& name : trace.names) {
    const bool gradient = name.rfind("grad.", 0) == 0;
    const double abs_tol = 1e-5, rel_tol = gradient ? 1e-3 : 1e-4;
    const Tensor got = trace.at(name).to(DType::F64);
    const Tensor ref = reference.at(name).to(DType::F64);
    if (got.shape() != ref.shape()) {
      std::printf("%-32s shape %s, reference %s  MISMATCH\n", name.c_str(), shape_str(got.shape()).c_str(),
                  shape_str(ref.shape()).c_str());
      ++failed;
      continue;
    }
    double worst_error = 0, worst_excess = -INFINITY;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double error = std::fabs(got.item(i) - ref.item(i));
      const double excess = error - (abs_tol + rel_tol * std::fabs(ref.item(i)));
      if (std::isnan(excess)) {
        worst_excess = worst_error = NAN;
        break;
      }
      if (excess > worst_excess) {
        worst_excess = excess;
        worst_error = error;
      }
    }
    const bool ok = worst_excess <= 0;
    failed += ok ? 0 : 1;
    std::printf("%-32s error %.3g (tolerance %.0e + %.0e |ref|)  %s\n", name.c_str(), worst_error, abs_tol,
                rel_tol, ok ? "ok" : "MISMATCH");
  }
  std::printf("%zu tensors compared, %d outside tolerance\n", trace.names.size(), failed);
  return failed == 0 ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "compare_trace: %s\n", error.what());
  return 1;
}
