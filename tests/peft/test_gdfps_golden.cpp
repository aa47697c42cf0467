// GD-FPS against PyTorch (tools/make_gdfps_golden.py, tests/golden/gdfps_tiny.safetensors),
// on every device: the anchor and task statistics of the tiny ViT, the scores and the
// top-K masks; and the same statistics, bit for bit, at batch sizes 1, 3 and 8 and with
// 1 and 2 threads.
#include <gtest/gtest.h>

#include <string>

#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "peft/activation_stats.h"
#include "peft/gdfps.h"
#include "peft/selection.h"
#include "device_test.h"
#include "test_util.h"

namespace vitune::peft {
namespace {

using testing::data_path;
using testing::tensors_close;

// The golden statistics come from a float64 forward; vitune's forward is float32, whose
// rounding moves a mean |activation| by about 1e-6 relative.
constexpr testing::Tolerance kStatsTolerance{1e-6, 2e-5};
constexpr testing::Tolerance kScoreTolerance{1e-6, 1e-4};

struct Golden {
  explicit Golden(Device device) : model(nn::load_vit(data_path("tiny_vit.safetensors"), device)) {}
  nn::SafetensorsFile file = nn::read_safetensors(data_path("gdfps_tiny.safetensors"));
  nn::LoadedVit model;
  int64_t k = std::stoll(file.metadata.at("k"));
};

std::vector<std::pair<std::string, Tensor>> measure(const nn::VisionTransformer& model, const Tensor& images,
                                                    int64_t batch_size) {
  ActivationStats stats(model);
  for (int64_t begin = 0; begin < images.dim(0); begin += batch_size) {
    stats.add_batch(images.rows(begin, std::min(images.dim(0), begin + batch_size)).to(model.device()).clone());
  }
  EXPECT_EQ(stats.images(), images.dim(0));
  return stats.means();
}

Anchor anchor_of(const std::vector<std::pair<std::string, Tensor>>& means) {
  Anchor anchor;
  anchor.means = means;
  anchor.path = "(measured)";
  return anchor;
}

class GdfpsGolden : public testing::OnDevice {};

TEST_P(GdfpsGolden, AnchorAndTaskStatisticsMatchPyTorch) {
  Golden g(device());
  for (const char* set : {"pre", "task"}) {
    const auto means = measure(*g.model.model, g.file.at(std::string(set) + "_images"), 4);
    ASSERT_EQ(means.size(), 9u);  // the patch embedding and 4 per block
    for (const auto& [name, mean] : means) {
      const std::string key = std::string(set == std::string("pre") ? "anchor." : "down.") + name;
      EXPECT_TRUE(tensors_close(mean, g.file.at(key), kStatsTolerance, key));
    }
  }
}

TEST_P(GdfpsGolden, ScoresAndMasksMatchPyTorch) {
  Golden g(device());
  const auto anchor_means = measure(*g.model.model, g.file.at("pre_images"), 10);
  const auto down_means = measure(*g.model.model, g.file.at("task_images"), 10);
  std::vector<std::string> names;
  for (const auto& entry : anchor_means) names.push_back(entry.first);
  const Anchor anchor = anchor_of(anchor_means);
  const std::vector<TensorSelection> selections =
      gdfps_select(*g.model.model, names, anchor, down_means, g.k);
  ASSERT_EQ(selections.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const Tensor score = gdfps_scores(g.model.model->parameter(name).value(),
                                      feature_growth(down_means[i].second, anchor.at(name)));
    EXPECT_TRUE(tensors_close(score, g.file.at("score." + name), kScoreTolerance, "score." + name));
    EXPECT_EQ(selections[i].name, name);
    EXPECT_EQ(selections[i].rows.short_rows, 0);
    EXPECT_TRUE(testing::bitwise_equal(selections[i].rows.indices, g.file.at("mask." + name))) << name;
    // The golden scores themselves give the golden mask as well.
    EXPECT_TRUE(testing::bitwise_equal(top_k_per_row(g.file.at("score." + name), g.k).indices,
                                       g.file.at("mask." + name)))
        << name;
  }
}

TEST_P(GdfpsGolden, SameBitsForAnyBatchSizeAndThreadCount) {
  Golden g(device());
  const Tensor images = g.file.at("task_images");
  std::vector<std::pair<std::string, Tensor>> reference;
  {
    testing::ThreadCount one(1);
    reference = measure(*g.model.model, images, 1);
  }
  for (int threads : {1, 2}) {
    testing::ThreadCount count(threads);
    for (int64_t batch : {1, 3, 8}) {
      const auto means = measure(*g.model.model, images, batch);
      for (size_t i = 0; i < means.size(); ++i) {
        EXPECT_TRUE(testing::bitwise_equal(means[i].second, reference[i].second))
            << means[i].first << " at batch size " << batch << ", " << threads << " threads";
      }
    }
  }
}

VITUNE_ON_EVERY_DEVICE(GdfpsGolden);

}  // namespace
}  // namespace vitune::peft
