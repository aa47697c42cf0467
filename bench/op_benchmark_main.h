// The main() of the Google Benchmark programs that time single host ops (bench_attention,
// bench_gelu, bench_masked_grad): it reports the instruction-set level that the host
// kernels' loops ran at and the size of the thread pool beside the results.
#pragma once

#include <benchmark/benchmark.h>

#include <string>

#include "engine/cpu/isa.h"
#include "engine/parallel.h"

namespace vitune::bench {

inline int run_op_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("cpu_isa", cpu::isa_name(cpu::cpu_isa()));
  benchmark::AddCustomContext("threads", std::to_string(num_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace vitune::bench
