# What `make install` (cmake --install) puts where, and the files that let
# other projects find it: locus.pc and locus-dsm.pc for pkg-config, and a
# CMake package (find_package(locus CONFIG): locus::locus, locus::dsm, ...).
# Only the plain build installs; sanitizer builds are for the tests.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/locus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/locus/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/locus)

# pkg-config: relocatable (prefix is found from the .pc file's own place).
file(RELATIVE_PATH LOCUS_PC_PREFIX_REL "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" LOCUS_PC_PREFIX_REL "${LOCUS_PC_PREFIX_REL}")
set(LOCUS_PC_LIBS_PRIVATE "")
set(LOCUS_STATIC_EXTRA_LIBS "")
if(LOCUS_STM)
  set(LOCUS_PC_LIBS_PRIVATE "-litm")
  set(LOCUS_STATIC_EXTRA_LIBS "itm")
endif()
find_package(PkgConfig QUIET)
set(LOCUS_PC_DSM_REQUIRES "")
if(PKG_CONFIG_FOUND)
  pkg_check_modules(LOCUS_MPICH_PC QUIET mpich)
  if(LOCUS_MPICH_PC_FOUND)
    set(LOCUS_PC_DSM_REQUIRES "mpich")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/locus.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/locus.pc
               @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/locus-dsm.pc.in
               ${PROJECT_BINARY_DIR}/pkgconfig/locus-dsm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/locus.pc ${PROJECT_BINARY_DIR}/pkgconfig/locus-dsm.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The CMake package.
set(LOCUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/locus)
install(EXPORT locusTargets NAMESPACE locus:: DESTINATION ${LOCUS_CMAKE_DIR})
install(EXPORT locusDsmTargets NAMESPACE locus:: DESTINATION ${LOCUS_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/locusConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/locusConfig.cmake
                              INSTALL_DESTINATION ${LOCUS_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/locusConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/locusConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/locusConfigVersion.cmake
        DESTINATION ${LOCUS_CMAKE_DIR})

# Man pages, by section (chosen at install time, so a new page needs no reconfigure).
foreach(section 1 3 7)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section}
          FILES_MATCHING PATTERN "*.${section}")
endforeach()

# Documentation and the examples, as sources to read and build.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
              ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
