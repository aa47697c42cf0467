// The demo's table, from the JSON files of its steps.
#include "cli/demo_report.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cli/output_paths.h"
#include "cli/svg_chart.h"
#include "engine/atomic_file.h"
#include "engine/error.h"

namespace vitune::cli {
namespace {

using nlohmann::ordered_json;

struct Method {
  const char* id;
  const char* label;
  const char* selection;  // the selection results it used, or nullptr
};

const std::vector<Method>& methods() {
  static const std::vector<Method> list{
      {"linear_probe", "linear probe (head, AdamW)", nullptr},
      {"full", "full finetuning", nullptr},
      {"layernorm", "LayerNorm only (ln1, ln2)", nullptr},
      {"mha", "MHA only", nullptr},
      {"fc", "FC only (fc1, fc2)", nullptr},
      {"gdfps", "GD-FPS sparse", "gdfps"},
      {"gps", "GPS sparse", "gps"},
      {"lora", "LoRA", nullptr},
  };
  return list;
}

ordered_json read_json(const std::string& path) {
  std::ifstream in(path);
  VITUNE_CHECK(in.good(), "demo: cannot read ", path);
  try {
    return ordered_json::parse(in);
  } catch (const std::exception& e) {
    throw Error(cat("demo: ", path, " is not valid JSON: ", e.what()));
  }
}

double number(const ordered_json& j, const std::vector<const char*>& keys, const std::string& path) {
  const ordered_json* at = &j;
  std::string field;
  for (const char* key : keys) {
    field += field.empty() ? key : std::string(".") + key;
    VITUNE_CHECK(at->is_object() && at->contains(key), "demo: ", path, " has no field '", field, "'");
    at = &(*at)[key];
  }
  VITUNE_CHECK(at->is_number(), "demo: ", path, " field '", field, "' is not a number");
  return at->get<double>();
}

// Training loss against step, one curve per method, from the runs' JSON-lines logs.
LineChart loss_curves(const std::string& folder) {
  LineChart chart;
  chart.title = "Training loss of each finetuning method";
  chart.x_label = "step";
  chart.y_label = "training loss (cross-entropy)";
  chart.markers = false;
  for (const Method& m : methods()) {
    const std::string path = folder + "/runs/" + m.id + ".jsonl";
    std::ifstream in(path);
    VITUNE_CHECK(in.good(), "demo: cannot read ", path);
    LineSeries series;
    series.name = m.label;
    std::string line;
    while (std::getline(in, line)) {
      ordered_json j = ordered_json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("loss")) continue;
      series.x.push_back(number(j, {"step"}, path));
      series.y.push_back(number(j, {"loss"}, path));
    }
    chart.series.push_back(series);
  }
  return chart;
}

// The plasticity summary (mean over layers and pairs, per component) as table rows.
std::string plasticity_table(const ordered_json& plasticity, const std::string& path) {
  VITUNE_CHECK(plasticity.contains("components") && plasticity["components"].is_array(), "demo: ", path,
               " has no 'components' list");
  std::string md = "| component | plasticity (mean ± std over layers and pairs) |\n|---|---:|\n";
  char line[160];
  for (const ordered_json& c : plasticity["components"]) {
    std::snprintf(line, sizeof line, "| %s | %.3f ± %.3f |\n", c.value("component", "?").c_str(),
                  number(c, {"mean"}, path), number(c, {"std"}, path));
    md += line;
  }
  return md;
}

}  // namespace

void write_demo_report(const std::string& folder, double seconds) {
  const std::string probe_path = folder + "/probe.json";
  const double probe_top1 = number(read_json(probe_path), {"eval", "top1"}, probe_path);
  ordered_json rows = ordered_json::array();
  for (const Method& m : methods()) {
    const std::string path = folder + "/runs/" + m.id + ".json";
    ordered_json r = read_json(path);
    ordered_json row{{"method", m.id},
                     {"label", m.label},
                     {"top1", number(r, {"eval", "top1"}, path)},
                     {"gain_over_probe", (number(r, {"eval", "top1"}, path) - probe_top1) / probe_top1},
                     {"trainable_parameters", number(r, {"trainable_parameters"}, path)},
                     {"total_parameters", number(r, {"total_parameters"}, path)},
                     {"step_seconds", number(r, {"mean_step_seconds"}, path)},
                     {"peak_bytes", number(r, {"peak_memory_bytes"}, path)}};
    if (m.selection) {
      const std::string sel_path = folder + "/selection/" + m.selection + ".json";
      ordered_json s = read_json(sel_path);
      row["selection_seconds"] = number(s, {"wall_seconds"}, sel_path);
      row["selection_peak_bytes"] = number(s, {"peak_host_bytes"}, sel_path);
    }
    rows.push_back(row);
  }

  std::ostringstream md;
  md << "| method | top-1 | gain over probe | trainable parameters | step time (ms) | peak memory (MiB) | "
        "selection time (s) | selection peak (MiB) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
  char line[512];
  for (const ordered_json& row : rows) {
    std::string sel_time = "", sel_peak = "";
    if (row.contains("selection_seconds")) {
      char a[32], b[32];
      std::snprintf(a, sizeof a, "%.2f", row["selection_seconds"].get<double>());
      std::snprintf(b, sizeof b, "%.1f", row["selection_peak_bytes"].get<double>() / (1 << 20));
      sel_time = a;
      sel_peak = b;
    }
    std::snprintf(line, sizeof line, "| %s | %.2f%% | %+.1f%% | %.0f (%.2f%%) | %.1f | %.1f | %s | %s |\n",
                  row["label"].get<std::string>().c_str(), 100 * row["top1"].get<double>(),
                  100 * row["gain_over_probe"].get<double>(),
                  row["trainable_parameters"].get<double>(),
                  100 * row["trainable_parameters"].get<double>() / row["total_parameters"].get<double>(),
                  1000 * row["step_seconds"].get<double>(), row["peak_bytes"].get<double>() / (1 << 20),
                  sel_time.c_str(), sel_peak.c_str());
    md << line;
  }
  std::snprintf(line, sizeof line,
                "\nThe baseline: a logistic-regression probe (L-BFGS to convergence, C = 1) on the frozen "
                "model's features reaches %.2f%% top-1; the gain over it is (top-1 - probe) / probe.\n",
                100 * probe_top1);
  md << line;
  std::snprintf(line, sizeof line, "\nWall time of the whole demo: %.0f s.\n", seconds);
  md << line;

  const std::string plasticity_path = folder + "/plasticity.json";
  const ordered_json plasticity = read_json(plasticity_path);
  md << "\n" << plasticity_table(plasticity, plasticity_path);

  BarChart accuracy;
  accuracy.title = "Test accuracy of each finetuning method";
  accuracy.x_label = "method";
  accuracy.y_label = "top-1 accuracy (%)";
  BarSeries top1;
  top1.name = "top-1";
  for (const ordered_json& row : rows) {
    accuracy.categories.push_back(row["method"].get<std::string>());
    top1.values.push_back(100 * row["top1"].get<double>());
  }
  accuracy.series.push_back(top1);
  write_svg(folder + "/accuracy.svg", render_svg(accuracy));
  write_svg(folder + "/loss.svg", render_svg(loss_curves(folder)));

  ordered_json summary{{"wall_seconds", seconds}, {"probe_top1", probe_top1}, {"methods", rows}};
  write_file_atomically(folder + "/demo.json", summary.dump(2) + "\n");
  write_file_atomically(folder + "/demo.md", md.str());
  std::printf("\n%s", md.str().c_str());
  for (const char* name : {"demo.md", "demo.json", "accuracy.svg", "loss.svg"}) {
    print_wrote("report", folder + "/" + name);
  }
}

}  // namespace vitune::cli
