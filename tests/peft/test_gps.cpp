// GPS scoring beside the golden values: scoring a subset gives the same values, freeze
// states and the head come back, results are bit-identical across runs and thread
// counts, gps_scores over a dataset equals the same batches made by hand, and bad
// input is refused.
#include "data/dataset.h"
#include "data/transform_presets.h"
#include "peft/gps.h"
#include "test_gps_fixture.h"

namespace vitune::testing {
namespace {

using peft::GpsLoss;

// Five 16x16 RGB images with smooth, distinct patterns; labels 0, 1, 2, 0, 1.
class PatternDataset : public data::Dataset {
 public:
  int64_t size() const override { return 5; }
  int num_classes() const override { return 3; }
  int64_t label(int64_t i) const override {
    data::check_index(*this, i, "pattern dataset");
    return i % 3;
  }
  data::Image load(int64_t i) const override {
    data::check_index(*this, i, "pattern dataset");
    data::Image image{16, 16, 3, {}};
    for (int y = 0; y < 16; ++y) {
      for (int x = 0; x < 16; ++x) {
        for (int c = 0; c < 3; ++c) image.pixels.push_back(uint8_t((x * (7 + i) + y * (3 + c) + 40 * i) % 256));
      }
    }
    return image;
  }
  std::string describe(int64_t i) const override { return "pattern " + std::to_string(i); }
};

data::Transform eval_view() {
  data::EvalTransformOptions o;
  o.size = 16;
  return data::eval_transform(o);
}

data::Transform train_view() {
  data::TrainTransformOptions o;
  o.size = 16;
  return data::train_transform(o);
}

// Rows [begin, end) of the dataset through `view` with the loader's random key.
Tensor images_by_hand(const data::Dataset& dataset, const data::Transform& view, uint64_t seed, int64_t begin,
                      int64_t end) {
  Tensor out({end - begin, 3, 16, 16}, DType::F32, Device::cpu());
  for (int64_t i = begin; i < end; ++i) {
    out.rows(i - begin, i - begin + 1).copy_from(view.apply(dataset.load(i), {seed, 0, i}).reshape({1, 3, 16, 16}));
  }
  return out;
}

Tensor labels_by_hand(const data::Dataset& dataset, int64_t begin, int64_t end) {
  std::vector<int64_t> labels;
  for (int64_t i = begin; i < end; ++i) labels.push_back(dataset.label(i));
  return Tensor::from_vector<int64_t>({end - begin}, labels, Device::cpu());
}

peft::GpsBatchSource source_of(std::vector<peft::GpsBatch> batches) {
  auto next = std::make_shared<size_t>(0);
  return [batches, next](peft::GpsBatch& batch) {
    if (*next == batches.size()) return false;
    batch = batches[(*next)++];
    return true;
  };
}

void expect_bitwise_equal(const std::vector<std::pair<std::string, Tensor>>& a,
                          const std::vector<std::pair<std::string, Tensor>>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t n = 0; n < a.size(); ++n) {
    EXPECT_EQ(a[n].first, b[n].first) << what;
    EXPECT_TRUE(bitwise_equal(a[n].second, b[n].second)) << what << ": " << a[n].first;
  }
}

TEST(Gps, ParsesTheLossNames) {
  EXPECT_EQ(peft::parse_gps_loss("ce"), GpsLoss::CrossEntropy);
  EXPECT_EQ(peft::parse_gps_loss("supcon"), GpsLoss::SupervisedContrastive);
  EXPECT_THROW(peft::parse_gps_loss("SupCon"), Error);
}

TEST(Gps, ScoringOneWeightGivesItsValuesFromScoringAll) {
  for (auto [loss, prefix] : {std::pair<GpsLoss, std::string>{GpsLoss::CrossEntropy, "ce."},
                              {GpsLoss::SupervisedContrastive, "supcon."}}) {
    auto model = gps_tiny_vit();
    auto scores = peft::gps_scores_from_batches(*model, {"blocks.1.mlp.fc2.weight"}, loss, 0.07, gps_golden_batches());
    ASSERT_EQ(scores.size(), 1u);
    EXPECT_TRUE(tensors_close(scores[0].second, gps_golden().at(prefix + "blocks.1.mlp.fc2.weight"), {1e-5, 1e-4},
                              prefix + "blocks.1.mlp.fc2.weight"));
  }
}

TEST(Gps, RestoresFreezeStatesAndDropsGradients) {
  auto model = gps_tiny_vit();
  model->cls_token.freeze();
  model->parameter("blocks.0.attn.qkv.weight").train_entries(Tensor::from_vector<int64_t>({3}, {1, 5, 9}, Device::cpu()));
  model->parameter("head.weight").freeze();
  auto check = [&](const std::string& when) {
    for (const nn::Parameter* p : model->parameters()) {
      EXPECT_FALSE(p->grad().defined()) << when << ": " << p->name();
      nn::FreezeState expected = nn::FreezeState::Trainable;
      if (p->name() == "cls_token" || p->name() == "head.weight") expected = nn::FreezeState::Frozen;
      if (p->name() == "blocks.0.attn.qkv.weight") expected = nn::FreezeState::Masked;
      EXPECT_EQ(p->state(), expected) << when << ": " << p->name();
    }
    EXPECT_EQ(model->parameter("blocks.0.attn.qkv.weight").mask_indices().to_vector<int64_t>(),
              (std::vector<int64_t>{1, 5, 9}))
        << when;
  };
  peft::gps_scores_from_batches(*model, {"blocks.0.attn.qkv.weight", "blocks.1.mlp.fc1.weight"},
                                GpsLoss::SupervisedContrastive, 0.07, gps_golden_batches());
  check("after scoring");
  // A batch that fails its checks midway: the states still come back.
  peft::GpsBatch without_second_view{gps_golden().at("batch0.images").clone(), Tensor(),
                                     gps_golden().at("batch0.labels").clone()};
  EXPECT_THROW(peft::gps_scores_from_batches(*model, {"blocks.1.mlp.fc1.weight"}, GpsLoss::SupervisedContrastive,
                                             0.07, source_of({without_second_view})),
               Error);
  check("after an error");
}

TEST(Gps, SameBitsTwiceAndForOneAndTwoThreads) {
  for (GpsLoss loss : {GpsLoss::CrossEntropy, GpsLoss::SupervisedContrastive}) {
    auto run = [&](int threads) {
      ThreadCount scope(threads);
      auto model = gps_tiny_vit();
      return peft::gps_scores_from_batches(*model, gps_selectable_weights(*model), loss, 0.07, gps_golden_batches());
    };
    auto first = run(2);
    expect_bitwise_equal(first, run(2), "twice with 2 threads");
    expect_bitwise_equal(first, run(1), "1 thread against 2");
  }
}

TEST(Gps, CrossEntropyOverADatasetEqualsTheSameBatchesByHand) {
  PatternDataset dataset;
  peft::GpsOptions options;
  options.loss = GpsLoss::CrossEntropy;
  options.batch_size = 3;
  options.seed = 11;
  const std::vector<std::string> names{"patch_embed.proj.weight", "blocks.1.attn.proj.weight"};

  auto model = gps_tiny_vit();
  model->head->bias.freeze();
  auto scores = peft::gps_scores(*model, names, dataset, eval_view(), train_view(), options);

  auto by_hand = gps_tiny_vit();
  by_hand->reset_head(3, 11);
  const data::Transform view = eval_view();
  auto expected = peft::gps_scores_from_batches(
      *by_hand, names, GpsLoss::CrossEntropy, options.temperature,
      source_of({{images_by_hand(dataset, view, 11, 0, 3), Tensor(), labels_by_hand(dataset, 0, 3)}}));
  expect_bitwise_equal(scores, expected, "gps_scores against batches by hand");

  // The model's own 10-class head is back, with its values and freeze states.
  EXPECT_EQ(model->config().num_classes, 10);
  ASSERT_NE(model->head, nullptr);
  EXPECT_TRUE(bitwise_equal(model->head->weight.value(), gps_golden().at("head.weight")));
  EXPECT_TRUE(bitwise_equal(model->head->bias.value(), gps_golden().at("head.bias")));
  EXPECT_EQ(&model->parameter("head.weight"), &model->head->weight);
  EXPECT_EQ(model->head->weight.state(), nn::FreezeState::Trainable);
  EXPECT_EQ(model->head->bias.state(), nn::FreezeState::Frozen);
}

TEST(Gps, ContrastiveOverADatasetUsesTwoDifferentlyDrawnViews) {
  PatternDataset dataset;
  peft::GpsOptions options;
  options.batch_size = 2;
  options.seed = 5;
  const std::vector<std::string> names{"blocks.0.mlp.fc1.weight", "blocks.1.attn.qkv.weight"};

  auto model = gps_tiny_vit();
  auto scores = peft::gps_scores(*model, names, dataset, eval_view(), train_view(), options);

  const data::Transform view = train_view();
  std::vector<peft::GpsBatch> batches;
  for (int64_t begin = 0; begin + 2 <= 5; begin += 2) {
    const int64_t end = begin + 2;
    batches.push_back({images_by_hand(dataset, view, 5, begin, end), images_by_hand(dataset, view, 6, begin, end),
                       labels_by_hand(dataset, begin, end)});
  }
  EXPECT_FALSE(bitwise_equal(batches[0].images, batches[0].second_view));
  auto by_hand = gps_tiny_vit();
  expect_bitwise_equal(scores, peft::gps_scores_from_batches(*by_hand, names, GpsLoss::SupervisedContrastive,
                                                             options.temperature, source_of(batches)),
                       "gps_scores against views by hand");

  options.loader_threads = 3;
  auto more_threads = gps_tiny_vit();
  expect_bitwise_equal(scores, peft::gps_scores(*more_threads, names, dataset, eval_view(), train_view(), options),
                       "3 loader threads against 2");
}

TEST(Gps, RefusesBadInput) {
  auto model = gps_tiny_vit();
  const std::vector<std::string> one{"blocks.0.mlp.fc1.weight"};
  auto ce = [&](const std::vector<std::string>& names) {
    return peft::gps_scores_from_batches(*model, names, GpsLoss::CrossEntropy, 0.07, gps_golden_batches());
  };
  EXPECT_THROW(ce({}), Error);
  EXPECT_THROW(ce({"blocks.7.mlp.fc1.weight"}), Error);
  EXPECT_THROW(ce({"blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc1.weight"}), Error);
  EXPECT_THROW(peft::gps_scores_from_batches(*model, one, GpsLoss::SupervisedContrastive, 0.0, gps_golden_batches()),
               Error);
  EXPECT_THROW(peft::gps_scores_from_batches(*model, {"head.weight"}, GpsLoss::SupervisedContrastive, 0.07,
                                             gps_golden_batches()),
               Error);
  EXPECT_THROW(peft::gps_scores_from_batches(*model, one, GpsLoss::CrossEntropy, 0.07, source_of({})), Error);
  peft::GpsBatch short_labels{gps_golden().at("batch0.images").clone(), Tensor(),
                              gps_golden().at("batch1.labels").clone()};
  EXPECT_THROW(peft::gps_scores_from_batches(*model, one, GpsLoss::CrossEntropy, 0.07, source_of({short_labels})),
               Error);

  model->reset_head(0, 0);
  EXPECT_THROW(ce(one), Error);

  PatternDataset dataset;
  peft::GpsOptions options;
  options.batch_size = 0;
  EXPECT_THROW(peft::gps_scores(*model, one, dataset, eval_view(), train_view(), options), Error);

  // Five images make no full batch of six: the last partial batch is dropped, so there
  // would be nothing to score.
  options.batch_size = 6;
  try {
    peft::gps_scores(*model, one, dataset, eval_view(), train_view(), options);
    FAIL() << "expected an error for a dataset smaller than one batch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 images, fewer than one batch of 6"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vitune::testing
