// The thread pool behind parallel_for: workers wait for each job, run their chunk and
// count themselves done. A training step runs hundreds of short jobs, often apart by
// more than a few microseconds of serial work (the tape, allocation), and waking a
// sleeping thread takes a system call on one side and tens of microseconds on the
// other. So a waiting thread first spins on the job word with kSpins pauses (40
// microseconds on a Zen 5), then looks again between yields of its core for up to
// kYieldingWait, so that a thread with real work on that core still runs, and only
// then sleeps on a condition variable: in a Fashion-MNIST training step the workers
// then go to sleep a few times per step instead of about 170.
//
// The job word holds the job's serial number and its chunk count together, so that a
// worker learns from one atomic load both that a job is new and whether it takes part.
// A worker that takes no part may still be looking when the caller has finished the job
// and published the next one: with the count in a member of its own, it could read the
// next job's count under the last job's serial, run a chunk of the next job and then run
// it again (ThreadSanitizer found the race). Only a taking-part worker reads the body and
// size, and the caller waits for every such worker before it writes them again.
#include "engine/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace vitune {

namespace {

thread_local bool inside_parallel_region = false;

// Tells the core this thread is spin-waiting (frees issue slots for a sibling thread).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class ThreadPool {
 public:
  ThreadPool() { resize(initial_size()); }
  ~ThreadPool() { stop_workers(); }

  int size() const { return size_; }

  void resize(int n) {
    if (n < 1) n = int(std::max(1u, std::thread::hardware_concurrency()));
    n = int(std::min<int64_t>(n, kMaxChunks));
    stop_workers();
    size_ = n;
    stopping_ = false;
    // New workers wait for the next job, not the last one that ran.
    for (int i = 1; i < n; ++i) workers_.emplace_back([this, i, job = job_.load()] { work(i, job); });
  }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    int64_t chunks = std::min<int64_t>(size_, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
    if (chunks <= 1 || inside_parallel_region) {
      body(0, n);
      return;
    }
    std::unique_lock<std::mutex> job_lock(job_mutex_);  // one job at a time
    body_ = &body;
    n_ = n;
    error_ = nullptr;
    pending_.store(int(chunks - 1), std::memory_order_relaxed);
    serial_ += 1;
    job_.store(serial_ << kChunkBits | uint64_t(chunks), std::memory_order_release);
    {
      // Taking the mutex orders this wake-up after any worker's last look at the
      // counter, so a worker that is about to sleep cannot miss it.
      std::lock_guard<std::mutex> lock(mutex_);
    }
    wake_.notify_all();
    run_chunk(0, chunks);
    if (!spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static int initial_size() {
    const char* env = std::getenv("VITUNE_NUM_THREADS");
    return env ? std::atoi(env) : 0;
  }

  void run_chunk(int64_t chunk, int64_t chunks) {
    int64_t begin = n_ * chunk / chunks;
    int64_t end = n_ * (chunk + 1) / chunks;
    inside_parallel_region = true;
    try {
      (*body_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    inside_parallel_region = false;
  }

  // Waits without sleeping until ready() holds: kSpins pauses, then yields of the core
  // for up to kYieldingWait; false if it never did.
  template <typename Ready>
  static bool spin_until(const Ready& ready) {
    for (int i = 0; i < kSpins; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    const auto deadline = std::chrono::steady_clock::now() + kYieldingWait;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready()) return true;
      std::this_thread::yield();
    }
    return ready();
  }

  void work(int index, uint64_t seen) {
    for (;;) {
      auto job_or_stop = [&] {
        return stopping_.load(std::memory_order_acquire) || job_.load(std::memory_order_acquire) != seen;
      };
      if (!spin_until(job_or_stop)) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, job_or_stop);
      }
      if (stopping_.load(std::memory_order_acquire)) return;
      seen = job_.load(std::memory_order_acquire);
      const int64_t chunks = int64_t(seen & kChunkMask);
      if (index >= chunks) continue;
      run_chunk(index, chunks);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
    workers_.clear();
  }

  int size_ = 1;
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  static constexpr int kSpins = 2000;
  static constexpr std::chrono::microseconds kYieldingWait{500};
  // The job word: serial << kChunkBits | chunks (the serial wraps after 2^44 jobs).
  static constexpr int kChunkBits = 20;
  static constexpr uint64_t kChunkMask = (uint64_t(1) << kChunkBits) - 1;
  static constexpr int64_t kMaxChunks = int64_t(kChunkMask);
  uint64_t serial_ = 0;  // the caller's own count of jobs
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> job_{0};
  std::atomic<bool> stopping_{false};
  std::exception_ptr error_;
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) { pool().resize(n); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  pool().run(n, grain, body);
}

}  // namespace vitune
