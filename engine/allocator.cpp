// Host allocator with byte accounting; CUDA memory is accounted by the CUDA backend
// through the same counters (see record_* below), so both report alike.
#include "engine/allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>

#include "engine/error.h"

namespace vitune {

namespace {

constexpr int kMaxDevices = 17;  // slot 0: host; 1..16: CUDA devices

struct Counters {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};

Counters& counters(Device device) {
  static Counters all[kMaxDevices];
  int slot = device.is_cpu() ? 0 : 1 + device.index;
  VITUNE_CHECK(slot >= 0 && slot < kMaxDevices, "device ", device.str(), " is out of range");
  return all[slot];
}

void record_allocation(Device device, size_t bytes) {
  Counters& c = counters(device);
  int64_t now = c.current.fetch_add(int64_t(bytes)) + int64_t(bytes);
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  c.allocations.fetch_add(1);
}

}  // namespace

void* allocate(Device device, size_t bytes) {
  VITUNE_CHECK(device.is_cpu(), "allocation on ", device.str(), ": this build has no CUDA backend");
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* pointer = std::aligned_alloc(kAlignment, rounded);
  VITUNE_CHECK(pointer != nullptr, "out of host memory: could not allocate ", bytes, " bytes (",
               counters(device).current.load(), " bytes already held)");
  record_allocation(device, bytes);
  return pointer;
}

void deallocate(Device device, void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  std::free(pointer);
  counters(device).current.fetch_sub(int64_t(bytes));
}

MemoryStats memory_stats(Device device) {
  Counters& c = counters(device);
  return {c.current.load(), c.peak.load(), c.allocations.load()};
}

void reset_peak_memory(Device device) {
  Counters& c = counters(device);
  c.peak.store(c.current.load());
}

}  // namespace vitune
