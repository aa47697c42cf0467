// The CUDA backend of a build without nvcc: there is never a device, and every request
// for device memory or a transfer is refused with an error that says why.
#include "engine/devices.h"
#include "engine/device_memory.h"
#include "engine/error.h"

namespace vitune::cuda {

namespace {

[[noreturn]] void no_backend(const char* what) {
  throw Error(cat(what, ": this build has no CUDA backend (nvcc was not found when it was configured; "
                        "configure with -DVITUNE_CUDA=ON where the CUDA toolkit is installed)"));
}

}  // namespace

bool built_with_cuda() { return false; }
int device_count() { return 0; }
std::string device_description(int) { return ""; }

void* device_allocate(int, size_t) { no_backend("CUDA allocation"); }
void device_free(int, void*, size_t) {}
int64_t device_cached_bytes(int) { return 0; }
ReservedBytes device_reserved_bytes(int) { return {}; }
void reset_device_reserved_peak(int) {}
void release_device_cache() {}
int64_t pinned_staging_bytes() { return 0; }
void copy_bytes(void*, Device, const void*, Device, size_t) { no_backend("copy to or from a CUDA device"); }
void zero_bytes(void*, int, size_t) { no_backend("CUDA memset"); }
void synchronize(int) {}
bool idle(int) { return true; }
bool convert_on_device(const void*, DType, void*, DType, int64_t, int) { no_backend("CUDA dtype conversion"); }
void* start_upload(void*, int, const void*, size_t) { no_backend("copy to a CUDA device"); }
void finish_upload(int, void*) { no_backend("copy to a CUDA device"); }
void set_tf32(bool enabled) {
  if (enabled) no_backend("TF32");
}
bool tf32_enabled() { return false; }
void set_launch_sync(bool) {}
bool launch_sync() { return false; }

}  // namespace vitune::cuda
