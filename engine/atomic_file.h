// Writing a file so that it is either fully replaced or left as it was: the bytes go
// to a temporary file in the same folder, which is flushed to disk and then renamed
// over the target. Used for checkpoints, masks and results.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace vitune {

// Calls `write` with a stream open on a temporary file next to `path`, then makes that
// file `path`. Any failure (a throwing `write`, a write error such as a full disk, a
// failed flush, sync or rename) throws vitune::Error naming the file and the reason,
// removes the temporary file and leaves any previous file at `path` untouched. After a
// successful write, temporary files of `path` left by writers that were killed (their
// process is gone) are removed.
void write_file_atomically(const std::string& path, const std::function<void(std::FILE*)>& write);

// Replaces the file at `path` with `bytes`, as above.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Removes the files `<prefix><pid>` in `folder` whose process no longer exists: what a
// process killed in the middle of writing them left. A live process's file is never
// touched. Best effort: a file that cannot be listed or removed stays.
void remove_abandoned_files(const std::string& folder, const std::string& prefix);

}  // namespace vitune
