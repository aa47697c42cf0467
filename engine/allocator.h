// Every tensor's bytes come from here. The allocator aligns host blocks to 64 bytes
// (one cache line, one AVX-512 register) and keeps, per device, the bytes currently
// held by tensors and the peak since the last reset; commands report their peak
// memory from it. Beside those requested bytes it keeps the reserved ones: what the
// allocator holds from the system (the C allocator on the host, cudaMalloc on a GPU),
// that is every live block at its rounded size plus the cached blocks -- what the
// process really occupies.
//
// Freed host blocks of 16 KiB and more are kept in a cache and handed out again for
// the same size rounded up to 4 KiB: a training step allocates the same activations every time, and a
// fresh block from the operating system costs a page fault per 4 KiB on first touch.
// Cached bytes are not "current"; they are reported apart and capped (default 2 GiB,
// or VITUNE_HOST_CACHE_MB).
//
// Host memory held by tensors is limited to the machine's physical memory, or to
// VITUNE_MAX_HOST_MB when set: a request that would take the bytes held past the limit
// fails with a clear error before anything is allocated, instead of being attempted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/device.h"

namespace vitune {

struct MemoryStats {
  int64_t current_bytes = 0;  // requested by live tensors
  int64_t peak_bytes = 0;     // most ever requested by live tensors since the last reset
  int64_t allocations = 0;    // blocks handed out since start
  int64_t cached_bytes = 0;   // freed blocks kept for reuse
  // Obtained from the system and not yet returned: live blocks at their rounded size
  // plus cached blocks (on a GPU: the bytes of every cudaMalloc not yet freed). The
  // cpu and the emulated device share one host pool, so both report its figures.
  int64_t reserved_bytes = 0;
  int64_t peak_reserved_bytes = 0;  // most ever reserved since the last reset
};

constexpr size_t kAlignment = 64;

// Allocates `bytes` on `device`; throws vitune::Error when the memory cannot be had or
// when, on the host, the bytes held by tensors would exceed host_memory_limit().
void* allocate(Device device, size_t bytes);
void deallocate(Device device, void* pointer, size_t bytes);

MemoryStats memory_stats(Device device);
// Sets the peaks to the current bytes (requested and reserved), so the next peaks
// measure one phase of work. On the host the reserved peak is the shared pool's.
void reset_peak_memory(Device device);
// Returns every cached host block to the operating system and every cached device
// block to the CUDA driver.
void release_cached_memory();

// The most bytes host tensors may hold together: VITUNE_MAX_HOST_MB (MiB) when set,
// else the machine's physical memory.
size_t host_memory_limit();
// Replaces the limit for this process (0: back to the default above).
void set_host_memory_limit(size_t bytes);

}  // namespace vitune
