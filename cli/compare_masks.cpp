// `vitune compare-masks A B`: the intersection ratio |A ∩ B| / |A| of two selection
// masks, per tensor and overall, as a table and optionally a JSON file.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output_paths.h"
#include "engine/atomic_file.h"
#include "peft/compare_masks.h"

namespace vitune::cli {

namespace {

struct CompareMasksOptions {
  std::string a;
  std::string b;
  std::string json;
  OutputFlags output;
};

void run_compare_masks(const CompareMasksOptions& options) {
  CommandOutputs outputs(options.output);
  outputs.input(options.a).input(options.b).file("--json", options.json).check_and_lock();
  const peft::SelectionMask a = peft::load_mask(options.a);
  const peft::SelectionMask b = peft::load_mask(options.b);
  const peft::MaskComparison comparison = peft::compare_masks(a, b, options.a, options.b);
  std::printf("%-28s %10s %10s %10s %8s\n", "tensor", "|A|", "|B|", "|A & B|", "ratio");
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const peft::TensorOverlap& t : comparison.tensors) {
    std::printf("%-28s %10lld %10lld %10lld %7.2f%%\n", t.name.c_str(), (long long)t.count_a, (long long)t.count_b,
                (long long)t.intersection, 100 * t.ratio());
    tensors.push_back({{"name", t.name},
                       {"count_a", t.count_a},
                       {"count_b", t.count_b},
                       {"intersection", t.intersection},
                       {"ratio", t.ratio()}});
  }
  std::printf("%-28s %10lld %10lld %10lld %7.2f%%\n", "all", (long long)comparison.count_a,
              (long long)comparison.count_b, (long long)comparison.intersection, 100 * comparison.ratio());
  for (const std::string& name : comparison.only_in_b) std::printf("only in B: %s\n", name.c_str());
  if (options.json.empty()) return;
  nlohmann::ordered_json out = {{"command", "compare-masks"},
                                {"a", options.a},
                                {"b", options.b},
                                {"method_a", a.metadata.at("method")},
                                {"method_b", b.metadata.at("method")},
                                {"count_a", comparison.count_a},
                                {"count_b", comparison.count_b},
                                {"intersection", comparison.intersection},
                                {"ratio", comparison.ratio()},
                                {"tensors", tensors},
                                {"only_in_b", comparison.only_in_b}};
  write_file_atomically(options.json, out.dump(2) + "\n");
  print_wrote("comparison", options.json);
}

}  // namespace

void add_compare_masks_command(CLI::App& app) {
  auto options = std::make_shared<CompareMasksOptions>();
  CLI::App* command =
      app.add_subcommand("compare-masks", "Intersection ratio |A & B| / |A| of two selection masks");
  command->add_option("A", options->a, "The first mask (the ratio's denominator)")->required();
  command->add_option("B", options->b, "The second mask")->required();
  command->add_option("--json", options->json, "Write the comparison here as JSON");
  options->output.add_to(*command);
  command->callback([options] { run_compare_masks(*options); });
}

}  // namespace vitune::cli
