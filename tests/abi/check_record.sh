#!/bin/sh
# check_record.sh TEST_ABI_C SOURCE_DIR
#
# Compare the public structs' sizes (TEST_ABI_C --sizes) with the ABI
# record tests/abi/abi_record.txt; the rules are in the record's header.
set -eu
prog=$1
src=$2
record=$src/tests/abi/abi_record.txt
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nerve-abirec.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ "$(getconf LONG_BIT)" != 64 ]; then
    echo "SKIP: the record holds LP64 sizes; this is a $(getconf LONG_BIT)-bit system"
    exit 77
fi
abi=$(sed -n 's/^#define NERVE_ABI_VERSION \([0-9][0-9]*\).*/\1/p' \
    "$src/include/nerve/version.h")
[ -n "$abi" ] || { echo "FAIL: no NERVE_ABI_VERSION in version.h"; exit 1; }

"$prog" --sizes | sort >"$tmp/sizes"
grep -ho '^struct nerve_[a-z0-9_]* {' "$src"/include/nerve/*.h |
    awk '{print $2}' | sort -u >"$tmp/headers"
awk '{print $1}' "$tmp/sizes" >"$tmp/measured"
if ! diff -u "$tmp/headers" "$tmp/measured" >"$tmp/diff"; then
    echo "FAIL: test_abi_c.c's size table and the headers' structs differ:"
    cat "$tmp/diff"
    exit 1
fi

grep -v '^[[:space:]]*#' "$record" | grep -v '^[[:space:]]*$' >"$tmp/rows" || true
awk -v abi="$abi" -v sizes="$tmp/sizes" '
    BEGIN {
        while ((getline line < sizes) > 0) {
            split(line, f, " ")
            actual[f[1]] = f[2]
        }
        bad = 0
    }
    NF != 3 || $1 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ {
        printf "FAIL: record line %d is not \"ABI STRUCT SIZE\": %s\n", NR, $0
        bad = 1
        next
    }
    {
        v = $1 + 0; s = $2; n = $3 + 0
        if (!(s in actual)) {
            printf "FAIL: record names %s, which no public header declares\n", s
            bad = 1
        }
        if (v > abi) {
            printf "FAIL: %s has a row at ABI %d, above NERVE_ABI_VERSION %d (bump it)\n", s, v, abi
            bad = 1
        }
        if ((s, v) in seen) {
            printf "FAIL: %s has two rows at ABI %d\n", s, v
            bad = 1
        }
        seen[s, v] = 1
        if (s in last_v) {
            if (v < last_v[s]) {
                printf "FAIL: %s rows out of order (ABI %d after %d); rows are appended\n", s, v, last_v[s]
                bad = 1
            } else if (n == last_n[s]) {
                printf "FAIL: %s row at ABI %d repeats size %d\n", s, v, n
                bad = 1
            }
        }
        if (!(s in last_v) || v > last_v[s]) {
            last_v[s] = v; last_n[s] = n
        }
    }
    END {
        for (s in actual) {
            if (!(s in last_v)) {
                printf "FAIL: struct %s (%d bytes) has no row in the record\n", s, actual[s]
                bad = 1
            } else if (last_n[s] != actual[s] + 0) {
                printf "FAIL: struct %s is %d bytes, the record says %d since ABI %d: a size change needs a new row at a new NERVE_ABI_VERSION (docs/abi.md)\n", s, actual[s], last_n[s], last_v[s]
                bad = 1
            }
        }
        exit bad
    }' "$tmp/rows" || exit 1
echo "ok: $(wc -l <"$tmp/sizes") structs match the record at ABI $abi"
