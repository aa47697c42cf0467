// The device list and checks of engine/devices.h, over the CUDA backend's answers.
#include "engine/devices.h"

#include "engine/device_memory.h"
#include "engine/error.h"

namespace vitune {

std::vector<Device> available_devices() {
  std::vector<Device> devices{Device::cpu(), Device::emulated()};
  for (int i = 0; i < cuda::device_count(); ++i) devices.push_back(Device::cuda(i));
  return devices;
}

void check_device_available(Device device, const std::string& what) {
  if (device.host_memory()) return;
  VITUNE_CHECK(cuda::built_with_cuda(), what, " ", device.str(),
               ": this build has no CUDA backend (configure with -DVITUNE_CUDA=ON where nvcc is installed)");
  const int devices = cuda::device_count();
  VITUNE_CHECK(device.index < devices, what, " ", device.str(), ": ",
               devices == 0 ? std::string("no CUDA device is visible (driver missing, or CUDA_VISIBLE_DEVICES empty)")
                            : cat("this machine has ", devices, " CUDA device(s), cuda:0 to cuda:", devices - 1));
}

std::string device_description(Device device) {
  if (device.is_cpu()) return "host CPU";
  if (device.is_emulated()) return "host CPU, as the emulated device";
  return cuda::device_description(device.index);
}

void synchronize(Device device) {
  if (!device.host_memory()) cuda::synchronize(device.index);
}

}  // namespace vitune
