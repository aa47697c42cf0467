// `vitune plasticity`: the plasticity of every component of every block of a model on
// a dataset (peft/plasticity.h), with its bound; a terminal table, a JSON and a CSV.
#include "peft/plasticity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/flag_checks.h"
#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/model_options.h"
#include "cli/output_paths.h"
#include "cli/plots.h"
#include "cli/progress.h"
#include "cli/preprocess_options.h"
#include "cli/run_options.h"
#include "data/dataset_spec.h"
#include "data/loader.h"
#include "data/open_dataset.h"
#include "engine/atomic_file.h"
#include "engine/error.h"

namespace vitune::cli {

namespace {

struct PlasticityCommandOptions {
  ModelOptions model;
  DeviceOptions device;
  std::string data;
  std::string reference_data;
  std::string out;
  std::string csv;
  std::string svg;
  std::string protocol = "reference";
  int64_t images = 256;
  int64_t batch_size = 64;
  bool fc1_no_gelu = false;
  bool in_order = false;
  uint64_t seed = 0;
  PreprocessOptions preprocess;
  int loader_threads = 2;
  OutputFlags output;
};

// A dataset read through the eval transform, in a seeded shuffled order (or in order).
struct ImageSource {
  std::shared_ptr<const data::Dataset> dataset;
  std::unique_ptr<data::Loader> loader;
  std::string canonical_spec;
};

ImageSource open_images(const std::string& spec_text, const PlasticityCommandOptions& options,
                        const ModelInput& input) {
  data::DatasetSpec spec = data::parse_dataset_spec(spec_text);
  ImageSource source;
  source.dataset = data::open_dataset(spec);
  source.canonical_spec = spec.canonical();
  data::LoaderOptions loader;
  loader.batch_size = options.batch_size;
  loader.shuffle = !options.in_order;
  loader.seed = options.seed;
  loader.threads = options.loader_threads;
  source.loader = std::make_unique<data::Loader>(*source.dataset,
                                                 input.eval_transform(*source.dataset, source.canonical_spec), loader);
  return source;
}

// Finite values as numbers, NaN and infinities as null.
nlohmann::ordered_json number(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

double ratio_to_bound(const peft::LayerPlasticity& layer) {
  return layer.bound > 0 && layer.ratios.count > 0 ? layer.ratios.mean / layer.bound
                                                   : std::numeric_limits<double>::quiet_NaN();
}

// Statistics of no pair at all are null, not 0.
nlohmann::ordered_json stats_json(const peft::RunningStats& s) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  return {{"mean", number(s.count > 0 ? s.mean : none)},
          {"std", number(s.count > 0 ? s.std() : none)},
          {"min", number(s.min)},
          {"max", number(s.max)},
          {"pairs", s.count}};
}

nlohmann::ordered_json report_json(const peft::PlasticityReport& report, const PlasticityCommandOptions& options,
                                   const std::string& data, const std::string& reference_data, double seconds) {
  nlohmann::ordered_json out;
  out["protocol"] = peft::protocol_name(report.protocol);
  out["model"] = options.model.path;
  out["data"] = data;
  out["reference_data"] =
      reference_data.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(reference_data);
  out["images"] = report.images;
  out["fc1_gelu"] = report.fc1_gelu;
  out["seconds"] = seconds;
  out["batch_size"] = options.batch_size;
  out["seed"] = options.seed;
  out["shuffled"] = !options.in_order;
  out["tokens"] = report.tokens;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const peft::LayerPlasticity& layer : report.layers) {
    nlohmann::ordered_json entry = {{"block", layer.block}, {"component", peft::component_name(layer.component)}};
    entry.update(stats_json(layer.ratios));
    entry["skipped_pairs"] = layer.skipped_pairs;
    entry["bound"] = number(layer.bound);
    entry["ratio_to_bound"] = number(ratio_to_bound(layer));
    layers.push_back(entry);
  }
  out["layers"] = layers;
  nlohmann::ordered_json components = nlohmann::ordered_json::array();
  for (const peft::ComponentPlasticity& component : report.components) {
    nlohmann::ordered_json entry = {{"component", peft::component_name(component.component)}};
    entry.update(stats_json(component.ratios));
    components.push_back(entry);
  }
  out["components"] = components;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (size_t block = 0; block < report.inputs.size(); ++block) {
    const peft::BlockInputStats& in = report.inputs[block];
    inputs.push_back({{"block", block},
                      {"ln1_min_token_std", number(in.ln1_min_std)},
                      {"ln2_min_token_std", number(in.ln2_min_std)},
                      {"mha_max_token_norm", number(in.mha_max_token_norm)},
                      {"mha_mean_token_norm", number(in.mha_mean_token_norm())}});
  }
  out["bound_inputs"] = inputs;
  return out;
}

std::string csv_number(double value) {
  if (!std::isfinite(value)) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

// One row per block and component, then one per component over all blocks (block "all",
// no bound).
std::string report_csv(const peft::PlasticityReport& report) {
  std::ostringstream csv;
  csv << "block,component,mean,std,min,max,pairs,bound,ratio_to_bound\n";
  auto row = [&](const std::string& block, peft::PlasticityComponent c, const peft::RunningStats& s, double bound,
                 double ratio) {
    const double none = std::numeric_limits<double>::quiet_NaN();
    csv << block << ',' << peft::component_name(c) << ',' << csv_number(s.count > 0 ? s.mean : none) << ','
        << csv_number(s.count > 0 ? s.std() : none) << ',' << csv_number(s.min) << ',' << csv_number(s.max) << ','
        << s.count << ',' << csv_number(bound) << ',' << csv_number(ratio) << '\n';
  };
  for (const peft::LayerPlasticity& layer : report.layers)
    row(std::to_string(layer.block), layer.component, layer.ratios, layer.bound, ratio_to_bound(layer));
  const double none = std::numeric_limits<double>::quiet_NaN();
  for (const peft::ComponentPlasticity& component : report.components)
    row("all", component.component, component.ratios, none, none);
  return csv.str();
}

void print_table(const peft::PlasticityReport& report) {
  std::printf("\n%-9s %5s  %-22s %12s %11s\n", "component", "block", "mean +- std", "bound", "mean/bound");
  for (const peft::ComponentPlasticity& component : report.components) {
    for (const peft::LayerPlasticity& layer : report.layers) {
      if (layer.component != component.component) continue;
      char cell[64];
      if (layer.ratios.count > 0)
        std::snprintf(cell, sizeof cell, "%.4f +- %.4f", layer.ratios.mean, layer.ratios.std());
      else
        std::snprintf(cell, sizeof cell, "no pairs");
      std::printf("%-9s %5d  %-22s %12.4g %11.3g\n", peft::component_name(layer.component), layer.block, cell,
                  layer.bound, ratio_to_bound(layer));
    }
  }
  std::printf("\nover all blocks:\n");
  for (const peft::ComponentPlasticity& component : report.components) {
    const peft::RunningStats& s = component.ratios;
    std::printf("%-9s %.4f +- %.4f  (min %.4f, max %.4f, %lld pairs)\n", peft::component_name(component.component),
                s.mean, s.std(), s.min, s.max, (long long)s.count);
  }
}

// How many images a dataset can give: `wanted`, or all of them with a note.
int64_t images_to_take(int64_t wanted, const ImageSource& source) {
  if (wanted <= source.dataset->size()) return wanted;
  std::printf("plasticity: %s has %lld images; using all of them instead of --images %lld\n",
              source.canonical_spec.c_str(), (long long)source.dataset->size(), (long long)wanted);
  return source.dataset->size();
}

void run_plasticity(const PlasticityCommandOptions& options) {
  CommandOutputs outputs(options.output);
  outputs.input(options.model.path);
  outputs.file("--out", options.out).file("--csv", options.csv).file("--svg", options.svg).check_and_lock();
  const auto start = std::chrono::steady_clock::now();
  peft::PlasticityOptions meter_options;
  meter_options.protocol = peft::parse_plasticity_protocol(options.protocol);
  meter_options.fc1_gelu = !options.fc1_no_gelu;
  const bool reference = meter_options.protocol == peft::PlasticityProtocol::Reference;
  VITUNE_CHECK(!reference || !options.reference_data.empty(),
               "--protocol reference (the default, as the paper's code measures) pairs each image of --data with ",
               "an image of --reference-data (the pretraining data), which is missing; pass --reference-data, or ",
               "--protocol paper to pair images of --data within a batch");
  VITUNE_CHECK(reference || options.reference_data.empty(),
               "--reference-data is read only by --protocol reference (the paper protocol pairs images of --data)");
  VITUNE_CHECK(reference || options.batch_size >= 2, "--batch-size ", options.batch_size,
               ": the paper protocol pairs images within a batch, so it needs at least 2");

  const Device device = options.device.select();
  nn::LoadedVit loaded = options.model.load_model(device);
  const nn::VisionTransformer& model = *loaded.model;
  const ModelInput input = options.preprocess.input_for(loaded);
  ImageSource downstream = open_images(options.data, options, input);
  ImageSource reference_source;
  int64_t total = images_to_take(options.images, downstream);
  if (reference) {
    reference_source = open_images(options.reference_data, options, input);
    total = std::min(total, images_to_take(options.images, reference_source));
  }
  VITUNE_CHECK(total >= (reference ? 1 : 2), "plasticity: ", total, " image(s) give no pair to measure");

  peft::PlasticityMeter meter(model, meter_options);
  Progress progress("plasticity", total, "image", 256);
  for (int64_t done = 0; done < total;) {
    data::Batch batch = downstream.loader->next();
    const int64_t take = std::min(batch.images.dim(0), total - done);
    if (reference)
      meter.add_paired_batch(reference_source.loader->next().images.rows(0, take).to(device),
                             batch.images.rows(0, take).to(device));
    else
      meter.add_batch(batch.images.rows(0, take).to(device));
    done += take;
    progress.update(done);
  }
  peft::PlasticityReport report = meter.report();
  progress.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("plasticity (%s protocol) of %s on %lld images of %s%s%s: %.2f s\n", options.protocol.c_str(),
              options.model.path.c_str(), (long long)report.images, downstream.canonical_spec.c_str(),
              reference ? " paired with " : "", reference ? reference_source.canonical_spec.c_str() : "", seconds);
  print_table(report);
  int64_t skipped = 0;
  for (const peft::LayerPlasticity& layer : report.layers) skipped = std::max(skipped, layer.skipped_pairs);
  if (skipped > 0)
    std::printf("\nnote: up to %lld pairs per layer had identical inputs and were left out (skipped_pairs)\n",
                (long long)skipped);
  const nlohmann::ordered_json json =
      report_json(report, options, downstream.canonical_spec, reference ? reference_source.canonical_spec : "",
                  seconds);
  write_file_atomically(options.out, json.dump(2) + "\n");
  std::printf("\n");
  print_wrote("results", options.out);
  if (!options.csv.empty()) {
    write_file_atomically(options.csv, report_csv(report));
    print_wrote("table", options.csv);
  }
  if (!options.svg.empty()) {
    write_plasticity_svg(nlohmann::json::parse(json.dump()), options.svg);
    print_wrote("chart", options.svg);
  }
}

}  // namespace

void add_plasticity_command(CLI::App& app) {
  auto options = std::make_shared<PlasticityCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "plasticity", "Plasticity (average rate of change) of every component of every block, with its bound");
  command->add_option("--model", options->model.path, "Checkpoint (timm/Hugging Face .safetensors, .npz)")->required();
  options->model.add_to(*command);
  options->device.add_to(*command);
  command->add_option("--data", options->data, "Images to measure on: a dataset spec (see the README)")->required();
  command->add_option("--out", options->out, "Write the results JSON here")->required();
  command->add_option("--csv", options->csv, "Also write a CSV: one row per block and component");
  command->add_option("--svg", options->svg, "Also write a chart: plasticity per component against the block");
  command->add_option("--protocol", options->protocol,
                      "reference (the default, the paper's code: every component on the embedding output, image k "
                      "of --data paired with image k of --reference-data) or paper (each component on its own "
                      "input, pairs within a batch)")
      ->capture_default_str();
  command->add_option("--reference-data", options->reference_data,
                      "Reference protocol (the default): the pretraining data, whose image k is paired with image k "
                      "of --data");
  command->add_option("--images", options->images, "Images of --data to use (and of --reference-data)")
      ->check(integer_in(1, int64_t(1) << 40));
  command->add_option("--batch-size", options->batch_size, "Images per forward pass (paper protocol: pairs within it)")
      ->check(integer_in(1, 65536));
  command->add_flag("--fc1-no-gelu", options->fc1_no_gelu, "Paper protocol: fc1 ends before its GELU (fc1_pre)");
  command->add_option("--seed", options->seed, "Seed of the shuffle that picks the images")->check(seed_value());
  command->add_flag("--in-order", options->in_order, "Take the first images in dataset order instead of shuffling");
  options->preprocess.add_to(*command);
  command
      ->add_option("--loader-threads", options->loader_threads, "Background threads decoding and transforming images")
      ->check(integer_in(1, 256));
  options->output.add_to(*command);
  command->callback([options] { run_plasticity(*options); });
}

}  // namespace vitune::cli
