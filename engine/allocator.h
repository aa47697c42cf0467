// Every tensor's bytes come from here. The allocator aligns host blocks to 64 bytes
// (one cache line, one AVX-512 register) and keeps, per device, the bytes currently
// held and the peak since the last reset; commands report their peak memory from it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/device.h"

namespace vitune {

struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  // blocks handed out since start
};

constexpr size_t kAlignment = 64;

// Allocates `bytes` on `device`; throws vitune::Error when the memory cannot be had.
void* allocate(Device device, size_t bytes);
void deallocate(Device device, void* pointer, size_t bytes);

MemoryStats memory_stats(Device device);
// Sets the peak to the current bytes, so the next peak measures one phase of work.
void reset_peak_memory(Device device);

}  // namespace vitune
