// The deferred index checks of index_check.h. Each device keeps a ring of fault records
// in device memory and their mirror in pinned host memory, and the host-side list of the
// checks queued since the last wait with how to describe each failure. A ring slot is
// used again only after a wait settled its previous check (a full ring waits first).
#include <mutex>
#include <utility>
#include <vector>

#include "engine/cuda/cuda_context.h"
#include "engine/cuda/index_check.h"
#include "engine/device_memory.h"
#include "engine/devices.h"

namespace vitune::cuda {

namespace {

constexpr int kMaxDevices = 16;
constexpr int kSlots = 256;  // checks in flight per device before the host waits

struct FaultRecord {
  unsigned long long position;  // first bad position, or kNoFault
  int64_t value;                // indices[position]
  int64_t previous;             // indices[position - 1], or 0
  int64_t unused;
};

struct PendingCheck {
  int slot;
  DescribeFault describe;
};

struct FaultRing {
  FaultRecord* on_device = nullptr;  // kSlots records
  FaultRecord* on_host = nullptr;    // their pinned mirror
  int next = 0;
  std::vector<PendingCheck> pending;  // queued since the last wait, in order
};

std::mutex& ring_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The ring of `device` (under ring_mutex); its memory is made by the first check.
FaultRing& ring(int device) {
  static FaultRing rings[kMaxDevices];
  VITUNE_CHECK(device >= 0 && device < kMaxDevices, "CUDA device ", device, " is out of range");
  return rings[device];
}

void allocate_ring(int device, FaultRing& r) {
  if (r.on_device == nullptr) {
    r.on_device = static_cast<FaultRecord*>(device_allocate(device, kSlots * sizeof(FaultRecord)));
    void* host = nullptr;
    VITUNE_CUDA_CHECK(cudaHostAlloc(&host, kSlots * sizeof(FaultRecord), cudaHostAllocPortable));
    r.on_host = static_cast<FaultRecord*>(host);
  }
}

// record->position (set to kNoFault before) becomes the smallest bad position; an
// integer atomicMin, whose result does not depend on the order of the threads.
__global__ void first_bad_index_kernel(const int64_t* indices, int64_t count, int64_t limit,
                                       bool strictly_increasing, FaultRecord* record) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t value = indices[i];
    const bool outside = value < 0 || value >= limit;
    const bool out_of_order = strictly_increasing && i > 0 && value <= indices[i - 1];
    if (outside || out_of_order) atomicMin(&record->position, static_cast<unsigned long long>(i));
  }
}

// One thread: the values at the bad position, for the message.
__global__ void describe_fault_kernel(const int64_t* indices, FaultRecord* record) {
  const unsigned long long position = record->position;
  if (position == kNoFault) return;
  record->value = indices[position];
  record->previous = position > 0 ? indices[position - 1] : 0;
}

}  // namespace

const unsigned long long* check_indices_deferred(const Tensor& indices, int64_t limit, bool strictly_increasing,
                                                 DescribeFault describe) {
  const int device = indices.device().index;
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(ring_mutex());
    full = ring(device).pending.size() >= size_t(kSlots);
  }
  if (full) wait_for(device, "the deferred index checks (a full ring)");
  cudaStream_t s = stream(device);
  FaultRecord* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(ring_mutex());
    FaultRing& r = ring(device);
    allocate_ring(device, r);
    const int slot = r.next;
    r.next = (r.next + 1) % kSlots;
    record = r.on_device + slot;
    VITUNE_CUDA_CHECK(cudaMemsetAsync(&record->position, 0xff, sizeof(record->position), s));
    const int64_t count = indices.numel();
    if (count > 0) {
      const int64_t* values = indices.kernel_data<int64_t>();
      first_bad_index_kernel<<<blocks_for(count), kThreads, 0, s>>>(values, count, limit, strictly_increasing, record);
      check_cuda(cudaGetLastError(), "first_bad_index_kernel");
      describe_fault_kernel<<<1, 1, 0, s>>>(values, record);
      check_cuda(cudaGetLastError(), "describe_fault_kernel");
    }
    VITUNE_CUDA_CHECK(cudaMemcpyAsync(r.on_host + slot, record, sizeof(FaultRecord), cudaMemcpyDeviceToHost, s));
    r.pending.push_back({slot, std::move(describe)});
  }
  if (launch_sync()) wait_for(device, "an index check (VITUNE_CUDA_SYNC=1)");
  return &record->position;
}

void report_failed_checks(int device) {
  std::vector<PendingCheck> settled;
  const FaultRecord* records = nullptr;
  {
    std::lock_guard<std::mutex> lock(ring_mutex());
    FaultRing& r = ring(device);
    settled.swap(r.pending);
    records = r.on_host;
  }
  for (const PendingCheck& check : settled) {
    const FaultRecord& record = records[check.slot];
    if (record.position != kNoFault) {
      throw Error(check.describe(int64_t(record.position), record.value, record.previous));
    }
  }
}

}  // namespace vitune::cuda
