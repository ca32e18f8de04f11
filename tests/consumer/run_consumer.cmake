# cmake -P script behind the consumer.find_package test. Variables (all -D):
#   MPIDICT_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR, BUILD_TYPE,
#   C_COMPILER, CXX_COMPILER, MPIEXEC, MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS,
#   EXAMPLES_DIR, MPI_C_WRAPPER, MPI_CXX_WRAPPER, PKG_CONFIG (may be empty),
#   PYTHON (empty when the build has no Python module)
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  message(STATUS "consumer: ${what}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${what} failed (${rc})")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(config_args)
if(BUILD_TYPE)
  set(config_args --config "${BUILD_TYPE}")
endif()

run_step("install" "${CMAKE_COMMAND}" --install "${MPIDICT_BUILD_DIR}"
         --prefix "${prefix}" ${config_args})

run_step("configure" "${CMAKE_COMMAND}"
         -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
         "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
         "-DCMAKE_C_COMPILER=${C_COMPILER}"
         "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
         "-DCMAKE_PREFIX_PATH=${prefix}"
         "-DEXAMPLES_DIR=${EXAMPLES_DIR}"
         # Only the install may satisfy find_package(mpidict), not the build tree
         # or a user package registry.
         -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)

run_step("build" "${CMAKE_COMMAND}" --build "${build}" ${config_args})

separate_arguments(preflags UNIX_COMMAND "${MPIEXEC_PREFLAGS}")
set(exe "${build}/mpidict_consumer")
if(NOT EXISTS "${exe}")  # multi-config generators
  set(exe "${build}/${BUILD_TYPE}/mpidict_consumer")
endif()
run_step("run" "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 ${preflags} ${exe})
foreach(example word_count bfs_frontier visited_set)
  set(example_exe "${build}/consumer_${example}")
  if(NOT EXISTS "${example_exe}")
    set(example_exe "${build}/${BUILD_TYPE}/consumer_${example}")
  endif()
  run_step("run ${example}" "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 ${preflags} ${example_exe})
endforeach()

# Without CMake: the MPI wrappers and pkg-config, as a C or Makefile user would.
if(PKG_CONFIG AND MPI_C_WRAPPER AND MPI_CXX_WRAPPER)
  file(GLOB_RECURSE pc_files "${prefix}/*/mpidict-c.pc")
  list(GET pc_files 0 pc_file)
  get_filename_component(pc_dir "${pc_file}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  foreach(package mpidict mpidict-c)
    execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs ${package}
                    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "consumer: pkg-config ${package} failed (${rc})")
    endif()
    message(STATUS "consumer: pkg-config --cflags --libs ${package}: ${flags}")
    separate_arguments(flags_${package} UNIX_COMMAND "${flags}")
  endforeach()
  run_step("mpicc + pkg-config mpidict-c" "${MPI_C_WRAPPER}" -std=c99 "${EXAMPLES_DIR}/c_api_scatter.c"
           -o "${WORK_DIR}/pc_c_api_scatter" ${flags_mpidict-c})
  run_step("run pc_c_api_scatter" "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 ${preflags} "${WORK_DIR}/pc_c_api_scatter")
  run_step("mpicxx + pkg-config mpidict" "${MPI_CXX_WRAPPER}" -std=c++20 "${EXAMPLES_DIR}/word_count.cpp"
           -o "${WORK_DIR}/pc_word_count" ${flags_mpidict})
  run_step("run pc_word_count" "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 ${preflags} "${WORK_DIR}/pc_word_count")
else()
  message(STATUS "consumer: pkg-config steps skipped (pkg-config '${PKG_CONFIG}', mpicc '${MPI_C_WRAPPER}', "
                 "mpicxx '${MPI_CXX_WRAPPER}')")
endif()
# The Python package as `cmake --install` left it: a whole package in
# <prefix>/lib/pythonX.Y/site-packages, not a bare _core module (issue 49, item 8).
if(PYTHON)
  file(GLOB init_files "${prefix}/*/python*/site-packages/mpidict/__init__.py")
  if(NOT init_files)
    message(FATAL_ERROR "consumer: the install has no <prefix>/lib/pythonX.Y/site-packages/mpidict/__init__.py")
  endif()
  list(GET init_files 0 init_file)
  get_filename_component(package_dir "${init_file}" DIRECTORY)
  get_filename_component(site_dir "${package_dir}" DIRECTORY)
  run_step("python from the install" "${CMAKE_COMMAND}" -E env "PYTHONPATH=${site_dir}"
           "${MPIEXEC}" ${MPIEXEC_NUMPROC_FLAG} 2 ${preflags} "${PYTHON}" -c
           "import mpidict, numpy as np; assert mpidict.__file__.startswith('${site_dir}'), mpidict.__file__; m = mpidict.hash_map('int64', 'int64'); m.insert_many(np.arange(10), np.arange(10)); m.flush(); assert m.global_size() == 10; m.destroy()")
else()
  message(STATUS "consumer: Python step skipped (no Python module in this build)")
endif()
message(STATUS "consumer: OK")
