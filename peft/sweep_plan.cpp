// The sweep plan: grid checks, run layout, the finetune argument lists, the plan file
// and shards.
#include "peft/sweep_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/atomic_file.h"
#include "engine/error.h"

namespace vitune::peft {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const std::set<std::string> kComponents{"emb", "ln1", "mha", "ln2", "fc1", "fc2", "all", "head"};
const std::set<std::string> kOptimizers{"sgd", "adamw"};
// finetune flags the plan sets itself; extra arguments may not repeat them.
const std::vector<std::string> kPlannedFlags{
    "--model", "--data", "--eval-data", "--train", "--optimizer", "--lr", "--momentum", "--weight-decay",
    "--schedule", "--warmup-steps", "--clip-norm", "--batch-size", "--steps", "--epochs", "--seed", "--log-every",
    "--out", "--results", "--log", "--threads"};

template <typename T>
void check_distinct(const std::vector<T>& values, const std::string& what) {
  VITUNE_CHECK(!values.empty(), "sweep plan: ", what, " is empty");
  std::set<T> seen(values.begin(), values.end());
  VITUNE_CHECK(seen.size() == values.size(), "sweep plan: ", what, " lists a value twice");
}

void check_grid(const SweepGrid& grid) {
  check_distinct(grid.components, "the component list");
  check_distinct(grid.optimizers, "the optimizer list");
  check_distinct(grid.lrs, "the learning-rate list");
  check_distinct(grid.seeds, "the seed list");
  for (const std::string& c : grid.components) {
    VITUNE_CHECK(kComponents.count(c), "sweep plan: unknown component '", c,
                 "'; expected emb, ln1, mha, ln2, fc1, fc2, all or head");
  }
  for (const std::string& o : grid.optimizers) {
    VITUNE_CHECK(kOptimizers.count(o), "sweep plan: unknown optimizer '", o, "'; expected sgd or adamw");
  }
  for (double lr : grid.lrs) {
    VITUNE_CHECK(lr > 0 && std::isfinite(lr), "sweep plan: learning rates must be positive, got ", lr);
  }
  VITUNE_CHECK(grid.adamw_lr_factor > 0 && std::isfinite(grid.adamw_lr_factor),
               "sweep plan: the AdamW learning-rate factor must be positive, got ", grid.adamw_lr_factor);
}

void check_settings(const SweepSettings& s) {
  VITUNE_CHECK(!s.model.empty(), "sweep plan: --model is required");
  VITUNE_CHECK(!s.data.empty(), "sweep plan: --data is required");
  VITUNE_CHECK(!s.eval_data.empty(), "sweep plan: --eval-data is required (the report compares its accuracy)");
  VITUNE_CHECK(s.steps > 0 || s.epochs > 0, "sweep plan: give --steps or --epochs");
  VITUNE_CHECK(s.warmup_steps >= 0 && s.batch_size >= 1 && s.clip_norm >= 0 && s.log_every >= 1 &&
                   s.threads_per_run >= 1 && s.weight_decay >= 0 && s.momentum >= 0 && s.momentum <= 1,
               "sweep plan: expected warmup >= 0, batch size >= 1, clip >= 0, log-every >= 1, threads per run >= 1, "
               "weight decay >= 0 and momentum in [0, 1]");
  for (const std::string& arg : s.extra_args) {
    for (const std::string& flag : kPlannedFlags) {
      VITUNE_CHECK(arg != flag && arg.rfind(flag + "=", 0) != 0, "sweep plan: the extra finetune argument '", arg,
                   "' is one the plan sets itself; use the sweep's own flag");
    }
  }
}

// Rounds away the binary noise of a product such as 0.03 * 0.01 (0.00030000000000000003).
double tidy(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.12g", value);
  return std::strtod(text, nullptr);
}

std::vector<std::string> finetune_args(const SweepRun& run, const SweepSettings& s) {
  std::vector<std::string> args{"--threads", std::to_string(s.threads_per_run), "finetune",
                                "--model", s.model, "--data", s.data, "--eval-data", s.eval_data,
                                "--train", trained_components_flag(run.component),
                                "--optimizer", run.optimizer, "--lr", number_text(run.lr)};
  if (run.optimizer == "sgd") args.insert(args.end(), {"--momentum", number_text(s.momentum)});
  args.insert(args.end(), {"--weight-decay", number_text(s.weight_decay), "--schedule", s.schedule,
                           "--warmup-steps", std::to_string(s.warmup_steps), "--clip-norm", number_text(s.clip_norm),
                           "--batch-size", std::to_string(s.batch_size)});
  if (s.steps > 0) {
    args.insert(args.end(), {"--steps", std::to_string(s.steps)});
  } else {
    args.insert(args.end(), {"--epochs", number_text(s.epochs)});
  }
  args.insert(args.end(), {"--seed", std::to_string(run.seed), "--log-every", std::to_string(s.log_every),
                           "--out", run.model_out, "--results", run.results, "--log", run.log});
  args.insert(args.end(), s.extra_args.begin(), s.extra_args.end());
  return args;
}

template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  VITUNE_CHECK(object.is_object() && object.contains(key), where, ": missing field '", key, "'");
  try {
    return object.at(key).get<T>();
  } catch (const json::exception& e) {
    throw Error(cat(where, ": field '", key, "' has the wrong type: ", e.what()));
  }
}

}  // namespace

std::string trained_components_flag(const std::string& component) {
  if (component == "all") return "all";
  if (component == "head") return "head,norm";
  return component + ",norm";
}

std::string number_text(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string run_id(const std::string& component, const std::string& optimizer, double lr, uint64_t seed) {
  return cat(component, "-", optimizer, "-lr", number_text(lr), "-s", seed);
}

SweepPlan make_sweep_plan(const SweepGrid& grid, const SweepSettings& settings, const std::string& dir) {
  check_grid(grid);
  check_settings(settings);
  VITUNE_CHECK(!dir.empty(), "sweep plan: --out is required");
  SweepPlan plan{dir, grid, settings, {}};
  const std::filesystem::path runs = std::filesystem::path(dir) / "runs";
  for (const std::string& component : grid.components) {
    for (const std::string& optimizer : grid.optimizers) {
      for (double grid_lr : grid.lrs) {
        for (uint64_t seed : grid.seeds) {
          SweepRun run;
          run.component = component;
          run.optimizer = optimizer;
          run.grid_lr = grid_lr;
          run.lr = optimizer == "adamw" ? tidy(grid_lr * grid.adamw_lr_factor) : grid_lr;
          run.seed = seed;
          run.id = run_id(component, optimizer, run.lr, seed);
          run.results = (runs / (run.id + ".json")).string();
          run.log = (runs / (run.id + ".jsonl")).string();
          run.output = (runs / (run.id + ".out")).string();
          run.model_out = (runs / (run.id + ".safetensors")).string();
          run.args = finetune_args(run, settings);
          plan.runs.push_back(std::move(run));
        }
      }
    }
  }
  return plan;
}

nlohmann::ordered_json sweep_plan_json(const SweepPlan& plan) {
  const SweepGrid& g = plan.grid;
  const SweepSettings& s = plan.settings;
  ordered_json runs = ordered_json::array();
  for (const SweepRun& r : plan.runs) {
    runs.push_back({{"id", r.id}, {"component", r.component}, {"optimizer", r.optimizer}, {"grid_lr", r.grid_lr},
                    {"lr", r.lr}, {"seed", r.seed}, {"results", r.results}, {"log", r.log}, {"output", r.output},
                    {"model", r.model_out}, {"args", r.args}});
  }
  return {{"format", "vitune sweep plan"},
          {"version", 1},
          {"dir", plan.dir},
          {"grid",
           {{"components", g.components}, {"optimizers", g.optimizers}, {"lrs", g.lrs}, {"seeds", g.seeds},
            {"adamw_lr_factor", g.adamw_lr_factor}}},
          {"settings",
           {{"model", s.model}, {"data", s.data}, {"eval_data", s.eval_data}, {"steps", s.steps},
            {"epochs", s.epochs}, {"warmup_steps", s.warmup_steps}, {"batch_size", s.batch_size},
            {"clip_norm", s.clip_norm}, {"momentum", s.momentum}, {"weight_decay", s.weight_decay},
            {"schedule", s.schedule}, {"log_every", s.log_every}, {"threads_per_run", s.threads_per_run},
            {"extra_args", s.extra_args}}},
          {"runs", runs}};
}

SweepPlan sweep_plan_from_json(const nlohmann::json& j, const std::string& source) {
  VITUNE_CHECK(j.is_object() && j.value("format", "") == "vitune sweep plan", source,
               ": not a vitune sweep plan (expected \"format\": \"vitune sweep plan\")");
  VITUNE_CHECK(field<int>(j, "version", source) == 1, source, ": unsupported sweep plan version");
  SweepPlan plan;
  plan.dir = field<std::string>(j, "dir", source);
  const json g = field<json>(j, "grid", source);
  const std::string grid_where = source + ": grid";
  plan.grid.components = field<std::vector<std::string>>(g, "components", grid_where);
  plan.grid.optimizers = field<std::vector<std::string>>(g, "optimizers", grid_where);
  plan.grid.lrs = field<std::vector<double>>(g, "lrs", grid_where);
  plan.grid.seeds = field<std::vector<uint64_t>>(g, "seeds", grid_where);
  plan.grid.adamw_lr_factor = field<double>(g, "adamw_lr_factor", grid_where);
  const json s = field<json>(j, "settings", source);
  const std::string where = source + ": settings";
  SweepSettings& out = plan.settings;
  out.model = field<std::string>(s, "model", where);
  out.data = field<std::string>(s, "data", where);
  out.eval_data = field<std::string>(s, "eval_data", where);
  out.steps = field<int64_t>(s, "steps", where);
  out.epochs = field<double>(s, "epochs", where);
  out.warmup_steps = field<int64_t>(s, "warmup_steps", where);
  out.batch_size = field<int64_t>(s, "batch_size", where);
  out.clip_norm = field<double>(s, "clip_norm", where);
  out.momentum = field<double>(s, "momentum", where);
  out.weight_decay = field<double>(s, "weight_decay", where);
  out.schedule = field<std::string>(s, "schedule", where);
  out.log_every = field<int64_t>(s, "log_every", where);
  out.threads_per_run = field<int>(s, "threads_per_run", where);
  out.extra_args = field<std::vector<std::string>>(s, "extra_args", where);
  const json runs = field<json>(j, "runs", source);
  VITUNE_CHECK(runs.is_array(), source, ": 'runs' must be an array");
  std::set<std::string> ids;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string run_where = cat(source, ": runs[", i, "]");
    SweepRun r;
    r.id = field<std::string>(runs[i], "id", run_where);
    r.component = field<std::string>(runs[i], "component", run_where);
    r.optimizer = field<std::string>(runs[i], "optimizer", run_where);
    r.grid_lr = field<double>(runs[i], "grid_lr", run_where);
    r.lr = field<double>(runs[i], "lr", run_where);
    r.seed = field<uint64_t>(runs[i], "seed", run_where);
    r.results = field<std::string>(runs[i], "results", run_where);
    r.log = field<std::string>(runs[i], "log", run_where);
    r.output = field<std::string>(runs[i], "output", run_where);
    r.model_out = field<std::string>(runs[i], "model", run_where);
    r.args = field<std::vector<std::string>>(runs[i], "args", run_where);
    VITUNE_CHECK(ids.insert(r.id).second, run_where, ": the id '", r.id, "' appears twice");
    plan.runs.push_back(std::move(r));
  }
  return plan;
}

void save_sweep_plan(const SweepPlan& plan, const std::string& path) {
  write_file_atomically(path, sweep_plan_json(plan).dump(2) + "\n");
}

SweepPlan load_sweep_plan(const std::string& path) {
  std::ifstream in(path);
  VITUNE_CHECK(in.good(), "cannot open the sweep plan ", path);
  json j = json::parse(in, nullptr, false);
  VITUNE_CHECK(!j.is_discarded(), path, ": not valid JSON");
  return sweep_plan_from_json(j, path);
}

std::pair<int, int> parse_shard(const std::string& text) {
  int shard = -1, shards = 0;
  char rest = 0;
  const bool parsed = std::sscanf(text.c_str(), "%d/%d%c", &shard, &shards, &rest) == 2;
  VITUNE_CHECK(parsed && shards >= 1 && shard >= 0 && shard < shards, "--shard: expected i/n with 0 <= i < n, got '",
               text, "'");
  return {shard, shards};
}

std::vector<size_t> shard_run_indices(size_t run_count, int shard, int shards) {
  VITUNE_CHECK(shards >= 1 && shard >= 0 && shard < shards, "shard ", shard, "/", shards, " is not a shard");
  std::vector<size_t> indices;
  for (size_t i = size_t(shard); i < run_count; i += size_t(shards)) indices.push_back(i);
  return indices;
}

bool run_finished(const SweepRun& run) { return std::filesystem::exists(run.results); }

}  // namespace vitune::peft
