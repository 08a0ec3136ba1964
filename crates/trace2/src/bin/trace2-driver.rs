//! `trace2-driver`: the verbs of git's `test-tool trace2`, implemented with
//! this crate and configured by the `GIT_TRACE2*` variables, so that its
//! output can be compared with git's.
//!
//! Usage: `trace2-driver [trace2] <verb> <args…>` (the optional `trace2`
//! mirrors `test-tool trace2 <verb>`). Arguments, exit codes and emitted
//! events follow `t/helper/test-trace2.c`.

use std::panic::Location;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use trace2::{ChildSpec, Counter, Timer};

static TEST1_TIMER: Timer = Timer::new("test", "test1", false);
static TEST2_TIMER: Timer = Timer::new("test", "test2", true);
static TEST1_COUNTER: Counter = Counter::new("test", "test1", false);
static TEST2_COUNTER: Counter = Counter::new("test", "test2", true);

const VERBS: &[(&str, &str)] = &[
    ("001return", "<exit_code>"),
    ("002exit", "<exit_code>"),
    ("003error", "<error_message>+"),
    ("004child", "[<child_command_line>]"),
    ("005exec", "<git_command_args>"),
    ("006data", "[<category> <key> <value>]+"),
    ("007bug", ""),
    ("008bug", ""),
    ("009bug_BUG", ""),
    ("010bug_BUG", ""),
    ("100timer", "<count> <ms_delay>"),
    ("101timer", "<count> <ms_delay> <threads>"),
    ("200counter", "<v1> [<v2> [<v3> [...]]]"),
    ("201counter", "<v1> <v2> <threads>"),
    ("300redact_start", "<argv...>"),
    ("301redact_child_start", "<argv...>"),
    ("302redact_exec", "<exe> <argv...>"),
    ("303redact_def_param", "<key> <value>"),
    ("400ancestry", "<target> <output_file> [<child_command_line>]"),
    ("900bg", "<ready|timeout|error|exit|signal>"),
    ("901stress", "<threads> <events_per_thread>"),
];

/// The exit code test-tool gives `BUG()` (`BUG_exit_code`; git itself aborts).
const BUG_EXIT_CODE: i32 = 99;

/// git's `bug_called_must_BUG`: set by [`bug`], cleared by [`bug_fatal`]; a
/// process that exits with it set reports a `BUG()` instead.
static BUG_CALLED_MUST_BUG: AtomicBool = AtomicBool::new(false);

/// git's `exit()` wrapper (`common_exit`): a `bug()` not followed by
/// `BUG_if_bug()` turns into a `BUG()`; then the `exit` event and the exit.
#[track_caller]
fn exit_process(code: i32) -> ! {
    if BUG_CALLED_MUST_BUG.load(Ordering::Relaxed) {
        let msg = "on exit(): had bug() call(s) in this process without explicit BUG_if_bug()";
        bug_fatal(msg, msg);
    }
    std::process::exit(trace2::exit(code))
}

/// `BUG: <file>:<line>: <msg>` on stderr, and an `error` event (git's
/// `BUG_vfl_common` followed by `trace2_cmd_error_va`).
#[track_caller]
fn report_bug(fmt: &str, msg: &str) {
    let loc = Location::caller();
    eprintln!("BUG: {}:{}: {msg}", loc.file(), loc.line());
    trace2::error_fmt(fmt, msg);
}

/// git's `bug()`: reports the bug and carries on; the process must call
/// `BUG_if_bug()` (or dies with a `BUG()` at exit).
#[track_caller]
fn bug(fmt: &str, msg: &str) {
    BUG_CALLED_MUST_BUG.store(true, Ordering::Relaxed);
    report_bug(fmt, msg);
}

/// git's `BUG()` as test-tool runs it: report, then exit 99.
#[track_caller]
fn bug_fatal(fmt: &str, msg: &str) -> ! {
    BUG_CALLED_MUST_BUG.store(false, Ordering::Relaxed);
    report_bug(fmt, msg);
    std::process::exit(trace2::exit(BUG_EXIT_CODE))
}

/// git's `BUG_if_bug()`: a `BUG()` if [`bug`] was called.
#[track_caller]
fn bug_if_bug(msg: &str) {
    if BUG_CALLED_MUST_BUG.load(Ordering::Relaxed) {
        bug_fatal(msg, msg);
    }
}

/// git's `die()`: an `error` event, `fatal: …` on stderr, exit 128.
#[track_caller]
fn die(fmt: &str, msg: &str) -> ! {
    trace2::error_fmt(fmt, msg);
    eprintln!("fatal: {msg}");
    exit_process(128)
}

#[track_caller]
fn die_plain(msg: &str) -> ! {
    die(msg, msg)
}

/// Strict base-10 `int` like test-trace2.c's `get_i`.
fn get_i(s: Option<&String>) -> Option<i32> {
    let s = s?;
    if s.is_empty() {
        return None;
    }
    let t = s.trim_start();
    let v: i64 = t.parse().ok()?;
    i32::try_from(v).ok()
}

fn usage() -> i32 {
    eprintln!("usage:");
    for (name, args) in VERBS {
        eprintln!("\ttrace2-driver trace2 {name} {args}");
    }
    129
}

fn run(args: &[String]) -> i32 {
    let Some(verb) = args.first() else { return usage() };
    let a = &args[1..];
    match verb.as_str() {
        "001return" => match get_i(a.first()) {
            Some(rc) => rc,
            None => die_plain("expect <exit_code>"),
        },
        "002exit" => match get_i(a.first()) {
            Some(rc) => exit_process(rc),
            None => die_plain("expect <exit_code>"),
        },
        "003error" => {
            if a.first().is_none_or(|s| s.is_empty()) {
                die_plain("expect <error_message>");
            }
            for m in a {
                trace2::error_fmt("%s", m);
                eprintln!("error: {m}");
            }
            0
        }
        "004child" => {
            if a.is_empty() {
                return 0;
            }
            let mut cmd = Command::new(&a[0]);
            cmd.args(&a[1..]);
            exit_process(run_command(cmd))
        }
        "005exec" => {
            if a.is_empty() {
                return 0;
            }
            let mut cmd = Command::new("git");
            cmd.args(a);
            let _err = trace2::child::exec(&mut cmd, Some("git"));
            -1
        }
        "006data" => {
            let usage_error = "expect <cat0> <k0> <v0> [<cat1> <k1> <v1> [...]]";
            if !a.len().is_multiple_of(3) {
                die("%s", usage_error);
            }
            for t in a.chunks(3) {
                if t.iter().any(|s| s.is_empty()) {
                    die("%s", usage_error);
                }
                trace2::data_with(&t[0], Some(trace2::RepoId(0)), &t[1], &t[2]);
            }
            0
        }
        "007bug" => bug_fatal("the bug message", "the bug message"),
        "008bug" => {
            bug("a bug message", "a bug message");
            bug("another bug message", "another bug message");
            let msg = "an explicit BUG_if_bug() following bug() call(s) is nice, but not required";
            bug_if_bug(msg);
            0
        }
        // No `BUG_if_bug()`: the exit turns the `bug()` calls into a `BUG()`.
        "009bug_BUG" => {
            bug("a bug message", "a bug message");
            bug("another bug message", "another bug message");
            0
        }
        "010bug_BUG" => {
            bug("a %s message", "a bug message");
            bug_fatal("a %s message", "a BUG message")
        }
        "100timer" => {
            let usage_error = "expect <count> <ms_delay>";
            let (Some(count), Some(delay), 2) = (get_i(a.first()), get_i(a.get(1)), a.len()) else {
                die("%s", usage_error)
            };
            for _ in 0..count {
                TEST1_TIMER.start();
                sleep_ms(delay);
                TEST1_TIMER.stop();
            }
            0
        }
        "101timer" => {
            let usage_error = "expect <count> <ms_delay> <threads>";
            let (Some(count), Some(delay), Some(threads), 3) =
                (get_i(a.first()), get_i(a.get(1)), get_i(a.get(2)), a.len())
            else {
                die("%s", usage_error)
            };
            let handles: Vec<_> = (0..threads.max(0))
                .map(|_| {
                    std::thread::spawn(move || {
                        trace2::thread_start("ut_101");
                        for _ in 0..count {
                            TEST2_TIMER.start();
                            sleep_ms(delay);
                            TEST2_TIMER.stop();
                        }
                        trace2::thread_exit();
                    })
                })
                .collect();
            for h in handles {
                if h.join().is_err() {
                    die_plain("failed to join thread");
                }
            }
            0
        }
        "200counter" => {
            let usage_error = "expect <v1> [<v2> [...]]";
            if a.is_empty() {
                die("%s", usage_error);
            }
            for s in a {
                let Some(v) = get_i(Some(s)) else {
                    die(
                        "invalid value[%s] -- %s",
                        &format!("invalid value[{s}] -- {usage_error}"),
                    )
                };
                TEST1_COUNTER.add(i64::from(v) as u64);
            }
            0
        }
        "201counter" => {
            let usage_error = "expect <v1> <v2> <threads>";
            let (Some(v1), Some(v2), Some(threads), 3) =
                (get_i(a.first()), get_i(a.get(1)), get_i(a.get(2)), a.len())
            else {
                die("%s", usage_error)
            };
            let handles: Vec<_> = (0..threads.max(0))
                .map(|_| {
                    std::thread::spawn(move || {
                        trace2::thread_start("ut_201");
                        TEST2_COUNTER.add(i64::from(v1) as u64);
                        TEST2_COUNTER.add(i64::from(v2) as u64);
                        trace2::thread_exit();
                    })
                })
                .collect();
            for h in handles {
                if h.join().is_err() {
                    die_plain("failed to join thread");
                }
            }
            0
        }
        "300redact_start" => {
            if a.is_empty() {
                die_plain("expect <argv...>");
            }
            trace2::cmd_start(a);
            0
        }
        "301redact_child_start" => {
            if a.is_empty() {
                die_plain("expect <argv...>");
            }
            let spec = ChildSpec {
                argv: a.iter().map(|s| s.as_str()).collect(),
                ..ChildSpec::default()
            };
            let _ = trace2::child_start_with(&spec);
            0
        }
        "302redact_exec" => {
            if a.is_empty() {
                die_plain("expect <exe> <argv...>");
            }
            let _ = trace2::exec(Some(&a[0]), &a[1..]);
            0
        }
        "303redact_def_param" => {
            if a.len() < 2 {
                die_plain("expect <key> <value>");
            }
            trace2::def_param(&a[0], Some(&a[1]), "unknown");
            0
        }
        // From git 2.54 (t0213): run a child whose only Trace2 target is
        // <target> into <output_file>, brief, so that its `cmd_ancestry`
        // can be checked in isolation.
        "400ancestry" => {
            if a.len() < 3 {
                die_plain("expect <target> <output_file> <child_command_line>");
            }
            let var = match a[0].as_str() {
                "normal" => "GIT_TRACE2",
                "perf" => "GIT_TRACE2_PERF",
                "event" => "GIT_TRACE2_EVENT",
                t => die(
                    "invalid target '%s', expected: normal, perf, event",
                    &format!("invalid target '{t}', expected: normal, perf, event"),
                ),
            };
            let mut cmd = Command::new(&a[2]);
            cmd.args(&a[3..])
                .env("GIT_TRACE2", "")
                .env("GIT_TRACE2_PERF", "")
                .env("GIT_TRACE2_EVENT", "")
                .env("GIT_TRACE2_BRIEF", "1")
                .env(var, &a[1]);
            exit_process(run_command(cmd))
        }
        // Extensions (not in git's test-tool): the library's background
        // start helper, and many threads writing at once.
        "900bg" => background(a.first().map(String::as_str).unwrap_or("")),
        "901stress" => {
            let (Some(threads), Some(n)) = (get_i(a.first()), get_i(a.get(1))) else {
                die_plain("expect <threads> <events_per_thread>")
            };
            let pad = "x".repeat(300);
            let handles: Vec<_> = (0..threads.max(0))
                .map(|t| {
                    let pad = pad.clone();
                    std::thread::spawn(move || {
                        trace2::thread_start("stress");
                        for i in 0..n {
                            let _r = trace2::region("stress", "loop");
                            trace2::data("stress", "item", format!("{t}-{i}-{pad}"));
                            trace2::printf(format!("line {t} {i}"));
                        }
                        trace2::thread_exit();
                    })
                })
                .collect();
            for h in handles {
                if h.join().is_err() {
                    die_plain("failed to join thread");
                }
            }
            0
        }
        _ => usage(),
    }
}

/// git's `run_command()`: `child_start`, spawn, wait, `child_exit`; the
/// child's code, or -1 if it could not be started. A failed start is
/// reported as git's `start_command` reports it, between `child_start` and
/// `child_exit`: a name not found on `PATH` is `error: cannot run <name>: …`,
/// any other failure `fatal: cannot exec '<name>': …` (git prints it with
/// `die`'s prefix but carries on).
#[track_caller]
fn run_command(mut cmd: Command) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    let argv: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let spec = ChildSpec {
        class: Some("?"),
        argv: argv.iter().map(String::as_str).collect(),
        ..ChildSpec::default()
    };
    let id = trace2::child_start_with(&spec);
    trace2::child::prepare(&mut cmd);
    let name = argv.first().map(String::as_str).unwrap_or("");
    if !name.contains('/') && !in_path(name) {
        let why = strerror(&std::io::Error::from(std::io::ErrorKind::NotFound));
        let fmt = format!("cannot run %s: {why}");
        let msg = format!("cannot run {name}: {why}");
        trace2::error_fmt(&fmt, &msg);
        eprintln!("error: {msg}");
        trace2::child_exit(&id, -1, -1);
        return -1;
    }
    match cmd.spawn() {
        Ok(mut child) => {
            let pid = i64::from(child.id());
            let code = match child.wait() {
                Ok(st) => {
                    // git's `wait_or_whine`: a death by signal is an error,
                    // except SIGINT, SIGQUIT and SIGPIPE.
                    if let Some(sig) = st.signal()
                        && ![libc::SIGINT, libc::SIGQUIT, libc::SIGPIPE].contains(&sig)
                    {
                        let msg = format!("{name} died of signal {sig}");
                        trace2::error_fmt("%s died of signal %d", &msg);
                        eprintln!("error: {msg}");
                    }
                    trace2::child::status_code(&st)
                }
                Err(e) => {
                    let why = strerror(&e);
                    let msg = format!("waitpid for {name} failed: {why}");
                    trace2::error_fmt(&format!("waitpid for %s failed: {why}"), &msg);
                    eprintln!("error: {msg}");
                    -1
                }
            };
            trace2::child_exit(&id, pid, code);
            code
        }
        Err(e) => {
            let why = strerror(&e);
            let fmt = format!("cannot exec '%s': {why}");
            let msg = format!("cannot exec '{name}': {why}");
            trace2::error_fmt(&fmt, &msg);
            eprintln!("fatal: {msg}");
            trace2::child_exit(&id, -1, -1);
            -1
        }
    }
}

/// git's `locate_in_PATH()`: is there an executable regular file `name` in
/// a `PATH` directory (an empty entry is the current directory)?
fn in_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH").filter(|p| !p.is_empty()) else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let file = if dir.as_os_str().is_empty() {
            std::path::PathBuf::from(name)
        } else {
            dir.join(name)
        };
        std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The C library's message for an error (`strerror`), without Rust's
/// ` (os error N)` suffix.
fn strerror(e: &std::io::Error) -> String {
    let code = e.raw_os_error().unwrap_or(libc::ENOENT);
    let s = std::io::Error::from_raw_os_error(code).to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn background(mode: &str) -> i32 {
    use trace2::child::{BackgroundOutcome, Probe, start_background};
    let flag = std::env::temp_dir().join(format!("trace2-driver-bg-{}", std::process::id()));
    let _ = std::fs::remove_file(&flag);
    let script = match mode {
        "ready" => format!("touch '{}'; exec sleep 30", flag.display()),
        "timeout" | "error" => "exec sleep 30".to_string(),
        "exit" => "exit 3".to_string(),
        "signal" => "kill -9 $$".to_string(),
        _ => die_plain("expect <ready|timeout|error|exit|signal>"),
    };
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    let probe = |_pid: u32| match mode {
        "ready" if flag.exists() => Probe::Ready,
        "error" => Probe::Error,
        _ => Probe::NotYet,
    };
    let outcome = start_background(cmd, None, probe, Duration::from_millis(300));
    let _ = std::fs::remove_file(&flag);
    match outcome {
        BackgroundOutcome::Released { mut child, state } => {
            println!("released {}", state.as_str());
            // A daemon would live on; this test helper cleans up after itself.
            let _ = child.kill();
            let _ = child.wait();
            0
        }
        BackgroundOutcome::Exited { status, .. } => {
            println!("exited {}", trace2::child::status_code(&status));
            0
        }
        BackgroundOutcome::Failed(e) => {
            println!("failed {e}");
            1
        }
    }
}

fn sleep_ms(ms: i32) {
    std::thread::sleep(Duration::from_millis(u64::try_from(ms).unwrap_or(0)));
}

fn main() {
    trace2::init(
        trace2::Config::from_env("GIT")
            .with_git_config()
            .unwrap_or_else(|e| e.die()),
    );
    let mut args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.first().is_some_and(|a| a == "trace2") {
        args.remove(0);
    }
    trace2::cmd_name("trace2");
    let code = run(&args);
    exit_process(code)
}
