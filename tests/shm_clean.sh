#!/bin/sh
# Fixture: fail if any test left a channel ("nt-" prefix) in /dev/shm, and
# remove what it finds so one bad test does not fail every later run.
left=$(ls /dev/shm 2>/dev/null | grep -E '^nerve(-bell)?\.nt-' || true)
if [ -n "$left" ]; then
    echo "FAIL: tests left channels in /dev/shm:"
    echo "$left"
    for f in $left; do rm -f "/dev/shm/$f"; done
    exit 1
fi
echo "/dev/shm is clean"
