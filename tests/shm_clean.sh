#!/bin/sh
# Fixture around every ctest run. Test channels are named nt-<pid>-..., so
# a leftover is one whose process is gone (a live process may be another
# test run on the same machine). "before": remove leftovers of an earlier,
# interrupted run, so they cannot fail this one. "after": fail if any test
# left one behind (and remove it).
mode=${1:-after}
left=""
for f in $(ls /dev/shm 2>/dev/null | grep -E '^nerve(-bell)?\.nt-[0-9]+-' || true); do
    pid=$(echo "$f" | sed -E 's/^nerve(-bell)?\.nt-([0-9]+)-.*/\2/')
    if ! kill -0 "$pid" 2>/dev/null; then
        left="$left $f"
        rm -f "/dev/shm/$f"
    fi
done
if [ -n "$left" ] && [ "$mode" = after ]; then
    echo "FAIL: tests left channels in /dev/shm:$left"
    exit 1
fi
[ -n "$left" ] && echo "removed leftovers of an earlier run:$left"
echo "/dev/shm is clean"
exit 0
