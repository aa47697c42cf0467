// A component-wise finetuning sweep as a plan: the grid (components x optimizers x
// each optimizer's learning rates x seeds, the plasticity paper's protocol), the
// settings every run shares, the learning rates added later for one component and
// optimizer whose best rate was at the grid's edge, and each run with its id, its files
// and the exact `vitune finetune` argument list. The plan is a JSON file; shards of it
// run anywhere, and a run whose results file exists is finished.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vitune::peft {

struct SweepGrid {
  // emb, ln1, mha, ln2, fc1, fc2 (each with the final norm and the head), all, head (head and norm).
  std::vector<std::string> components{"emb", "ln1", "mha", "ln2", "fc1", "fc2", "all", "head"};
  std::vector<std::string> optimizers{"sgd", "adamw"};
  std::vector<double> sgd_lrs{1e-3, 3e-3, 1e-2, 3e-2};
  std::vector<double> adamw_lrs{1e-5, 3e-5, 1e-4, 3e-4};
  std::vector<uint64_t> seeds{0, 42, 3407};

  // The grid's learning rates of `optimizer` ("sgd" or "adamw").
  const std::vector<double>& lrs(const std::string& optimizer) const;
};

// A learning rate added to the grid of one component and optimizer (every seed), beyond
// the edge where its best rate was.
struct SweepExtension {
  std::string component, optimizer;
  double lr = 0;
  bool operator==(const SweepExtension& o) const {
    return component == o.component && optimizer == o.optimizer && lr == o.lr;
  }
};

// What every run of the sweep shares.
struct SweepSettings {
  std::string model, data, eval_data;
  int64_t steps = 0;      // 0: train for `epochs`
  double epochs = 10;
  int64_t warmup_steps = 20;
  int64_t batch_size = 50;
  double clip_norm = 1.0;
  double momentum = 0.9;  // SGD
  double weight_decay = 0.0;
  std::string schedule = "cosine";
  int64_t log_every = 10;
  int threads_per_run = 1;
  std::vector<std::string> extra_args;  // appended to every finetune command
};

struct SweepRun {
  std::string id;  // "mha-sgd-lr0.01-s42"
  std::string component;
  std::string optimizer;
  double lr = 0;
  uint64_t seed = 0;
  std::string results, log, output, model_out;  // files under <dir>/runs/
  std::vector<std::string> args;                // after the executable: --threads N finetune ...
};

struct SweepPlan {
  std::string dir;  // the sweep's folder, as given to `sweep plan`
  SweepGrid grid;
  SweepSettings settings;
  std::vector<SweepExtension> extensions;  // in the order they were added
  std::vector<SweepRun> runs;  // components, then optimizers, learning rates, seeds; then the extensions'
};

// The `--train` value of a sweep component: "<c>,norm", "all", or "head,norm" for head.
std::string trained_components_flag(const std::string& component);
// The shortest decimal text that reads back as the same double ("0.01", "0.0003").
std::string number_text(double value);
std::string run_id(const std::string& component, const std::string& optimizer, double lr, uint64_t seed);

// Checks the grid and settings (known components and optimizers, positive learning
// rates, no duplicates, ...) and lays out every run under `dir`.
SweepPlan make_sweep_plan(const SweepGrid& grid, const SweepSettings& settings, const std::string& dir);
// Adds the runs of `extension` (one per seed) to the plan and records it; a learning
// rate the component and optimizer have already is refused.
void extend_sweep_plan(SweepPlan& plan, const SweepExtension& extension);

nlohmann::ordered_json sweep_plan_json(const SweepPlan& plan);
// Reads a plan written by sweep_plan_json (or by an earlier vitune: version 1, one
// learning-rate list with AdamW at a factor of it); `source` names it in error messages.
SweepPlan sweep_plan_from_json(const nlohmann::json& json, const std::string& source);
void save_sweep_plan(const SweepPlan& plan, const std::string& path);
SweepPlan load_sweep_plan(const std::string& path);

// Parses "i/n" (0 <= i < n) into {i, n}.
std::pair<int, int> parse_shard(const std::string& text);
// The indices of the runs of shard i of n: those with index % n == i.
std::vector<size_t> shard_run_indices(size_t run_count, int shard, int shards);
// A run is finished when its results file exists (finetune writes it atomically, last).
bool run_finished(const SweepRun& run);

}  // namespace vitune::peft
