// The caching device allocator of device_memory.h, and the release of cached memory.
//
// cudaMalloc and cudaFree synchronise the device and cost tens of microseconds; a
// training step allocates the same activation sizes every time. Freed blocks are kept,
// keyed by their rounded size, and handed out again for a request of the same rounded
// size. Blocks under 1 MiB round up to 512 bytes, larger ones to 2 MiB: few distinct
// sizes, little waste next to the block. The cache is not capped; when cudaMalloc fails
// it is emptied and the request retried once. Besides the cache it counts the reserved
// bytes (every cudaMalloc not yet freed) and their peak; tensors' requested bytes are
// counted by engine/allocator.cpp.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "engine/allocator.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/pinned_staging.h"
#include "engine/device_memory.h"
#include "engine/error.h"

namespace vitune::cuda {

namespace {

constexpr size_t kSmallGranule = 512;
constexpr size_t kLargeFrom = size_t(1) << 20;
constexpr size_t kLargeGranule = size_t(2) << 20;

size_t rounded_size(size_t bytes) {
  const size_t granule = bytes >= kLargeFrom ? kLargeGranule : kSmallGranule;
  const size_t rounded = (bytes + granule - 1) / granule * granule;
  return rounded == 0 ? kSmallGranule : rounded;
}

class DeviceCache {
 public:
  void* take(int device, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find({device, rounded});
    if (it == blocks_.end()) return nullptr;
    void* p = it->second;
    blocks_.erase(it);
    counts_[device].cached -= int64_t(rounded);
    return p;
  }

  void give(int device, void* p, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(std::make_pair(device, rounded), p);
    counts_[device].cached += int64_t(rounded);
  }

  // A block of `rounded` bytes came from cudaMalloc.
  void reserved(int device, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    Counts& c = counts_[device];
    c.reserved += int64_t(rounded);
    c.peak_reserved = std::max(c.peak_reserved, c.reserved);
  }

  // Frees every cached block (of one device, or of all when device < 0). A cached
  // block may still be read or written by queued kernels of the tensor that held it, so
  // each device finishes its queued work before its blocks go back to the driver. A
  // block the driver refuses to free stays cached (and counted as reserved); the first
  // such failure is thrown once every other block was freed.
  void release(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string failure;
    int synchronized = -1;
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      const int owner = it->first.first;
      const size_t rounded = it->first.second;
      if (device >= 0 && owner != device) {
        ++it;
        continue;
      }
      if (owner != synchronized) {
        check_cuda(cudaSetDevice(owner), "cudaSetDevice (releasing the cached device blocks)");
        check_cuda(cudaDeviceSynchronize(), cat("cudaDeviceSynchronize before releasing the cached blocks of cuda:",
                                                owner).c_str());
        synchronized = owner;
      }
      const cudaError_t status = cudaFree(it->second);
      if (status != cudaSuccess) {
        cudaGetLastError();
        if (failure.empty()) {
          failure = cat("cudaFree of a cached block of ", rounded, " bytes on cuda:", owner, " failed: ",
                        cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
        }
        ++it;
        continue;
      }
      Counts& c = counts_[owner];
      c.cached -= int64_t(rounded);
      c.reserved -= int64_t(rounded);
      it = blocks_.erase(it);
    }
    VITUNE_CHECK(failure.empty(), "releasing the CUDA block cache: ", failure);
  }

  int64_t cached_bytes(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = counts_.find(device);
    return it == counts_.end() ? 0 : it->second.cached;
  }

  ReservedBytes reserved_bytes(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = counts_.find(device);
    if (it == counts_.end()) return {};
    return {it->second.reserved, it->second.peak_reserved};
  }

  void reset_reserved_peak(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    Counts& c = counts_[device];
    c.peak_reserved = c.reserved;
  }

 private:
  struct Counts {
    int64_t cached = 0;         // bytes of the blocks in the cache
    int64_t reserved = 0;       // bytes of every block from cudaMalloc not yet freed
    int64_t peak_reserved = 0;  // most reserved since the last reset
  };
  std::mutex mutex_;
  std::multimap<std::pair<int, size_t>, void*> blocks_;
  std::map<int, Counts> counts_;
};

// Never destroyed: tensors released during static destruction still find it.
DeviceCache& cache() {
  static DeviceCache* c = new DeviceCache;
  return *c;
}

std::string mib(int64_t bytes) { return cat(double(bytes) / double(1 << 20), " MiB"); }

}  // namespace

void* device_allocate(int device, size_t bytes) {
  const size_t rounded = rounded_size(bytes);
  if (void* p = cache().take(device, rounded)) return p;
  stream(device);  // makes the device current and checks that it exists
  void* p = nullptr;
  cudaError_t status = cudaMalloc(&p, rounded);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    cache().release(device);
    cudaSetDevice(device);
    status = cudaMalloc(&p, rounded);
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error(cat("cannot allocate ", bytes, " bytes (", mib(int64_t(bytes)), ") on cuda:", device, ": ",
                    cudaGetErrorString(status), "; tensors hold ", mib(memory_stats(Device::cuda(device)).current_bytes),
                    ", the device has ", mib(int64_t(free_bytes)), " free of ", mib(int64_t(total_bytes))));
  }
  cache().reserved(device, rounded);
  return p;
}

void device_free(int device, void* pointer, size_t bytes) {
  if (pointer != nullptr) cache().give(device, pointer, rounded_size(bytes));
}

int64_t device_cached_bytes(int device) { return cache().cached_bytes(device); }

ReservedBytes device_reserved_bytes(int device) { return cache().reserved_bytes(device); }

void reset_device_reserved_peak(int device) { cache().reset_reserved_peak(device); }

void release_device_cache() {
  cache().release(-1);
  release_idle_staging();
}

int64_t pinned_staging_bytes() { return staging_pool_bytes(); }

}  // namespace vitune::cuda
