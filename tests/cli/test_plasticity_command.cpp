// `vitune plasticity` end to end on the tiny ViT and a little Fashion-MNIST (from its
// Debian package): the JSON and CSV hold every block and component with the promised
// pair counts, the bounds sit above the measurements, and bad flags are refused.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cli_files.h"
#include "cli_runner.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const std::string kData = "\"fashion-mnist:test?classes=0-2&limit=40\"";
const std::string kReference = "\"fashion-mnist:test?classes=3-5&limit=40\"";

std::string temp(const std::string& name) { return ::testing::TempDir() + "/plasticity_" + name; }

std::string base_command() {
  return "plasticity --model " + data_path("tiny_vit.safetensors") + " --data " + kData + " --loader-threads 1" +
         " --resize-images";
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(PlasticityCommand, PaperProtocolWritesJsonCsvAndChart) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  CliResult run = run_vitune(base_command() + " --protocol paper --images 12 --batch-size 6 --overwrite --out " + temp("paper.json") +
                             " --csv " +
                             temp("paper.csv") + " --svg " + temp("paper.svg"));
  ASSERT_EQ(run.status, 0) << run.output;
  std::string chart;
  for (const std::string& line : read_lines(temp("paper.svg"))) chart += line + "\n";
  EXPECT_NE(chart.find("<svg"), std::string::npos);
  EXPECT_NE(chart.find("</svg>"), std::string::npos);
  EXPECT_NE(chart.find(">mha<"), std::string::npos);  // the legend names the components
  EXPECT_NE(run.output.find("mean +- std"), std::string::npos) << run.output;
  nlohmann::json result = read_json(temp("paper.json"));
  EXPECT_EQ(result["protocol"], "paper");
  EXPECT_EQ(result["images"], 12);
  EXPECT_EQ(result["fc1_gelu"], true);
  EXPECT_TRUE(result["reference_data"].is_null());
  EXPECT_EQ(result["data"], "fashion-mnist:test?classes=0-2&limit=40");
  EXPECT_GT(result["seconds"].get<double>(), 0.0);
  const std::vector<std::string> components = {"ln1", "mha", "ln2", "fc1", "fc2", "block"};
  ASSERT_EQ(result["layers"].size(), 2 * components.size());
  for (size_t i = 0; i < result["layers"].size(); ++i) {
    const nlohmann::json& layer = result["layers"][i];
    EXPECT_EQ(layer["block"], int(i / components.size()));
    EXPECT_EQ(layer["component"], components[i % components.size()]);
    EXPECT_EQ(layer["pairs"], 2 * 15);  // two batches of 6 images
    const double mean = layer["mean"], bound = layer["bound"];
    EXPECT_GT(mean, 0.0);
    EXPECT_LE(layer["min"].get<double>(), mean);
    EXPECT_GE(layer["max"].get<double>(), mean);
    EXPECT_GE(layer["std"].get<double>(), 0.0);
    EXPECT_LE(layer["max"].get<double>(), bound) << layer.dump();
    EXPECT_NEAR(layer["ratio_to_bound"].get<double>(), mean / bound, 1e-12 * mean / bound);
  }
  ASSERT_EQ(result["components"].size(), components.size());
  for (size_t c = 0; c < components.size(); ++c) {
    const nlohmann::json& all = result["components"][c];
    EXPECT_EQ(all["component"], components[c]);
    EXPECT_EQ(all["pairs"], 60);
    const double block0 = result["layers"][c]["mean"], block1 = result["layers"][components.size() + c]["mean"];
    EXPECT_NEAR(all["mean"].get<double>(), 0.5 * (block0 + block1), 1e-12);
  }

  std::vector<std::string> csv = read_lines(temp("paper.csv"));
  ASSERT_EQ(csv.size(), 1 + 12 + 6u);
  EXPECT_EQ(csv[0], "block,component,mean,std,min,max,pairs,bound,ratio_to_bound");
  EXPECT_EQ(csv[2].substr(0, 6), "0,mha,");
  EXPECT_EQ(csv[13].substr(0, 8), "all,ln1,");
  std::istringstream fields(csv[2]);
  std::vector<std::string> cells;
  for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
  ASSERT_EQ(cells.size(), 9u);
  EXPECT_NEAR(std::stod(cells[2]), result["layers"][1]["mean"].get<double>(), 1e-8 * std::stod(cells[2]));
  EXPECT_EQ(cells[6], "30");
}

TEST(PlasticityCommand, SameSeedSameNumbersAndGeluOnlyMovesFc1) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string common = base_command() + " --protocol paper --images 8 --batch-size 8 --seed 5";
  ASSERT_EQ(run_vitune(common + " --overwrite --out " + temp("a.json")).status, 0);
  ASSERT_EQ(run_vitune(common + " --overwrite --out " + temp("b.json")).status, 0);
  ASSERT_EQ(run_vitune(common + " --fc1-no-gelu --overwrite --out " + temp("c.json")).status, 0);
  nlohmann::json a = read_json(temp("a.json")), b = read_json(temp("b.json")), c = read_json(temp("c.json"));
  EXPECT_EQ(a["layers"], b["layers"]);
  EXPECT_EQ(c["fc1_gelu"], false);
  for (size_t i = 0; i < a["layers"].size(); ++i) {
    if (a["layers"][i]["component"] == "fc1")
      EXPECT_NE(a["layers"][i]["mean"], c["layers"][i]["mean"]);
    else
      EXPECT_EQ(a["layers"][i]["mean"], c["layers"][i]["mean"]);
  }
}

TEST(PlasticityCommand, ReferenceProtocolPairsTheTwoDatasets) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  // The reference protocol is the default.
  CliResult run = run_vitune(base_command() + " --reference-data " + kReference + " --images 10 --batch-size 4 --overwrite --out " + temp("reference.json"));
  ASSERT_EQ(run.status, 0) << run.output;
  nlohmann::json result = read_json(temp("reference.json"));
  EXPECT_EQ(result["protocol"], "reference");
  EXPECT_EQ(result["reference_data"], "fashion-mnist:test?classes=3-5&limit=40");
  EXPECT_EQ(result["fc1_gelu"], false);
  ASSERT_EQ(result["layers"].size(), 2 * 5u);  // no block component
  for (const nlohmann::json& layer : result["layers"]) {
    EXPECT_EQ(layer["pairs"], 10);
    EXPECT_LE(layer["max"].get<double>(), layer["bound"].get<double>());
  }
}

TEST(PlasticityCommand, RefusesInconsistentFlags) {
  CliResult no_reference = run_vitune(base_command() + " --overwrite --out " + temp("x.json"));
  EXPECT_NE(no_reference.status, 0);
  EXPECT_NE(no_reference.output.find("pass --reference-data, or --protocol paper"), std::string::npos)
      << no_reference.output;
  CliResult bad_protocol = run_vitune(base_command() + " --protocol papers --overwrite --out " + temp("x.json"));
  EXPECT_NE(bad_protocol.status, 0);
  EXPECT_NE(bad_protocol.output.find("papers"), std::string::npos) << bad_protocol.output;
  CliResult single = run_vitune(base_command() + " --protocol paper --batch-size 1 --overwrite --out " + temp("x.json"));
  EXPECT_NE(single.status, 0);
  EXPECT_NE(single.output.find("--batch-size"), std::string::npos) << single.output;
  EXPECT_FALSE(std::ifstream(temp("x.json")).good());
}

}  // namespace
}  // namespace vitune::testing
