#!/bin/sh
# wheels-venv.sh DIST_DIR VENV
#
# Make VENV a fresh venv holding the nerve wheel (with its "test" extra,
# whose pins the wheel carries), the nerve-tools wheel and, where `make
# wheels` made it, the nerve-bridge wheel of DIST_DIR, their dependencies
# from PyPI. test-package.sh and test-wheels.sh each
# make one when NERVE_WHEELS_VENV does not name one already made; `make
# test` makes one for both (mk/package.mk: pip's install of nerve-tools'
# dependencies is the longest step of each).
set -eu
if [ $# -ne 2 ] || [ ! -d "$1" ]; then
    echo "usage: $0 DIST_DIR VENV" >&2
    exit 2
fi
nerve_whl=$(ls "$1"/nerve-*.whl 2>/dev/null | head -n 1)
tools_whl=$(ls "$1"/nerve_tools-*.whl 2>/dev/null | head -n 1)
if [ -z "$nerve_whl" ] || [ -z "$tools_whl" ]; then
    echo "wheels-venv: no nerve and nerve-tools wheels in $1 (make wheels)" >&2
    exit 1
fi
bridge_whl=$(ls "$1"/nerve_bridge-*.whl 2>/dev/null | head -n 1)
rm -rf "$2"
python3 -m venv "$2"
"$2/bin/python" -m pip install -q --disable-pip-version-check "$nerve_whl[test]" "$tools_whl" \
    ${bridge_whl:+"$bridge_whl"}
