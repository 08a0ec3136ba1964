//! One failure policy for every output of every command (issue 21): a failed write is reported by
//! its path and fails `analyze`/`replay`/`watch` (exit 74) while `run` keeps the command's status;
//! a closed stdout ends quietly; a usage error destroys nothing; a broken stderr never panics.
//! The outputs come from the registry, so a new output is covered without a new test.
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proctrace::output::registry::OUTPUTS;
use proctrace::output::{DestKind, OutputSpec};

use crate::common::*;

/// A recorded capture of a real `make -j2`.
fn capture() -> String {
    format!(
        "{}/tests/fixtures/captures/make-j2-usage.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every output that writes to a file, on a command that reads saved traces.
fn file_outputs() -> impl Iterator<Item = &'static OutputSpec> {
    OUTPUTS
        .iter()
        .copied()
        .filter(|s| !s.live_only && s.dest != DestKind::Endpoint)
}

fn proctrace(args: &[&str]) -> std::process::Output {
    Command::new(PROCTRACE).args(args).output().unwrap()
}

#[test]
fn every_output_that_cannot_be_written_is_named_and_fails_analyze_and_replay() {
    let cap = capture();
    let mut n = 0;
    for spec in file_outputs() {
        let flag = format!("--{}", spec.flag);
        for cmd in ["analyze", "replay"] {
            let out = proctrace(&[cmd, &cap, "--tree", "none", &flag, "/dev/full"]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(74), "{cmd} {flag} /dev/full: {err}");
            assert!(
                err.contains("'/dev/full'") && err.contains("No space left on device"),
                "{cmd} {flag}: {err}"
            );
            assert_eq!(err.matches("/dev/full").count(), 1, "said once: {err}");
        }
        n += 1;
    }
    assert!(n >= 8, "only {n} file outputs in the registry");
}

#[test]
fn run_keeps_the_commands_status_and_says_what_was_lost() {
    for spec in OUTPUTS.iter().filter(|s| s.dest != DestKind::Endpoint) {
        let flag = format!("--{}", spec.flag);
        let out = proctrace(&["run", "-q", &flag, "/dev/full", "--", "sh", "-c", "exit 7"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(7), "run {flag} /dev/full: {err}");
        assert!(err.contains("'/dev/full'"), "run {flag}: {err}");
    }
}

#[test]
fn a_late_usage_error_leaves_every_file_as_it_was() {
    let (jsonl, chrome, fresh, fresh_t2) = (tmp("t.jsonl"), tmp("c.json"), tmp("new.svg"), tmp("new.t2"));
    std::fs::write(&jsonl, "keep\n").unwrap();
    std::fs::write(&chrome, "keep too\n").unwrap();
    let marker = tmp("must-not-exist");
    let out = proctrace(&[
        "run",
        "-o",
        &jsonl,
        "--chrome",
        &chrome,
        "--svg",
        &fresh,
        "--trace2-perf",
        &fresh_t2,
        "--trace2-event",
        "rel/x",
        "--",
        "touch",
        &marker,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--trace2-event: 'rel/x'"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "keep\n");
    assert_eq!(std::fs::read_to_string(&chrome).unwrap(), "keep too\n");
    assert!(
        !std::path::Path::new(&fresh).exists(),
        "a file made for the refused run is gone again"
    );
    assert!(!std::path::Path::new(&marker).exists(), "the command did not run");

    // A backend that cannot be used (no connector in a private network namespace) is the same.
    let out = Command::new("unshare")
        .args([
            "--net",
            PROCTRACE,
            "run",
            "--backend",
            "connector",
            "-o",
            &jsonl,
            "--svg",
            &fresh,
            "--trace2-perf",
            &fresh_t2,
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "keep\n");
    for f in [&fresh, &fresh_t2] {
        assert!(
            !std::path::Path::new(f).exists(),
            "{f}: made for a run that never started"
        );
    }
}

#[test]
fn two_outputs_on_one_file_or_an_output_on_an_input_are_usage_errors() {
    let f = tmp("one.jsonl");
    std::fs::write(&f, "keep\n").unwrap();
    let out = proctrace(&["run", "-o", &f, "--chrome", &f, "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("both write"), "{}", stderr(&out));
    // The same file by another name.
    let (dir, name) = f.rsplit_once('/').unwrap();
    let other = format!("{dir}/../{}/{name}", dir.rsplit_once('/').unwrap().1);
    let out = proctrace(&["run", "-o", &f, "--svg", &other, "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{other}: {}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "keep\n");

    let input = tmp("in.jsonl");
    std::fs::copy(capture(), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let out = proctrace(&["analyze", &input, "-o", &input]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("both an input and the --output"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

/// Runs proctrace with its stdout a pipe whose reader is already gone.
fn with_stdout_closed(args: &[&str]) -> std::process::Output {
    let mut child = Command::new(PROCTRACE)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let cap = capture();
    let other = format!(
        "{}/tests/fixtures/captures/make-j2.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    for args in [
        vec!["analyze", &cap, "--json"],
        vec!["analyze", &cap, "-o", "-", "--tree", "none"],
        vec!["analyze", &cap, "--chrome", "-", "--tree", "none"],
        vec!["replay", &cap, "-o", "-", "--tree", "none"],
        vec!["replay", &cap, "--svg", "-", "--tree", "none"],
        vec!["diff", &cap, &other],
        vec!["diff", "--json", &cap, &other],
        vec!["man"],
    ] {
        let out = with_stdout_closed(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        // Nothing about the pipe (the verdict line of `--tree none` may be there).
        for word in ["pipe", "cannot", "stopped", "stdout"] {
            assert!(!err.contains(word), "{args:?}: {err}");
        }
    }
    // `run` keeps the command's status.
    let out = with_stdout_closed(&["run", "-q", "-o", "-", "--", "sh", "-c", "exit 5"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn watch_piped_to_head_ends_when_head_does() {
    // `proctrace watch -e exec | head -1`, with programs started until it ends.
    let mut sh = Command::new("sh")
        .args(["-c", &format!("{PROCTRACE} watch -e exec | head -1")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = sh.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "watch | head -1 did not end");
        let _ = Command::new("true").status();
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    sh.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    sh.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("exec"), "{out}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_broken_stderr_never_panics() {
    for args in [
        vec!["watch", "--duration", "0.3"],
        vec!["watch", "--duration", "0.3", "--summary", "-o", "/dev/null"],
        vec!["run", "--", "sh", "-c", "exit 4"],
        vec!["replay", "--tree", "full", &capture()],
    ] {
        let mut child = Command::new(PROCTRACE)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stderr.take());
        let st = child.wait().unwrap();
        let want = if args[0] == "run" { 4 } else { 0 };
        assert_eq!(st.code(), Some(want), "{args:?}: {st}");
    }
}

/// A tmpfs of 64 KiB that fills up while proctrace writes to it.
struct SmallDisk(String);

impl SmallDisk {
    fn mount() -> SmallDisk {
        let dir = tmp("small-disk");
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs", &dir])
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs (root is needed)");
        SmallDisk(dir)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_reported_and_leaves_whole_lines() {
    let disk = SmallDisk::mount();
    // 4 KiB left: less than either output of the capture.
    let filler = format!("{}/filler", disk.0);
    std::fs::write(&filler, vec![b'x'; 60 << 10]).unwrap();
    let (jsonl, chrome) = (format!("{}/t.jsonl", disk.0), format!("{}/c.json", disk.0));
    let out = proctrace(&[
        "analyze",
        &capture(),
        "--tree",
        "none",
        "-o",
        &jsonl,
        "--chrome",
        &chrome,
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(74), "{err}");
    assert!(
        err.contains(&format!("'{jsonl}'")) || err.contains(&format!("'{chrome}'")),
        "{err}"
    );
    for f in [&jsonl, &chrome] {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(text.is_empty() || text.ends_with('\n'), "{f} ends in a cut line");
    }
    for line in std::fs::read_to_string(&jsonl).unwrap().lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }

    // A capture cut by a full disk: run says so, keeps the command's status, and what was
    // recorded replays (whole lines).
    let rec = format!("{}/cap.jsonl", disk.0);
    std::fs::remove_file(&jsonl).unwrap();
    std::fs::remove_file(&chrome).unwrap();
    let out = proctrace(&[
        "run",
        "-q",
        "--record",
        &rec,
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do /bin/true; done; exit 3",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("stopped writing capture to '{rec}'")),
        "{err}"
    );
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.ends_with('\n'), "the capture ends in a whole line");
    let out = proctrace(&["replay", "--tree", "none", &rec]);
    assert!(matches!(out.status.code(), Some(0)), "{}", stderr(&out));
}
