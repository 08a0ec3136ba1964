//! What each process cost, through the whole pipeline: the recorded `make -j2` with the kernel's
//! figures (`tests/fixtures/captures/make-j2-usage.jsonl`) replayed to JSON Lines, and that file
//! given to `analyze`: the summary names the hungriest process, the Chrome trace's memory counter
//! is valid, the SVG's hover text has each process's CPU and peak memory — every expectation
//! computed here from the JSON Lines `exit` lines, not copied from the outputs.
use std::collections::HashMap;
use std::process::{Command, Output};

use serde_json::Value;

use crate::chrome_check::{MEMORY_COUNTER, validate};
use crate::common::*;

fn proctrace(args: &[&str]) -> Output {
    Command::new(PROCTRACE)
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .unwrap()
}

/// The capture replayed to JSON Lines: the file, and its lines.
fn saved() -> (String, Vec<Value>) {
    let cap = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/captures/make-j2-usage.jsonl"
    );
    let file = tmp("usage.jsonl");
    let out = proctrace(&["replay", cap, "-o", &file, "--tree", "none"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&file);
    (file, lines)
}

/// A measured exit line's figures: (pid, user + system ns, peak KiB, argv's program).
fn figures(lines: &[Value]) -> Vec<(i64, u64, u64)> {
    let ns = |v: &Value| (v.as_f64().unwrap() * 1e9).round() as u64;
    lines
        .iter()
        .filter(|l| l["event"] == "exit" && l.get("cpu_user_s").is_some())
        .map(|l| {
            (
                l["pid"].as_i64().unwrap(),
                ns(&l["cpu_user_s"]) + ns(&l["cpu_sys_s"]),
                l["max_rss_kib"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `analyze` of the saved JSON Lines: the summary (text, JSON, Markdown) names the process with
/// the most CPU as the hungriest, lists by CPU and by peak memory in order, and gives the whole
/// tree's CPU over the wall time.
#[test]
fn analyze_names_the_hungriest_process() {
    let (file, lines) = saved();
    let figs = figures(&lines);
    assert_eq!(figs.len(), 19, "every process of the capture was measured");
    let (json, md) = (tmp("usage.summary.json"), tmp("usage.summary.md"));
    let out = proctrace(&[
        "analyze",
        &file,
        "--tree",
        "full",
        "--summary-json",
        &json,
        "--summary-md",
        &md,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    let hungriest = figs.iter().max_by_key(|f| f.1).unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["top_cpu"][0]["pid"], hungriest.0, "{v}");
    let by = |key: &str| -> Vec<i64> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["pid"].as_i64().unwrap())
            .collect()
    };
    let mut by_cpu = figs.clone();
    by_cpu.sort_by_key(|f| std::cmp::Reverse(f.1));
    assert_eq!(
        by("top_cpu"),
        by_cpu.iter().take(5).map(|f| f.0).collect::<Vec<_>>()
    );
    let mut by_rss = figs.clone();
    by_rss.sort_by_key(|f| std::cmp::Reverse(f.2));
    assert_eq!(
        by("top_rss"),
        by_rss.iter().take(5).map(|f| f.0).collect::<Vec<_>>()
    );
    let cpu_ns: u64 = figs.iter().map(|f| f.1).sum();
    assert!(
        (v["cpu_s"].as_f64().unwrap() - cpu_ns as f64 / 1e9).abs() < 1e-6,
        "{v}"
    );
    let wall = v["wall_s"].as_f64().unwrap();
    assert!((v["parallelism"].as_f64().unwrap() - cpu_ns as f64 / 1e9 / wall).abs() < 1e-9);
    assert_eq!(v["measured"], 19);
    // cc1 did the work of `cc -O2 -c -o f4.o f4.c`: named with that command.
    let line = text
        .lines()
        .find(|l| l.starts_with("hungriest: "))
        .unwrap_or_else(|| panic!("no hungriest line: {text}"));
    assert!(
        line.contains(&format!(" {} cc1, for: cc -O2 -c -o f4.o f4.c", hungriest.0)),
        "{line}"
    );
    assert!(text.contains("cores on average"), "{text}");
    // The tree has the columns, under their heading.
    assert!(
        text.lines()
            .next()
            .unwrap()
            .trim_end()
            .ends_with("wall      cpu      peak"),
        "{text}"
    );
    // `analyze --json` carries the same fields.
    let out = proctrace(&["analyze", "--json", &file]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "cpu_s",
        "cpu_user_s",
        "cpu_sys_s",
        "parallelism",
        "measured",
        "top_cpu",
        "top_rss",
    ] {
        assert_eq!(j[k], v[k], "{k}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains(&format!(
            "Hungriest: `cc1, for: cc -O2 -c -o f4.o f4.c` (pid {}",
            hungriest.0
        )),
        "{md}"
    );
}

/// `analyze --chrome` of the saved JSON Lines: a valid trace whose memory counter is the sum of
/// the peaks of the processes running at each moment (the checker recomputes it from the
/// slices), and whose highest value is the highest such sum over the JSON Lines' intervals.
#[test]
fn analyze_chrome_has_a_valid_memory_counter() {
    let (file, lines) = saved();
    let chrome = tmp("usage.chrome.json");
    let out = proctrace(&["analyze", &file, "--tree", "none", "--chrome", &chrome]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&chrome).unwrap();
    let got = validate(&text, &crate::chrome_out::expected(&lines)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.measured, 19, "{got:?}");
    assert!(text.contains(MEMORY_COUNTER));
    // The highest sum of peaks, from the JSON Lines alone.
    let peak: HashMap<i64, u64> = figures(&lines).into_iter().map(|f| (f.0, f.2)).collect();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1e9).round() as i64;
    let mut deltas: Vec<(i64, i64)> = Vec::new();
    let mut forks = HashMap::new();
    for l in &lines {
        let pid = l["pid"].as_i64().unwrap_or(0);
        match l["event"].as_str().unwrap() {
            "fork" => {
                forks.insert(pid, ns(&l["ts"]));
            }
            "exit" => {
                let kib = peak[&pid] as i64;
                deltas.push((forks[&pid], kib));
                deltas.push((ns(&l["ts"]), -kib));
            }
            _ => {}
        }
    }
    deltas.sort();
    let (mut now, mut highest) = (0i64, 0i64);
    for (_, d) in deltas {
        now += d;
        highest = highest.max(now);
    }
    assert_eq!(got.peak_memory_kib, highest, "{got:?}");
}

/// `analyze --svg`: every bar's hover text has its process's CPU and peak memory as the JSON
/// Lines give them.
#[test]
fn analyze_svg_hover_text_has_cpu_and_peak_memory() {
    let (file, lines) = saved();
    let svg = tmp("usage.svg");
    let out = proctrace(&["analyze", &file, "--tree", "none", "--svg", &svg]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    let peaks: HashMap<i64, u64> = figures(&lines).into_iter().map(|f| (f.0, f.2)).collect();
    let mut bars = 0;
    for bar in text.split("<rect class=\"bar ").skip(1) {
        let pid: i64 = bar
            .split("data-pid=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        let title = bar
            .split("<title>")
            .nth(1)
            .unwrap()
            .split("</title>")
            .next()
            .unwrap();
        assert!(title.contains("\nCPU "), "pid {pid}: {title}");
        let kib = peaks[&pid];
        let mib = kib as f64 / 1024.0;
        assert!(
            title.contains(&format!("peak memory {mib:.1} MiB"))
                || title.contains(&format!("peak memory {mib:.2} MiB")),
            "pid {pid} ({kib} KiB): {title}"
        );
        bars += 1;
    }
    assert_eq!(bars, 19);
}

/// What each process cost survives a Trace2 round trip: the capture replayed to a Trace2 event
/// stream (the figures are `data` events in category `proctrace`) and that stream given to
/// `analyze` gives every process back its figures — each exit line of `analyze -o` matches the
/// JSON Lines' to the stream's six decimals — and the same summary costs; the figures are not
/// left as ordinary data.
#[test]
fn costs_survive_a_trace2_round_trip() {
    let (file, lines) = saved();
    let t2 = tmp("usage.t2.json");
    let out = proctrace(&["analyze", &file, "--trace2-event", &t2, "--tree", "none", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let back = tmp("back.jsonl");
    let out = proctrace(&["analyze", &t2, "-o", &back, "--tree", "none", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let back_lines = read_lines(&back);
    // Pids are the sessions' own (from their SIDs): the same processes.
    let want: HashMap<i64, (u64, u64)> = figures(&lines).into_iter().map(|(p, c, m)| (p, (c, m))).collect();
    let got: HashMap<i64, (u64, u64)> = figures(&back_lines)
        .into_iter()
        .map(|(p, c, m)| (p, (c, m)))
        .collect();
    assert_eq!(got.len(), want.len(), "{got:?}\n{want:?}");
    for (pid, (cpu, rss)) in &want {
        let (c, r) = got
            .get(pid)
            .unwrap_or_else(|| panic!("no figures for {pid} after the round trip"));
        assert_eq!(r, rss, "{pid}");
        // Two fields, each cut to whole microseconds.
        assert!(c.abs_diff(*cpu) < 2_000, "{pid}: {c} vs {cpu}");
    }
    assert!(
        !back_lines
            .iter()
            .any(|l| l["event"] == "data" && l["category"] == "proctrace" && l["key"] == "cpu_user_s"),
        "the figures stayed data events"
    );
    let summary = |path: &str| -> Value {
        let out = proctrace(&["analyze", path, "--json", "--tree", "none"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (a, b) = (summary(&file), summary(&t2));
    assert_eq!(a["measured"], b["measured"]);
    assert!((a["cpu_s"].as_f64().unwrap() - b["cpu_s"].as_f64().unwrap()).abs() < 1e-4);
    assert_eq!(a["top_cpu"][0]["pid"], b["top_cpu"][0]["pid"]);
    assert_eq!(a["top_rss"][0]["max_rss_kib"], b["top_rss"][0]["max_rss_kib"]);
}
