// GPS gradient accumulation over ready-made batches: the named parameters trainable,
// everything else frozen, one backward per batch adding into their gradients.
#include "peft/gps_accumulate.h"

#include <cmath>
#include <set>

#include "autograd/functions.h"

namespace vitune::peft {

namespace {

using autograd::Variable;

// The freeze state of every parameter of a model, put back by name on destruction.
class SavedFreezeStates {
 public:
  explicit SavedFreezeStates(const nn::VisionTransformer& model) : model_(model) {
    for (const nn::Parameter* p : model.parameters()) {
      states_.push_back({p->name(), p->state(), p->mask_indices()});
    }
  }
  ~SavedFreezeStates() {
    for (const State& s : states_) {
      nn::Parameter* p = model_.find_parameter(s.name);
      if (p == nullptr) continue;
      switch (s.state) {
        case nn::FreezeState::Trainable: p->train(); break;
        case nn::FreezeState::Frozen: p->freeze(); break;
        case nn::FreezeState::Masked: p->train_entries(s.mask); break;
      }
    }
  }
  SavedFreezeStates(const SavedFreezeStates&) = delete;
  SavedFreezeStates& operator=(const SavedFreezeStates&) = delete;

 private:
  struct State {
    std::string name;
    nn::FreezeState state;
    Tensor mask;
  };
  const nn::VisionTransformer& model_;
  std::vector<State> states_;
};

// The named parameters, each once, in the order given. The contrastive loss is on the
// features, so the head cannot be scored with it.
std::vector<nn::Parameter*> resolve(const nn::VisionTransformer& model, const std::vector<std::string>& names,
                                    GpsLoss loss) {
  VITUNE_CHECK(!names.empty(), "GPS: no parameters to score");
  std::set<std::string> seen;
  std::vector<nn::Parameter*> params;
  for (const std::string& name : names) {
    VITUNE_CHECK(seen.insert(name).second, "GPS: parameter '", name, "' is named twice");
    VITUNE_CHECK(loss == GpsLoss::CrossEntropy || name.rfind("head.", 0) != 0, "GPS: '", name,
                 "' does not affect the contrastive loss, which is on the features before the head");
    params.push_back(&model.parameter(name));
  }
  return params;
}

void check_batch(const GpsBatch& batch, GpsLoss loss, int64_t number) {
  const Tensor& images = batch.images;
  VITUNE_CHECK(images.defined() && images.ndim() == 4 && images.dim(0) > 0, "GPS batch ", number,
               ": images must be [B, C, H, W] with B > 0, got ",
               images.defined() ? images.str() : std::string("nothing"));
  const int64_t rows = images.dim(0);
  VITUNE_CHECK(batch.labels.defined() && batch.labels.dtype() == DType::I64 && batch.labels.ndim() == 1 &&
                   batch.labels.dim(0) == rows,
               "GPS batch ", number, ": labels must be i64[", rows, "], got ",
               batch.labels.defined() ? batch.labels.str() : std::string("nothing"));
  if (loss == GpsLoss::SupervisedContrastive) {
    VITUNE_CHECK(batch.second_view.defined() && batch.second_view.shape() == images.shape() &&
                     batch.second_view.dtype() == images.dtype(),
                 "GPS batch ", number, ": the contrastive loss needs a second view shaped like the images ",
                 images.str(), ", got ",
                 batch.second_view.defined() ? batch.second_view.str() : std::string("nothing"));
  }
}

// The batch's tensors on `device` (the model's); the loaders make them on the host.
void move_batch(GpsBatch& batch, Device device) {
  batch.images = batch.images.to(device);
  if (batch.second_view.defined()) batch.second_view = batch.second_view.to(device);
  batch.labels = batch.labels.to(device);
}

// [a; b] along the first dimension (same shape and dtype for images, i64 for labels),
// on a's device.
Tensor stack_rows(const Tensor& a, const Tensor& b) {
  Shape shape = a.shape();
  shape[0] = a.dim(0) + b.dim(0);
  Tensor out(shape, a.dtype(), a.device());
  out.rows(0, a.dim(0)).copy_from(a);
  out.rows(a.dim(0), shape[0]).copy_from(b);
  return out;
}

// The mean loss of one batch, on the tape.
Variable batch_loss(const nn::VisionTransformer& model, const GpsBatch& batch, GpsLoss loss, double temperature) {
  if (loss == GpsLoss::CrossEntropy) {
    return autograd::cross_entropy(model.forward(Variable(batch.images)), batch.labels);
  }
  Variable features = model.features(Variable(stack_rows(batch.images, batch.second_view)));
  return autograd::supervised_contrastive(features, stack_rows(batch.labels, batch.labels), temperature);
}

// |g| as f32 on the host (zeros when no gradient reached the parameter). A gradient on
// a CUDA device is copied to the host once, after the last batch.
Tensor absolute_f32(const nn::Parameter& p) {
  Tensor out = Tensor::zeros(p.shape(), DType::F32, Device::cpu());
  if (!p.grad().defined()) return out;
  const Tensor grad = p.grad().to(Device::cpu());
  float* o = out.data<float>();
  on_float_dtype(grad, "GPS scores", [&](auto zero) {
    using T = decltype(zero);
    const T* g = grad.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = float(std::fabs(g[i]));
  });
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> gps_scores_from_batches(nn::VisionTransformer& model,
                                                                    const std::vector<std::string>& names,
                                                                    GpsLoss loss, double temperature,
                                                                    const GpsBatchSource& next_batch) {
  VITUNE_CHECK(loss == GpsLoss::SupervisedContrastive || model.head != nullptr,
               "GPS with cross-entropy needs a model with a classification head");
  VITUNE_CHECK(std::isfinite(temperature) && temperature > 0, "GPS: temperature must be a positive number, got ",
               temperature);
  std::vector<nn::Parameter*> params = resolve(model, names, loss);
  SavedFreezeStates restore_on_return(model);
  for (nn::Parameter* p : model.parameters()) p->freeze();
  for (nn::Parameter* p : params) p->train();

  // Each backward adds its batch's gradient to the parameters' gradients (+=), in
  // batch order: after the last one they hold the sum.
  GpsBatch batch;
  int64_t count = 0;
  const Device device = model.device();
  while (next_batch(batch)) {
    check_batch(batch, loss, count);
    move_batch(batch, device);
    autograd::backward(batch_loss(model, batch, loss, temperature));
    ++count;
  }
  VITUNE_CHECK(count > 0, "GPS: the data gave no batch");

  std::vector<std::pair<std::string, Tensor>> scores;
  for (const nn::Parameter* p : params) scores.emplace_back(p->name(), absolute_f32(*p));
  return scores;
}

}  // namespace vitune::peft
