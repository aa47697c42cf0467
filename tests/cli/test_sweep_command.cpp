// `vitune sweep` end to end on the tiny golden ViT and a tiny IDX dataset: plan a
// two-run grid, run it in two shards (each shard runs only its own run, and a second
// pass skips finished runs), report it (its one-rate grid cannot bracket a best, and
// says so), extend it and run only the new runs; a failing run is reported, the shard
// goes on and exits non-zero; a different plan into the same folder and unknown flags
// are refused.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_files.h"
#include "cli_runner.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

// A tiny IDX dataset (the MNIST file format): 48 grey 12x12 images of 3 classes, each
// class a brighter band at its own rows, so that a few steps learn something.
std::string write_tiny_idx(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const int count = 48, side = 12;
  auto big_endian = [](std::ofstream& out, uint32_t v) {
    const char bytes[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    out.write(bytes, 4);
  };
  std::ofstream images(dir + "/train-images-idx3-ubyte", std::ios::binary);
  std::ofstream labels(dir + "/train-labels-idx1-ubyte", std::ios::binary);
  big_endian(images, 0x803);
  big_endian(images, count);
  big_endian(images, side);
  big_endian(images, side);
  big_endian(labels, 0x801);
  big_endian(labels, count);
  for (int i = 0; i < count; ++i) {
    const int label = i % 3;
    labels.put(char(label));
    for (int p = 0; p < side * side; ++p) {
      const bool band = p / side / 4 == label;
      images.put(char((band ? 200 : 30) + (p * 7 + i * 13) % 40));
    }
  }
  return "idx:" + dir + "/train";
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/sweep_cmd_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::string plan_command(const std::string& dir, const std::string& model) {
  const std::string data = write_tiny_idx(dir + "_data");
  return "sweep plan --model " + model + " --data " + data + " --eval-data \"" + data + "?limit=32\"" +
         " --components mha,head --optimizers sgd --sgd-lrs 0.01 --seeds 0 --steps 3 --warmup-steps 1 --batch-size 16"
         " --log-every 1 --out " + dir + " --loader-threads 1 --eval-batch-size 32 --resize-images";
}

TEST(SweepCommand, PlanRunInShardsAndReport) {
  const std::string dir = fresh_dir("ok");
  CliResult plan = run_vitune(plan_command(dir, data_path("tiny_vit.safetensors")));
  ASSERT_EQ(plan.status, 0) << plan.output;
  nlohmann::json plan_json = read_json(dir + "/plan.json");
  ASSERT_EQ(plan_json["runs"].size(), 2u);
  EXPECT_EQ(plan_json["runs"][0]["id"], "mha-sgd-lr0.01-s0");
  EXPECT_EQ(plan_json["runs"][1]["id"], "head-sgd-lr0.01-s0");
  // The same plan again is fine: nothing changes.
  EXPECT_EQ(run_vitune(plan_command(dir, data_path("tiny_vit.safetensors"))).status, 0);

  CliResult second = run_vitune("sweep run --plan " + dir + "/plan.json --shard 1/2");
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/runs/mha-sgd-lr0.01-s0.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/runs/head-sgd-lr0.01-s0.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/runs/head-sgd-lr0.01-s0.out"));

  CliResult all = run_vitune("sweep run --plan " + dir + "/plan.json --shard 0/1");
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_NE(all.output.find("head-sgd-lr0.01-s0: finished earlier, skipped"), std::string::npos) << all.output;
  EXPECT_NE(all.output.find("1 ran, 1 skipped, 0 failed"), std::string::npos) << all.output;
  nlohmann::json results = read_json(dir + "/runs/mha-sgd-lr0.01-s0.json");
  EXPECT_EQ(results["steps"], 3);
  EXPECT_EQ(results["optimizer"], "sgd");
  EXPECT_EQ(results["trained_components"], "mha,norm,head");

  CliResult report = run_vitune("sweep report --plan " + dir + "/plan.json");
  ASSERT_EQ(report.status, 0) << report.output;
  nlohmann::json r = read_json(dir + "/report/report.json");
  EXPECT_EQ(r["runs_finished"], 2);
  ASSERT_EQ(r["summaries"].size(), 2u);
  EXPECT_EQ(r["summaries"][0]["component"], "mha");
  EXPECT_DOUBLE_EQ(r["summaries"][0]["cells"][0]["mean"].get<double>(), results["eval"]["top1"].get<double>());
  EXPECT_EQ(r["summaries"][0]["curves"]["steps"], (nlohmann::json{1, 2, 3}));
  for (const char* chart : {"accuracy_vs_lr_sgd.svg", "grad_norm_sgd.svg", "grad_norm_total_sgd.svg", "loss_sgd.svg"}) {
    std::ifstream in(dir + "/report/" + chart);
    const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(svg.find(">mha</text>"), std::string::npos) << chart;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << chart;
  }
  EXPECT_EQ(r["summaries"][0]["best_position"], "only rate");
  EXPECT_EQ(r["best_not_bracketed"].size(), 2u);
  EXPECT_NE(report.output.find("WARNING mha with sgd: the grid has one learning rate, 0.01 — extend the grid (adds "
                               "0.00333 and 0.03)"),
            std::string::npos)
      << report.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/report/report.md"));

  // Extended both ways for each component: four new runs, and only they run.
  CliResult extend = run_vitune("sweep extend --plan " + dir + "/plan.json");
  ASSERT_EQ(extend.status, 0) << extend.output;
  EXPECT_NE(extend.output.find("head with sgd: added learning rate 0.03 (1 runs)"), std::string::npos) << extend.output;
  plan_json = read_json(dir + "/plan.json");
  ASSERT_EQ(plan_json["runs"].size(), 6u);
  EXPECT_EQ(plan_json["runs"][2]["id"], "mha-sgd-lr0.00333-s0");
  EXPECT_EQ(plan_json["extensions"].size(), 4u);
  // Planning again with the first flags keeps the extensions.
  EXPECT_EQ(run_vitune(plan_command(dir, data_path("tiny_vit.safetensors"))).status, 0);
  EXPECT_EQ(read_json(dir + "/plan.json"), plan_json);
  CliResult rerun = run_vitune("sweep run --plan " + dir + "/plan.json");
  ASSERT_EQ(rerun.status, 0) << rerun.output;
  EXPECT_NE(rerun.output.find("4 ran, 2 skipped, 0 failed"), std::string::npos) << rerun.output;
  // Three steps learn the same at every rate: the first of the tied bests, now at the
  // new lower edge, is extended again.
  CliResult again = run_vitune("sweep extend --plan " + dir + "/plan.json");
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("mha with sgd: added learning rate 0.00111"), std::string::npos) << again.output;

  // The linear probe on the sweep's model and data, and the report's gains over it.
  const std::string model = data_path("tiny_vit.safetensors");
  const std::string data = plan_json["settings"]["data"], eval_data = plan_json["settings"]["eval_data"];
  CliResult probe = run_vitune("probe --model " + model + " --data " + data + " --eval-data \"" + eval_data +
                               "\" --loader-threads 1 --resize-images --results " + dir + "/probe.json");
  ASSERT_EQ(probe.status, 0) << probe.output;
  nlohmann::json p = read_json(dir + "/probe.json");
  EXPECT_EQ(p["fit"]["examples"], 48);
  EXPECT_EQ(p["fit"]["feature_dim"], 32);
  EXPECT_EQ(p["fit"]["classes"], 3);
  EXPECT_LE(p["fit"]["gradient_max"].get<double>(), 1e-7);
  EXPECT_EQ(p["eval"]["examples"], 32);
  const double probe_top1 = p["eval"]["top1"];
  EXPECT_GT(probe_top1, 0.5);  // the classes' bands are linearly separable features even for a random ViT
  CliResult gains = run_vitune("sweep report --overwrite --plan " + dir + "/plan.json --probe " + dir + "/probe.json");
  ASSERT_EQ(gains.status, 0) << gains.output;
  r = read_json(dir + "/report/report.json");
  EXPECT_DOUBLE_EQ(r["probe"]["top1"].get<double>(), probe_top1);
  const nlohmann::json& cell = r["summaries"][0]["cells"][2];
  ASSERT_EQ(cell["lr"], 0.01);
  EXPECT_NEAR(cell["gain_over_probe"].get<double>(), (cell["mean"].get<double>() - probe_top1) / probe_top1, 1e-12);
  EXPECT_TRUE(r["summaries"][0]["cells"][0]["gain_over_probe"].is_null());  // 0.00111: not run
  // A finetune's results are not a probe's.
  const std::string finetune_results = dir + "/runs/mha-sgd-lr0.01-s0.json";
  CliResult wrong = run_vitune("sweep report --overwrite --plan " + dir + "/plan.json --probe " + finetune_results);
  EXPECT_NE(wrong.status, 0);
  EXPECT_NE(wrong.output.find(finetune_results + ": not the results of `vitune probe`"), std::string::npos)
      << wrong.output;

  // A different plan into the same folder would orphan the finished runs.
  CliResult other = run_vitune(plan_command(dir, data_path("tiny_vit.safetensors")) + " --seeds 1");
  EXPECT_NE(other.status, 0);
  EXPECT_NE(other.output.find("different plan"), std::string::npos) << other.output;
}

TEST(SweepCommand, FailedRunsAreReportedAndTheShardGoesOn) {
  const std::string dir = fresh_dir("fail");
  CliResult plan = run_vitune(plan_command(dir, dir + "/no_such_model.safetensors"));
  ASSERT_EQ(plan.status, 0) << plan.output;
  CliResult run = run_vitune("sweep run --plan " + dir + "/plan.json");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("mha-sgd-lr0.01-s0: FAILED"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("head-sgd-lr0.01-s0: FAILED"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("2 of 2 runs of shard 0/1 failed"), std::string::npos) << run.output;
  std::ifstream out(dir + "/runs/mha-sgd-lr0.01-s0.out");
  const std::string child((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_NE(child.find("no_such_model"), std::string::npos) << child;

  CliResult report = run_vitune("sweep report --plan " + dir + "/plan.json");
  ASSERT_EQ(report.status, 0) << report.output;
  EXPECT_EQ(read_json(dir + "/report/report.json")["runs_finished"], 0);
}

TEST(SweepCommand, RefusesUnknownFlagsAndBadShards) {
  const std::string dir = fresh_dir("flags");
  CliResult typo = run_vitune(plan_command(dir, "m.safetensors") + " --warmup-stepz 3");
  EXPECT_NE(typo.status, 0);
  EXPECT_NE(typo.output.find("--warmup-stepz"), std::string::npos) << typo.output;
  CliResult old_grid = run_vitune(plan_command(dir, "m.safetensors") + " --lrs 0.01,0.03");
  EXPECT_NE(old_grid.status, 0);
  EXPECT_NE(old_grid.output.find("--sgd-lrs and --adamw-lrs"), std::string::npos) << old_grid.output;
  ASSERT_EQ(run_vitune(plan_command(dir, "m.safetensors")).status, 0);
  CliResult shard = run_vitune("sweep run --plan " + dir + "/plan.json --shard 2/2");
  EXPECT_NE(shard.status, 0);
  EXPECT_NE(shard.output.find("--shard"), std::string::npos) << shard.output;
}

}  // namespace
}  // namespace vitune::testing
