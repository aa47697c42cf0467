// Aggregation of a sweep's finished runs into statistics, JSON and markdown.
#include "peft/sweep_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "engine/error.h"

namespace vitune::peft {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

double cell_mean(const LrCell& cell) { return mean(cell.accuracies); }

// The index of `value` in `values`; throws naming `what` when it is not there.
template <typename T>
size_t index_in(const std::vector<T>& values, const T& value, const std::string& what) {
  auto it = std::find(values.begin(), values.end(), value);
  VITUNE_CHECK(it != values.end(), "sweep report: ", what, " is not in the plan's grid");
  return size_t(it - values.begin());
}

const ComponentSummary* find_summary(const std::vector<ComponentSummary>& summaries, const std::string& component,
                                     const std::string& optimizer) {
  for (const ComponentSummary& s : summaries) {
    if (s.component == component && s.optimizer == optimizer) return &s;
  }
  return nullptr;
}

// Welch's test of this summary's best cell against `baseline`'s best cell, where defined.
std::optional<WelchTest> against(const ComponentSummary& summary, const ComponentSummary* baseline) {
  if (!baseline || baseline == &summary || summary.best < 0 || baseline->best < 0) return std::nullopt;
  const std::vector<double>& a = summary.cells[size_t(summary.best)].accuracies;
  const std::vector<double>& b = baseline->cells[size_t(baseline->best)].accuracies;
  if (!welch_test_defined(a, b)) return std::nullopt;
  return welch_t_test(a, b);
}

// A finished run by component, optimizer, grid learning rate and seed.
using RunIndex = std::map<std::tuple<std::string, std::string, double, uint64_t>, const SweepRun*>;

void summarise(ComponentSummary& summary, const RunIndex& finished_runs) {
  double best_mean = 0, lowest = 0, highest = 0;
  bool any = false;
  for (size_t i = 0; i < summary.cells.size(); ++i) {
    const LrCell& cell = summary.cells[i];
    if (cell.accuracies.empty()) continue;
    const double m = cell_mean(cell);
    if (!any || m > best_mean) {
      best_mean = m;
      summary.best = int(i);
    }
    lowest = any ? std::min(lowest, m) : m;
    highest = any ? std::max(highest, m) : m;
    any = true;
  }
  summary.spread = highest - lowest;
  if (summary.best < 0) return;
  const LrCell& best = summary.cells[size_t(summary.best)];
  std::vector<TrainingCurves> curves;
  for (uint64_t seed : best.seeds) {
    const SweepRun* run = finished_runs.at({summary.component, summary.optimizer, best.grid_lr, seed});
    curves.push_back(read_training_curves(run->log, summary.component));
  }
  summary.curves = mean_curves(curves);
}

ordered_json optional_number(bool present, double value) { return present ? ordered_json(value) : ordered_json(); }

ordered_json welch_json(const std::optional<WelchTest>& test) {
  if (!test) return nullptr;
  return {{"t", test->t}, {"df", test->df}, {"p", test->p}};
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string cell_text(const LrCell& cell) {
  if (cell.accuracies.empty()) return "–";
  std::string text = format("%.2f", 100 * cell_mean(cell));
  if (cell.accuracies.size() >= 2) text += " ± " + format("%.2f", 100 * sample_std(cell.accuracies));
  return text + " (" + std::to_string(cell.accuracies.size()) + ")";
}

std::string welch_text(const std::optional<WelchTest>& test) {
  if (!test) return "–";
  return format("t = %.2f", test->t) + format(", df = %.1f", test->df) + format(", p = %.3g", test->p);
}

}  // namespace

double read_run_accuracy(const std::string& results_path) {
  std::ifstream in(results_path);
  VITUNE_CHECK(in.good(), "cannot open the results file ", results_path);
  json results = json::parse(in, nullptr, false);
  VITUNE_CHECK(!results.is_discarded(), results_path, ": not valid JSON");
  VITUNE_CHECK(results.contains("eval") && results["eval"].contains("top1") && results["eval"]["top1"].is_number(),
               results_path, ": no \"eval\".\"top1\" (was the run given --eval-data?)");
  return results["eval"]["top1"].get<double>();
}

TrainingCurves read_training_curves(const std::string& log_path, const std::string& component) {
  std::ifstream in(log_path);
  VITUNE_CHECK(in.good(), "cannot open the training log ", log_path);
  TrainingCurves curves;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    json entry = json::parse(line, nullptr, false);
    VITUNE_CHECK(!entry.is_discarded() && entry.is_object(), log_path, ":", number, ": not a JSON object");
    if (!entry.contains("grad_norm")) continue;  // an evaluation line
    const json& norms = entry["grad_norm"];
    const bool whole_model = component == "all";
    VITUNE_CHECK(entry.contains("step") && entry.contains("loss") && norms.contains("total") &&
                     (whole_model || (norms.contains("per_component") && norms["per_component"].contains(component))),
                 log_path, ":", number, ": expected step, loss, grad_norm.total and grad_norm.per_component.",
                 component);
    curves.steps.push_back(entry["step"].get<int64_t>());
    curves.loss.push_back(entry["loss"].get<double>());
    curves.grad_norm_total.push_back(norms["total"].get<double>());
    curves.grad_norm_component.push_back(whole_model ? norms["total"].get<double>()
                                                     : norms["per_component"][component].get<double>());
  }
  return curves;
}

TrainingCurves mean_curves(const std::vector<TrainingCurves>& runs) {
  TrainingCurves out;
  if (runs.empty()) return out;
  std::set<int64_t> common(runs[0].steps.begin(), runs[0].steps.end());
  for (const TrainingCurves& run : runs) {
    std::set<int64_t> steps(run.steps.begin(), run.steps.end());
    std::set<int64_t> kept;
    std::set_intersection(common.begin(), common.end(), steps.begin(), steps.end(), std::inserter(kept, kept.end()));
    common = kept;
  }
  for (int64_t step : common) {
    double loss = 0, total = 0, own = 0;
    for (const TrainingCurves& run : runs) {
      const size_t i = size_t(std::find(run.steps.begin(), run.steps.end(), step) - run.steps.begin());
      loss += run.loss[i];
      total += run.grad_norm_total[i];
      own += run.grad_norm_component[i];
    }
    const double n = double(runs.size());
    out.steps.push_back(step);
    out.loss.push_back(loss / n);
    out.grad_norm_total.push_back(total / n);
    out.grad_norm_component.push_back(own / n);
  }
  return out;
}

SweepReport build_sweep_report(const SweepPlan& plan) {
  SweepReport report;
  report.planned = plan.runs.size();
  report.optimizers = plan.grid.optimizers;
  for (const std::string& component : plan.grid.components) {
    for (const std::string& optimizer : plan.grid.optimizers) {
      ComponentSummary summary;
      summary.component = component;
      summary.optimizer = optimizer;
      for (double lr : plan.grid.lrs) summary.cells.push_back({lr, 0, {}, {}});
      report.summaries.push_back(summary);
    }
  }
  RunIndex finished_runs;
  for (const SweepRun& run : plan.runs) {
    const size_t c = index_in(plan.grid.components, run.component, "component '" + run.component + "' of " + run.id);
    const size_t o = index_in(plan.grid.optimizers, run.optimizer, "optimizer '" + run.optimizer + "' of " + run.id);
    const size_t l = index_in(plan.grid.lrs, run.grid_lr, "the learning rate of " + run.id);
    LrCell& cell = report.summaries[c * plan.grid.optimizers.size() + o].cells[l];
    cell.lr = run.lr;
    if (!run_finished(run)) {
      report.missing.push_back(run.id);
      continue;
    }
    cell.seeds.push_back(run.seed);
    cell.accuracies.push_back(read_run_accuracy(run.results));
    finished_runs[{run.component, run.optimizer, run.grid_lr, run.seed}] = &run;
    ++report.finished;
  }
  for (ComponentSummary& summary : report.summaries) summarise(summary, finished_runs);
  for (ComponentSummary& summary : report.summaries) {
    summary.vs_ln1 = against(summary, find_summary(report.summaries, "ln1", summary.optimizer));
    summary.vs_ln2 = against(summary, find_summary(report.summaries, "ln2", summary.optimizer));
  }
  return report;
}

nlohmann::ordered_json sweep_report_json(const SweepReport& report) {
  ordered_json summaries = ordered_json::array();
  for (const ComponentSummary& s : report.summaries) {
    ordered_json cells = ordered_json::array();
    for (const LrCell& cell : s.cells) {
      const bool has_runs = !cell.accuracies.empty();
      cells.push_back({{"grid_lr", cell.grid_lr},
                       {"lr", cell.lr},
                       {"seeds", cell.seeds},
                       {"accuracies", cell.accuracies},
                       {"mean", optional_number(has_runs, has_runs ? cell_mean(cell) : 0)},
                       {"std", optional_number(cell.accuracies.size() >= 2,
                                               cell.accuracies.size() >= 2 ? sample_std(cell.accuracies) : 0)}});
    }
    const bool has_best = s.best >= 0;
    const LrCell* best = has_best ? &s.cells[size_t(s.best)] : nullptr;
    summaries.push_back(
        {{"component", s.component},
         {"optimizer", s.optimizer},
         {"trained", trained_components_flag(s.component)},
         {"cells", cells},
         {"best_lr", optional_number(has_best, best ? best->lr : 0)},
         {"best_mean", optional_number(has_best, best ? cell_mean(*best) : 0)},
         {"spread", optional_number(has_best, s.spread)},
         {"welch_vs_ln1", welch_json(s.vs_ln1)},
         {"welch_vs_ln2", welch_json(s.vs_ln2)},
         {"curves",
          {{"steps", s.curves.steps},
           {"loss", s.curves.loss},
           {"grad_norm_total", s.curves.grad_norm_total},
           {"grad_norm_component", s.curves.grad_norm_component}}}});
  }
  return {{"runs_planned", report.planned},
          {"runs_finished", report.finished},
          {"missing", report.missing},
          {"summaries", summaries}};
}

std::string sweep_report_markdown(const SweepReport& report) {
  std::string md = "# Component-wise finetuning sweep\n\n";
  md += cat(report.finished, " of ", report.planned, " runs finished.\n\n");
  md += "Cells: top-1 accuracy (%) on the evaluation data, mean ± sample std over seeds (number of seeds). "
        "Best: the learning rate with the highest mean. Spread: max - min of the means across learning rates "
        "(lower is more stable). Welch: the best learning rate's seeds against those of ln1 (ln2) at its own best "
        "learning rate; t > 0 means the component beats the LayerNorm, p is two-sided.\n";
  for (const std::string& optimizer : report.optimizers) {
    std::vector<const ComponentSummary*> rows;
    for (const ComponentSummary& s : report.summaries) {
      if (s.optimizer == optimizer) rows.push_back(&s);
    }
    if (rows.empty()) continue;
    md += "\n## " + optimizer + "\n\n| component |";
    for (const LrCell& cell : rows[0]->cells) md += " lr " + number_text(cell.lr) + " |";
    md += " best lr | best | spread | Welch vs ln1 | Welch vs ln2 |\n|---|";
    for (size_t i = 0; i < rows[0]->cells.size(); ++i) md += "---|";
    md += "---|---|---|---|---|\n";
    for (const ComponentSummary* s : rows) {
      md += "| " + s->component + " |";
      for (const LrCell& cell : s->cells) md += " " + cell_text(cell) + " |";
      if (s->best >= 0) {
        const LrCell& best = s->cells[size_t(s->best)];
        md += " " + number_text(best.lr) + " | " + format("%.2f", 100 * cell_mean(best)) + " | " +
              format("%.2f", 100 * s->spread) + " |";
      } else {
        md += " – | – | – |";
      }
      md += " " + welch_text(s->vs_ln1) + " | " + welch_text(s->vs_ln2) + " |\n";
    }
  }
  return md;
}

}  // namespace vitune::peft
