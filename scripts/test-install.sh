#!/bin/sh
# test-install.sh BUILD_DIR
#
# Check the installed package the way a user consumes it: install
# BUILD_DIR into a scratch prefix, then
#   1. build examples/ standalone against it with find_package(nerve)
#      (CMAKE_PREFIX_PATH) and run each example briefly;
#   2. build a small C program with `pkg-config --cflags --libs nerve`
#      (PKG_CONFIG_PATH) and run it.
# Exits non-zero on any failure. Removes the scratch directories and any
# channel it made (names start with nt-<pid>-) however it exits.
set -eu

# shellcheck source=scripts/test-lib.sh
. "$(dirname "$0")/test-lib.sh"
scratch_setup BUILD_DIR install "$@"
build=$dir

prefix=$tmp/prefix
echo "== install $build into $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; exit 1; }
for f in include/nerve/nerve.h include/nerve/nerve.hpp \
    include/nerve/cxx/rt.hpp include/nerve/cxx/gpu.hpp; do
    [ -f "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
pc=$(find "$prefix" -name nerve.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: nerve.pc not installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")

echo "== examples with find_package(nerve)"
gen=""
if command -v ninja >/dev/null 2>&1; then
    gen="-G Ninja"
fi
# shellcheck disable=SC2086
cmake -S "$src/examples" -B "$tmp/examples" $gen \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cfg.log" ||
    { cat "$tmp/cfg.log"; exit 1; }
cmake --build "$tmp/examples" -j2
ex=$tmp/examples
run_examples "$ex"
"$ex/bench_cxx_overhead" --rounds 2 --batch 100 --channel "$p-bench" >/dev/null

echo "== rmw_nerve_cpp installed as a ROS 2 package"
# The lib and rmw components, as a `cmake --install` into /opt/ros/<distro>
# puts them: the library beside libnerve.so.1, and its ament index entries.
if [ -f "$build/rmw_nerve/librmw_nerve_cpp.so" ]; then
    rmw=$(find "$prefix" -name librmw_nerve_cpp.so | head -n 1)
    [ -n "$rmw" ] || { echo "FAIL: librmw_nerve_cpp.so not installed"; exit 1; }
    [ -e "$(dirname "$rmw")/libnerve.so.1" ] ||
        { echo "FAIL: libnerve.so.1 not beside librmw_nerve_cpp.so"; exit 1; }
    for f in packages rmw_typesupport; do
        [ -f "$prefix/share/ament_index/resource_index/$f/rmw_nerve_cpp" ] ||
            { echo "FAIL: ament index entry $f/rmw_nerve_cpp not installed"; exit 1; }
    done
    grep -qx 'rosidl_typesupport_fastrtps_c;rosidl_typesupport_fastrtps_cpp' \
        "$prefix/share/ament_index/resource_index/rmw_typesupport/rmw_nerve_cpp" ||
        { echo "FAIL: rmw_typesupport/rmw_nerve_cpp does not list its type supports"; exit 1; }
    echo "ok: $rmw with its ament index entries"
else
    echo "SKIP rmw_nerve_cpp: not built in $build (make ros2-venvs, then reconfigure)"
fi

echo "== ROS 2 message types with find_package(nerve)"
# The shipped headers, and nerve_generate_ros2_messages() on a .msg of the
# consumer's own; the generator needs a Python with rosbags (the build's).
ros2py=$(sed -n 's/^NERVE_ROS2GEN_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")
if [ -f "$prefix/include/nerve/ros2/sensor_msgs/msg/point_cloud2.hpp" ] && [ -n "$ros2py" ]; then
    [ -f "$prefix/share/nerve/python/nerve_ros2gen/__main__.py" ] ||
        { echo "FAIL: the ROS 2 generator is not installed"; exit 1; }
    mkdir -p "$tmp/ros2/msg/demo_msgs/msg"
    printf 'std_msgs/Header header\nwstring label\nfloat64[<=4] values\n' \
        >"$tmp/ros2/msg/demo_msgs/msg/Reading.msg"
    cat >"$tmp/ros2/CMakeLists.txt" <<'CEOF'
cmake_minimum_required(VERSION 3.20)
project(ros2_consumer CXX)
find_package(nerve REQUIRED)
nerve_generate_ros2_messages(TARGET demo_msgs
    MSG_FILES ${CMAKE_CURRENT_SOURCE_DIR}/msg/demo_msgs/msg/Reading.msg)
add_executable(ros2_consumer main.cpp)
target_link_libraries(ros2_consumer PRIVATE nerve::ros2_msgs demo_msgs)
CEOF
    cat >"$tmp/ros2/main.cpp" <<'CEOF'
#include <nerve/nerve.hpp>
#include <nerve/ros2/demo_msgs/msg/reading.hpp>
#include <nerve/ros2/sensor_msgs/msg/imu.hpp>

#include <cstdio>
#include <string>

// Publish and read back a shipped type and a generated one.
int main(int argc, char **argv)
{
    namespace sm = nerve::ros2::sensor_msgs::msg;
    namespace dm = nerve::ros2::demo_msgs::msg;
    const std::string p = argc > 1 ? argv[1] : "demo";
    auto pi = nerve::Publisher<sm::Imu>::create(p + "-imu");
    auto pr = nerve::Publisher<dm::Reading>::create(p + "-reading");
    auto ri = nerve::Reader<sm::Imu>::open(p + "-imu");
    auto rr = nerve::Reader<dm::Reading>::open(p + "-reading");
    int ok = pi && pr && ri && rr;
    sm::Imu imu;
    imu.header.frame_id = "imu";
    dm::Reading r;
    r.label = u"t\u00e9";
    r.values = {1.0, 2.0};
    if (ok) {
        ok = pi->publish(imu) && pr->publish(r);
    }
    sm::Imu imu2;
    dm::Reading r2;
    ok = ok && ri->get_next(imu2).has_data() && rr->get_next(r2).has_data() &&
         imu2 == imu && r2 == r;
    (void)nerve::Channel::unlink(p + "-imu");
    (void)nerve::Channel::unlink(p + "-reading");
    std::printf("ros2_consumer: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
CEOF
    # shellcheck disable=SC2086
    cmake -S "$tmp/ros2" -B "$tmp/ros2/build" $gen -DCMAKE_PREFIX_PATH="$prefix" \
        -DNERVE_ROS2GEN_PYTHON="$ros2py" >"$tmp/cfg2.log" ||
        { cat "$tmp/cfg2.log"; exit 1; }
    cmake --build "$tmp/ros2/build" -j2 >"$tmp/build2.log" ||
        { cat "$tmp/build2.log"; exit 1; }
    "$tmp/ros2/build/ros2_consumer" "$p-ros2"
else
    echo "skip: no ROS 2 message types in this build (no Python with rosbags)"
fi

echo "== C program with pkg-config nerve"
cat >"$tmp/hello.c" <<'CEOF'
#include <stdio.h>
#include <string.h>

#include <nerve/nerve.h>

/* Create a channel, put one message, read it back, remove the channel. */
int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "hello";
    nerve_chan *c = NULL;
    char buf[16] = {0};
    struct nerve_get_info gi = {0};
    int rc = nerve_chan_create(name, NULL);
    if (rc == 0)
        rc = nerve_chan_open(name, NERVE_O_WRITE, &c);
    if (rc == 0)
        rc = nerve_chan_put(c, "hello", 5, NERVE_FOREVER, NULL, 0);
    if (rc == 0)
        rc = nerve_chan_get(c, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST);
    nerve_chan_close(c);
    if (nerve_chan_unlink(name) != 0 && rc == 0)
        rc = -1;
    if (rc != 0 || gi.len != 5 || memcmp(buf, "hello", 5) != 0) {
        fprintf(stderr, "hello: %s\n", nerve_strerror(rc));
        return 1;
    }
    printf("hello: nerve %d.%d.%d round trip ok\n", NERVE_VERSION_MAJOR,
           NERVE_VERSION_MINOR, NERVE_VERSION_PATCH);
    return 0;
}
CEOF
PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
# nerve.pc records the prefix given at configure time; `cmake --install
# --prefix` does not rewrite it, so point pkg-config at the scratch prefix.
pcflags=$(pkg-config --define-variable=prefix="$prefix" --cflags --libs nerve)
echo "pkg-config: $pcflags"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$tmp/hello.c" $pcflags
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$tmp/hello" "$p-hello"

if [ -f "$prefix/include/ach.h" ]; then
    echo "== C program with pkg-config ach (Ach's API on nerve)"
    for f in include/ach/generic.h include/ach/experimental.h bin/nerve-ach; do
        [ -f "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
    done
    cat >"$tmp/hello_ach.c" <<'CEOF'
#include <stdio.h>
#include <string.h>

#include <ach.h>

/* Create an Ach channel, put one frame, get it back, remove it. */
int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "hello-ach";
    ach_channel_t c;
    char buf[16] = {0};
    size_t n = 0;
    enum ach_status r = ach_create(name, 4, 16, NULL);
    if (r == ACH_OK)
        r = ach_open(&c, name, NULL);
    if (r == ACH_OK)
        r = ach_put(&c, "hello", 5);
    if (r == ACH_OK)
        r = ach_get(&c, buf, sizeof buf, &n, NULL, ACH_O_LAST);
    if (r == ACH_OK)
        r = ach_close(&c);
    if (ach_unlink(name) != ACH_OK && r == ACH_OK)
        r = ACH_BUG;
    if (r != ACH_OK || n != 5 || memcmp(buf, "hello", 5) != 0) {
        fprintf(stderr, "hello_ach: %s\n", ach_result_to_string(r));
        return 1;
    }
    printf("hello_ach: Ach API round trip ok\n");
    return 0;
}
CEOF
    achflags=$(pkg-config --define-variable=prefix="$prefix" --cflags --libs ach)
    echo "pkg-config ach: $achflags"
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello_ach" "$tmp/hello_ach.c" $achflags
    LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$tmp/hello_ach" "$p-hello-ach"
    "$prefix/bin/nerve-ach" -V >/dev/null
fi

echo "== every installed program runs from the prefix (RUNPATH, no LD_LIBRARY_PATH)"
for exe in "$prefix"/bin/*; do
    [ -x "$exe" ] || continue
    out=$(env -u LD_LIBRARY_PATH "$exe" --help 2>&1) ||
        { echo "FAIL: $exe --help: $out"; exit 1; }
    case $out in
        *usage:*) echo "ok: $(basename "$exe") --help" ;;
        *) echo "FAIL: $exe --help printed no usage: $out"; exit 1 ;;
    esac
    if command -v readelf >/dev/null 2>&1; then
        readelf -d "$exe" | grep -q 'R.*PATH.*\$ORIGIN/\.\./' ||
            { echo "FAIL: $exe has no \$ORIGIN/../lib RUNPATH"; exit 1; }
    fi
done
[ -x "$prefix/bin/nerve-cyclic" ] || { echo "FAIL: nerve-cyclic not installed"; exit 1; }
env -u LD_LIBRARY_PATH PATH=/usr/bin:/bin "$prefix/bin/nerve" cyclic --help | grep -q usage ||
    { echo "FAIL: the installed nerve does not find nerve-cyclic beside it"; exit 1; }
env -u LD_LIBRARY_PATH "$prefix/bin/nerve" create "$p-inst" --size 64K >/dev/null
env -u LD_LIBRARY_PATH "$prefix/bin/nerve" put "$p-inst" hello
[ "$(env -u LD_LIBRARY_PATH "$prefix/bin/nerve" get "$p-inst")" = hello ] ||
    { echo "FAIL: installed nerve put/get"; exit 1; }
env -u LD_LIBRARY_PATH "$prefix/bin/nerve" rm "$p-inst"

echo "== man pages and shell completion"
mandir=$(find "$prefix" -type d -name man1 | head -n 1)
for page in nerve nerve-create nerve-ls nerve-get; do
    [ -f "$mandir/$page.1" ] || { echo "FAIL: $page.1 not installed"; exit 1; }
done
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$mandir/nerve-create.1" 2>/dev/null | grep -q -- '--slots' ||
        { echo "FAIL: nerve-create.1 does not render"; exit 1; }
fi
bc=$prefix/share/bash-completion/completions/nerve
zc=$prefix/share/zsh/site-functions/_nerve
[ -f "$bc" ] && [ -f "$zc" ] || { echo "FAIL: completion scripts not installed"; exit 1; }
PATH="$prefix/bin:$PATH" bash -c '. "$1"; COMP_WORDS=(nerve cr); COMP_CWORD=1; _nerve;
    [ "${COMPREPLY[*]}" = create ]' _ "$bc" ||
    { echo "FAIL: installed bash completion does not complete a verb"; exit 1; }
if command -v zsh >/dev/null 2>&1; then
    PATH="$prefix/bin:$PATH" zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit;
        compinit -u -D; autoload -Uz _nerve; [[ $_comps[nerve] == _nerve ]]' _ "$(dirname "$zc")" ||
        { echo "FAIL: installed zsh completion is not registered by compinit"; exit 1; }
fi

echo "test-install: ok"
