// The transfers and waits of device_memory.h: copies between the host and devices
// (from the host staged through pinned memory, pinned_staging.h), uploads started ahead
// of use on the copy stream, zeroing, and waiting for a device.
//
// An upload, step by step (start_upload, finish_upload):
//   1. an event recorded on the compute stream marks the work queued so far, and the
//      copy stream waits for it: the destination block may have been freed by that
//      work and handed out again by the caching allocator;
//   2. the host bytes are staged and their DMA queued on the copy stream, which then
//      runs beside any work queued on the compute stream afterwards;
//   3. an event recorded behind the DMA is the ticket; finish_upload makes the compute
//      stream wait for it, so every op queued after that sees the copied bytes, and any
//      later reuse of the block (always queued on the compute stream) comes after it.
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/pinned_staging.h"
#include "engine/device_memory.h"
#include "engine/devices.h"
#include "engine/error.h"

namespace vitune::cuda {

void copy_bytes(void* destination, Device destination_device, const void* source, Device source_device,
                size_t bytes) {
  if (bytes == 0) return;
  VITUNE_CHECK(!(destination_device.is_cpu() && source_device.is_cpu()), "copy_bytes: host to host");
  if (source_device.is_cpu()) {
    const int device = destination_device.index;
    staged_copy_to_device(destination, device, source, bytes, stream(device));
    check_launch("copy from the host (staged through pinned memory)");
  } else if (destination_device.is_cpu()) {
    const int device = source_device.index;
    VITUNE_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToHost, stream(device)));
    wait_for(device, "a copy to the host");
  } else if (source_device == destination_device) {
    VITUNE_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice,
                                      stream(source_device.index)));
    check_launch("a copy inside a device");
  } else {
    // Between two devices: the source's pending work first, then the copy on the
    // destination's stream, which later work there is ordered after.
    wait_for(source_device.index, "a copy between devices (the source's queued work)");
    cudaStream_t s = stream(destination_device.index);
    VITUNE_CUDA_CHECK(cudaMemcpyPeerAsync(destination, destination_device.index, source, source_device.index,
                                          bytes, s));
    wait_for(destination_device.index, "a copy between devices");
  }
}

void zero_bytes(void* pointer, int device, size_t bytes) {
  if (bytes == 0) return;
  VITUNE_CUDA_CHECK(cudaMemsetAsync(pointer, 0, bytes, stream(device)));
  check_launch("cudaMemsetAsync (zeros)");
}

void synchronize(int device) {
  check_cuda(cudaStreamSynchronize(copy_stream(device)), "synchronize (the uploads in flight)");
  wait_for(device, "synchronize");
}

bool idle(int device) {
  for (cudaStream_t s : {stream(device), copy_stream(device)}) {
    const cudaError_t status = cudaStreamQuery(s);
    if (status == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check_cuda(status, "cudaStreamQuery");
  }
  return true;
}

void* start_upload(void* destination, int device, const void* source, size_t bytes) {
  cudaStream_t compute = stream(device), copies = copy_stream(device);
  cudaEvent_t queued = take_event(device);
  VITUNE_CUDA_CHECK(cudaEventRecord(queued, compute));
  VITUNE_CUDA_CHECK(cudaStreamWaitEvent(copies, queued, 0));
  give_event(device, queued);
  cudaEvent_t done = take_event(device);
  try {
    staged_copy_to_device(destination, device, source, bytes, copies);
    VITUNE_CUDA_CHECK(cudaEventRecord(done, copies));
  } catch (...) {
    // No ticket comes back, so nothing would order the block's next use after the copy.
    cudaStreamSynchronize(copies);
    give_event(device, done);
    throw;
  }
  if (launch_sync()) check_cuda(cudaStreamSynchronize(copies), "an upload (VITUNE_CUDA_SYNC=1)");
  return done;
}

void finish_upload(int device, void* ticket) {
  cudaEvent_t done = static_cast<cudaEvent_t>(ticket);
  const cudaError_t status = cudaStreamWaitEvent(stream(device), done, 0);
  // Without the queued wait the device's later work would not be ordered after the
  // copy: wait for the copy here instead, before anything else is queued.
  if (status != cudaSuccess) cudaEventSynchronize(done);
  give_event(device, done);
  check_cuda(status, "cudaStreamWaitEvent (finishing an upload)");
}

}  // namespace vitune::cuda
