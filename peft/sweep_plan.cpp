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

void check_lrs(const std::vector<double>& lrs, const std::string& what) {
  check_distinct(lrs, what);
  for (double lr : lrs) {
    VITUNE_CHECK(lr > 0 && std::isfinite(lr), "sweep plan: learning rates must be positive, got ", lr, " in ", what);
  }
}

void check_component(const std::string& c) {
  VITUNE_CHECK(kComponents.count(c), "sweep plan: unknown component '", c,
               "'; expected emb, ln1, mha, ln2, fc1, fc2, all or head");
}

void check_optimizer(const std::string& o) {
  VITUNE_CHECK(kOptimizers.count(o), "sweep plan: unknown optimizer '", o, "'; expected sgd or adamw");
}

void check_grid(const SweepGrid& grid) {
  check_distinct(grid.components, "the component list");
  check_distinct(grid.optimizers, "the optimizer list");
  check_distinct(grid.seeds, "the seed list");
  for (const std::string& c : grid.components) check_component(c);
  for (const std::string& o : grid.optimizers) {
    check_optimizer(o);
    check_lrs(grid.lrs(o), "the " + o + " learning-rate list (--" + o + "-lrs)");
  }
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

// Lays out the runs of one component, optimizer and learning rate, one per seed.
void add_runs(SweepPlan& plan, const std::string& component, const std::string& optimizer, double lr) {
  const std::filesystem::path runs = std::filesystem::path(plan.dir) / "runs";
  for (uint64_t seed : plan.grid.seeds) {
    SweepRun run;
    run.component = component;
    run.optimizer = optimizer;
    run.lr = lr;
    run.seed = seed;
    run.id = run_id(component, optimizer, lr, seed);
    run.results = (runs / (run.id + ".json")).string();
    run.log = (runs / (run.id + ".jsonl")).string();
    run.output = (runs / (run.id + ".out")).string();
    run.model_out = (runs / (run.id + ".safetensors")).string();
    run.args = finetune_args(run, plan.settings);
    plan.runs.push_back(std::move(run));
  }
}

// Rounds away the binary noise of a product such as 0.03 * 0.01 (0.00030000000000000003):
// the version-1 plans' AdamW rates.
double tidy(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.12g", value);
  return std::strtod(text, nullptr);
}

// The grid of a plan file: version 2 has a list per optimizer; version 1 had one list,
// used by SGD as it is and by AdamW times a factor.
SweepGrid grid_from_json(const json& g, int version, const std::string& where) {
  SweepGrid grid;
  grid.components = field<std::vector<std::string>>(g, "components", where);
  grid.optimizers = field<std::vector<std::string>>(g, "optimizers", where);
  grid.seeds = field<std::vector<uint64_t>>(g, "seeds", where);
  if (version == 2) {
    grid.sgd_lrs = field<std::vector<double>>(g, "sgd_lrs", where);
    grid.adamw_lrs = field<std::vector<double>>(g, "adamw_lrs", where);
    return grid;
  }
  grid.sgd_lrs = field<std::vector<double>>(g, "lrs", where);
  const double factor = field<double>(g, "adamw_lr_factor", where);
  grid.adamw_lrs.clear();
  for (double lr : grid.sgd_lrs) grid.adamw_lrs.push_back(tidy(lr * factor));
  return grid;
}

}  // namespace

const std::vector<double>& SweepGrid::lrs(const std::string& optimizer) const {
  if (optimizer == "sgd") return sgd_lrs;
  check_optimizer(optimizer);
  return adamw_lrs;
}

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
  SweepPlan plan{dir, grid, settings, {}, {}};
  for (const std::string& component : grid.components) {
    for (const std::string& optimizer : grid.optimizers) {
      for (double lr : grid.lrs(optimizer)) add_runs(plan, component, optimizer, lr);
    }
  }
  return plan;
}

void extend_sweep_plan(SweepPlan& plan, const SweepExtension& extension) {
  const SweepExtension& e = extension;
  const std::string where = cat("sweep extend: ", e.component, " with ", e.optimizer);
  VITUNE_CHECK(std::count(plan.grid.components.begin(), plan.grid.components.end(), e.component) &&
                   std::count(plan.grid.optimizers.begin(), plan.grid.optimizers.end(), e.optimizer),
               where, " is not part of the plan's grid");
  VITUNE_CHECK(e.lr > 0 && std::isfinite(e.lr), where, ": learning rates must be positive, got ", e.lr);
  for (const SweepRun& run : plan.runs) {
    VITUNE_CHECK(run.component != e.component || run.optimizer != e.optimizer || run.lr != e.lr, where,
                 " has learning rate ", number_text(e.lr), " already");
  }
  plan.extensions.push_back(e);
  add_runs(plan, e.component, e.optimizer, e.lr);
}

nlohmann::ordered_json sweep_plan_json(const SweepPlan& plan) {
  const SweepGrid& g = plan.grid;
  const SweepSettings& s = plan.settings;
  ordered_json runs = ordered_json::array();
  for (const SweepRun& r : plan.runs) {
    runs.push_back({{"id", r.id}, {"component", r.component}, {"optimizer", r.optimizer}, {"lr", r.lr},
                    {"seed", r.seed}, {"results", r.results}, {"log", r.log}, {"output", r.output},
                    {"model", r.model_out}, {"args", r.args}});
  }
  ordered_json extensions = ordered_json::array();
  for (const SweepExtension& e : plan.extensions) {
    extensions.push_back({{"component", e.component}, {"optimizer", e.optimizer}, {"lr", e.lr}});
  }
  return {{"format", "vitune sweep plan"},
          {"version", 2},
          {"dir", plan.dir},
          {"grid",
           {{"components", g.components}, {"optimizers", g.optimizers}, {"sgd_lrs", g.sgd_lrs},
            {"adamw_lrs", g.adamw_lrs}, {"seeds", g.seeds}}},
          {"settings",
           {{"model", s.model}, {"data", s.data}, {"eval_data", s.eval_data}, {"steps", s.steps},
            {"epochs", s.epochs}, {"warmup_steps", s.warmup_steps}, {"batch_size", s.batch_size},
            {"clip_norm", s.clip_norm}, {"momentum", s.momentum}, {"weight_decay", s.weight_decay},
            {"schedule", s.schedule}, {"log_every", s.log_every}, {"threads_per_run", s.threads_per_run},
            {"extra_args", s.extra_args}}},
          {"extensions", extensions},
          {"runs", runs}};
}

SweepPlan sweep_plan_from_json(const nlohmann::json& j, const std::string& source) {
  VITUNE_CHECK(j.is_object() && j.value("format", "") == "vitune sweep plan", source,
               ": not a vitune sweep plan (expected \"format\": \"vitune sweep plan\")");
  const int version = field<int>(j, "version", source);
  VITUNE_CHECK(version == 1 || version == 2, source, ": sweep plan version ", version,
               " is not one this vitune reads (1 or 2)");
  SweepPlan plan;
  plan.dir = field<std::string>(j, "dir", source);
  plan.grid = grid_from_json(field<json>(j, "grid", source), version, source + ": grid");
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
  if (version == 2) {
    const json extensions = field<json>(j, "extensions", source);
    VITUNE_CHECK(extensions.is_array(), source, ": 'extensions' must be an array");
    for (size_t i = 0; i < extensions.size(); ++i) {
      const std::string extension_where = cat(source, ": extensions[", i, "]");
      plan.extensions.push_back({field<std::string>(extensions[i], "component", extension_where),
                                 field<std::string>(extensions[i], "optimizer", extension_where),
                                 field<double>(extensions[i], "lr", extension_where)});
    }
  }
  const json runs = field<json>(j, "runs", source);
  VITUNE_CHECK(runs.is_array(), source, ": 'runs' must be an array");
  std::set<std::string> ids;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string run_where = cat(source, ": runs[", i, "]");
    SweepRun r;
    r.id = field<std::string>(runs[i], "id", run_where);
    r.component = field<std::string>(runs[i], "component", run_where);
    r.optimizer = field<std::string>(runs[i], "optimizer", run_where);
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
