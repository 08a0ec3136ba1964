//! Hostile processes: what a traced process puts in its argv or its name cannot forge what a
//! person sees (issue 22). Every output for people shows it escaped (`$'\e…'`, `\e`), one
//! process a line, and never a byte a terminal interprets.
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;

/// The words of issue 22: a terminal title and colour, and a line forged with LF and CR.
const TITLE: &str = "\x1b]0;PWNED\x07\x1b[31mRED";
const FORGED: &str = "x\nproctrace: fake verdict\r";

/// The bytes a terminal would act on that `out` holds: controls other than the line ends, DEL,
/// and C1 controls (their UTF-8, `C2 80`–`C2 9F`); with the offset of each.
fn raw_controls(out: &[u8]) -> Vec<(usize, u8)> {
    let mut bad = Vec::new();
    for (i, &b) in out.iter().enumerate() {
        if (b < 0x20 && b != b'\n')
            || b == 0x7f
            || (b == 0xc2 && out.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
        {
            bad.push((i, b));
        }
    }
    bad
}

/// One line of `watch -e exec,comm`: `   0.500977 exec     18228    ARGV`, `… comm  PID  NAME`
/// (or a `LOST` line).
fn is_watch_line(l: &str) -> bool {
    let mut w = l.split_whitespace();
    let time_ok = w.next().is_some_and(|t| {
        t.split_once('.')
            .is_some_and(|(s, f)| s.parse::<u64>().is_ok() && f.len() == 6 && f.parse::<u64>().is_ok())
    });
    match (time_ok, w.next(), w.next()) {
        (true, Some("exec" | "comm"), Some(pid)) => pid.parse::<u32>().is_ok() && w.next().is_some(),
        (true, Some("LOST"), Some(n)) => n.parse::<u64>().is_ok(),
        _ => false,
    }
}

/// A second user (`nobody`) sets the clipboard with OSC 52 and clears the screen through its
/// `argv[0]`, and forges a whole `watch` line through an argument, while root runs
/// `proctrace watch -e exec,comm`, and renames itself (`prctl(PR_SET_NAME)`) to ESC and a
/// newline: root's terminal gets none of it, every line is a watch line, and the escaped words
/// are there to read.
#[test]
fn another_user_cannot_inject_escapes_into_a_root_watch() {
    let record = tmp("watch.cap");
    let mut watch = Command::new(PROCTRACE)
        .args(["watch", "-e", "exec,comm", "--record", &record])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let shown = Arc::new(Mutex::new(Vec::<u8>::new()));
    let reader = {
        let shown = shown.clone();
        let mut stdout = watch.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    // Subscribed once the capture's header is written.
    wait_for_text(&record, "the capture's header", |t| t.contains("\"header\""));
    let nobody = |args: &[&str]| {
        let st = Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "{args:?}");
    };
    nobody(&["bash", "-c", "exec -a $'\\e]52;c;ZXZpbA==\\a\\e[2J' sleep 0.3"]);
    let forged_line = "   1.000000 exec         1    /sbin/init FAKE";
    let forged = format!("x\n{forged_line}");
    // `; exit 0`: sh waits for sleep instead of exec-ing it, so its own argv is there to read.
    nobody(&["sh", "-c", "sleep 0.3; exit 0", &forged]);
    nobody(&[
        "/usr/bin/python3",
        "-c",
        "import ctypes, time; ctypes.CDLL(None).prctl(15, b'\\x1b[2Jx\\n1 exec', 0, 0, 0); time.sleep(0.3)",
    ]);
    let osc = r"$'\e]52;c;ZXZpbA==\a\e[2J' 0.3";
    let renamed = r" comm ";
    let name = r"\e[2Jx\n1 exec";
    let forged_shown = r"$'x\n   1.000000 exec         1    /sbin/init FAKE'";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = String::from_utf8_lossy(&shown.lock().unwrap()).into_owned();
        if text.contains(osc) && text.contains(forged_shown) && text.contains(name) {
            break;
        }
        assert!(Instant::now() < deadline, "timed out; watch wrote: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(watch.id() as i32, libc::SIGINT) };
    let st = watch.wait().unwrap();
    reader.join().unwrap();
    assert!(st.success(), "{st:?}");
    let out = shown.lock().unwrap().clone();
    let text = String::from_utf8_lossy(&out);
    assert_eq!(raw_controls(&out), [], "{text}");
    assert!(out.ends_with(b"\n"), "{text}");
    for l in text.lines() {
        assert!(is_watch_line(l), "not a watch line: {l:?}\nin: {text}");
        assert!(!l.ends_with("/sbin/init FAKE"), "a forged line: {l:?}");
    }
    assert!(text.lines().any(|l| l.ends_with(osc)), "{text}");
    assert!(
        text.lines().any(|l| l.contains(renamed) && l.ends_with(name)),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.ends_with(&format!("sh -c 'sleep 0.3; exit 0' {forged_shown}"))),
        "{text}"
    );
}

/// `run --tree full` of a command whose arguments set the terminal's title and colour and
/// forge a verdict line: stderr has no control byte but line ends, and echo's tree line is one
/// line with both words escaped.
#[test]
fn run_shows_a_hostile_argv_on_one_line_escaped() {
    let out = Command::new(PROCTRACE)
        // ptrace reads argv at the exec stop: a short echo's argv is never missed under load.
        .args([
            "run",
            "--backend",
            "ptrace",
            "--tree",
            "full",
            "--",
            "/bin/echo",
            TITLE,
            FORGED,
        ])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(raw_controls(&out.stderr), [], "{err}");
    let shown = r"/bin/echo $'\e]0;PWNED\a\e[31mRED' $'x\nproctrace: fake verdict\r'";
    let line = err
        .lines()
        .find(|l| l.contains("/bin/echo"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(shown), "{line:?}\nin: {err}");
    assert!(line.ends_with("exit 0"), "the tree line is whole: {line:?}");
    assert!(
        !err.lines().any(|l| l.starts_with("proctrace: fake verdict")),
        "{err}"
    );
    // The command itself got its words exactly.
    assert_eq!(out.stdout, format!("{TITLE} {FORGED}\n").as_bytes());
}

/// `git commit -m $'subject\n\nbody'`, an ordinary multi-line argument: the tree keeps git on
/// one line.
#[test]
fn a_multi_line_commit_message_stays_on_its_tree_line() {
    let repo = tmp("repo");
    let git = |args: &[&str]| {
        let st = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .output()
            .unwrap();
        assert!(st.status.success(), "git {args:?}: {}", stderr(&st));
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "-q"]);
    let out = Command::new(PROCTRACE)
        .args(["run", "--tree", "full", "--", "git", "-C", &repo])
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "maintenance.auto=false",
        ])
        .args(["commit", "-q", "--allow-empty", "-m", "subject\n\nbody"])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(raw_controls(&out.stderr), []);
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains(" commit -q "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(r"commit -q --allow-empty -m $'subject\n\nbody'"),
        "{line:?}\nin: {err}"
    );
    assert!(!err.lines().any(|l| l.trim_start().starts_with("body")), "{err}");
}

/// A saved JSON Lines trace with control characters and Markdown in an argv (and a process
/// renamed with `prctl(PR_SET_NAME)` to hold ESC, forked without exec): `analyze` shows them
/// escaped in the tree and the text summary, and in code spans in the Markdown.
#[test]
fn analyze_of_a_saved_hostile_trace_escapes_text_and_markdown() {
    // python3 renames itself, forks a child that never execs, then runs echo.
    let script = r#"
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(15, b"\x1b[2Jx", 0, 0, 0)
pid = os.fork()
if pid == 0:
    time.sleep(0.2)
    os._exit(0)
os.waitpid(pid, 0)
os.spawnv(os.P_WAIT, "/bin/echo", ["/bin/echo"] + sys.argv[1:])
"#;
    let md_words = "a|b `c` <b>x</b> [l](u) *e*";
    // ptrace reads argv at the exec stop: the short echo's argv is never missed under load.
    let (out, _lines, file) = run_file(
        &["--backend", "ptrace"],
        &["/usr/bin/python3", "-c", script, TITLE, FORGED, md_words],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let md = tmp("summary.md");
    let a = Command::new(PROCTRACE)
        .args(["analyze", "--tree", "full", &file, "--summary-md", &md])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    let err = stderr(&a);
    assert_eq!(raw_controls(&a.stderr), [], "{err}");
    let echo =
        r"/bin/echo $'\e]0;PWNED\a\e[31mRED' $'x\nproctrace: fake verdict\r' 'a|b `c` <b>x</b> [l](u) *e*'";
    assert!(
        err.lines().any(|l| l.contains(echo) && l.ends_with("exit 0")),
        "the tree: {err}"
    );
    assert!(err.contains(r"[fork of \e[2Jx]"), "the fork's name: {err}");
    assert!(err.contains("summary:") && err.contains("by program"), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("  ") && l.contains(r"[fork of \e[2Jx]") && l.contains('×')),
        "by program: {err}"
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert_eq!(raw_controls(md.as_bytes()), [], "{md}");
    // In a code span (fenced by two backticks: the words hold one), `|` is escaped for the
    // table; nothing else is markup there.
    assert!(
        md.contains(r"``/bin/echo $'\e]0;PWNED\a\e[31mRED' $'x\nproctrace: fake verdict\r' 'a\|b `c` <b>x</b> [l](u) *e*'``"),
        "{md}"
    );
    assert!(md.contains(r"`[fork of \e[2Jx]`"), "{md}");
    // Every row has its table's cells (a header is the line above `|---`).
    let lines: Vec<&str> = md.lines().collect();
    let mut cells = None;
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with('|') {
            cells = None;
            continue;
        }
        let n = l.replace(r"\|", "").matches('|').count();
        if lines.get(i + 1).is_some_and(|n| n.starts_with("|-")) {
            cells = Some(n);
        } else if !l.starts_with("|-") {
            assert_eq!(Some(n), cells, "a row keeps its table's cells: {l}\nin: {md}");
        }
    }
}

/// A saved trace is untrusted too: an error quoting what a bad line says (an unknown event's
/// name) shows it escaped.
#[test]
fn an_error_quoting_a_bad_line_escapes_it() {
    let file = tmp("bad.jsonl");
    std::fs::write(
        &file,
        "{\"event\":\"start\",\"ts\":0.5,\"tool\":\"proctrace\",\"mode\":\"watch\"}\n\
         {\"event\":\"\\u001b[2J\\u001b]0;PWNED\\u0007\",\"ts\":1}\n",
    )
    .unwrap();
    let a = Command::new(PROCTRACE)
        .args(["analyze", &file])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(a.status.code(), Some(65), "{}", stderr(&a));
    let err = stderr(&a);
    assert_eq!(raw_controls(&a.stderr), [], "{err}");
    assert!(err.contains(r"unknown event '\e[2J\e]0;PWNED\a'"), "{err}");
}

/// Columns count what the terminal shows: a name with wide characters (日本) and one escaped
/// (`$'\e[2J'`, written with 7 characters for 4 bytes) line up with a plain one.
#[test]
fn tree_columns_count_what_the_terminal_shows() {
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", "ptrace", "--tree", "full", "--no-usage", "--"])
        .args([
            "/bin/sh",
            "-c",
            "/bin/echo 日本語 >/dev/null; /bin/echo \"$1\" >/dev/null; /bin/echo plain >/dev/null",
        ])
        .args(["sh", "\x1b[2J"])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let rows: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("─ ") && l.contains("/bin/echo "))
        .collect();
    assert_eq!(rows.len(), 3, "{err}");
    assert!(rows[0].contains("/bin/echo '日本語'"), "{err}");
    assert!(rows[1].contains(r"/bin/echo $'\e[2J'"), "{err}");
    // Where the status column starts, in terminal columns: the same on every row.
    let cols: Vec<usize> = rows
        .iter()
        .map(|l| unicode_width::UnicodeWidthStr::width(&l[..l.rfind("exit 0").unwrap()]))
        .collect();
    assert!(
        cols.windows(2).all(|w| w[0] == w[1]),
        "status columns {cols:?}:\n{err}"
    );
}
