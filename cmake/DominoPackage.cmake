# The CMake package a LibTorch project consumes with find_package(Domino).
include(CMakePackageConfigHelpers)
include(DominoHeaderClosure)

# The headers a C++ user includes: the backend, its handles and lane guard, the transport plugin
# ABI, and the Domino layers. Whatever they include from this project is installed with them.
file(GLOB DOMINO_OVERLAP_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/overlap/*.h)
domino_header_closure(DOMINO_INSTALLED_HEADERS
  HEADERS
    ${PROJECT_SOURCE_DIR}/backend/ProcessGroupDomino.h
    ${PROJECT_SOURCE_DIR}/backend/Work.h
    ${PROJECT_SOURCE_DIR}/backend/HandleScope.h
    ${PROJECT_SOURCE_DIR}/backend/PriorityGuard.h
    ${PROJECT_SOURCE_DIR}/plugins/abi/domino/plugin.h
    ${DOMINO_OVERLAP_HEADERS}
  # The build's include directories, as the installed ones (<include> and <include>/domino).
  ROOTS
    ${DOMINO_GENERATED_INCLUDE} .
    ${PROJECT_SOURCE_DIR}/plugins/abi .
    ${PROJECT_SOURCE_DIR}/backend domino
    ${PROJECT_SOURCE_DIR} .)
foreach(entry IN LISTS DOMINO_INSTALLED_HEADERS)
  string(REPLACE "|" ";" entry "${entry}")
  list(GET entry 0 source)
  list(GET entry 1 installed)
  file(REAL_PATH "${source}" source)
  cmake_path(GET installed PARENT_PATH below)
  install(FILES ${source} DESTINATION ${DOMINO_INSTALL_INCLUDEDIR}/${below})
endforeach()

install(TARGETS domino domino_overlap domino_plugin_abi
  EXPORT DominoTargets
  LIBRARY DESTINATION ${DOMINO_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${DOMINO_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${DOMINO_INSTALL_INCLUDEDIR})
set_target_properties(domino_plugin_abi PROPERTIES EXPORT_NAME plugin_abi)
install(EXPORT DominoTargets NAMESPACE Domino:: DESTINATION ${DOMINO_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/DominoConfig.cmake.in
  ${PROJECT_BINARY_DIR}/DominoConfig.cmake
  INSTALL_DESTINATION ${DOMINO_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/DominoConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/DominoConfig.cmake ${PROJECT_BINARY_DIR}/DominoConfigVersion.cmake
  DESTINATION ${DOMINO_INSTALL_CMAKEDIR})

if(DOMINO_BUILD_TESTS)
  # Installs the package to a scratch prefix and compiles each installed header alone in a
  # project that sees only the install and torch: a header that includes one left out fails.
  add_test(NAME installed_headers_compile_alone
    COMMAND ${CMAKE_COMMAND}
      -DBUILD_DIR=${PROJECT_BINARY_DIR}
      -DWORK_DIR=${PROJECT_BINARY_DIR}/installed-headers-check
      -DCONSUMER_DIR=${PROJECT_SOURCE_DIR}/tests/package
      -DINCLUDE_DIR=${DOMINO_INSTALL_INCLUDEDIR}
      -DPACKAGE_DIR=${DOMINO_INSTALL_CMAKEDIR}
      -DTorch_DIR=${Torch_DIR}
      -DGENERATOR=${CMAKE_GENERATOR}
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DCXX_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
      -P ${PROJECT_SOURCE_DIR}/tests/package/CheckInstalledHeaders.cmake)
  set_tests_properties(installed_headers_compile_alone PROPERTIES TIMEOUT 1200)
endif()
