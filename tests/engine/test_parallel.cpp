// The thread pool of engine/parallel.h: every index of every job runs exactly once, also
// when consecutive jobs have different chunk counts, so that a worker that took no part
// in one job cannot mistake the next job's chunks for its own. The pool runs with more
// threads than the machine has cores here, so workers are preempted between jobs. In an
// ordinary build the bad interleaving is rare; under ThreadSanitizer (ctest's
// sanitize_thread) the pool before its fix, which read the chunk count and the job serial
// separately, made this test report the race and hang within 2 minutes, and the fixed
// pool passes it with no report in about 5 s.
#include <atomic>
#include <vector>

#include "engine/parallel.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(ThreadPool, EveryIndexRunsOnceWhenChunkCountsChangeFromJobToJob) {
  const int before = num_threads();
  set_num_threads(6);
  std::vector<std::atomic<int>> runs(6);
  for (int job = 0; job < 5000; ++job) {
    const int64_t n = 2 + job % 5;  // 2 to 6 chunks of one index each
    for (auto& count : runs) count.store(0, std::memory_order_relaxed);
    parallel_for(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) runs[size_t(i)].fetch_add(1, std::memory_order_relaxed);
    });
    for (int64_t i = 0; i < 6; ++i) {
      ASSERT_EQ(runs[size_t(i)].load(), i < n ? 1 : 0) << "job " << job << ", index " << i << " of " << n;
    }
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace vitune::testing
