#!/usr/bin/env bash
# Builds SimGrid 4.1 (SMPI: smpicc, smpicxx, smpirun) from the source
# distribution PyPI serves, for scripts/simulate.sh --simgrid PREFIX
# (docs/scaling.md, "SimGrid 4.1").  Debian 12 ships SimGrid 3.32, whose list
# of detached sends made the skip list's 64-rank and hash_map's 1024-rank runs
# unsimulable; 4.1 keeps them in a set.
#
#   scripts/simgrid/build_simgrid.sh [PREFIX]      default PREFIX: build-simgrid/4.1
#   scripts/simgrid/build_simgrid.sh --configure-only [PREFIX]
#
# Needs: pip (a Python with network access to PyPI), cmake, ninja, a C++17
# compiler and Boost's headers (Debian's libboost-dev, installed when run as
# root).  About 330 build steps: some 25 minutes on two idle cores.
# SimGrid 4.1 is built without model checking, Python, Fortran and its
# documentation; its programs find libsimgrid through LD_LIBRARY_PATH, which
# scripts/simulate.sh --simgrid sets (the install sets no rpath).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version=4.1
configure_only=no
if [[ "${1:-}" == "--configure-only" ]]; then
  configure_only=yes
  shift
fi
prefix="${1:-$root/build-simgrid/$version}"
work="$root/build-simgrid/src"

if [[ ! -f /usr/include/boost/version.hpp ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get > /dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libboost-dev
  else
    echo "build_simgrid.sh: Boost's headers are missing; install Debian's libboost-dev" >&2
    exit 1
  fi
fi
for tool in cmake ninja; do
  command -v "$tool" > /dev/null || { echo "build_simgrid.sh: $tool is missing" >&2; exit 1; }
done

mkdir -p "$work"
if [[ ! -d "$work/simgrid-$version" ]]; then
  python3 -m pip download "simgrid==$version" --no-deps --no-binary :all: -d "$work"
  tar -xzf "$work/simgrid-$version.tar.gz" -C "$work"
fi

cd "$work"  # SimGrid's configure leaves a test program (test_stackgrowth) in the working directory
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$work/simgrid-$version" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -Denable_model-checking=OFF -Denable_python=OFF \
  -Denable_fortran=OFF -Denable_lto=OFF -Denable_documentation=OFF -Denable_smpi=ON \
  -Denable_compile_optimizations=ON "${launcher[@]}" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; exit 1; }
if [[ $configure_only == yes ]]; then
  echo "build_simgrid.sh: configured in $work/build (log: $work/configure.log)"
  exit 0
fi
cmake --build "$work/build"
cmake --install "$work/build" > /dev/null
echo "build_simgrid.sh: SimGrid $version in $prefix; run scripts/simulate.sh --simgrid $prefix ..."
