#!/bin/sh
# The ach command (nerve-ach) round trip: mk, dump, file, chmod, rm and the
# deprecated -C -D -F -U flags, with their exit codes, checked against
# what the nerve command sees of the same channels.
# usage: test_ach_tool.sh NERVE_ACH NERVE
set -u
ACH=$1
NERVE=$2
for b in "$ACH" "$NERVE"; do
    [ -x "$b" ] || { echo "SKIP: $b is not built"; exit 77; }
done
p=nt-$$
fails=0
cleanup() {
    rm -f /dev/shm/nerve."$p"-* /dev/shm/nerve-bell."$p"-*
}
trap cleanup EXIT INT TERM

check() { # check WANT_STATUS DESCRIPTION COMMAND...
    want=$1; what=$2; shift 2
    out=$("$@" 2>&1); got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: $what: exit $got, want $want: $*"
        echo "$out" | sed 's/^/    /'
        fails=$((fails + 1))
    fi
    LAST_OUT=$out
}
contains() { # contains TEXT DESCRIPTION
    case $LAST_OUT in
    *"$1"*) ;;
    *) echo "FAIL: $2: output lacks '$1':"; echo "$LAST_OUT" | sed 's/^/    /'
       fails=$((fails + 1)) ;;
    esac
}

c=$p-chan
check 0 "mk" "$ACH" mk "$c" -m 8 -n 100
check 0 "nerve info" "$NERVE" info "$c"
contains "slots:           8" "ach mk sets the frame count"
check 1 "mk of an existing channel" "$ACH" mk "$c"
contains "ACH_EEXIST" "mk error names the status"
check 0 "mk -1 accepts an existing channel" "$ACH" mk -1 "$c"
check 0 "dump" "$ACH" dump "$c"
contains "$c" "dump names the channel"
check 0 "file" "$ACH" file "$c"
contains "/dev/shm/nerve.$c" "file prints the channel file"
[ -f "/dev/shm/nerve.$c" ] || { echo "FAIL: no channel file"; fails=$((fails + 1)); }

# data written with nerve comes back with nerve on the channel ach made
check 0 "nerve put" "$NERVE" put "$c" hello-ach
check 0 "nerve get" "$NERVE" get "$c" --format text
contains "hello-ach" "message round trip"

check 0 "chmod" "$ACH" chmod 600 "$c"
check 0 "nerve info after chmod" "$NERVE" info "$c"
contains "0600" "chmod sets the mode"
check 1 "chmod of a missing channel" "$ACH" chmod 600 "$p-none"
check 2 "chmod with a bad mode" "$ACH" chmod 999 "$c"

check 0 "mk -t re-creates" "$ACH" mk -t "$c" -m 4 -n 16
check 0 "nerve info after -t" "$NERVE" info "$c"
contains "slots:           4" "truncate re-creates with the new geometry"

check 0 "rm" "$ACH" rm "$c"
[ -f "/dev/shm/nerve.$c" ] && { echo "FAIL: rm left the file"; fails=$((fails + 1)); }
check 1 "rm of a missing channel" "$ACH" rm "$c"
contains "ACH_ENOENT" "rm error names the status"

# deprecated flags
d=$p-dep
check 0 "-C" "$ACH" -C "$d" -m 4 -n 32 -o 640
check 0 "nerve info after -C" "$NERVE" info "$d"
contains "0640" "-o sets the mode at creation"
check 0 "-D" "$ACH" -D "$d"
check 0 "-F" "$ACH" -F "$d"
contains "/dev/shm/nerve.$d" "-F prints the file"
check 0 "-U" "$ACH" -U "$d"
check 1 "-U again" "$ACH" -U "$d"

# usage errors and bad input
check 2 "no command" "$ACH"
check 2 "unknown verb" "$ACH" frobnicate "$c"
check 2 "missing name" "$ACH" mk
check 2 "bad count" "$ACH" mk "$c" -m 0
check 2 "bad size" "$ACH" mk "$c" -n abc
check 2 "two commands" "$ACH" -C "$c" -U "$c"
check 1 "invalid name" "$ACH" mk "bad/name"
contains "ACH_INVALID_NAME" "invalid name is reported"
check 0 "help" "$ACH" -h
contains "usage: ach" "help text"
check 0 "version" "$ACH" -V

if [ "$fails" -ne 0 ]; then
    echo "test_ach_tool: $fails failure(s)"
    exit 1
fi
echo "test_ach_tool: ok"
