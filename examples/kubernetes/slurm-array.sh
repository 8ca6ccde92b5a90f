#!/usr/bin/env bash
# N array tasks over one run, on a cluster whose nodes reach the team's Postgres.
#
#   RUN_ID=$(oloproof run . --detach)            # once, from the login node
#   sbatch --array=0-7 --export=ALL,RUN_ID=$RUN_ID examples/kubernetes/slurm-array.sh
#
# Every task claims batches of cases until none is left; the last one to finish records the
# summary. A task that is preempted or killed loses only its cases in flight: they go to the
# other tasks once its lease expires (requeued tasks simply join again).
#SBATCH --job-name=oloproof
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --requeue
set -euo pipefail
: "${RUN_ID:?set RUN_ID to the id printed by oloproof run --detach}"
# The password from a file only you can read (never on the command line, never in the URL).
PGPASSWORD=$(cat "$HOME/.oloproof-db-password")
export PGPASSWORD
tasks=${SLURM_ARRAY_TASK_COUNT:-1}
cd "${SLURM_SUBMIT_DIR:-.}"
exec oloproof worker --run "$RUN_ID" --workers "${SLURM_CPUS_PER_TASK:-8}" --share "$tasks" --lease 300
