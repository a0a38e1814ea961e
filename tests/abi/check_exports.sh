#!/bin/sh
# check_exports.sh LIBNERVE_SO SOURCE_DIR
#
# The shared library exports exactly the public API, under its version node:
#   1. every dynamic symbol libnerve.so defines is a nerve_* function that
#      src/nerve.map names, bound to a NERVE_<abi>.* version node;
#   2. every name in src/nerve.map is exported;
#   3. the NERVE_API declarations of include/nerve/*.h are the same set;
#   4. no internal (nerve__*) or foreign symbol leaks out;
#   5. the SONAME is libnerve.so.NERVE_ABI_VERSION;
#   6. the file is named libnerve.so.NERVE_ABI_VERSION.*.
set -eu
so=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nerve-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

abi=$(sed -n 's/^#define NERVE_ABI_VERSION \([0-9][0-9]*\).*/\1/p' \
    "$src/include/nerve/version.h")
[ -n "$abi" ] || { echo "FAIL: no NERVE_ABI_VERSION in version.h"; exit 1; }

# Defined dynamic symbols with their versions: "name@@NODE" (nm -D).
nm -D --defined-only "$so" | awk '{print $3}' >"$tmp/dyn"
grep -v '^NERVE_' "$tmp/dyn" | sed 's/@.*//' | sort -u >"$tmp/exported"
# The version node definitions themselves appear as absolute symbols.
grep -v '^NERVE_' "$tmp/dyn" | grep -v "@@NERVE_$abi\." >"$tmp/unversioned" || true
if [ -s "$tmp/unversioned" ]; then
    echo "FAIL: symbols without a NERVE_$abi.* version:"
    cat "$tmp/unversioned"
    fail=1
fi

sed -n 's/^[[:space:]]*\(nerve_[a-z0-9_]*\);.*/\1/p' "$src/src/nerve.map" |
    sort -u >"$tmp/map"

# Each NERVE_API declaration up to its ';': its first nerve_NAME( is the
# function (return types are C types; no function returns a function
# pointer). The macro's own definition in common.h is skipped.
cat "$src"/include/nerve/*.h | grep -v '^#' | tr '\n' ' ' |
    grep -o 'NERVE_API[^;]*;' | while IFS= read -r d; do
        printf '%s\n' "$d" | grep -o 'nerve_[a-z0-9_]*[[:space:]]*(' |
            head -n 1 | sed 's/[[:space:]]*(//'
    done | sort -u >"$tmp/decl"

for pair in "exported:map" "map:decl" "decl:exported"; do
    a=${pair%%:*}
    b=${pair##*:}
    if ! diff -u "$tmp/$a" "$tmp/$b" >"$tmp/diff"; then
        echo "FAIL: the $a and $b symbol sets differ:"
        cat "$tmp/diff"
        fail=1
    fi
done
if grep -q '^nerve__' "$tmp/exported"; then
    echo "FAIL: internal symbols exported:"
    grep '^nerve__' "$tmp/exported"
    fail=1
fi
if grep -v '^nerve_' "$tmp/exported" >"$tmp/foreign"; then
    echo "FAIL: non-nerve symbols exported:"
    cat "$tmp/foreign"
    fail=1
fi

soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != "libnerve.so.$abi" ]; then
    echo "FAIL: SONAME '$soname', expected libnerve.so.$abi"
    fail=1
fi

# 6. the file's name begins with the SONAME (libnerve.so.1.0.1.0), as
#    ldconfig and Debian's library packages expect.
case $(basename "$so") in
    "libnerve.so.$abi".*) ;;
    *)
        echo "FAIL: file name $(basename "$so") does not begin with libnerve.so.$abi."
        fail=1
        ;;
esac

n=$(wc -l <"$tmp/exported")
[ "$fail" -eq 0 ] && echo "ok: $n symbols, all @@NERVE_$abi.*, SONAME $soname"
exit "$fail"
