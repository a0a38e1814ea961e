#!/bin/sh
# test-wheels.sh DIST_DIR [NERVE_CLI]
#
# Check the wheels of `make wheels` (DIST_DIR) the way a user meets them:
#   1. each wheel names BSD-2-Clause and carries the repository's LICENSE;
#      nerve's is tagged manylinux;
#   2. `pip install` of both wheels (nerve with its "test" extra, whose pins
#      the wheel itself carries) into a fresh venv, from PyPI for the
#      dependencies and from DIST_DIR only for nerve and nerve-tools;
#   3. from a scratch directory, with a copy of the tests and no source
#      tree on sys.path (checked: nerve is imported from the venv):
#      tests/python in full, and of tests/python_tools/test_record_play.py
#      the record -> play -> record round trip and `nerve VERB` running the
#      tools (the tools' full suite, with its network namespaces, Zenoh
#      and Foxglove peers, is test-tools' job on the same code);
#   4. every [project.scripts] entry of nerve-tools is a console script in
#      the venv's bin that answers --help, and `nerve help` (NERVE_CLI, the
#      C command) lists them as its external verbs.
# Removes the venv and its scratch files however it exits.
set -eu

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 DIST_DIR [NERVE_CLI]" >&2
    exit 2
fi
dist=$(cd "$1" && pwd)
cli=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nerve-wheels.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}
# whl_cat WHEEL GLOB: the first member of WHEEL matching GLOB, to stdout.
whl_cat() {
    python3 -c 'import fnmatch, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
m = [n for n in z.namelist() if fnmatch.fnmatch(n, sys.argv[2])]
sys.stdout.buffer.write(z.read(m[0]) if m else b"")' "$1" "$2"
}

nerve_whl=$(ls "$dist"/nerve-*.whl 2>/dev/null | head -n 1)
tools_whl=$(ls "$dist"/nerve_tools-*.whl 2>/dev/null | head -n 1)
[ -n "$nerve_whl" ] && [ -n "$tools_whl" ] || fail "no wheels in $dist (make wheels)"
echo "wheels: $(basename "$nerve_whl") $(basename "$tools_whl")"
case $nerve_whl in
    *manylinux*) ;;
    *) fail "$(basename "$nerve_whl") is not tagged manylinux" ;;
esac
for whl in "$nerve_whl" "$tools_whl"; do
    meta=$(whl_cat "$whl" '*.dist-info/METADATA')
    printf '%s\n' "$meta" | grep -qx 'License-Expression: BSD-2-Clause' ||
        fail "$(basename "$whl") does not name BSD-2-Clause"
    whl_cat "$whl" '*.dist-info/licenses/LICENSE' | cmp -s - "$src/LICENSE" ||
        fail "$(basename "$whl") does not carry the repository's LICENSE"
done

echo "== pip install into a fresh venv"
python3 -m venv "$tmp/venv"
py=$tmp/venv/bin/python
"$py" -m pip install -q --disable-pip-version-check "$nerve_whl[test]" "$tools_whl" ||
    fail "pip install"

mkdir -p "$tmp/run"
cp -r "$src/tests/python" "$src/tests/python_tools" "$tmp/run/"
cd "$tmp/run"
where=$(env -u PYTHONPATH "$py" -c 'import nerve; print(nerve.__file__)')
case $where in
    "$tmp/venv/"*) echo "nerve imported from $where" ;;
    *) fail "nerve imported from $where, not from the fresh venv" ;;
esac

echo "== console scripts of nerve-tools"
scripts=$(whl_cat "$tools_whl" '*.dist-info/entry_points.txt' |
    sed -n '/^\[console_scripts\]/,/^\[/s/^\(nerve-[a-z0-9-]*\) *=.*/\1/p')
[ -n "$scripts" ] || fail "nerve-tools has no console scripts"
for s in $scripts; do
    [ -x "$tmp/venv/bin/$s" ] || fail "$s is not installed in the venv's bin"
    env -u PYTHONPATH "$tmp/venv/bin/$s" --help >/dev/null 2>&1 || fail "$s --help"
done
echo "ok: $(echo "$scripts" | wc -l) console scripts answer --help"
if [ -n "$cli" ]; then
    verbs=$(env -u PYTHONPATH PATH="$tmp/venv/bin:/usr/bin:/bin" "$cli" help)
    for s in $scripts; do
        printf "%s\n" "$verbs" | grep -Eq "^  ${s#nerve-}( |$)" ||
            fail "nerve help does not list ${s#nerve-} as an external verb"
    done
    echo "ok: nerve help lists them as external verbs"
fi

echo "== tests/python and two tools tests from the venv"
env -u PYTHONPATH PATH="$tmp/venv/bin:$PATH" ${cli:+NERVE_CLI="$cli"} \
    "$py" -m pytest -q -p no:cacheprovider -c python/pytest.ini python
env -u PYTHONPATH PATH="$tmp/venv/bin:$PATH" ${cli:+NERVE_CLI="$cli"} \
    "$py" -m pytest -q -p no:cacheprovider -c python_tools/pytest.ini \
    -k "round_trip_record_play_record or nerve_verbs_run_the_tools" \
    python_tools/test_record_play.py
echo "test-wheels: ok"
