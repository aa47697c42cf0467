// `vitune demo` on a tiny budget: every step runs, the table holds the eight methods
// with what they promise (accuracies, the trainable counts of each method, selection
// cost for the two sparse ones, equal budgets for GD-FPS and GPS), the charts are
// written, and a failing step stops the demo naming the step and its log.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "cli_runner.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const std::string kModel = test_data_dir() + "/../../models/fmnist_c0-4_vit.safetensors";

std::string demo_flags(const std::string& out) {
  return " --out " + out +
         " --steps 2 --batch-size 8 --anchor-images 40 --plasticity-images 8"
         " --pretrain-data \"fashion-mnist:train?classes=0-4&per_class=8\""
         " --data \"fashion-mnist:train?classes=5-9&per_class=8\""
         " --eval-data \"fashion-mnist:test?classes=5-9&per_class=4\"";
}

TEST(DemoCommand, RunsEveryStepAndWritesTheTableAndCharts) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string out = ::testing::TempDir() + "/demo_smoke";
  std::filesystem::remove_all(out);
  CliResult demo = run_vitune("demo --model " + kModel + demo_flags(out));
  ASSERT_EQ(demo.status, 0) << demo.output;
  EXPECT_NE(demo.output.find("| GD-FPS sparse |"), std::string::npos) << demo.output;

  const nlohmann::json summary = read_json(out + "/demo.json");
  const nlohmann::json& rows = summary["methods"];
  ASSERT_EQ(rows.size(), 8u);
  const double probe = summary["probe_top1"];
  EXPECT_GT(probe, 0.0);
  EXPECT_LE(probe, 1.0);
  std::map<std::string, nlohmann::json> by_id;
  for (const nlohmann::json& row : rows) {
    const double top1 = row["top1"];
    EXPECT_GE(top1, 0.0);
    EXPECT_LE(top1, 1.0);
    EXPECT_GT(row["step_seconds"].get<double>(), 0.0);
    EXPECT_GT(row["peak_bytes"].get<double>(), 0.0);
    EXPECT_NEAR(row["gain_over_probe"].get<double>(), (top1 - probe) / probe, 1e-12);
    by_id[row["method"]] = row;
  }
  EXPECT_EQ(by_id["linear_probe"]["trainable_parameters"], 645);  // head: 5 x 128 + 5
  EXPECT_EQ(by_id["full"]["trainable_parameters"], 802693);
  EXPECT_EQ(by_id["gdfps"]["trainable_parameters"], by_id["gps"]["trainable_parameters"]);
  EXPECT_LT(by_id["gdfps"]["trainable_parameters"].get<double>(), 0.05 * 802693);
  for (const char* id : {"gdfps", "gps"}) {
    EXPECT_GT(by_id[id]["selection_seconds"].get<double>(), 0.0) << id;
    EXPECT_GT(by_id[id]["selection_peak_bytes"].get<double>(), 0.0) << id;
  }
  for (const char* file : {"demo.md", "plasticity.json", "plasticity.svg", "probe.json", "accuracy.svg", "loss.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + file)) << file;
  }
  for (const char* file : {"demo.md", "demo.json", "accuracy.svg", "loss.svg"}) {
    EXPECT_NE(demo.output.find("wrote report " + out + "/" + file + "\n"), std::string::npos) << demo.output;
  }

  // Its folder now holds a finished demo: a second one there is refused before any step.
  const std::string before = read_raw(out + "/demo.json");
  CliResult again = run_vitune("demo --model " + kModel + demo_flags(out));
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.output.find("--out: the folder " + out + " holds files already; pass --overwrite"),
            std::string::npos) << again.output;
  EXPECT_EQ(read_raw(out + "/demo.json"), before);
}

TEST(DemoCommand, PassesThePreprocessingFlagsToEveryStep) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  // A 16-pixel model on 28-pixel images: every step is refused without --resize-images.
  const std::string out = ::testing::TempDir() + "/demo_preprocessing";
  std::filesystem::remove_all(out);
  const std::string tiny = " --model " + data_path("tiny_vit.safetensors");
  CliResult refused = run_vitune("demo" + tiny + demo_flags(out));
  EXPECT_NE(refused.status, 0);
  CliResult demo = run_vitune("demo" + tiny + demo_flags(out) +
                              " --overwrite --resize-images --mean 0.25,0.5,0.125 --interpolation bilinear");
  ASSERT_EQ(demo.status, 0) << demo.output;
  for (const char* step : {"plasticity", "anchor", "select_gps", "full", "lora"}) {
    const std::string log = read_raw(out + "/logs/" + step + ".out");
    EXPECT_NE(log.find("--mean 0.25,0.5,0.125 --interpolation bilinear --resize-images"), std::string::npos)
        << step << ":\n" << log;
  }
  // The model's own std (0.5) applies to each of the three channels.
  const nlohmann::json used = read_json(out + "/runs/full.json")["preprocessing"];
  EXPECT_EQ(used["mean"], nlohmann::json::array({0.25, 0.5, 0.125}));
  EXPECT_EQ(used["std"], nlohmann::json::array({0.5, 0.5, 0.5}));
  std::filesystem::remove_all(out);
}

TEST(DemoCommand, AFailingStepStopsItNamingTheStepAndItsLog) {
  const std::string out = ::testing::TempDir() + "/demo_failing";
  std::filesystem::remove_all(out);
  CliResult demo = run_vitune("demo --model " + out + "/missing.safetensors" + demo_flags(out));
  EXPECT_NE(demo.status, 0);
  EXPECT_NE(demo.output.find("failed"), std::string::npos) << demo.output;
  EXPECT_NE(demo.output.find(out + "/logs/"), std::string::npos) << demo.output;
  EXPECT_FALSE(std::filesystem::exists(out + "/demo.json"));
}

}  // namespace
}  // namespace vitune::testing
