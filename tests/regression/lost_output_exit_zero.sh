#!/bin/sh
# Regression (issue 18, item 4): `mpidict hash --json > /dev/full` exited 0 with
# every JSON line lost.  A program whose standard output cannot be written must
# exit non-zero and say so on standard error.  Run as a singleton (no mpiexec),
# as in the report: under mpiexec the launcher forwards the output and fails
# itself (MPICH's hydra exits 255).
#   lost_output_exit_zero.sh PROGRAM ARGS...
set -u
if [ ! -w /dev/full ]; then
  echo "lost_output_exit_zero: /dev/full is not available here" >&2
  exit 0
fi
messages=$("$@" 2>&1 >/dev/full)
status=$?
echo "$messages"
if [ "$status" -eq 0 ]; then
  echo "FAIL: exit status 0 although standard output was lost" >&2
  exit 1
fi
if ! printf '%s\n' "$messages" | grep -q "could not write its standard output"; then
  echo "FAIL: no message about the lost output" >&2
  exit 1
fi
echo "PASS: exit status $status and the message"
