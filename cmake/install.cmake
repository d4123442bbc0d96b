# SPDX-License-Identifier: MIT
# What `cmake --install` puts where, and how other projects find it:
# pkg-config's vmstack.pc, the CMake package vmstackConfig.cmake (targets
# vmstack::vmstack and vmstack::vmstack_static, from an install or from a
# build tree), the man pages and the gdb extension.  Included at the end
# of the top-level CMakeLists.txt, after the targets exist.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VMS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vmstack)

install(TARGETS vmstack vmstack_static EXPORT vmstackTargets
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS vmstack_tool)
# bash completion, where bash-completion looks for it by the command's name.
install(FILES tools/completion/vmstack.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME vmstack)
# 'vmstack run' finds the preload library next to itself (build tree) or here.
install(TARGETS vmstack_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/vmstack)
install(FILES include/vmstack.h include/vmstack.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Man pages file by file: a directory install would also create the
# directories of docs/ that hold no man page (docs/plots), empty.
file(GLOB VMS_MAN1 ${PROJECT_SOURCE_DIR}/docs/*.1)
# vmstack(3), and one page per function generated from the header (scripts/man3.py).
file(GLOB VMS_MAN3 ${PROJECT_SOURCE_DIR}/docs/*.3 ${PROJECT_SOURCE_DIR}/docs/man3/*.3)
install(FILES ${VMS_MAN1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${VMS_MAN3} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)

# The gdb extension.  gdb loads OBJFILE-gdb.py for a shared library it
# loads, from its auto-load directory mirrored by the library's real path
# (as libstdc++'s pretty printers are installed); a program linked with
# libvmstack.a `source`s the copy in the data directory.  In the build tree
# the copy beside libvmstack.so.N.N.N loads once the build directory is an
# auto-load safe path.
set(VMS_GDB_SCRIPT ${PROJECT_SOURCE_DIR}/gdb/vmstack-gdb.py)
set(VMS_SO_FILE libvmstack.so.${PROJECT_VERSION})
install(FILES ${VMS_GDB_SCRIPT} DESTINATION ${CMAKE_INSTALL_DATADIR}/vmstack)
# The library's real path is known only at install time (--prefix).
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set(VMS_LIBDIR_AT_INSTALL ${CMAKE_INSTALL_LIBDIR})
else()
  set(VMS_LIBDIR_AT_INSTALL "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
endif()
install(CODE "
  set(dir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/gdb/auto-load${VMS_LIBDIR_AT_INSTALL}\")
  file(INSTALL \"${VMS_GDB_SCRIPT}\" DESTINATION \"\${dir}\" RENAME ${VMS_SO_FILE}-gdb.py)")
configure_file(${VMS_GDB_SCRIPT} ${CMAKE_CURRENT_BINARY_DIR}/${VMS_SO_FILE}-gdb.py COPYONLY)


# pkg-config: the shared library names its dependencies itself; a static
# link needs them (and, through their own .pc files, zlib, liblzma, bzip2).
# The prefix is the one `cmake --install` is given (--prefix, or the one
# configured), written into the file at install time: a prefix found from
# the file's own place (${pcfiledir}) would come out as
# lib/x86_64-linux-gnu/pkgconfig/../../.. in every flag it gives.
set(VMS_PC_PREFIX @VMS_INSTALL_PREFIX@)
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE ${CMAKE_INSTALL_${d}})
    set(VMS_PC_${d} ${CMAKE_INSTALL_${d}})
  else()
    set(VMS_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/vmstack.pc.in ${CMAKE_CURRENT_BINARY_DIR}/vmstack.pc.in @ONLY)
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR})
  set(VMS_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
else()
  set(VMS_PC_DIR "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
install(CODE "
  file(READ \"${CMAKE_CURRENT_BINARY_DIR}/vmstack.pc.in\" pc)
  string(REPLACE \"@VMS_INSTALL_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" pc \"\${pc}\")
  file(WRITE \"${CMAKE_CURRENT_BINARY_DIR}/pc/vmstack.pc\" \"\${pc}\")
  file(INSTALL \"${CMAKE_CURRENT_BINARY_DIR}/pc/vmstack.pc\" DESTINATION \"${VMS_PC_DIR}\")")

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
