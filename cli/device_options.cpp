// Registration and checking of --device and --tf32.
#include "cli/device_options.h"

#include "engine/allocator.h"
#include "engine/devices.h"
#include "engine/error.h"

namespace vitune::cli {

void DeviceOptions::add_to(CLI::App& command) {
  command.add_option("--device", device, "Where to compute: cpu, cuda, cuda:N, or emulated (host memory and CPU kernels under a device identity of its own, to check that a run keeps every tensor on its device)")->capture_default_str();
  command.add_flag("--tf32", tf32,
                   "CUDA GEMMs in TF32 on tensor cores (10-bit mantissa products; faster, less exact); "
                   "default full fp32");
}

Device DeviceOptions::select() const {
  const Device chosen = parse_device(device, "--device");
  VITUNE_CHECK(!tf32 || chosen.is_cuda(), "--tf32 applies to CUDA GEMMs only; give it with --device cuda");
  check_device_available(chosen, "--device");
  if (chosen.is_cuda()) cuda::set_tf32(tf32);
  return chosen;
}

void add_device_memory(Device device, nlohmann::ordered_json& results) {
  if (device.is_cpu()) return;
  results["device"] = device.str();
  results["device_name"] = device_description(device);
  const MemoryStats memory = memory_stats(device);
  results["peak_device_bytes"] = memory.peak_bytes;                   // requested by tensors
  results["peak_device_reserved_bytes"] = memory.peak_reserved_bytes;  // held from the driver
  results["tf32"] = device.is_cuda() && cuda::tf32_enabled();
}

}  // namespace vitune::cli
