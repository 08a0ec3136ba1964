//! Breaking things on purpose: overflow, interruption, full disks, strace as ground truth.
use std::collections::{BTreeMap, HashSet};
use std::process::{Command, Stdio};

use crate::common::*;

#[test]
fn forced_overflow_is_reported_and_matches_the_kernels_drop_counter() {
    let sh = shapes();
    let out_file = tmp("overflow.jsonl");
    let gens = 4;
    let per = 3000;
    let script = (0..gens)
        .map(|_| format!("{sh} storm {per} &"))
        .collect::<String>()
        + " wait";
    let out = Command::new(PROCTRACE)
        .args([
            // The connector's socket is what overflows (eBPF's ring is not sized by --buffer).
            "run",
            "--backend",
            "connector",
            "--buffer",
            "1",
            "--tree",
            "none",
            "-o",
            &out_file,
            "--",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Ground truth from the generators: how many children each made.
    let made: u64 = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(made, gens * per);
    let lines = read_lines(&out_file);
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end");
    let lost = end["lost"].as_u64().unwrap();
    assert!(lost > 0, "a 1-byte buffer under a storm must overflow: {end}");
    // Reported loss is exactly what the kernel says this socket dropped.
    assert_eq!(lost, end["socket_drops"].as_u64().unwrap(), "{end}");
    // Every loss appears in the stream where it was detected, and adds up.
    let in_stream: u64 = lines
        .iter()
        .filter(|l| l["event"] == "lost")
        .map(|l| l["count"].as_u64().unwrap())
        .sum();
    assert_eq!(in_stream, lost);
    // No storm child went missing without being counted.
    let root = end["pid"].as_i64().unwrap();
    let generators: HashSet<i64> = lines
        .iter()
        .filter(|l| l["event"] == "fork" && l["ppid"] == root)
        .map(|l| l["pid"].as_i64().unwrap())
        .collect();
    let forks_seen = lines
        .iter()
        .filter(|l| l["event"] == "fork" && generators.contains(&l["ppid"].as_i64().unwrap_or(-1)))
        .count() as u64;
    assert!(forks_seen <= made);
    assert!(
        made - forks_seen <= lost,
        "{} storm forks missing but only {lost} reported lost",
        made - forks_seen
    );
    assert!(stderr(&out).contains("events LOST"), "{}", stderr(&out));
}

both_backends! {
fn interrupting_the_tracer_forwards_flushes_and_summarises(backend: &str) {
    let out_file = tmp("interrupted.jsonl");
    let marker = tmp("up");
    let script = format!("trap 'exit 42' TERM; /bin/true; touch {marker}; while :; do sleep 0.02; done");
    let child = Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "-o", &out_file, "--", "sh", "-c", &script])
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&marker);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(42),
        "the command's own status after it handled the signal"
    );
    let lines = read_lines(&out_file);
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end", "outputs flushed and closed");
    assert_eq!(end["code"], 42);
    let is_true =
        |l: &serde_json::Value| l["argv"] == serde_json::json!(["/bin/true"]) || l["argv"].is_null();
    assert!(lines.iter().any(|l| l["event"] == "exec" && is_true(l)));
    assert!(
        stderr(&out).contains("exit 42"),
        "summary printed: {}",
        stderr(&out)
    );
}
}

both_backends! {
fn a_full_filesystem_stops_the_output_not_the_command(backend: &str) {
    let dir = tmp("smallfs");
    std::fs::create_dir_all(&dir).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=12k", "tmpfs", &dir])
        .status()
        .unwrap();
    assert!(st.success(), "mounting a small tmpfs (needs root)");
    let out_file = format!("{dir}/out.jsonl");
    let sh = shapes();
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            backend,
            "--tree",
            "none",
            "-o",
            &out_file,
            "--",
            "sh",
            "-c",
            &format!("{sh} spawn 300 /bin/true; exit 5"),
        ])
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&out_file).unwrap_or_default();
    let _ = Command::new("umount").arg(&dir).status();
    assert_eq!(
        out.status.code(),
        Some(5),
        "the command ran to completion: {}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(err.contains("stopped writing JSON Lines to"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!err.contains("panicked"));
    // What did get written is whole lines only.
    assert!(!text.is_empty());
    assert!(text.ends_with('\n'), "no torn last line");
    for l in text.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
}
}

#[test]
fn pid_reuse_and_thread_exits_match_strace() {
    let sh = shapes();
    let strace_out = tmp("strace.txt");
    let script = format!(
        "{sh} reuse-pid >/dev/null; {sh} threads-then-leader; {sh} leader-exits-first; \
         {sh} thread-exec /bin/true; {sh} spawn 200 /bin/true; {sh} fork-no-exec; {sh} reuse-pid >/dev/null; exit 0"
    );
    let mut argv = vec!["strace"];
    argv.extend(STRACE_ARGS);
    argv.extend(["-o", &strace_out, "sh", "-c", &script]);
    let (out, lines) = run(&["--tree", "none"], &argv);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The tracee is the first process in strace's output (not the smallest pid: pids wrap).
    let log = StraceLog::read(&strace_out);
    let (tracee, truth) = (log.first, log.statuses.clone());
    // proctrace's view of the same subtree: instances per pid with their status, in order.
    let mut mine: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut in_tree: HashSet<i64> = HashSet::from([tracee]);
    for l in &lines {
        let (Some(pid), Some(ev)) = (l["pid"].as_i64(), l["event"].as_str()) else {
            continue;
        };
        if ev == "fork" && (pid == tracee || in_tree.contains(&l["ppid"].as_i64().unwrap())) {
            in_tree.insert(pid);
            mine.entry(pid).or_default();
        }
        if ev == "exit" && in_tree.contains(&pid) {
            let s = match (l["code"].as_i64(), l["signal"].as_i64()) {
                (Some(c), _) => format!("code {c}"),
                (_, Some(s)) => crate::common::signame(s),
                _ => "unknown".into(),
            };
            mine.entry(pid).or_default().push(s);
        }
    }
    assert_eq!(lines.last().unwrap()["lost"], 0);
    assert_eq!(
        mine,
        truth
            .iter()
            .filter(|(p, _)| in_tree.contains(p))
            .map(|(p, v)| (*p, v.clone()))
            .collect()
    );
    assert_eq!(mine.len(), truth.len(), "same processes: {mine:?} vs {truth:?}");
    // The reused pids appear as two instances with different statuses.
    assert!(mine.values().filter(|v| v.len() == 2).count() >= 2, "{mine:?}");
    // argv: every exec strace saw is there, and every argv read is the one strace saw.
    let mut execs = 0;
    for l in lines.iter().filter(|l| l["event"] == "exec") {
        let pid = l["pid"].as_i64().unwrap();
        if !in_tree.contains(&pid) {
            continue;
        }
        execs += 1;
        if let Some(a) = l["argv"].as_array() {
            let words: Vec<&str> = a.iter().map(|w| w.as_str().unwrap()).collect();
            let seen = log.argv.get(&pid).map(Vec::as_slice).unwrap_or_default();
            assert!(
                seen.contains(&words.join(" ")),
                "pid {pid}: {words:?} not in {seen:?}"
            );
        }
    }
    let strace_execs: usize = log
        .argv
        .iter()
        .filter(|(p, _)| in_tree.contains(p))
        .map(|(_, a)| a.len())
        .sum();
    assert_eq!(execs, strace_execs, "as many execs as strace saw");
}
