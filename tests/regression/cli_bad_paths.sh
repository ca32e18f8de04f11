#!/bin/sh
# Regression (issue 48, items 12 and 13): `mpidict hash --save ""`, `--load ""`
# and `ycsb --dump-keys ""` exited 0 having done nothing, without a word;
# `ycsb --dump-keys FIFO` hung every rank; `ycsb --workload /etc` said
# "recordcount=0 is out of range" and `--workload /dev/zero` grew without end.
# Each must now end every rank non-zero within seconds, naming the problem.
#   cli_bad_paths.sh MPIDICT_CLI MPIEXEC NP [PREFLAGS...]
set -u
cli=$1; mpiexec=$2; np=$3; shift 3
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mpidict-badpaths.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failures=0
workload="$scratch/workload"
printf 'recordcount=200\noperationcount=300\nreadproportion=0.5\nupdateproportion=0.5\nfieldcount=2\nfieldlength=16\n' > "$workload"

# run WHAT MESSAGE ARGS...: every rank exits non-zero within 60 s and MESSAGE is printed.
run() {
  what=$1; message=$2; shift 2
  output=$(timeout 60 "$mpiexec" -n "$np" $PREFLAGS "$cli" "$@" 2>&1 </dev/null)
  status=$?
  if [ "$status" -eq 124 ]; then
    echo "FAIL: $what: still running after 60 s"; failures=$((failures + 1)); return
  fi
  if [ "$status" -eq 0 ]; then
    echo "FAIL: $what: exit status 0"; failures=$((failures + 1))
  fi
  if ! printf '%s\n' "$output" | grep -qF -- "$message"; then
    echo "FAIL: $what: no '$message' in:"; printf '%s\n' "$output" | tail -5; failures=$((failures + 1))
  else
    echo "ok: $what (exit $status): $(printf '%s\n' "$output" | grep -F -- "$message" | head -1)"
  fi
}
PREFLAGS="$*"

run 'hash --save ""' '--save: the checkpoint directory name is empty' hash --keys 1000 --save ''
run 'hash --load ""' '--load: the checkpoint directory name is empty' hash --keys 1000 --load ''
run 'ycsb --dump-keys ""' '--dump-keys: the file name is empty' ycsb --workload "$workload" --dump-keys ''
mkfifo "$scratch/fifo"
run 'ycsb --dump-keys FIFO' 'FIFO (named pipe)' ycsb --workload "$workload" --dump-keys "$scratch/fifo"
run 'ycsb --workload /etc' '/etc is a directory' ycsb --workload /etc
run 'ycsb --workload FIFO' 'is a FIFO (named pipe)' ycsb --workload "$scratch/fifo"
if [ -r /dev/zero ]; then
  run 'ycsb --workload /dev/zero' 'too large for a workload file' ycsb --workload /dev/zero
fi
# The good workload still runs (the file above is sound).
output=$(timeout 120 "$mpiexec" -n "$np" $PREFLAGS "$cli" ycsb --workload "$workload" --dump-keys "$scratch/keys" 2>&1 </dev/null)
if [ $? -ne 0 ] || [ ! -s "$scratch/keys" ]; then
  echo "FAIL: the sound workload with --dump-keys FILE"; printf '%s\n' "$output" | tail -5; failures=$((failures + 1))
else
  echo "ok: the sound workload runs and dumps its keys"
fi
if [ "$failures" -ne 0 ]; then
  echo "cli_bad_paths: $failures failed"
  exit 1
fi
echo "cli_bad_paths: PASS"
