#!/usr/bin/env python3
# Writes a synthetic `run` capture of 100 001 processes for timing the end-of-run summary:
#   python3 bench/summary-capture.py /tmp/100k.jsonl
#   hyperfine -N "proctrace replay /tmp/100k.jsonl --tree none" \
#     "proctrace replay /tmp/100k.jsonl --tree none --summary-json s.json --summary-md /dev/null"
# 100k processes: make (root) with 25k jobs in 4 slots, each `cc -c fN.c` forking cc1 then as (+ a fork).
# An optional second argument is the number of jobs (tests/it/html.rs: 2500, 10 001 processes).
# `--files` (after them) adds what `run --files` records of such a build (bench/html-scale FILES=1):
# each cc1 reads its source, two of the project's headers and 20 system headers and writes its
# `.s`, which the driver created and deletes and `as` reads; `as` creates and writes the `.o`;
# a final `ld` reads every `.o` and writes `prog` (about 7.5 uses per process).
import json, sys
files = '--files' in sys.argv
args = [a for a in sys.argv[1:] if a != '--files']
sys.argv = [sys.argv[0]] + args
out = open(sys.argv[1], 'w')
w = lambda o: out.write(json.dumps(o, separators=(',', ':')) + '\n')
root = 1000
w({"e":"header","header":{"mode":{"run":{"argv":["make","-j4"]}},"ts":0,"real_minus_mono":0,"tool":{"pid":1,"argv":["proctrace"],"version":"0","parent_sid":None},"backend":"connector","files":files}})
w({"e":"root","tgid":root})
w({"e":"fork","ts":1000,"parent_tgid":1,"child_pid":root,"child_tgid":root})
w({"e":"exec","ts":2000,"tgid":root})
w({"e":"exec_details","tgid":root,"details":{"argv":["make","-j4"],"exe":"/usr/bin/make","cwd":"/src","uid":0,"comm":"make"}})
pid = root + 1
slot_t = [10000]*4
events = []
def proc(ts_fork, ppid, p, argv, dur):
    ev = [(ts_fork, {"e":"fork","ts":ts_fork,"parent_tgid":ppid,"child_pid":p,"child_tgid":p}),
          (ts_fork+100, {"e":"exec","ts":ts_fork+100,"tgid":p}),
          (ts_fork+100, {"e":"exec_details","tgid":p,"details":{"argv":argv,"exe":"/usr/bin/"+argv[0].split('/')[-1],"cwd":"/src","uid":0,"comm":argv[0].split('/')[-1][:15]}}),
          (ts_fork+dur, {"e":"exit","ts":ts_fork+dur,"pid":p,"tgid":p,"status":0,"parent_tgid":ppid})]
    return ev
for j in range(int(sys.argv[2]) if len(sys.argv) > 2 else 25000):
    s = min(range(4), key=lambda i: slot_t[i]); t = slot_t[s]
    d = 1_000_000 + (j * 7919 % 1000) * 10_000
    cc = pid; pid += 4
    events += proc(t, root, cc, ["cc","-O1","-c","-o",f"f{j}.o",f"f{j}.c"], d)
    events += proc(t+200, cc, cc+1, ["/usr/lib/gcc/x86_64-linux-gnu/12/cc1","-quiet",f"f{j}.c","-o",f"/tmp/cc{j}.s"], d - 300_000)
    events += proc(t+d-290_000, cc, cc+2, ["as","--64","-o",f"f{j}.o",f"/tmp/cc{j}.s"], 200_000)
    events += [(t+d-50_000, {"e":"fork","ts":t+d-50_000,"parent_tgid":cc,"child_pid":cc+3,"child_tgid":cc+3}),
               (t+d-40_000, {"e":"exit","ts":t+d-40_000,"pid":cc+3,"tgid":cc+3,"status":0,"parent_tgid":cc})]
    if files:
        def use(ts, p, access, path): events.append((ts, {"e":"file","ts":ts,"tgid":p,"access":access,"path":path}))
        s_ = f"/tmp/cc{j}.s"
        use(t+150, cc, "create", s_); use(t+160, cc, "write", s_)
        c1 = t + 1000
        for k, path in enumerate([f"/src/f{j}.c", "/src/common.h", f"/src/d{j % 50}/h.h"] + [f"/usr/include/sys{k}.h" for k in range(20)]):
            use(c1 + k * 10, cc+1, "read", path)
        use(t+d-310_000, cc+1, "write", s_)
        use(t+d-280_000, cc+2, "read", s_)
        use(t+d-100_000, cc+2, "create", f"/src/f{j}.o"); use(t+d-95_000, cc+2, "write", f"/src/f{j}.o")
        use(t+d-60_000, cc, "delete", s_)
    slot_t[s] = t + d + 1000
end = max(slot_t) + 5000
if files:
    ld = pid; t = max(slot_t) + 100
    events += proc(t, root, ld, ["ld", "-o", "prog"], 3000)
    events += [(t+200+j, {"e":"file","ts":t+200+j,"tgid":ld,"access":"read","path":f"/src/f{j}.o"}) for j in range(int(sys.argv[2]) if len(sys.argv) > 2 else 25000)]
    events.append((t+2900, {"e":"file","ts":t+2900,"tgid":ld,"access":"write","path":"/src/prog"}))
    end = t + 5000
events.sort(key=lambda e: e[0])
for _, e in events: w(e)
w({"e":"exit","ts":end,"pid":root,"tgid":root,"status":0,"parent_tgid":1})
