//! A signal reaches the command exactly once, whoever sends it; proctrace can always be stopped.
//!
//! The command is `tests/fixtures/sigcount.c`: it counts the TERM/INT/HUP/QUIT it receives for
//! a moment after the first and exits with 10 + the count, so a second copy of one signal shows
//! as a count of 2 and an exit status of 12. Terminals are real pseudo-terminals
//! (`tests/fixtures/pty_driver.py`), with proctrace as the session leader or as a job of an
//! interactive bash.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::*;

/// Far above what any of these waits takes (a guard, not a measure).
const GUARD: Duration = Duration::from_secs(10);

fn sigcount() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("sigcount"))
}

/// Waits for a file the fixtures write whole (aside, then renamed); returns its text.
fn wait_whole(path: &str) -> String {
    wait_for_text(path, path, |t| t.ends_with('\n'));
    std::fs::read_to_string(path).unwrap()
}

/// The counter's verdict: how many signals, and the first one's number.
fn counted(path: &str) -> (u32, i32) {
    let t = wait_whole(path);
    let mut w = t.split_whitespace().map(|v| v.parse::<i64>().unwrap());
    (w.next().unwrap() as u32, w.next().unwrap() as i32)
}

/// `proctrace run --backend B --tree none -- sigcount READY COUNT`, as a Command.
fn counter_run(backend: &str, ready: &str, count: &str) -> Command {
    let mut c = Command::new(PROCTRACE);
    c.args([
        "run",
        "--backend",
        backend,
        "--tree",
        "none",
        "--",
        sigcount(),
        ready,
        count,
    ]);
    c.stderr(Stdio::piped());
    c
}

fn wait_exit(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + GUARD * 2;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: proctrace did not end");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut s).unwrap();
    }
    s
}

both_backends! {
fn kill_pid_of_proctrace_reaches_the_command_once(backend: &str) {
    let (ready, count) = (tmp("ready"), tmp("count"));
    let mut child = counter_run(backend, &ready, &count).spawn().unwrap();
    wait_whole(&ready);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = wait_exit(&mut child, "kill PID");
    assert_eq!(counted(&count), (1, libc::SIGTERM), "{}", stderr_of(&mut child));
    assert_eq!(st.code(), Some(11), "proctrace's status is the command's");
}
}

both_backends! {
fn a_kill_of_the_group_holding_proctrace_reaches_the_command_once(backend: &str) {
    let (ready, count) = (tmp("ready"), tmp("count"));
    // proctrace in a group of its own, as a shell's job: the group kill spares the test runner.
    let mut child = counter_run(backend, &ready, &count).process_group(0).spawn().unwrap();
    wait_whole(&ready);
    let pgid = child.id() as i32;
    assert_eq!(unsafe { libc::kill(-pgid, libc::SIGTERM) }, 0);
    let st = wait_exit(&mut child, "kill -TERM -PGID");
    assert_eq!(counted(&count), (1, libc::SIGTERM), "{}", stderr_of(&mut child));
    assert_eq!(st.code(), Some(11));
}
}

both_backends! {
fn timeout_reaches_the_command_once(backend: &str) {
    // timeout signals proctrace, then its own group (which holds proctrace again): two copies,
    // microseconds apart, from one sender.
    let (ready, count) = (tmp("ready"), tmp("count"));
    let out = Command::new("timeout")
        .args(["--preserve-status", "-s", "TERM", "3", PROCTRACE, "run", "--backend", backend])
        .args(["--tree", "none", "--", sigcount(), &ready, &count])
        .output()
        .unwrap();
    assert!(std::path::Path::new(&ready).exists(), "the counter was up before the timeout");
    assert_eq!(counted(&count), (1, libc::SIGTERM), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(11), "{}", stderr(&out));
}
}

both_backends! {
fn a_process_managers_session_kill_reaches_the_command_once(backend: &str) {
    // A supervisor starts each service in a session of its own and stops it with kill -- -SID.
    let (ready, count) = (tmp("ready"), tmp("count"));
    let mut cmd = counter_run(backend, &ready, &count);
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    wait_whole(&ready);
    let sid = child.id() as i32;
    assert_eq!(unsafe { libc::getsid(sid) }, sid);
    assert_eq!(unsafe { libc::kill(-sid, libc::SIGINT) }, 0);
    let st = wait_exit(&mut child, "kill -- -SID");
    assert_eq!(counted(&count), (1, libc::SIGINT), "{}", stderr_of(&mut child));
    assert_eq!(st.code(), Some(11));
}
}

/// A terminal: `pty_driver.py` running `argv` as its session leader.
struct Pty {
    driver: Child,
    out: BufReader<std::process::ChildStdout>,
    transcript: String,
}

impl Pty {
    fn start(argv: &[&str], env: &[(&str, &str)]) -> Pty {
        let transcript = tmp("transcript");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pty_driver.py");
        let mut driver = Command::new("python3")
            .arg(script)
            .arg(&transcript)
            .args(argv)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(driver.stdout.take().unwrap());
        Pty {
            driver,
            out,
            transcript,
        }
    }

    /// Sends one action line (see the driver).
    fn act(&mut self, line: &str) {
        let stdin = self.driver.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Types `text` (Python escapes).
    fn type_(&mut self, text: &str) {
        self.act(&format!("w {text}"));
    }

    /// Waits for the session leader to end: "exit N" or "signal N".
    fn wait(mut self) -> String {
        self.act("wait");
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        let _ = self.driver.wait();
        line.trim().to_string()
    }

    fn transcript(&self) -> String {
        let t = std::fs::read(&self.transcript).unwrap_or_default();
        String::from_utf8_lossy(&t[t.len().saturating_sub(3000)..]).into_owned()
    }
}

both_backends! {
fn a_terminals_ctrl_c_reaches_the_command_once(backend: &str) {
    let (ready, count) = (tmp("ready"), tmp("count"));
    let mut pty = Pty::start(
        &[PROCTRACE, "run", "--backend", backend, "--tree", "none", "--", sigcount(), &ready, &count],
        &[],
    );
    wait_whole(&ready);
    pty.type_("\\x03");
    let t = pty.transcript();
    assert_eq!(pty.wait(), "exit 11", "{t}");
    assert_eq!(counted(&count), (1, libc::SIGINT));
}
}

both_backends! {
fn a_hang_up_reaches_the_command_once_when_proctrace_leads_the_session(backend: &str) {
    // The kernel sends SIGHUP to the session leader only (proctrace), which passes it on.
    let (ready, count) = (tmp("ready"), tmp("count"));
    let mut pty = Pty::start(
        &[PROCTRACE, "run", "--backend", backend, "--tree", "none", "--", sigcount(), &ready, &count],
        &[],
    );
    wait_whole(&ready);
    pty.act("close");
    assert_eq!(pty.wait(), "exit 11");
    assert_eq!(counted(&count), (1, libc::SIGHUP));
}
}

/// An interactive bash on a terminal, as a person has.
fn bash_pty() -> Pty {
    Pty::start(
        &["bash", "--norc", "--noprofile", "-i"],
        &[("PS1", "$ "), ("TERM", "dumb"), ("NO_COLOR", "1")],
    )
}

both_backends! {
fn a_hang_up_under_an_interactive_shell_reaches_the_command_once(backend: &str) {
    // bash relays SIGHUP to its jobs (proctrace's group); the kernel sends SIGHUP to the
    // terminal's foreground group (the command's) when bash, the session leader, exits.
    let (ready, count, status) = (tmp("ready"), tmp("count"), tmp("status"));
    let mut pty = bash_pty();
    // The wrapping sh ignores SIGHUP so that it lives to write proctrace's status.
    pty.type_(&format!(
        "sh -c 'trap \"\" HUP; {PROCTRACE} run --backend {backend} --tree none -- {} {ready} {count}; echo $? > {status}.part; mv {status}.part {status}'\\n",
        sigcount()
    ));
    wait_whole(&ready);
    pty.act("close");
    pty.wait();
    assert_eq!(counted(&count), (1, libc::SIGHUP));
    assert_eq!(wait_whole(&status).trim(), "11", "proctrace's status is the command's");
}
}

/// The state letter of a process (`T` when stopped).
fn state(pid: i32) -> char {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(") ").next().and_then(|r| r.chars().next()))
        .unwrap_or('?')
}

fn wait_state(pid: i32, what: &str, want: impl Fn(char) -> bool, pty: &Pty) {
    let deadline = Instant::now() + GUARD;
    while !want(state(pid)) {
        assert!(
            Instant::now() < deadline,
            "{what}: state {}\n{}",
            state(pid),
            pty.transcript()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

both_backends! {
fn ctrl_z_stops_the_job_and_fg_continues_it(backend: &str) {
    let (ready, out, status) = (tmp("ready"), tmp("out"), tmp("status"));
    let mut pty = bash_pty();
    // The command reads the terminal after it is continued: it must be in the foreground again.
    pty.type_(&format!(
        "{PROCTRACE} run --backend {backend} --tree none -- sh -c 'echo $PPID $$ > {ready}; read l; echo \"$l\" > {out}'\\n"
    ));
    let ids = wait_whole(&ready);
    let mut ids = ids.split_whitespace().map(|v| v.parse::<i32>().unwrap());
    let (proctrace, command) = (ids.next().unwrap(), ids.next().unwrap());
    pty.type_("\\x1a");
    wait_state(command, "the command stops on ^Z", |s| s == 'T' || s == 't', &pty);
    wait_state(proctrace, "proctrace stops as the job", |s| s == 'T', &pty);
    pty.type_("fg\\n");
    wait_state(proctrace, "fg continues proctrace", |s| s != 'T', &pty);
    pty.type_("hello\\n");
    assert_eq!(wait_whole(&out), "hello\n", "{}", pty.transcript());
    pty.type_(&format!("echo $? > {status}.part; mv {status}.part {status}\\n"));
    assert_eq!(wait_whole(&status).trim(), "0", "{}", pty.transcript());
    pty.type_("exit\\n");
    pty.wait();
}
}

/// Waits until the command (whose pid it wrote to `pidfile`) has ended and been reaped.
fn wait_command_gone(pidfile: &str) {
    let pid: i32 = wait_whole(pidfile).trim().parse().unwrap();
    let deadline = Instant::now() + GUARD * 3;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "the command {pid} never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// SIGINT to proctrace; returns how long it then took to end, and its output.
fn interrupt_and_time(child: Child) -> (Duration, std::process::Output) {
    let t0 = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    (t0.elapsed(), out)
}

/// A Trace2 reader that never reads: what it holds once proctrace is gone.
enum StalledReader {
    Stream(std::thread::JoinHandle<std::os::unix::net::UnixStream>),
    Dgram(std::os::unix::net::UnixDatagram),
    Fifo(std::fs::File),
}

impl StalledReader {
    /// Binds (or makes) `path` as `kind`; returns the reader and the `--trace2-event` value.
    fn new(kind: &str, path: &str) -> (StalledReader, String) {
        match kind {
            "stream" => {
                let l = std::os::unix::net::UnixListener::bind(path).unwrap();
                let h = std::thread::spawn(move || l.accept().unwrap().0);
                (StalledReader::Stream(h), format!("af_unix:stream:{path}"))
            }
            "dgram" => {
                let d = std::os::unix::net::UnixDatagram::bind(path).unwrap();
                (StalledReader::Dgram(d), format!("af_unix:dgram:{path}"))
            }
            _ => {
                let c = std::ffi::CString::new(path).unwrap();
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(path)
                    .unwrap();
                (StalledReader::Fifo(f), path.to_string())
            }
        }
    }

    /// The lines it holds, each checked whole.
    fn lines(self) -> usize {
        let mut got = Vec::new();
        match self {
            StalledReader::Stream(h) => {
                h.join().unwrap().read_to_end(&mut got).unwrap();
            }
            StalledReader::Dgram(d) => {
                d.set_nonblocking(true).unwrap();
                let mut buf = vec![0u8; 1 << 20];
                while let Ok(n) = d.recv(&mut buf) {
                    got.extend_from_slice(&buf[..n]);
                }
            }
            StalledReader::Fifo(mut f) => {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = f.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
            }
        }
        assert!(!got.is_empty() && got.ends_with(b"\n"), "whole lines only");
        let mut n = 0;
        for l in got.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            serde_json::from_slice::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("a cut line: {e}: {}", String::from_utf8_lossy(l)));
            n += 1;
        }
        n
    }
}

/// `run --trace2-event` to a reader of `kind` that never reads, with a command that writes more
/// than the socket or pipe holds; SIGINT once the command has ended.
fn sigint_cuts_a_stalled_trace2_reader_short(kind: &str) {
    let (reader, dest) = StalledReader::new(kind, &tmp("t2"));
    let done = tmp("done");
    let script = format!(
        "i=0; while [ $i -lt 3000 ]; do /bin/true; i=$((i+1)); done; echo $$ > {done}.part; mv {done}.part {done}; exit 7"
    );
    let child = Command::new(PROCTRACE)
        .args(["run", "--tree", "none", "--trace2-event", &dest])
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_command_gone(&done);
    let (took, out) = interrupt_and_time(child);
    let err = stderr(&out);
    assert!(took < GUARD, "ended {took:?} after SIGINT: {err}");
    assert_eq!(out.status.code(), Some(7), "the command's status: {err}");
    let n: u64 = err
        .lines()
        .filter(|l| l.contains(" lines not delivered"))
        .find_map(|l| l.split(" lines not delivered").next())
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("names how many lines were not delivered: {err}"));
    assert!(n > 0, "{err}");
    assert!(reader.lines() > 0, "what the reader holds is whole lines of JSON");
}

#[test]
fn sigint_after_the_command_ends_cuts_a_stalled_trace2_stream_socket_short() {
    sigint_cuts_a_stalled_trace2_reader_short("stream");
}

#[test]
fn sigint_after_the_command_ends_cuts_a_stalled_trace2_dgram_socket_short() {
    sigint_cuts_a_stalled_trace2_reader_short("dgram");
}

#[test]
fn sigint_after_the_command_ends_cuts_a_stalled_trace2_fifo_short() {
    sigint_cuts_a_stalled_trace2_reader_short("fifo");
}

/// A TCP "collector" on 127.0.0.1 that accepts connections and never answers; its port.
fn stalled_collector() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            held.push(c); // never read, never answered
        }
    });
    port
}

/// Spans not exported, as proctrace says on stderr.
fn spans_not_delivered(err: &str) -> u64 {
    err.lines()
        .filter(|l| l.contains(" spans not delivered"))
        .find_map(|l| l.strip_prefix("proctrace: otlp: "))
        .and_then(|l| l.split(" spans not delivered").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("says how many spans were not exported: {err}"))
}

#[test]
fn sigint_after_the_command_ends_cuts_a_stalled_otlp_export_short() {
    let port = stalled_collector();
    let done = tmp("done");
    let script =
        format!("for i in 1 2 3 4 5; do /bin/true; done; echo $$ > {done}.part; mv {done}.part {done}");
    let jsonl = tmp("stalled.jsonl");
    let child = Command::new(PROCTRACE)
        .args([
            "run",
            "--tree",
            "none",
            "-o",
            &jsonl,
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_command_gone(&done);
    let (took, out) = interrupt_and_time(child);
    let err = stderr(&out);
    assert!(took < GUARD, "ended {took:?} after SIGINT: {err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    // sh, its five /bin/true and mv: seven process spans (and image spans for any of them
    // whose fork ran 10 ms before its exec on a loaded machine), none answered.
    let lines = read_lines(&jsonl);
    assert_eq!(processes(&lines).len(), 7, "{lines:?}");
    let spans = crate::otlp::spans_of(&lines);
    assert_eq!(spans_not_delivered(&err), spans as u64, "{err}");
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
fn a_huge_otlp_timeout_is_capped() {
    let port = stalled_collector();
    let t0 = Instant::now();
    let jsonl = tmp("capped.jsonl");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--tree",
            "none",
            "-o",
            &jsonl,
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--", "/bin/true"])
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "99999999999999")
        .output()
        .unwrap();
    let took = t0.elapsed();
    let err = stderr(&out);
    // The cap is 30 s (docs/otlp.md); the guard is far above what is left once it is waited out.
    assert!(took < Duration::from_secs(30) + GUARD, "took {took:?}: {err}");
    assert!(err.contains("using 30 s"), "says the timeout was capped: {err}");
    // One process: one span (three if its fork ran 100 ms before its exec on a loaded
    // machine: its images).
    let lines = read_lines(&jsonl);
    assert_eq!(processes(&lines).len(), 1, "{lines:?}");
    let spans = crate::otlp::spans_of(&lines) as u64;
    assert_eq!(spans_not_delivered(&err), spans, "{err}");
}

/// `run -o - -- sh -c 'LOOP; exit 9'` with its stdout a pipe nobody reads: returns proctrace,
/// its pid and the pipe's reading end, once the command has ended and proctrace is stuck in a
/// write to the full pipe (which no deadline can cut short).
fn stuck_on_a_full_stdout() -> (Child, i32, std::os::fd::OwnedFd) {
    let done = tmp("done");
    let script = format!(
        "i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done; echo $$ > {done}.part; mv {done}.part {done}; exit 9"
    );
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just made by pipe2 and are owned here alone.
    let (r, w) = unsafe {
        use std::os::fd::FromRawFd as _;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    let child = Command::new(PROCTRACE)
        .args(["run", "--tree", "none", "-o", "-", "--", "sh", "-c", &script])
        .stdout(w)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_command_gone(&done);
    let pid = child.id() as i32;
    let wchan = format!("/proc/{pid}/wchan");
    let deadline = Instant::now() + GUARD;
    while !std::fs::read_to_string(&wchan)
        .unwrap_or_default()
        .contains("pipe_write")
    {
        assert!(Instant::now() < deadline, "proctrace never filled the pipe");
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, pid, r)
}

#[test]
fn a_second_sigint_ends_proctrace_at_once_with_the_commands_status() {
    // JSON Lines to a pipe nobody reads: the first SIGINT hurries what it can (a pipe shared
    // with others is written blocking); the second ends proctrace at once.
    let (mut child, pid, r) = stuck_on_a_full_stdout();
    unsafe { libc::kill(pid, libc::SIGINT) };
    // Once the first is taken, the second comes from another sender, so that it is not taken
    // for a copy of the first.
    wait_taken(pid, libc::SIGINT);
    let t0 = Instant::now();
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let st = wait_exit(&mut child, "second SIGINT");
    assert!(t0.elapsed() < GUARD);
    assert_eq!(
        st.code(),
        Some(9),
        "the command's status: {}",
        stderr_of(&mut child)
    );
    drop(r);
}

#[test]
fn one_sigint_ends_proctrace_stuck_on_a_stdout_nobody_reads() {
    // As above, but with one signal: a write nothing can cut short does not keep proctrace
    // alive; it ends by itself 2.5 s after the signal (HURRY_LIMIT) with the command's status.
    let (mut child, pid, r) = stuck_on_a_full_stdout();
    let t0 = Instant::now();
    unsafe { libc::kill(pid, libc::SIGINT) };
    let st = wait_exit(&mut child, "one SIGINT");
    let took = t0.elapsed();
    let err = stderr_of(&mut child);
    assert!(took < GUARD, "took {took:?}");
    assert!(took >= Duration::from_secs(2), "not before the limit: {took:?}");
    assert_eq!(st.code(), Some(9), "the command's status: {err}");
    assert!(err.contains("still writing 2.5 s after signal 2"), "{err}");
    drop(r);
}

both_backends! {
fn a_job_started_in_the_background_gets_the_terminal_on_fg(backend: &str) {
    // `proctrace run … &`: the command starts without the terminal and stops when it reads it
    // (SIGTTIN, as any background job would); `fg` gives proctrace the terminal, which passes it
    // on to the command's group and continues it.
    let (ready, out, status) = (tmp("ready"), tmp("out"), tmp("status"));
    let mut pty = bash_pty();
    pty.type_(&format!(
        "{PROCTRACE} run --backend {backend} --tree none -- sh -c 'echo $PPID $$ > {ready}; read l; echo \"$l\" > {out}' &\\n"
    ));
    let ids = wait_whole(&ready);
    let mut ids = ids.split_whitespace().map(|v| v.parse::<i32>().unwrap());
    let (proctrace, command) = (ids.next().unwrap(), ids.next().unwrap());
    wait_state(command, "the command stops reading the terminal from the background", |s| s == 'T' || s == 't', &pty);
    wait_state(proctrace, "proctrace stops as the job", |s| s == 'T', &pty);
    pty.type_("fg\\n");
    wait_state(proctrace, "fg continues proctrace", |s| s != 'T', &pty);
    pty.type_("hello\\n");
    assert_eq!(wait_whole(&out), "hello\n", "{}", pty.transcript());
    pty.type_(&format!("echo $? > {status}.part; mv {status}.part {status}\\n"));
    assert_eq!(wait_whole(&status).trim(), "0", "{}", pty.transcript());
    pty.type_("exit\\n");
    pty.wait();
}
}

both_backends! {
fn ctrl_c_under_an_interactive_shell_reaches_the_command_once(backend: &str) {
    // The everyday case: proctrace is bash's foreground job; ^C goes to the command's group.
    let (ready, count, status) = (tmp("ready"), tmp("count"), tmp("status"));
    let mut pty = bash_pty();
    pty.type_(&format!(
        "{PROCTRACE} run --backend {backend} --tree none -- {} {ready} {count}; echo $? > {status}.part; mv {status}.part {status}\\n",
        sigcount()
    ));
    wait_whole(&ready);
    pty.type_("\\x03");
    assert_eq!(wait_whole(&status).trim(), "11", "{}", pty.transcript());
    assert_eq!(counted(&count), (1, libc::SIGINT));
    pty.type_("exit\\n");
    pty.wait();
}
}

/// Waits until `pid` has taken `sig` (it is no longer pending for the process).
fn wait_taken(pid: i32, sig: i32) {
    let pending = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("ShdPnd:"))
            .map(|m| u64::from_str_radix(m.trim(), 16).unwrap() & (1 << (sig - 1)) != 0)
            .unwrap_or(false)
    };
    let deadline = Instant::now() + GUARD;
    while pending() {
        assert!(Instant::now() < deadline, "signal {sig} was never taken");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn watch_stuck_on_a_stdout_nobody_reads_ends_on_a_second_sigint() {
    // Processes to watch, until the test ends.
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do /bin/true; done"])
        .spawn()
        .unwrap();
    let (r, w) = std::io::pipe().unwrap();
    let mut child = Command::new(PROCTRACE)
        .args(["watch", "-o", "-"])
        .stdout(w)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until watch's main thread (the one that writes) is stuck writing to the full pipe.
    let wchan = format!("/proc/{}/wchan", child.id());
    let deadline = Instant::now() + GUARD * 2;
    while !std::fs::read_to_string(&wchan)
        .unwrap_or_default()
        .contains("pipe_write")
    {
        assert!(Instant::now() < deadline, "watch never filled the pipe");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = child.id() as i32;
    unsafe { libc::kill(pid, libc::SIGINT) };
    wait_taken(pid, libc::SIGINT);
    // The second from another sender, so that it is not taken for a copy of the first.
    let t0 = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let st = wait_exit(&mut child, "watch, second SIGINT");
    assert!(t0.elapsed() < GUARD);
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq!(st.code(), Some(130), "128 + SIGINT: {}", stderr_of(&mut child));
    drop(r);
}
