//! Bytes are bytes: a command line, a path or a process name that is not UTF-8 runs, is kept
//! exactly through every file proctrace writes and reads back (JSON Lines with its `*_base64`
//! fields, captures, git's Trace2), and is never turned into U+FFFD where the bytes matter.
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use base64::Engine as _;
use serde_json::Value;

use crate::common::*;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The exact bytes of word `i` of a JSON Lines line's `argv`: its `argv_base64` entry when it
/// has one, else the string.
fn word_bytes(line: &Value, i: usize) -> Vec<u8> {
    match line["argv_base64"].get(i).and_then(Value::as_str) {
        Some(b) => B64.decode(b).unwrap(),
        None => line["argv"][i].as_str().unwrap().as_bytes().to_vec(),
    }
}

/// The exec lines of `lines` whose program is `prog`.
fn execs_of<'a>(lines: &'a [Value], prog: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["event"] == "exec" && l["argv"][0].as_str().is_some_and(|a| a.ends_with(prog)))
        .collect()
}

/// The traced command's words before the ones under test: a shell that lives long enough for
/// the connector to read its argv (a short `echo` may be gone first on a loaded machine), then
/// prints its arguments. Word `SHOWN + i` of its argv is argument `i`.
const SH: [&str; 4] = ["/bin/sh", "-c", "sleep 0.3; printf '%s\\n' \"$*\"", "sh"];
const SHOWN: usize = SH.len();

fn proctrace() -> Command {
    let mut c = Command::new(PROCTRACE);
    c.env("NO_COLOR", "1");
    c
}

/// `run -- CMD` with non-UTF-8 arguments, from a non-UTF-8 directory: the command gets the bytes
/// (echo prints them), JSON Lines holds them exactly, and `analyze` of that file writes the same
/// bytes again; the `start` line's argv is exact too.
#[test]
fn non_utf8_argv_and_cwd_run_and_round_trip_through_json_lines() {
    for backend in ["connector", "ptrace"] {
        let dir = tmp("d\u{e9}").into_bytes();
        // The directory's name ends in the byte E9, not in the UTF-8 for é.
        let mut dir = dir[..dir.len() - 2].to_vec();
        dir.push(0xE9);
        let dir = std::path::PathBuf::from(OsStr::from_bytes(&dir));
        std::fs::create_dir_all(&dir).unwrap();
        let out_file = tmp("bytes.jsonl");
        let word = OsStr::from_bytes(b"caf\xe9");
        let raw = OsStr::from_bytes(b"\xff\xfe\x80");
        let out = proctrace()
            .args([
                "run",
                "--backend",
                backend,
                "--tree",
                "none",
                "-q",
                "-o",
                &out_file,
                "--",
            ])
            .args(SH)
            .arg(word)
            .arg("plain")
            .arg(raw)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{backend}: {}", stderr(&out));
        assert_eq!(
            out.stdout, b"caf\xe9 plain \xff\xfe\x80\n",
            "{backend}: the command got the bytes"
        );
        let lines = read_lines(&out_file);
        let e = execs_of(&lines, "/bin/sh");
        assert_eq!(e.len(), 1, "{backend}");
        let e = e[0];
        assert_eq!(word_bytes(e, SHOWN), b"caf\xe9");
        assert_eq!(word_bytes(e, SHOWN + 1), b"plain");
        assert_eq!(word_bytes(e, SHOWN + 2), b"\xff\xfe\x80");
        assert_eq!(
            e["argv"][SHOWN], "caf\u{fffd}",
            "{backend}: the string is the standard lossy text"
        );
        assert_eq!(e["argv_base64"][0], Value::Null);
        assert_eq!(e["argv_base64"][SHOWN + 1], Value::Null);
        assert_eq!(
            B64.decode(e["cwd_base64"].as_str().unwrap()).unwrap(),
            dir.as_os_str().as_bytes()
        );
        let start = &lines[0];
        assert_eq!(word_bytes(start, SHOWN), b"caf\xe9", "{backend}: the start line");

        // analyze reads the bytes back and writes them again, the same bytes.
        let again = tmp("again.jsonl");
        let a = proctrace()
            .args(["analyze", &out_file, "--tree", "none", "-q", "-o", &again])
            .output()
            .unwrap();
        assert!(a.status.success(), "{}", stderr(&a));
        let before = std::fs::read_to_string(&out_file).unwrap();
        let after = std::fs::read_to_string(&again).unwrap();
        let body = |t: &str| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(body(&before), body(&after), "{backend}");
    }
}

/// A capture (`--record`) keeps the bytes: `replay` gives them back in its JSON Lines, and git's
/// Trace2 event format gets them raw, as git itself writes them.
#[test]
fn captures_and_trace2_keep_the_bytes() {
    let cap = tmp("bytes.capture");
    let ev = tmp("bytes.trace2.json");
    let out = proctrace()
        .args([
            "run",
            "--tree",
            "none",
            "-q",
            "--record",
            &cap,
            "--trace2-event",
            &ev,
            "--",
        ])
        .args(SH)
        .arg(OsStr::from_bytes(b"x\xe9y"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = tmp("replayed.jsonl");
    let r = proctrace()
        .args(["replay", &cap, "--tree", "none", "-q", "-o", &replayed])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    let lines = read_lines(&replayed);
    assert_eq!(word_bytes(execs_of(&lines, "/bin/sh")[0], SHOWN), b"x\xe9y");

    // git writes the bytes of argv as they are (checked against git below); so does proctrace.
    let t2 = std::fs::read(&ev).unwrap();
    let child = t2
        .split(|&c| c == b'\n')
        .find(|l| l.windows(13).any(|w| w == b"\"child_start\""))
        .unwrap();
    assert!(
        child.windows(5).any(|w| w == b"x\xe9y\"]"),
        "{}",
        String::from_utf8_lossy(child)
    );
    let git_ev = tmp("git.trace2.json");
    let st = Command::new("git")
        .arg("version")
        .arg(OsStr::from_bytes(b"x\xe9y"))
        .env("GIT_TRACE2_EVENT", &git_ev)
        .output()
        .unwrap();
    assert!(st.status.success());
    let g = std::fs::read(&git_ev).unwrap();
    assert!(
        g.windows(5).any(|w| w == b"x\xe9y\"]"),
        "git writes the raw bytes"
    );

    // And analyze of git's own trace keeps them.
    let from_git = tmp("from-git.jsonl");
    let a = proctrace()
        .args(["analyze", &git_ev, "--tree", "none", "-q", "-o", &from_git])
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    let lines = read_lines(&from_git);
    let e = execs_of(&lines, "git");
    assert!(!e.is_empty());
    let n = e[0]["argv"].as_array().unwrap().len();
    assert_eq!(word_bytes(e[0], n - 1), b"x\xe9y");
}

/// A process that names itself with bytes that are not UTF-8 (`prctl(PR_SET_NAME)`): the
/// `comm` line keeps them.
#[test]
fn a_non_utf8_process_name_is_kept() {
    let script = "import ctypes, os, time\n\
                  libc = ctypes.CDLL(None)\n\
                  libc.prctl(15, b'n\\xe9m', 0, 0, 0)\n\
                  time.sleep(0.05)\n";
    let (out, lines) = run(&["--tree", "none", "-q"], &["python3", "-c", script]);
    assert!(out.status.success(), "{}", stderr(&out));
    let comm = lines
        .iter()
        .find(|l| l["event"] == "comm")
        .unwrap_or_else(|| panic!("no comm line: {lines:?}"));
    assert_eq!(
        B64.decode(comm["comm_base64"].as_str().unwrap()).unwrap(),
        b"n\xe9m"
    );
    assert_eq!(comm["comm"], "n\u{fffd}m");
}

/// proctrace's own file arguments are bytes too: an output, a capture and an input whose names
/// are not UTF-8 are written and read.
#[test]
fn file_names_that_are_not_utf8() {
    let named = |name: &[u8]| {
        let mut p = tmp("x").into_bytes();
        p.truncate(p.len() - 1);
        p.extend_from_slice(name);
        std::path::PathBuf::from(OsStr::from_bytes(&p))
    };
    let (out_file, cap) = (named(b"o\xe9.jsonl"), named(b"c\xe9.capture"));
    let r = proctrace()
        .args(["run", "--tree", "none", "-q", "-o"])
        .arg(&out_file)
        .arg("--record")
        .arg(&cap)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    for input in [&out_file, &cap] {
        let a = proctrace()
            .args(["analyze", "--tree", "none", "-q", "-o", "-"])
            .arg(input)
            .output()
            .unwrap();
        assert!(a.status.success(), "{}", stderr(&a));
        assert!(String::from_utf8_lossy(&a.stdout).contains("\"event\":\"exec\""));
    }
}

/// `watch --comm NAME` takes a name that is not UTF-8 and matches the program of that name.
#[test]
fn watch_matches_a_name_that_is_not_utf8() {
    let mut bin = tmp("x").into_bytes();
    bin.truncate(bin.len() - 1);
    bin.extend_from_slice(b"n\xe9m");
    let bin = std::path::PathBuf::from(OsStr::from_bytes(&bin));
    std::fs::copy("/bin/sleep", &bin).unwrap();
    let out_file = tmp("watch.jsonl");
    // The shell waits for the watcher to be ready (its start line is in the file), then runs
    // /bin/sleep (left out) and the program named n\xe9m (kept).
    let mut target = Command::new("sh")
        .args([
            "-c",
            "while [ ! -s \"$1\" ]; do sleep 0.02; done; /bin/sleep 0.01; exec \"$0\" 0.3",
        ])
        .arg(&bin)
        .arg(&out_file)
        .spawn()
        .unwrap();
    let out = proctrace()
        .args([
            "watch",
            "-p",
            &target.id().to_string(),
            "-e",
            "exec",
            "-o",
            &out_file,
            "--comm",
        ])
        .arg(OsStr::from_bytes(b"n\xe9m"))
        .output()
        .unwrap();
    target.wait().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let execs: Vec<_> = lines.iter().filter(|l| l["event"] == "exec").collect();
    assert_eq!(execs.len(), 1, "only the program named n\\xe9m: {lines:?}");
    assert_eq!(
        B64.decode(execs[0]["comm_base64"].as_str().unwrap()).unwrap(),
        b"n\xe9m"
    );
}

/// Every output for people shows a byte that is not UTF-8 as `\xNN` (the tree, in a `$'…'` word
/// that pasted into bash is the word again); the Chrome trace and the summary JSON show it as
/// `\xNN` too, never a U+FFFD or a plane-16 character.
#[test]
fn people_see_the_bytes_escaped() {
    let chrome = tmp("b.chrome.json");
    let sum = tmp("b.summary.json");
    let out = proctrace()
        .args([
            "run",
            "--tree",
            "full",
            "--chrome",
            &chrome,
            "--summary-json",
            &sum,
            "--",
        ])
        .args(SH)
        .arg(OsStr::from_bytes(b"caf\xe9"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(" sh $'caf\\xe9'"), "{err}");
    for text in [
        err,
        std::fs::read_to_string(&chrome).unwrap(),
        std::fs::read_to_string(&sum).unwrap(),
    ] {
        assert!(
            !text.contains('\u{fffd}') && !text.chars().any(|c| ('\u{10ff80}'..='\u{10ffff}').contains(&c)),
            "{text}"
        );
    }
    assert!(std::fs::read_to_string(&chrome).unwrap().contains("caf\\\\xe9"));
    // The tree's word, pasted into bash, is the bytes again.
    let back = Command::new("bash")
        .args(["-c", "printf %s $'caf\\xe9'"])
        .output()
        .unwrap();
    assert_eq!(back.stdout, b"caf\xe9");
}
