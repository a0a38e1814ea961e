#!/bin/sh
# Model-check the channel protocol (model/nerve.pml), the channel's two
# names under create and unlink (model/names.pml), the writers'
# namespace claim (model/claim.pml), a channel's growth (model/grow.pml)
# and channels removed when unused (model/life.pml)
# with SPIN.
#
#   model/check.sh            every check below; exit 0 only if all pass
#   model/check.sh -q         the same, one line per check
#
# Three kinds of run, all exhaustive (SAFETY: assertions + invalid end
# states, which covers deadlock, lost wake-ups and writers stuck after a
# death):
#   verify   the real protocol at several bounds: must find no error and
#            must finish the search (not stop at the memory limit);
#   broken   deliberately wrong variants: SPIN must report the expected
#            error, or the model would be vacuous;
#   witness  WITNESS=k asserts that case k never happens: SPIN must find it,
#            which proves the bounds reach that case (wrap, overwrite,
#            recovery, torn copy, lost wake-up healed by the slice, ESRCH
#            takeover, a wake passed on by a woken reader, ...).
# Needs spin and a C compiler (Debian: spin, gcc). Work files go to a
# temporary directory. JOBS (default 2) runs that many checks at once.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
quiet=0
[ "${1:-}" = "-q" ] && quiet=1
jobs=${JOBS:-2}
memlim=${MODEL_MEMLIM_MB:-3072}

command -v spin >/dev/null 2>&1 || { echo "model: spin not found (apt-get install spin)"; exit 1; }
cc=${CC:-cc}
if [ "${1:-}" = "--one" ]; then
    work=$NERVE_MODEL_WORK  # one check of the pool below, in its directory
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/nerve-model.XXXXXX")
    trap 'rm -rf "$work"' EXIT INT TERM
fi

# name | kind | expected (broken: text in pan's report) | spin -D flags
# (flags that start with a .pml file name run that model, else nerve.pml).
# The longest searches come first, so the pool of $jobs never ends on one.
checks='
crash-2w   |verify |                          |-DDESC=0
modes      |verify |                          |-DNW=1 -DPUTS=4 -DDS=3 -DRMODES=13
desc-2w    |verify |                          |-DRMODES=1
wake       |verify |                          |-DNW=2 -DPUTS=1 -DNRD=2 -DGETS=1 -DRMODES=2 -DRKILLS=1 -DWKILLS=0
lease      |verify |                          |-DWAKE_SPLIT=1 -DLEASE_EXPIRY=1 -DNW=1 -DPUTS=2 -DNRD=2 -DGETS=1 -DRMODES=2 -DRKILLS=1
names      |verify |                          |names.pml -DNC=3 -DCREATES=2 -DNU=2 -DUNLINKS=2
names-stall|verify |                          |names.pml -DGIVEUP=1 -DNC=2 -DCREATES=2 -DNU=2 -DUNLINKS=2
chan-first |broken |(bname==0)                |names.pml -DBROKEN_CHANNEL_FIRST -DGIVEUP=1 -DNC=1 -DNU=1 -DUNLINKS=1
w-lone     |witness|                          |names.pml -DWITNESS=1
w-orphan-c |witness|                          |names.pml -DWITNESS=2 -DGIVEUP=1
w-orphan-u |witness|                          |names.pml -DWITNESS=3 -DGIVEUP=1
lock       |verify |                          |-DGHOST=1 -DREPAIR=1 -DNW=2 -DPUTS=1 -DGETS=1 -DRMODES=1
one-slot   |verify |                          |-DNS=1 -DNW=1 -DPUTS=3 -DRMODES=15
no-validate|broken |l==g_len[want]            |-DBROKEN_NO_VALIDATE -DWKILLS=0
pub-early  |broken |l==g_len[want]            |-DBROKEN_PUB_EARLY -DWKILLS=0
tail-late  |broken |l==g_len[want]            |-DBROKEN_TAIL_LATE -DWKILLS=0
byte-check |broken |assertion violated        |-DBROKEN_BYTE_CHECK -DWKILLS=0
no-recover |broken |invalid end state         |-DBROKEN_NO_RECOVER
wake-fence |broken |g_wkills>0                |-DBROKEN_NO_WAKE_FENCE -DWKILLS=0 -DNW=2 -DPUTS=1 -DNRD=2 -DGETS=1 -DRMODES=2
no-pass    |broken |g_pass_lost               |-DBROKEN_NO_PASS -DWAKE_SPLIT=1 -DLEASE_EXPIRY=1 -DWKILLS=0 -DNW=1 -DPUTS=1 -DNRD=2 -DGETS=1 -DRMODES=2
repair-live|broken |mtx==(me+1)               |-DBROKEN_REPAIR_LIVE -DREPAIR=1 -DWKILLS=0 -DNW=2 -DPUTS=1 -DGETS=1 -DRMODES=1
desc-no-clear|broken|l==g_len[want]          |-DBROKEN_DESC_NO_CLEAR -DWKILLS=0 -DNW=1 -DPUTS=3 -DRMODES=5
w-slot     |witness|                          |-DWITNESS=1
w-wrap     |witness|                          |-DWITNESS=2
w-torn     |witness|                          |-DWITNESS=3
w-slice    |witness|                          |-DWITNESS=4
w-recover  |witness|                          |-DWITNESS=5
w-missed   |witness|                          |-DWITNESS=6
w-bytes    |witness|                          |-DWITNESS=7
w-fullring |witness|                          |-DWITNESS=8
w-elapsed  |witness|                          |-DWITNESS=9
w-esrch    |witness|                          |-DWITNESS=10 -DGHOST=1
w-desc     |witness|                          |-DWITNESS=12
w-desc-fall|witness|                          |-DWITNESS=13
w-pass     |witness|                          |-DWITNESS=11 -DWAKE_SPLIT=1 -DWKILLS=0 -DNW=1 -DPUTS=1 -DNRD=2 -DGETS=1 -DRMODES=2
grow       |verify |                          |grow.pml
grow-3w    |verify |                          |grow.pml -DNW=3 -DPUTS=1 -DNG=1 -DKILLS=1
grow-no-mark|broken|invalid end state         |grow.pml -DBROKEN_NO_RECOVER_MARK
grow-copy-early|broken|head[h]==(g_last+1)    |grow.pml -DBROKEN_COPY_UNLOCKED
grow-w-recover|witness|                       |grow.pml -DWITNESS=1
grow-w-mark|witness|                          |grow.pml -DWITNESS=2
grow-w-follow|witness|                        |grow.pml -DWITNESS=3
grow-w-renamed|witness|                       |grow.pml -DWITNESS=4
claim-3ns  |verify |                          |claim.pml -DGHOST=1 -DKILLS=3 -DLOOPS=2
claim-2in1 |verify |                          |claim.pml -DNSCFG=1 -DGHOST=1 -DKILLS=3 -DLOOPS=2
claim-reuse|verify |                          |claim.pml -DNSCFG=2 -DGHOST=1 -DKILLS=3 -DLOOPS=2
claim-no-excl|broken|assertion violated       |claim.pml -DBROKEN_NO_EXCL
claim-reset-foreign|broken|nsof[(wown-1)]==my |claim.pml -DBROKEN_RESET_FOREIGN_ONLY -DNSCFG=2 -DGHOST=1
claim-no-reset|broken|nsof[(wown-1)]==my      |claim.pml -DBROKEN_NO_RESET -DGHOST=1
claim-no-hold|broken|assertion violated       |claim.pml -DBROKEN_NO_HOLD
claim-no-gate|broken|(adm[0]&&hold[0])       |claim.pml -DBROKEN_NO_GATE -DNSCFG=1 -DKILLS=0 -DLOOPS=1
claim-w-takeover|witness|                     |claim.pml -DWITNESS=1
claim-w-refused|witness|                      |claim.pml -DWITNESS=2
claim-w-cross|witness|                        |claim.pml -DWITNESS=3 -DGHOST=1
life       |verify |                          |life.pml
life-2r    |verify |                          |life.pml -DNO=1 -DNR=2
life-2g    |verify |                          |life.pml -DNO=1 -DNR=1 -DNG=2
life-2k    |verify |                          |life.pml -DNO=1 -DNR=1 -DKILLS=2
life-no-recheck|broken|!(removed[f])          |life.pml -DBROKEN_NO_RECHECK
life-no-k4 |broken |(rd[name]==0)             |life.pml -DBROKEN_NO_K4
life-hold-late|broken|!(removed[j])           |life.pml -DBROKEN_HOLD_LATE
life-leak  |broken |(rd[i]==0)                |life.pml -DBROKEN_LOCK_LEAKS
life-w-retry|witness|                         |life.pml -DWITNESS=1
life-w-busy|witness|                          |life.pml -DWITNESS=2
life-w-moved|witness|                         |life.pml -DWITNESS=3
life-w-killed|witness|                        |life.pml -DWITNESS=4
life-w-follow|witness|                        |life.pml -DWITNESS=5 -DNG=2 -DNO=0 -DNR=0
'

# run_one NAME KIND EXPECT FLAGS: writes $work/NAME.log and NAME.status
run_one() {
    name=$1 kind=$2 expect=$3 flags=$4
    d="$work/$name"
    mkdir -p "$d"
    file=nerve.pml
    case $flags in
    *.pml*) file=${flags%%.pml*}.pml; file=${file## }; flags=${flags#*.pml} ;;
    esac
    cp "$here/$file" "$d/$file"
    (
        cd "$d"
        start=$(date +%s)
        # shellcheck disable=SC2086
        spin -a $flags "$file" >spin.out 2>&1 || { cat spin.out; echo "spin -a failed"; exit 1; }
        # Only the full searches are long enough to repay -O2's compile
        # (4 s a model); broken variants and witnesses stop at an error.
        opt=-O0
        [ "$kind" = verify ] && opt=-O2
        "$cc" $opt -w -DSAFETY -DCOLLAPSE -DMEMLIM="$memlim" -o pan pan.c || exit 1
        ./pan -m200000 -w24 >pan.out 2>&1 || true
        end=$(date +%s)
        states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.out | head -n1)
        errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | head -n1)
        case $kind in
        verify)
            if [ "$errs" = 0 ] && ! grep -q "Search not completed\|reached -DMEMLIM" pan.out; then
                echo "PASS verify  $name: $states states, no error ($((end - start)) s)"
            else
                cat pan.out
                echo "FAIL verify  $name: errors=$errs (or search incomplete)"
                [ -f "$file.trail" ] && spin -t -p -g -l $flags "$file" 2>&1 | tail -n 60
                exit 1
            fi ;;
        broken)
            if [ "${errs:-0}" -gt 0 ] && grep -qF -- "$expect" pan.out; then
                why=$(grep -m1 "^pan:1:" pan.out | sed 's/^pan:1: //')
                echo "PASS broken  $name: caught: $why"
            else
                cat pan.out
                echo "FAIL broken  $name: SPIN did not report '$expect'"
                exit 1
            fi ;;
        witness)
            k=$(echo "$flags" | sed 's/.*WITNESS=\([0-9]*\).*/\1/')
            if [ "${errs:-0}" -gt 0 ] && grep -qF "assertion violated ($k!=$k)" pan.out; then
                echo "PASS witness $name: case $k reached"
            else
                cat pan.out
                echo "FAIL witness $name: case $k is not reachable at these bounds"
                exit 1
            fi ;;
        esac
    ) >"$d.log" 2>&1
    echo $? >"$d.status"
}

# sh check.sh --one LINE: run the check of one line of $checks.
if [ "${1:-}" = "--one" ]; then
    set +e  # a failed check writes its status; the summary reports it
    IFS='|' read -r name kind expect flags <<LINE
$2
LINE
    name=$(echo "$name" | tr -d ' ')
    kind=$(echo "$kind" | tr -d ' ')
    expect=$(echo "$expect" | sed 's/ *$//')
    run_one "$name" "$kind" "$expect" "$flags"
    exit 0
fi

# A pool of $jobs: xargs starts the next check as soon as one ends.
export NERVE_MODEL_WORK="$work"
echo "$checks" | grep -v '^ *$' | xargs -d '\n' -n 1 -P "$jobs" sh "$0" --one

fail=0
total=0
for st in "$work"/*.status; do
    total=$((total + 1))
    log="${st%.status}.log"
    if [ "$(cat "$st")" != 0 ]; then
        fail=$((fail + 1))
        cat "$log"
    elif [ $quiet = 1 ]; then
        tail -n1 "$log"
    else
        cat "$log"
    fi
done
if [ "$total" -lt 59 ]; then
    echo "model: only $total of 59 checks ran"
    exit 1
fi
echo "model: $((total - fail)) passed, $fail failed"
[ "$fail" = 0 ]
