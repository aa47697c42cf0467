// The demo's summary: reads the results files its steps wrote and makes one table
// (accuracy, trainable parameters, step time, peak memory, selection time and memory),
// printed and written as demo.md and demo.json, with the SVG charts beside them.
#pragma once
#include <string>

namespace vitune::cli {

// `folder` is the demo's output folder; `seconds` its wall time so far.
void write_demo_report(const std::string& folder, double seconds);

}  // namespace vitune::cli
