#!/usr/bin/env bash
# The repository stands alone and its tests cannot vanish unseen (issue 41).
#
#   scripts/check_test_count.sh [BUILD_DIR]           check (BUILD_DIR default: build)
#   scripts/check_test_count.sh --paths-only          only the first check (no build needed)
#   scripts/check_test_count.sh --update [BUILD_DIR]  rewrite tests/registered_tests.txt
#
# 1. No tracked file may name a path beside the checkout (the data directory of
#    the machine the project started on): a user's clone has nothing there.
#    Everything the build, tests and docs use is in data/ or comes from a package
#    manager (data/README.md).
# 2. The tests BUILD_DIR registers (ctest --show-only, DISABLED ones included)
#    must be exactly those listed in tests/registered_tests.txt, the one checked
#    place of the expected count. A test whose input is missing is registered
#    DISABLED (cmake/MpidictData.cmake), so the list does not depend on the
#    machine; a test that disappears, or a new one, fails this check until the
#    list is refreshed on purpose with --update (commit the file with the change).
# Exit 0 when both hold, 1 otherwise (2 for usage errors). .ci/run runs it after
# configuring the full build and before the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
paths_only=0
build=build
for arg in "$@"; do
  case "$arg" in
    --update) update=1 ;;
    --paths-only) paths_only=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "check_test_count: unknown option $arg" >&2; exit 2 ;;
    *) build="$arg" ;;
  esac
done
list=tests/registered_tests.txt
status=0

# ---- 1. nothing names a path beside the checkout ---------------------------------
# The pattern is assembled so that this file does not match it: "..", "/" and
# the directory's name; and that name followed by "data" as separate quoted
# pieces, as Python's os.path.join and pathlib spell the same path.
outside='\.\./'"shared"'|"'"shared"'", *"data"|/ *"'"shared"'" */ *"data"'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits="$(git ls-files -z | xargs -0 grep -nIE "$outside" -- 2>/dev/null || true)"
else
  hits="$(grep -rnIE "$outside" --exclude-dir=.git --exclude-dir=.venv --exclude-dir='build*' . || true)"
fi
if [ -n "$hits" ]; then
  echo "check_test_count: FAIL: tracked files name a path outside the repository:" >&2
  echo "$hits" | head -n 40 >&2
  echo "  fix: put the data in data/ (with its source in data/README.md) or install it from a package" >&2
  echo "       manager in scripts/install_deps.sh, and point the file there" >&2
  status=1
else
  echo "check_test_count: no tracked file names a path outside the repository"
fi
[ "$paths_only" = 1 ] && exit $status

# ---- 2. the registered tests are the expected ones ------------------------------------
if [ ! -f "$build/CTestTestfile.cmake" ]; then
  echo "check_test_count: $build is not a configured build directory (run make build, or give BUILD_DIR)" >&2
  exit 2
fi
actual="$(mktemp)"
trap 'rm -f "$actual"' EXIT
# Names, and how many are DISABLED (listed by CTest as "Not Run (Disabled)").
disabled="$( (cd "$build" && ctest --show-only=json-v1) | python3 -c '
import json, sys
tests = json.load(sys.stdin)["tests"]
disabled = 0
with open(sys.argv[1], "w") as out:
    for test in sorted(tests, key=lambda t: t["name"]):
        out.write(test["name"] + "\n")
        if any(p["name"] == "DISABLED" and p["value"] for p in test.get("properties", [])):
            disabled += 1
print(disabled)' "$actual")"
count=$(wc -l < "$actual")

header="# The tests a full build registers (ctest -N; DISABLED ones included), one a line, sorted.
# Checked by scripts/check_test_count.sh (.ci/run). After adding or removing tests on purpose:
#   scripts/check_test_count.sh --update build     (then commit this file with the change)"
if [ "$update" = 1 ]; then
  { echo "$header"; cat "$actual"; } > "$list"   # no count line: the count is the list's length
  echo "check_test_count: wrote $list: $count tests ($disabled of them DISABLED in $build)"
  exit $status
fi

if [ ! -f "$list" ]; then
  echo "check_test_count: FAIL: $list is missing; make it with: scripts/check_test_count.sh --update $build" >&2
  exit 1
fi
expected_count=$(grep -vc '^#' "$list" || true)
echo "check_test_count: registered tests: $count in $build ($disabled DISABLED); expected: $expected_count ($list)"
missing="$(grep -v '^#' "$list" | LC_ALL=C sort | LC_ALL=C comm -23 - <(LC_ALL=C sort "$actual"))"
added="$(LC_ALL=C sort "$actual" | LC_ALL=C comm -13 <(grep -v '^#' "$list" | LC_ALL=C sort) -)"
if [ -n "$missing" ] || [ -n "$added" ]; then
  status=1
  echo "check_test_count: FAIL: the registered tests differ from $list (expected $expected_count, registered $count)" >&2
  if [ -n "$missing" ]; then
    echo "  expected but not registered ($(echo "$missing" | wc -l)):" >&2
    echo "$missing" | head -n 30 | sed 's/^/    /' >&2
  fi
  if [ -n "$added" ]; then
    echo "  registered but not expected ($(echo "$added" | wc -l)):" >&2
    echo "$added" | head -n 30 | sed 's/^/    /' >&2
  fi
  echo "  fix: a test that vanished because something is missing must be registered DISABLED instead" >&2
  echo "       (cmake/MpidictData.cmake), or its dependency installed by scripts/install_deps.sh;" >&2
  echo "       tests added or removed on purpose: scripts/check_test_count.sh --update $build, and commit $list" >&2
fi
exit $status
