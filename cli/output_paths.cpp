// Checking a command's outputs before its work, and locking their folders.
#include "cli/output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/error.h"

namespace vitune::cli {

namespace fs = std::filesystem;

namespace {

// The folder a file output lands in ("." for a bare file name).
fs::path folder_of(const std::string& file) {
  const fs::path parent = fs::path(file).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
}

// Creates `folder` when missing and proves it writable by creating a file in it. The
// file is unnamed (O_TMPFILE) where the filesystem allows, so that a run killed at this
// moment leaves nothing behind; elsewhere it is a named file removed at once.
void prepare_folder(const std::string& flag, const fs::path& folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  VITUNE_CHECK(!error, flag, ": cannot create the folder ", folder.string(), ": ", error.message());
  VITUNE_CHECK(fs::is_directory(folder), flag, ": ", folder.string(), " is a file, expected a folder");
  int fd = -1;
#ifdef O_TMPFILE
  fd = ::open(folder.c_str(), O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
  const bool unsupported = fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL);
#else
  const bool unsupported = true;
#endif
  if (fd < 0 && unsupported) {
    const std::string probe = (folder / (".vitune-probe." + std::to_string(::getpid()))).string();
    fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) ::unlink(probe.c_str());
  }
  VITUNE_CHECK(fd >= 0, flag, ": cannot write in the folder ", folder.string(), ": ", std::strerror(errno));
  ::close(fd);
}

}  // namespace

void OutputFlags::add_to(CLI::App& command) {
  command.add_flag("--overwrite", overwrite, "Replace outputs that exist already (without it they are refused)");
  command.add_flag("--no-lock", no_lock,
                   "Write without taking the output folders' lock, when the caller guarantees that concurrent "
                   "writers use different files (as the shards of a sweep do)");
}

CommandOutputs& CommandOutputs::input(const std::string& path) {
  if (!path.empty()) inputs_.push_back(path);
  return *this;
}

CommandOutputs& CommandOutputs::file(const std::string& flag, const std::string& path, bool continued) {
  if (!path.empty()) outputs_.push_back({flag, path, continued, false});
  return *this;
}

CommandOutputs& CommandOutputs::folder(const std::string& flag, const std::string& path) {
  outputs_.push_back({flag, path, false, true});
  return *this;
}

void CommandOutputs::check_not_input(const Output& output) const {
  for (const std::string& input : inputs_) {
    VITUNE_CHECK(!same_file(output.path, input), output.flag, ": ", output.path,
                 " is also an input of this command; write the output elsewhere");
  }
}

void CommandOutputs::check_new(const Output& output) const {
  if (flags_.overwrite || output.continued) return;
  if (output.is_folder) {
    // Empty subfolders (the command's own, made above) and locks are not files.
    const bool empty = std::all_of(
        fs::recursive_directory_iterator(output.path), fs::recursive_directory_iterator(),
        [](const fs::directory_entry& e) { return e.is_directory() || e.path().filename() == kLockFileName; });
    VITUNE_CHECK(empty, output.flag, ": the folder ", output.path,
                 " holds files already; pass --overwrite to replace them, or choose another folder");
    return;
  }
  VITUNE_CHECK(!fs::exists(output.path), output.flag, ": ", output.path,
               " already exists; pass --overwrite to replace it, or choose another path");
}

void CommandOutputs::check_and_lock() {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Output& output = outputs_[i];
    if (!output.is_folder) {
      VITUNE_CHECK(!fs::is_directory(output.path), output.flag, ": ", output.path,
                   " is a folder, expected a file path");
      check_not_input(output);
    }
    for (size_t j = 0; j < i; ++j) {
      VITUNE_CHECK(outputs_[j].is_folder || output.is_folder || !same_file(outputs_[j].path, output.path),
                   outputs_[j].flag, " and ", output.flag, " both name ", output.path, "; give each its own file");
    }
  }
  std::vector<fs::path> folders;
  for (const Output& output : outputs_) {
    const fs::path folder = output.is_folder ? fs::path(output.path) : folder_of(output.path);
    prepare_folder(output.flag, folder);
    const fs::path canonical = fs::canonical(folder);
    if (std::find(folders.begin(), folders.end(), canonical) == folders.end()) folders.push_back(canonical);
  }
  if (!flags_.no_lock) {
    for (const fs::path& folder : folders) locks_.push_back(std::make_unique<FolderLock>(folder.string()));
  }
  for (const Output& output : outputs_) check_new(output);
}

void print_wrote(const std::string& what, const std::string& path) {
  std::printf("wrote %s %s\n", what.c_str(), path.c_str());
}

}  // namespace vitune::cli
