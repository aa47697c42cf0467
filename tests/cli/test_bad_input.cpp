// Bad input end to end: each case writes a bad file (or gives a bad flag or dataset
// spec) to the built `vitune` and checks that it exits with status 1 (CLI11's own code
// for flag errors) and an error naming the file, field and what was expected. The
// table in docs/bad_input.md lists these cases with the messages they give.
#include <cstring>
#include <functional>

#include "engine/devices.h"
#include "nn/safetensors.h"
#include "test_faults_support.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

// A folder with the tiny IDX dataset and a model trained one step on it.
class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One folder per process: ctest runs each test in a process of its own, in parallel.
    folder_ = new std::string(::testing::TempDir() + "/bad_input_" + std::to_string(::getpid()));
    std::filesystem::remove_all(*folder_);
    spec_ = new std::string(write_tiny_idx(*folder_ + "/data"));
    std::vector<std::string> pretrain = tiny_pretrain(*spec_);
    pretrain.insert(pretrain.end(), {"--steps", "1", "--out", model()});
    ChildResult result = run_vitune_args(pretrain, *folder_ + "/pretrain.txt");
    ASSERT_EQ(result.exit_status, 0) << result.output;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*folder_);
    delete folder_;
    delete spec_;
  }

  static std::string path(const std::string& name) { return *folder_ + "/" + name; }
  static std::string model() { return path("model.safetensors"); }
  static const std::string& spec() { return *spec_; }

  // Runs vitune and checks the exit status and that the output holds every expected text.
  static void expect_error(const std::vector<std::string>& arguments, const std::vector<std::string>& expected,
                           int status = 1, const std::vector<std::string>& environment = {}) {
    ChildResult result = run_vitune_args(arguments, path("output.txt"), 0, environment);
    EXPECT_EQ(result.exit_status, status) << result.output;
    for (const std::string& text : expected) {
      EXPECT_NE(result.output.find(text), std::string::npos) << "expected \"" << text << "\" in:\n" << result.output;
    }
  }
  static void expect_eval_error(const std::string& model_path, const std::vector<std::string>& expected) {
    expect_error({"eval", "--model", model_path, "--data", spec(), "--loader-threads", "1"}, expected);
  }
  // A one-step training run (batches of one image) on `data_spec`.
  static void expect_training_error(const std::string& data_spec, const std::vector<std::string>& expected) {
    std::vector<std::string> arguments = tiny_pretrain(data_spec, "1");
    arguments.insert(arguments.end(), {"--steps", "1", "--out", path("unused.safetensors")});
    expect_error(arguments, expected);
  }

  // The trained model rewritten with `change` applied to its tensor list.
  static std::string changed_model(const std::string& name,
                                   const std::function<void(std::vector<std::pair<std::string, Tensor>>&)>& change) {
    nn::SafetensorsFile file = nn::read_safetensors(model());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const std::string& tensor : file.names) tensors.emplace_back(tensor, file.at(tensor));
    change(tensors);
    nn::write_safetensors(path(name), tensors, file.metadata);
    return path(name);
  }

  static std::string* folder_;
  static std::string* spec_;
};
std::string* BadInput::folder_ = nullptr;
std::string* BadInput::spec_ = nullptr;

TEST_F(BadInput, DeviceFlags) {
  const std::vector<std::string> eval = {"eval", "--model", model(), "--data", spec(), "--loader-threads", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> arguments = eval;
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return arguments;
  };
  expect_error(with({"--device", "gpu"}), {"--device: expected cpu, emulated, cuda or cuda:N", "'gpu'"});
  expect_error(with({"--tf32"}), {"--tf32 applies to CUDA GEMMs only"});
  if (cuda::device_count() == 0) {
    expect_error(with({"--device", "cuda:0"}), {"--device cuda:0: "});
  }
}

TEST_F(BadInput, MissingModelFile) {
  expect_eval_error(path("absent.safetensors"),
                    {"cannot open safetensors file '" + path("absent.safetensors") + "': No such file or directory"});
}

TEST_F(BadInput, TruncatedModel) {
  const std::string bytes = read_bytes(model());
  write_bytes(path("truncated.safetensors"), bytes.substr(0, bytes.size() - 100));
  expect_eval_error(path("truncated.safetensors"), {"safetensors file '" + path("truncated.safetensors") + "'",
                                                    "missing bytes", "(truncated file?)"});
}

TEST_F(BadInput, OversizedSafetensorsHeader) {
  std::string bytes = read_bytes(model());
  const uint64_t huge = uint64_t(1) << 40;
  std::memcpy(bytes.data(), &huge, 8);
  write_bytes(path("huge_header.safetensors"), bytes);
  expect_eval_error(path("huge_header.safetensors"),
                    {"header length 1099511627776 is larger than the limit of 100000000 bytes"});
}

TEST_F(BadInput, SafetensorsHeaderNotJson) {
  const std::string header = "{\"a\": [1, 2,}   ";
  const uint64_t length = header.size();
  write_bytes(path("not_json.safetensors"), std::string(reinterpret_cast<const char*>(&length), 8) + header);
  expect_eval_error(path("not_json.safetensors"), {"header is not valid JSON"});
}

TEST_F(BadInput, WrongDtype) {
  const std::string bad = changed_model("wrong_dtype.safetensors", [](auto& tensors) {
    for (auto& [name, tensor] : tensors) {
      if (name == "blocks.0.norm1.weight") tensor = Tensor::zeros(tensor.shape(), DType::I32, Device::cpu());
    }
  });
  expect_eval_error(bad, {"blocks.0.norm1.weight"});
}

TEST_F(BadInput, WrongShape) {
  const std::string bad = changed_model("wrong_shape.safetensors", [](auto& tensors) {
    for (auto& [name, tensor] : tensors) {
      if (name == "blocks.0.mlp.fc1.weight") tensor = Tensor::zeros({7, 16}, DType::F32, Device::cpu());
    }
  });
  expect_eval_error(bad, {"blocks.0.mlp.fc1.weight"});
}

TEST_F(BadInput, MissingTensor) {
  const std::string bad = changed_model("missing_tensor.safetensors", [](auto& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].first == "blocks.0.attn.proj.bias") tensors.erase(tensors.begin() + std::ptrdiff_t(i));
    }
  });
  expect_eval_error(bad, {"blocks.0.attn.proj.bias"});
}

TEST_F(BadInput, TruncatedNpz) {
  const std::string bytes = read_bytes(data_path("tiny_vit_npz_stored.npz"));
  write_bytes(path("truncated.npz"), bytes.substr(0, bytes.size() / 2));
  expect_eval_error(path("truncated.npz"), {"npz file '" + path("truncated.npz") + "'", "truncated"});
}

TEST_F(BadInput, CorruptDeflatedNpz) {
  std::string bytes = read_bytes(data_path("tiny_vit_npz_deflated.npz"));
  for (size_t i = 200; i < 260; ++i) bytes[i] = char(~bytes[i]);
  write_bytes(path("corrupt.npz"), bytes);
  expect_eval_error(path("corrupt.npz"), {"npz file '" + path("corrupt.npz") + "', entry '"});
}

TEST_F(BadInput, TruncatedIdxImages) {
  const std::string images = read_bytes(*folder_ + "/data/images-idx3-ubyte");
  write_bytes(path("short-images"), images.substr(0, images.size() - 10));
  expect_training_error("idx:" + path("short-images") + "," + *folder_ + "/data/labels-idx1-ubyte",
                        {"IDX images file " + path("short-images"), "(truncated)"});
}

TEST_F(BadInput, LabelOutOfRange) {
  expect_training_error(spec() + "?num_classes=3",
                        {"label 3 of record 3 is out of range for 3 classes"});
}

TEST_F(BadInput, PartialCifarRecord) {
  write_bytes(path("data_batch_1.bin"), std::string(3073 + 100, '\1'));
  expect_training_error("cifar10:" + path("data_batch_1.bin"),
                        {"not a whole number of 3073-byte records (1 records and 100 bytes left)"});
}

TEST_F(BadInput, UnreadableImage) {
  std::filesystem::create_directories(path("images/cat"));
  write_bytes(path("images/cat/broken.png"), "\x89PNG\r\n\x1a\n but not really");
  expect_training_error("folder:" + path("images"), {"image file " + path("images/cat/broken.png"),
                                                     "not a readable image"});
}

TEST_F(BadInput, ImageOverTheSizeLimit) {
  // A PNG signature and an IHDR chunk that claims 20000 x 20000 pixels.
  const std::string ihdr = "IHDR" + big_endian_u32(20000) + big_endian_u32(20000) + std::string("\x08\x00\x00\x00\x00", 5);
  std::filesystem::create_directories(path("huge/cat"));
  write_bytes(path("huge/cat/huge.png"),
              "\x89PNG\r\n\x1a\n" + big_endian_u32(13) + ihdr + big_endian_u32(0) + "IDAT");
  expect_training_error("folder:" + path("huge"),
                        {"image file " + path("huge/cat/huge.png"),
                         "20000x20000 pixels is larger than the limit of 32768 a side and 67108864 pixels in all"});
}

TEST_F(BadInput, VtabListWithABadLabel) {
  write_bytes(path("list.txt"), "a.png 1\nb.png seven\n");
  expect_training_error("vtab:" + path("list.txt"),
                        {"VTAB list file " + path("list.txt") + " line 1: image file"});
  write_bytes(path("list2.txt"), "b.png seven\n");
  expect_training_error("vtab:" + path("list2.txt"), {"line 1: label \"seven\" is not a non-negative integer"});
}

TEST_F(BadInput, FgvcSplitThatIsNotJson) {
  write_bytes(path("split.json"), "{\"a.png\": 1,");
  expect_training_error("fgvc:" + path("split.json"), {"FGVC json file " + path("split.json") + ": not valid JSON"});
}

TEST_F(BadInput, BadDatasetSpecs) {
  expect_training_error("fashion-mnist:valid", {"fashion-mnist split \"valid\": expected train or test"});
  expect_training_error(spec() + "?per_class=5&ratio=0.5", {"give per_class or ratio, not both"});
  expect_training_error(spec() + "?part=5:2", {"part=5:2: expected begin < end"});
  expect_training_error("imagenet:/data", {"unknown kind \"imagenet\""});
}

TEST_F(BadInput, BadFlags) {
  std::vector<std::string> arguments = tiny_pretrain(spec());
  arguments.insert(arguments.end(), {"--steps", "-3", "--out", path("unused.safetensors")});
  expect_error(arguments, {"--steps: expected a whole number >= 0, got -3"}, 105);
  expect_error({"pretrain", "--data", spec(), "--out", path("unused.safetensors"), "--stepz", "3"},
               {"The following arguments were not expected: 3 --stepz"}, 109);
  const std::vector<std::string> small{"pretrain", "--data", spec(), "--img-size", "8", "--batch-size", "8",
                                       "--out", path("unused.safetensors")};
  std::vector<std::string> bad_optimizer = small, bad_resume = small;
  bad_optimizer.insert(bad_optimizer.end(), {"--optimizer", "adam"});
  expect_error(bad_optimizer, {"--optimizer: expected sgd or adamw, got 'adam'"});
  bad_resume.push_back("--resume");
  expect_error(bad_resume, {"--resume needs --checkpoint"});
}

TEST_F(BadInput, ResumeFromAModelThatIsNotACheckpoint) {
  std::vector<std::string> arguments = tiny_pretrain(spec());
  arguments.insert(arguments.end(),
                   {"--steps", "2", "--out", path("unused.safetensors"), "--checkpoint", model(), "--resume"});
  expect_error(arguments, {"not a training checkpoint (no trainer_state metadata)"});
}

TEST_F(BadInput, HostMemoryLimit) {
  // A model of width 256 holds more than 1 MiB of weights.
  const std::vector<std::string> arguments{"pretrain", "--data", spec(), "--img-size", "8", "--dim", "256",
                                           "--depth", "1", "--steps", "1", "--out", path("unused.safetensors")};
  expect_error(arguments, {"of host memory", "and the limit is 1 MiB (VITUNE_MAX_HOST_MB)"}, 1,
               {"VITUNE_MAX_HOST_MB=1"});
}

}  // namespace
}  // namespace vitune::testing
