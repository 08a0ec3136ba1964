//! Inputs behave like files: `-`, `/dev/stdin`, pipes, FIFOs and process substitution read as
//! the file does, for every format; inputs that never end are refused before they are read;
//! an empty input is bad input in every command; a shuffled or reversed JSON Lines file gives
//! the run back.
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::*;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");
const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/captures");

fn proctrace(args: &[&str]) -> Output {
    Command::new(PROCTRACE)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `bash -c SCRIPT` with `$P` the binary and `$1…` the arguments.
fn bash(script: &str, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .args(args)
        .env("P", PROCTRACE)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The ways one input can be named: the file, then the same bytes through a pipe as `-`, as
/// `/dev/stdin`, through a FIFO and through process substitution. Each runs `analyze INPUT -o
/// OUT EXTRA…` and gives its JSON Lines output (without its first line when `skip_start`: an
/// analysis's `start` line names its inputs) and `--json` report.
fn every_way(file: &str, extra: &[&str], skip_start: bool) -> Vec<(String, String, Value)> {
    let mut got = Vec::new();
    let fifo = tmp("in.fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let extra = extra.join(" ");
    for (how, script) in [
        ("file", r#""$P" analyze "$1" -o "$2" --json $3 > "$2.json""#),
        (
            "pipe to -",
            r#"cat "$1" | "$P" analyze - -o "$2" --json $3 > "$2.json""#,
        ),
        (
            "pipe to /dev/stdin",
            r#"cat "$1" | "$P" analyze /dev/stdin -o "$2" --json $3 > "$2.json""#,
        ),
        (
            "fifo",
            r#"cat "$1" > "$4" & "$P" analyze "$4" -o "$2" --json $3 > "$2.json"; wait"#,
        ),
        (
            "<(…)",
            r#""$P" analyze <(cat "$1") -o "$2" --json $3 > "$2.json""#,
        ),
    ] {
        let out = tmp("out.jsonl");
        let o = bash(script, &[file, &out, &extra, &fifo]);
        assert!(o.status.success(), "{how} {file}: {}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        let text = if skip_start {
            text.split_once('\n')
                .map(|(_, rest)| rest.to_string())
                .unwrap_or_default()
        } else {
            text
        };
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{out}.json")).unwrap()).unwrap();
        got.push((how.to_string(), text, json));
    }
    got
}

fn assert_same_every_way(file: &str, extra: &[&str], skip_start: bool) {
    let got = every_way(file, extra, skip_start);
    let (_, text, json) = &got[0];
    assert!(text.lines().count() > 3, "{file}: {text}");
    assert_eq!(json["input"]["skipped_lines"], 0, "{file}: {json}");
    for (how, t, j) in &got[1..] {
        assert_eq!(t, text, "{file}: JSON Lines through {how} differ");
        assert_eq!(j, json, "{file}: --json through {how} differs");
    }
}

/// Two copies of a Trace2 stream, the second with its own sessions: more than 64 KiB.
fn big_trace2() -> String {
    let one = std::fs::read_to_string(format!("{GOLDEN}/git-regions.trace2-event")).unwrap();
    let two = one.replace("\"sid\":\"", "\"sid\":\"second-");
    let path = tmp("big.trace2.json");
    std::fs::write(&path, format!("{one}{two}")).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 64 << 10);
    path
}

#[test]
fn stdin_pipes_fifos_and_process_substitution_read_as_the_file_does() {
    assert_same_every_way(&format!("{GOLDEN}/make-j2.jsonl"), &[], false);
    assert_same_every_way(&format!("{CAPTURES}/git-regions.jsonl"), &[], false);
    assert_same_every_way(&format!("{GOLDEN}/git-regions.trace2-event"), &[], true);
    // Larger than the 64 KiB format detection once read (then opened again, and lost).
    let big = big_trace2();
    assert_same_every_way(&big, &[], true);
    assert_same_every_way(&big, &["--lenient"], true);
}

/// A real run of a few hundred processes, as JSON Lines and as a capture: both over 64 KiB,
/// read the same through pipes, leniently too (a pipe once lost a sixth of them).
#[test]
fn a_big_real_run_reads_the_same_through_a_pipe() {
    let cap = tmp("big.capture.jsonl");
    let (o, lines, jsonl) = run_file(
        &["--record", &cap],
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(lines.len() > 600);
    for f in [&jsonl, &cap] {
        assert!(std::fs::metadata(f).unwrap().len() > 64 << 10, "{f}");
        assert_same_every_way(f, &[], false);
        assert_same_every_way(f, &["--lenient"], false);
    }
    let got = every_way(&jsonl, &["--lenient"], false);
    for (how, _, j) in &got {
        assert_eq!(j["processes"], got[0].2["processes"], "{how}");
        assert!(j["processes"].as_u64().unwrap() > 300, "{how}: {j}");
    }
}

/// Fails within `secs` (the refusals read nothing, so they are immediate): its output.
fn quick(script: &str, args: &[&str]) -> Output {
    bash(&format!("timeout 60 {script}"), args)
}

#[test]
fn inputs_that_never_end_are_refused_before_they_are_read() {
    for (cmd, path, what) in [
        ("analyze", "/dev/zero", "is a character device"),
        ("replay", "/dev/zero", "is a character device"),
        ("analyze", "/dev/urandom", "is a character device"),
        ("analyze", "/proc", "is on procfs"),
        ("analyze", "/proc/kmsg", "is on procfs"),
        ("analyze", "/proc/self/status", "is on procfs"),
        ("replay", "/proc/kmsg", "is on procfs"),
        ("analyze", "/sys/kernel", "is on sysfs"),
    ] {
        let o = quick(r#""$P" "$1" "$2""#, &[cmd, path]);
        assert_eq!(o.status.code(), Some(65), "{cmd} {path}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(&format!("{path}: {what}")) && e.contains("refused"),
            "{cmd} {path}: {e}"
        );
    }
    // The same device on stdin.
    let o = quick(r#""$P" analyze - < /dev/zero"#, &[]);
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("<stdin>: is a character device"),
        "{}",
        stderr(&o)
    );
    // A diff side too.
    let o = quick(
        r#""$P" diff /dev/zero "$1""#,
        &[&format!("{GOLDEN}/make-j2.jsonl")],
    );
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/zero: is a character device"),
        "{}",
        stderr(&o)
    );
}

/// A stream with no newline (zeros through a pipe) ends at the line limit with an error naming
/// the line, in bounded memory (the limit, 64 MiB, plus the reader's buffer).
#[test]
fn a_stream_without_newlines_stops_at_the_line_limit_in_bounded_memory() {
    let o = quick(
        r#"head -c 100000000 /dev/zero | /usr/bin/time -f "rss %M" "$P" analyze -"#,
        &[],
    );
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("<stdin>:1: a line longer than 67108864 bytes (the line limit)"),
        "{e}"
    );
    let rss: u64 = e
        .lines()
        .find_map(|l| l.strip_prefix("rss "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(rss < 200 << 10, "{rss} KiB");
}

#[test]
fn an_empty_input_is_bad_input_in_every_command() {
    let empty = tmp("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let blank = tmp("blank.jsonl");
    std::fs::write(&blank, "\n  \n\t\n").unwrap();
    let good = format!("{GOLDEN}/make-j2.jsonl");
    for f in [&empty, &blank] {
        for args in [
            vec!["analyze", f.as_str()],
            vec!["replay", f.as_str()],
            vec!["diff", f.as_str(), &good],
            vec!["diff", &good, f.as_str()],
        ] {
            let o = proctrace(&args);
            assert_eq!(o.status.code(), Some(65), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("{f}: empty: not a trace (no lines)")),
                "{args:?}: {}",
                stderr(&o)
            );
        }
    }
    for script in [
        r#""$P" analyze - < /dev/null"#,
        r#""$P" replay /dev/null"#,
        r#": | "$P" analyze -"#,
    ] {
        let o = bash(script, &[]);
        assert_eq!(o.status.code(), Some(65), "{script}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(": empty: not a trace (no lines)"),
            "{script}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn stdin_is_read_once() {
    let f = format!("{GOLDEN}/git-regions.trace2-event");
    let o = bash(r#""$P" analyze - "$1" - < "$1""#, &[&f]);
    assert_eq!(o.status.code(), Some(65), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("<stdin>: named more than once"),
        "{}",
        stderr(&o)
    );
    // Once, among Trace2 files: read with them.
    let o = bash(
        r#"sed 's/"sid":"/"sid":"other-/' "$1" | "$P" analyze - "$1" --json"#,
        &[&f],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["input"]["files"], 2, "{j}");
}

/// A FIFO (or socket, or directory) inside a Trace2 target directory is skipped and counted,
/// never waited on.
#[test]
fn a_trace2_directory_reads_only_its_regular_files() {
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(format!("{GOLDEN}/git-regions.trace2-event"), format!("{dir}/a")).unwrap();
    let st = Command::new("mkfifo")
        .arg(format!("{dir}/fifo"))
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::create_dir_all(format!("{dir}/sub")).unwrap();
    let o = quick(r#""$P" analyze "$1" --json"#, &[&dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (
            j["input"]["files"].as_u64(),
            j["input"]["skipped_entries"].as_u64()
        ),
        (Some(1), Some(2)),
        "{j}"
    );
    assert!(j["processes"].as_u64().unwrap() > 3, "{j}");
}

/// The first line is read as JSON when it is not laid out as proctrace and git write it
/// (spaces, another key order): the format is still told.
#[test]
fn a_first_line_with_spaces_or_sorted_keys_is_still_told() {
    let cap = std::fs::read_to_string(format!("{CAPTURES}/make-j2.jsonl")).unwrap();
    let (head, rest) = cap.split_once('\n').unwrap();
    let v: Value = serde_json::from_str(head).unwrap();
    // serde_json writes keys sorted; pretty-printed on one line, with spaces.
    let spaced = serde_json::to_string_pretty(&v).unwrap().replace('\n', " ");
    let f = tmp("spaced.capture.jsonl");
    std::fs::write(&f, format!("{spaced}\n{rest}")).unwrap();
    let (a, b) = (tmp("a.jsonl"), tmp("b.jsonl"));
    let o = proctrace(&[
        "replay",
        &format!("{CAPTURES}/make-j2.jsonl"),
        "-o",
        &a,
        "--tree",
        "none",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = proctrace(&["analyze", &f, "-o", &b, "--tree", "none"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap()
    );
    // JSON Lines and Trace2 first lines: told (whether their readers take the layout is theirs).
    for (src, name) in [("make-j2.jsonl", "jsonl"), ("git-regions.trace2-event", "trace2")] {
        let text = std::fs::read_to_string(format!("{GOLDEN}/{src}")).unwrap();
        let (head, rest) = text.split_once('\n').unwrap();
        let v: Value = serde_json::from_str(head).unwrap();
        let spaced = serde_json::to_string_pretty(&v).unwrap().replace('\n', " ");
        let f = tmp(&format!("spaced.{name}"));
        std::fs::write(&f, format!("{spaced}\n{rest}")).unwrap();
        let o = proctrace(&["analyze", &f, "--tree", "none"]);
        assert!(
            !stderr(&o).contains("its first line is neither"),
            "{name}: {}",
            stderr(&o)
        );
    }
}

/// A real run of five processes, its JSON Lines shuffled and reversed: the same processes, tree
/// and JSON Lines as the file in order, and nothing counted late (a small file is within the
/// window).
#[test]
fn a_shuffled_or_reversed_json_lines_file_gives_the_run_back() {
    let (o, _, file) = run_file(
        &[],
        &[
            "sh",
            "-c",
            "/bin/true; /bin/echo x >/dev/null; /bin/true; /bin/true",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut shuffled = lines.clone();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..shuffled.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        shuffled.swap(i, (x % (i as u64 + 1)) as usize);
    }
    assert_ne!(shuffled, lines);
    let reversed: Vec<&str> = lines.iter().rev().copied().collect();
    let want = tmp("want.jsonl");
    let o = proctrace(&["analyze", &file, "-o", &want, "--tree", "full"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want_tree = stderr(&o);
    let want_text = std::fs::read_to_string(&want).unwrap();
    assert_eq!(want_text, text, "the file reads back as it was");
    let want_json: Value = serde_json::from_slice(&proctrace(&["analyze", &file, "--json"]).stdout).unwrap();
    assert_eq!(want_json["processes"], 5, "{want_json}");
    for (how, ls) in [("shuffled", shuffled), ("reversed", reversed)] {
        let f = tmp(&format!("{how}.jsonl"));
        std::fs::write(&f, ls.join("\n") + "\n").unwrap();
        let out = tmp("got.jsonl");
        let o = proctrace(&["analyze", &f, "-o", &out, "--tree", "full"]);
        assert!(o.status.success(), "{how}: {}", stderr(&o));
        assert_eq!(stderr(&o), want_tree, "{how}: tree differs");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            want_text,
            "{how}: JSON Lines differ"
        );
        let j: Value = serde_json::from_slice(&proctrace(&["analyze", &f, "--json"]).stdout).unwrap();
        assert_eq!(j["processes"], want_json["processes"], "{how}: {j}");
        assert_eq!(j["input"]["late_lines"], 0, "{how}: {j}");
        assert!(j["input"]["reordered_lines"].as_u64().unwrap() > 0, "{how}: {j}");
    }
}
