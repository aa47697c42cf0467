// A copy of a host tensor to a GPU started ahead of its use, so that it runs beside the
// work already queued on the device instead of after it: the loops over a loader's
// batches (training, the GD-FPS anchor) fetch batch k+1 and start its upload while the
// device still computes on batch k.
//
// Rules. The host tensor is staged into pinned memory when the Upload is made, so the
// caller may change or free it at once. The device tensor may be used only through
// take(): work queued on the device after take() sees the copied values; work queued
// before take() may run while the copy is still going on. An Upload dropped without
// take() still orders the device's later work after its copy, so its block can be
// reused safely. On the cpu and the emulated device, and for a tensor that is not on
// the host, the copy is an ordinary Tensor::to made at once.
#pragma once

#include "engine/tensor.h"

namespace vitune {

class Upload {
 public:
  Upload() = default;
  // Starts copying `source` (any device; undefined stays undefined) to `device`.
  Upload(const Tensor& source, Device device);
  Upload(Upload&& other) noexcept;
  Upload& operator=(Upload&& other) noexcept;
  Upload(const Upload&) = delete;
  Upload& operator=(const Upload&) = delete;
  ~Upload();

  // The tensor on the device, ready for any work queued from now on. Once per upload;
  // afterwards the Upload is empty.
  Tensor take();

 private:
  // Orders the device's later work after the copy (once).
  void finish();

  Tensor tensor_;
  void* ticket_ = nullptr;  // the backend's handle on the copy in flight, or null
};

}  // namespace vitune
