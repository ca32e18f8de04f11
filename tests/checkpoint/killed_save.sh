#!/usr/bin/env bash
# A save killed part way leaves the previous checkpoint loadable; the next save
# cleans up after it; `mpidict inspect` tells an intact checkpoint from a
# damaged one.  Run by CTest as
#   killed_save.sh MPIDICT DIR LAUNCHER...      (LAUNCHER: mpiexec -n N ...)
set -u
tool=$1
dir=$2
shift 2
launch=("$@")
fail() { echo "FAIL: $*" >&2; exit 1; }
run_hash() { "${launch[@]}" "$tool" hash --keys 6000 --latency-samples 10 "$@"; }

rm -rf "$dir"
run_hash --seed 1 --save "$dir" >/dev/null || fail "the first save failed"
[ -f "$dir/manifest.json" ] || fail "no manifest after the first save"

# Every rank exits (status 86) right after writing its first chunk of data.
MPIDICT_CHECKPOINT_FAULT=exit-during-write run_hash --seed 2 --save "$dir" >/dev/null 2>&1 &&
  fail "the save that was killed part way exited 0"
ls "$dir"/data-* | grep -q 'data-2' || fail "the killed save wrote no data (was it killed before writing?)"

# The first checkpoint is intact and loads, at another rank count too.
"$tool" inspect "$dir" || fail "inspect rejects the previous checkpoint after a killed save"
run_hash --seed 1 --load "$dir" | grep -q 'verified: yes' || fail "the previous checkpoint does not load after a killed save"
run_hash --seed 2 --load "$dir" >/dev/null 2>&1 && fail "the killed save's data was loaded (its seed verified)"

# The next complete save replaces it and removes what the killed one left.
run_hash --seed 3 --save "$dir" >/dev/null || fail "the save after a killed one failed"
files=$(ls "$dir" | grep -c '^data-')
[ "$files" = 1 ] || fail "$files data files after a complete save (expected 1): $(ls "$dir")"
run_hash --seed 3 --load "$dir" | grep -q 'verified: yes' || fail "the replacing checkpoint does not load"

# A flipped byte: inspect names the damage and exits 1.
data=$(ls "$dir"/data-* | head -n 1)
printf '\x55' | dd of="$data" bs=1 seek=17 conv=notrunc status=none
out=$("$tool" inspect "$dir" 2>&1) && fail "inspect accepted a damaged checkpoint"
echo "$out" | grep -q 'is corrupt' || fail "inspect did not say the checkpoint is corrupt: $out"
echo "PASS"
