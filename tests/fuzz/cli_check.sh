#!/bin/sh
# `nerve check` on every corpus file named OPEN.CHECK.what (see
# gen_corpus.c): it must exit 0 exactly when CHECK is OK, 1 otherwise, and
# never crash (exit > 1 or a signal). Other corpus files must only not
# crash it.
#   cli_check.sh NERVE_BINARY CORPUS_DIR
set -u
nerve=$1
corpus=$2
name="nt-$$-cli"
file="/dev/shm/nerve.$name"
trap 'rm -f "$file"' EXIT INT TERM
fail=0
n=0
for f in "$corpus"/*; do
    base=$(basename "$f")
    cp "$f" "$file"
    "$nerve" check "$name" >/dev/null 2>&1
    rc=$?
    n=$((n + 1))
    want=
    case $base in
    *.OK.*) want=0 ;;
    *.*.*) want=1 ;;
    esac
    if [ "$rc" -gt 1 ]; then
        echo "FAIL: nerve check on $base: exit $rc (crash?)"
        fail=1
    elif [ -n "$want" ] && [ "$rc" != "$want" ]; then
        echo "FAIL: nerve check on $base: exit $rc, want $want"
        fail=1
    fi
done
rm -f "$file"
echo "nerve check: $n corpus files"
[ "$n" -gt 0 ] || { echo "FAIL: empty corpus"; exit 1; }
exit $fail
