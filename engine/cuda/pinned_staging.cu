// The pool of pinned staging blocks of pinned_staging.h. Blocks are sized in powers of
// two (64 KiB at least) and kept for reuse; a block is idle, being filled by the host,
// or in flight (its DMA queued, an event recorded behind it). A request takes the
// smallest idle block of its device that is large enough, else a new block while the
// pool is under its limit, else frees idle blocks that do not fit to make room, else
// waits for the oldest copy in flight.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/pinned_staging.h"
#include "engine/error.h"
#include "engine/parallel.h"

namespace vitune::cuda {

namespace {

constexpr size_t kChunk = size_t(64) << 20;          // the most one block stages at a time
constexpr size_t kSmallestBlock = size_t(64) << 10;  // small copies share this size
constexpr size_t kParallelCopyFrom = size_t(4) << 20;
constexpr size_t kCopyPiece = size_t(1) << 20;  // bytes per task of a parallel host copy

// VITUNE_PINNED_MB (MiB) when set, else 1 GiB; never under two chunks.
size_t pool_limit() {
  static const size_t limit = [] {
    size_t megabytes = 1024;
    if (const char* env = std::getenv("VITUNE_PINNED_MB")) {
      char* end = nullptr;
      const unsigned long long value = std::strtoull(env, &end, 10);
      VITUNE_CHECK(*env != '\0' && *end == '\0' && value > 0 && value < (1ull << 30), "VITUNE_PINNED_MB=", env,
                   ": expected a positive whole number of MiB");
      megabytes = size_t(value);
    }
    return std::max(megabytes << 20, 2 * kChunk);
  }();
  return limit;
}

size_t block_size(size_t bytes) {
  size_t size = kSmallestBlock;
  while (size < bytes) size *= 2;
  return size;
}

enum class BlockState { Idle, Filling, InFlight };

struct Block {
  char* host = nullptr;
  size_t bytes = 0;
  int device = 0;
  cudaEvent_t done = nullptr;  // recorded behind the block's last DMA
  BlockState state = BlockState::Idle;
  uint64_t submitted = 0;  // order of submission, to find the oldest copy in flight
};

class StagingPool {
 public:
  // An idle block of `device` of at least `bytes`, now Filling.
  Block* acquire(int device, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t size = block_size(bytes);
    for (;;) {
      refresh();
      Block* best = nullptr;
      for (const auto& b : blocks_) {
        if (b->state == BlockState::Idle && b->device == device && b->bytes >= bytes &&
            (best == nullptr || b->bytes < best->bytes)) {
          best = b.get();
        }
      }
      if (best == nullptr && total_ + size <= pool_limit()) best = allocate(device, size);
      if (best != nullptr) {
        best->state = BlockState::Filling;
        return best;
      }
      if (free_idle() > 0) continue;
      // Everything is in flight: wait for the oldest copy (under the lock, so that no
      // other thread frees its block meanwhile).
      Block* oldest = nullptr;
      for (const auto& b : blocks_) {
        if (b->state == BlockState::InFlight && (oldest == nullptr || b->submitted < oldest->submitted)) {
          oldest = b.get();
        }
      }
      VITUNE_CHECK(oldest != nullptr, "pinned staging: all ", total_,
                   " bytes are being filled by other threads; raise VITUNE_PINNED_MB");
      check_cuda(cudaEventSynchronize(oldest->done), "cudaEventSynchronize (a pinned staging block)");
    }
  }

  // The block's DMA was queued on `queue`: the block is in flight until the device is past it.
  void submit(Block* block, cudaStream_t queue) {
    std::lock_guard<std::mutex> lock(mutex_);
    const cudaError_t status = cudaEventRecord(block->done, queue);
    if (status != cudaSuccess) {
      // Without the event the only safe point to reuse the block is after the queue.
      cudaStreamSynchronize(queue);
      block->state = BlockState::Idle;
      check_cuda(status, "cudaEventRecord (a pinned staging block)");
    }
    block->state = BlockState::InFlight;
    block->submitted = ++sequence_;
  }

  // The block's DMA was not queued (filling it failed): it is idle again.
  void abandon(Block* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    block->state = BlockState::Idle;
  }

  int64_t bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return int64_t(total_);
  }

  void release_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    refresh();
    free_idle();
  }

 private:
  // In-flight blocks whose DMA is done become idle.
  void refresh() {
    for (const auto& b : blocks_) {
      if (b->state != BlockState::InFlight) continue;
      const cudaError_t status = cudaEventQuery(b->done);
      if (status == cudaSuccess) {
        b->state = BlockState::Idle;
      } else if (status != cudaErrorNotReady) {
        check_cuda(status, "cudaEventQuery (a pinned staging block)");
      } else {
        cudaGetLastError();  // cudaErrorNotReady is an answer, not an error to keep
      }
    }
  }

  Block* allocate(int device, size_t size) {
    VITUNE_CUDA_CHECK(cudaSetDevice(device));
    void* host = nullptr;
    cudaError_t status = cudaHostAlloc(&host, size, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation && free_idle() > 0) status = cudaHostAlloc(&host, size, cudaHostAllocPortable);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(cat("cannot pin ", size, " bytes of host memory for a copy to cuda:", device, ": ",
                      cudaGetErrorString(status), " (", total_, " bytes already pinned for staging)"));
    }
    auto block = std::make_unique<Block>();
    block->host = static_cast<char*>(host);
    block->bytes = size;
    block->device = device;
    status = cudaEventCreateWithFlags(&block->done, cudaEventDisableTiming);
    if (status != cudaSuccess) {
      cudaFreeHost(host);
      check_cuda(status, "cudaEventCreateWithFlags (a pinned staging block)");
    }
    total_ += size;
    blocks_.push_back(std::move(block));
    return blocks_.back().get();
  }

  // Frees every idle block; returns how many.
  int free_idle() {
    int freed = 0;
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      Block& b = **it;
      if (b.state != BlockState::Idle) {
        ++it;
        continue;
      }
      check_cuda(cudaEventDestroy(b.done), "cudaEventDestroy (a pinned staging block)");
      check_cuda(cudaFreeHost(b.host), "cudaFreeHost (a pinned staging block)");
      total_ -= b.bytes;
      it = blocks_.erase(it);
      ++freed;
    }
    return freed;
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;
  size_t total_ = 0;
  uint64_t sequence_ = 0;
};

// Never destroyed: the driver reclaims pinned memory at exit.
StagingPool& pool() {
  static StagingPool* p = new StagingPool;
  return *p;
}

// memcpy, shared by the thread pool when large.
void host_copy(char* destination, const char* source, size_t bytes) {
  if (bytes < kParallelCopyFrom) {
    std::memcpy(destination, source, bytes);
    return;
  }
  const int64_t pieces = int64_t((bytes + kCopyPiece - 1) / kCopyPiece);
  parallel_for(pieces, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const size_t offset = size_t(p) * kCopyPiece;
      std::memcpy(destination + offset, source + offset, std::min(kCopyPiece, bytes - offset));
    }
  });
}

}  // namespace

void staged_copy_to_device(void* destination, int device, const void* source, size_t bytes, cudaStream_t queue) {
  char* to = static_cast<char*>(destination);
  const char* from = static_cast<const char*>(source);
  for (size_t offset = 0; offset < bytes; offset += kChunk) {
    const size_t n = std::min(kChunk, bytes - offset);
    Block* block = pool().acquire(device, n);
    try {
      host_copy(block->host, from + offset, n);
      VITUNE_CUDA_CHECK(cudaMemcpyAsync(to + offset, block->host, n, cudaMemcpyHostToDevice, queue));
    } catch (...) {
      pool().abandon(block);
      throw;
    }
    pool().submit(block, queue);
  }
}

int64_t staging_pool_bytes() { return pool().bytes(); }

void release_idle_staging() { pool().release_idle(); }

}  // namespace vitune::cuda
