// Every vitune command end to end on each device other than the cpu that this build and
// machine have: on the emulated device (always, so CI runs every command off the cpu)
// each output file -- models, training checkpoints, masks, the anchor, deltas, the trace
// -- must have the cpu run's bits and each results file the cpu run's values; on a CUDA
// device the outputs must agree with the cpu's to rounding. The demo runs at its
// smallest size on the device too.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_files.h"
#include "cli_runner.h"
#include "device_test.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

const std::string kModel = std::string(VITUNE_TEST_DATA_DIR) + "/../../models/fmnist_c0-4_vit.safetensors";
const std::string kTinyVit = std::string(VITUNE_TEST_DATA_DIR) + "/tiny_vit.safetensors";
const std::string kTinyImages = std::string(VITUNE_TEST_DATA_DIR) + "/tiny_images.safetensors";
const std::string kTask = "\"fashion-mnist:train?classes=5-9&per_class=8&part=0:6&seed=0\"";
const std::string kTest = "\"fashion-mnist:test?classes=5-9&per_class=6\"";
const std::string kPretraining = "\"fashion-mnist:train?classes=0-4&per_class=6\"";

// One command: its name (for messages) and its arguments, with {D} standing for the
// device and {O} for the output folder.
struct Command {
  std::string name, arguments;
};

// Every command that computes, over small data, as a user would chain them.
std::vector<Command> every_command() {
  const std::string train = " --steps 3 --batch-size 8 --loader-threads 1";
  return {
      {"trace", "trace --model " + kTinyVit + " --images " + kTinyImages + " --out {O}/trace.safetensors"},
      {"eval", "eval --model " + kModel + " --data " + kTest + " --loader-threads 1 --results {O}/eval.json"},
      {"probe", "probe --model " + kModel + " --data " + kTask + " --eval-data " + kTest +
                    " --loader-threads 1 --results {O}/probe.json"},
      {"pretrain", "pretrain --data " + kPretraining +
                       " --img-size 28 --patch 7 --in-chans 1 --dim 16 --depth 2 --heads 2" + train +
                       " --checkpoint {O}/pretrain_checkpoint.safetensors --checkpoint-every 2"
                       " --log {O}/pretrain.jsonl --out {O}/pretrained.safetensors --results {O}/pretrain.json"},
      {"finetune", "finetune --model " + kModel + " --data " + kTask + " --eval-data " + kTest + train +
                       " --out {O}/finetuned.safetensors --results {O}/finetune.json"},
      {"finetune --bf16", "finetune --model " + kModel + " --data " + kTask + train +
                              " --bf16 --train mha,head --out {O}/bf16.safetensors"},
      {"plasticity --protocol paper", "plasticity --model " + kModel + " --data " + kTask +
                                          " --images 12 --batch-size 6 --protocol paper --out {O}/plasticity.json"},
      {"plasticity", "plasticity --model " + kModel + " --data " + kTask + " --images 12 --batch-size 6"
                     " --reference-data " + kPretraining + " --out {O}/plasticity_reference.json"},
      {"anchor", "anchor --model " + kModel + " --data " + kPretraining + " --images 12 --batch-size 5"
                 " --out {O}/anchor.safetensors"},
      {"select gdfps", "select --method gdfps --model " + kModel + " --anchor {O}/anchor.safetensors --data " +
                           kTask + " --k 2 --out {O}/gdfps.safetensors --results {O}/gdfps.json"},
      {"select gps", "select --method gps --model " + kModel + " --data " + kTask +
                         " --k 2 --batch-size 6 --out {O}/gps.safetensors --results {O}/gps.json"},
      {"select magnitude", "select --method magnitude --model " + kModel + " --k 2 --out {O}/magnitude.safetensors"},
      {"finetune --mask", "finetune --model " + kModel + " --mask {O}/gdfps.safetensors --data " + kTask + train +
                              " --out {O}/sparse.safetensors --results {O}/sparse.json"},
      {"finetune --lora", "finetune --model " + kModel + " --lora 2 --data " + kTask + train +
                              " --out {O}/lora.safetensors --results {O}/lora.json"},
      {"export-delta", "export-delta --base " + kModel + " --model {O}/sparse.safetensors --out {O}/delta.safetensors"},
      {"apply-delta", "apply-delta --base " + kModel + " --delta {O}/delta.safetensors --out {O}/rebuilt.safetensors"},
  };
}

std::string substitute(std::string text, Device device, const std::string& folder) {
  for (size_t at; (at = text.find("{O}")) != std::string::npos;) text.replace(at, 3, folder);
  return text + " --device " + device.str();
}

// The files a command line writes into the output folder: each word "{O}/name" that
// follows an output flag.
std::vector<std::string> outputs_of(const std::string& arguments, const std::string& folder) {
  std::vector<std::string> files;
  std::istringstream words(arguments);
  std::string flag, word;
  while (words >> word) {
    if (word.rfind("{O}/", 0) == 0 && flag != "--anchor" && flag != "--mask" && flag != "--model" &&
        flag != "--delta") {
      files.push_back(folder + word.substr(3));
    }
    flag = word;
  }
  return files;
}

// Runs every command on `device` into `folder`; a failure names the command. Each
// command says where it wrote each of its outputs.
void run_every_command(Device device, const std::string& folder) {
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  for (const Command& command : every_command()) {
    const CliResult run = run_vitune(substitute(command.arguments, device, folder));
    ASSERT_EQ(run.status, 0) << command.name << " on " << device.str() << ":\n" << run.output;
    for (const std::string& file : outputs_of(command.arguments, folder)) {
      const size_t end = run.output.find(" " + file + "\n");
      const size_t line = end == std::string::npos ? end : run.output.rfind('\n', end) + 1;
      EXPECT_TRUE(end != std::string::npos && run.output.compare(line, 6, "wrote ") == 0)
          << command.name << " does not say that it wrote " << file << ":\n" << run.output;
    }
  }
}

// What a results file says that depends on the computation, not on the run: times,
// memory, the device and the paths written are left out.
bool run_specific(const std::string& key) {
  for (const char* part : {"seconds", "second", "bytes", "device", "tf32", "out"}) {
    if (key.find(part) != std::string::npos) return true;
  }
  return key == "model" || key == "mask";
}

nlohmann::json computed_values(nlohmann::json value) {
  if (value.is_object()) {
    nlohmann::json kept = nlohmann::json::object();
    for (auto& [key, item] : value.items()) {
      if (!run_specific(key)) kept[key] = computed_values(item);
    }
    return kept;
  }
  if (value.is_array()) {
    for (auto& item : value) item = computed_values(item);
  }
  return value;
}

// Every tensor of two safetensors files, on the cpu run and the device run.
void expect_tensors(const std::string& name, const std::string& cpu_path, const std::string& device_path,
                    bool same_bits) {
  const nn::SafetensorsFile cpu = nn::read_safetensors(cpu_path), device = nn::read_safetensors(device_path);
  ASSERT_EQ(cpu.names, device.names) << name;
  for (const std::string& tensor : cpu.names) {
    if (same_bits) {
      EXPECT_TRUE(bitwise_equal(device.at(tensor), cpu.at(tensor))) << name << ": " << tensor;
    } else if (cpu.at(tensor).dtype() == DType::F32) {
      // Other summation orders, through a few training steps at most.
      EXPECT_TRUE(tensors_close(device.at(tensor), cpu.at(tensor), {1e-4, 1e-3}, name + ": " + tensor));
    }
  }
}

class EveryCommand : public OnDevice {};

TEST_P(EveryCommand, RunsAndGivesTheCpuResults) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string root = ::testing::TempDir() + "/every_command_" + device_label({device(), 0});
  const std::string on_cpu = root + "/cpu", on_device = root + "/device";
  ASSERT_NO_FATAL_FAILURE(run_every_command(Device::cpu(), on_cpu));
  ASSERT_NO_FATAL_FAILURE(run_every_command(device(), on_device));
  // The emulated device runs the cpu's kernels: the same bits, everywhere.
  const bool same_bits = device().host_memory();
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(on_cpu)) {
    const std::string file = entry.path().filename().string();
    const std::string cpu_path = on_cpu + "/" + file, device_path = on_device + "/" + file;
    ASSERT_TRUE(std::filesystem::exists(device_path)) << file << " was not written on " << device().str();
    ++files;
    if (entry.path().extension() == ".safetensors") {
      expect_tensors(file, cpu_path, device_path, same_bits);
    } else if (entry.path().extension() == ".json" && same_bits) {
      EXPECT_EQ(computed_values(read_json(device_path)), computed_values(read_json(cpu_path))) << file;
    } else if (entry.path().extension() == ".jsonl" && same_bits) {
      EXPECT_EQ(read_raw(device_path), read_raw(cpu_path)) << file;
    }
  }
  EXPECT_EQ(files, 24);
  std::filesystem::remove_all(root);
}

TEST_P(EveryCommand, TheDemoAtItsSmallestSize) {
  if (!fashion_mnist_installed()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string root = ::testing::TempDir() + "/every_command_demo_" + device_label({device(), 0});
  std::map<std::string, nlohmann::json> tables;
  for (Device where : {Device::cpu(), device()}) {
    const std::string out = root + "/" + where.str();
    std::filesystem::remove_all(out);
    const CliResult demo = run_vitune(
        "demo --model " + kModel + " --out " + out + " --device " + where.str() +
        " --steps 2 --batch-size 8 --anchor-images 40 --plasticity-images 8"
        " --pretrain-data \"fashion-mnist:train?classes=0-4&per_class=8\""
        " --data \"fashion-mnist:train?classes=5-9&per_class=8\""
        " --eval-data \"fashion-mnist:test?classes=5-9&per_class=4\"");
    ASSERT_EQ(demo.status, 0) << where.str() << ":\n" << demo.output;
    tables[where.str()] = read_json(out + "/demo.json");
  }
  const nlohmann::json& cpu = tables.at("cpu")["methods"];
  const nlohmann::json& there = tables.at(device().str())["methods"];
  ASSERT_EQ(there.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(there[i]["method"], cpu[i]["method"]);
    EXPECT_EQ(there[i]["trainable_parameters"], cpu[i]["trainable_parameters"]) << cpu[i]["method"];
    if (device().host_memory()) {
      EXPECT_EQ(there[i]["top1"], cpu[i]["top1"]) << cpu[i]["method"];
    } else {
      // 20 test images: a GPU's rounding may move one prediction.
      EXPECT_NEAR(there[i]["top1"].get<double>(), cpu[i]["top1"].get<double>(), 0.051) << cpu[i]["method"];
    }
  }
  std::filesystem::remove_all(root);
}

// Every device but the cpu, which the tests compare against.
std::vector<Device> devices_besides_the_cpu() {
  std::vector<Device> devices;
  for (Device d : available_devices()) {
    if (!d.is_cpu()) devices.push_back(d);
  }
  return devices;
}

INSTANTIATE_TEST_SUITE_P(Devices, EveryCommand, ::testing::ValuesIn(devices_besides_the_cpu()), device_label);

}  // namespace
}  // namespace vitune::testing
