# What `cmake --install` puts where, and how other projects find it:
# pkg-config's vmstack.pc, the CMake package vmstackConfig.cmake (targets
# vmstack::vmstack and vmstack::vmstack_static, from an install or from a
# build tree) and the man pages.  Included at the end of
# the top-level CMakeLists.txt, after the targets exist.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VMS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vmstack)

install(TARGETS vmstack vmstack_static EXPORT vmstackTargets
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS vmstack_tool)
# 'vmstack run' finds the preload library next to itself (build tree) or here.
install(TARGETS vmstack_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/vmstack)
install(FILES include/vmstack.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Man pages file by file: a directory install would also create the
# directories of docs/ that hold no man page (docs/plots), empty.
file(GLOB VMS_MAN1 ${PROJECT_SOURCE_DIR}/docs/*.1)
file(GLOB VMS_MAN3 ${PROJECT_SOURCE_DIR}/docs/*.3)
install(FILES ${VMS_MAN1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${VMS_MAN3} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)

# pkg-config: the shared library names its dependencies itself; a static
# link needs them (and, through their own .pc files, zlib, liblzma, bzip2).
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set(VMS_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
else()
  set(VMS_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
  set(VMS_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
else()
  set(VMS_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/vmstack.pc.in ${CMAKE_CURRENT_BINARY_DIR}/vmstack.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vmstack.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The CMake package, installed and for the build tree (vmstack_DIR=BUILD).
install(EXPORT vmstackTargets NAMESPACE vmstack:: DESTINATION ${VMS_CMAKE_DIR})
export(EXPORT vmstackTargets NAMESPACE vmstack:: FILE ${CMAKE_CURRENT_BINARY_DIR}/vmstackTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vmstackConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/vmstackConfig.cmake INSTALL_DESTINATION ${VMS_CMAKE_DIR})
# 0.x: a new minor version may change the interface.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vmstackConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vmstackConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/vmstackConfigVersion.cmake
        DESTINATION ${VMS_CMAKE_DIR})
