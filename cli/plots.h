// The project's charts: plasticity per component and layer, and the sweep's accuracy
// against learning rate, gradient-norm and loss curves. Built on cli/svg_chart.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peft/sweep_report.h"

namespace vitune::cli {

// Plasticity per component (ln1, mha, ln2, fc1, fc2; other entries are left out) against
// the block index, as grouped bars with the std as error bars, from the plasticity
// results layout {"layers": [{"block": 0, "component": "ln1", "mean": .., "std": ..}, ...]}
// (a null mean is a missing bar). Throws vitune::Error naming the field when the JSON
// does not have that layout.
void write_plasticity_svg(const nlohmann::json& plasticity, const std::string& path);

// Writes, per optimizer, accuracy_vs_lr_<optimizer>.svg (mean ± std over seeds, log lr
// axis), grad_norm_<optimizer>.svg (each component's own gradient norm at its best lr),
// grad_norm_total_<optimizer>.svg and loss_<optimizer>.svg into `dir`; returns the paths.
std::vector<std::string> write_sweep_charts(const peft::SweepReport& report, const std::string& dir);

}  // namespace vitune::cli
