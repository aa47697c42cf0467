// The process-wide FLOP counter of flop_counter.h.
#include "engine/flop_counter.h"

#include <atomic>

namespace vitune {

namespace {
std::atomic<int64_t> counter{0};
}

void count_flops(int64_t flops) { counter.fetch_add(flops, std::memory_order_relaxed); }
int64_t flops_counted() { return counter.load(); }
void reset_flop_counter() { counter.store(0); }

}  // namespace vitune
