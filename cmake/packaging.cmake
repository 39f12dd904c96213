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

# The Python tools that drive an installed locus-bench: locus-demo (every mechanism side by
# side) and locus-reproduce (the seed figures). Their package goes under the data directory,
# every module of it (the DSM tools' and memcached benchmarks' too, and the server module the
# seed 003 figures start their servers with); each script finds it, and the locus-bench beside
# it, relative to its own place. Drawing needs matplotlib in the python3 that runs them.
# (tools/dsm-suite and bench/kv-memcaslap, and their kin, run from a source tree.)
set(LOCUS_PYDIR ${CMAKE_INSTALL_DATADIR}/locus/python)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/locus_tools DESTINATION ${LOCUS_PYDIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(RELATIVE_PATH LOCUS_TOOL_PYDIR_REL "/${CMAKE_INSTALL_BINDIR}" "/${LOCUS_PYDIR}")
foreach(tool "locus-demo|demo|demo|Every locus mechanism side by side on this machine"
             "locus-reproduce|cli|reproduce|Reproduces the seed documents' figures on this machine")
  string(REPLACE "|" ";" tool "${tool}")
  list(GET tool 0 LOCUS_TOOL_NAME)
  list(GET tool 1 LOCUS_TOOL_MODULE)
  list(GET tool 2 LOCUS_TOOL_SOURCE)
  list(GET tool 3 LOCUS_TOOL_DOC)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/locus-tool.py.in
                 ${PROJECT_BINARY_DIR}/tools/${LOCUS_TOOL_NAME} @ONLY)
  install(PROGRAMS ${PROJECT_BINARY_DIR}/tools/${LOCUS_TOOL_NAME}
          DESTINATION ${CMAKE_INSTALL_BINDIR})
endforeach()
