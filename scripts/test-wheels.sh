#!/bin/sh
# test-wheels.sh DIST_DIR [NERVE_CLI]
#
# Check the wheels of `make wheels` (DIST_DIR) the way a user meets them:
#   1. each wheel names BSD-2-Clause and carries the repository's LICENSE;
#      nerve's is tagged manylinux;
#   2. `pip install` of both wheels (nerve with its "test" extra, whose pins
#      the wheel itself carries) into a fresh venv, from PyPI for the
#      dependencies and from DIST_DIR only for nerve and nerve-tools
#      (scripts/wheels-venv.sh; NERVE_WHEELS_VENV names one it made for
#      this run instead);
#   3. from a scratch directory, with a copy of the tests and no source
#      tree on sys.path (checked: nerve is imported from the venv):
#      tests/python in full (with tests/bridge, the kernel's table), and of tests/python_tools/test_record_play.py
#      the record -> play -> record round trip and `nerve VERB` running the
#      tools (the tools' full suite, with its network namespaces, Zenoh
#      and Foxglove peers, is test-tools' job on the same code);
#   4. every [project.scripts] entry of nerve-tools is a console script in
#      the venv's bin that answers --help, and `nerve help` (NERVE_CLI, the
#      C command) lists them as its external verbs;
#   5. the nerve-bridge wheel (make wheels makes it where cargo builds the
#      Rust bridge; otherwise this says SKIP and why): tagged manylinux,
#      its nerve-bridge-rs is in the venv's bin, and with only that bin, the
#      nerve command and the system's on the PATH `nerve bridge --version`
#      names it and two
#      bridges carry a message from one /dev/shm to another
#      (scripts/test-bridge-smoke.sh);
#   6. where DIST_DIR holds the ros-jazzy-rmw-nerve-cpp wheel: the ROS 2
#      Jazzy wheels (NERVE_ROS2_JAZZY_PKGS, the pins of mk/ros2venv.mk) and
#      it installed into the same venv, `nerve ros2 exec` finds
#      rmw_nerve_cpp in the venv alone (NERVE_RMW_LIB unset, no build tree
#      named), an rclpy node run by it publishes on a nerve channel, and
#      `nerve ros2 config` prints the DDS configurations the wheel of
#      nerve-tools carries.
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
bridge_whl=$(ls "$dist"/nerve_bridge-*.whl 2>/dev/null | head -n 1)
echo "wheels: $(basename "$nerve_whl") $(basename "$tools_whl")${bridge_whl:+ $(basename "$bridge_whl")}"
case $nerve_whl in
    *manylinux*) ;;
    *) fail "$(basename "$nerve_whl") is not tagged manylinux" ;;
esac
for whl in "$nerve_whl" "$tools_whl" ${bridge_whl:+"$bridge_whl"}; do
    meta=$(whl_cat "$whl" '*.dist-info/METADATA')
    printf '%s\n' "$meta" | grep -qx 'License-Expression: BSD-2-Clause' ||
        fail "$(basename "$whl") does not name BSD-2-Clause"
    whl_cat "$whl" '*.dist-info/licenses/LICENSE' | cmp -s - "$src/LICENSE" ||
        fail "$(basename "$whl") does not carry the repository's LICENSE"
done

echo "== pip install into a fresh venv"
if [ -n "${NERVE_WHEELS_VENV:-}" ]; then
    venv=$(cd "$NERVE_WHEELS_VENV" && pwd)  # made for this run (scripts/wheels-venv.sh)
else
    venv=$tmp/venv
    "$src/scripts/wheels-venv.sh" "$dist" "$venv" || fail "pip install"
fi
py=$venv/bin/python

mkdir -p "$tmp/run"
cp -r "$src/tests/python" "$src/tests/python_tools" "$src/tests/bridge" "$tmp/run/"
cd "$tmp/run"
where=$(env -u PYTHONPATH "$py" -c 'import nerve; print(nerve.__file__)')
case $where in
    "$venv/"*) echo "nerve imported from $where" ;;
    *) fail "nerve imported from $where, not from the fresh venv" ;;
esac

echo "== console scripts of nerve-tools"
scripts=$(whl_cat "$tools_whl" '*.dist-info/entry_points.txt' |
    sed -n '/^\[console_scripts\]/,/^\[/s/^\(nerve-[a-z0-9-]*\) *=.*/\1/p')
[ -n "$scripts" ] || fail "nerve-tools has no console scripts"
for s in $scripts; do
    [ -x "$venv/bin/$s" ] || fail "$s is not installed in the venv's bin"
    env -u PYTHONPATH "$venv/bin/$s" --help >/dev/null 2>&1 || fail "$s --help"
done
echo "ok: $(echo "$scripts" | wc -l) console scripts answer --help"
if [ -n "$cli" ]; then
    verbs=$(env -u PYTHONPATH PATH="$venv/bin:/usr/bin:/bin" "$cli" help)
    for s in $scripts; do
        printf "%s\n" "$verbs" | grep -Eq "^  ${s#nerve-}( |$)" ||
            fail "nerve help does not list ${s#nerve-} as an external verb"
    done
    echo "ok: nerve help lists them as external verbs"
fi

echo "== tests/python and two tools tests from the venv"
env -u PYTHONPATH PATH="$venv/bin:$PATH" ${cli:+NERVE_CLI="$cli"} \
    "$py" -m pytest -q -p no:cacheprovider -c python/pytest.ini python
env -u PYTHONPATH PATH="$venv/bin:$PATH" ${cli:+NERVE_CLI="$cli"} \
    "$py" -m pytest -q -p no:cacheprovider -c python_tools/pytest.ini \
    -k "round_trip_record_play_record or nerve_verbs_run_the_tools" \
    python_tools/test_record_play.py
if [ -z "$bridge_whl" ]; then
    echo "SKIP nerve-bridge wheel: none in $dist (make wheels builds it where cargo builds the Rust bridge)"
else
    echo "== $(basename "$bridge_whl"): nerve bridge from the venv alone"
    case $bridge_whl in
        *manylinux*) ;;
        *) fail "$(basename "$bridge_whl") is not tagged manylinux" ;;
    esac
    [ -x "$venv/bin/nerve-bridge-rs" ] || fail "the nerve-bridge wheel did not install nerve-bridge-rs into the venv's bin"
    [ -n "$cli" ] || fail "no NERVE_CLI: the bridge smoke needs the nerve command"
    mkdir -p "$tmp/clibin"
    ln -s "$cli" "$tmp/clibin/nerve"
    "$src/scripts/test-bridge-smoke.sh" "$venv/bin:$tmp/clibin:/usr/bin:/bin" "$venv/bin/nerve-bridge-rs"
fi
rmw_whl=$(ls "$dist"/ros_jazzy_rmw_nerve_cpp-*.whl 2>/dev/null | head -n 1)
if [ -z "$rmw_whl" ]; then
    echo "SKIP rmw_nerve wheel: none in $dist (make wheels builds it when .venv-jazzy exists)"
elif [ -z "${NERVE_ROS2_JAZZY_PKGS:-}" ]; then
    echo "SKIP rmw_nerve wheel: NERVE_ROS2_JAZZY_PKGS (the Jazzy wheels' pins) not set (make test-wheels sets it)"
else
    echo "== $(basename "$rmw_whl") beside the ROS 2 Jazzy wheels"
    eval "set -- $NERVE_ROS2_JAZZY_PKGS"
    "$py" -m pip install -q --disable-pip-version-check "$@" "$rmw_whl" || fail "pip install $rmw_whl"
    for f in lib/librmw_nerve_cpp.so lib/libnerve.so.1 \
        share/ament_index/resource_index/rmw_typesupport/rmw_nerve_cpp \
        share/ament_index/resource_index/packages/rmw_nerve_cpp; do
        [ -e "$venv/$f" ] || fail "the wheel did not install $f into the venv"
    done
    # Only the venv: no NERVE_RMW_LIB, no nerve command of a build tree.
    rosenv="env -u PYTHONPATH -u NERVE_RMW_LIB -u NERVE_CLI -u AMENT_PREFIX_PATH -u LD_LIBRARY_PATH"
    rosenv="$rosenv PATH=$venv/bin:/usr/bin:/bin ROS_LOG_DIR=$tmp/roslog"
    $rosenv "$venv/bin/nerve-ros2" exec --print -- "$py" >"$tmp/exec.txt" ||
        { cat "$tmp/exec.txt"; fail "nerve ros2 exec --print"; }
    grep -qx "LD_PRELOAD=$venv/lib/librmw_nerve_cpp.so" "$tmp/exec.txt" ||
        { cat "$tmp/exec.txt"; fail "nerve ros2 exec did not take the venv's librmw_nerve_cpp.so"; }
    domain=$(( $$ % 50000 + 1000 ))
    # An rclpy node on rmw_nerve_cpp: its publisher is a nerve channel.
    cat >"$tmp/talker.py" <<'PYEOF'
import sys
import nerve, rclpy
from std_msgs.msg import String
name = sys.argv[1]
rclpy.init()
node = rclpy.create_node("wheel_talker", enable_rosout=False, start_parameter_services=False)
pub = node.create_publisher(String, "/" + name.split(".", 1)[1].replace(".", "/"), 10)
pub.publish(String(data="hello"))
chans = {c.name for c in nerve.list_channels()}
print(rclpy.get_rmw_implementation_identifier(), name in chans, flush=True)
node.destroy_node()
rclpy.shutdown()
PYEOF
    chan="ros2-d$domain.nt$$.chatter"
    out=$($rosenv ROS_DOMAIN_ID="$domain" timeout 60 "$venv/bin/nerve-ros2" exec -- \
        "$py" "$tmp/talker.py" "$chan" 2>&1) || { echo "$out"; fail "the talker on rmw_nerve_cpp"; }
    # Every channel of the domain: the topic's, the graph's and those of the
    # node's services (swept only by the domain's next start).
    "$py" -c 'import nerve, sys; d = sys.argv[1]; [nerve.unlink(c.name) for c in nerve.list_channels() if c.name.startswith(("ros2-d%s." % d, "ros2-graph-d%s." % d))]' "$domain"
    [ "$(printf '%s\n' "$out" | tail -n 1)" = "rmw_nerve_cpp True" ] ||
        { echo "$out"; fail "the rclpy node did not publish on a nerve channel through rmw_nerve_cpp"; }
    echo "ok: nerve ros2 exec runs an rclpy node on the wheel's rmw_nerve_cpp"
    $rosenv "$venv/bin/nerve-ros2" config fastdds-loopback-jazzy | grep -q "^$venv/.*/dds/fastdds-loopback-jazzy.xml$" ||
        fail "nerve ros2 config does not find the wheel's DDS configurations"
    echo "ok: nerve ros2 config finds the DDS configurations in the venv"
fi
echo "test-wheels: ok"
