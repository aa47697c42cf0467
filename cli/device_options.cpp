// Registration and checking of --device and --tf32.
#include "cli/device_options.h"

#include "engine/allocator.h"
#include "engine/cuda/cuda_info.h"
#include "engine/cuda/device_memory.h"
#include "engine/error.h"

namespace vitune::cli {

void DeviceOptions::add_to(CLI::App& command) {
  command.add_option("--device", device, "Where to compute: cpu, cuda or cuda:N")->capture_default_str();
  command.add_flag("--tf32", tf32,
                   "CUDA GEMMs in TF32 on tensor cores (10-bit mantissa products; faster, less exact); "
                   "default full fp32");
}

Device DeviceOptions::select() const {
  const Device chosen = parse_device(device, "--device");
  if (chosen.is_cpu()) {
    VITUNE_CHECK(!tf32, "--tf32 applies to CUDA GEMMs only; give it with --device cuda");
    return chosen;
  }
  VITUNE_CHECK(cuda::built_with_cuda(), "--device ", device,
               ": this build has no CUDA backend (configure with -DVITUNE_CUDA=ON where nvcc is installed)");
  const int devices = cuda::device_count();
  VITUNE_CHECK(chosen.index < devices, "--device ", device, ": ",
               devices == 0 ? std::string("no CUDA device is visible (driver missing, or CUDA_VISIBLE_DEVICES empty)")
                            : cat("this machine has ", devices, " CUDA device(s), cuda:0 to cuda:", devices - 1));
  cuda::set_tf32(tf32);
  return chosen;
}

void add_device_memory(Device device, nlohmann::ordered_json& results) {
  if (device.is_cpu()) return;
  results["device"] = device.str();
  results["device_name"] = cuda::device_description(device.index);
  results["peak_device_bytes"] = memory_stats(device).peak_bytes;
  results["tf32"] = cuda::tf32_enabled();
}

}  // namespace vitune::cli
