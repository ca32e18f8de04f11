#!/usr/bin/env bash
# Builds the libFuzzer targets -- the message decoder and the hash_map handlers
# (tests/fuzz/message_fuzz.cpp), and the text parsers of the flights control port
# and the checkpoint manifest (tests/fuzz/parsers_fuzz.cpp) -- with
# -fsanitize=fuzzer,address,undefined and the library instrumented, and runs
# each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]         default 60 in all (two thirds for the messages,
#                                     one third for the parsers); non-zero on any finding
#
# FUZZ_TARGETS (default "message parsers") chooses which run.
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (parallel fuzzing
# processes, default 1), FUZZ_ARGS (extra libFuzzer flags, e.g. -max_len=4096),
# FUZZ_CORPUS (working corpus directory, default $FUZZ_BUILD_DIR/corpus). The
# seeds (tests/fuzz/seeds.cpp, built from the record layouts the containers use)
# are written into $FUZZ_BUILD_DIR/seeds first and read but never written.
#
# Needs clang and libFuzzer (Debian: apt-get install clang libclang-rt-14-dev, or
# `scripts/install_deps.sh --fuzz`).  Without clang, the plain driver still runs
# the corpus under g++: ctest -R fuzz.message_decoder (and `make sanitize`).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
jobs="${FUZZ_JOBS:-1}"
corpus="${FUZZ_CORPUS:-$build/corpus}"

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ not found; install it with: scripts/install_deps.sh --fuzz" >&2
  echo "fuzz.sh: (apt-get install clang libclang-rt-dev); the g++ driver runs in ctest -R fuzz.message_decoder" >&2
  exit 2
fi

start=$(date +%s)
if [ ! -f "$build/CMakeCache.txt" ]; then
  gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  CC=clang CXX=clang++ cmake -S tests/fuzz -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
targets="${FUZZ_TARGETS:-message parsers}"
# shellcheck disable=SC2086
cmake --build "$build" $(printf -- '--target fuzz_%s ' $targets) -j"$(nproc 2>/dev/null || echo 2)"
built=$(date +%s)
echo "fuzz.sh: build took $((built - start)) s; fuzzing for ${seconds} s"

mkdir -p "$build/findings"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
parallel=()
# libFuzzer's -jobs writes fuzz-N.log files into the current directory.
[ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
status=0
for target in $targets; do
  case "$target" in
    message) share=$(( seconds * 2 / 3 )); [ "$targets" = message ] && share=$seconds
             target_corpus="$corpus"; extra=() ;;
    parsers) share=$(( seconds / 3 )); [ "$targets" = parsers ] && share=$seconds
             target_corpus="$corpus-parsers"; extra=(tests/fuzz/corpus/parsers) ;;
    *) echo "fuzz.sh: unknown target $target (message, parsers)" >&2; exit 2 ;;
  esac
  [ "$share" -ge 1 ] || share=1
  mkdir -p "$target_corpus"
  rm -rf "$build/seeds-$target"
  MPIDICT_FUZZ_WRITE_SEEDS="$build/seeds-$target" "$build/fuzz_$target" -runs=0 >/dev/null 2>&1
  [ -n "$(ls -A "$build/seeds-$target" 2>/dev/null)" ] || {
    echo "fuzz.sh: writing the seeds of $target into $build/seeds-$target failed" >&2; exit 1; }
  echo "fuzz.sh: fuzz_$target for $share s"
  # shellcheck disable=SC2086
  "$build/fuzz_$target" "$target_corpus" "$build/seeds-$target" "${extra[@]}" \
    -max_total_time="$share" -max_len=$([ "$target" = parsers ] && echo 8192 || echo 2048) -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 "${parallel[@]}" -print_final_stats=1 \
    -artifact_prefix="$build/findings/$target-" ${FUZZ_ARGS:-} || status=$?
done
echo "fuzz.sh: finished in $(( $(date +%s) - start )) s (build $((built - start)) s); exit status $status"
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: a finding is in $build/findings/; replay it with: $build/fuzz_<target> <file>" >&2
fi
exit "$status"
