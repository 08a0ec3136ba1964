//! The real-time argv reader: argv is read for vfork/posix_spawn/dash children too, and nothing
//! proctrace starts inherits real-time scheduling.
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Far below the goal (≥ 99.5% as root): a regression guard that holds under CI load.
const FLOOR: f64 = 0.80;

/// Of the execs by children of `parent`, how many there were and how many have `argv`.
fn argv_rate(lines: &[Value], parent: i64, argv: &Value) -> (usize, usize) {
    let execs: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "exec" && l["ppid"] == parent)
        .collect();
    let with = execs.iter().filter(|l| l["argv"] == *argv).count();
    (execs.len(), with)
}

/// Asserts the floor on the share of the `n` `/bin/true` children of `parent` whose argv was
/// read (every exec, `execs` of them, must be there unless events were lost), and prints it.
fn check_rate(what: &str, n: usize, execs: usize, lines: &[Value], parent: i64) {
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end");
    let lost = end["lost"].as_u64().unwrap();
    let (seen, with) = argv_rate(lines, parent, &json!(["/bin/true"]));
    let rate = with as f64 / n as f64;
    // Reported so the rate shows in test logs (cargo test -- --nocapture).
    eprintln!(
        "argv capture rate, {what}: {with}/{n} ({:.1}%), lost {lost}, reader {}",
        100.0 * rate,
        end["argv_reader"]
    );
    if lost == 0 {
        assert_eq!(seen, execs, "{what}: every exec captured");
    }
    if is_root() {
        assert!(
            rate >= FLOOR,
            "{what}: argv read for {with}/{n}, below the {}% floor",
            FLOOR * 100.0
        );
    }
}

#[test]
fn argv_is_read_for_vfork_children() {
    let sh = shapes();
    let n = 1000;
    let (out, lines) = run(
        &["--backend", "connector", "--tree", "none"],
        &[sh, "vfork", &n.to_string()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let root = find(&processes(&lines), &[sh, "vfork"]).pid;
    check_rate("vfork loop", n, n, &lines, root);
}

#[test]
fn argv_is_read_for_posix_spawn_children() {
    let sh = shapes();
    let n = 1000;
    let (out, lines) = run(
        &["--backend", "connector", "--tree", "none"],
        &[sh, "posix_spawn", &n.to_string()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let root = find(&processes(&lines), &[sh, "posix_spawn"]).pid;
    check_rate("posix_spawn loop", n, n, &lines, root);
}

#[test]
fn argv_is_read_for_a_dash_loop() {
    let n = 1000;
    let script = format!("for i in $(seq 1 {n}); do /bin/true; done");
    let (out, lines) = run(
        &["--backend", "connector", "--tree", "none"],
        &["/bin/sh", "-c", &script],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let root = find(&processes(&lines), &["/bin/sh", "-c"]).pid;
    // The loop's children: n × /bin/true and one seq.
    check_rate("dash loop", n, n + 1, &lines, root);
}

/// `policy=` and `nice=` of a line `shapes sched` printed.
fn field(line: &str, key: &str) -> i64 {
    line.split(' ')
        .find_map(|w| w.strip_prefix(key))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

#[test]
fn traced_command_and_descendants_do_not_inherit_real_time() {
    let sh = shapes();
    let out_file = tmp("out.jsonl");
    // The command prints its own scheduling and its parent's (proctrace's) threads', then that
    // of a child and a grandchild.
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            "connector",
            "-o",
            &out_file,
            "--tree",
            "none",
            "--",
        ])
        .args([sh, "sched", "2", "parent"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    // SAFETY: getpriority on ourselves.
    let our_nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) } as i64;
    for depth in 0..=2 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("sched {depth} ")))
            .unwrap_or_else(|| panic!("no line for depth {depth} in {text}"));
        assert_eq!(field(line, "policy="), libc::SCHED_OTHER as i64, "{line}");
        assert_eq!(field(line, "nice="), our_nice, "{line}");
    }
    let threads: Vec<&str> = text.lines().filter(|l| l.starts_with("thread ")).collect();
    assert!(threads.len() >= 2, "{text}");
    let end = read_lines(&out_file).pop().unwrap();
    let rt = (libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK) as i64;
    for t in threads {
        let policy = field(t, "policy=");
        if t.starts_with("thread pt-enrich ") && end["argv_reader"] == "realtime" {
            assert_eq!(policy, rt, "{t}");
        } else {
            // Only the reader is ever real-time.
            assert_eq!(policy, libc::SCHED_OTHER as i64, "{t}");
        }
    }
    if is_root() {
        assert_eq!(end["argv_reader"], "realtime", "{end}");
    } else {
        assert!(
            end["argv_reader"] == "nice" || end["argv_reader"] == "normal",
            "{end}"
        );
    }
}

#[test]
fn end_line_names_the_reader_mode() {
    let (out, lines) = run(&["--backend", "connector", "--tree", "none"], &["/bin/true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let end = lines.last().unwrap();
    if is_root() {
        assert_eq!(end["argv_reader"], "realtime", "{end}");
    }
    let (out, lines) = run(
        &["--backend", "connector", "--tree", "none", "--no-enrich"],
        &["/bin/true"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines.last().unwrap()["argv_reader"], "off");
}
