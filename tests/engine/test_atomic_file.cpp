// Tests of write_file_atomically: contents, no temporary files left behind, clear
// errors, and an untouched previous file when the write fails part way.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/atomic_file.h"
#include "engine/error.h"
#include "test_util.h"

namespace {

using vitune::Error;
using vitune::write_file_atomically;
using vitune::testing::read_raw;

std::vector<std::string> list_folder(const std::string& folder) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

// A fresh, empty folder per test, so that leftover files can be listed; it is removed
// with its files when the test ends.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : path_(::testing::TempDir() + "atomic_file_" + name + "_" + std::to_string(::getpid())) {
    ::mkdir(path_.c_str(), 0755);
  }
  ~TempFolder() {
    for (const std::string& name : list_folder(path_)) std::remove((path_ + "/" + name).c_str());
    ::rmdir(path_.c_str());
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

TEST(AtomicFile, WritesBytesAndOverwritesWithoutLeavingTemporaryFiles) {
  TempFolder folder_owner("roundtrip");
  const std::string& folder = folder_owner.str();
  std::string path = folder + "/result.bin";
  std::string first("first\0contents", 14);
  write_file_atomically(path, first);
  EXPECT_EQ(read_raw(path), first);

  write_file_atomically(path, [](std::FILE* file) {
    std::fputs("second ", file);
    std::fputs("version", file);
  });
  EXPECT_EQ(read_raw(path), "second version");
  EXPECT_EQ(list_folder(folder), std::vector<std::string>{"result.bin"});

  write_file_atomically(path, std::string());
  EXPECT_EQ(read_raw(path), "");
  EXPECT_EQ(list_folder(folder), std::vector<std::string>{"result.bin"});
}

TEST(AtomicFile, MissingFolderGivesErrorNamingFileAndReason) {
  std::string path = ::testing::TempDir() + "no_such_folder_for_atomic_file/out.bin";
  try {
    write_file_atomically(path, std::string("x"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
}

TEST(AtomicFile, ThrowingWriterKeepsOldFileAndRemovesTemporary) {
  TempFolder folder_owner("throwing");
  const std::string& folder = folder_owner.str();
  std::string path = folder + "/model.bin";
  write_file_atomically(path, std::string("old contents"));
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::FILE* file) {
                                       std::fputs("partial new contents", file);
                                       throw std::runtime_error("writer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read_raw(path), "old contents");
  EXPECT_EQ(list_folder(folder), std::vector<std::string>{"model.bin"});
}

// A writer killed mid-write leaves `<name>.tmp.<pid>`; the next successful write of the
// same file removes it, but never the temporary of a live process or of another file.
TEST(AtomicFile, TemporariesOfKilledWritersAreRemovedByTheNextWrite) {
  TempFolder folder_owner("abandoned");
  const std::string& folder = folder_owner.str();
  std::fflush(nullptr);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string dead = std::to_string(child), live = std::to_string(::getppid());
  const std::vector<std::string> leftovers = {"model.bin.tmp." + dead, "model.bin.tmp." + live,
                                              "other.bin.tmp." + dead, "model.bin.tmp.notapid"};
  for (const std::string& name : leftovers) {
    std::FILE* file = std::fopen((folder + "/" + name).c_str(), "wb");
    ASSERT_NE(file, nullptr) << name;
    std::fclose(file);
  }
  write_file_atomically(folder + "/model.bin", std::string("contents"));
  std::vector<std::string> names = list_folder(folder);
  std::sort(names.begin(), names.end());
  std::vector<std::string> expected = {"model.bin", "model.bin.tmp." + live, "model.bin.tmp.notapid",
                                       "other.bin.tmp." + dead};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
}

// A file size limit makes write(2) fail with EFBIG, as a full disk fails with ENOSPC.
// The limit is set in a child process (with SIGXFSZ ignored, so the failing write
// returns an error instead of killing it), which sends the error message back.
TEST(AtomicFile, FileSizeLimitGivesClearErrorAndKeepsOldFile) {
  TempFolder folder_owner("size_limit");
  const std::string& folder = folder_owner.str();
  std::string path = folder + "/big.bin";
  write_file_atomically(path, std::string("old contents"));

  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  std::fflush(nullptr);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_ends[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    // First one large write, then many small buffered writes whose errors the
    // writer ignores: both must be caught.
    std::string messages;
    int status = 0;
    try {
      write_file_atomically(path, std::string(1 << 20, 'x'));
      status = 1;
    } catch (const Error& e) {
      messages += std::string(e.what()) + "\n";
    }
    try {
      write_file_atomically(path, [](std::FILE* file) {
        for (int i = 0; i < 1000; ++i) std::fputs("0123456789012345678901234567890123456789", file);
      });
      status = 1;
    } catch (const Error& e) {
      messages += std::string(e.what()) + "\n";
    }
    ssize_t written = ::write(pipe_ends[1], messages.data(), messages.size());
    ::_exit(written == ssize_t(messages.size()) ? status : 4);
  }
  ::close(pipe_ends[1]);
  std::string output;
  char buffer[512];
  ssize_t n;
  while ((n = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0) output.append(buffer, size_t(n));
  ::close(pipe_ends[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0) << "child messages: " << output;
  std::vector<std::string> messages;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) messages.push_back(line);
  ASSERT_EQ(messages.size(), 2u) << output;
  for (const std::string& message : messages) {
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  }
  EXPECT_EQ(read_raw(path), "old contents");
  EXPECT_EQ(list_folder(folder), std::vector<std::string>{"big.bin"});
}

}  // namespace
