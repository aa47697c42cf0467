// The plasticity and sweep charts: data from their JSON and report structures laid out
// as svg_chart series.
#include "cli/plots.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "cli/svg_chart.h"
#include "engine/error.h"

namespace vitune::cli {

namespace {

using nlohmann::json;

const std::vector<std::string> kPlasticityOrder{"ln1", "mha", "ln2", "fc1", "fc2"};

// The components of the report for one optimizer, in report (grid) order.
std::vector<const peft::ComponentSummary*> summaries_of(const peft::SweepReport& report, const std::string& optimizer) {
  std::vector<const peft::ComponentSummary*> out;
  for (const peft::ComponentSummary& s : report.summaries) {
    if (s.optimizer == optimizer) out.push_back(&s);
  }
  return out;
}

LineChart accuracy_chart(const peft::SweepReport& report, const std::string& optimizer) {
  LineChart chart;
  chart.title = "Test accuracy against learning rate (" + optimizer + ")";
  chart.x_label = optimizer + " learning rate (log scale)";
  chart.y_label = "top-1 accuracy (%), mean ± std over seeds";
  chart.log_x = true;
  for (const peft::ComponentSummary* s : summaries_of(report, optimizer)) {
    LineSeries series{s->component, {}, {}, {}};
    for (const peft::LrCell& cell : s->cells) {
      series.x.push_back(cell.lr);
      series.y.push_back(cell.accuracies.empty() ? NAN : 100 * peft::mean(cell.accuracies));
      series.error.push_back(cell.accuracies.size() >= 2 ? 100 * peft::sample_std(cell.accuracies) : 0);
    }
    chart.series.push_back(series);
  }
  return chart;
}

// A curve of each component's mean over seeds at its best lr: `value` picks which.
template <typename Pick>
LineChart curves_chart(const peft::SweepReport& report, const std::string& optimizer, const std::string& title,
                       const std::string& y_label, bool log_y, Pick value) {
  LineChart chart;
  chart.title = title + " (" + optimizer + ", best lr of each component)";
  chart.x_label = "step";
  chart.y_label = y_label;
  chart.log_y = log_y;
  chart.markers = false;
  for (const peft::ComponentSummary* s : summaries_of(report, optimizer)) {
    LineSeries series{s->component, {}, {}, {}};
    for (int64_t step : s->curves.steps) series.x.push_back(double(step));
    series.y = value(s->curves);
    chart.series.push_back(series);
  }
  return chart;
}

template <typename T>
T layer_field(const json& entry, const char* key, size_t index) {
  VITUNE_CHECK(entry.contains(key), "plasticity JSON: layers[", index, "] has no '", key, "'");
  try {
    return entry.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(cat("plasticity JSON: layers[", index, "].", key, " has the wrong type"));
  }
}

}  // namespace

void write_plasticity_svg(const nlohmann::json& plasticity, const std::string& path) {
  VITUNE_CHECK(plasticity.is_object() && plasticity.contains("layers") && plasticity["layers"].is_array(),
               "plasticity JSON: expected an object with a 'layers' array");
  const json& layers = plasticity["layers"];
  std::vector<int> blocks;
  const std::vector<std::string>& components = kPlasticityOrder;
  std::map<std::pair<std::string, int>, std::pair<double, double>> values;  // (component, block) -> mean, std
  for (size_t i = 0; i < layers.size(); ++i) {
    VITUNE_CHECK(layers[i].is_object(), "plasticity JSON: layers[", i, "] is not an object");
    const int block = layer_field<int>(layers[i], "block", i);
    VITUNE_CHECK(block >= 0, "plasticity JSON: layers[", i, "].block must be >= 0, got ", block);
    const std::string component = layer_field<std::string>(layers[i], "component", i);
    // null: not measured (no valid pairs); other components (the whole block) are not drawn.
    const bool measured = !(layers[i].contains("mean") && layers[i]["mean"].is_null());
    const double mean = measured ? layer_field<double>(layers[i], "mean", i) : NAN;
    const bool has_std = layers[i].contains("std") && !layers[i]["std"].is_null();
    const double std = has_std ? layer_field<double>(layers[i], "std", i) : 0.0;
    if (std::find(components.begin(), components.end(), component) == components.end()) continue;
    if (std::find(blocks.begin(), blocks.end(), block) == blocks.end()) blocks.push_back(block);
    values[{component, block}] = {mean, std};
  }
  std::sort(blocks.begin(), blocks.end());
  BarChart chart;
  chart.title = "Plasticity per component and layer";
  if (plasticity.contains("protocol") && plasticity["protocol"].is_string()) {
    chart.title += " (" + plasticity["protocol"].get<std::string>() + " protocol)";
  }
  chart.x_label = "block";
  chart.y_label = "plasticity E ||f(x) - f(y)|| / ||x - y||";
  for (int block : blocks) chart.categories.push_back(std::to_string(block));
  for (const std::string& component : components) {
    BarSeries series{component, {}, {}};
    bool present = false;
    for (int block : blocks) {
      auto it = values.find({component, block});
      present = present || it != values.end();
      series.values.push_back(it == values.end() ? NAN : it->second.first);
      series.error.push_back(it == values.end() ? 0 : it->second.second);
    }
    if (present) chart.series.push_back(series);
  }
  write_svg(path, render_svg(chart));
}

std::vector<std::string> write_sweep_charts(const peft::SweepReport& report, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const LineChart& chart) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    write_svg(path, render_svg(chart));
    written.push_back(path);
  };
  for (const std::string& optimizer : report.optimizers) {
    write("accuracy_vs_lr_" + optimizer + ".svg", accuracy_chart(report, optimizer));
    write("grad_norm_" + optimizer + ".svg",
          curves_chart(report, optimizer, "Gradient norm of the tuned component", "gradient norm (log scale)", true,
                       [](const peft::TrainingCurves& c) { return c.grad_norm_component; }));
    write("grad_norm_total_" + optimizer + ".svg",
          curves_chart(report, optimizer, "Total gradient norm", "gradient norm before clipping (log scale)", true,
                       [](const peft::TrainingCurves& c) { return c.grad_norm_total; }));
    write("loss_" + optimizer + ".svg",
          curves_chart(report, optimizer, "Training loss", "cross-entropy loss", false,
                       [](const peft::TrainingCurves& c) { return c.loss; }));
  }
  return written;
}

}  // namespace vitune::cli
