// The lock of an output folder: `<folder>/.vitune.lock` holds the pid and the command
// line of the one vitune process writing there, so a second concurrent writer is refused
// with a message naming the first. The file is made with link(2), which fails when it
// exists, so its content is always whole; a lock whose process is gone (a run that was
// killed) is stale and taken over.
#pragma once

#include <string>

namespace vitune::cli {

class FolderLock {
 public:
  // Takes the lock of `folder` (which exists) for this process; throws vitune::Error
  // naming the holding process (pid and command) when a live one holds it.
  explicit FolderLock(const std::string& folder);
  ~FolderLock();  // removes the lock file
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The lock file's name in every locked folder.
inline constexpr const char* kLockFileName = ".vitune.lock";

}  // namespace vitune::cli
