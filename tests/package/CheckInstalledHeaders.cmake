# installed_headers_compile_alone (cmake/DominoPackage.cmake): installs the build at BUILD_DIR
# into a scratch prefix, then builds this folder's project against that prefix alone, so that a
# header which includes a project header left out of the install fails to compile.
set(prefix ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                RESULT_VARIABLE failed OUTPUT_QUIET)
if(failed)
  message(FATAL_ERROR "installing ${BUILD_DIR} into ${prefix} failed")
endif()
# The prefix is kept between runs, so that unchanged headers keep their times and are not
# compiled again; what this install did not write (a header it no longer installs) goes.
file(STRINGS ${BUILD_DIR}/install_manifest.txt written)
file(GLOB_RECURSE present LIST_DIRECTORIES false ${prefix}/*)
list(REMOVE_ITEM present ${written})
if(present)
  file(REMOVE ${present})
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}
          -DDomino_DIR=${prefix}/${PACKAGE_DIR} -DTorch_DIR=${Torch_DIR}
          -DDOMINO_INCLUDE_DIR=${prefix}/${INCLUDE_DIR}
  RESULT_VARIABLE failed OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(failed)
  message(FATAL_ERROR "configuring ${CONSUMER_DIR} against ${prefix} failed:\n${out}")
endif()

# Every header is tried, so that the failure lists all that do not compile alone.
if(GENERATOR MATCHES "Ninja")
  set(keep_going -k 0)
else()
  set(keep_going -k)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build -- ${keep_going}
                RESULT_VARIABLE failed OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(failed)
  message(FATAL_ERROR "an installed header does not compile alone against ${prefix} and "
                      "torch (does it include a project header that is not installed?):\n${out}")
endif()
message(STATUS "every header under ${prefix}/${INCLUDE_DIR} compiles alone")
