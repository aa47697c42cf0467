// The report of a component-wise finetuning sweep over whatever runs are finished: per
// component and optimizer, the test accuracy's mean and spread over seeds at each
// learning rate, the best learning rate and whether the grid brackets it (with the
// rates that would extend a grid whose best is at its edge), the stability across
// learning rates, Welch's test against tuning only a LayerNorm (ln1, ln2), the mean
// loss and gradient-norm curves at the best learning rate, and, given a linear probe's
// results, every accuracy as a relative gain over the probe's. As JSON and markdown.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "peft/statistics.h"
#include "peft/sweep_plan.h"

namespace vitune::peft {

// The finished runs of one component, optimizer and learning rate.
struct LrCell {
  double lr = 0;
  std::vector<uint64_t> seeds;
  std::vector<double> accuracies;  // top-1 on the evaluation data, one per seed
};

// Per logged step: the training loss, the total gradient norm (before clipping) and
// the norm of the trained component's own gradient (the total for "all").
struct TrainingCurves {
  std::vector<int64_t> steps;
  std::vector<double> loss, grad_norm_total, grad_norm_component;
};

// Where the best learning rate lies in its component's grid.
enum class BestPosition {
  None,                 // no run finished
  Inside,               // finished cells on both sides: the grid brackets it
  LowerEdge,            // the smallest rate of the grid
  UpperEdge,            // the largest
  OnlyRate,             // the grid has one rate
  UnfinishedNeighbour,  // inside the grid, but a neighbouring rate has no finished run
};
// "inside", "lower edge", ...; "" for None.
std::string best_position_name(BestPosition position);

struct ComponentSummary {
  std::string component, optimizer;
  std::vector<LrCell> cells;  // one per learning rate of the plan, ascending
  int best = -1;              // the cell with the highest mean accuracy; -1 if none has a run
  BestPosition position = BestPosition::None;
  std::vector<double> extend_with;  // the rates a factor of 3 beyond an edge best (3 digits)
  double spread = 0;          // max - min of the cell means over cells with runs
  std::optional<WelchTest> vs_ln1, vs_ln2;  // best cell against ln1's (ln2's) best cell
  TrainingCurves curves;                    // at the best cell, the mean over its seeds
};

// The linear probe the accuracies are compared with: `vitune probe`'s results file.
struct ProbeBaseline {
  std::string path;
  double top1 = 0;
};

struct SweepReport {
  size_t planned = 0, finished = 0;
  std::optional<ProbeBaseline> probe;
  std::vector<std::string> missing;  // ids of runs without results
  std::vector<std::string> optimizers;
  std::vector<ComponentSummary> summaries;  // components in grid order, per optimizer
};

// The top-1 accuracy of a finished finetune ("eval"."top1" of its results file).
double read_run_accuracy(const std::string& results_path);
// The step lines of a finetune's JSON-lines log; `component` picks the component norm.
TrainingCurves read_training_curves(const std::string& log_path, const std::string& component);
// The step-wise mean of several runs' curves, over the steps they all logged.
TrainingCurves mean_curves(const std::vector<TrainingCurves>& runs);

// Reads `vitune probe`'s results; its model and evaluation data must be the plan's.
ProbeBaseline read_probe_baseline(const std::string& path, const SweepSettings& plan_settings);

SweepReport build_sweep_report(const SweepPlan& plan, const std::optional<ProbeBaseline>& probe = std::nullopt);
// The loud line of a best that the grid does not bracket: "mha with sgd: best at the
// grid's upper edge: 0.03 — extend the grid (adds 0.09)".
std::string edge_warning(const ComponentSummary& summary);
// The extensions that bracket every edge best: each summary's extend_with.
std::vector<SweepExtension> sweep_extensions(const SweepReport& report);
nlohmann::ordered_json sweep_report_json(const SweepReport& report);
std::string sweep_report_markdown(const SweepReport& report);

}  // namespace vitune::peft
