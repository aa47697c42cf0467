// The caching device allocator and the transfers of device_memory.h.
//
// cudaMalloc and cudaFree synchronise the device and cost tens of microseconds; a
// training step allocates the same activation sizes every time. Freed blocks are kept,
// keyed by their rounded size, and handed out again for a request of the same rounded
// size. Blocks under 1 MiB round up to 512 bytes, larger ones to 2 MiB: few distinct
// sizes, little waste next to the block. The cache is not capped; when cudaMalloc fails
// it is emptied and the request retried once.
#include <map>
#include <mutex>

#include "engine/allocator.h"
#include "engine/cuda/cuda_context.h"
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
    bytes_[device] -= int64_t(rounded);
    return p;
  }

  void give(int device, void* p, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(std::make_pair(device, rounded), p);
    bytes_[device] += int64_t(rounded);
  }

  // Frees every cached block (of one device, or of all when device < 0). A cached
  // block may still be read or written by queued kernels of the tensor that held it, so
  // each device finishes its queued work before its blocks go back to the driver.
  void release(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    int synchronized = -1;
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      if (device >= 0 && it->first.first != device) {
        ++it;
        continue;
      }
      cudaSetDevice(it->first.first);
      if (it->first.first != synchronized) {
        cudaDeviceSynchronize();
        synchronized = it->first.first;
      }
      cudaFree(it->second);
      bytes_[it->first.first] -= int64_t(it->first.second);
      it = blocks_.erase(it);
    }
  }

  int64_t bytes(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = bytes_.find(device);
    return it == bytes_.end() ? 0 : it->second;
  }

 private:
  std::mutex mutex_;
  std::multimap<std::pair<int, size_t>, void*> blocks_;
  std::map<int, int64_t> bytes_;
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
  return p;
}

void device_free(int device, void* pointer, size_t bytes) {
  if (pointer != nullptr) cache().give(device, pointer, rounded_size(bytes));
}

int64_t device_cached_bytes(int device) { return cache().bytes(device); }

void release_device_cache() { cache().release(-1); }

void copy_bytes(void* destination, Device destination_device, const void* source, Device source_device,
                size_t bytes) {
  if (bytes == 0) return;
  VITUNE_CHECK(!(destination_device.is_cpu() && source_device.is_cpu()), "copy_bytes: host to host");
  if (source_device.is_cpu()) {
    cudaStream_t s = stream(destination_device.index);
    VITUNE_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, s));
    VITUNE_CUDA_CHECK(cudaStreamSynchronize(s));
  } else if (destination_device.is_cpu()) {
    cudaStream_t s = stream(source_device.index);
    VITUNE_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToHost, s));
    VITUNE_CUDA_CHECK(cudaStreamSynchronize(s));
  } else if (source_device == destination_device) {
    VITUNE_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice,
                                      stream(source_device.index)));
  } else {
    // Between two devices: the source's pending work first, then the copy on the
    // destination's stream, which later work there is ordered after.
    VITUNE_CUDA_CHECK(cudaStreamSynchronize(stream(source_device.index)));
    cudaStream_t s = stream(destination_device.index);
    VITUNE_CUDA_CHECK(cudaMemcpyPeerAsync(destination, destination_device.index, source, source_device.index,
                                          bytes, s));
    VITUNE_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

void zero_bytes(void* pointer, int device, size_t bytes) {
  if (bytes == 0) return;
  VITUNE_CUDA_CHECK(cudaMemsetAsync(pointer, 0, bytes, stream(device)));
}

void synchronize(int device) { VITUNE_CUDA_CHECK(cudaStreamSynchronize(stream(device))); }

}  // namespace vitune::cuda
