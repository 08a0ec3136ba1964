//! The command line itself: mistyped options, completions, man pages, help.
use std::process::{Command, Stdio};

use crate::common::*;

fn proctrace(args: &[&str]) -> std::process::Output {
    Command::new(PROCTRACE)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_mistyped_option_is_a_usage_error_never_the_command() {
    let out_file = tmp("p.jsonl");
    let out = proctrace(&["run", "--jaeger", "http://x", "-o", &out_file, "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("unexpected argument '--jaeger'"), "{err}");
    assert!(!err.contains("cannot run"), "nothing was run: {err}");
    assert!(!std::path::Path::new(&out_file).exists(), "no output opened");

    // clap's "did you mean".
    let out = proctrace(&["run", "--outptu", &out_file, "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a similar argument exists: '--output'"),
        "{}",
        stderr(&out)
    );
    // Also before a command given without `--`.
    let out = proctrace(&["run", "--wait-bgg", "1", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'--wait-bg'"), "{}", stderr(&out));
}

#[test]
fn commands_with_dashes_still_run() {
    let dir = tmp("d");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(format!("{dir}/a-file"), "").unwrap();
    // `ls -la DIR`: the command's own options are its own.
    let o = tmp("ls.jsonl");
    let out = proctrace(&["run", "--tree", "none", "-o", &o, "ls", "-la", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("a-file"), "{listing}");
    // -l and -a reached ls: a long listing with the `..` entry (this, not the trace's argv,
    // which a short-lived ls can leave unread under load).
    assert!(listing.lines().any(|l| l.ends_with(" ..")), "{listing}");
    let lines = read_lines(&o);
    assert_eq!(processes(&lines).len(), 1, "one process: ls");
    // `sh -c 'x'`: -c belongs to sh.
    let out = proctrace(&["run", "--tree", "none", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    // A command whose name starts with `-` is reached after `--` (and is not found: 127).
    let out = proctrace(&["run", "--tree", "none", "--", "-weird-cmd"]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot run '-weird-cmd'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bash_completion_script_sources() {
    let out = proctrace(&["completions", "bash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = tmp("proctrace.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let check = Command::new("bash")
        .args([
            "-c",
            r#"set -e; source "$1"; complete -p proctrace"#,
            "bash",
            &script,
        ])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(String::from_utf8_lossy(&check.stdout).contains("proctrace"));
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["run", "watch", "replay", "--events", "--quiet", "--user"] {
        assert!(text.contains(word), "completion knows {word}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = proctrace(&["completions", shell]);
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "{shell}: {}",
            stderr(&out)
        );
    }
    let out = proctrace(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "unknown shell is a usage error");
}

#[test]
fn man_pages_are_roff_groff_accepts() {
    for page in [None, Some("run"), Some("watch"), Some("replay"), Some("analyze")] {
        let mut args = vec!["man"];
        args.extend(page);
        let out = proctrace(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let roff = String::from_utf8(out.stdout).unwrap();
        let title = match page {
            None => ".TH proctrace".to_string(),
            Some(p) => format!(".TH proctrace-{p}"),
        };
        assert!(
            roff.starts_with(&title) || roff.contains(&format!("\n{title}")),
            "{roff}"
        );
        if page == Some("watch") {
            assert!(roff.contains("events") && roff.contains("Examples"), "{roff}");
        }
        let mut groff = match Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(g) => g,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("groff: {e}"),
        };
        use std::io::Write;
        groff.stdin.take().unwrap().write_all(roff.as_bytes()).unwrap();
        let g = groff.wait_with_output().unwrap();
        assert!(g.status.success(), "groff: {}", stderr(&g));
        assert!(g.stderr.is_empty(), "groff warnings: {}", stderr(&g));
    }
    let out = proctrace(&["man", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn help_has_examples() {
    for (cmd, example) in [
        ("run", "proctrace run -- make -j2"),
        ("watch", "proctrace watch -e exec"),
        ("replay", "proctrace replay cap.jsonl"),
    ] {
        let out = proctrace(&[cmd, "--help"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Examples:") && text.contains(example),
            "{cmd}: {text}"
        );
    }
    let out = proctrace(&["--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("proctrace completions bash"));
}

#[test]
fn quiet_replay_writes_files_and_nothing_on_stderr() {
    let cap = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/captures/make-j2.jsonl"
    );
    let loud = proctrace(&["replay", cap]);
    assert!(
        loud.status.success() && stderr(&loud).contains("make -j2"),
        "{}",
        stderr(&loud)
    );
    let o = tmp("replay.jsonl");
    let out = proctrace(&["replay", cap, "--quiet", "-o", &o]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "quiet");
    assert_eq!(read_lines(&o).last().unwrap()["event"], "end");
    // An error still prints.
    let out = proctrace(&["replay", "/nonexistent/cap.jsonl", "-q"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("/nonexistent/cap.jsonl"),
        "{}",
        stderr(&out)
    );
}
