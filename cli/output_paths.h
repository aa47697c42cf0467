// A command's outputs, checked before it loads data or trains, so that no run is lost
// at its end to a path it cannot write: each output's folder is created when missing and
// must be writable, no output may be one of the command's inputs or another output, and
// an existing file is kept unless --overwrite is given. Every folder written to is then
// locked (cli/folder_lock.h) until the command ends.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/folder_lock.h"

namespace vitune::cli {

struct OutputFlags {
  bool overwrite = false;
  bool no_lock = false;

  // Adds --overwrite and --no-lock to `command`.
  void add_to(CLI::App& command);
};

class CommandOutputs {
 public:
  explicit CommandOutputs(OutputFlags flags) : flags_(flags) {}

  // A file the command reads; no output may be it. Ignored when empty.
  CommandOutputs& input(const std::string& path);
  // A file written for `flag`; ignored when empty. A `continued` file may exist already:
  // the command continues it (a checkpoint and log with --resume).
  CommandOutputs& file(const std::string& flag, const std::string& path, bool continued = false);
  // A folder the command fills with files of its own; one that holds files already (in
  // it or in its subfolders) is refused unless --overwrite is given.
  CommandOutputs& folder(const std::string& flag, const std::string& path);

  // Creates the folders, checks every output and takes the locks; throws vitune::Error
  // naming the flag, the path and what was expected. The locks are held until this
  // object is destroyed.
  void check_and_lock();

 private:
  struct Output {
    std::string flag;
    std::string path;
    bool continued;
    bool is_folder;
  };
  void check_not_input(const Output& output) const;
  void check_new(const Output& output) const;

  OutputFlags flags_;
  std::vector<std::string> inputs_;
  std::vector<Output> outputs_;
  std::vector<std::unique_ptr<FolderLock>> locks_;
};

// Prints where a command wrote one of its outputs: "wrote model runs/ft/model.safetensors".
void print_wrote(const std::string& what, const std::string& path);

}  // namespace vitune::cli
