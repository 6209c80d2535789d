# install(EXPORT ...) so that find_package(pathlift) works for downstream projects.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS pathlift EXPORT pathliftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/pathlift DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/pathlift/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pathlift)
install(EXPORT pathliftTargets NAMESPACE pathlift:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pathlift)
configure_package_config_file(cmake/pathliftConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/pathliftConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pathlift)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/pathliftConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pathliftConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/pathliftConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pathlift)
if(TARGET pathlift_cli)
  install(TARGETS pathlift_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
