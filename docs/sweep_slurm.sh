#!/bin/bash
# A sample Slurm array job for a vitune sweep: each array task runs one shard of the
# plan (the runs whose index % shards == task id), one finetune after the other on one
# core. Plan first, from the folder you submit from (the plan's paths are relative to it):
#
#   vitune sweep plan --model M --data D --eval-data E --out sweep --threads-per-run 1
#   sbatch docs/sweep_slurm.sh                       # 16 shards of the plan
#   sbatch --dependency=afterany:<job id> --wrap "vitune sweep report --plan sweep/plan.json"
#
# A task that dies (time limit, node failure) loses only its current run: submit the
# array again and every finished run is skipped. The array must be 0 .. n-1; keep
# --cpus-per-task equal to the plan's --threads-per-run.
#SBATCH --job-name=vitune-sweep
#SBATCH --array=0-15
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=08:00:00
#SBATCH --output=vitune-sweep-%A_%a.log
set -euo pipefail

plan=${PLAN:-sweep/plan.json}
vitune=${VITUNE:-vitune}
shards=${SLURM_ARRAY_TASK_COUNT:-$((SLURM_ARRAY_TASK_MAX - SLURM_ARRAY_TASK_MIN + 1))}

exec "$vitune" sweep run --plan "$plan" --shard "${SLURM_ARRAY_TASK_ID}/${shards}"
