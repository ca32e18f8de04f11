#!/usr/bin/env python3
"""Print the build outputs that a selection of CTest tests runs.

    scripts/test_targets.py [--tests-file FILE] BUILD_DIR [ctest selection arguments...]

Used by `make sanitize`: the sanitizer build compiles only what the chosen tests
execute (their programs, and those of the fixtures they require), not the whole
tree.  Needs a configured Ninja build directory; prints nothing (and exits 3)
for any other generator, so the caller builds everything instead.

--tests-file FILE writes the chosen tests and the fixture set-ups they require
as a `ctest -I FILE` list.  CTest's own -E also drops a set-up the selection
excludes (checkpoint.save_p1.np1 for checkpoint.load_p1.np2 when -E drops the
1-rank runs), so `make sanitize` runs the tests through this list.
"""
import json
import os
import re
import subprocess
import sys


def ctest_json(build_dir, args):
    out = subprocess.run(["ctest", "--show-only=json-v1", *args], cwd=build_dir,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def prop(test, name):
    for p in test.get("properties", []):
        if p["name"] == name:
            v = p["value"]
            return v if isinstance(v, list) else [v]
    return []


def main():
    args = sys.argv[1:]
    tests_file = None
    if len(args) >= 2 and args[0] == "--tests-file":
        tests_file, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__)
    build_dir = os.path.abspath(args[0])
    chosen = ctest_json(build_dir, args[1:])
    everything = ctest_json(build_dir, [])

    # Fixtures: a chosen test's FIXTURES_REQUIRED pulls in the tests that set them up.
    needed = set()
    for t in chosen:
        needed.update(prop(t, "FIXTURES_REQUIRED"))
    tests = list(chosen) + [t for t in everything if needed & set(prop(t, "FIXTURES_SETUP"))]
    if tests_file:
        names = {t["name"] for t in tests}
        numbers = [str(i + 1) for i, t in enumerate(everything) if t["name"] in names]
        with open(tests_file, "w", encoding="utf-8") as f:
            f.write("0,0,0," + ",".join(numbers) + "\n")
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        sys.exit(3)

    targets = subprocess.run(["ninja", "-C", build_dir, "-t", "targets", "all"], check=True,
                             capture_output=True, text=True).stdout
    outputs = {line.split(":", 1)[0] for line in targets.splitlines() if ":" in line}

    # CTest leaves out the command of a test whose program is not built yet; the
    # add_test lines of the CTestTestfile.cmake files still name it.
    declared = {}
    for root, _, files in os.walk(build_dir):
        if "CTestTestfile.cmake" in files:
            with open(os.path.join(root, "CTestTestfile.cmake"), encoding="utf-8") as f:
                for m in re.finditer(r"^add_test\(\[=\[(.*?)\]=\] (.*)\)$", f.read(), re.M):
                    declared[m.group(1)] = [m.group(2)]

    path = re.compile(re.escape(build_dir + "/") + r"([^\s\"']+)")
    wanted = set()
    for t in tests:
        for arg in t.get("command") or declared.get(t["name"], []):
            for m in path.finditer(arg):
                rel = m.group(1)
                if rel in outputs:
                    wanted.add(rel)
    print("\n".join(sorted(wanted)))


if __name__ == "__main__":
    main()
