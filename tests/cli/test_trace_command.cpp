// The vitune command end to end: `trace` on the committed tiny ViT reproduces PyTorch's
// values from its output file; `info` describes the checkpoint; bad input fails with a
// message and a non-zero exit status.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

struct Result {
  int status;
  std::string output;
};

Result run_vitune(const std::string& arguments) {
  std::string command = std::string(VITUNE_BINARY_DIR) + "/cli/vitune " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(TraceCommand, OutputMatchesPyTorchTensorByTensor) {
  std::string out = ::testing::TempDir() + "/trace.safetensors";
  Result r = run_vitune("trace --model " + data_path("tiny_vit.safetensors") + " --images " +
                        data_path("tiny_images.safetensors") + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  nn::SafetensorsFile trace = nn::read_safetensors(out);
  nn::SafetensorsFile golden = nn::read_safetensors(data_path("tiny_trace.safetensors"));
  int compared = 0;
  for (const std::string& name : trace.names) {
    bool gradient = name.rfind("grad.", 0) == 0;
    EXPECT_TRUE(tensors_close(trace.at(name), golden.at(name), gradient ? kF32Gradient : kF32Forward, name));
    ++compared;
  }
  // logits, loss, 20 intermediates and 32 gradients.
  EXPECT_EQ(compared, 1 + 1 + 20 + 32);
}

TEST(InfoCommand, DescribesLayoutConfigAndComponents) {
  Result r = run_vitune("info " + data_path("tiny_vit.safetensors"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* expected : {"layout      timm", "dim 32, depth 2, heads 4", "mha", "fc1", "head"}) {
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
  }
}

TEST(Commands, BadInputFailsWithAMessage) {
  Result missing = run_vitune("info /nonexistent/model.safetensors");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("/nonexistent/model.safetensors"), std::string::npos) << missing.output;
  Result no_images = run_vitune("trace --model " + data_path("tiny_vit.safetensors") + " --images " +
                                data_path("tiny_vit.safetensors") + " --out " + ::testing::TempDir() + "/x");
  EXPECT_EQ(no_images.status, 1);
  EXPECT_NE(no_images.output.find("images"), std::string::npos) << no_images.output;
  Result bad_flag = run_vitune("info " + data_path("tiny_vit.safetensors") + " --heads -3");
  EXPECT_NE(bad_flag.status, 0);
}

}  // namespace
}  // namespace vitune::testing
