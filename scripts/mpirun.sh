#!/usr/bin/env bash
# Launch an MPI program with the flags this MPI needs on a small machine:
#   scripts/mpirun.sh -n 4 build/tools/mpidict hash --keys 200000 --pattern nn
# Open MPI: adds --oversubscribe (more ranks than cores) and, as root,
# --allow-run-as-root. MPICH (Hydra) needs neither. MPIEXEC=... overrides the launcher.
set -euo pipefail

mpiexec_bin="${MPIEXEC:-mpiexec}"
if ! command -v "$mpiexec_bin" >/dev/null 2>&1; then
  echo "mpirun.sh: '$mpiexec_bin' not found; run 'make deps' (or scripts/install_deps.sh)" >&2
  exit 127
fi

version="$("$mpiexec_bin" --version 2>&1 || true)"
extra=()
if grep -qE 'Open MPI|OpenRTE|Open RTE|PRRTE' <<<"$version"; then
  extra+=(--oversubscribe)
  if [ "$(id -u)" -eq 0 ]; then
    extra+=(--allow-run-as-root)
  fi
fi

exec "$mpiexec_bin" "${extra[@]}" "$@"
