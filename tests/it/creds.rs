//! Credentials never leak (issue 22, item 6): proctrace's own (`--otlp=URL`, `--otlp URL`,
//! `OTEL_EXPORTER_OTLP_HEADERS`) in no output, capture, Trace2 line, message or OTLP payload,
//! whatever `--no-redact` says; the traced command's in none unless `--no-redact` — and the
//! command itself always gets its words unchanged. A real run, a real OTLP receiver
//! (tests/otlp/receiver.py).
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;
use crate::otlp::Receiver;

/// Every file output, by flag.
const FILES: [&str; 9] = [
    "--record",
    "-o",
    "--trace2-event",
    "--trace2-perf",
    "--trace2-normal",
    "--summary-json",
    "--summary-md",
    "--chrome",
    "--svg",
];

/// The traced command: a secret in each form the redaction knows.
const COMMAND: [&str; 9] = [
    "/bin/echo",
    "ftp://x:SECRET2@h/f",
    "https://SECRET3TOKEN@host/r",
    "--password=SECRET4",
    "--token",
    "SECRET6",
    "Authorization: Bearer SECRET7",
    "GITHUB_TOKEN=SECRET8",
    "https://api/x?access_token=SECRET9",
];

/// `proctrace run` with every file output, `otlp` as its own arguments (before the others) and
/// `extra` after them; the output and each file's text, by flag.
fn run(otlp: &[&str], extra: &[&str]) -> (Output, Vec<(&'static str, String)>) {
    let paths: Vec<(&str, String)> = FILES
        .iter()
        .map(|f| (*f, tmp(&format!("out{}", f.replace('-', "_")))))
        .collect();
    let mut c = Command::new(PROCTRACE);
    c.arg("run").args(otlp);
    for (f, p) in &paths {
        c.args([f, p.as_str()]);
    }
    c.args(extra).arg("--").args(COMMAND);
    c.env_remove("TRACEPARENT")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20SECRET5")
        .env("PROCTRACE_TEST_TOKEN", "SECRET10");
    let out = c.output().unwrap();
    let files = paths
        .into_iter()
        .map(|(f, p)| {
            (
                f,
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{f} {p}: {e}")),
            )
        })
        .collect();
    (out, files)
}

/// Which of `secrets` appear in `text`.
fn found<'a>(text: &str, secrets: &[&'a str]) -> Vec<&'a str> {
    secrets.iter().copied().filter(|s| text.contains(s)).collect()
}

const OWN: [&str; 3] = ["SECRETPW", "SECRET5", "SECRET10"];
const TRACED: [&str; 7] = [
    "SECRET2", "SECRET3", "SECRET4", "SECRET6", "SECRET7", "SECRET8", "SECRET9",
];

/// The spans the receiver decoded, and the Authorization header each request carried.
fn otlp_seen(r: &Receiver) -> (String, Vec<String>) {
    r.wait_requests(1);
    let lines = r.lines();
    let spans: Vec<String> = lines
        .iter()
        .filter_map(|l| l.get("span"))
        .map(Value::to_string)
        .collect();
    assert!(!spans.is_empty(), "no span reached the receiver: {lines:?}");
    let auth = lines
        .iter()
        .filter_map(|l| l.get("headers")?.get("authorization")?.as_str().map(String::from))
        .collect();
    (spans.join("\n"), auth)
}

#[test]
fn no_secret_reaches_any_output() {
    let r = Receiver::start(&[]);
    let url = format!("http://u:SECRETPW@127.0.0.1:{}", r.port);
    let (out, files) = run(&[&format!("--otlp={url}")], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The command got its words as given.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        COMMAND[1..].join(" "),
        "the command's own output"
    );
    let all: Vec<&str> = OWN.iter().chain(&TRACED).copied().collect();
    for (flag, text) in &files {
        assert!(!text.is_empty(), "{flag} wrote nothing");
        assert_eq!(found(text, &all), Vec::<&str>::new(), "{flag}:\n{text}");
    }
    assert_eq!(found(&err, &all), Vec::<&str>::new(), "stderr:\n{err}");
    let (spans, auth) = otlp_seen(&r);
    assert_eq!(found(&spans, &all), Vec::<&str>::new(), "OTLP payload:\n{spans}");
    // The header did its job: the collector got it, and only the collector.
    assert!(
        auth.iter().all(|a| a == "Bearer SECRET5") && !auth.is_empty(),
        "{auth:?}"
    );

    // What is left shows what was there.
    let text = |flag: &str| &files.iter().find(|(f, _)| *f == flag).unwrap().1;
    let jsonl = text("-o");
    for shown in [
        "ftp://x:<REDACTED>@h/f",
        "https://<REDACTED>@host/r",
        "--password=<REDACTED>",
        "\"--token\",\"<REDACTED>\"",
        "Authorization: Bearer <REDACTED>",
        "GITHUB_TOKEN=<REDACTED>",
        "access_token=<REDACTED>",
    ] {
        assert!(jsonl.contains(shown), "{shown} not in the JSON Lines:\n{jsonl}");
    }
    let own = format!("--otlp=http://u:<REDACTED>@127.0.0.1:{}", r.port);
    let start = text("--trace2-event")
        .lines()
        .find(|l| l.contains("\"event\":\"start\"") && l.contains("proctrace"))
        .unwrap_or_else(|| panic!("no start line:\n{}", text("--trace2-event")))
        .to_string();
    assert!(start.contains(&own), "{start}");
    assert!(
        text("--record").lines().next().unwrap().contains(&own),
        "{}",
        text("--record")
    );

    // A replay of the capture, even with --no-redact, has nothing to show.
    let replayed = tmp("replay.jsonl");
    let t2 = tmp("replay.trace2");
    let capture = tmp("capture-copy.jsonl");
    std::fs::write(&capture, text("--record")).unwrap();
    let out = Command::new(PROCTRACE)
        .args([
            "replay",
            &capture,
            "--no-redact",
            "-o",
            &replayed,
            "--trace2-event",
            &t2,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (what, text) in [
        ("replay JSONL", std::fs::read_to_string(&replayed).unwrap()),
        ("replay Trace2", std::fs::read_to_string(&t2).unwrap()),
        ("replay stderr", stderr(&out)),
    ] {
        assert_eq!(found(&text, &all), Vec::<&str>::new(), "{what}:\n{text}");
    }
}

#[test]
fn no_redact_shows_the_command_never_proctrace() {
    let r = Receiver::start(&[]);
    let url = format!("http://u:SECRETPW@127.0.0.1:{}", r.port);
    let (out, files) = run(&["--otlp", &url], &["--no-redact"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for (flag, text) in &files {
        assert_eq!(found(text, &OWN), Vec::<&str>::new(), "{flag}:\n{text}");
    }
    assert_eq!(found(&err, &OWN), Vec::<&str>::new(), "stderr:\n{err}");
    let (spans, _) = otlp_seen(&r);
    assert_eq!(found(&spans, &OWN), Vec::<&str>::new(), "OTLP payload:\n{spans}");
    // The traced argv is shown as given, in the outputs that carry argv.
    let text = |flag: &str| &files.iter().find(|(f, _)| *f == flag).unwrap().1;
    for flag in ["-o", "--record", "--chrome", "--summary-json"] {
        assert!(
            text(flag).contains("ftp://x:SECRET2@h/f"),
            "{flag}:\n{}",
            text(flag)
        );
    }
    assert!(spans.contains("SECRET4"), "{spans}");
    // proctrace's own command line keeps the command's words redacted: it is proctrace's.
    let start = text("--trace2-event")
        .lines()
        .find(|l| l.contains("\"event\":\"start\"") && l.contains("proctrace"))
        .unwrap()
        .to_string();
    assert!(start.contains("http://u:<REDACTED>@127.0.0.1"), "{start}");
    assert_eq!(found(&start, &TRACED), Vec::<&str>::new(), "{start}");
}

#[test]
fn an_unreachable_collector_is_reported_without_secrets() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            &format!("--otlp=http://u:SECRETPW@127.0.0.1:{port}"),
            "--",
            "true",
        ])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20SECRET5")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("spans not delivered"), "the failure is said: {err}");
    assert_eq!(found(&err, &OWN), Vec::<&str>::new(), "{err}");
}

#[test]
fn a_bad_otlp_url_is_quoted_redacted() {
    let out = Command::new(PROCTRACE)
        .args(["run", "--otlp=ftp://u:SECRETPW@h", "--", "true"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ftp://u:<REDACTED>@h"), "{err}");
    assert!(!err.contains("SECRETPW"), "{err}");
    // A header written with `:` instead of `=`: named by its place, never quoted.
    let out = Command::new(PROCTRACE)
        .args(["run", "--otlp=http://127.0.0.1:9", "--", "true"])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "Authorization: Bearer SECRET5")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("member 1 is not key=value"), "{err}");
    assert!(!err.contains("SECRET5"), "{err}");
}
