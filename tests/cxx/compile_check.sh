#!/bin/sh
# compile_check.sh COMPILER SOURCE_DIR [misuse]
#
# Compile tests/cxx/header_check.cpp with COMPILER and the flags the C++
# headers promise to pass: -std=c++17 -Wall -Wextra -Wpedantic -Werror
# (plus -Wshadow -Wundef, which this project's build also uses), at -O0. With
# "misuse", compile each NERVE_MISUSE_* case instead and require that every
# one of them fails. Exits 77 (skip) when COMPILER is not installed.
set -u
cxx=$1
src=$2
mode=${3:-}
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "SKIP: $cxx is not installed"
    exit 77
fi
flags="-std=c++17 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wundef -c -o /dev/null"
# (-c, not -fsyntax-only: GCC reports unused results only when it generates
# code.)
inc="-I$src/include -I$src/examples"
file=$src/tests/cxx/header_check.cpp
"$cxx" --version | head -n 1
if [ "$mode" != misuse ]; then
    # shellcheck disable=SC2086
    $cxx $flags $inc "$file" || { echo "FAIL: headers do not compile"; exit 1; }
    # shellcheck disable=SC2086
    $cxx $flags -fno-exceptions $inc "$file" ||
        { echo "FAIL: headers do not compile with -fno-exceptions"; exit 1; }
    echo "ok: headers compile cleanly"
    exit 0
fi
rc=0
# Each case with a pattern that GCC's and Clang's diagnostic both contain,
# so a case that fails for an unrelated reason is not counted as rejected.
check() {
    case=$1
    want=$2
    # shellcheck disable=SC2086
    if out=$($cxx $flags $inc -DNERVE_MISUSE_$case "$file" 2>&1); then
        echo "FAIL: misuse case $case compiled"
        rc=1
    elif printf '%s\n' "$out" | grep -Eq "$want"; then
        echo "ok: misuse case $case is rejected"
    else
        echo "FAIL: misuse case $case failed without /$want/:"
        printf '%s\n' "$out" | head -n 5
        rc=1
    fi
}
check NO_CODEC 'has no nerve::Codec<T> specialization'
check COPY 'deleted'
check DISCARD 'nodiscard'
check UNINIT_WRITE_LVALUE "qualifiers|rvalue ref-qualifier"
check RAW_LOAN_SIZE 'takes no size arguments'
check OVERALIGNED_LOAN '64-byte aligned'
check OVERALIGNED_UNINIT '64-byte aligned'
exit $rc
