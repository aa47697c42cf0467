// The sweep report on fake finished runs written here: means, sample stds, best
// learning rates, spreads and Welch tests against numbers worked out by hand below;
// missing runs; mean curves over the steps every seed logged; the norms picked for
// "all" and "head"; a best at the grid's edge said loudly, with the rates that extend
// it, and a best inside the grid not; gains over a linear probe; the markdown tables;
// and clear errors for broken files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "peft/sweep_report.h"

namespace vitune::peft {
namespace {

using nlohmann::json;

// Accuracies by component, learning rate (0.01, 0.1) and seed (0, 1, 2); NAN: not run.
const std::map<std::string, std::vector<std::vector<double>>> kAccuracy{
    {"ln1", {{0.60, 0.62, 0.64}, {0.66, 0.66, 0.69}}},
    {"mha", {{0.80, 0.82, 0.84}, {0.70, 0.74, NAN}}},
    {"ln2", {{0.70, 0.70, 0.70}, {0.50, 0.55, 0.60}}},
};

void write_log(const std::string& path, const std::string& component, uint64_t seed, int steps) {
  std::ofstream log(path);
  for (int step = 1; step <= steps; ++step) {
    // loss 1/step + 0.1 seed; total norm 2 + seed; the component's norm 1 + 0.5 seed.
    json per_component{{"norm", 0.01}, {"head", 5.0}};
    per_component[component] = 1 + 0.5 * double(seed);
    log << json{{"step", step},
                {"loss", 1.0 / step + 0.1 * double(seed)},
                {"accuracy", 0.5},
                {"lr", 0.01},
                {"grad_norm", {{"total", 2.0 + double(seed)}, {"per_component", per_component}}}}
               .dump()
        << "\n";
  }
  log << json{{"step", steps}, {"eval_top1", 0.5}}.dump() << "\n";
}

SweepPlan fake_sweep(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/runs");
  SweepGrid grid;
  grid.components = {"ln1", "mha", "ln2"};
  grid.optimizers = {"sgd"};
  grid.sgd_lrs = {0.01, 0.1};
  grid.seeds = {0, 1, 2};
  SweepSettings settings;
  settings.model = "m";
  settings.data = "d";
  settings.eval_data = "e";
  SweepPlan plan = make_sweep_plan(grid, settings, dir);
  for (const SweepRun& run : plan.runs) {
    const double accuracy = kAccuracy.at(run.component)[run.lr == 0.01 ? 0 : 1][run.seed];
    if (std::isnan(accuracy)) continue;
    std::ofstream(run.results) << json{{"eval", {{"top1", accuracy}, {"top5", 1.0}}}}.dump();
    // Seed 2 logged one step less: the mean curve keeps the steps all seeds have.
    write_log(run.log, run.component, run.seed, run.seed == 2 ? 2 : 3);
  }
  return plan;
}

const ComponentSummary& summary_of(const SweepReport& report, const std::string& component) {
  for (const ComponentSummary& s : report.summaries) {
    if (s.component == component) return s;
  }
  throw Error("no summary of " + component);
}

TEST(SweepReport, StatisticsMatchHandComputedValues) {
  SweepReport report = build_sweep_report(fake_sweep("report_stats"));
  EXPECT_EQ(report.planned, 18u);
  EXPECT_EQ(report.finished, 17u);
  EXPECT_EQ(report.missing, std::vector<std::string>{"mha-sgd-lr0.1-s2"});

  const ComponentSummary& mha = summary_of(report, "mha");
  // lr 0.01: {0.80, 0.82, 0.84}: mean 0.82, std sqrt((0.02^2 + 0 + 0.02^2) / 2) = 0.02.
  // lr 0.1: {0.70, 0.74}: mean 0.72, std sqrt(2 * 0.02^2 / 1) = 0.028284...
  EXPECT_NEAR(mean(mha.cells[0].accuracies), 0.82, 1e-12);
  EXPECT_NEAR(sample_std(mha.cells[0].accuracies), 0.02, 1e-12);
  EXPECT_NEAR(mean(mha.cells[1].accuracies), 0.72, 1e-12);
  EXPECT_NEAR(sample_std(mha.cells[1].accuracies), std::sqrt(0.0008), 1e-12);
  EXPECT_EQ(mha.cells[1].seeds, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(mha.best, 0);
  EXPECT_NEAR(mha.spread, 0.10, 1e-12);

  const ComponentSummary& ln1 = summary_of(report, "ln1");  // means 0.62 and 0.67
  EXPECT_EQ(ln1.best, 1);
  EXPECT_NEAR(ln1.spread, 0.05, 1e-12);
  const ComponentSummary& ln2 = summary_of(report, "ln2");  // means 0.70 and 0.55
  EXPECT_EQ(ln2.best, 0);
  EXPECT_NEAR(ln2.spread, 0.15, 1e-12);

  // mha at 0.01 against ln1 at 0.1 ({0.66, 0.66, 0.69}: mean 0.67, variance 0.0003):
  // squared standard errors 0.0004/3 and 0.0003/3, t = 0.15 / sqrt(0.0007/3),
  // df = (0.0007/3)^2 / ((0.0004/3)^2/2 + (0.0003/3)^2/2) = 0.49 / 0.125 = 3.92.
  ASSERT_TRUE(mha.vs_ln1.has_value());
  EXPECT_NEAR(mha.vs_ln1->t, 0.15 / std::sqrt(0.0007 / 3), 1e-9);
  EXPECT_NEAR(mha.vs_ln1->df, 3.92, 1e-9);
  EXPECT_NEAR(mha.vs_ln1->p, student_t_two_sided_p(mha.vs_ln1->t, 3.92), 1e-9);
  // mha against ln2 at 0.01 ({0.7, 0.7, 0.7}: no variance): t = 0.12 / sqrt(0.0004/3),
  // df = 2 (all the variance is mha's), and for df = 2 the two-sided p is 1 - t/sqrt(2 + t^2).
  ASSERT_TRUE(mha.vs_ln2.has_value());
  const double t = 0.12 / std::sqrt(0.0004 / 3);
  EXPECT_NEAR(mha.vs_ln2->t, t, 1e-9);
  EXPECT_NEAR(mha.vs_ln2->df, 2.0, 1e-9);
  EXPECT_NEAR(mha.vs_ln2->p, 1 - t / std::sqrt(2 + t * t), 1e-9);
  // ln1 against ln2: t = (0.67 - 0.70) / sqrt(0.0003/3) = -3, df = 2.
  ASSERT_TRUE(ln1.vs_ln2.has_value());
  EXPECT_NEAR(ln1.vs_ln2->t, -3.0, 1e-9);
  EXPECT_NEAR(ln1.vs_ln2->p, 1 - 3 / std::sqrt(11.0), 1e-9);
  EXPECT_FALSE(ln1.vs_ln1.has_value());
  EXPECT_FALSE(ln2.vs_ln2.has_value());

  json j = sweep_report_json(report);
  EXPECT_EQ(j["runs_finished"], 17);
  EXPECT_EQ(j["summaries"][1]["component"], "mha");
  EXPECT_DOUBLE_EQ(j["summaries"][1]["best_lr"].get<double>(), 0.01);
  EXPECT_TRUE(j["summaries"][0]["welch_vs_ln1"].is_null());
  EXPECT_NEAR(j["summaries"][1]["welch_vs_ln1"]["df"].get<double>(), 3.92, 1e-9);
}

TEST(SweepReport, CurvesAreSeedMeansOverCommonSteps) {
  SweepReport report = build_sweep_report(fake_sweep("report_curves"));
  const TrainingCurves& curves = summary_of(report, "mha").curves;
  // Seeds 0, 1, 2 at lr 0.01; seed 2 stopped logging after step 2.
  ASSERT_EQ(curves.steps, (std::vector<int64_t>{1, 2}));
  for (size_t i = 0; i < 2; ++i) {
    const double step = double(i + 1);
    EXPECT_NEAR(curves.loss[i], 1 / step + 0.1, 1e-12);  // mean of 1/step + 0.1 * {0, 1, 2}
    EXPECT_NEAR(curves.grad_norm_total[i], 3.0, 1e-12);
    EXPECT_NEAR(curves.grad_norm_component[i], 1.5, 1e-12);
  }
}

TEST(SweepReport, ComponentNormOfAllIsTheTotalAndOfHeadTheHead) {
  const std::string path = ::testing::TempDir() + "/report_norms.jsonl";
  write_log(path, "head", 1, 2);  // head 1.5 overrides the default 5.0
  TrainingCurves head = read_training_curves(path, "head");
  EXPECT_EQ(head.grad_norm_component, (std::vector<double>{1.5, 1.5}));
  TrainingCurves all = read_training_curves(path, "all");
  EXPECT_EQ(all.grad_norm_component, (std::vector<double>{3.0, 3.0}));
  EXPECT_THROW(read_training_curves(path, "fc1"), Error);  // not trained, so not logged
}

TEST(SweepReport, MarkdownHasTheTables) {
  std::string md = sweep_report_markdown(build_sweep_report(fake_sweep("report_md")));
  EXPECT_NE(md.find("17 of 18 runs finished"), std::string::npos);
  EXPECT_NE(md.find("| component | lr 0.01 | lr 0.1 | best lr | best | spread | Welch vs ln1 | Welch vs ln2 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| mha | 82.00 ± 2.00 (3) | 72.00 ± 2.83 (2) | 0.01 ⚠ lower edge | 82.00 | 10.00 | t = 9.82, df = 3.9"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| ln2 | 70.00 ± 0.00 (3) |"), std::string::npos) << md;
}

// A sweep of one optimizer whose runs all finished, with these mean accuracies per
// component at each rate (every seed the same accuracy).
SweepPlan finished_sweep(const std::string& name, const std::map<std::string, std::vector<double>>& accuracy,
                         const std::vector<double>& lrs) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/runs");
  SweepGrid grid;
  grid.components.clear();
  for (const auto& entry : accuracy) grid.components.push_back(entry.first);
  grid.optimizers = {"adamw"};
  grid.adamw_lrs = lrs;
  grid.seeds = {0, 1};
  SweepSettings settings;
  settings.model = "m";
  settings.data = "d";
  settings.eval_data = "e";
  SweepPlan plan = make_sweep_plan(grid, settings, dir);
  for (const SweepRun& run : plan.runs) {
    const size_t i = size_t(std::find(lrs.begin(), lrs.end(), run.lr) - lrs.begin());
    std::ofstream(run.results) << json{{"eval", {{"top1", accuracy.at(run.component)[i]}}}}.dump();
    write_log(run.log, run.component, run.seed, 2);
  }
  return plan;
}

TEST(SweepReport, TheEdgesAreThoseOfTheAscendingRates) {
  // Rates given out of order, accuracies in the same order: ascending, fc1 reads
  // 0.5, 0.8, 0.7, 0.6 (best inside) and ln1 0.3, 0.4, 0.5, 0.6 (best at the upper edge).
  const SweepReport report = build_sweep_report(
      finished_sweep("report_order", {{"fc1", {0.6, 0.5, 0.8, 0.7}}, {"ln1", {0.6, 0.3, 0.4, 0.5}}},
                     {3e-4, 1e-5, 3e-5, 1e-4}));
  const ComponentSummary& fc1 = summary_of(report, "fc1");
  ASSERT_EQ(fc1.cells.size(), 4u);
  EXPECT_EQ(fc1.cells[0].lr, 1e-5);
  EXPECT_EQ(fc1.cells[3].lr, 3e-4);
  EXPECT_EQ(fc1.position, BestPosition::Inside);
  EXPECT_EQ(fc1.cells[size_t(fc1.best)].lr, 3e-5);
  EXPECT_EQ(summary_of(report, "ln1").position, BestPosition::UpperEdge);
  EXPECT_EQ(summary_of(report, "ln1").extend_with, std::vector<double>{9e-4});
}

TEST(SweepReport, ExtensionAddsExactlyTheRatesBeyondTheEdge) {
  // Accuracies listed in ascending order of the rates.
  const std::vector<double> lrs{1e-5, 3e-5, 1e-4, 3e-4};
  SweepPlan plan = finished_sweep("report_extend",
                                  {{"fc1", {0.5, 0.8, 0.7, 0.6}},
                                   {"ln1", {0.3, 0.4, 0.5, 0.6}},
                                   {"mha", {0.9, 0.8, 0.7, 0.6}}},
                                  lrs);
  SweepReport report = build_sweep_report(plan);
  EXPECT_EQ(summary_of(report, "fc1").position, BestPosition::Inside);
  EXPECT_TRUE(summary_of(report, "fc1").extend_with.empty());
  EXPECT_EQ(summary_of(report, "ln1").position, BestPosition::UpperEdge);
  EXPECT_EQ(summary_of(report, "ln1").extend_with, std::vector<double>{9e-4});
  EXPECT_EQ(summary_of(report, "mha").position, BestPosition::LowerEdge);
  EXPECT_EQ(summary_of(report, "mha").extend_with, std::vector<double>{3.33e-6});
  const std::vector<SweepExtension> extensions = sweep_extensions(report);
  EXPECT_EQ(extensions, (std::vector<SweepExtension>{{"ln1", "adamw", 9e-4}, {"mha", "adamw", 3.33e-6}}));

  const json j = sweep_report_json(report);
  EXPECT_EQ(j["summaries"][0]["best_position"], "inside");
  EXPECT_EQ(j["summaries"][0]["best_inside_grid"], true);
  EXPECT_EQ(j["summaries"][1]["best_position"], "upper edge");
  EXPECT_EQ(j["summaries"][1]["best_inside_grid"], false);
  ASSERT_EQ(j["best_not_bracketed"].size(), 2u);
  EXPECT_EQ(j["best_not_bracketed"][0]["component"], "ln1");
  EXPECT_DOUBLE_EQ(j["best_not_bracketed"][0]["best_lr"].get<double>(), 3e-4);
  EXPECT_EQ(j["best_not_bracketed"][1]["extend_with"], json::array({3.33e-6}));
  const std::string md = sweep_report_markdown(report);
  EXPECT_NE(md.find("ln1 with adamw: best at the grid's upper edge: 0.0003 — extend the grid (adds 0.0009)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("mha with adamw: best at the grid's lower edge: 1e-05 — extend the grid (adds 3.33e-06)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 0.0003 ⚠ upper edge | 60.00 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3e-05 | 80.00 |"), std::string::npos) << md;  // fc1: no marker
  EXPECT_EQ(md.find("fc1 with adamw"), std::string::npos) << md;

  // Extended, the new rates are planned but not run: nothing more to extend, and the
  // old edge is now inside but next to rates without results, which the report says.
  for (const SweepExtension& e : extensions) extend_sweep_plan(plan, e);
  report = build_sweep_report(plan);
  EXPECT_TRUE(sweep_extensions(report).empty());
  EXPECT_EQ(summary_of(report, "ln1").position, BestPosition::UnfinishedNeighbour);
  EXPECT_EQ(report.missing.size(), 4u);
  EXPECT_NE(sweep_report_markdown(report).find("ln1 with adamw: best 0.0003 has a neighbouring rate without"),
            std::string::npos);
  // The new runs finish below the old edge's accuracy: the optimum is bracketed.
  for (const SweepRun& run : plan.runs) {
    if (!run_finished(run)) std::ofstream(run.results) << json{{"eval", {{"top1", 0.55}}}}.dump();
  }
  report = build_sweep_report(plan);
  EXPECT_EQ(summary_of(report, "ln1").position, BestPosition::Inside);
  EXPECT_EQ(summary_of(report, "ln1").cells.size(), 5u);
  EXPECT_EQ(summary_of(report, "fc1").cells.size(), 4u);
  EXPECT_EQ(summary_of(report, "mha").position, BestPosition::Inside);
  EXPECT_TRUE(sweep_report_json(report)["best_not_bracketed"].empty());
}

TEST(SweepReport, AOneRateGridIsExtendedBothWays) {
  const SweepReport report = build_sweep_report(finished_sweep("report_one_rate", {{"mha", {0.7}}}, {0.001}));
  EXPECT_EQ(summary_of(report, "mha").position, BestPosition::OnlyRate);
  EXPECT_EQ(summary_of(report, "mha").extend_with, (std::vector<double>{0.000333, 0.003}));
}

TEST(SweepReport, GainsOverTheLinearProbe) {
  const SweepPlan plan =
      finished_sweep("report_probe", {{"fc1", {0.5, 0.8, 0.7}}, {"ln1", {0.3, 0.4, 0.5}}}, {1e-5, 3e-5, 1e-4});
  const std::string probe_path = ::testing::TempDir() + "/report_probe.json";
  std::ofstream(probe_path) << json{{"command", "probe"}, {"model", "m"}, {"eval_data_spec", "e"},
                                    {"eval", {{"top1", 0.4}}}}
                                   .dump();
  const ProbeBaseline probe = read_probe_baseline(probe_path, plan.settings);
  EXPECT_EQ(probe.top1, 0.4);
  const SweepReport report = build_sweep_report(plan, probe);
  const json j = sweep_report_json(report);
  EXPECT_DOUBLE_EQ(j["probe"]["top1"].get<double>(), 0.4);
  // fc1 at 3e-5: (0.8 - 0.4) / 0.4 = +100%; ln1 at 1e-5: (0.3 - 0.4) / 0.4 = -25%.
  EXPECT_NEAR(j["summaries"][0]["best_gain_over_probe"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(j["summaries"][1]["cells"][0]["gain_over_probe"].get<double>(), -0.25, 1e-12);
  const std::string md = sweep_report_markdown(report);
  EXPECT_NE(md.find("top-1 40.00%"), std::string::npos) << md;
  EXPECT_NE(md.find("| fc1 | 50.00 ± 0.00 (2), +25.0% | 80.00 ± 0.00 (2), +100.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3e-05 | 80.00 | +100.0% |"), std::string::npos) << md;
  EXPECT_TRUE(sweep_report_json(build_sweep_report(plan))["probe"].is_null());

  // A probe of another model or evaluation set, or not a probe's results, is refused.
  SweepSettings other = plan.settings;
  other.eval_data = "e2";
  try {
    read_probe_baseline(probe_path, other);
    FAIL() << "a probe on other data was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"eval_data_spec\" is 'e' but the sweep's is 'e2'"), std::string::npos)
        << e.what();
  }
  std::ofstream(probe_path) << json{{"command", "finetune"}, {"eval", {{"top1", 0.4}}}}.dump();
  EXPECT_THROW(read_probe_baseline(probe_path, plan.settings), Error);
}

TEST(SweepReport, BrokenFilesAreNamed) {
  SweepPlan plan = fake_sweep("report_broken");
  std::ofstream(plan.runs[0].results) << R"({"eval": {"top5": 1}})";
  try {
    build_sweep_report(plan);
    FAIL() << "results without top1 were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(plan.runs[0].results), std::string::npos) << e.what();
  }
  const std::string log = ::testing::TempDir() + "/report_broken.jsonl";
  std::ofstream(log) << "{\"step\": 1, \"eval_top1\": 0.5}\nnot json\n";
  try {
    read_training_curves(log, "mha");
    FAIL() << "a broken log was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(log + ":2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vitune::peft
