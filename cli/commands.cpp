// The list of subcommands; each add_* lives in the file named after its command.
#include "cli/commands.h"

namespace vitune::cli {

void add_info_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_pretrain_command(CLI::App& app);
void add_finetune_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_anchor_command(CLI::App& app);
void add_select_command(CLI::App& app);
void add_compare_masks_command(CLI::App& app);
void add_delta_command(CLI::App& app);
void add_plasticity_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_demo_command(CLI::App& app);

void register_commands(CLI::App& app) {
  add_info_command(app);
  add_trace_command(app);
  add_pretrain_command(app);
  add_finetune_command(app);
  add_eval_command(app);
  add_anchor_command(app);
  add_select_command(app);
  add_compare_masks_command(app);
  add_delta_command(app);
  add_plasticity_command(app);
  add_sweep_command(app);
  add_probe_command(app);
  add_demo_command(app);
}

}  // namespace vitune::cli
