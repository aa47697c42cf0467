// The output folder lock: made whole in a private file, then linked into place.
#include "cli/folder_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "engine/atomic_file.h"
#include "engine/error.h"

namespace vitune::cli {

namespace {

// This process's command line, its words separated by spaces.
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string words((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!words.empty() && words.back() == '\0') words.pop_back();
  for (char& c : words) c = c == '\0' ? ' ' : c;
  return words.empty() ? "vitune" : words;
}

struct Holder {
  long pid = 0;  // 0 when the file could not be read
  std::string command;
};

Holder read_holder(const std::string& path) {
  std::ifstream in(path);
  Holder holder;
  std::string line;
  if (std::getline(in, line)) {
    std::istringstream(line) >> holder.pid;
    std::getline(in, holder.command);
  }
  return holder;
}

bool alive(long pid) { return ::kill(pid_t(pid), 0) == 0 || errno == EPERM; }

void write_whole(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  VITUNE_CHECK(fd >= 0, path, ": cannot create the lock file: ", std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  const int saved = errno;
  ::close(fd);
  if (!written) {
    ::unlink(path.c_str());
    throw Error(cat(path, ": cannot write the lock file: ", std::strerror(saved)));
  }
}

}  // namespace

// The lock is written whole into `<lock>.<pid>`, then linked into place. A process
// killed between the two leaves its private file; the next taker removes such files of
// processes that are gone.
FolderLock::FolderLock(const std::string& folder)
    : path_((std::filesystem::path(folder) / kLockFileName).string()) {
  remove_abandoned_files(folder, std::string(kLockFileName) + ".");
  const std::string mine = path_ + "." + std::to_string(::getpid());
  write_whole(mine, std::to_string(::getpid()) + "\n" + own_command_line() + "\n");
  for (int attempt = 0;; ++attempt) {
    if (::link(mine.c_str(), path_.c_str()) == 0) break;
    const int error = errno;
    if (error != EEXIST || attempt == 3) {
      ::unlink(mine.c_str());
      throw Error(cat(path_, ": cannot take the output folder's lock: ", std::strerror(error)));
    }
    const Holder holder = read_holder(path_);
    if (holder.pid > 0 && alive(holder.pid)) {
      ::unlink(mine.c_str());
      throw Error(cat(folder, ": another vitune process is writing to this folder (pid ", holder.pid, ": ",
                      holder.command, "); wait for it to end or write elsewhere (its lock is ", path_, ")"));
    }
    ::unlink(path_.c_str());  // stale: its process is gone
  }
  ::unlink(mine.c_str());
}

FolderLock::~FolderLock() { ::unlink(path_.c_str()); }

}  // namespace vitune::cli
