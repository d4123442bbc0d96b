#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 'vmstack bench' in quick mode (VMSTACK_BENCH_QUICK=1): every benchmark
# runs, the JSON has every key with numbers, and --plot writes valid PNGs.
# Not a timing test: no figure is compared with a goal.
set -u
VMSTACK=$1
. "$(dirname "$0")/lib.sh"
dir=$TMP

err=$("$VMSTACK" bench thread --plot 2>&1 >/dev/null); rc=$?
check "--plot without a directory exits 2" test $rc -eq 2
check "--plot without a directory: one line" test "$(wc -l <<<"$err")" -eq 1

# Progress on a terminal (script(1) gives one), one line before each benchmark; none into a pipe.
if command -v script >/dev/null; then
  VMSTACK_BENCH_QUICK=1 script -qefc "'$VMSTACK' bench alloc switch" /dev/null >"$dir/tty" 2>&1
  check "progress on a terminal" grep -aq '^vmstack bench: switch (2 of 2, [0-9]*:[0-5][0-9] so far)' "$dir/tty"
  VMSTACK_BENCH_QUICK=1 "$VMSTACK" bench alloc switch >/dev/null 2>"$dir/pipe"
  check "no progress into a pipe" test "$(grep -c ' of 2, ' "$dir/pipe")" -eq 0
fi

touch "$dir/unrelated.txt"
json=$(VMSTACK_BENCH_QUICK=1 "$VMSTACK" bench --json --plot "$dir/plots" 2>"$dir/table"); rc=$?
check "bench --json --plot exits 0" test $rc -eq 0 || cat "$dir/table"
check "every key is there, with numbers" python3 -c '
import json, numbers, sys
d = json.loads(sys.argv[1])
def nums(obj, keys):
    for k in keys:
        assert isinstance(obj[k], numbers.Number), (k, obj[k])
nums(d["alloc_free_ns"], ("malloc", "mmap_guard", "vmstack"))
nums(d["spawn_ns"], ("heap", "mmap_guard", "vmstack"))
nums(d["switch_ns"], ("vmstack", "ucontext"))
nums(d["thread_ns"], ("glibc", "vmstack"))
nums(d["cache_effect"], ("on", "off", "off_no_pool", "on_2threads", "off_2threads"))
# run and trace preload an unsanitized library: skipped, without their keys, in sanitizer builds.
table = open(sys.argv[2]).read()
if "trace: skipped in a sanitizer build" not in table:
    nums(d, ("trace_overhead", "trace_startup_overhead"))
if "run: skipped in a sanitizer build" not in table:
    nums(d, ("run_overhead", "run_overhead_cpu"))
# peers needs Boost.Context; without it (or in a sanitizer build) the table says it was skipped.
if "peers: skipped" not in table:
    nums(d["peers"]["spawn_ns"], ("boost_fixedsize", "boost_pooled", "boost_protected", "vmstack"))
    nums(d["peers"]["switch_ns"], ("boost_fcontext", "vmstack_yield"))
# instructions needs valgrind and the peers module; the Boost.Fiber row needs libboost-fiber-dev.
if "instructions: skipped" not in table:
    ins = d["instructions"]
    for k in ("free_sp_vs_alloc", "callcc_spawn", "continuation_resume", "fiber_spawn_run_join", "yield",
              "thread_create_join"):
        nums(ins[k], ("vmstack", "peer", "ratio", "goal"))
        assert ins[k]["vmstack"] > 0 and ins[k]["peer"] > 0, (k, ins[k])
    for k in ("stack_alloc", "stack_free"):
        nums(ins[k], ("vmstack",))
        assert ins[k]["vmstack"] > 0, (k, ins[k])
    if "Boost.Fiber not built" not in table:
        nums(ins["boost_fiber_spawn_join"], ("vmstack", "peer", "ratio", "goal"))
for series in ("on", "off"):
    nums(d["cache_burst_ns"][series], ("8", "32", "128"))
for series in ("coloured", "plain"):
    nums(d["ring_ns"][series], ("2", "16", "64", "512"))
s = d["scale"]
assert s["guard_mode"] in ("madvise", "mprotect"), s
nums(s, ("live_stacks", "vmas_added", "rss_per_stack_bytes", "spawn_all_s", "spawn_all_cpu_s", "mprotect_ceiling"))
e = d["echo"]
for size in ("msg_64", "msg_512"):
    for k in ("req_per_s", "server_cpu_ns_per_req", "latency_p50_us", "latency_p99_us"):
        nums(e[size][k], ("fibers", "fibers-1t", "threads", "epoll"))
    nums(e[size], ("message_bytes",))
nums(e["rss_per_idle_conn_bytes"], ("fibers", "threads", "epoll"))
nums(e["kernel_stack_per_idle_conn_bytes"], ("threads",))
nums(e["trimmed_rss_per_idle_conn_bytes"], ("deep_4k", "deep_32k"))
nums(e, ("connections", "idle_connections", "fiber_vs_epoll", "fiber_vs_threads", "rss_idle_ratio", "trim_deep_ratio"))
# Go is built when it is installed; otherwise the table says the peer was skipped.
if "go: skipped" not in table:
    nums(e, ("fiber_vs_go",))
    nums(e["msg_64"]["req_per_s"], ("go-1p", "go"))
nums(d["offload"], ("file_read_vs_threadpool", "file_read_vs_threadpool_cached"))
t = d["tlb"]
for series in ("guarded_4k", "huge_2m"):
    nums(t[series], ("1", "10", "100", "1000"))
nums(t, ("huge_page_bytes", "stack_bytes", "touch_bytes"))
' "$json" "$dir/table"
for p in spawn thread tlb scale echo echo-rss; do
  check "vmstack-$p.png is a PNG" test "$(head -c 8 "$dir/plots/vmstack-$p.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a
done
check "the table names every benchmark" grep -q "tlb: one turn" "$dir/table"
check "unrelated files are left alone" test -f "$dir/unrelated.txt"

passed "all bench checks passed"
