#!/bin/sh
# test-bridge-smoke.sh SEARCH_PATH EXPECTED_RS
#
# `nerve bridge` as a user installed it, with PATH=SEARCH_PATH and nothing
# else (scripts/test-package.sh: the Debian packages' nerve and
# nerve-bridge-rs, with the wheels' nerve-tools; scripts/test-wheels.sh:
# the wheels' venv alone):
#   1. `nerve bridge --version` says "data path: rust" and names
#      EXPECTED_RS, the nerve-bridge-rs of that installation;
#   2. two bridges in two processes: one exports a channel on 127.0.0.1,
#      the other imports it in a mount namespace with a /dev/shm of its own
#      (a second host as far as nerve is concerned; `unshare -m` needs root,
#      else this part is skipped and says so). A message put on one side is
#      read with `nerve get` on the other; both bridges stop on SIGINT with
#      exit status 0.
# Every wait is bounded; the channel and the processes go however it exits.
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 SEARCH_PATH EXPECTED_RS" >&2
    exit 2
fi
path=$1
want=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nerve-bridge-smoke.XXXXXX")
ch=nt-$$-bridge
pids=""
cleanup() {
    for pid in $pids; do
        kill "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
    rm -f "/dev/shm/nerve.$ch" "/dev/shm/nerve-bell.$ch"
}
trap cleanup EXIT INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}
# Only what the installation puts on the PATH: no build tree, no override.
# (A command, not a function, so that `$run ... &` is the process itself,
# which SIGINT reaches.)
run="env -u PYTHONPATH -u NERVE_BRIDGE_RS -u NERVE_CLI PATH=$path"

ver=$($run nerve bridge --version 2>&1) || fail "nerve bridge --version: $ver"
case $ver in
    *"data path: rust ($want: "*) ;;
    *) fail "nerve bridge --version does not name the data path $want: $ver" ;;
esac
echo "ok: $ver"

if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null 2>&1; then
    echo "SKIP the two-process bridge smoke: the importer needs a /dev/shm of its own (unshare -m: root and util-linux)"
    exit 0
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
domain=$(($$ % 1000 + 5000))
$run nerve create "$ch" --size 64K >/dev/null
$run nerve bridge --listen "tcp/127.0.0.1:$port" --domain "$domain" --id nt-export \
    --export "$ch" 2>"$tmp/export.log" &
exporter=$!
pids=$exporter
# The importer and its reader, in a mount namespace with a fresh /dev/shm.
cat >"$tmp/import.sh" <<EOF
set -u
mount -t tmpfs -o size=16m nt-shm /dev/shm || exit 3
nerve bridge --connect tcp/127.0.0.1:$port --domain $domain --id nt-import \
    --import '$ch' 2>"$tmp/import.log" &
b=\$!
trap 'kill \$b 2>/dev/null' EXIT INT TERM
i=0
while [ \$i -lt 600 ]; do
    if [ "\$(nerve get '$ch' 2>/dev/null)" = hello ]; then
        kill -INT \$b
        wait \$b
        exit \$?
    fi
    sleep 0.1
    i=\$((i + 1))
done
kill \$b
exit 1
EOF
$run unshare -m sh "$tmp/import.sh" &
importer=$!
pids="$exporter $importer"
# The importer takes what is written after it subscribed: put until it has
# read one (bounded: 60 s).
i=0
while kill -0 "$importer" 2>/dev/null && [ $i -lt 600 ]; do
    $run nerve put "$ch" hello
    sleep 0.1
    i=$((i + 1))
done
rc=0
wait "$importer" || rc=$?
if [ $rc -ne 0 ]; then
    cat "$tmp/export.log" "$tmp/import.log" 2>/dev/null || true
    fail "the imported channel did not get the message within 60 s (exit $rc)"
fi
kill -INT "$exporter"
rc=0
wait "$exporter" || rc=$?
pids=""
[ $rc -eq 0 ] || { cat "$tmp/export.log"; fail "the exporting bridge exited $rc on SIGINT"; }
grep -q "data path: rust" "$tmp/export.log" && grep -q "data path: rust" "$tmp/import.log" ||
    { cat "$tmp/export.log" "$tmp/import.log"; fail "a bridge did not say 'data path: rust' when ready"; }
$run nerve rm "$ch"
echo "ok: a channel exported by one bridge is imported by another (two /dev/shm, 127.0.0.1)"
