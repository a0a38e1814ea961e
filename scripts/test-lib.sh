# test-lib.sh: shell functions of scripts/test-install.sh and
# scripts/test-package.sh, which source it (POSIX sh). Both check an
# installed nerve in a scratch directory, on channels named nt-<pid>-*,
# and run the same examples against it.

# scratch_setup USAGE TAG ARG...: exit 2 with "usage: $0 USAGE" unless
# ARG... is one directory. Sets dir (that directory, absolute), src (the
# source tree), tmp (a new directory nerve-TAG.* under $TMPDIR) and p
# (nt-<pid>, the prefix of the channels the script makes); tmp and those
# channels are removed however the script exits.
scratch_setup() {
    usage=$1
    tag=$2
    shift 2
    if [ $# -ne 1 ] || [ ! -d "$1" ]; then
        echo "usage: $0 $usage" >&2
        exit 2
    fi
    dir=$(cd "$1" && pwd)
    src=$(cd "$(dirname "$0")/.." && pwd)
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/nerve-$tag.XXXXXX")
    p=nt-$$
    trap scratch_cleanup EXIT INT TERM
}

scratch_cleanup() {
    rm -rf "$tmp"
    rm -f /dev/shm/nerve."$p"-* /dev/shm/nerve-bell."$p"-*
}

# run_examples DIR: run the examples built in DIR (examples/) briefly,
# on channels $p-*; exits (set -e) when one fails.
run_examples() {
    "$1/imu_publisher" --channel "$p-imu" --rate 2000 --count 100 --keep
    "$1/controller" --imu "$p-imu" --cmd "$p-cmd" --count 1 --duration 10 --unlink
    "$1/sync_by_time" --imu "$p-simu" --scan "$p-sscan" --duration 0.2 --unlink
}
