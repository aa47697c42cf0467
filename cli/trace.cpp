// `vitune trace`: runs a model on a batch and saves every intermediate, the logits and,
// when labels are given, the loss and the gradient of every parameter, so that a user
// can compare vitune with their own PyTorch model tensor by tensor.
#include <cstdio>
#include <memory>

#include "cli/flag_checks.h"
#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/model_options.h"
#include "cli/output_paths.h"
#include "nn/safetensors.h"

namespace vitune::cli {

namespace {

struct TraceOptions {
  ModelOptions model;
  DeviceOptions device;
  std::string images_path;
  std::string out_path;
  double smoothing = 0.0;
  OutputFlags output;
};

// `images` as f32 [B, C, H, W]: f32 as stored, u8 as value / 255, f16/bf16/f64 converted.
Tensor read_images(const nn::SafetensorsFile& file) {
  const Tensor& stored = file.at("images");
  VITUNE_CHECK(stored.ndim() == 4, file.path, ": tensor 'images' is ", stored.str(), ", expected [B, C, H, W]");
  VITUNE_CHECK(stored.dtype() != DType::I32 && stored.dtype() != DType::I64, file.path,
               ": tensor 'images' has dtype ", dtype_name(stored.dtype()), ", expected f32 or u8");
  Tensor images = stored.to(DType::F32).clone();
  if (stored.dtype() == DType::U8) {
    float* p = images.data<float>();
    for (int64_t i = 0; i < images.numel(); ++i) p[i] /= 255.0f;
  }
  return images;
}

// `labels` as i64 [B], or undefined when the file has none.
Tensor read_labels(const nn::SafetensorsFile& file, int64_t batch, int64_t classes) {
  auto it = file.tensors.find("labels");
  if (it == file.tensors.end()) return Tensor();
  const Tensor& stored = it->second;
  VITUNE_CHECK(stored.ndim() == 1 && stored.dim(0) == batch &&
                   (stored.dtype() == DType::I64 || stored.dtype() == DType::I32),
               file.path, ": tensor 'labels' is ", stored.str(), ", expected i64[", batch, "]");
  Tensor labels = stored.to(DType::I64).clone();
  for (int64_t i = 0; i < batch; ++i) {
    int64_t label = labels.data<int64_t>()[i];
    VITUNE_CHECK(label >= 0 && label < classes, file.path, ": labels[", i, "] = ", label,
                 " is outside the model's ", classes, " classes");
  }
  return labels;
}

void run_trace(const TraceOptions& options) {
  CommandOutputs outputs(options.output);
  outputs.input(options.model.path).input(options.images_path).file("--out", options.out_path).check_and_lock();
  const Device device = options.device.select();
  nn::LoadedVit loaded = options.model.load_model(device);
  nn::VisionTransformer& model = *loaded.model;
  nn::SafetensorsFile input = nn::read_safetensors(options.images_path);
  Tensor images = read_images(input);
  Tensor labels = read_labels(input, images.dim(0), model.config().num_classes);
  VITUNE_CHECK(!labels.defined() || model.head, options.model.path,
               ": the model has no head (num_classes 0), so labels cannot give a loss");
  if (labels.defined()) require_pooled(loaded, "trace with labels");
  images = images.to(device);
  if (labels.defined()) labels = labels.to(device);

  std::vector<std::pair<std::string, Tensor>> out;
  std::vector<std::pair<std::string, Tensor>> activations;
  // Without labels only forward values are wanted: record no tape.
  std::unique_ptr<autograd::NoGradGuard> no_grad;
  if (!labels.defined()) no_grad = std::make_unique<autograd::NoGradGuard>();
  autograd::Variable logits = model.forward(autograd::Variable(images), [&](const std::string& name, const Tensor& v) {
    activations.emplace_back(name, v);
  });
  out.emplace_back("logits", logits.value());
  for (auto& a : activations) out.push_back(a);
  if (labels.defined()) {
    autograd::Variable loss = autograd::cross_entropy(logits, labels, options.smoothing);
    out.emplace_back("loss", loss.value());
    autograd::backward(loss);
    for (nn::Parameter* p : model.parameters()) out.emplace_back("grad." + p->name(), p->grad());
    std::printf("loss %.6f (mean cross-entropy over %ld images, label smoothing %g)\n", loss.value().item(0),
                long(images.dim(0)), options.smoothing);
  }
  nn::write_safetensors(options.out_path, out, {{"model", options.model.path}, {"images", options.images_path}});
  print_wrote(cat("trace (", out.size(), " tensors)"), options.out_path);
}

}  // namespace

void add_trace_command(CLI::App& app) {
  auto options = std::make_shared<TraceOptions>();
  CLI::App* command = app.add_subcommand(
      "trace", "Save a model's logits, every block's intermediates and, with labels, the loss and all gradients");
  command->add_option("--model", options->model.path, "Checkpoint (timm/Hugging Face .safetensors or .npz)")
      ->required();
  options->model.add_to(*command);
  options->device.add_to(*command);
  command->add_option("--images", options->images_path,
                      "safetensors file with 'images' [B,C,H,W] (f32, or u8 read as value/255) and "
                      "optionally 'labels' [B] (i64)")
      ->required();
  command->add_option("--out", options->out_path, "Output safetensors file")->required();
  command->add_option("--label-smoothing", options->smoothing, "Label smoothing of the loss")
      ->check(number_in(0.0, 0.999));
  options->output.add_to(*command);
  command->callback([options] { run_trace(*options); });
}

}  // namespace vitune::cli
