// The report of a component-wise finetuning sweep over whatever runs are finished: per
// component and optimizer, the test accuracy's mean and spread over seeds at each
// learning rate, the best learning rate, the stability across learning rates, Welch's
// test against tuning only a LayerNorm (ln1, ln2), and the mean loss and gradient-norm
// curves at the best learning rate. As JSON and as markdown tables.
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
  double grid_lr = 0, lr = 0;  // the grid's and the optimizer's learning rate
  std::vector<uint64_t> seeds;
  std::vector<double> accuracies;  // top-1 on the evaluation data, one per seed
};

// Per logged step: the training loss, the total gradient norm (before clipping) and
// the norm of the trained component's own gradient (the total for "all").
struct TrainingCurves {
  std::vector<int64_t> steps;
  std::vector<double> loss, grad_norm_total, grad_norm_component;
};

struct ComponentSummary {
  std::string component, optimizer;
  std::vector<LrCell> cells;  // one per grid learning rate, in grid order
  int best = -1;              // the cell with the highest mean accuracy; -1 if none has a run
  double spread = 0;          // max - min of the cell means over cells with runs
  std::optional<WelchTest> vs_ln1, vs_ln2;  // best cell against ln1's (ln2's) best cell
  TrainingCurves curves;                    // at the best cell, the mean over its seeds
};

struct SweepReport {
  size_t planned = 0, finished = 0;
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

SweepReport build_sweep_report(const SweepPlan& plan);
nlohmann::ordered_json sweep_report_json(const SweepReport& report);
std::string sweep_report_markdown(const SweepReport& report);

}  // namespace vitune::peft
