// Runs vitune subcommands as child processes of the same executable: the sweep and the
// demo run their finetunes this way, so each run is an ordinary, separately logged and
// separately restartable `vitune` invocation, and several run side by side on the cores.
#pragma once
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace vitune::cli {

struct ChildProcess {
  pid_t pid = -1;
  std::string name;      // what the parent calls it in messages
  std::string log_path;  // the child's stdout and stderr
};

// Starts `vitune <args...>` with stdout and stderr appended to log_path.
ChildProcess start_vitune(const std::vector<std::string>& args, const std::string& name, const std::string& log_path);

// Waits for the child; returns its exit status, or 128 + the signal that ended it.
int wait_for(const ChildProcess& child);

// Waits for whichever of `running` ends first, removes it from the list and returns it
// with its status (as wait_for). `running` must not be empty.
std::pair<ChildProcess, int> wait_for_any(std::vector<ChildProcess>& running);

// The command line as one shell-quoted string, for logs and error messages.
std::string command_line(const std::vector<std::string>& args);

}  // namespace vitune::cli
