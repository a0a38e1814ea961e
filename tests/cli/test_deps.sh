#!/bin/sh
# scripts/deps.sh without installing anything: fake dpkg-query (every
# package missing) and apt-get (its update fails on the lists lock the
# first FAKE_LOCKED times, as while unattended upgrades run) through the
# APT_GET and DPKG_QUERY overrides. Checks that deps.sh says it waits for
# the lock, passes apt the bounded DPkg::Lock::Timeout, retries update
# while the lock is held and gives up with advice after the timeout.
# usage: test_deps.sh SRC_DIR
set -u
src=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
cat >"$dir/dpkg-query" <<'X'
#!/bin/sh
exit 1
X
cat >"$dir/apt-get" <<'X'
#!/bin/sh
echo "apt-get $*" >>"$FAKE_DIR/log"
n=$(cat "$FAKE_DIR/state" 2>/dev/null || echo 0)
case "$*" in
*update*)
    if [ "$n" -lt "$FAKE_LOCKED" ]; then
        echo $((n + 1)) >"$FAKE_DIR/state"
        echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
        exit 100
    fi ;;
esac
exit 0
X
chmod +x "$dir/dpkg-query" "$dir/apt-get"
deps() { # FAKE_LOCKED TIMEOUT PKG...
    locked=$1 t=$2
    shift 2
    rm -f "$dir/log" "$dir/state"
    FAKE_DIR=$dir FAKE_LOCKED=$locked APT_GET=$dir/apt-get \
        DPKG_QUERY=$dir/dpkg-query NERVE_APT_LOCK_TIMEOUT=$t \
        NERVE_APT_LOCK_RETRY=1 sh "$src/scripts/deps.sh" "$@" >"$dir/out" 2>&1
}
# The lock held during one update: deps says so, waits, installs.
deps 1 20 nerve-fake-pkg || fail "deps failed: $(cat "$dir/out")"
grep -q "waiting for it up to 20 s" "$dir/out" || fail "no word of the wait: $(cat "$dir/out")"
grep -q "lists lock is held" "$dir/out" || fail "the held lock not reported: $(cat "$dir/out")"
[ "$(grep -c update "$dir/log")" -eq 2 ] || fail "update not retried: $(cat "$dir/log")"
grep -q "DPkg::Lock::Timeout=20 install -y -qq --no-install-recommends nerve-fake-pkg" \
    "$dir/log" || fail "install without the lock timeout: $(cat "$dir/log")"
# Held past the timeout: exit 1 with what to do.
deps 99 2 nerve-fake-pkg && fail "deps succeeded with the lock held"
grep -q "raise NERVE_APT_LOCK_TIMEOUT" "$dir/out" || fail "no advice: $(cat "$dir/out")"
[ "$(grep -c update "$dir/log")" -le 4 ] || fail "retried past the timeout: $(cat "$dir/log")"
# Nothing missing: apt-get is not run at all.
rm -f "$dir/log"
printf '#!/bin/sh\necho "install ok installed"\n' >"$dir/installed"
chmod +x "$dir/installed"
FAKE_DIR=$dir FAKE_LOCKED=0 APT_GET=$dir/apt-get DPKG_QUERY=$dir/installed \
    sh "$src/scripts/deps.sh" any >/dev/null 2>&1 ||
    fail "deps failed with nothing missing"
[ ! -e "$dir/log" ] || fail "apt-get ran with nothing missing"
# A bad timeout is refused.
deps 0 soon x && fail "a bad NERVE_APT_LOCK_TIMEOUT was accepted"
[ $fails -eq 0 ] && echo "deps: ok"
exit $((fails != 0))
