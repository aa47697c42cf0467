// The training loop on a small synthetic dataset, on every device: it learns; resuming
// from a checkpoint gives bit-identical weights to an uninterrupted run (data order and
// random flips included), also from a checkpoint written while the next batch was
// fetched ahead, and on the emulated device the same bits as on the cpu; a non-finite
// loss stops the run and the last good checkpoint survives.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "data/transform_presets.h"
#include "engine/random.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "nn/trainer.h"
#include "device_test.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

// 3 classes of 8x8 grey images: a bright band at rows 0-2, 3-5 or 6-7, plus noise.
class BandsDataset : public data::Dataset {
 public:
  int64_t size() const override { return 48; }
  int num_classes() const override { return 3; }
  int64_t label(int64_t i) const override { return i % 3; }
  data::Image load(int64_t i) const override {
    data::Image image{8, 8, 1, std::vector<uint8_t>(64)};
    for (int p = 0; p < 64; ++p) {
      bool band = p / 8 / 3 == label(i);
      image.pixels[size_t(p)] = uint8_t((band ? 160 : 40) + int(uniform01(9, uint64_t(i), uint64_t(p)) * 60));
    }
    return image;
  }
  std::string describe(int64_t i) const override { return "band image " + std::to_string(i); }
};

nn::VitConfig tiny_config() {
  nn::VitConfig c;
  c.img_size = 8;
  c.patch = 4;
  c.in_chans = 1;
  c.dim = 16;
  c.depth = 1;
  c.heads = 2;
  c.num_classes = 3;
  return c;
}

data::Transform train_transform() {
  data::TrainTransformOptions options;
  options.size = 8;
  options.channels = 1;
  options.random_resized_crop = false;  // flips alone keep the task learnable
  return data::train_transform(options);
}

data::LoaderOptions loader_options() {
  data::LoaderOptions options;
  options.batch_size = 12;
  options.shuffle = true;
  options.seed = 5;
  return options;
}

nn::TrainConfig train_config(int64_t steps, const std::string& checkpoint) {
  nn::TrainConfig config;
  config.optimizer = nn::OptimizerKind::AdamW;
  config.schedule.base_lr = 3e-3;
  config.schedule.warmup_steps = 2;
  config.schedule.total_steps = 12;
  config.clip_norm = 1.0;
  config.steps = steps;
  config.checkpoint_path = checkpoint;
  config.log_every = 0;
  return config;
}

struct TrainingSetup {
  explicit TrainingSetup(Device device) : model(tiny_config(), device) { model.init_weights(1); }
  BandsDataset dataset;
  nn::VisionTransformer model;
  data::Loader loader{dataset, train_transform(), loader_options()};
};

class Trainer : public OnDevice {
 protected:
  // A temporary path of this test and device (the devices' tests may run at once).
  std::string temp_path(const std::string& name) const {
    return ::testing::TempDir() + "/" + device().str() + "_" + name;
  }
};

TEST_P(Trainer, LearnsAnEasyTask) {
  TrainingSetup run(device());
  nn::TrainConfig config = train_config(40, "");
  config.schedule.total_steps = 40;
  config.schedule.base_lr = 1e-2;
  nn::Trainer trainer(run.model, config, run.loader);
  data::LoaderOptions eval_options;
  eval_options.batch_size = 16;
  data::Loader eval(run.dataset, train_transform(), eval_options);
  nn::EvalResult result = trainer.run(nullptr, &eval);
  EXPECT_EQ(result.examples, 48);
  EXPECT_GT(result.top1, 0.9);
  EXPECT_DOUBLE_EQ(result.top5, 1.0);  // 3 classes: the top 3 always hold the label
}

TEST_P(Trainer, ResumingFromACheckpointIsBitExact) {
  std::string checkpoint = temp_path("resume.safetensors");
  TrainingSetup straight(device());
  nn::Trainer(straight.model, train_config(12, ""), straight.loader).run(nullptr, nullptr);
  TrainingSetup on_cpu(Device::cpu());
  nn::Trainer(on_cpu.model, train_config(12, ""), on_cpu.loader).run(nullptr, nullptr);

  TrainingSetup first_half(device());
  nn::Trainer(first_half.model, train_config(7, checkpoint), first_half.loader).run(nullptr, nullptr);
  TrainingSetup second_half(device());  // fresh process state: new model, new loader
  nn::Trainer resumed(second_half.model, train_config(12, checkpoint), second_half.loader);
  resumed.resume(checkpoint);
  EXPECT_EQ(resumed.step(), 7);
  resumed.run(nullptr, nullptr);

  for (nn::Parameter* p : straight.model.parameters()) {
    EXPECT_TRUE(bitwise_equal(p->value(), second_half.model.parameter(p->name()).value())) << p->name();
    // The emulated device runs the cpu's kernels: the same bits. A GPU sums in other orders.
    if (device().host_memory()) {
      EXPECT_TRUE(bitwise_equal(p->value(), on_cpu.model.parameter(p->name()).value())) << p->name();
    }
  }
  std::remove(checkpoint.c_str());
}

// Off the cpu the trainer fetches step k+1's batch (and starts its upload) during step
// k; a checkpoint written after step k must still continue from batch k+1. The
// checkpoint of step 7 is kept when step 8 reports, before step 9 would overwrite it.
TEST_P(Trainer, ACheckpointTakenWithTheNextBatchFetchedAheadResumesBitExactly) {
  const std::string checkpoint = temp_path("ahead.safetensors"), at_step_7 = temp_path("ahead_step7.safetensors");
  TrainingSetup straight(device());
  nn::Trainer(straight.model, train_config(12, ""), straight.loader).run(nullptr, nullptr);

  TrainingSetup first(device());
  nn::TrainConfig config = train_config(12, checkpoint);
  config.checkpoint_every = 7;
  nn::Trainer(first.model, config, first.loader).run(
      [&](const nn::StepReport& report) {
        if (report.step == 8) std::ofstream(at_step_7, std::ios::binary) << std::ifstream(checkpoint, std::ios::binary).rdbuf();
      },
      nullptr);
  TrainingSetup second(device());
  nn::Trainer resumed(second.model, train_config(12, ""), second.loader);
  resumed.resume(at_step_7);
  EXPECT_EQ(resumed.step(), 7);
  resumed.run(nullptr, nullptr);
  for (nn::Parameter* p : straight.model.parameters()) {
    EXPECT_TRUE(bitwise_equal(p->value(), second.model.parameter(p->name()).value())) << p->name();
  }
  std::remove(checkpoint.c_str());
  std::remove(at_step_7.c_str());
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A run killed after its checkpoint at step 4 had logged steps 5 and 6 and half a line;
// the resumed run redoes them, and its log equals a straight run's, byte for byte. A
// fresh run overwrites an old log instead of appending to it.
TEST_P(Trainer, AResumedRunsLogReadsAsOneRunAndAFreshRunStartsANewLog) {
  const std::string checkpoint = temp_path("log_resume.safetensors"), straight_log = temp_path("straight.jsonl"),
                    resumed_log = temp_path("resumed.jsonl");
  auto config = [&](int64_t steps, const std::string& ckpt, const std::string& log) {
    nn::TrainConfig c = train_config(steps, ckpt);
    c.log_every = 1;
    c.log_path = log;
    return c;
  };
  TrainingSetup straight(device());
  nn::Trainer(straight.model, config(8, "", straight_log), straight.loader).run(nullptr, nullptr);
  const std::string expected = read_text(straight_log);
  ASSERT_FALSE(expected.empty());

  {
    TrainingSetup killed(device());
    nn::Trainer(killed.model, config(4, checkpoint, resumed_log), killed.loader).run(nullptr, nullptr);
  }
  TrainingSetup beyond(device());  // what the killed run logged past its checkpoint
  nn::Trainer(beyond.model, config(6, "", resumed_log + ".beyond"), beyond.loader).run(nullptr, nullptr);
  std::string past = read_text(resumed_log + ".beyond");
  size_t fifth = 0;
  for (int line = 0; line < 4; ++line) fifth = past.find('\n', fifth) + 1;
  std::ofstream(resumed_log, std::ios::app) << past.substr(fifth) << "{\"step\": 7, \"epo";

  TrainingSetup second(device());
  nn::Trainer resumed(second.model, config(8, checkpoint, resumed_log), second.loader);
  resumed.resume(checkpoint);
  resumed.run(nullptr, nullptr);
  EXPECT_EQ(read_text(resumed_log), expected);

  TrainingSetup again(device());
  nn::Trainer(again.model, config(8, "", resumed_log), again.loader).run(nullptr, nullptr);
  EXPECT_EQ(read_text(resumed_log), expected);
  for (const std::string& path : {checkpoint, straight_log, resumed_log, resumed_log + ".beyond"}) {
    std::remove(path.c_str());
  }
}

TEST_P(Trainer, NonFiniteLossStopsTheRunAndKeepsTheLastGoodCheckpoint) {
  std::string checkpoint = temp_path("nan.safetensors");
  TrainingSetup run(device());
  nn::TrainConfig config = train_config(10, checkpoint);
  config.checkpoint_every = 1;
  nn::Trainer trainer(run.model, config, run.loader);
  int steps_seen = 0;
  try {
    trainer.run(
        [&](const nn::StepReport&) {
          if (++steps_seen == 3) run.model.parameter("head.weight").mutable_value().fill(NAN);
        },
        nullptr);
    FAIL() << "expected the run to stop";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at step 4"), std::string::npos) << e.what();
  }
  nn::SafetensorsFile kept = nn::read_safetensors(checkpoint);
  EXPECT_NE(kept.metadata.at("trainer_state").find("\"step\":3"), std::string::npos);
  std::remove(checkpoint.c_str());
}

TEST_P(Trainer, ATrainingCheckpointLoadsAsAModel) {
  std::string checkpoint = temp_path("as_model.safetensors");
  TrainingSetup run(device());
  nn::Trainer(run.model, train_config(2, checkpoint), run.loader).run(nullptr, nullptr);
  nn::LoadedVit loaded = nn::load_vit(checkpoint, Device::cpu());
  EXPECT_TRUE(bitwise_equal(loaded.model->parameter("head.weight").value(), run.model.parameter("head.weight").value()));
  std::remove(checkpoint.c_str());
}

VITUNE_ON_EVERY_DEVICE(Trainer);

}  // namespace
}  // namespace vitune::testing
