// Shared by the fault and bad-input tests of the `vitune` command: a tiny IDX dataset
// written by the test (fast to load), running the built binary as a child process
// (optionally under a file-size limit, optionally killed), and whole-file reads.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace vitune::testing {

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string big_endian_u32(uint32_t value) {
  return {char(value >> 24), char(value >> 16), char(value >> 8), char(value)};
}

// `count` 8x8 grey images in `folder` with labels 0..classes-1 in turn; each image is
// a bright square whose place depends on the label, so a model can learn them. Returns
// the dataset spec "idx:<images>,<labels>".
inline std::string write_tiny_idx(const std::string& folder, int count = 64, int classes = 4) {
  std::filesystem::create_directories(folder);
  std::string images = big_endian_u32(0x803) + big_endian_u32(uint32_t(count)) + big_endian_u32(8) +
                       big_endian_u32(8);
  std::string labels = big_endian_u32(0x801) + big_endian_u32(uint32_t(count));
  for (int i = 0; i < count; ++i) {
    const int label = i % classes;
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 8; ++x) {
        const bool bright = y / 4 == label / 2 && x / 4 == label % 2;
        images += char(bright ? 200 + (i * 7 + x) % 50 : (i * 13 + y * 3 + x) % 40);
      }
    }
    labels += char(label);
  }
  write_bytes(folder + "/images-idx3-ubyte", images);
  write_bytes(folder + "/labels-idx1-ubyte", labels);
  return "idx:" + folder + "/images-idx3-ubyte," + folder + "/labels-idx1-ubyte";
}

// `words` followed by `more`: a command line with flags added.
inline std::vector<std::string> plus(std::vector<std::string> words, const std::vector<std::string>& more) {
  words.insert(words.end(), more.begin(), more.end());
  return words;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The flags of a tiny, fast training run on write_tiny_idx's images.
inline std::vector<std::string> tiny_pretrain(const std::string& spec, const std::string& batch_size = "8") {
  return {"pretrain", "--data", spec, "--img-size", "8", "--patch", "4", "--dim", "16", "--depth", "1",
          "--heads", "2", "--batch-size", batch_size, "--loader-threads", "1", "--seed", "5", "--flip"};
}

// The built vitune started with `arguments`, its stdout and stderr going to
// `output_path`; with file_size_limit > 0 it runs under that RLIMIT_FSIZE (SIGXFSZ
// ignored, so writes past it fail with EFBIG as on a full disk); `environment` holds
// NAME=VALUE settings added to the child's environment.
inline pid_t start_vitune(const std::vector<std::string>& arguments, const std::string& output_path,
                          rlim_t file_size_limit = 0, const std::vector<std::string>& environment = {}) {
  const std::string binary = std::string(VITUNE_BINARY_DIR) + "/cli/vitune";
  std::vector<std::string> words{binary};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) ::_exit(126);
    ::dup2(out, 1);
    ::dup2(out, 2);
    if (file_size_limit > 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      const struct rlimit limit{file_size_limit, file_size_limit};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(126);
    }
    for (const std::string& setting : environment) ::putenv(const_cast<char*>(setting.c_str()));
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

struct ChildResult {
  int exit_status = -1;  // -1 when it did not exit normally
  int signal = 0;        // the signal that ended it, or 0
  std::string output;
};

inline ChildResult wait_for(pid_t pid, const std::string& output_path) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  ChildResult result;
  if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.output = read_bytes(output_path);
  return result;
}

inline ChildResult run_vitune_args(const std::vector<std::string>& arguments, const std::string& output_path,
                                   rlim_t file_size_limit = 0, const std::vector<std::string>& environment = {}) {
  return wait_for(start_vitune(arguments, output_path, file_size_limit, environment), output_path);
}

}  // namespace vitune::testing
