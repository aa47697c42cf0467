// Atomic file replacement: temporary file, checked writes, fsync, rename, folder fsync,
// and the removal of temporaries that killed writers left behind.
#include "engine/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/error.h"

namespace vitune {

namespace {

std::string parent_folder(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string reason(int error) { return error ? std::strerror(error) : "write error"; }

// Makes the rename itself durable. Some file systems cannot sync a folder and say so
// with EINVAL; the file's own bytes are already synced then, so that is not an error.
void sync_folder(const std::string& path) {
  std::string folder = parent_folder(path);
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(cat("wrote '", path, "' but cannot open its folder '", folder, "' to sync it: ",
                    std::strerror(errno)));
  }
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (rc != 0 && error != EINVAL) {
    throw Error(cat("wrote '", path, "' but cannot sync its folder '", folder, "': ",
                    std::strerror(error)));
  }
}

// The temporary files of `path` that earlier writers left when they were killed
// mid-write: `<name>.tmp.<pid>` next to it whose process no longer exists.
void remove_abandoned_temporaries(const std::string& path) {
  remove_abandoned_files(parent_folder(path), path.substr(path.find_last_of('/') + 1) + ".tmp.");
}

}  // namespace

void remove_abandoned_files(const std::string& folder, const std::string& prefix) {
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::stol(digits));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) ::unlink((folder + "/" + name).c_str());
  }
  ::closedir(dir);
}

void write_file_atomically(const std::string& path, const std::function<void(std::FILE*)>& write) {
  VITUNE_CHECK(!path.empty(), "cannot write a file with an empty path");
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* file = std::fopen(temp.c_str(), "wbe");
  if (file == nullptr) {
    throw Error(cat("cannot write '", path, "': cannot create the temporary file '", temp, "': ",
                    std::strerror(errno)));
  }
  // Removes the temporary file and reports why `path` could not be written.
  auto discard_and_throw = [&](const std::string& step, int error) {
    if (file != nullptr) std::fclose(file);
    ::unlink(temp.c_str());
    throw Error(cat("cannot write '", path, "': ", step, ": ", reason(error)));
  };

  try {
    errno = 0;
    write(file);
  } catch (...) {
    std::fclose(file);
    ::unlink(temp.c_str());
    throw;
  }
  int write_error = errno;
  if (std::ferror(file)) discard_and_throw("writing the temporary file '" + temp + "' failed", write_error);
  if (std::fflush(file) != 0) discard_and_throw("flushing the temporary file '" + temp + "' failed", errno);
  if (::fsync(::fileno(file)) != 0) discard_and_throw("syncing the temporary file '" + temp + "' failed", errno);
  int close_result = std::fclose(file);
  file = nullptr;
  if (close_result != 0) discard_and_throw("closing the temporary file '" + temp + "' failed", errno);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    discard_and_throw("renaming the temporary file '" + temp + "' into place failed", errno);
  }
  sync_folder(path);
  remove_abandoned_temporaries(path);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  write_file_atomically(path, [&](std::FILE* file) {
    if (bytes.empty()) return;
    if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
      throw Error(cat("cannot write '", path, "': ", reason(errno)));
    }
  });
}

}  // namespace vitune
