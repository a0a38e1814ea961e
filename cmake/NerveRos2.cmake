# nerve_generate_ros2_messages(): ROS 2 message types for nerve's C++ API,
# generated at build time (the role rosidl_generate_interfaces plays in a
# ROS 2 workspace), with no ROS 2 installation.
#
#   nerve_generate_ros2_messages(TARGET my_msgs
#       [PACKAGES std_msgs sensor_msgs ...]   # from rosbags' store
#       [MSG_FILES path/my_pkg/msg/Foo.msg ...] # your own (.../PKG/msg/NAME.msg)
#       [DISTRO jazzy|humble]                 # definitions of PACKAGES; jazzy
#       [OUTPUT_DIR dir])                     # default: <binary dir>/<TARGET>
#
# makes an INTERFACE library TARGET whose include directory holds
# <nerve/ros2/PKG/msg/snake_name.hpp> for every message named and every one
# they depend on, and <nerve/ros2/TARGET.hpp>, which includes them all and
# dispatches on a type name (TARGET must then be a C++ identifier), and
# which links nerve::cxx. A target that links TARGET is
# built after the headers are (re)generated; they are regenerated when a
# .msg file or the generator changes.
#
# The generator is Python (nerve_tools.ros2gen) and reads the ROS 2
# definitions that the `rosbags` package ships: NERVE_ROS2GEN_PYTHON names
# the interpreter (one with rosbags installed, e.g. `pip install
# rosbags==0.11.9`), as a CMake variable (-D, which wins) or an environment
# variable; by default the first of the project's .venv and the Python 3 on
# the PATH that can import rosbags. The one used is remembered in the build
# directory's cache as NERVE_ROS2GEN_PYTHON. A Python named that cannot import rosbags
# is an error that says so. NERVE_ROS2GEN_PYTHON_PATH
# and NERVE_ROS2GEN_MODULE say where the generator is (set by nerve's own
# build and by nerveConfig.cmake).

function(_nerve_ros2gen_find_python out)
    set(_given "")
    if(NERVE_ROS2GEN_PYTHON)
        set(_given ${NERVE_ROS2GEN_PYTHON})
        set(_how "the CMake variable NERVE_ROS2GEN_PYTHON")
    elseif(NOT "$ENV{NERVE_ROS2GEN_PYTHON}" STREQUAL "")
        set(_given $ENV{NERVE_ROS2GEN_PYTHON})
        set(_how "the environment variable NERVE_ROS2GEN_PYTHON")
    endif()
    if(_given)
        execute_process(COMMAND ${_given} -c "import rosbags.typesys"
            RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
        if(NOT _rc EQUAL 0)
            message(FATAL_ERROR "nerve: ${_how} names '${_given}', which cannot import "
                "rosbags (${_rc}); install it there (pip install rosbags==0.11.9) or name "
                "another Python")
        endif()
        # Remembered like a Python found by the search (scripts and the
        # tests read the cache).
        set(NERVE_ROS2GEN_PYTHON ${_given} CACHE FILEPATH
            "Python with rosbags, for nerve's ROS 2 message generator")
        set(${out} ${_given} PARENT_SCOPE)
        return()
    endif()
    set(_cands)
    if(EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
        list(APPEND _cands ${PROJECT_SOURCE_DIR}/.venv/bin/python)
    endif()
    find_program(_nerve_py3 NAMES python3 python)
    if(_nerve_py3)
        list(APPEND _cands ${_nerve_py3})
    endif()
    foreach(_py IN LISTS _cands)
        execute_process(COMMAND ${_py} -c "import rosbags.typesys"
            RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
        if(_rc EQUAL 0)
            set(NERVE_ROS2GEN_PYTHON ${_py} CACHE FILEPATH
                "Python with rosbags, for nerve's ROS 2 message generator")
            set(${out} ${_py} PARENT_SCOPE)
            return()
        endif()
    endforeach()
    set(${out} "" PARENT_SCOPE)
endfunction()

function(nerve_generate_ros2_messages)
    cmake_parse_arguments(A "" "TARGET;DISTRO;OUTPUT_DIR" "PACKAGES;MSG_FILES" ${ARGN})
    if(NOT A_TARGET)
        message(FATAL_ERROR "nerve_generate_ros2_messages: TARGET is required")
    endif()
    if(NOT A_PACKAGES AND NOT A_MSG_FILES)
        message(FATAL_ERROR "nerve_generate_ros2_messages(${A_TARGET}): name PACKAGES or MSG_FILES")
    endif()
    if(NOT A_DISTRO)
        set(A_DISTRO jazzy)
    endif()
    if(NOT A_OUTPUT_DIR)
        set(A_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/${A_TARGET})
    endif()
    _nerve_ros2gen_find_python(_py)
    if(NOT _py)
        message(FATAL_ERROR "nerve_generate_ros2_messages(${A_TARGET}): no Python with rosbags "
            "found; pip install rosbags==0.11.9 and/or set NERVE_ROS2GEN_PYTHON (a CMake or "
            "environment variable)")
    endif()
    set(_args --out ${A_OUTPUT_DIR} --distro ${A_DISTRO} --index ${A_TARGET})
    foreach(_p IN LISTS A_PACKAGES)
        list(APPEND _args --package ${_p})
    endforeach()
    set(_msgs)
    foreach(_m IN LISTS A_MSG_FILES)
        get_filename_component(_m ${_m} ABSOLUTE)
        list(APPEND _msgs ${_m})
        list(APPEND _args --msg ${_m})
    endforeach()
    set(_env ${CMAKE_COMMAND} -E env PYTHONPATH=${NERVE_ROS2GEN_PYTHON_PATH})
    set(_gen ${_env} ${_py} -m ${NERVE_ROS2GEN_MODULE})
    # The file names are known before anything is generated: ask the
    # generator now (it only reads definitions), so the build knows its
    # outputs and what to rebuild.
    execute_process(COMMAND ${_gen} ${_args} --dry-run --list ${A_OUTPUT_DIR}.list
        RESULT_VARIABLE _rc ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "nerve_generate_ros2_messages(${A_TARGET}): ${_err}")
    endif()
    file(STRINGS ${A_OUTPUT_DIR}.list _headers)
    # The generator's own modules (python-tools/src/nerve_tools/ros2gen/):
    # headers are made again when it changes.
    set(_gen_sources)
    foreach(_py __init__ __main__ cxx)
        list(APPEND _gen_sources ${NERVE_ROS2GEN_PYTHON_PATH}/${NERVE_ROS2GEN_DIR}/${_py}.py)
    endforeach()
    add_custom_command(OUTPUT ${_headers}
        COMMAND ${_gen} ${_args}
        DEPENDS ${_msgs} ${_gen_sources}
        COMMENT "nerve: generating ROS 2 message headers of ${A_TARGET}"
        VERBATIM)
    add_library(${A_TARGET} INTERFACE ${_headers})
    target_include_directories(${A_TARGET} INTERFACE $<BUILD_INTERFACE:${A_OUTPUT_DIR}>)
    if(TARGET nerve::cxx)
        target_link_libraries(${A_TARGET} INTERFACE nerve::cxx)
    endif()
    set_property(TARGET ${A_TARGET} PROPERTY NERVE_ROS2_OUTPUT_DIR ${A_OUTPUT_DIR})
endfunction()
