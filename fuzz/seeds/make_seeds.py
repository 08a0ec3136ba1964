#!/usr/bin/env python3
"""Builds the fuzz seed corpora from real streams (run from the repository root).

fuzz/seeds/capture        tests/fixtures/captures/* (real `run --record` captures), one with
                          Trace2 regions and data points added to its processes, and a cut one;
                          each cut into pieces of at most 2 KB, the header line first.
fuzz/seeds/trace2_reader  real GIT_TRACE2_EVENT output: crates/trace2's corpus and, if given,
                          the files/directories named on the command line (git commands run for
                          the purpose, see BENCHMARKS.md), cut into pieces of at most 2 KB at
                          line boundaries (libFuzzer mutates small inputs faster), plus a
                          truncated-last-line variant of each file.
fuzz/seeds/jsonl          tests/fixtures/golden/*.jsonl (real `-o` output) and the every-key
                          files of tests/fixtures/jsonl, cut the same way, and each as
                          json.dumps rewrites it (spaces; sorted keys).

Small pieces: one execution costs about its size, and 10 million of them must fit in half an
hour on a shared core (fuzz/run.sh passes -max_len=2048).
"""
import json, os, sys, glob, hashlib

OUT = "fuzz/seeds"
MAX = 2 * 1024


def put(target, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pieces(data):
    """Line-boundary pieces of at most MAX bytes (a longer single line stays whole)."""
    cur = b""
    for line in data.splitlines(keepends=True):
        if cur and len(cur) + len(line) > MAX:
            yield cur
            cur = b""
        cur += line
    if cur:
        yield cur


def headed(target, data):
    """Pieces of at most MAX bytes, each after the first line (the header) of `data`."""
    lines = data.splitlines(keepends=True)
    put(target, data if len(data) <= MAX else lines[0])
    head, rest = lines[0], b"".join(lines[1:])
    for p in pieces(rest):
        put(target, head + p if len(head) + len(p) <= MAX else p)


def trace2_file(data):
    for p in pieces(data):
        put("trace2_reader", p)
    lines = data.splitlines(keepends=True)
    if len(lines) > 2:
        tail = b"".join(lines[-8:])
        put("trace2_reader", tail[: len(tail) - len(lines[-1]) // 2 - 1])


for path in sorted(glob.glob("tests/fixtures/captures/*.jsonl")):
    data = open(path, "rb").read()
    headed("capture", data)
put("capture", data[: MAX * 2 // 3])

# A capture with Trace2 notes (what `run --trace2 --record` writes): regions and data points on
# the processes of exec-twice, one after its process's exit and one for a pid never seen.
cap = open("tests/fixtures/captures/exec-twice.jsonl", "rb").read().splitlines()
events = [json.loads(l) for l in cap]
tss = [e["ts"] for e in events if "ts" in e]
pids = [e["child_tgid"] for e in events if e.get("e") == "fork"]
t0, t1 = min(tss), max(tss)
notes = []
for i, pid in enumerate(pids + [999999]):
    a = t0 + (t1 - t0) * (i + 1) // (len(pids) + 3)
    notes.append({"e": "region", "tgid": pid, "region": {"ts": a, "end": a + 1000, "thread": "main", "category": "index", "label": "do_read_index", "msg": ".git/index", "nesting": 1}})
    notes.append({"e": "region", "tgid": pid, "region": {"ts": a + 10, "end": a + 500, "thread": "th01:preload", "category": "", "label": "", "nesting": 2}})
    notes.append({"e": "data", "tgid": pid, "data": {"ts": a + 20, "thread": "main", "category": "fetch", "key": "total_rounds", "nesting": 1, "value": {"text": "1"}}})
    notes.append({"e": "data", "tgid": pid, "data": {"ts": a + 30, "thread": "main", "category": "p", "key": "j", "nesting": 1, "value": {"json": "{\"a\":[1,2]}"}}})
    notes.append({"e": "data", "tgid": pid, "data": {"ts": a + 40, "thread": "main", "category": "t", "key": "timer1", "nesting": 1, "value": {"timer": {"intervals": 3, "total_ns": 900, "min_ns": 100, "max_ns": 500, "per_thread": False}}}})
    notes.append({"e": "data", "tgid": pid, "data": {"ts": a + 50, "thread": "th02", "category": "t", "key": "c1", "nesting": 1, "value": {"counter": {"count": 7, "per_thread": True}}}})
late = dict(notes[0])
late["region"] = dict(late["region"], ts=t1 + 5, end=t1 + 50)
notes.append(late)
body = cap[1:-1] if json.loads(cap[-1]).get("e") == "summary" else cap[1:]
tail = [cap[-1]] if body is not cap[1:] else []
lines = [cap[0]] + body + [json.dumps(n, separators=(",", ":")).encode() for n in notes] + tail
headed("capture", b"\n".join(lines) + b"\n")

written = sorted(glob.glob("tests/fixtures/golden/*.jsonl")) + sorted(glob.glob("tests/fixtures/jsonl/*.jsonl"))
for path in written:
    headed("jsonl", open(path, "rb").read())
# The same as JSON tools rewrite it, which `analyze` reads to the same events: Python's
# json.dumps (spaces, non-ASCII escaped, numbers through a float: `1e-05`) and sorted keys as
# `jq -cS` prints them.
for path in written:
    lines = open(path, "rb").read().splitlines()
    for kw in (dict(), dict(sort_keys=True, separators=(",", ":"))):
        headed("jsonl", b"".join(json.dumps(json.loads(l), **kw).encode() + b"\n" for l in lines))

for path in sorted(glob.glob("crates/trace2/tests/fixtures/corpus/*.jsonl")) + sys.argv[1:]:
    if os.path.isdir(path):
        for f in sorted(os.listdir(path)):
            trace2_file(open(os.path.join(path, f), "rb").read())
    else:
        trace2_file(open(path, "rb").read())

# Dictionaries (fuzz/dict/TARGET.dict, passed by fuzz/run.sh): every JSON key and every short
# string value in the seeds, so mutations splice whole tokens (the targets are built without
# compare tracing, which costs a third of every execution).
import re

TOKEN = re.compile(rb'"([A-Za-z_][A-Za-z0-9_:.-]{0,30})"')
for target in sorted(os.listdir(OUT)):
    d = os.path.join(OUT, target)
    if not os.path.isdir(d):
        continue
    toks = set()
    for f in os.listdir(d):
        for m in TOKEN.finditer(open(os.path.join(d, f), "rb").read()):
            toks.add(m.group(1))
    os.makedirs("fuzz/dict", exist_ok=True)
    with open(f"fuzz/dict/{target}.dict", "w") as out:
        for t in sorted(toks):
            t = t.decode()
            out.write(f'"\\"{t}\\""\n')
            out.write(f'"\\"{t}\\":"\n')
