// The `vitune` command: one subcommand per job, each registered by its own file.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/flag_checks.h"
#include "cli/commands.h"
#include "engine/error.h"
#include "engine/parallel.h"

int main(int argc, char** argv) {
  CLI::App app{"vitune: ViT finetuning research tools on a from-scratch tensor engine"};
  app.set_version_flag("--version", "vitune 0.1.0");
  app.require_subcommand(1);
  app.add_option_function<int>("--threads", [](int n) { vitune::set_num_threads(n); },
                               "Worker threads (default: VITUNE_NUM_THREADS, else all cores); results are "
                               "bit-identical for any count")
      ->check(vitune::cli::integer_in(1, 1024));
  vitune::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vitune: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
