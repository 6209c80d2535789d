# install(EXPORT ...) so that find_package(pathlift) works for downstream projects.
# Components: `development` (library, headers, CMake package), `cli` (the pathlift program) and
# `python` (python/CMakeLists.txt); `cmake --install <build> --component development` installs
# what a C++ consumer needs and nothing else.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS pathlift EXPORT pathliftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY include/pathlift DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/include/pathlift/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pathlift COMPONENT development)
install(EXPORT pathliftTargets NAMESPACE pathlift:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pathlift
        COMPONENT development)
configure_package_config_file(cmake/pathliftConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/pathliftConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pathlift)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/pathliftConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pathliftConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/pathliftConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pathlift COMPONENT development)
if(TARGET pathlift_cli)
  install(TARGETS pathlift_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
endif()
