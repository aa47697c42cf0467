// What the engine can compute on, as the rest of vitune sees it: the devices this build
// and this machine have, their descriptions, and the switches that apply to one
// backend (TF32 on CUDA, the host's GEMM kernel). cli, peft, nn and the benches reach a
// backend only through this header and engine/ops.h. The vitune::cuda functions are
// defined by the CUDA backend (engine/cuda/), or by engine/cuda/no_cuda.cpp in a build
// without one, where every answer is "no device".
#pragma once

#include <string>
#include <vector>

#include "engine/device.h"

namespace vitune {

// Every device a tensor can be placed on here: cpu, emulated and each visible CUDA
// device, in that order.
std::vector<Device> available_devices();
// Checks that `device` exists in this build and on this machine; the error names
// `what` (a flag, say) and why not.
void check_device_available(Device device, const std::string& what);
// "NVIDIA H200, 139 GiB, sm_90" for a CUDA device; for cpu and emulated, the host.
std::string device_description(Device device);
// Waits until the work queued on `device` is done (nothing to wait for on the host).
void synchronize(Device device);

}  // namespace vitune

namespace vitune::cuda {

// Whether this build contains the CUDA backend at all.
bool built_with_cuda();
// Number of usable CUDA devices (0 when the driver or a device is missing).
int device_count();
// "NVIDIA H200, 139 GiB, sm_90" for device `index`; empty when there is none.
std::string device_description(int index);

// cuBLAS GEMMs in TF32 (tensor cores, 10-bit mantissa products) instead of full fp32.
// Off by default; the --tf32 flag of the commands turns it on.
void set_tf32(bool enabled);
bool tf32_enabled();

// Launch-synchronous checking, for finding the kernel that fails: after every kernel
// launch, cuBLAS call and deferred index check the device's stream is synchronised and
// any error is raised at once, naming the kernel or op (normally a failure inside a
// kernel surfaces at the next synchronisation, naming whatever waited). Slow; for
// debugging and the GPU test run. Off unless the environment sets VITUNE_CUDA_SYNC=1
// (read once; any value other than 0 or 1 is an error); set_launch_sync overrides it.
void set_launch_sync(bool enabled);
bool launch_sync();

}  // namespace vitune::cuda

namespace vitune::cpu {

// Which kernel runs fp32 GEMMs on the host: "vitune AVX-512" or "OpenBLAS Haswell", for
// logs and benches (engine/cpu/gemm_kernel.h chooses it).
std::string gemm_kernel_name();
// Which kernel runs bf16 autocast's GEMMs on the host: "vitune AVX-512 BF16", or the
// emulation and its fp32 kernel (engine/cpu/gemm_kernel.h chooses it).
std::string gemm_bf16_kernel_name();

}  // namespace vitune::cpu
