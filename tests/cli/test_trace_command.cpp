// The vitune command end to end: `trace` on the committed tiny ViT reproduces PyTorch's
// values from its output file; `info` describes the checkpoint; bad input fails with a
// message and a non-zero exit status.
#include "cli_runner.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

TEST(TraceCommand, OutputMatchesPyTorchTensorByTensor) {
  std::string out = ::testing::TempDir() + "/trace.safetensors";
  CliResult r = run_vitune("trace --model " + data_path("tiny_vit.safetensors") + " --images " +
                        data_path("tiny_images.safetensors") + " --overwrite --out " + out);
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
  CliResult r = run_vitune("info " + data_path("tiny_vit.safetensors"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* expected : {"layout      timm", "dim 32, depth 2, heads 4", "mha", "fc1", "head"}) {
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << "\n" << r.output;
  }
}

TEST(Commands, BadInputFailsWithAMessage) {
  CliResult missing = run_vitune("info /nonexistent/model.safetensors");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("/nonexistent/model.safetensors"), std::string::npos) << missing.output;
  CliResult no_images = run_vitune("trace --model " + data_path("tiny_vit.safetensors") + " --images " +
                                data_path("tiny_vit.safetensors") + " --out " + ::testing::TempDir() + "/x");
  EXPECT_EQ(no_images.status, 1);
  EXPECT_NE(no_images.output.find("images"), std::string::npos) << no_images.output;
  CliResult bad_flag = run_vitune("info " + data_path("tiny_vit.safetensors") + " --heads -3");
  EXPECT_NE(bad_flag.status, 0);
}

}  // namespace
}  // namespace vitune::testing
