#!/usr/bin/env python3
# Writes a synthetic `run` capture of a big C build for timing ingest (`bench/run --only ingest`):
#   python3 bench/ingest-capture.py JOBS OUT.capture.jsonl
#   proctrace replay OUT.capture.jsonl -o BIG.jsonl --tree none     # proctrace's own JSON Lines
# `make -j4` (root) runs JOBS compile jobs in 4 slots; each `cc -c` forks cc1 (with gcc's real
# argv length) then as: 3 processes a job, about 750 bytes of JSON Lines a process (its cost
# figures included: a `usage` event before each exit, as `run` records by default); one job in
# 1000 fails. Streams: events are written in time order through a heap, so memory stays small
# for any JOBS.
import heapq, json, sys

jobs, path = int(sys.argv[1]), sys.argv[2]
out = open(path, 'w', buffering=1 << 20)
w = lambda o: out.write(json.dumps(o, separators=(',', ':')) + '\n')
root = 1000
w({"e": "header", "header": {"mode": {"run": {"argv": ["make", "-j4"]}}, "ts": 0, "real_minus_mono": 0,
   "tool": {"pid": 1, "argv": ["proctrace"], "version": "0", "parent_sid": None}, "backend": "connector"}})
w({"e": "root", "tgid": root})
w({"e": "fork", "ts": 1000, "parent_tgid": 1, "child_pid": root, "child_tgid": root})
w({"e": "exec", "ts": 2000, "tgid": root})
w({"e": "exec_details", "tgid": root, "details": {"argv": ["make", "-j4"], "exe": "/usr/bin/make", "cwd": "/src/project",
                                                  "uid": 1000, "comm": "make"}})
heap, seq = [], 0


def push(ts, ev):
    global seq
    heapq.heappush(heap, (ts, seq, ev))
    seq += 1


def proc(t, ppid, p, argv, exe, dur, code=0):
    comm = argv[0].split('/')[-1][:15]
    push(t, {"e": "fork", "ts": t, "parent_tgid": ppid, "child_pid": p, "child_tgid": p})
    push(t + 100, {"e": "exec", "ts": t + 100, "tgid": p})
    push(t + 100, {"e": "exec_details", "tgid": p, "details": {"argv": argv, "exe": exe, "cwd": "/src/project",
                                                               "uid": 1000, "comm": comm}})
    # What it cost, before its exit, as the connector backend measures it (issue 12): `run -o`
    # writes these fields on every exit line by default.
    cpu = dur * 9 // 10
    push(t + dur, {"e": "usage", "tgid": p, "usage": {
        "cpu_user_ns": cpu * 4 // 5, "cpu_sys_ns": cpu // 5, "max_rss_kib": 2000 + (p * 37) % 90000,
        "read_chars": 100000 + p % 5000, "write_chars": 4096 * (p % 7), "read_bytes": 0, "write_bytes": 8192 * (p % 3),
        "cancelled_write_bytes": 0, "vol_ctx_switches": 1 + p % 13, "invol_ctx_switches": p % 5,
        "cpu_delay_ns": 1000 * (p % 997), "io_delay_ns": None}})
    push(t + dur, {"e": "exit", "ts": t + dur, "pid": p, "tgid": p, "status": code << 8, "parent_tgid": ppid})


GCC = "/usr/lib/gcc/x86_64-linux-gnu/12/"
slot_t, pid = [10000] * 4, root + 1
for j in range(jobs):
    s = min(range(4), key=lambda i: slot_t[i])
    t = slot_t[s]
    d = 1_000_000 + (j * 7919 % 1000) * 10_000
    src, obj = "src/module%d/file%d.c" % (j % 97, j), "obj/module%d/file%d.o" % (j % 97, j)
    cc = pid
    pid += 3
    proc(t, root, cc, ["cc", "-O2", "-g", "-Wall", "-Wextra", "-Iinclude", "-Isrc/module%d" % (j % 97),
                       "-DNDEBUG", "-c", "-o", obj, src], "/usr/bin/x86_64-linux-gnu-gcc-12", d,
         1 if j % 1000 == 999 else 0)
    proc(t + 200, cc, cc + 1, [GCC + "cc1", "-quiet", "-Iinclude", "-Isrc/module%d" % (j % 97), "-imultiarch",
                               "x86_64-linux-gnu", "-D", "NDEBUG", src, "-quiet", "-dumpdir", "obj/module%d/" % (j % 97),
                               "-dumpbase", "file%d.c" % j, "-dumpbase-ext", ".c", "-mtune=generic", "-march=x86-64",
                               "-g", "-O2", "-Wall", "-Wextra", "-fasynchronous-unwind-tables",
                               "-o", "/tmp/cc%06x.s" % j], GCC + "cc1", d - 300_000)
    proc(t + d - 290_000, cc, cc + 2, ["as", "--gdwarf-5", "--64", "-o", obj, "/tmp/cc%06x.s" % j],
         "/usr/bin/x86_64-linux-gnu-as", 200_000)
    slot_t[s] = t + d + 1000
    # Everything that starts before the earliest free slot is already queued: write it out.
    low = min(slot_t)
    while heap and heap[0][0] < low:
        w(heapq.heappop(heap)[2])
while heap:
    w(heapq.heappop(heap)[2])
end = max(slot_t) + 5000
w({"e": "exit", "ts": end, "pid": root, "tgid": root, "status": 0, "parent_tgid": 1})
out.close()
