//! Helpers: the fixture program, running proctrace, reading its JSON Lines.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

pub const PROCTRACE: &str = env!("CARGO_BIN_EXE_proctrace");

/// `tests/fixtures/shapes.c`, compiled once per test run.
pub fn shapes() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("shapes"))
}

/// `tests/fixtures/deny-bpf.c`: runs a command under a seccomp filter refusing `bpf()` with
/// EPERM (as Docker's default profile does; `--enosys` first: ENOSYS), compiled once per test run.
pub fn nobpf() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("deny-bpf"))
}

/// Compiles `tests/fixtures/NAME.c` (with threads) to `NAME` in the tests' scratch directory;
/// returns its path. Callers keep it in a `OnceLock` to compile once per test run.
pub fn compile_fixture(name: &str) -> String {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.c"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc failed on {}", src.display());
    out.to_string_lossy().into_owned()
}

/// The first line a child writes to its (piped) stdout, without its line end.
pub fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead as _;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim_end().to_string()
}

/// Held by a test that runs a daemon (the sccache fixture, dockerd, a podman service, a
/// container's conmon): `run --include-daemons` follows every daemon found on the machine, so
/// two such tests at once would see each other's. One at a time, across the threads of this
/// run and the other test runs of the machine (a lock on a file, let go when dropped).
pub struct DaemonsLock(#[allow(dead_code)] std::fs::File);

pub fn daemons_lock() -> DaemonsLock {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("proctrace-tests-daemons.lock"))
        .unwrap();
    // SAFETY: flock(2) on a descriptor this function owns; a lock of its own open file
    // description, so threads of one process exclude each other too.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(r, 0, "flock: {}", std::io::Error::last_os_error());
    DaemonsLock(f)
}

/// A fresh scratch path.
pub fn tmp(name: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("t{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_string_lossy().into_owned()
}

/// Defines a test module whose body runs once per backend: `fn connector`, `fn ptrace` and
/// `fn ebpf`.
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
            #[test]
            fn ebpf() {
                body("ebpf")
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

/// Waits up to 20 s for the text of the file at `path` to satisfy `cond` (a line written, a
/// number of lines reached), polling; panics naming `what` otherwise.
pub fn wait_for_text(path: &str, what: &str, cond: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if cond(&text) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what} in {path}; have:\n{}",
            &text[text.len().saturating_sub(2000)..]
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The strace options whose output [`StraceLog`] reads (then `-o FILE CMD...`). Not
/// `-e signal=none`: it hides "killed by".
pub const STRACE_ARGS: [&str; 6] = [
    "-f",
    "-q",
    "-s",
    "4096",
    "-e",
    "trace=execve,clone,clone3,fork,vfork",
];

/// What `strace STRACE_ARGS -o FILE` saw (without
/// `-e signal=none`, which hides "killed by"): per process, its successful execs' argv (words
/// joined by spaces), its child processes, and how it ended.
#[derive(Debug, Default)]
pub struct StraceLog {
    /// The first process (the traced command; not the smallest pid: pids wrap).
    pub first: i64,
    /// Successful execs per pid, in order.
    pub argv: HashMap<i64, Vec<String>>,
    /// Child processes per pid (threads left out).
    pub children: HashMap<i64, Vec<i64>>,
    /// `code N` or the signal name, per pid (threads left out); instances of a reused pid
    /// overwrite each other.
    pub status: HashMap<i64, String>,
    /// Every status per pid in order (for pid reuse).
    pub statuses: BTreeMap<i64, Vec<String>>,
}

/// strace's argument list `["a", "b"]` back to words (the workloads use no escapes).
fn strace_words(s: &str) -> Option<String> {
    let start = s.find('[')?;
    let end = start + s[start..].find(']')?;
    Some(
        s[start + 1..end]
            .split(", ")
            .map(|w| w.trim_matches('"'))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

impl StraceLog {
    /// Parses the file. Handles calls strace splits (`<unfinished ...>` / `<... resumed>`) and
    /// exec from a non-leader thread (`LEADER +++ superseded by execve in pid THREAD +++`).
    pub fn read(path: &str) -> StraceLog {
        let text = std::fs::read_to_string(path).unwrap();
        let mut log = StraceLog::default();
        let mut threads = HashSet::new();
        let mut pending_exec: HashMap<i64, String> = HashMap::new();
        let mut pending_thread: HashMap<i64, bool> = HashMap::new();
        let mut resumed = HashSet::new();
        let mut first = None;
        for line in text.lines() {
            let Some((pid, rest)) = line.split_once(' ') else {
                continue;
            };
            let Ok(pid) = pid.trim().parse::<i64>() else {
                continue;
            };
            let rest = rest.trim_start();
            if first.is_none() {
                first = Some(pid);
                log.statuses.entry(pid).or_default();
            }
            let is_clone = ["clone", "fork", "vfork"].iter().any(|c| rest.starts_with(c));
            let clone_resumed = ["<... clone", "<... fork", "<... vfork"]
                .iter()
                .any(|c| rest.starts_with(c));
            if rest.starts_with("execve(") {
                match strace_words(rest) {
                    Some(a) if rest.ends_with("<unfinished ...>") => {
                        pending_exec.insert(pid, a);
                    }
                    Some(a) if rest.ends_with("= 0") => log.argv.entry(pid).or_default().push(a),
                    _ => {}
                }
            } else if rest.starts_with("<... execve resumed>") {
                match pending_exec.remove(&pid) {
                    Some(a) if rest.ends_with("= 0") => log.argv.entry(pid).or_default().push(a),
                    Some(_) => {}
                    None => {
                        resumed.insert(pid);
                    }
                }
            } else if let Some(thread) = rest
                .strip_prefix("+++ superseded by execve in pid ")
                .and_then(|r| r.strip_suffix(" +++"))
                .and_then(|r| r.parse::<i64>().ok())
            {
                if let Some(a) = pending_exec.remove(&thread) {
                    if resumed.remove(&pid) {
                        log.argv.entry(pid).or_default().push(a);
                    } else {
                        pending_exec.insert(pid, a);
                    }
                }
                threads.insert(thread);
            } else if is_clone && rest.ends_with("<unfinished ...>") {
                pending_thread.insert(pid, rest.contains("CLONE_THREAD"));
            } else if is_clone || clone_resumed {
                let thread = if clone_resumed {
                    pending_thread.remove(&pid).unwrap_or(false)
                } else {
                    rest.contains("CLONE_THREAD")
                };
                if let Some(child) = rest
                    .rsplit("= ")
                    .next()
                    .and_then(|c| c.trim().parse::<i64>().ok())
                {
                    if thread {
                        threads.insert(child);
                    } else {
                        threads.remove(&child);
                        log.children.entry(pid).or_default().push(child);
                        log.statuses.entry(child).or_default();
                    }
                }
            } else if let Some(code) = rest
                .strip_prefix("+++ exited with ")
                .and_then(|r| r.strip_suffix(" +++"))
            {
                if !threads.contains(&pid) {
                    log.status.insert(pid, format!("code {code}"));
                    log.statuses.entry(pid).or_default().push(format!("code {code}"));
                }
            } else if let Some(sig) = rest
                .strip_prefix("+++ killed by ")
                .and_then(|r| r.split(' ').next())
                && !threads.contains(&pid)
            {
                log.status.insert(pid, sig.to_string());
                log.statuses.entry(pid).or_default().push(sig.to_string());
            }
        }
        log.first = first.unwrap_or(-1);
        log
    }
}

/// `proctrace run [extra] -- touch MARKER`, for an output that must fail before the command
/// starts; returns the process output and the marker's path (which must then not exist).
pub fn run_touching_marker(extra: &[&str]) -> (Output, String) {
    let marker = tmp("ran");
    let out = Command::new(PROCTRACE)
        .arg("run")
        .args(extra)
        .args(["--", "touch", &marker])
        .output()
        .unwrap();
    (out, marker)
}

/// Starts `sh -c SCRIPT`, runs `proctrace watch -p PID [extra]` (with `NO_COLOR=1`) until it
/// ends, and reaps the shell; returns proctrace's output and the shell's pid.
pub fn watch_sh(script: &str, extra: &[&str]) -> (Output, u32) {
    let mut target = Command::new("sh").args(["-c", script]).spawn().unwrap();
    let pid = target.id();
    let out = Command::new(PROCTRACE)
        .args(["watch", "-p", &pid.to_string()])
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    target.wait().unwrap();
    (out, pid)
}
