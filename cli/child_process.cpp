// Child vitune processes through posix_spawn of /proc/self/exe, with the output
// redirected to a log file by the spawn's file actions.
#include "cli/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/error.h"

extern char** environ;

namespace vitune::cli {
namespace {

std::string own_executable() {
  std::vector<char> path(4096);
  ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  VITUNE_CHECK(n > 0, "cannot find the vitune executable through /proc/self/exe: ", std::strerror(errno));
  return std::string(path.data(), size_t(n));
}

}  // namespace

ChildProcess start_vitune(const std::vector<std::string>& args, const std::string& name, const std::string& log_path) {
  const std::string exe = own_executable();
  std::vector<std::string> argv_text{exe};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ChildProcess child{-1, name, log_path};
  int rc = ::posix_spawn(&child.pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  VITUNE_CHECK(rc == 0, "cannot start ", name, " (", command_line(args), "): ", std::strerror(rc));
  return child;
}

namespace {

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

// waitpid, retried when a signal interrupts it.
pid_t wait_pid(pid_t pid, int& status) {
  pid_t got;
  do {
    got = ::waitpid(pid, &status, 0);
  } while (got < 0 && errno == EINTR);
  return got;
}

}  // namespace

int wait_for(const ChildProcess& child) {
  int status = 0;
  VITUNE_CHECK(wait_pid(child.pid, status) == child.pid, "waiting for ", child.name, " failed: ", std::strerror(errno));
  return exit_code(status);
}

std::pair<ChildProcess, int> wait_for_any(std::vector<ChildProcess>& running) {
  VITUNE_CHECK(!running.empty(), "wait_for_any: no child is running");
  for (;;) {
    int status = 0;
    const pid_t got = wait_pid(-1, status);
    VITUNE_CHECK(got > 0, "waiting for ", running.front().name, " failed: ", std::strerror(errno));
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].pid != got) continue;
      ChildProcess child = running[i];
      running.erase(running.begin() + long(i));
      return {child, exit_code(status)};
    }
  }
}

std::string command_line(const std::vector<std::string>& args) {
  std::string out = "vitune";
  for (const std::string& a : args) {
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,") ==
                                   std::string::npos;
    if (plain) {
      out += " " + a;
      continue;
    }
    out += " '";
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += "'";
  }
  return out;
}

}  // namespace vitune::cli
