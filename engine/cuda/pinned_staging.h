// The pinned (page-locked) host blocks that copies to a device are staged in. The device
// reads pageable host memory only through a bounce buffer of the driver's, which makes a
// large copy wait for the work queued before it; from pinned memory the copy is a plain
// asynchronous DMA. Staging copies the host bytes into a pinned block (threads share a
// large copy) and queues the DMA; the block is used again only after an event recorded
// behind the DMA says the device has read it. Include only from .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace vitune::cuda {

// Copies `bytes` from host memory `source` to `destination` on `device`, queued on
// `queue` (a stream of that device), through pinned blocks of at most 64 MiB each.
// Returns when `source` may be reused; waits only while every pinned block is in use and
// the pool is at its limit (VITUNE_PINNED_MB, default 1024 MiB, at least 128 MiB).
void staged_copy_to_device(void* destination, int device, const void* source, size_t bytes, cudaStream_t queue);

// Pinned bytes held by the pool, in use or idle.
int64_t staging_pool_bytes();
// Frees the idle blocks (those whose copies are done); throws naming the call when the
// driver refuses.
void release_idle_staging();

}  // namespace vitune::cuda
