# cmake -P script behind the consumer.find_package test. Variables (all -D):
#   MPIDICT_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR, BUILD_TYPE,
#   C_COMPILER, CXX_COMPILER, MPIEXEC, MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS
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
message(STATUS "consumer: OK")
