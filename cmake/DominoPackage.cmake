# The CMake package a LibTorch project consumes with find_package(Domino).
include(CMakePackageConfigHelpers)
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
