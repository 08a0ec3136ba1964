#!/usr/bin/env python3
"""Builds tests/fixtures/captures/git-regions.jsonl: a real `proctrace run --record` capture of
git commands, with the regions and data git reported about itself in the same run (its
GIT_TRACE2_EVENT file) added as `region`/`data` events, the way `run --trace2` merges them.

    bench/git-regions-fixture.py PROCTRACE OUT.jsonl

Pids come from each SID's last part (`-P<hex pid>`); git's wall-clock times become the capture's
monotonic clock through the recorded header's real_minus_mono. Each note goes into the stream
after the last kernel event at or before its time (a region at its end), as a live merge delivers
it when nothing is late.
"""
import json, os, subprocess, sys, tempfile, datetime

def main():
    proctrace, out = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="git-regions-")
    src = os.path.join(work, "src")
    os.makedirs(src)
    git = lambda *a, **k: subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", *a],
                                         cwd=k.get("cwd", src), check=True, capture_output=True)
    git("init", "-q")
    for d in range(20):
        os.makedirs(os.path.join(src, f"d{d}"))
        for i in range(60):
            with open(os.path.join(src, f"d{d}", f"f{i}.txt"), "w") as f:
                f.write(f"line {d} {i}\n")
    git("add", ".")
    git("commit", "-qm", "one")
    t2 = os.path.join(work, "t2")
    cap = os.path.join(work, "cap.jsonl")
    script = ("git clone -q file://%s dst && git -C dst -c core.preloadIndex=true status --porcelain"
              " && git -C dst rev-parse --verify -q nosuch; exit 0") % src
    # Another command to look at (not the fixture's): FIXTURE_CMD, run by `sh -c` in the same
    # directory (`$SRC` names the generated repository).
    script = os.environ.get("FIXTURE_CMD", script).replace("$SRC", src)
    env = dict(os.environ, GIT_TRACE2_EVENT=t2)
    subprocess.run([proctrace, "run", "-q", "--record", cap, "--", "sh", "-c", script],
                   cwd=work, env=env, check=True)
    lines = [json.loads(l) for l in open(cap)]
    rmm = lines[0]["header"]["real_minus_mono"]

    def mono(t):
        d = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        us = int(d.timestamp()) * 1_000_000 + d.microsecond
        return us * 1000 - rmm

    def pid_of(sid):
        return int(sid.split("/")[-1].rsplit("-P", 1)[1], 16)

    notes = []  # (ts, seq, event)
    stacks = {}
    for n, raw in enumerate(open(t2)):
        ev = json.loads(raw)
        kind, sid, thread = ev["event"], ev.get("sid"), ev.get("thread", "main")
        if "time" not in ev:
            continue
        ts, pid = mono(ev["time"]), pid_of(sid)
        if kind == "region_enter":
            stacks.setdefault((sid, thread), []).append((ts, ev))
        elif kind == "region_leave":
            st, enter = stacks[(sid, thread)].pop()
            region = {"ts": st, "end": ts, "thread": thread, "category": enter.get("category", ""),
                      "label": enter.get("label", ""), "nesting": enter.get("nesting", 0)}
            if "msg" in enter:
                region["msg"] = enter["msg"]
            notes.append((ts, n, {"e": "region", "tgid": pid, "region": region}))
        elif kind in ("data", "data_json", "counter", "th_counter", "timer", "th_timer"):
            if kind == "data":
                value = {"text": ev["value"] if isinstance(ev["value"], str) else json.dumps(ev["value"])}
            elif kind == "data_json":
                value = {"json": json.dumps(ev["value"], separators=(",", ":"))}
            elif kind.endswith("counter"):
                value = {"counter": {"count": ev["count"], "per_thread": kind.startswith("th_")}}
            else:
                s = lambda k: round(ev[k] * 1e9)
                value = {"timer": {"intervals": ev["intervals"], "total_ns": s("t_total"),
                                   "min_ns": s("t_min"), "max_ns": s("t_max"),
                                   "per_thread": kind.startswith("th_")}}
            key = ev.get("key", ev.get("name", ""))
            notes.append((ts, n, {"e": "data", "tgid": pid, "data": {
                "ts": ts, "thread": thread, "category": ev.get("category", ""), "key": key,
                "nesting": ev.get("nesting", 0), "value": value}}))
    notes.sort(key=lambda x: (x[0], x[1]))
    merged, k = [], 0
    for line in lines:
        ts = line.get("ts")
        while ts is not None and k < len(notes) and notes[k][0] < ts:
            merged.append(notes[k][2])
            k += 1
        merged.append(line)
    # Notes after the last timestamped event (none expected: git exits after reporting).
    tail = [x[2] for x in notes[k:]]
    end = next((i for i, m in enumerate(merged) if m.get("e") == "summary"), len(merged))
    merged[end:end] = tail
    with open(out, "w") as f:
        for m in merged:
            f.write(json.dumps(m, separators=(",", ":")) + "\n")
    print(f"{len(lines)} capture lines, {len(notes)} notes -> {out}", file=sys.stderr)

main()
