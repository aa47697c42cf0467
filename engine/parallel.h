// A small persistent thread pool. `parallel_for` splits [0, n) into contiguous chunks,
// one per thread, and runs them at once; the calling thread takes the first chunk.
//
// Determinism contract for every kernel: each output element is computed inside one
// chunk, by a loop whose order does not depend on the chunk boundaries. Then results
// are bit-identical for any thread count. Reductions across chunks are never split.
#pragma once

#include <cstdint>
#include <functional>

namespace vitune {

int num_threads();
// Sets the pool size (also OpenBLAS's); n < 1 means the hardware concurrency.
// The initial size is VITUNE_NUM_THREADS when set, else the hardware concurrency.
void set_num_threads(int n);

// Runs body(begin, end) over chunks of [0, n) of at least `grain` items each.
// Calls from inside a running chunk run serially on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace vitune
