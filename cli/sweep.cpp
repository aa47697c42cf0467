// `vitune sweep`: component-wise finetuning sweeps. `plan` writes the grid and every
// run's finetune command to a plan file; `run` runs one shard of it, each run a child
// vitune process, skipping finished runs; `report` aggregates the finished runs into
// tables, statistics and charts; `extend` adds the learning rates beyond the grid's
// edge where a component's best rate was.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/child_process.h"
#include "cli/commands.h"
#include "cli/output_paths.h"
#include "cli/flag_checks.h"
#include "cli/plots.h"
#include "engine/atomic_file.h"
#include "engine/error.h"
#include "peft/sweep_plan.h"
#include "peft/sweep_report.h"

namespace vitune::cli {

namespace {

namespace fs = std::filesystem;

struct PlanOptions {
  peft::SweepGrid grid;
  peft::SweepSettings settings;
  std::string out;
  OutputFlags output;
};

// Extra arguments go to finetune unchanged; each flag among them must be one of its flags.
void check_extra_args(const std::vector<std::string>& extras, const CLI::App& finetune) {
  for (const std::string& arg : extras) {
    if (arg.rfind("--", 0) != 0) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    VITUNE_CHECK(flag != "--lrs" && flag != "--adamw-lr-factor", "sweep plan: ", flag,
                 " is replaced by one grid per optimizer: --sgd-lrs and --adamw-lrs");
    VITUNE_CHECK(finetune.get_option_no_throw(flag) != nullptr, "sweep plan: '", flag,
                 "' is neither a sweep plan flag nor a finetune flag");
  }
}

void write_plan(const PlanOptions& options) {
  peft::SweepPlan plan = peft::make_sweep_plan(options.grid, options.settings, options.out);
  const std::string path = (fs::path(options.out) / "plan.json").string();
  CommandOutputs outputs(options.output);
  outputs.file("--out", path, true).check_and_lock();  // an existing plan: checked below
  if (fs::exists(path)) {
    // The same plan again is fine, with the rates `sweep extend` added to it kept.
    const peft::SweepPlan existing = peft::load_sweep_plan(path);
    bool same = true;
    try {
      for (const peft::SweepExtension& e : existing.extensions) peft::extend_sweep_plan(plan, e);
    } catch (const Error&) {
      same = false;  // the new grid has a rate the old plan added as an extension
    }
    VITUNE_CHECK(same && peft::sweep_plan_json(existing) == peft::sweep_plan_json(plan), path,
                 " already holds a different plan, and the finished runs under ",
                 (fs::path(options.out) / "runs").string(),
                 " belong to it; plan into another folder (or remove this one) to start a new sweep");
  }
  fs::create_directories(fs::path(options.out) / "runs");
  peft::save_sweep_plan(plan, path);
  print_wrote("plan", path);
  std::string rates;
  for (const std::string& optimizer : plan.grid.optimizers) {
    rates += cat(rates.empty() ? "" : " + ", plan.grid.lrs(optimizer).size(), " ", optimizer);
  }
  std::printf("sweep plan: %zu runs (%zu components x (%s) learning rates x %zu seeds%s) in %s\n", plan.runs.size(),
              plan.grid.components.size(), rates.c_str(), plan.grid.seeds.size(),
              plan.extensions.empty() ? "" : cat(", and ", plan.extensions.size(), " extensions").c_str(),
              path.c_str());
  std::printf("run it with `vitune sweep run --plan %s --shard i/n` for i = 0 .. n-1, one shard per core or job\n",
              path.c_str());
}

void run_shard(const std::string& plan_path, const std::string& shard_text) {
  const peft::SweepPlan plan = peft::load_sweep_plan(plan_path);
  const auto [shard, shards] = peft::parse_shard(shard_text);
  const std::vector<size_t> mine = peft::shard_run_indices(plan.runs.size(), shard, shards);
  std::printf("sweep run: shard %d/%d, %zu of the plan's %zu runs\n", shard, shards, mine.size(), plan.runs.size());
  std::fflush(stdout);
  size_t skipped = 0, succeeded = 0;
  std::vector<std::string> failed;
  for (size_t k = 0; k < mine.size(); ++k) {
    const peft::SweepRun& run = plan.runs[mine[k]];
    const std::string name = cat("[", k + 1, "/", mine.size(), "] ", run.id);
    if (peft::run_finished(run)) {
      std::printf("%s: finished earlier, skipped\n", name.c_str());
      std::fflush(stdout);
      ++skipped;
      continue;
    }
    std::printf("%s: started\n", name.c_str());
    std::fflush(stdout);
    const auto start = std::chrono::steady_clock::now();
    fs::create_directories(fs::path(run.output).parent_path());
    // Shards share the runs folder, each run its own files; a run not finished is redone.
    std::vector<std::string> args = run.args;
    args.insert(args.end(), {"--overwrite", "--no-lock"});
    const int status = wait_for(start_vitune(args, run.id, run.output));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string outcome;
    if (status == 0 && peft::run_finished(run)) {
      try {
        char accuracy[32];
        std::snprintf(accuracy, sizeof accuracy, "top-1 %.2f%%", 100 * peft::read_run_accuracy(run.results));
        outcome = accuracy;
        ++succeeded;
      } catch (const Error& e) {
        outcome = cat("FAILED: ", e.what());
        failed.push_back(run.id);
      }
    } else {
      outcome = status == 0 ? cat("FAILED: it wrote no results file ", run.results)
                            : cat("FAILED with exit status ", status);
      failed.push_back(run.id);
    }
    std::printf("%s: %s in %.0f s (output in %s)\n", name.c_str(), outcome.c_str(), seconds, run.output.c_str());
    std::fflush(stdout);
  }
  std::printf("sweep run: shard %d/%d done: %zu ran, %zu skipped, %zu failed\n", shard, shards, succeeded, skipped,
              failed.size());
  if (!failed.empty()) {
    std::string ids;
    for (const std::string& id : failed) ids += (ids.empty() ? "" : ", ") + id;
    throw Error(cat("sweep run: ", failed.size(), " of ", mine.size(), " runs of shard ", shard, "/", shards,
                    " failed (", ids, "); their .out files say why, and running the shard again retries them"));
  }
}

struct ReportOptions {
  std::string plan, out, probe;
  OutputFlags output;
};

void write_report(const ReportOptions& options) {
  const peft::SweepPlan plan = peft::load_sweep_plan(options.plan);
  const std::string out = options.out.empty() ? (fs::path(plan.dir) / "report").string() : options.out;
  const std::string json = (fs::path(out) / "report.json").string(), markdown = (fs::path(out) / "report.md").string();
  CommandOutputs outputs(options.output);
  outputs.input(options.plan).input(options.probe).file("--out", json).file("--out", markdown).check_and_lock();
  std::optional<peft::ProbeBaseline> probe;
  if (!options.probe.empty()) probe = peft::read_probe_baseline(options.probe, plan.settings);
  const peft::SweepReport report = peft::build_sweep_report(plan, probe);
  write_file_atomically(json, peft::sweep_report_json(report).dump(2) + "\n");
  write_file_atomically(markdown, peft::sweep_report_markdown(report));
  std::printf("sweep report: %zu of %zu runs finished\n", report.finished, report.planned);
  print_wrote("report", json);
  print_wrote("report", markdown);
  for (const std::string& chart : write_sweep_charts(report, out)) print_wrote("chart", chart);
  for (const peft::ComponentSummary& s : report.summaries) {
    if (s.best >= 0 && s.position != peft::BestPosition::Inside) {
      std::printf("sweep report: WARNING %s\n", peft::edge_warning(s).c_str());
    }
  }
}

// Adds a rate a factor of 3 beyond the edge of each component's grid where its best was.
void extend_plan(const std::string& plan_path, const OutputFlags& flags) {
  CommandOutputs outputs(flags);
  outputs.file("--plan", plan_path, true).check_and_lock();
  peft::SweepPlan plan = peft::load_sweep_plan(plan_path);
  const peft::SweepReport report = peft::build_sweep_report(plan);
  if (report.finished < report.planned) {
    std::printf("sweep extend: %zu of %zu runs are not finished; the edges are judged on the finished ones\n",
                report.planned - report.finished, report.planned);
  }
  const std::vector<peft::SweepExtension> extensions = peft::sweep_extensions(report);
  for (const peft::SweepExtension& e : extensions) {
    peft::extend_sweep_plan(plan, e);
    std::printf("sweep extend: %s with %s: added learning rate %s (%zu runs)\n", e.component.c_str(),
                e.optimizer.c_str(), peft::number_text(e.lr).c_str(), plan.grid.seeds.size());
  }
  if (extensions.empty()) {
    std::printf("sweep extend: no best learning rate is at its grid's edge; the plan is unchanged\n");
    return;
  }
  peft::save_sweep_plan(plan, plan_path);
  print_wrote("plan", plan_path);
  std::printf("run the shards again: only the %zu new runs run, the finished ones are skipped\n",
              extensions.size() * plan.grid.seeds.size());
}

void add_plan_command(CLI::App& sweep, const CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* plan = sweep.add_subcommand(
      "plan", "Write the sweep's plan: every run of components x optimizers x learning rates x seeds; further "
              "arguments are passed to every finetune");
  peft::SweepSettings& s = options->settings;
  peft::SweepGrid& g = options->grid;
  plan->add_option("--model", s.model, "Pretrained checkpoint to finetune")->required();
  plan->add_option("--data", s.data, "Training data spec")->required();
  plan->add_option("--eval-data", s.eval_data, "Evaluation data spec; the report compares its top-1")->required();
  plan->add_option("--out", options->out, "The sweep's folder: plan.json, runs/ and report/")->required();
  plan->add_option("--components", g.components, "Comma list of ln1, mha, ln2, fc1, fc2, emb, all, head")
      ->delimiter(',')
      ->capture_default_str();
  plan->add_option("--optimizers", g.optimizers, "Comma list of sgd, adamw")->delimiter(',')->capture_default_str();
  plan->add_option("--sgd-lrs", g.sgd_lrs, "Comma list of SGD's learning rates")
      ->check(positive_number())
      ->delimiter(',')
      ->capture_default_str();
  plan->add_option("--adamw-lrs", g.adamw_lrs, "Comma list of AdamW's learning rates")
      ->check(positive_number())
      ->delimiter(',')
      ->capture_default_str();
  plan->add_option("--seeds", g.seeds, "Comma list of seeds")
      ->check(seed_value())
      ->delimiter(',')
      ->capture_default_str();
  plan->add_option("--steps", s.steps, "Optimizer steps per run (overrides --epochs)")
      ->check(integer_from(0))
      ->capture_default_str();
  plan->add_option("--epochs", s.epochs, "Epochs per run when --steps is 0")
      ->check(number_from(0))
      ->capture_default_str();
  plan->add_option("--warmup-steps", s.warmup_steps, "Linear warmup steps of the cosine schedule")
      ->check(integer_from(0))
      ->capture_default_str();
  plan->add_option("--batch-size", s.batch_size, "Training batch size")->check(integer_from(1))->capture_default_str();
  plan->add_option("--clip", s.clip_norm, "Gradient clipping to this global norm (0: off)")
      ->check(number_from(0))
      ->capture_default_str();
  plan->add_option("--momentum", s.momentum, "SGD momentum")->check(number_in(0.0, 1.0))->capture_default_str();
  plan->add_option("--weight-decay", s.weight_decay, "Weight decay of both optimizers")
      ->check(number_from(0))
      ->capture_default_str();
  plan->add_option("--schedule", s.schedule, "Learning-rate schedule")->capture_default_str();
  plan->add_option("--log-every", s.log_every, "Steps between log lines (the report's curves)")
      ->check(integer_from(0))
      ->capture_default_str();
  plan->add_option("--threads-per-run", s.threads_per_run, "Worker threads of each finetune")
      ->check(integer_in(1, 1024))
      ->capture_default_str();
  options->output.add_to(*plan);
  plan->allow_extras();
  plan->callback([options, plan, &app] {
    options->settings.extra_args = plan->remaining();
    check_extra_args(options->settings.extra_args, *app.get_subcommand("finetune"));
    write_plan(*options);
  });
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  CLI::App* sweep = app.add_subcommand("sweep", "Component-wise finetuning sweeps: plan, run (in shards), report");
  sweep->require_subcommand(1);
  add_plan_command(*sweep, app);

  auto plan_path = std::make_shared<std::string>();
  auto shard = std::make_shared<std::string>("0/1");
  CLI::App* run = sweep->add_subcommand(
      "run", "Run shard i of n of a plan (the runs with index % n == i), one after the other; finished runs are "
             "skipped");
  run->add_option("--plan", *plan_path, "The plan.json that `sweep plan` wrote")->required();
  run->add_option("--shard", *shard, "i/n")->capture_default_str();
  run->callback([plan_path, shard] { run_shard(*plan_path, *shard); });

  auto report_options = std::make_shared<ReportOptions>();
  CLI::App* report = sweep->add_subcommand("report", "Tables, statistics and charts of the finished runs of a plan");
  report->add_option("--plan", report_options->plan, "The plan.json that `sweep plan` wrote")->required();
  report->add_option("--out", report_options->out,
                     "Folder for report.json, report.md and the charts (default: <sweep>/report)");
  report->add_option("--probe", report_options->probe,
                     "Results of `vitune probe` on the sweep's model and data: every top-1 also as a gain over it");
  report_options->output.add_to(*report);
  report->callback([report_options] { write_report(*report_options); });

  auto extend_path = std::make_shared<std::string>();
  auto extend_flags = std::make_shared<OutputFlags>();
  CLI::App* extend = sweep->add_subcommand(
      "extend", "Add a learning rate a factor of 3 beyond the grid's edge for each component whose best rate is "
                "there; run the shards again to run only the new runs");
  extend->add_option("--plan", *extend_path, "The plan.json that `sweep plan` wrote")->required();
  extend_flags->add_to(*extend);
  extend->callback([extend_path, extend_flags] { extend_plan(*extend_path, *extend_flags); });
}

}  // namespace vitune::cli
