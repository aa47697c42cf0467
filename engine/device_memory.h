// Device memory and transfers, as the device-neutral engine (allocator, Tensor) sees
// them: the interface the CUDA backend implements (engine/cuda/device_memory.cu). In a
// build without CUDA (engine/cuda/no_cuda.cpp) every function throws a vitune::Error that
// says so. Host memory, of the cpu and the emulated device alike, is the allocator's own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/device.h"

namespace vitune::cuda {

// A block of `bytes` on CUDA device `device` from the caching allocator (cudaMalloc only
// when no cached block of the rounded size is free; on out-of-memory the cache is
// emptied and the request retried once, then a clear error with the bytes held).
void* device_allocate(int device, size_t bytes);
// Returns the block to the cache. All work runs on one stream per device, so a block
// freed here may be handed out again at once: later kernels are ordered after earlier.
void device_free(int device, void* pointer, size_t bytes);
// Bytes held in the cache of `device` (not in use by tensors).
int64_t device_cached_bytes(int device);
// Frees every cached block of every device.
void release_device_cache();

// Copies `bytes` between any two of host and CUDA devices (a host side is given as
// Device::cpu()); returns when the copy is complete (so host memory may be reused at
// once).
void copy_bytes(void* destination, Device destination_device, const void* source, Device source_device,
                size_t bytes);
// Sets `bytes` bytes at `pointer` on CUDA device `device` to zero (stream-ordered).
void zero_bytes(void* pointer, int device, size_t bytes);
// Waits until all work queued on `device` is done (for timings and before host reads).
void synchronize(int device);

}  // namespace vitune::cuda
