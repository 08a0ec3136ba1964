//! `proctrace analyze` reads git Trace2 streams as they go: memory follows the sessions alive
//! at once, not the size of the input, and a directory target is merged with few files open.
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// Runs `sh -c SCRIPT` in a fresh repository with git's event target at `target` (regions
/// nested 10 deep, as `bench/run` does).
fn git_run(script: &str, target: &str) {
    let repo = tmp("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let out = Command::new("sh")
        .args(["-c", &format!("git init -q . && {script}")])
        .current_dir(&repo)
        .env("GIT_TRACE2_EVENT", target)
        .env("GIT_TRACE2_EVENT_NESTING", "10")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &repo)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}: {}", stderr(&out));
}

/// `proctrace analyze --json --tree none -o FILE PATH` under `prefix` (a wrapper command):
/// the JSON object, the JSON Lines and stderr.
fn analyze(prefix: &[&str], path: &str) -> (Value, Vec<Value>, String) {
    let out_file = tmp("analyze.jsonl");
    let (cmd, pre) = prefix
        .split_first()
        .map_or((PROCTRACE, &[][..]), |(c, r)| (*c, r));
    let out = Command::new(cmd)
        .args(pre)
        .args(if prefix.is_empty() {
            vec![]
        } else {
            vec![PROCTRACE]
        })
        .args(["analyze", "--json", "--tree", "none", "-o", &out_file, path])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "analyze {path}: {}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    (json, read_lines(&out_file), stderr(&out))
}

/// Every process exited 0 and has a real pid (no stand-in: nothing was mismatched).
fn all_real_and_fine(lines: &[Value]) -> usize {
    let ps = processes(lines);
    for p in ps.values() {
        assert!(p.pid < 4_194_304, "a stand-in pid: {p:?}");
        assert_eq!(p.exits.len(), 1, "{p:?}");
        assert_eq!(p.exits[0]["code"].as_i64(), Some(0), "{p:?}");
    }
    ps.len()
}

#[test]
fn a_directory_with_more_sessions_than_file_descriptors() {
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    // 60 commands one after another, then 40 at once (more overlapping sessions than the
    // merge may keep open under the limit below: they wait for a descriptor).
    git_run(
        "for i in $(seq 60); do git rev-parse --git-dir >/dev/null; done; \
         for i in $(seq 40); do git status -s >/dev/null & done; wait",
        &dir,
    );
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert!(files > 100, "{files} session files");
    // 24 descriptors: proctrace keeps at most 12 files open.
    let (json, lines, err) = analyze(&["prlimit", "--nofile=24:24", "--"], &dir);
    assert_eq!(json["sessions"].as_u64(), Some(files as u64), "{err}");
    assert_eq!(json["input"]["files"].as_u64(), Some(files as u64));
    assert!(json.get("error").is_none(), "{json}");
    // One process per session (git init included), every one ending as it did.
    assert_eq!(all_real_and_fine(&lines), files);
    assert_eq!(json["processes"].as_u64(), Some(files as u64));
}

/// The peak RSS (KiB) of `proctrace analyze FILE --tree none EXTRA`, and its JSON.
fn peak_rss(path: &str, extra: &[&str]) -> (u64, Value) {
    let out = Command::new("/usr/bin/time")
        .args([
            "-f",
            "maxrss %M",
            PROCTRACE,
            "analyze",
            "--json",
            "--tree",
            "none",
            path,
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let kb = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no maxrss in {err}"));
    (kb, serde_json::from_slice(&out.stdout).unwrap())
}

/// `text` with every SID prefixed by `c{copy}-` and every time moved `shift_s` seconds later.
fn shifted(text: &str, copy: usize, shift_s: f64) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        let line = line.replacen("\"sid\":\"", &format!("\"sid\":\"c{copy}-"), 1);
        let key = "\"time\":\"";
        match line.find(key) {
            Some(at) => {
                let from = at + key.len();
                let to = from + line[from..].find('"').unwrap();
                let t = trace2::Timestamp::parse_utc(&line[from..to])
                    .unwrap()
                    .add_seconds(shift_s);
                let mut b = Vec::new();
                t.write_utc_extended(&mut b);
                out.push_str(&line[..from]);
                out.push_str(std::str::from_utf8(&b).unwrap());
                out.push_str(&line[to..]);
            }
            None => out.push_str(&line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn memory_stays_flat_when_the_same_sessions_repeat() {
    let one = tmp("one.t2.json");
    git_run(
        "for i in $(seq 25); do echo $i >f$i && git add f$i && git commit -qm c$i && git status >/dev/null \
         && git log --oneline -3 >/dev/null; done; git gc -q",
        &one,
    );
    let text = std::fs::read_to_string(&one).unwrap();
    // The commands ran within this many seconds: copies follow one another, 1 s apart.
    let times: Vec<trace2::Timestamp> = text
        .lines()
        .filter_map(|l| {
            let at = l.find("\"time\":\"")? + 8;
            trace2::Timestamp::parse_utc(&l[at..at + l[at..].find('"')?])
        })
        .collect();
    let span =
        (times.iter().max().unwrap().as_micros() - times.iter().min().unwrap().as_micros()) as f64 / 1e6;
    let write = |name: &str, copies: usize| {
        let path = tmp(name);
        let mut all = String::new();
        for c in 0..copies {
            all += &shifted(&text, c, c as f64 * (span + 1.0));
        }
        std::fs::write(&path, all).unwrap();
        path
    };
    let small = write("x1.t2.json", 1);
    let n = (30_000_000 / text.len()).max(10);
    let big = write("xn.t2.json", n);
    // The model keeps every process it follows (for the tree): following none (`--root 1`,
    // a pid no process here has), what is left is the input's own memory.
    let (rss1, _) = peak_rss(&small, &["--root", "1"]);
    let (rssn, jn) = peak_rss(&big, &["--root", "1"]);
    assert_eq!(jn["input"]["late_lines"].as_u64(), Some(0));
    assert_eq!(
        jn["input"]["lines"].as_u64(),
        Some(text.lines().count() as u64 * n as u64)
    );
    let mb = std::fs::metadata(&big).unwrap().len() / 1_000_000;
    // Holding the input's events until the end would take about its size again; a window of
    // sessions, a few MB at most.
    assert!(
        rssn < rss1 + 6_000,
        "peak RSS {rss1} KiB for 1 copy ({} KB), {rssn} KiB for {n} ({mb} MB)",
        text.len() / 1000
    );
    // Following every process, the same copies are all there.
    let (_, j1) = peak_rss(&small, &[]);
    let (_, jn) = peak_rss(&big, &[]);
    assert_eq!(
        jn["processes"].as_u64(),
        Some(j1["processes"].as_u64().unwrap() * n as u64)
    );
}
