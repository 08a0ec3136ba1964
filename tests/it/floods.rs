//! Bounded under floods from traced processes: a million Trace2 regions, a 200,000-deep process
//! chain, a pre-created socket directory. Time bounds here are guards far above what the work
//! takes (debug build), never benchmarks; the numbers measured are printed.
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::blind::untraced_bin;
use crate::common::*;

/// `tests/fixtures/flood.c`, compiled once per test run.
fn flood_bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("flood"))
}

/// Runs proctrace under GNU time: its output and its peak RSS, KiB.
fn with_peak_rss(args: &[&str]) -> (std::process::Output, u64) {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "peak-rss-kib %M"])
        .arg(PROCTRACE)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kib = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak-rss-kib "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {stderr}"));
    (out, kib)
}

fn end(lines: &[Value]) -> &Value {
    lines
        .iter()
        .rfind(|l| l["event"] == "end")
        .expect("an end record")
}

/// A million regions through `run --trace2 --tree none -o /dev/null`: proctrace's peak RSS
/// stays far below what keeping them would take (it was 361 MB; about 26 MB now).
#[test]
fn a_million_regions_keep_memory_bounded() {
    let (out, kib) = with_peak_rss(&[
        "run",
        "--trace2",
        "--tree",
        "none",
        "-o",
        "/dev/null",
        "--",
        flood_bin(),
        "1000000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "flood 1000000");
    eprintln!("1M Trace2 regions, --tree none -o /dev/null: peak RSS {kib} KiB");
    assert!(kib < 150_000, "peak RSS {kib} KiB");
}

/// A writer that enters regions and never leaves them: bounded too, and the run ends.
#[test]
fn regions_never_left_keep_memory_bounded() {
    let file = tmp("open.jsonl");
    let (out, kib) = with_peak_rss(&[
        "run",
        "--trace2",
        "--tree",
        "none",
        "-o",
        &file,
        "--",
        flood_bin(),
        "300000",
        "open",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    eprintln!("300k regions never left: peak RSS {kib} KiB");
    assert!(kib < 150_000, "peak RSS {kib} KiB");
    let lines = read_lines(&file);
    let regions = lines.iter().filter(|l| l["event"] == "region").count();
    // Those it kept open (256 on one connection) end at the writer's atexit; the rest are
    // counted on stderr.
    assert!((1..=256).contains(&regions), "{regions} regions");
    let dropped = format!("proctrace: --trace2: {} region events dropped", 300_000 - regions);
    assert!(stderr.contains(&dropped), "{stderr}");
}

/// Backpressure loses nothing: every region reaches JSON Lines. With the summary asked for
/// (regions kept to the end), a process keeps 50,000 and the rest are counted as not kept.
#[test]
fn a_flood_loses_no_line_and_counts_what_is_not_kept() {
    let file = tmp("flood.jsonl");
    let summary = tmp("flood-summary.json");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--trace2",
            "--tree",
            "none",
            "-o",
            &file,
            "--summary-json",
            &summary,
        ])
        .args(["--", flood_bin(), "60000"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = read_lines(&file);
    let regions = lines.iter().filter(|l| l["event"] == "region").count();
    assert_eq!(regions, 60_000);
    let e = end(&lines);
    assert_eq!(e["notes"], 60_000, "{e}");
    assert_eq!(e["notes_dropped"], 10_000, "{e}");
    assert!(stderr.contains("10000 Trace2 regions/data not kept"), "{stderr}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["regions"]["count"], 50_000, "{}", s["regions"]);
}

/// A JSON Lines trace of a chain `n` deep: each process the child of the one before, all
/// exiting at the end, innermost first.
fn chain(n: usize) -> String {
    let mut s = String::with_capacity(n * 200);
    s.push_str(
        r#"{"event":"start","ts":1.000000000,"tool":"proctrace","version":"0.1.0","backend":"connector","wall_offset":1700000000.250000000,"mode":"run","argv":["sh"]}"#,
    );
    s.push('\n');
    let mut us = 1_000_000u64;
    for i in 0..n {
        let pid = 100 + i;
        us += 1;
        s.push_str(&format!(
            "{{\"event\":\"fork\",\"ts\":{}.{:06}000,\"pid\":{pid},\"ppid\":{}}}\n",
            us / 1_000_000,
            us % 1_000_000,
            pid - 1
        ));
        us += 1;
        s.push_str(&format!(
            "{{\"event\":\"exec\",\"ts\":{}.{:06}000,\"pid\":{pid},\"ppid\":{},\"argv\":[\"sh\",\"-c\",\"x\"],\"comm\":\"sh\"}}\n",
            us / 1_000_000,
            us % 1_000_000,
            pid - 1
        ));
    }
    for i in (0..n).rev() {
        let pid = 100 + i;
        us += 1;
        s.push_str(&format!(
            "{{\"event\":\"exit\",\"ts\":{}.{:06}000,\"pid\":{pid},\"ppid\":{},\"code\":0}}\n",
            us / 1_000_000,
            us % 1_000_000,
            pid - 1
        ));
    }
    s
}

fn size(path: &str) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// A 200,000-deep chain through `analyze` with every output: done well within the guard (about
/// 30 s in a debug build on 2 busy cores; over 60 s for the tree alone before), no stack
/// overflow, and every output linear in the number of processes.
#[test]
fn a_200000_deep_chain_gives_linear_outputs_in_bounded_time() {
    let n = 200_000;
    let input = tmp("chain.jsonl");
    std::fs::write(&input, chain(n)).unwrap();
    let (chrome, svg, sj, md, t2, jsonl) = (
        tmp("c.json"),
        tmp("s.svg"),
        tmp("s.json"),
        tmp("s.md"),
        tmp("t2.event"),
        tmp("o.jsonl"),
    );
    let started = Instant::now();
    let out = Command::new(PROCTRACE)
        .args(["analyze", "--tree", "full"])
        .args(["--chrome", &chrome, "--svg", &svg, "--summary-json", &sj])
        .args(["--summary-md", &md, "--trace2-event", &t2, "-o", &jsonl])
        .arg(&input)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = &out.stderr;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(2000)..])
    );
    let sizes = [
        ("tree", stderr.len() as u64),
        ("chrome", size(&chrome)),
        ("svg", size(&svg)),
        ("summary-json", size(&sj)),
        ("summary-md", size(&md)),
        ("trace2-event", size(&t2)),
        ("jsonl", size(&jsonl)),
    ];
    eprintln!("200,000-deep chain, every output: {took:?}, bytes {sizes:?}");
    for p in [&input, &chrome, &svg, &sj, &md, &t2, &jsonl] {
        let _ = std::fs::remove_file(p);
    }
    assert!(took < Duration::from_secs(300), "took {took:?}");
    let n = n as u64;
    let per = |name: &str| sizes.iter().find(|s| s.0 == name).map_or(0, |s| s.1) / n;
    assert!(per("tree") < 200, "{sizes:?}");
    assert!(per("trace2-event") < 8_000, "{sizes:?}");
    assert!(per("chrome") < 1_000, "{sizes:?}");
    assert!(per("jsonl") < 500, "{sizes:?}");
    assert!(per("summary-json") < 1_000, "{sizes:?}");
    // The picture and the Markdown summary are bounded whatever the size of the run.
    assert!(sizes[2].1 < 2_000_000 && sizes[4].1 < 100_000, "{sizes:?}");
    let text = String::from_utf8_lossy(stderr);
    assert!(text.contains("… [depth 65] └─ 165 sh -c x"), "no depth marker");
    assert!(text.contains(&format!("… [depth {}] └─ {} sh -c x", n - 1, 100 + n - 1)));
    assert!(
        text.contains("200000 processes"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
}

both_backends! {
    /// A real chain 1,000 processes deep (each forks the next and waits): all seen, the tree
    /// capped at depth 64, output linear. (1,000, not more: on this kernel the chain itself is
    /// quadratic, 4.5 s bare at 1,000 deep, 50 s at 2,000, nearly all system time.)
    fn a_real_1000_deep_chain(backend: &str) {
        let n = 1000;
        let t2 = tmp("deep.event");
        let started = Instant::now();
        let (out, lines) = run_on(
            backend,
            &["--tree", "full", "--trace2-event", &t2],
            &[untraced_bin(), "deep", &n.to_string()],
        );
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}", &stderr[stderr.len().saturating_sub(2000)..]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("deep {n}"));
        let forks = lines.iter().filter(|l| l["event"] == "fork").count();
        assert_eq!(forks, n, "{backend}");
        assert_eq!(end(&lines)["processes"], n);
        assert!(stderr.contains(&format!("… [depth {}] └─ ", n - 1)), "{backend}: no depth marker");
        assert!(stderr.len() < n * 200, "{backend}: tree {} bytes", stderr.len());
        let t2_size = size(&t2) as usize;
        let _ = std::fs::remove_file(&t2);
        eprintln!("{backend}: {n}-deep chain in {took:?}, tree {} bytes, trace2 {t2_size} bytes", stderr.len());
        // About 15 lines a process (its costs are data events), each SID at most 16
        // components: some 15 KB a process, where git's SIDs would average 1,000 components.
        assert!(t2_size < n * 20_000, "{backend}: trace2 {t2_size} bytes");
        assert!(took < Duration::from_secs(120), "{backend}: took {took:?}");
    }
}

/// `run --trace2 -- sh -c '…; read'`: started, with its socket path read from its stdout; the
/// caller ends it by closing its stdin.
fn start_trace2_run(env: &[(&str, &str)]) -> (std::process::Child, String) {
    let mut child = Command::new(PROCTRACE)
        .args(["run", "--trace2", "--tree", "none", "--"])
        .args([
            "sh",
            "-c",
            r#"p=${GIT_TRACE2_EVENT#af_unix:stream:}; echo "$p $(stat -c %a "${p%/*}")"; read x"#,
        ])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = first_line(&mut child);
    (child, line.trim().to_string())
}

/// The `--trace2` socket directory has an unpredictable name (`mkdtemp`), mode 0700, removed at
/// the end: two runs at once get different names that do not hold proctrace's pid, and
/// pre-created old-style names (`proctrace-<pid>-<n>`) no longer make `run --trace2` fail.
#[test]
fn the_trace2_socket_directory_is_unpredictable() {
    let base = tmp("xdg");
    std::fs::create_dir_all(&base).unwrap();
    // The names the old scheme would have tried for the next pids: all taken.
    let next: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1);
    for pid in next + 1..next + 40 {
        for k in 0..100 {
            std::fs::create_dir_all(format!("{base}/proctrace-{pid}-{k}")).unwrap();
        }
    }
    let env = [("XDG_RUNTIME_DIR", base.as_str())];
    let (mut a, la) = start_trace2_run(&env);
    let (mut b, lb) = start_trace2_run(&env);
    let (pa, pb) = (a.id(), b.id());
    for c in [&mut a, &mut b] {
        c.stdin.take().unwrap().write_all(b"\n").unwrap();
    }
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(oa.status.success(), "{}", String::from_utf8_lossy(&oa.stderr));
    assert!(ob.status.success(), "{}", String::from_utf8_lossy(&ob.stderr));
    let mut dirs = Vec::new();
    for (line, pid) in [(&la, pa), (&lb, pb)] {
        let (path, mode) = line.split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(mode, "700", "{line}");
        let dir = std::path::Path::new(path).parent().unwrap();
        assert_eq!(dir.parent().unwrap(), std::path::Path::new(&base), "{path}");
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let suffix = name
            .strip_prefix("proctrace-")
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(suffix.len(), 6, "{name}");
        assert!(!suffix.contains(&pid.to_string()), "{name} holds the pid {pid}");
        // Removed at the end.
        assert!(!dir.exists(), "{} left behind", dir.display());
        dirs.push(name);
    }
    assert_ne!(dirs[0], dirs[1]);
}
