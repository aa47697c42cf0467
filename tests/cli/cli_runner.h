// Runs the built vitune binary with arguments and captures its exit status and output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace vitune::testing {

struct CliResult {
  int status;          // exit status, -1 if it did not exit normally
  std::string output;  // stdout and stderr together
};

inline CliResult run_vitune(const std::string& arguments) {
  std::string command = std::string(VITUNE_BINARY_DIR) + "/cli/vitune " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace vitune::testing
