// Host allocator with byte accounting and a size-keyed cache of large freed blocks.
// The cpu and the emulated device both take host memory from it, each with requested
// counters of its own and one shared reserved count (the pool's blocks come from, and go
// back to, the C allocator for both). CUDA memory comes from the CUDA backend's caching
// allocator (the interface engine/device_memory.h), whose requested bytes are accounted
// through the same counters and whose reserved bytes it counts itself.
#include "engine/allocator.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <algorithm>
#include <string>
#include <map>
#include <mutex>

#include "engine/device_memory.h"
#include "engine/devices.h"
#include "engine/error.h"

namespace vitune {

namespace {

constexpr int kMaxDevices = 18;  // slot 0: cpu; 1: emulated; 2..17: CUDA devices 0..15
constexpr size_t kCachedFrom = size_t(16) << 10;
constexpr size_t kCachedGranule = size_t(4) << 10;  // cached sizes round up to 4 KiB

struct Counters {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};

Counters& counters(Device device) {
  static Counters all[kMaxDevices];
  const int slot = device.is_cpu() ? 0 : device.is_emulated() ? 1 : 2 + device.index;
  VITUNE_CHECK(slot >= 0 && slot < kMaxDevices, "device ", device.str(), " is out of range");
  return all[slot];
}

// Raises `peak` to `now` unless it is already higher.
void raise_peak(std::atomic<int64_t>& peak, int64_t now) {
  int64_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
}

void record_allocation(Device device, size_t bytes) {
  Counters& c = counters(device);
  raise_peak(c.peak, c.current.fetch_add(int64_t(bytes)) + int64_t(bytes));
  c.allocations.fetch_add(1);
}

// The host pool's reserved bytes: blocks obtained from the C allocator and not yet
// returned to it, in use or cached.
struct Reserved {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  void add(size_t bytes) { raise_peak(peak, current.fetch_add(int64_t(bytes)) + int64_t(bytes)); }
  void remove(size_t bytes) { current.fetch_sub(int64_t(bytes)); }
};

Reserved& host_reserved() {
  static Reserved reserved;
  return reserved;
}

size_t rounded_size(size_t bytes) {
  size_t granule = bytes >= kCachedFrom ? kCachedGranule : kAlignment;
  size_t rounded = (bytes + granule - 1) / granule * granule;
  return rounded == 0 ? kAlignment : rounded;
}

class HostCache {
 public:
  HostCache() {
    const char* env = std::getenv("VITUNE_HOST_CACHE_MB");
    limit_ = (env ? size_t(std::atoll(env)) : size_t(2048)) << 20;
  }

  void* take(size_t rounded) {
    if (rounded < kCachedFrom) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(rounded);
    if (it == blocks_.end()) return nullptr;
    void* p = it->second;
    blocks_.erase(it);
    bytes_ -= rounded;
    return p;
  }

  // Keeps the block if it is large and fits under the limit; else frees it.
  void give(void* p, size_t rounded) {
    if (rounded >= kCachedFrom) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (bytes_ + rounded <= limit_) {
        blocks_.emplace(rounded, p);
        bytes_ += rounded;
        return;
      }
    }
    std::free(p);
    host_reserved().remove(rounded);
  }

  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, p] : blocks_) std::free(p);
    blocks_.clear();
    host_reserved().remove(bytes_);
    bytes_ = 0;
  }

  size_t bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  size_t bytes_ = 0;
  size_t limit_ = 0;
};

// The default host limit: VITUNE_MAX_HOST_MB when set (a positive integer of MiB),
// else the physical memory.
size_t default_host_memory_limit() {
  if (const char* env = std::getenv("VITUNE_MAX_HOST_MB")) {
    char* end = nullptr;
    const unsigned long long megabytes = std::strtoull(env, &end, 10);
    VITUNE_CHECK(*env != '\0' && *end == '\0' && megabytes > 0 && megabytes < (1ull << 40),
                 "VITUNE_MAX_HOST_MB=", env, ": expected a positive whole number of MiB");
    return size_t(megabytes) << 20;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return size_t(1) << 50;  // unknown: only the overflow guard
  return size_t(pages) * size_t(page_size);
}

std::atomic<size_t>& host_limit_override() {
  static std::atomic<size_t> bytes{0};
  return bytes;
}

std::string mib(size_t bytes) { return cat(double(bytes) / double(1 << 20), " MiB"); }

// Never destroyed: tensors released during static destruction still find it.
HostCache& host_cache() {
  static HostCache* cache = new HostCache;
  return *cache;
}

}  // namespace

void* allocate(Device device, size_t bytes) {
  if (device.is_cuda()) {
    check_device_available(device, "allocation on");
    void* pointer = cuda::device_allocate(device.index, bytes);
    record_allocation(device, bytes);
    return pointer;
  }
  const size_t limit = host_memory_limit();
  // The limit is on host memory, which the cpu and the emulated device share.
  const int64_t host_bytes = counters(Device::cpu()).current.load() + counters(Device::emulated()).current.load();
  const size_t held = size_t(std::max<int64_t>(host_bytes, 0));
  if (bytes > limit || held > limit - bytes) {
    const char* source = host_limit_override().load() != 0         ? ""
                         : std::getenv("VITUNE_MAX_HOST_MB") != nullptr ? " (VITUNE_MAX_HOST_MB)"
                                                                        : " (physical memory; VITUNE_MAX_HOST_MB sets another)";
    throw Error(cat("cannot allocate ", bytes, " bytes (", mib(bytes), ") of host memory: tensors already hold ",
                    mib(held), " and the limit is ", mib(limit), source));
  }
  size_t rounded = rounded_size(bytes);
  void* pointer = host_cache().take(rounded);
  if (pointer == nullptr) {
    pointer = std::aligned_alloc(kAlignment, rounded);
    if (pointer == nullptr) {
      // Cached blocks of other sizes may be what stands in the way: return them, retry.
      host_cache().release();
      pointer = std::aligned_alloc(kAlignment, rounded);
    }
    VITUNE_CHECK(pointer != nullptr, "out of host memory: could not allocate ", bytes, " bytes (",
                 counters(device).current.load(), " bytes already held by tensors)");
    host_reserved().add(rounded);
  }
  record_allocation(device, bytes);
  return pointer;
}

void deallocate(Device device, void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  if (!device.host_memory()) {
    cuda::device_free(device.index, pointer, bytes);
  } else {
    host_cache().give(pointer, rounded_size(bytes));
  }
  counters(device).current.fetch_sub(int64_t(bytes));
}

MemoryStats memory_stats(Device device) {
  Counters& c = counters(device);
  MemoryStats stats;
  stats.current_bytes = c.current.load();
  stats.peak_bytes = c.peak.load();
  stats.allocations = c.allocations.load();
  if (device.host_memory()) {
    stats.cached_bytes = int64_t(host_cache().bytes());
    stats.reserved_bytes = host_reserved().current.load();
    stats.peak_reserved_bytes = host_reserved().peak.load();
  } else {
    stats.cached_bytes = cuda::device_cached_bytes(device.index);
    const cuda::ReservedBytes reserved = cuda::device_reserved_bytes(device.index);
    stats.reserved_bytes = reserved.current;
    stats.peak_reserved_bytes = reserved.peak;
  }
  return stats;
}

void reset_peak_memory(Device device) {
  Counters& c = counters(device);
  c.peak.store(c.current.load());
  if (device.host_memory()) {
    host_reserved().peak.store(host_reserved().current.load());
  } else {
    cuda::reset_device_reserved_peak(device.index);
  }
}

void release_cached_memory() {
  host_cache().release();
  cuda::release_device_cache();
}

size_t host_memory_limit() {
  const size_t override_bytes = host_limit_override().load();
  if (override_bytes != 0) return override_bytes;
  static const size_t default_bytes = default_host_memory_limit();
  return default_bytes;
}

void set_host_memory_limit(size_t bytes) { host_limit_override().store(bytes); }

}  // namespace vitune
