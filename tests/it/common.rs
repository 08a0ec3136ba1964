//! Helpers: the fixture program, running proctrace, reading its JSON Lines.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

pub const PROCTRACE: &str = env!("CARGO_BIN_EXE_proctrace");

/// `tests/fixtures/shapes.c`, compiled once per test run.
pub fn shapes() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/shapes.c");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("shapes");
        let st = Command::new("cc")
            .args(["-O2", "-Wall", "-pthread", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .unwrap();
        assert!(st.success(), "cc failed on {src}");
        out.to_string_lossy().into_owned()
    })
}

/// A fresh scratch path.
pub fn tmp(name: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("t{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_string_lossy().into_owned()
}

/// Defines a test module whose body runs once per backend: `fn connector` and `fn ptrace`.
macro_rules! both_backends {
    ($(#[$m:meta])* fn $name:ident($b:ident: &str) $body:block) => {
        $(#[$m])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn body($b: &str) $body
            #[test]
            fn connector() {
                body("connector")
            }
            #[test]
            fn ptrace() {
                body("ptrace")
            }
        }
    };
}

/// `proctrace run --backend B -o FILE [extra] -- argv`.
pub fn run_on(backend: &str, extra: &[&str], argv: &[&str]) -> (Output, Vec<Value>) {
    let mut all = vec!["--backend", backend];
    all.extend_from_slice(extra);
    run(&all, argv)
}

/// `proctrace run -o FILE [extra] -- argv`; returns the process output and the parsed lines.
pub fn run(extra: &[&str], argv: &[&str]) -> (Output, Vec<Value>) {
    let (out, lines, _) = run_file(extra, argv);
    (out, lines)
}

/// [`run`], also returning the JSON Lines file's path.
pub fn run_file(extra: &[&str], argv: &[&str]) -> (Output, Vec<Value>, String) {
    let out_file = tmp("out.jsonl");
    let out = Command::new(PROCTRACE)
        .arg("run")
        .args(["-o", &out_file])
        .args(extra)
        .arg("--")
        .args(argv)
        .env("NO_COLOR", "1")
        .env("SHAPES_LINGER_MS", "100")
        .output()
        .unwrap();
    let lines = read_lines(&out_file);
    (out, lines, out_file)
}

/// Parses a JSON Lines file; every line must parse.
pub fn read_lines(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}:{}: {e}: {l}", i + 1)))
        .collect()
}

/// One process as reconstructed from the lines.
#[derive(Debug, Default, Clone)]
pub struct Proc {
    pub pid: i64,
    pub ppid: i64,
    pub execs: Vec<Option<Vec<String>>>,
    pub exits: Vec<Value>,
    pub background: Option<String>,
    pub setsid: bool,
}

/// Groups lines into processes by pid (in order of fork). Pid reuse would merge; tests avoid it.
pub fn processes(lines: &[Value]) -> BTreeMap<i64, Proc> {
    let mut m: BTreeMap<i64, Proc> = BTreeMap::new();
    for l in lines {
        let Some(pid) = l["pid"].as_i64() else { continue };
        let p = m.entry(pid).or_insert_with(|| Proc {
            pid,
            ..Default::default()
        });
        if let Some(pp) = l["ppid"].as_i64() {
            p.ppid = pp;
        }
        match l["event"].as_str().unwrap() {
            "exec" => p.execs.push(
                l["argv"]
                    .as_array()
                    .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect()),
            ),
            "exit" => p.exits.push(l.clone()),
            "background" => p.background = Some(l["state"].as_str().unwrap().to_string()),
            "setsid" => p.setsid = true,
            _ => {}
        }
    }
    m
}

/// The process whose latest argv starts with these words.
pub fn find<'a>(ps: &'a BTreeMap<i64, Proc>, words: &[&str]) -> &'a Proc {
    ps.values()
        .find(|p| {
            p.execs.iter().any(|a| {
                a.as_ref()
                    .is_some_and(|a| a.len() >= words.len() && a[..words.len()] == *words)
            })
        })
        .unwrap_or_else(|| panic!("no process running {words:?} in {ps:#?}"))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// strace's spelling of a signal (`SIGKILL`).
pub fn signame(sig: i64) -> String {
    match sig {
        9 => "SIGKILL".into(),
        11 => "SIGSEGV".into(),
        15 => "SIGTERM".into(),
        6 => "SIGABRT".into(),
        n => format!("signal {n}"),
    }
}

/// Waits up to 5 s for a file to appear (a command signalling it is ready).
pub fn wait_for_file(path: &str) {
    for _ in 0..500 {
        if std::path::Path::new(path).exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{path} never appeared");
}
