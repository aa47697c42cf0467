// Device names, as printed and as given on the command line.
#include "engine/device.h"

#include <cstdlib>

#include "engine/error.h"

namespace vitune {

std::string Device::str() const {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Emulated: return "emulated";
    case DeviceType::CUDA: break;
  }
  return "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& text, const std::string& what) {
  if (text == "cpu") return Device::cpu();
  if (text == "emulated") return Device::emulated();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    char* end = nullptr;
    long index = std::strtol(text.c_str() + 5, &end, 10);
    if (*end == '\0' && index >= 0 && index < 16) return Device::cuda(int(index));
  }
  throw Error(cat(what, ": expected cpu, emulated, cuda or cuda:N (N from 0 to 15), got '", text, "'"));
}

}  // namespace vitune
