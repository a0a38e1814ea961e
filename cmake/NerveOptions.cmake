# Every build option of nerve, in one place (included by the root
# CMakeLists.txt before anything is built). CMakePresets.json names the
# usual combinations: dev, asan, tsan, fuzz, stress and release.
#
# What gets built. The tests, tools, benchmarks and examples default to ON
# only when nerve is the top-level project (not when a parent project
# includes it with add_subdirectory).
set(_nerve_top OFF)
if(CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    set(_nerve_top ON)
endif()
option(NERVE_BUILD_TESTS "Build the tests" ${_nerve_top})
option(NERVE_BUILD_TOOLS "Build the nerve command" ${_nerve_top})
option(NERVE_BUILD_BENCH "Build the benchmarks" ${_nerve_top})
option(NERVE_BUILD_EXAMPLES "Build the examples" ${_nerve_top})
option(NERVE_BUILD_RMW "Build rmw_nerve_cpp when ROS 2 headers are found (rmw_nerve/)" ${_nerve_top})
option(NERVE_BUILD_ACH "Build libach, Ach's C API on nerve (src/ach)" ON)
option(NERVE_INSTALL_ACH_TOOL "Also install nerve-ach as 'ach'" OFF)
option(NERVE_ROS2_MSGS "Generate and install the ROS 2 message types (needs a Python with rosbags)" ON)
set(NERVE_ROS2_DISTRO jazzy CACHE STRING "ROS 2 distribution of the shipped message definitions")
set_property(CACHE NERVE_ROS2_DISTRO PROPERTY STRINGS jazzy humble)

# How it is compiled.
option(NERVE_WERROR "Treat warnings as errors" ON)
set(NERVE_SANITIZE "" CACHE STRING "Sanitizers: '', 'address' (ASan+UBSan) or 'thread'")
set_property(CACHE NERVE_SANITIZE PROPERTY STRINGS "" address thread)
set(NERVE_CUDA_ARCHITECTURES native CACHE STRING
    "CUDA architectures of bench/gpu (native: this machine's GPU)")

# Verification builds (docs/verification.md).
option(NERVE_FUZZ "Build the libFuzzer target (needs clang)" OFF)
option(NERVE_STRESS "Register the long crash torture run (label stress)" OFF)

# A build for the Debian packages (make package; cmake/NervePackaging.cmake):
# configures CPack and adds the files Debian wants (copyright, changelog,
# gzipped man pages). Use with CMAKE_INSTALL_PREFIX=/usr.
option(NERVE_DEB_LAYOUT "Configure the Debian packages (cpack -G DEB)" OFF)
