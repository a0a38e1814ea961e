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

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nerve-install.XXXXXX")
p=nt-$$
cleanup() {
    rm -rf "$tmp"
    rm -f /dev/shm/nerve."$p"-* /dev/shm/nerve-bell."$p"-*
}
trap cleanup EXIT INT TERM

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
"$ex/imu_publisher" --channel "$p-imu" --rate 2000 --count 100 --keep
"$ex/controller" --imu "$p-imu" --cmd "$p-cmd" --count 1 --duration 10 --unlink
"$ex/sync_by_time" --imu "$p-simu" --scan "$p-sscan" --duration 0.2 --unlink
"$ex/bench_cxx_overhead" --rounds 2 --batch 100 --channel "$p-bench" >/dev/null

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
