//! `proctrace analyze` of proctrace's own `-o` JSON Lines: the saved file gives the run back —
//! the same JSON Lines byte for byte, the same tree and summary.
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

fn proctrace(args: &[&str]) -> Output {
    Command::new(PROCTRACE)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Every recorded capture, replayed to JSON Lines, then that file analysed to JSON Lines again:
/// the bytes are equal (the `start` line included: it carries the mode, clock and backend of the
/// session, and `analyze` keeps them), and so are the tree and the summary on stderr — and the
/// JSON Lines of an `analyze` that keeps no exited records.
#[test]
fn every_capture_round_trips_through_json_lines() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/captures");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let cap = entry.unwrap().path();
        let cap = cap.to_str().unwrap();
        let (a, b) = (tmp("a.jsonl"), tmp("b.jsonl"));
        let (sa, sb) = (tmp("a.summary.json"), tmp("b.summary.json"));
        let rep = proctrace(&["replay", cap, "-o", &a, "--tree", "full", "--summary-json", &sa]);
        assert!(rep.status.success(), "{cap}: {}", stderr(&rep));
        let an = proctrace(&["analyze", &a, "-o", &b, "--tree", "full", "--summary-json", &sb]);
        assert!(an.status.success(), "{cap}: {}", stderr(&an));
        let (a_text, b_text) = (
            std::fs::read_to_string(&a).unwrap(),
            std::fs::read_to_string(&b).unwrap(),
        );
        assert!(a_text.lines().count() > 3, "{cap}: {a_text}");
        assert_eq!(b_text, a_text, "{cap}: JSON Lines differ");
        assert_eq!(stderr(&an), stderr(&rep), "{cap}: tree or summary differs");
        assert_eq!(
            std::fs::read_to_string(&sb).unwrap(),
            std::fs::read_to_string(&sa).unwrap(),
            "{cap}: summary JSON differs"
        );
        // Without a tree or summary, records are not kept (memory follows the live processes):
        // the streamed JSON Lines and the verdict line are the same.
        let c = tmp("c.jsonl");
        let st = proctrace(&["analyze", &a, "-o", &c, "--tree", "none"]);
        assert!(st.status.success(), "{cap}: {}", stderr(&st));
        assert_eq!(
            std::fs::read_to_string(&c).unwrap(),
            a_text,
            "{cap}: streamed JSON Lines differ"
        );
        assert_eq!(
            stderr(&st).lines().last(),
            stderr(&rep).lines().last(),
            "{cap}: verdict differs"
        );
        seen += 1;
    }
    assert!(seen >= 7, "only {seen} captures");
}

/// A live run with failures, a signal, a pipe and a background child: its `-o` file analysed
/// has the same processes, parentage and exit statuses, and prints the same tree and summary.
#[test]
fn a_live_run_analysed_gives_the_run_back() {
    let (out, live, file) = run_file(
        &["--tree", "full"],
        &[
            "sh",
            "-c",
            "true; sh -c 'exit 3'; sh -c 'kill -TERM $$'; ls / | wc -l >/dev/null; (sleep 5 &); exit 4",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let again = tmp("again.jsonl");
    let an = proctrace(&["analyze", &file, "-o", &again, "--tree", "full"]);
    assert!(an.status.success(), "{}", stderr(&an));
    let lines = read_lines(&again);
    let (want, got) = (processes(&live), processes(&lines));
    assert_eq!(got.len(), want.len());
    assert!(got.len() >= 6, "{got:#?}");
    for (pid, w) in &want {
        let g = &got[pid];
        assert_eq!(
            (g.ppid, &g.execs, &g.background),
            (w.ppid, &w.execs, &w.background),
            "{pid}"
        );
        let status = |p: &Proc| {
            p.exits
                .iter()
                .map(|x| (x["code"].clone(), x["signal"].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(status(g), status(w), "{pid}");
    }
    // (By status, not argv: a process this short may be gone before its argv is read.)
    let ended = |k: &str, v: i64| got.values().filter(|p| p.exits.iter().any(|x| x[k] == v)).count();
    assert_eq!(
        (ended("code", 3), ended("signal", 15), ended("code", 4)),
        (1, 1, 1),
        "{got:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );
    // The shell's own "Terminated" is not proctrace's.
    let ours: String = stderr(&out)
        .lines()
        .filter(|l| *l != "Terminated")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(stderr(&an), ours);

    let json = proctrace(&["analyze", &file, "--json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let end = live.last().unwrap();
    assert_eq!(end["event"], "end");
    assert_eq!(v["processes"], end["processes"], "{v:#}");
    assert_eq!(v["skipped_lines"], 0);
    assert_eq!(v["sessions"], Value::Null);
}

/// A proctrace killed mid-write leaves a cut last line and no `end`: still analysed, the cut
/// line counted; a bad line in the middle is an error naming file and line (exit 65), or with
/// `--lenient` skipped and counted.
#[test]
fn a_cut_last_line_and_a_bad_middle_line() {
    let (out, live, file) = run_file(&[], &["sh", "-c", "sh -c 'exit 7'; /bin/true; exit 0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    assert!(n >= 6, "{text}");

    // Cut inside the line before `end`: the end is gone, the cut line ignored.
    let cut = tmp("cut.jsonl");
    let keep: String = lines[..n - 2].iter().map(|l| format!("{l}\n")).collect();
    let half = &lines[n - 2][..lines[n - 2].len() / 2];
    std::fs::write(&cut, format!("{keep}{half}")).unwrap();
    let an = proctrace(&["analyze", &cut, "--json"]);
    assert!(an.status.success(), "{}", stderr(&an));
    let v: Value = serde_json::from_slice(&an.stdout).unwrap();
    assert_eq!(v["truncated_files"], 1, "{v:#}");
    assert_eq!(v["input"]["lines"], (n - 1) as u64);
    let forks = live.iter().filter(|l| l["event"] == "fork").count();
    assert_eq!(v["processes"], forks as u64);
    // The command succeeded: `exit 7` was handled, among the non-zero exits (issue 23 moved
    // every non-zero exit from `failures` to `nonzero_exits`).
    let failed = v["nonzero_exits"].as_array().unwrap();
    assert!(
        failed.iter().any(|f| f["code"] == 7 && f["handled"] == true),
        "{failed:?}"
    );

    // A bad line in the middle.
    let bad = tmp("bad.jsonl");
    let mut with_bad: Vec<&str> = lines.clone();
    with_bad.insert(2, "{\"event\":\"fork\",\"ts\":1.5,\"pid\":\"x\"}");
    std::fs::write(&bad, with_bad.join("\n") + "\n").unwrap();
    let strict = proctrace(&["analyze", &bad, "--tree", "none"]);
    assert_eq!(strict.status.code(), Some(65), "{}", stderr(&strict));
    assert!(
        stderr(&strict).contains(&format!("{bad}:3:")),
        "{}",
        stderr(&strict)
    );

    let lenient_out = tmp("lenient.jsonl");
    let lenient = proctrace(&["analyze", &bad, "--lenient", "-o", &lenient_out, "--json"]);
    assert!(lenient.status.success(), "{}", stderr(&lenient));
    let v: Value = serde_json::from_slice(&lenient.stdout).unwrap();
    assert_eq!(v["skipped_lines"], 1, "{v:#}");
    assert!(
        stderr(&lenient).contains("1 bad lines skipped"),
        "{}",
        stderr(&lenient)
    );
    assert_eq!(std::fs::read_to_string(&lenient_out).unwrap(), text);
}

/// A real run's `-o` file rewritten by JSON tools — `jq -c .` (numbers reprinted: `5.3688e-05`),
/// `jq -cS .` (keys sorted) and Python's `json.dumps` (spaces after `:` and `,`, non-ASCII
/// escaped) — is analysed to the same JSON Lines, byte for byte, the same tree and summary on
/// stderr and the same `--json` (but for the input's size) as the file proctrace wrote. All but
/// `wall_offset`: about 1.8e9 s, its nanoseconds do not fit in the float these tools read
/// numbers into (docs/json-lines.md), so it comes back within a microsecond, and the outputs
/// are compared with the original's offset put back.
#[test]
fn a_file_rewritten_by_json_tools_analyses_the_same() {
    let (out, live, file) = run_file(
        &["--tree", "full"],
        &[
            "sh",
            "-c",
            "true; sh -c 'exit 3'; ls / >/dev/null; (sleep 0.01); cat </dev/null; exit 0",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let forks = live.iter().filter(|l| l["event"] == "fork").count();
    assert!(forks >= 5, "{live:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    let rewrite = |argv: &[&str]| -> String {
        let o = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .unwrap();
        assert!(o.status.success(), "{argv:?}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let python = "import json, sys\nfor l in sys.stdin: print(json.dumps(json.loads(l)))";
    let analysed = |path: &str| {
        let o = tmp("o.jsonl");
        let an = proctrace(&["analyze", path, "-o", &o, "--tree", "full"]);
        assert!(an.status.success(), "{path}: {}", stderr(&an));
        let json = proctrace(&["analyze", path, "--json"]);
        assert!(json.status.success(), "{path}: {}", stderr(&json));
        let mut v: Value = serde_json::from_slice(&json.stdout).unwrap();
        v["input"]["bytes"] = Value::Null;
        (std::fs::read_to_string(&o).unwrap(), stderr(&an), v)
    };
    let want = analysed(&file);
    assert_eq!(want.0, text);
    // The `start` line's `wall_offset`, as written.
    let offset = |text: &str| -> String {
        let line = text.lines().next().unwrap();
        let at = line.find("\"wall_offset\":").unwrap() + "\"wall_offset\":".len();
        line[at..].split([',', '}']).next().unwrap().to_string()
    };
    let wall = offset(&text);
    for (how, argv) in [
        ("jq -c .", vec!["jq", "-c", "."]),
        ("jq -cS .", vec!["jq", "-cS", "."]),
        ("python json.dumps", vec!["python3", "-c", python]),
    ] {
        let rewritten = rewrite(&argv);
        assert_ne!(rewritten, text, "{how} changed nothing");
        assert_eq!(rewritten.lines().count(), text.lines().count(), "{how}");
        let path = tmp("rewritten.jsonl");
        std::fs::write(&path, &rewritten).unwrap();
        let got = analysed(&path);
        // The offset as the tool left it, to the nanosecond as read back: within 1 µs.
        let back = offset(&got.0);
        let ns = |s: &str| -> i128 {
            let (i, f) = s.split_once('.').unwrap();
            i.parse::<i128>().unwrap() * 1_000_000_000 + f.parse::<i128>().unwrap()
        };
        assert!(
            (ns(&back) - ns(&wall)).abs() < 1000,
            "{how}: wall_offset {back} for {wall}"
        );
        let put_back = |s: &str| s.replace(&back, &wall);
        assert_eq!(put_back(&got.0), want.0, "{how}: JSON Lines differ");
        assert_eq!(got.1, want.1, "{how}: tree or summary differs");
        let json = |v: &Value| put_back(&v.to_string());
        assert_eq!(json(&got.2), json(&want.2), "{how}: --json differs");
    }
}
