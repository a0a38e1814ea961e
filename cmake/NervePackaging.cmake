# Debian packages made by CPack's DEB generator, one per install component
# (`make package`, mk/package.mk; docs/packaging.md):
#
#   libnerve1        component lib        libnerve.so.1 (the SONAME) and its file
#   libnerve-dev     component dev        headers, libnerve.a, libnerve.so,
#                                         nerve.pc, the CMake package
#   libach-nerve0    component ach        libach.so.0: Ach's C API on nerve
#   libach-nerve-dev component ach-dev    ach.h, ach/*.h, libach.a, libach.so,
#                                         ach.pc, nerve::ach for find_package
#   nerve            component tools      the nerve command, nerve-cyclic, man
#                                         pages, bash and zsh completion
#   nerve-ach        component ach-tools  the nerve-ach command
#   nerve-ros2-dds   component ros2-dds   nerve-ros2-dds (the DDS data path of
#                                         `nerve ros2`, on Debian's Cyclone
#                                         DDS, libddsc0debian) and the DDS
#                                         configurations in share/nerve/dds
#   nerve-bridge     component bridge     nerve-bridge-rs, the data path of
#                                         `nerve bridge` (the Rust program
#                                         cargo built: NERVE_BRIDGE_RS)
#
# Included when NERVE_DEB_LAYOUT is ON. Configure with
# -DCMAKE_INSTALL_PREFIX=/usr so that GNUInstallDirs picks
# Debian's multiarch LIBDIR, and -DCMAKE_SKIP_INSTALL_RPATH=ON: the
# packaged programs find their libraries in the system directories.
# Dependencies on other packages come from dpkg-shlibdeps (SHLIBDEPS); those
# between nerve's own packages are declared here with the exact version.

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev tools)
if(TARGET ach)
    list(APPEND CPACK_COMPONENTS_ALL ach ach-dev)
    if(TARGET nerve_ach_tool)
        list(APPEND CPACK_COMPONENTS_ALL ach-tools)
    endif()
endif()
if(TARGET nerve_ros2_dds)
    list(APPEND CPACK_COMPONENTS_ALL ros2-dds)
endif()
# Cargo, not CMake, builds the Rust bridge (mk/rust.mk, rust-bridge-build);
# the package takes that file. It must exist when cpack runs, not before.
set(NERVE_BRIDGE_RS "" CACHE FILEPATH
    "nerve-bridge-rs built by cargo, for the package nerve-bridge (none: not made)")
if(NERVE_BRIDGE_RS)
    install(PROGRAMS ${NERVE_BRIDGE_RS} DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME nerve-bridge-rs COMPONENT bridge)
    # CPACK_STRIP_FILES strips what CMake built; this file it did not.
    install(CODE "execute_process(COMMAND \"${CMAKE_STRIP}\"
        \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/nerve-bridge-rs\"
        COMMAND_ERROR_IS_FATAL ANY)" COMPONENT bridge)
    install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/nerve-bridge.lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
        RENAME nerve-bridge COMPONENT bridge)
    list(APPEND CPACK_COMPONENTS_ALL bridge)
endif()
set(CPACK_PACKAGE_NAME nerve)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the nerve authors")
set(NERVE_PACKAGE_MAINTAINER
    "nerve maintainers <maintainers@users.noreply.a-seed-57b68140.example>"
    CACHE STRING "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${NERVE_PACKAGE_MAINTAINER}")
# Each package's description (below) begins with its own synopsis line;
# CPack would put the project's description before it.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(NERVE_DEB_REVISION 1 CACHE STRING "Debian revision of the packages")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${NERVE_DEB_REVISION})
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps finds libnerve and libach in the build tree; it knows no
# package for them, so their packages are named in the DEPENDS below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS
    ${PROJECT_BINARY_DIR} ${PROJECT_BINARY_DIR}/src/ach)
set(CPACK_STRIP_FILES ON)
# Control files root:root 0644, scripts 0755, as dpkg-deb and lintian expect.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The libraries' shlibs files ("libnerve 1 libnerve1 (>= 0.1.0)"), which
# dpkg-shlibdeps reads when it builds programs that link them.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(_v "${PROJECT_VERSION}-${NERVE_DEB_REVISION}")
# The libraries' control files: "triggers" (activate-noawait ldconfig:
# libc-bin runs ldconfig once after the library is unpacked or removed, as
# debhelper's dh_makeshlibs arranges) and postinst/postrm that do nothing,
# which only keep CPack from adding scripts that call ldconfig themselves.
set(_ldconfig ${CMAKE_CURRENT_LIST_DIR}/debian/triggers
    ${CMAKE_CURRENT_LIST_DIR}/debian/postinst ${CMAKE_CURRENT_LIST_DIR}/debian/postrm)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libnerve${NERVE_ABI_VERSION})
set(CPACK_DEBIAN_LIB_DESCRIPTION "real-time shared-memory IPC for robots - library
nerve moves messages between the processes of a robot through channels in
shared memory: lock-free readers, one writer at a time, robust to a writer
that dies mid-message, with wake-ups through futexes.

This package holds the shared library libnerve.so.${NERVE_ABI_VERSION}.")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${_ldconfig})

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libnerve-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libnerve${NERVE_ABI_VERSION} (= ${_v})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "real-time shared-memory IPC for robots - development files
nerve moves messages between the processes of a robot through channels in
shared memory.

This package holds the C headers, the header-only C++ layer, the static
library, nerve.pc for pkg-config and the CMake package (find_package(nerve)
gives nerve::nerve, nerve::nerve_static and nerve::cxx).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME nerve)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libnerve${NERVE_ABI_VERSION} (= ${_v})")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "real-time shared-memory IPC for robots - the nerve command
nerve moves messages between the processes of a robot through channels in
shared memory.

This package holds the nerve command (create, ls, info, put, get, cat,
chmod, check, rm, bench), nerve-cyclic, their manual pages and the bash
and zsh completion. The Python tools (nerve record, top, bridge...) are
the nerve-tools Python package.")

set(CPACK_DEBIAN_ACH_PACKAGE_NAME libach-nerve0)
set(CPACK_DEBIAN_ACH_PACKAGE_DEPENDS "libnerve${NERVE_ABI_VERSION} (= ${_v})")
set(CPACK_DEBIAN_ACH_PACKAGE_CONTROL_EXTRA ${_ldconfig})
set(CPACK_DEBIAN_ACH_DESCRIPTION "Ach's C API on nerve channels - library
libach.so.0 implements the C API of Ach (ach_create, ach_put, ach_get...)
on nerve's shared-memory channels, so that programs written for Ach build
and run on nerve unchanged. It is not the Ach library.")

set(CPACK_DEBIAN_ACH-DEV_PACKAGE_NAME libach-nerve-dev)
set(CPACK_DEBIAN_ACH-DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_ACH-DEV_PACKAGE_DEPENDS
    "libach-nerve0 (= ${_v}), libnerve-dev (= ${_v})")
# It installs ach.h, libach.so and ach.pc, the files of Ach's own
# development package (not in Debian; upstream's packages name it
# libach-dev): only one of the two may be installed.
set(CPACK_DEBIAN_ACH-DEV_PACKAGE_CONFLICTS libach-dev)
set(CPACK_DEBIAN_ACH-DEV_PACKAGE_PROVIDES libach-dev)
set(CPACK_DEBIAN_ACH-DEV_DESCRIPTION "Ach's C API on nerve channels - development files
The header ach.h (with ach/generic.h and ach/experimental.h), the static
library, ach.pc for pkg-config and the CMake targets nerve::ach and
nerve::ach_static. Source compatible with Ach's own libach-dev, which it
replaces.")

set(CPACK_DEBIAN_ACH-TOOLS_PACKAGE_NAME nerve-ach)
set(CPACK_DEBIAN_ACH-TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_ACH-TOOLS_PACKAGE_DEPENDS
    "libach-nerve0 (= ${_v}), libnerve${NERVE_ABI_VERSION} (= ${_v})")
set(CPACK_DEBIAN_ACH-TOOLS_DESCRIPTION "Ach's C API on nerve channels - the nerve-ach command
nerve-ach creates, lists and removes Ach channels on nerve, as Ach's own
ach command does.")

# Its dependency on Cyclone DDS (libddsc0debian) comes from dpkg-shlibdeps.
set(CPACK_DEBIAN_ROS2-DDS_PACKAGE_NAME nerve-ros2-dds)
set(CPACK_DEBIAN_ROS2-DDS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_ROS2-DDS_PACKAGE_DEPENDS
    "libnerve${NERVE_ABI_VERSION} (= ${_v}), nerve (= ${_v})")
set(CPACK_DEBIAN_ROS2-DDS_DESCRIPTION "real-time shared-memory IPC for robots - ROS 2 DDS bridge
nerve-ros2-dds is the data path of `nerve ros2`: a ROS 2 node on Cyclone DDS
that publishes nerve channels as ROS 2 topics and imports ROS 2 topics into
channels. The package also holds DDS configurations for loopback and for
large data (Cyclone DDS and Fast DDS XML) in /usr/share/nerve/dds. The
`nerve ros2` command itself is in the nerve-tools Python package.")

# libnerve is linked into the program (nerve-sys links libnerve.a), so its
# dependencies (libc6, libgcc-s1) all come from dpkg-shlibdeps.
set(CPACK_DEBIAN_BRIDGE_PACKAGE_NAME nerve-bridge)
set(CPACK_DEBIAN_BRIDGE_PACKAGE_SECTION net)
set(CPACK_DEBIAN_BRIDGE_DESCRIPTION "real-time shared-memory IPC for robots - bridge to other hosts
nerve-bridge-rs is the data path of `nerve bridge`: it makes chosen nerve
channels of one host appear, with the same names, geometry and metadata, on
other hosts, carried by Eclipse Zenoh (TCP and TLS, mutual TLS and access
control by certificate). The `nerve bridge` command itself is in the
nerve-tools Python package, and runs this program.")

# What Debian adds to the install: each package's
# /usr/share/doc/PACKAGE/copyright and changelog.Debian.gz (dated by
# SOURCE_DATE_EPOCH when set), gzipped man pages, and the lintian override
# of libach-nerve0's name.
string(TIMESTAMP _nerve_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/changelog.in
    ${PROJECT_BINARY_DIR}/debian/changelog.Debian @ONLY)
execute_process(COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/debian/changelog.Debian
    OUTPUT_FILE ${PROJECT_BINARY_DIR}/debian/changelog.Debian.gz
    COMMAND_ERROR_IS_FATAL ANY)
foreach(_comp IN LISTS CPACK_COMPONENTS_ALL)
    string(TOUPPER ${_comp} _c)
    set(_doc ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${_c}_PACKAGE_NAME})
    install(FILES ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${_doc} RENAME copyright COMPONENT ${_comp})
    install(FILES ${PROJECT_BINARY_DIR}/debian/changelog.Debian.gz
        DESTINATION ${_doc} COMPONENT ${_comp})
endforeach()
if(TARGET ach)
    install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/libach-nerve0.lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
        RENAME libach-nerve0 COMPONENT ach)
endif()
# Runs after tools/ installed the pages (this file is included last).
install(CODE "
    file(GLOB _pages \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man1/*.1\")
    foreach(_p IN LISTS _pages)
        execute_process(COMMAND gzip -9nf \${_p} COMMAND_ERROR_IS_FATAL ANY)
    endforeach()" COMPONENT tools)

include(CPack)
