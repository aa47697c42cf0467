// The sweep plan: the paper's grid has 192 runs, each combination once; the finetune
// argument lists are exactly what the protocol says (each optimizer its own rates, the
// norm and head trained with every component); bad grids are refused; extensions add
// one rate for one component and optimizer; the plan file reads back equal, and a
// version-1 plan reads as the same runs; shards cover every run exactly once; a results
// file marks a run finished.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "engine/error.h"
#include "peft/sweep_plan.h"

namespace vitune::peft {
namespace {

SweepSettings settings() {
  SweepSettings s;
  s.model = "model.safetensors";
  s.data = "fashion-mnist:train?classes=5-9";
  s.eval_data = "fashion-mnist:test?classes=5-9";
  s.steps = 300;
  s.warmup_steps = 30;
  s.batch_size = 32;
  return s;
}

TEST(SweepPlan, PaperGridHasEveryCombinationOnce) {
  SweepPlan plan = make_sweep_plan(SweepGrid{}, settings(), "sweep");
  ASSERT_EQ(plan.runs.size(), 192u);  // 8 components x 2 optimizers x 4 lrs x 3 seeds
  std::set<std::tuple<std::string, std::string, double, uint64_t>> combinations;
  std::set<std::string> ids;
  for (const SweepRun& run : plan.runs) {
    combinations.insert({run.component, run.optimizer, run.lr, run.seed});
    ids.insert(run.id);
  }
  EXPECT_EQ(combinations.size(), 192u);
  EXPECT_EQ(ids.size(), 192u);
  for (const char* component : {"emb", "ln1", "mha", "ln2", "fc1", "fc2", "all", "head"}) {
    for (double lr : {1e-3, 3e-3, 1e-2, 3e-2}) {
      for (uint64_t seed : {0, 42, 3407}) EXPECT_TRUE(combinations.count({component, "sgd", lr, seed}));
    }
    for (double lr : {1e-5, 3e-5, 1e-4, 3e-4}) {
      for (uint64_t seed : {0, 42, 3407}) EXPECT_TRUE(combinations.count({component, "adamw", lr, seed}));
    }
  }
  EXPECT_TRUE(ids.count("mha-sgd-lr0.01-s42"));
  EXPECT_TRUE(ids.count("fc1-adamw-lr0.0003-s3407"));
  EXPECT_EQ(plan.runs[0].results, "sweep/runs/emb-sgd-lr0.001-s0.json");
  EXPECT_EQ(plan.runs[0].log, "sweep/runs/emb-sgd-lr0.001-s0.jsonl");
  EXPECT_EQ(plan.runs[0].output, "sweep/runs/emb-sgd-lr0.001-s0.out");
  EXPECT_EQ(plan.runs[0].args[10], "emb,norm");
}

const SweepRun& find_run(const SweepPlan& plan, const std::string& id) {
  for (const SweepRun& run : plan.runs) {
    if (run.id == id) return run;
  }
  throw Error("no run " + id);
}

TEST(SweepPlan, ArgumentListsFollowTheProtocol) {
  SweepSettings s = settings();
  s.extra_args = {"--loader-threads", "1"};
  s.threads_per_run = 2;
  SweepPlan plan = make_sweep_plan(SweepGrid{}, s, "out");
  const std::vector<std::string> sgd{
      "--threads", "2", "finetune", "--model", "model.safetensors", "--data", "fashion-mnist:train?classes=5-9",
      "--eval-data", "fashion-mnist:test?classes=5-9", "--train", "mha,norm", "--optimizer", "sgd", "--lr", "0.01",
      "--momentum", "0.9", "--weight-decay", "0", "--schedule", "cosine", "--warmup-steps", "30", "--clip-norm", "1",
      "--batch-size", "32", "--steps", "300", "--seed", "42", "--log-every", "10",
      "--out", "out/runs/mha-sgd-lr0.01-s42.safetensors", "--results", "out/runs/mha-sgd-lr0.01-s42.json",
      "--log", "out/runs/mha-sgd-lr0.01-s42.jsonl", "--loader-threads", "1"};
  EXPECT_EQ(find_run(plan, "mha-sgd-lr0.01-s42").args, sgd);

  const SweepRun& adamw = find_run(plan, "head-adamw-lr3e-05-s0");
  EXPECT_EQ(adamw.lr, 3e-5);
  const std::vector<std::string>& a = adamw.args;
  auto value_of = [&](const std::string& flag) {
    auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? std::string("<absent>") : *(it + 1);
  };
  EXPECT_EQ(value_of("--optimizer"), "adamw");
  EXPECT_EQ(value_of("--lr"), "3e-05");
  EXPECT_EQ(value_of("--train"), "head,norm");
  EXPECT_EQ(value_of("--weight-decay"), "0");
  EXPECT_EQ(value_of("--momentum"), "<absent>");
  EXPECT_EQ(value_of("--train"), "head,norm");
  EXPECT_EQ(find_run(plan, "all-sgd-lr0.03-s3407").args[10], "all");

  s.steps = 0;
  s.epochs = 2.5;
  SweepPlan by_epochs = make_sweep_plan(SweepGrid{}, s, "out");
  const std::vector<std::string>& e = by_epochs.runs[0].args;
  EXPECT_EQ(std::count(e.begin(), e.end(), "--steps"), 0);
  EXPECT_EQ(*(std::find(e.begin(), e.end(), "--epochs") + 1), "2.5");
}

TEST(SweepPlan, EachOptimizerHasItsOwnRates) {
  SweepGrid grid;
  grid.components = {"emb"};
  grid.sgd_lrs = {0.01, 0.1, 1.0};
  grid.adamw_lrs = {2e-4};
  SweepPlan plan = make_sweep_plan(grid, settings(), "d");
  std::vector<std::string> ids;
  for (const SweepRun& run : plan.runs) {
    if (run.seed == 0) ids.push_back(run.id);
    const std::string lr = run.args[size_t(std::find(run.args.begin(), run.args.end(), "--lr") - run.args.begin()) + 1];
    EXPECT_EQ(std::stod(lr), run.lr) << run.id;
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"emb-sgd-lr0.01-s0", "emb-sgd-lr0.1-s0", "emb-sgd-lr1-s0",
                                           "emb-adamw-lr0.0002-s0"}));
  EXPECT_EQ(plan.runs[0].args[10], "emb,norm");
  // An optimizer that is not in the sweep needs no rates.
  grid.optimizers = {"sgd"};
  grid.adamw_lrs = {};
  EXPECT_EQ(make_sweep_plan(grid, settings(), "d").runs.size(), 9u);
  EXPECT_EQ(number_text(3 * 0.1), "0.30000000000000004");
  EXPECT_EQ(number_text(0.1), "0.1");
  EXPECT_EQ(run_id("fc2", "sgd", 0.003, 7), "fc2-sgd-lr0.003-s7");
}

TEST(SweepPlan, AnExtensionAddsOneRateForOneComponentAndOptimizer) {
  SweepGrid grid;
  grid.components = {"ln1", "mha"};
  SweepPlan plan = make_sweep_plan(grid, settings(), "d");
  const size_t before = plan.runs.size();
  extend_sweep_plan(plan, {"ln1", "adamw", 9e-4});
  ASSERT_EQ(plan.runs.size(), before + 3);
  for (size_t i = before; i < plan.runs.size(); ++i) {
    EXPECT_EQ(plan.runs[i].component, "ln1");
    EXPECT_EQ(plan.runs[i].optimizer, "adamw");
    EXPECT_EQ(plan.runs[i].lr, 9e-4);
  }
  EXPECT_EQ(plan.runs[before].id, "ln1-adamw-lr0.0009-s0");
  EXPECT_EQ(plan.runs[before].results, "d/runs/ln1-adamw-lr0.0009-s0.json");
  EXPECT_EQ(plan.extensions, (std::vector<SweepExtension>{{"ln1", "adamw", 9e-4}}));
  EXPECT_EQ(plan.grid.adamw_lrs, SweepGrid{}.adamw_lrs);  // the other components keep their grid
  EXPECT_THROW(extend_sweep_plan(plan, {"ln1", "adamw", 9e-4}), Error);   // has it already
  EXPECT_THROW(extend_sweep_plan(plan, {"mha", "sgd", 0.01}), Error);     // in the grid
  EXPECT_THROW(extend_sweep_plan(plan, {"fc1", "sgd", 0.09}), Error);     // not a component of the sweep
  EXPECT_THROW(extend_sweep_plan(plan, {"mha", "sgd", -0.09}), Error);
  EXPECT_EQ(plan.runs.size(), before + 3);
}

TEST(SweepPlan, RefusesBadGridsAndSettings) {
  auto plan_with = [](auto change_grid, auto change_settings) {
    SweepGrid grid;
    SweepSettings s = settings();
    change_grid(grid);
    change_settings(s);
    return make_sweep_plan(grid, s, "d");
  };
  auto same_grid = [](SweepGrid&) {};
  auto same_settings = [](SweepSettings&) {};
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.components = {"mha", "attn"}; }, same_settings), Error);
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.optimizers = {"lion"}; }, same_settings), Error);
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.sgd_lrs = {0.1, 0.1}; }, same_settings), Error);
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.sgd_lrs = {-0.1}; }, same_settings), Error);
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.adamw_lrs = {}; }, same_settings), Error);
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.adamw_lrs = {0}; }, same_settings), Error);
  EXPECT_THROW(plan_with([](SweepGrid& g) { g.seeds = {}; }, same_settings), Error);
  EXPECT_THROW(plan_with(same_grid, [](SweepSettings& s) { s.eval_data = ""; }), Error);
  EXPECT_THROW(plan_with(same_grid, [](SweepSettings& s) { s.extra_args = {"--lr", "0.1"}; }), Error);
  EXPECT_THROW(plan_with(same_grid, [](SweepSettings& s) { s.extra_args = {"--seed=3"}; }), Error);
  EXPECT_THROW(plan_with(same_grid, [](SweepSettings& s) { s.threads_per_run = 0; }), Error);
  EXPECT_NO_THROW(plan_with(same_grid, [](SweepSettings& s) { s.extra_args = {"--flip"}; }));
}

TEST(SweepPlan, PlanFileReadsBackEqual) {
  SweepSettings s = settings();
  s.extra_args = {"--flip"};
  SweepGrid grid;
  grid.components = {"fc1", "head"};
  SweepPlan plan = make_sweep_plan(grid, s, "some/dir");
  extend_sweep_plan(plan, {"head", "sgd", 0.09});
  const std::string path = ::testing::TempDir() + "/sweep_plan_roundtrip.json";
  save_sweep_plan(plan, path);
  SweepPlan back = load_sweep_plan(path);
  EXPECT_EQ(back.dir, "some/dir");
  EXPECT_EQ(back.grid.components, grid.components);
  EXPECT_EQ(back.grid.sgd_lrs, grid.sgd_lrs);
  EXPECT_EQ(back.grid.adamw_lrs, grid.adamw_lrs);
  EXPECT_EQ(back.extensions, plan.extensions);
  EXPECT_EQ(back.grid.seeds, grid.seeds);
  EXPECT_EQ(back.settings.extra_args, s.extra_args);
  EXPECT_EQ(back.settings.steps, 300);
  ASSERT_EQ(back.runs.size(), plan.runs.size());
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    EXPECT_EQ(back.runs[i].id, plan.runs[i].id);
    EXPECT_EQ(back.runs[i].lr, plan.runs[i].lr);
    EXPECT_EQ(back.runs[i].seed, plan.runs[i].seed);
    EXPECT_EQ(back.runs[i].args, plan.runs[i].args);
    EXPECT_EQ(back.runs[i].results, plan.runs[i].results);
  }
  nlohmann::json broken = sweep_plan_json(plan);
  broken["runs"][3].erase("seed");
  try {
    sweep_plan_from_json(broken, "plan.json");
    FAIL() << "a run without a seed was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs[3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("seed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sweep_plan_from_json(nlohmann::json{{"runs", 1}}, "plan.json"), Error);
  nlohmann::json future = sweep_plan_json(plan);
  future["version"] = 3;
  EXPECT_THROW(sweep_plan_from_json(future, "plan.json"), Error);
}

// The plans of earlier versions had one list of rates, AdamW at a factor of each, and
// the same run ids: read, they are the same plan as one with the two lists.
TEST(SweepPlan, AVersionOnePlanReadsAsTheSamePlan) {
  SweepGrid grid;
  grid.components = {"mha"};
  grid.sgd_lrs = {0.003, 0.03};
  grid.adamw_lrs = {3e-5, 3e-4};
  const SweepPlan plan = make_sweep_plan(grid, settings(), "d");
  nlohmann::json v1 = sweep_plan_json(plan);
  v1["version"] = 1;
  v1["grid"].erase("sgd_lrs");
  v1["grid"].erase("adamw_lrs");
  v1["grid"]["lrs"] = {0.003, 0.03};
  v1["grid"]["adamw_lr_factor"] = 0.01;
  v1.erase("extensions");
  for (auto& run : v1["runs"]) run["grid_lr"] = run["optimizer"] == "sgd" ? run["lr"].get<double>() : 0.0;
  const SweepPlan back = sweep_plan_from_json(v1, "old/plan.json");
  EXPECT_EQ(sweep_plan_json(back), sweep_plan_json(plan));
  EXPECT_THROW(load_sweep_plan(::testing::TempDir() + "/no_such_plan.json"), Error);
}

TEST(SweepPlan, ShardsCoverEveryRunExactlyOnce) {
  for (size_t count : {0u, 1u, 5u, 168u}) {
    for (int shards = 1; shards <= 9; ++shards) {
      std::vector<int> seen(count, 0);
      for (int shard = 0; shard < shards; ++shard) {
        for (size_t index : shard_run_indices(count, shard, shards)) {
          ASSERT_LT(index, count);
          EXPECT_EQ(int(index % size_t(shards)), shard);
          ++seen[index];
        }
      }
      for (size_t i = 0; i < count; ++i) EXPECT_EQ(seen[i], 1) << "run " << i << " of " << count << ", n " << shards;
    }
  }
  EXPECT_EQ(parse_shard("3/8"), std::make_pair(3, 8));
  EXPECT_EQ(parse_shard("0/1"), std::make_pair(0, 1));
  for (const char* bad : {"8/8", "-1/4", "1/0", "1", "1/2x", "a/b"}) EXPECT_THROW(parse_shard(bad), Error) << bad;
}

TEST(SweepPlan, ARunWithAResultsFileIsFinished) {
  const std::string dir = ::testing::TempDir() + "/sweep_skip";
  std::filesystem::remove_all(dir);
  SweepPlan plan = make_sweep_plan(SweepGrid{}, settings(), dir);
  std::filesystem::create_directories(dir + "/runs");
  EXPECT_FALSE(run_finished(plan.runs[5]));
  std::ofstream(plan.runs[5].results) << "{}";
  EXPECT_TRUE(run_finished(plan.runs[5]));
  EXPECT_FALSE(run_finished(plan.runs[6]));
  std::ofstream(plan.runs[6].log) << "{}";  // a log alone (a run that stopped) is not finished
  EXPECT_FALSE(run_finished(plan.runs[6]));
}

}  // namespace
}  // namespace vitune::peft
