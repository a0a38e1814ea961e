# nerve_add_test(NAME SOURCES src... [LIBS lib...] [LABELS l...] [TIMEOUT s]
#                [ARGS a...])
# One executable per test. Exit 0 = pass, 1 = fail, 77 = skip (the test
# prints why). Every test depends on the shm-clean fixture, which fails the
# run if a test leaves a channel behind in /dev/shm.
function(nerve_add_test name)
    cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 120)
    endif()
    if(NOT T_LIBS)
        set(T_LIBS nerve)
    endif()
    add_executable(${name} ${T_SOURCES})
    # The test helpers come first: they call into whichever core is linked.
    target_link_libraries(${name} PRIVATE nerve_testlib ${T_LIBS})
    target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
    add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
    set_tests_properties(${name} PROPERTIES
        SKIP_RETURN_CODE 77
        TIMEOUT ${T_TIMEOUT}
        LABELS "${T_LABELS}"
        FIXTURES_REQUIRED shm_clean)
endfunction()
