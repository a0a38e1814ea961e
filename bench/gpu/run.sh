#!/bin/sh
# bench/gpu/run.sh [BUILD_DIR]
#
# Run every row of the end-to-end GPU benchmark (nerve_gpu_e2e, built in
# BUILD_DIR, default "build", where CMake found a CUDA compiler): frames of
# 1 MiB, 6,220,800 B (1080p RGB) and 32 MiB, at 30 Hz and back-to-back,
# each through the four paths (direct, pageable, usual, floor) in one pair
# of processes. Writes bench/results/gpu-e2e-<host>.md (summary table, the
# program's own tables, host facts) and gpu-e2e-<host>.jsonl beside it.
# FRAMES (default 300) and FRAMES_30HZ (default 150) set the samples per
# path; OUT_DIR moves the results.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
bin=$build/bench/gpu/nerve_gpu_e2e
if [ ! -x "$bin" ]; then
    echo "run.sh: $bin is not built. It needs a CUDA compiler, e.g.:" >&2
    echo "  cmake -S $root -B $build -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc" >&2
    echo "  cmake --build $build --target nerve_gpu_e2e" >&2
    exit 2
fi
host=$(hostname -s 2>/dev/null || hostname)
out_dir=${OUT_DIR:-$root/bench/results}
mkdir -p "$out_dir"
md=$out_dir/gpu-e2e-$host.md
jsonl=$out_dir/gpu-e2e-$host.jsonl
log=$(mktemp)
trap 'rm -f "$log"' EXIT
: >"$jsonl"
frames=${FRAMES:-300}
frames30=${FRAMES_30HZ:-150}

for size in 1048576 6220800 33554432; do
    for rate in 30 0; do
        if [ "$rate" = 0 ]; then n=$frames; w=20; else n=$frames30; w=10; fi
        echo "== size $size, rate $rate (0: back-to-back), $n frames per path"
        "$bin" --size "$size" --rate "$rate" --frames "$n" --warmup "$w" \
            --json "$jsonl" | tee -a "$log"
        echo >>"$log"
    done
done

{
    echo "# GPU -> channel -> GPU across two processes ($host, $(date -u +%Y-%m-%d))"
    echo
    echo "\`bench/gpu/run.sh\` (\`nerve_gpu_e2e\`, \`bench/gpu/gpu_e2e.cu\`)."
    echo "End-to-end latency: frame ready on the writer's GPU -> frame on the"
    echo "reader's GPU, CLOCK_MONOTONIC after stream syncs, in microseconds."
    echo "The writer sends the next frame once the reader acknowledged the"
    echo "last one (no queueing); every frame verified on the reader's GPU."
    echo
    echo "Host: $(uname -srm); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"
    echo "$(nproc) CPUs; governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a);"
    echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'see JSON')."
    echo
    python3 - "$jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
paths = ["direct", "pageable", "usual", "floor"]
by = {}
for r in rows:
    by.setdefault((r["size"], r["rate_hz"]), {})[r["path"]] = r
def cell(r):
    if r is None:
        return "-"
    return "%.1f / %.1f / %.1f" % (r["p50_ns"] / 1e3, r["p99_ns"] / 1e3, r["max_ns"] / 1e3)
print("| size | rate | " + " | ".join(p + " p50 / p99 / max" for p in paths)
      + " | direct / floor (p50) | usual / floor (p50) | discarded | n |")
print("|---|---|" + "---|" * len(paths) + "---|---|---|---|")
for (size, rate), d in sorted(by.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
    fl = d.get("floor")
    ratio = lambda p: ("%.2f x" % (d[p]["p50_ns"] / fl["p50_ns"])) if fl and p in d else "-"
    disc = sum(r["discarded"] for r in d.values())
    n = min(r["n"] for r in d.values())
    print("| %d | %s | %s | %s | %s | %d | %d |" % (
        size, ("%g Hz" % rate) if rate else "back-to-back",
        " | ".join(cell(d.get(p)) for p in paths), ratio("direct"), ratio("usual"), disc, n))
regs = {(r["writer_reg"], r["reader_reg"]) for r in rows if r["path"] == "direct"}
print()
print("Ring registration (direct path), writer / reader: "
      + ", ".join("%s / %s" % x for x in sorted(regs)) + ".")
EOF
    echo
    echo "## Program output"
    echo
    echo '```'
    cat "$log"
    echo '```'
} >"$md"
echo "run.sh: wrote $md and $jsonl"
