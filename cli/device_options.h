// The flags that choose where a command computes: --device cpu|cuda[:N] and --tf32.
// Every command that runs the model takes them; the model is loaded on the host and
// moved to the device once its structure is final (a new head, LoRA adapters).
#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/device.h"

namespace vitune::cli {

struct DeviceOptions {
  std::string device = "cpu";
  bool tf32 = false;

  void add_to(CLI::App& command);
  // The device of --device, checked to exist in this build and on this machine, with
  // --tf32 applied to the CUDA GEMMs; a clear error otherwise.
  Device select() const;
};

// The device fields of a results file for a run on `device` (none on the CPU, whose
// peak the results already carry): the device, its description, "peak_device_bytes"
// (the most bytes tensors requested at once), "peak_device_reserved_bytes" (the most the
// allocator held from the driver, cached blocks and rounding included) and "tf32".
void add_device_memory(Device device, nlohmann::ordered_json& results);

}  // namespace vitune::cli
