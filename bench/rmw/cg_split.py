"""Instructions per message by library, and calls per message of the
functions that cost a system call, a clock read or an allocation, from two
callgrind runs (the main thread's file of --separate-threads=yes) of N1
and N2 messages (the difference divided by N2 - N1, so that start-up and
shutdown cancel out). Used by bench/rmw/rmw_cost.sh.

    python3 cg_split.py RUN1.cg RUN2.cg MESSAGES [ROOT_FN ...]

Self cost (Ir) is summed by the ELF object each function lives in, put in
the groups below (the first pattern that matches a path); ROOT_FN (e.g.
rcl_publish) adds each root's inclusive cost. Under valgrind (3.19, no
futex_waitv) nerve's wait polls in 1 ms slices, so its count depends on
time, not on the messages: rmw_cost.sh collects nothing inside its
wait_change, and the calls made there (counted all the same) are given
apart. Callgrind counts calls also where --toggle-collect does not
collect: the call counts include the benchmark loop's own (its clock
reads, its sleep)."""

from __future__ import annotations

import re
import sys

GROUPS = [
    ("rmw_nerve", "librmw_nerve_cpp"),
    ("rcl", "librcl."),
    ("rmw (librmw)", "librmw."),
    ("rcutils", "librcutils"),
    ("typesupport", "rosidl_typesupport"),
    ("typesupport", "__rosidl_"),
    ("rosidl runtime", "librosidl_runtime"),
    ("Fast CDR", "libfastcdr"),
    ("libnerve", "libnerve"),
    ("libstdc++", "libstdc++"),
    ("libc", "libc.so"),
    ("libc", "libc-"),
    ("ld.so", "ld-linux"),
    ("benchmark program", "rcl_latency"),
    ("benchmark program", "nerve_latency"),
]
# Functions whose calls are counted: a system call's wrapper, a clock read,
# an allocation, a lock.
COUNTED = [
    "malloc", "calloc", "realloc", "free", "operator new(unsigned long)",
    "operator delete(void*, unsigned long)", "operator delete(void*)",
    "clock_gettime", "__clock_gettime", "syscall", "futex_wake", "futex_wait",
    "pthread_mutex_lock", "__pthread_mutex_lock", "pthread_mutex_unlock",
    "__pthread_mutex_unlock", "fstat", "__fstat64", "fstatat", "lstat",
    "nerve_clock_now_ns", "wait_change", "wait_sleep", "snprintf",
]


def group_of(obj: str) -> str:
    for name, pat in GROUPS:
        if pat in obj:
            return name
    return "other: " + obj.rsplit("/", 1)[-1]


def parse(path: str):
    """Self Ir by object, inclusive Ir by function, calls by (caller, callee)."""
    names = {"ob": {}, "fn": {}}
    self_by_obj: dict[str, int] = {}
    pairs: dict[tuple[str, str], int] = {}
    incl: dict[str, int] = {}
    ob = fn = ""
    cfn = ""
    after_call = False
    pending = 0
    ref = re.compile(r"\((\d+)\)(?:\s+(.*))?")

    def resolve(kind: str, text: str) -> str:
        m = ref.match(text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), text)

    events_ir = 0
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("events:"):
            events_ir = line.split()[1:].index("Ir")
            continue
        key, sep, val = line.partition("=")
        if sep and key in ("ob", "fn", "cob", "cfn", "cfi", "cfl", "fl", "fi", "fe", "calls"):
            if key == "ob":
                ob = resolve("ob", val)
            elif key == "fn":
                fn = resolve("fn", val)
            elif key == "cob":
                resolve("ob", val)
            elif key == "cfn":
                cfn = resolve("fn", val)
            elif key == "calls":
                pending = int(val.split()[0])
                after_call = True
            continue
        if not line or not (line[0].isdigit() or line[0] in "+-*"):
            continue
        f = line.split()
        cost = int(f[1 + events_ir]) if len(f) > 1 + events_ir else 0
        incl[fn] = incl.get(fn, 0) + cost
        if after_call:
            # Calls are counted also while collection is off (outside
            # the roots): the benchmark loop's own clock reads are in.
            after_call = False
            pairs[(fn, cfn)] = pairs.get((fn, cfn), 0) + pending
            continue
        self_by_obj[ob] = self_by_obj.get(ob, 0) + cost
    return self_by_obj, incl, pairs


def bare(name: str) -> str:
    """A function's name without its symbol version (clock_gettime@@GLIBC_2.17)
    or callgrind's clone mark (put_msg'2)."""
    return re.split(r"@|'", name)[0]


def main() -> int:
    a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    roots = sys.argv[4:]
    (oa, ia, pa), (ob, ib, pb) = parse(a), parse(b)
    groups: dict[str, float] = {}
    for obj in set(oa) | set(ob):
        g = group_of(obj)
        groups[g] = groups.get(g, 0) + (ob.get(obj, 0) - oa.get(obj, 0)) / n
    total = sum(groups.values())
    print(f"  instructions / message, by library (self cost): total {total:.0f}")
    for g, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        if abs(v) >= 5:
            print(f"    {g:<22} {v:8.0f}")
    for r in roots:
        print(f"  {r} inclusive: {(ib.get(r, 0) - ia.get(r, 0)) / n:.0f}")
    # Calls by caller: callgrind counts some calls made where collection
    # is off (inside nerve's wait, in the benchmark's loop), so a count is
    # read together with its caller.
    print("  calls / message into clock reads, allocations, locks, system calls (caller -> callee):")
    arcs = {}
    for (caller, callee), v in pb.items():
        if bare(callee) in COUNTED:
            arcs[(caller, callee)] = (v - pa.get((caller, callee), 0)) / n
    for (caller, callee), v in sorted(arcs.items(), key=lambda kv: -kv[1]):
        if v >= 0.05:
            print(f"    {v:6.2f}  {bare(caller)[:50]} -> {bare(callee)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
