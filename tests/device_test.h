// Model-level tests run on every device this build and machine have: the cpu; the
// emulated device, always, so that a run without a GPU (CI) still catches any tensor
// made on, or read from, the wrong device; and each visible CUDA device. A suite derives
// from OnDevice, writes TEST_P and reads its device with device(); VITUNE_ON_EVERY_DEVICE
// instantiates it as Devices/<Suite>.<Test>/cpu, /emulated, /cuda0, ...
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "engine/devices.h"

namespace vitune::testing {

class OnDevice : public ::testing::TestWithParam<Device> {
 protected:
  Device device() const { return GetParam(); }
};

// "cpu", "emulated", "cuda0": test names allow letters, digits and underscores only.
inline std::string device_label(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cuda() ? "cuda" + std::to_string(info.param.index) : info.param.str();
}

}  // namespace vitune::testing

namespace vitune {
// How GoogleTest prints a test's device.
inline void PrintTo(const Device& device, std::ostream* out) { *out << device.str(); }
}  // namespace vitune

#define VITUNE_ON_EVERY_DEVICE(suite)                                                        \
  INSTANTIATE_TEST_SUITE_P(Devices, suite, ::testing::ValuesIn(::vitune::available_devices()), \
                           ::vitune::testing::device_label)
