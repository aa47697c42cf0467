// Registration of every subcommand on the command-line app.
#pragma once

#include <CLI/CLI.hpp>

namespace vitune::cli {

void register_commands(CLI::App& app);

}  // namespace vitune::cli
