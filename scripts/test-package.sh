#!/bin/sh
# test-package.sh PACKAGE_DIR
#
# Check the Debian packages of `make package` (PACKAGE_DIR holds the .debs)
# the way a robot builder meets them:
#   1. lintian finds nothing but the tags named below (each with its reason);
#   2. each library package's file names follow the SONAME, and it asks for
#      ldconfig through dpkg's trigger;
#   3. dpkg installs all of them into a fresh root: `dpkg --root` with an
#      admin directory whose status is this machine's, so dpkg checks every
#      Depends/Conflicts against the packages really installed here, unpacks,
#      records and configures them as on a real system, but writes only to
#      the scratch root;
#   4. C, C++ and Ach programs build against the files in that root alone,
#      with pkg-config (PKG_CONFIG_PATH, the .pc files find their own prefix)
#      and find_package(nerve) (CMAKE_PREFIX_PATH), and run with
#      LD_LIBRARY_PATH=ROOT/usr/lib/<multiarch>; ldd shows that libnerve
#      and libach come from the root, not from an earlier install;
#   5. the packaged nerve command runs, with its man pages and completion,
#      and its help names packages (not source paths) for what is missing;
#   6. nerve-ros2-dds (when `make package` found Cyclone DDS): depends on
#      Debian's Cyclone DDS library, installs the DDS configurations, and
#      with the wheels of NERVE_WHEELS_DIR (make test-package sets it) in a
#      fresh venv (NERVE_WHEELS_VENV when make made it), `nerve ros2` runs from the packages alone
#      (the root's nerve and nerve-ros2-dds, the venv's nerve-ros2) and
#      `nerve ros2 config` finds the files;
#   7. nerve-bridge (when `make package` had the Rust bridge's build): with
#      the root's usr/bin first on the PATH and the same venv's nerve-tools,
#      `nerve bridge --version` names the root's nerve-bridge-rs, and two
#      bridges carry a message between two /dev/shm
#      (scripts/test-bridge-smoke.sh).
# Removes the scratch root and any channel it made (nt-<pid>-*) however it
# exits.
set -eu

# shellcheck source=scripts/test-lib.sh
. "$(dirname "$0")/test-lib.sh"
scratch_setup PACKAGE_DIR package "$@"
pkgdir=$dir
fail() {
    echo "FAIL: $*"
    exit 1
}

abi=$(sed -n 's/^#define NERVE_ABI_VERSION \([0-9][0-9]*\).*/\1/p' \
    "$src/include/nerve/version.h")
debs=""
names="libnerve$abi libnerve-dev nerve libach-nerve0 libach-nerve-dev nerve-ach"
if ls "$pkgdir"/nerve-ros2-dds_*.deb >/dev/null 2>&1; then
    names="$names nerve-ros2-dds"
else
    echo "SKIP nerve-ros2-dds: not built (make package found no Cyclone DDS: apt-get install cyclonedds-dev)"
fi
if ls "$pkgdir"/nerve-bridge_*.deb >/dev/null 2>&1; then
    names="$names nerve-bridge"
else
    echo "SKIP nerve-bridge: not built (make package found no Rust bridge build: it needs cargo >= the crates' rust-version)"
fi
for name in $names; do
    f=$(ls "$pkgdir/${name}"_*.deb 2>/dev/null | head -n 1)
    [ -n "$f" ] || fail "package $name not built in $pkgdir"
    debs="$debs $f"
done

echo "== lintian"
# Tags accepted, and why:
#   initial-upload-closes-no-bugs  the packages are not uploaded to Debian's
#                                  archive, so no ITP bug is closed;
#   maintainer-script-empty        the libraries' postinst/postrm only keep
#                                  CPack from adding scripts that call
#                                  ldconfig; the ldconfig trigger runs it;
#   no-manual-page                 nerve-cyclic, nerve-ach and nerve-bridge-rs
#                                  have --help but no page
#                                  (tools/man/gen-man.py makes pages of the
#                                  nerve command's own verbs only).
if command -v lintian >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    if ! lintian --fail-on error,warning --tag-display-limit 0 \
        --suppress-tags initial-upload-closes-no-bugs,maintainer-script-empty,no-manual-page \
        $debs >"$tmp/lintian.log" 2>&1; then
        cat "$tmp/lintian.log"
        fail "lintian"
    fi
    echo "ok: lintian"
else
    echo "SKIP lintian: not installed (make package-deps installs it)"
fi

echo "== libraries: file names follow the SONAME, ldconfig by trigger"
for pair in "libnerve$abi:libnerve.so.$abi" "libach-nerve0:libach.so.0"; do
    pkg=${pair%%:*}
    soname=${pair##*:}
    deb=$(ls "$pkgdir/${pkg}"_*.deb)
    rm -rf "$tmp/x"
    dpkg-deb -x "$deb" "$tmp/x"
    link=$(find "$tmp/x" -name "$soname" -type l)
    [ -n "$link" ] || fail "$pkg has no $soname symlink"
    real=$(readlink "$link")
    case $real in
        "$soname".*) ;;
        *) fail "$pkg: $soname -> $real, whose name does not begin with the SONAME" ;;
    esac
    got=$(objdump -p "$(dirname "$link")/$real" | awk '$1 == "SONAME" {print $2}')
    [ "$got" = "$soname" ] || fail "$pkg: $real has SONAME '$got', expected $soname"
    dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./triggers | grep -qx 'activate-noawait ldconfig' ||
        fail "$pkg does not activate the ldconfig trigger"
    dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./shlibs | grep -q "^${soname%%.so.*} " ||
        fail "$pkg has no shlibs entry for $soname"
    echo "ok: $pkg: $soname -> $real, trigger ldconfig"
done

echo "== dpkg --root: install into a fresh root"
root=$tmp/root
admin=$root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers"
cp /var/lib/dpkg/status "$admin/status"
: >"$admin/available"
# The libraries' maintainer scripts are the empty ones above (checked by
# lintian's maintainer-script-empty); chrootless, as the root has no shell.
# shellcheck disable=SC2086
dpkg --root="$root" --admindir="$admin" --force-script-chrootless \
    --log=/dev/null -i $debs >"$tmp/dpkg.log" 2>&1 ||
    { cat "$tmp/dpkg.log"; fail "dpkg -i into the fresh root"; }
for name in $names; do
    st=$(dpkg-query --admindir="$admin" -W -f='${Status}' "$name")
    [ "$st" = "install ok installed" ] || fail "$name: dpkg status '$st'"
done
echo "ok: all installed and configured"
# The packages' own dependencies: dpkg refuses libnerve-dev without libnerve1.
if dpkg --root="$root" --admindir="$admin" --force-script-chrootless \
    --log=/dev/null -r "libnerve$abi" >"$tmp/dpkg-r.log" 2>&1; then
    fail "dpkg removed libnerve$abi while libnerve-dev and nerve depend on it"
fi
grep -q "depends on libnerve$abi" "$tmp/dpkg-r.log" ||
    { cat "$tmp/dpkg-r.log"; fail "dpkg -r libnerve$abi failed for another reason"; }
echo "ok: dpkg keeps libnerve$abi while its dependents are installed"

arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
libdir=$root/usr/lib/$arch
[ -L "$libdir/libnerve.so" ] || fail "libnerve.so (link for -lnerve) not in $libdir"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
export LD_LIBRARY_PATH="$libdir"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR

echo "== C and Ach programs with pkg-config"
# The .pc files are relocatable: their prefix is found from their place.
[ "$(pkg-config --variable=includedir nerve)" -ef "$root/usr/include" ] ||
    fail "pkg-config nerve includedir: $(pkg-config --variable=includedir nerve)"
cat >"$tmp/hello.c" <<'CEOF'
#include <stdio.h>
#include <string.h>

#include <nerve/nerve.h>

/* Put one message in a new channel, read it back, remove the channel. */
int main(int argc, char **argv)
{
    nerve_chan *c = NULL;
    char buf[16] = {0};
    struct nerve_get_info gi = {0};
    const char *text = NULL;
    int rc = argc == 2 ? nerve_chan_create(argv[1], NULL) : -1;
    if (rc == 0)
        rc = nerve_chan_open(argv[1], NERVE_O_WRITE, &c);
    if (rc == 0)
        rc = nerve_chan_put(c, "hello", 5, NERVE_FOREVER, NULL, 0);
    if (rc == 0)
        rc = nerve_chan_get(c, buf, sizeof buf, 0, 0, &gi, NERVE_GET_NEWEST);
    nerve_chan_close(c);
    if (argc == 2 && nerve_chan_unlink(argv[1]) != 0 && rc == 0)
        rc = -1;
    if (rc != 0 || gi.len != 5 || memcmp(buf, "hello", 5) != 0) {
        fprintf(stderr, "hello: %s\n", nerve_strerror(rc));
        return 1;
    }
    nerve_version(&text);
    printf("hello: round trip ok, headers %s, library %s\n",
           NERVE_VERSION_STRING, text);
    return 0;
}
CEOF
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$tmp/hello.c" $(pkg-config --cflags --libs nerve)
"$tmp/hello" "$p-hello"
cat >"$tmp/hello_ach.c" <<'CEOF'
#include <stdio.h>
#include <string.h>

#include <ach.h>

/* Create an Ach channel, put one frame, get it back, remove it. */
int main(int argc, char **argv)
{
    ach_channel_t c;
    char buf[16] = {0};
    size_t n = 0;
    enum ach_status r = argc == 2 ? ach_create(argv[1], 4, 16, NULL) : ACH_BUG;
    if (r == ACH_OK)
        r = ach_open(&c, argv[1], NULL);
    if (r == ACH_OK)
        r = ach_put(&c, "hello", 5);
    if (r == ACH_OK)
        r = ach_get(&c, buf, sizeof buf, &n, NULL, ACH_O_LAST);
    if (r == ACH_OK)
        r = ach_close(&c);
    if (argc == 2 && ach_unlink(argv[1]) != ACH_OK && r == ACH_OK)
        r = ACH_BUG;
    if (r != ACH_OK || n != 5 || memcmp(buf, "hello", 5) != 0) {
        fprintf(stderr, "hello_ach: %s\n", ach_result_to_string(r));
        return 1;
    }
    printf("hello_ach: Ach API round trip ok\n");
    return 0;
}
CEOF
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello_ach" "$tmp/hello_ach.c" $(pkg-config --cflags --libs ach)
"$tmp/hello_ach" "$p-hello-ach"
for exe in "$tmp/hello" "$tmp/hello_ach"; do
    for lib in "libnerve.so.$abi" libach.so.0; do
        where=$(ldd "$exe" | awk -v l="$lib" '$1 == l {print $3}')
        [ -z "$where" ] || [ "$where" -ef "$libdir/$lib" ] ||
            fail "$(basename "$exe") loads $lib from $where, not from the root"
    done
done
echo "ok: ldd resolves libnerve and libach in the root"

echo "== C++ examples and an Ach program with find_package(nerve)"
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
# shellcheck disable=SC2086
cmake -S "$src/examples" -B "$tmp/examples" $gen -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    -Dnerve_DIR="$libdir/cmake/nerve" >"$tmp/cfg.log" 2>&1 ||
    { cat "$tmp/cfg.log"; fail "cmake examples"; }
cmake --build "$tmp/examples" -j2 >"$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; fail "build examples"; }
run_examples "$tmp/examples"
mkdir -p "$tmp/achcmake"
cp "$tmp/hello_ach.c" "$tmp/achcmake/"
cat >"$tmp/achcmake/CMakeLists.txt" <<'CEOF'
cmake_minimum_required(VERSION 3.20)
project(hello_ach C)
find_package(nerve REQUIRED COMPONENTS ach)
add_executable(hello_ach hello_ach.c)
target_link_libraries(hello_ach PRIVATE nerve::ach)
CEOF
# shellcheck disable=SC2086
cmake -S "$tmp/achcmake" -B "$tmp/achcmake/b" $gen -Dnerve_DIR="$libdir/cmake/nerve" \
    >"$tmp/cfg-ach.log" 2>&1 || { cat "$tmp/cfg-ach.log"; fail "cmake Ach program"; }
cmake --build "$tmp/achcmake/b" >"$tmp/build-ach.log" 2>&1 ||
    { cat "$tmp/build-ach.log"; fail "build Ach program"; }
"$tmp/achcmake/b/hello_ach" "$p-cmake-ach"

echo "== the packaged nerve command"
bin=$root/usr/bin
"$bin/nerve" create "$p-cli" --size 64K >/dev/null
"$bin/nerve" put "$p-cli" hello
[ "$("$bin/nerve" get "$p-cli")" = hello ] || fail "packaged nerve put/get"
"$bin/nerve" rm "$p-cli"
PATH=/usr/bin:/bin "$bin/nerve" cyclic --help | grep -q usage ||
    fail "the packaged nerve does not find nerve-cyclic beside it"
"$bin/nerve-ach" -V >/dev/null || fail "nerve-ach -V"
man1=$root/usr/share/man/man1
for page in nerve nerve-create nerve-ls nerve-get; do
    [ -f "$man1/$page.1.gz" ] || fail "$page.1.gz not packaged"
done
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$man1/nerve-create.1.gz" 2>/dev/null | grep -q -- '--slots' ||
        fail "nerve-create.1.gz does not render"
fi
[ -f "$root/usr/share/bash-completion/completions/nerve" ] &&
    [ -f "$root/usr/share/zsh/site-functions/_nerve" ] || fail "completion not packaged"
if readelf -d "$bin/nerve" | grep -q 'R.*PATH'; then
    fail "the packaged nerve has a RUNPATH (Debian's programs use the system paths)"
fi

# The help of the packaged nerve names packages, never a source path.
help=$(PATH=/usr/bin:/bin "$bin/nerve" help)
if printf '%s\n' "$help" | grep -q 'pip install \./'; then
    fail "the packaged nerve help names a source path: $(printf '%s\n' "$help" | grep 'pip install')"
fi
printf '%s\n' "$help" | grep -q "^  top .*(not installed: install the nerve-tools Python package)" ||
    fail "the packaged nerve help does not name the nerve-tools package for top"
echo "ok: the packaged nerve help names packages"

# tools_venv: set venv to one holding the wheels of NERVE_WHEELS_DIR
# (NERVE_WHEELS_VENV when make made it for this run), or return 1 and say
# why when there are none.
tools_venv() {
    whl=$(ls "${NERVE_WHEELS_DIR:-/nonexistent}"/nerve_tools-*.whl 2>/dev/null | head -n 1)
    nwhl=$(ls "${NERVE_WHEELS_DIR:-/nonexistent}"/nerve-*.whl 2>/dev/null | head -n 1)
    if [ -z "$whl" ] || [ -z "$nwhl" ]; then
        echo "SKIP $1 from the packages: no nerve and nerve-tools wheels in NERVE_WHEELS_DIR (make test-package sets it)"
        return 1
    fi
    venv=${NERVE_WHEELS_VENV:-$tmp/venv}
    if [ -z "${NERVE_WHEELS_VENV:-}" ] && [ ! -x "$venv/bin/python" ]; then
        "$src/scripts/wheels-venv.sh" "$NERVE_WHEELS_DIR" "$venv" ||
            fail "pip install the nerve and nerve-tools wheels"
    fi
}

case " $names " in
*" nerve-ros2-dds "*)
    echo "== nerve-ros2-dds"
    deb=$(ls "$pkgdir"/nerve-ros2-dds_*.deb)
    dpkg-deb -f "$deb" Depends | grep -q 'libddsc0debian' ||
        fail "nerve-ros2-dds does not depend on Debian's Cyclone DDS (libddsc0debian): $(dpkg-deb -f "$deb" Depends)"
    for f in cyclonedds-loopback.xml cyclonedds-large-data.xml fastdds-large-data.xml \
        fastdds-loopback-jazzy.xml fastdds-loopback-kilted.xml; do
        [ -f "$root/usr/share/nerve/dds/$f" ] || fail "nerve-ros2-dds lacks /usr/share/nerve/dds/$f"
    done
    where=$(ldd "$bin/nerve-ros2-dds" | awk '$1 == "libddsc.so.0debian" {print $3}')
    [ -n "$where" ] || fail "nerve-ros2-dds does not load libddsc.so.0debian"
    echo "ok: depends on libddsc0debian ($where), ships the DDS configurations"
    if tools_venv "nerve ros2"; then
        rosenv="env -u PYTHONPATH -u NERVE_ROS2_DDS -u NERVE_CLI -u CYCLONEDDS_URI PATH=$bin:$venv/bin:/usr/bin:/bin"
        $rosenv nerve ros2 config loopback | grep -q "/dds/cyclonedds-loopback.xml$" ||
            fail "nerve ros2 config loopback"
        "$bin/nerve" create "$p-r2" --type std_msgs/msg/String --encoding cdr >/dev/null
        # The packaged nerve runs the venv's nerve-ros2, which runs the
        # root's nerve-ros2-dds (beside the nerve command): it joins DDS
        # (loopback only), publishes the channel, and stops on SIGINT
        # with its summary.
        $rosenv nerve ros2 --domain $(( $$ % 200 + 1 )) --dds-config loopback \
            --to-ros "$p-r2:/nt/chatter" >"$tmp/ros2.log" 2>&1 &
        bridge=$!
        i=0
        while [ $i -lt 300 ] && ! grep -q "to-ros $p-r2 -> /nt/chatter" "$tmp/ros2.log"; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -INT $bridge 2>/dev/null || true
        rc=0
        wait $bridge || rc=$?
        "$bin/nerve" rm "$p-r2"
        grep -q "to-ros $p-r2 -> /nt/chatter: 0 sent" "$tmp/ros2.log" && [ $rc -eq 0 ] ||
            { cat "$tmp/ros2.log"; fail "nerve ros2 from the packages (exit $rc)"; }
        echo "ok: nerve ros2 runs from the packages alone (nerve-ros2-dds of the root)"
    fi
    ;;
esac

case " $names " in
*" nerve-bridge "*)
    echo "== nerve-bridge"
    # The root's nerve-bridge-rs comes first on the PATH, before the
    # venv's (where the nerve-bridge wheel may have put another).
    if tools_venv "nerve bridge"; then
        "$src/scripts/test-bridge-smoke.sh" "$bin:$venv/bin:/usr/bin:/bin" "$bin/nerve-bridge-rs"
    fi
    ;;
esac

echo "== removal"
dpkg --root="$root" --admindir="$admin" --force-script-chrootless --log=/dev/null \
    -P nerve-bridge nerve-ros2-dds nerve-ach libach-nerve-dev libach-nerve0 nerve libnerve-dev "libnerve$abi" \
    >"$tmp/dpkg-P.log" 2>&1 || { cat "$tmp/dpkg-P.log"; fail "dpkg -P"; }
left=$(find "$root" -path "$admin" -prune -o ! -type d -print | head -n 5)
[ -z "$left" ] || fail "files left after purge: $left"
echo "ok: purged, nothing left"

echo "test-package: ok"
