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

// A finished run by component, optimizer, learning rate and seed.
using RunIndex = std::map<std::tuple<std::string, std::string, double, uint64_t>, const SweepRun*>;

// A rate a factor of 3 beyond an edge, to 3 significant digits (0.001 / 3: 0.000333).
double beyond(double lr, double factor) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", lr * factor);
  return std::strtod(text, nullptr);
}

// Where the best cell lies, and the rates that would bracket it.
void place_best(ComponentSummary& summary) {
  const size_t best = size_t(summary.best), last = summary.cells.size() - 1;
  const double lr = summary.cells[best].lr;
  if (last == 0) {
    summary.position = BestPosition::OnlyRate;
    summary.extend_with = {beyond(lr, 1.0 / 3), beyond(lr, 3)};
  } else if (best == 0) {
    summary.position = BestPosition::LowerEdge;
    summary.extend_with = {beyond(lr, 1.0 / 3)};
  } else if (best == last) {
    summary.position = BestPosition::UpperEdge;
    summary.extend_with = {beyond(lr, 3)};
  } else if (summary.cells[best - 1].accuracies.empty() || summary.cells[best + 1].accuracies.empty()) {
    summary.position = BestPosition::UnfinishedNeighbour;
  } else {
    summary.position = BestPosition::Inside;
  }
}

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
  place_best(summary);
  const LrCell& best = summary.cells[size_t(summary.best)];
  std::vector<TrainingCurves> curves;
  for (uint64_t seed : best.seeds) {
    const SweepRun* run = finished_runs.at({summary.component, summary.optimizer, best.lr, seed});
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

double relative_gain(double top1, const ProbeBaseline& probe) { return (top1 - probe.top1) / probe.top1; }

std::string gain_text(double gain) { return format("%+.1f%%", 100 * gain); }

std::string cell_text(const LrCell& cell, const std::optional<ProbeBaseline>& probe) {
  if (cell.accuracies.empty()) return "–";
  std::string text = format("%.2f", 100 * cell_mean(cell));
  if (cell.accuracies.size() >= 2) text += " ± " + format("%.2f", 100 * sample_std(cell.accuracies));
  text += " (" + std::to_string(cell.accuracies.size()) + ")";
  if (probe) text += ", " + gain_text(relative_gain(cell_mean(cell), *probe));
  return text;
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

ProbeBaseline read_probe_baseline(const std::string& path, const SweepSettings& plan_settings) {
  std::ifstream in(path);
  VITUNE_CHECK(in.good(), "--probe: cannot open the probe results ", path);
  json results = json::parse(in, nullptr, false);
  VITUNE_CHECK(!results.is_discarded() && results.is_object(), "--probe: ", path, ": not a JSON object");
  VITUNE_CHECK(results.value("command", "") == "probe", "--probe: ", path,
               ": not the results of `vitune probe` (expected \"command\": \"probe\")");
  VITUNE_CHECK(results.contains("eval") && results["eval"].contains("top1") && results["eval"]["top1"].is_number(),
               "--probe: ", path, ": no \"eval\".\"top1\"");
  const double top1 = results["eval"]["top1"].get<double>();
  VITUNE_CHECK(top1 > 0, "--probe: ", path, ": the probe's top-1 is ", top1,
               "; a relative gain over it needs a top-1 above 0");
  for (const auto& [key, expected] : {std::pair<std::string, std::string>{"model", plan_settings.model},
                                      {"eval_data_spec", plan_settings.eval_data}}) {
    VITUNE_CHECK(results.contains(key) && results[key].is_string(), "--probe: ", path, ": no \"", key, "\"");
    VITUNE_CHECK(results[key].get<std::string>() == expected, "--probe: ", path, ": field \"", key, "\" is '",
                 results[key].get<std::string>(), "' but the sweep's is '", expected,
                 "'; fit the probe on the sweep's model and evaluation data");
  }
  return {path, top1};
}

SweepReport build_sweep_report(const SweepPlan& plan, const std::optional<ProbeBaseline>& probe) {
  SweepReport report;
  report.planned = plan.runs.size();
  report.probe = probe;
  report.optimizers = plan.grid.optimizers;
  for (const std::string& component : plan.grid.components) {
    for (const std::string& optimizer : plan.grid.optimizers) {
      std::set<double> lrs;
      for (const SweepRun& run : plan.runs) {
        if (run.component == component && run.optimizer == optimizer) lrs.insert(run.lr);
      }
      ComponentSummary summary;
      summary.component = component;
      summary.optimizer = optimizer;
      for (double lr : lrs) summary.cells.push_back({lr, {}, {}});
      report.summaries.push_back(summary);
    }
  }
  RunIndex finished_runs;
  for (const SweepRun& run : plan.runs) {
    auto summary = std::find_if(report.summaries.begin(), report.summaries.end(), [&](const ComponentSummary& s) {
      return s.component == run.component && s.optimizer == run.optimizer;
    });
    VITUNE_CHECK(summary != report.summaries.end(), "sweep report: the component and optimizer of ", run.id,
                 " are not in the plan's grid");
    if (!run_finished(run)) {
      report.missing.push_back(run.id);
      continue;
    }
    LrCell& cell = *std::find_if(summary->cells.begin(), summary->cells.end(),
                                 [&](const LrCell& c) { return c.lr == run.lr; });
    cell.seeds.push_back(run.seed);
    cell.accuracies.push_back(read_run_accuracy(run.results));
    finished_runs[{run.component, run.optimizer, run.lr, run.seed}] = &run;
    ++report.finished;
  }
  for (ComponentSummary& summary : report.summaries) summarise(summary, finished_runs);
  for (ComponentSummary& summary : report.summaries) {
    summary.vs_ln1 = against(summary, find_summary(report.summaries, "ln1", summary.optimizer));
    summary.vs_ln2 = against(summary, find_summary(report.summaries, "ln2", summary.optimizer));
  }
  return report;
}

std::vector<SweepExtension> sweep_extensions(const SweepReport& report) {
  std::vector<SweepExtension> extensions;
  for (const ComponentSummary& s : report.summaries) {
    for (double lr : s.extend_with) extensions.push_back({s.component, s.optimizer, lr});
  }
  return extensions;
}

std::string edge_warning(const ComponentSummary& s) {
  const std::string lr = number_text(s.cells[size_t(s.best)].lr);
  std::string added;
  for (double rate : s.extend_with) added += (added.empty() ? "" : " and ") + number_text(rate);
  const std::string head = s.component + " with " + s.optimizer + ": ";
  switch (s.position) {
    case BestPosition::LowerEdge:
    case BestPosition::UpperEdge:
      return head + "best at the grid's " + best_position_name(s.position) + ": " + lr + " — extend the grid (adds " +
             added + ")";
    case BestPosition::OnlyRate:
      return head + "the grid has one learning rate, " + lr + " — extend the grid (adds " + added + ")";
    default:
      return head + "best " + lr + " has a neighbouring rate without finished runs: run (or fix) them";
  }
}

std::string best_position_name(BestPosition position) {
  switch (position) {
    case BestPosition::None: return "";
    case BestPosition::Inside: return "inside";
    case BestPosition::LowerEdge: return "lower edge";
    case BestPosition::UpperEdge: return "upper edge";
    case BestPosition::OnlyRate: return "only rate";
    case BestPosition::UnfinishedNeighbour: return "unfinished neighbour";
  }
  return "";
}

nlohmann::ordered_json sweep_report_json(const SweepReport& report) {
  auto gain = [&](bool present, double top1) {
    return optional_number(present && report.probe.has_value(), report.probe ? relative_gain(top1, *report.probe) : 0);
  };
  ordered_json summaries = ordered_json::array(), at_edge = ordered_json::array();
  for (const ComponentSummary& s : report.summaries) {
    ordered_json cells = ordered_json::array();
    for (const LrCell& cell : s.cells) {
      const bool has_runs = !cell.accuracies.empty();
      const double m = has_runs ? cell_mean(cell) : 0;
      cells.push_back({{"lr", cell.lr},
                       {"seeds", cell.seeds},
                       {"accuracies", cell.accuracies},
                       {"mean", optional_number(has_runs, m)},
                       {"std", optional_number(cell.accuracies.size() >= 2,
                                               cell.accuracies.size() >= 2 ? sample_std(cell.accuracies) : 0)},
                       {"gain_over_probe", gain(has_runs, m)}});
    }
    const bool has_best = s.best >= 0;
    const LrCell* best = has_best ? &s.cells[size_t(s.best)] : nullptr;
    const double best_mean = best ? cell_mean(*best) : 0;
    const std::string position = best_position_name(s.position);
    if (has_best && s.position != BestPosition::Inside) {
      at_edge.push_back({{"component", s.component}, {"optimizer", s.optimizer}, {"best_lr", best->lr},
                         {"best_position", position}, {"extend_with", s.extend_with}});
    }
    summaries.push_back(
        {{"component", s.component},
         {"optimizer", s.optimizer},
         {"trained", trained_components_flag(s.component)},
         {"cells", cells},
         {"best_lr", optional_number(has_best, best ? best->lr : 0)},
         {"best_mean", optional_number(has_best, best_mean)},
         {"best_gain_over_probe", gain(has_best, best_mean)},
         {"best_position", has_best ? ordered_json(position) : ordered_json()},
         {"best_inside_grid", s.position == BestPosition::Inside},
         {"extend_with", s.extend_with},
         {"spread", optional_number(has_best, s.spread)},
         {"welch_vs_ln1", welch_json(s.vs_ln1)},
         {"welch_vs_ln2", welch_json(s.vs_ln2)},
         {"curves",
          {{"steps", s.curves.steps},
           {"loss", s.curves.loss},
           {"grad_norm_total", s.curves.grad_norm_total},
           {"grad_norm_component", s.curves.grad_norm_component}}}});
  }
  ordered_json probe;
  if (report.probe) probe = {{"results", report.probe->path}, {"top1", report.probe->top1}};
  return {{"runs_planned", report.planned},
          {"runs_finished", report.finished},
          {"missing", report.missing},
          {"probe", probe},
          {"best_not_bracketed", at_edge},
          {"summaries", summaries}};
}

std::string sweep_report_markdown(const SweepReport& report) {
  std::string md = "# Component-wise finetuning sweep\n\n";
  md += cat(report.finished, " of ", report.planned, " runs finished.\n\n");
  std::string warnings;
  for (const ComponentSummary& s : report.summaries) {
    if (s.best >= 0 && s.position != BestPosition::Inside) warnings += "- **" + edge_warning(s) + "**\n";
  }
  if (!warnings.empty()) {
    md += "**Best learning rates the grid does not bracket** (their \"best\" is a bound, not the optimum; "
          "`vitune sweep extend --plan <plan>` adds the rates named, then run the shards again):\n\n" +
          warnings + "\n";
  }
  if (report.probe) {
    md += "Linear probe (logistic regression on the frozen features, " + report.probe->path + "): top-1 " +
          format("%.2f", 100 * report.probe->top1) +
          "%. Each cell also shows the relative gain over it, (top-1 - probe) / probe.\n\n";
  }
  md += "Cells: top-1 accuracy (%) on the evaluation data, mean ± sample std over seeds (number of seeds); "
        "empty where the component's grid has no such rate. "
        "Best: the learning rate with the highest mean, marked when it is at the grid's edge. Spread: max - min "
        "of the means across learning rates (lower is more stable). Welch: the best learning rate's seeds against "
        "those of ln1 (ln2) at its own best learning rate; t > 0 means the component beats the LayerNorm, p is "
        "two-sided.\n";
  for (const std::string& optimizer : report.optimizers) {
    std::vector<const ComponentSummary*> rows;
    std::set<double> lrs;
    for (const ComponentSummary& s : report.summaries) {
      if (s.optimizer != optimizer) continue;
      rows.push_back(&s);
      for (const LrCell& cell : s.cells) lrs.insert(cell.lr);
    }
    if (rows.empty()) continue;
    const std::string probe_column = report.probe ? " best vs probe |" : "";
    md += "\n## " + optimizer + "\n\n| component |";
    for (double lr : lrs) md += " lr " + number_text(lr) + " |";
    md += " best lr | best |" + probe_column + " spread | Welch vs ln1 | Welch vs ln2 |\n|---|";
    for (size_t i = 0; i < lrs.size() + (report.probe ? 1 : 0); ++i) md += "---|";
    md += "---|---|---|---|---|\n";
    for (const ComponentSummary* s : rows) {
      md += "| " + s->component + " |";
      for (double lr : lrs) {
        auto cell = std::find_if(s->cells.begin(), s->cells.end(), [&](const LrCell& c) { return c.lr == lr; });
        md += cell == s->cells.end() ? " |" : " " + cell_text(*cell, report.probe) + " |";
      }
      if (s->best >= 0) {
        const LrCell& best = s->cells[size_t(s->best)];
        const std::string marker =
            s->position == BestPosition::Inside ? "" : " ⚠ " + best_position_name(s->position);
        md += " " + number_text(best.lr) + marker + " | " + format("%.2f", 100 * cell_mean(best)) + " |";
        if (report.probe) md += " " + gain_text(relative_gain(cell_mean(best), *report.probe)) + " |";
        md += " " + format("%.2f", 100 * s->spread) + " |";
      } else {
        md += report.probe ? " – | – | – | – |" : " – | – | – |";
      }
      md += " " + welch_text(s->vs_ln1) + " | " + welch_text(s->vs_ln2) + " |\n";
    }
  }
  return md;
}

}  // namespace vitune::peft
