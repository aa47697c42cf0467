// Where a tensor's bytes live, as part of its identity. Three kinds:
//   cpu       host memory, run by the CPU kernels;
//   cuda:N    the memory of CUDA device N, run by the CUDA kernels;
//   emulated  host memory run by the CPU kernels, but a device of its own: mixing it with
//             cpu tensors is an error and host code cannot read it without an explicit
//             copy (.to(Device::cpu())), exactly as for a GPU. Builds without a GPU (CI)
//             run every model-level test and command on it, which catches any tensor
//             created on, or read from, the wrong device.
// There is no default device: every tensor is created on a device named by its caller,
// usually the device of the tensors it is computed from.
#pragma once

#include <string>

namespace vitune {

enum class DeviceType { CPU, CUDA, Emulated };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  static Device emulated() { return {DeviceType::Emulated, 0}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool is_emulated() const { return type == DeviceType::Emulated; }
  // Whether the bytes are host memory the CPU kernels run on (cpu and emulated).
  bool host_memory() const { return type != DeviceType::CUDA; }
  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
  std::string str() const;
};

// Parses "cpu", "emulated", "cuda" or "cuda:N"; throws vitune::Error naming `what`
// otherwise.
Device parse_device(const std::string& text, const std::string& what = "--device");

}  // namespace vitune
