// Device memory and transfers, as the device-neutral engine (allocator, Tensor, Upload)
// sees them: the interface the CUDA backend implements (engine/cuda/device_memory.cu,
// engine/cuda/transfers.cu). In a build without CUDA (engine/cuda/no_cuda.cpp) every
// function throws a vitune::Error that says so. Host memory, of the cpu and the emulated
// device alike, is the allocator's own.
//
// Ordering. All work on a device is queued on one compute stream, in program order.
// Copies from the host are staged: the host bytes are first copied into page-locked
// (pinned) host memory that the backend owns, then the device copies them from there
// asynchronously. So a copy from the host returns as soon as the host bytes may be
// reused or freed -- at once -- and never waits for the device; the pinned block is
// reused only after the device has read it (an event per block says when).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/device.h"
#include "engine/dtype.h"

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
// Bytes obtained from cudaMalloc on `device` and not yet freed (blocks in use at their
// rounded size plus cached blocks), now and at most since the last reset.
struct ReservedBytes {
  int64_t current = 0, peak = 0;
};
ReservedBytes device_reserved_bytes(int device);
void reset_device_reserved_peak(int device);
// Frees every cached block of every device, and every pinned staging block no copy is
// using. A failing cudaFree is reported as an Error naming the device and the block.
void release_device_cache();
// Page-locked host bytes held for staging copies to devices (all devices together).
int64_t pinned_staging_bytes();

// Copies `bytes` between any two of host and CUDA devices (a host side is given as
// Device::cpu()). From the host: staged through pinned memory and queued on the
// destination's stream; returns when `source` may be reused (at once). To the host:
// returns when the copy is complete. Between blocks of one device: queued on its stream.
void copy_bytes(void* destination, Device destination_device, const void* source, Device source_device,
                size_t bytes);
// Sets `bytes` bytes at `pointer` on CUDA device `device` to zero (stream-ordered).
void zero_bytes(void* pointer, int device, size_t bytes);
// Waits until all work queued on `device` is done (for timings and before host reads),
// then reports a failed deferred check (an index or label out of range) as an Error.
void synchronize(int device);
// Whether all work queued on `device` has finished (never waits).
bool idle(int device);

// Converts `count` elements at `source` (dtype `from`) into `destination` (dtype `to`),
// both on CUDA device `device`, queued on its stream, with the host conversion's values
// (f64 -> f32 and f32 -> bf16 round to nearest even). Returns false, doing nothing, for
// a pair of dtypes without a device kernel (any pair other than f32 with f64 or bf16);
// the caller converts on the host then.
bool convert_on_device(const void* source, DType from, void* destination, DType to, int64_t count, int device);

// A copy from the host started ahead of its use (engine/upload.h): `bytes` from host
// memory `source` to `destination` on `device`, staged as copy_bytes does, but run on a
// second stream of the device, so that it overlaps the work already queued on the
// compute stream. It starts after that work (the destination block may have been freed
// by it), and the compute stream waits for it only at finish_upload: work queued before
// that call runs beside the copy. Returns the ticket finish_upload takes; every ticket
// must be finished exactly once.
void* start_upload(void* destination, int device, const void* source, size_t bytes);
void finish_upload(int device, void* ticket);

}  // namespace vitune::cuda
