#!/bin/sh
# Install the Debian packages named on the command line that are missing.
# Runs apt-get only when something is missing, so a set-up machine needs no
# network and no root.
#
# Another apt or dpkg may hold the package lock (a fresh cloud VM's
# unattended upgrades do, at boot): apt-get then waits for it up to
# NERVE_APT_LOCK_TIMEOUT seconds (default 600; apt's DPkg::Lock::Timeout,
# apt prints who holds it), and this script says so first. APT_GET and
# DPKG_QUERY name the programs (tests replace them).
set -eu
APT_GET=${APT_GET:-apt-get}
DPKG_QUERY=${DPKG_QUERY:-dpkg-query}
timeout=${NERVE_APT_LOCK_TIMEOUT:-600}
retry=${NERVE_APT_LOCK_RETRY:-5}
case $timeout$retry in
'' | *[!0-9]*)
    echo "deps: NERVE_APT_LOCK_TIMEOUT='$timeout' and NERVE_APT_LOCK_RETRY='$retry' must be whole seconds" >&2
    exit 2
    ;;
esac
missing=""
for p in "$@"; do
    if ! $DPKG_QUERY -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
echo "deps: if another apt or dpkg holds the package lock, waiting for it up to ${timeout} s (NERVE_APT_LOCK_TIMEOUT)"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
lock="-o DPkg::Lock::Timeout=$timeout"
# apt-get update takes the lists lock, which DPkg::Lock::Timeout may not
# cover: retry it every NERVE_APT_LOCK_RETRY (5) s while it fails on a
# lock, up to the timeout.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
waited=0
while :; do
    # shellcheck disable=SC2086
    if $SUDO $APT_GET $lock update -qq >"$out" 2>&1; then
        cat "$out"
        break
    fi
    cat "$out" >&2
    if ! grep -q "lock" "$out" || [ "$waited" -ge "$timeout" ]; then
        echo "deps: apt-get update failed (a lock held longer than ${timeout} s? raise NERVE_APT_LOCK_TIMEOUT)" >&2
        exit 1
    fi
    echo "deps: the apt lists lock is held by another program; waited ${waited} of ${timeout} s" >&2
    sleep "$retry"
    waited=$((waited + retry))
done
# shellcheck disable=SC2086
if ! $SUDO $APT_GET $lock install -y -qq --no-install-recommends $missing; then
    echo "deps: apt-get install failed:$missing (a lock held longer than ${timeout} s? raise NERVE_APT_LOCK_TIMEOUT)" >&2
    exit 1
fi
