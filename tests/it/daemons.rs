//! `run --include-daemons`: the work a daemon started before the run does for it, seen. The
//! daemon is a real one (`tests/fixtures/daemon.c`, named `sccache` as the sccache server runs):
//! started outside proctrace, it listens on a Unix socket and runs each command a client sends
//! as a child of its own, answering with its status; the client (the same program with
//! arguments, on PATH as `sccache`) asks and waits. Its work during the run must be in the trace
//! under `[ran in the sccache server]`, with argv and status, in the totals, the costs and the
//! critical path, and come back the same from the saved JSON Lines; what it does before and
//! after the run must not.
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::*;

/// `tests/fixtures/daemon.c`, compiled once per test run, in a directory of its own as
/// `sccache`.
fn bin_dir() -> &'static str {
    static DIR: OnceLock<String> = OnceLock::new();
    DIR.get_or_init(|| {
        let built = compile_fixture("daemon");
        let dir = tmp("daemon-bin");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&built, format!("{dir}/sccache")).unwrap();
        dir
    })
}

/// A daemon running outside proctrace, in a process group of its own: killed with everything
/// it started when dropped. One at a time ([`daemons_lock`]): every run with
/// `--include-daemons` follows every sccache server on the machine, and could not tell two
/// apart.
struct Daemon {
    child: Child,
    pid: i64,
    socket: String,
    _one: DaemonsLock,
}

/// One sccache server at a time among these tests (the fixture or the real one), and no
/// container engine of `containers.rs` meanwhile ([`daemons_lock`]).
fn one_daemon() -> DaemonsLock {
    daemons_lock()
}

impl Daemon {
    fn start() -> Daemon {
        let one = one_daemon();
        use std::os::unix::process::CommandExt;
        let socket = tmp("daemon.sock");
        let mut child = Command::new(format!("{}/sccache", bin_dir()))
            .env("FAKE_DAEMON_SOCKET", &socket)
            .current_dir(std::path::Path::new(&socket).parent().unwrap())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let ready = first_line(&mut child);
        let pid: i64 = ready
            .strip_prefix("ready ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the daemon said {ready:?}"));
        Daemon {
            child,
            pid,
            socket,
            _one: one,
        }
    }

    /// Its client, outside proctrace: `sccache ARGS`.
    fn client(&self, args: &[&str]) -> Command {
        let mut c = Command::new(format!("{}/sccache", bin_dir()));
        c.args(args).env("FAKE_DAEMON_SOCKET", &self.socket);
        c
    }

    /// `proctrace run` of `script` with the client on PATH.
    fn run(&self, extra: &[&str], script: &str) -> (std::process::Output, Vec<Value>, String, Value) {
        let out_file = tmp("out.jsonl");
        let summary = tmp("summary.json");
        let out = Command::new(PROCTRACE)
            .args([
                "run",
                "-o",
                &out_file,
                "--summary-json",
                &summary,
                "--tree",
                "full",
            ])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir()))
            .env("FAKE_DAEMON_SOCKET", &self.socket)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200")
            .output()
            .unwrap();
        let lines = read_lines(&out_file);
        let summary =
            std::fs::read_to_string(&summary).map_or(Value::Null, |s| serde_json::from_str(&s).unwrap());
        (out, lines, out_file, summary)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) of the daemon's own process group (it and what it started).
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Waits (up to 10 s) until a child of `pid` runs the command line `cmdline` (as
/// `/proc/PID/cmdline` has it: each word NUL-terminated).
fn wait_for_child(pid: i64, cmdline: &[u8]) {
    for _ in 0..1000 {
        let found = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let p = e.path();
            let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1))
                .and_then(|pp| pp.parse::<i64>().ok());
            ppid == Some(pid) && std::fs::read(p.join("cmdline")).is_ok_and(|c| c == cmdline)
        });
        if found {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("no child of {pid} runs {cmdline:?}");
}

/// The processes whose parent is `pid`, by their first argv.
fn children_of(lines: &[Value], pid: i64) -> Vec<Proc> {
    processes(lines)
        .into_values()
        .filter(|p| p.ppid == pid && p.pid != pid)
        .collect()
}

fn argv0(p: &Proc) -> Vec<String> {
    p.execs.last().cloned().flatten().unwrap_or_default()
}

/// The tree printed on stderr: the lines from the first tree line to the summary.
fn tree(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .skip_while(|l| !l.contains(" sh -c "))
        .take_while(|l| !l.starts_with("summary:"))
        .collect()
}

both_backends! {
/// The daemon's work during the run is under its node with argv and status; its work before
/// (a command that ended, a `sleep` still running) and after is not; the summary counts it,
/// the critical path goes into it, and the saved JSON Lines give the same trace back.
fn a_daemon_s_work_during_the_run_is_in_the_trace(backend: &str) {
    if backend == "ptrace" {
        return ptrace_cannot_and_says_so();
    }
    let d = Daemon::start();
    // Before the run: one command that ends, one still running during it.
    assert!(d.client(&["/bin/echo", "before the run"]).stdout(Stdio::null()).status().unwrap().success());
    let mut earlier = d.client(&["sleep", "3"]).spawn().unwrap();
    // Started before the run, not merely asked for.
    wait_for_child(d.pid, b"sleep\x003\x00");
    let src = tmp("x.c");
    std::fs::write(&src, "int f(void) { return 42; }\n").unwrap();
    let obj = src.replace("x.c", "x.o");
    // The last client asks once the command has exited (it is followed, with --wait-bg, as a
    // background child).
    let script = format!(
        "sccache sleep 0.5 & s=$!; sccache cc -c {src} -o {obj}; sccache sh -c 'exit 3'; \
         (while kill -0 $$ 2>/dev/null; do sleep 0.05; done; sccache /bin/echo after the command) & \
         wait $s"
    );
    let capture = tmp("capture.jsonl");
    let (out, lines, file, summary) = d.run(
        &["--backend", backend, "--include-daemons", "--wait-bg", "5", "--record", &capture],
        &script,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("not in this trace"), "{err}");
    let _ = earlier.kill();
    let _ = earlier.wait();
    // After the run.
    assert!(d.client(&["/bin/echo", "after the run"]).stdout(Stdio::null()).status().unwrap().success());

    // The start line names the daemon followed; its node is a fork line of its own.
    // (Other daemons running on the machine, a container engine, are followed too.)
    let followed = lines[0]["daemons"].as_array().unwrap();
    assert!(
        followed.contains(&serde_json::json!({"daemon": "sccache", "pid": d.pid})),
        "{followed:?}"
    );
    let node: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "fork" && l["pid"] == d.pid)
        .collect();
    assert_eq!(node.len(), 1, "{err}");
    assert_eq!(node[0]["daemon"], "sccache");
    assert_eq!(node[0]["pre_existing"], true);
    let work = children_of(&lines, d.pid);
    let mut argvs: Vec<Vec<String>> = work.iter().map(argv0).collect();
    argvs.sort();
    let want: Vec<Vec<String>> = {
        let mut w = vec![
            vec!["cc".to_string(), "-c".into(), src.clone(), "-o".into(), obj.clone()],
            vec!["sh".to_string(), "-c".into(), "exit 3".into()],
            vec!["sleep".to_string(), "0.5".into()],
        ];
        w.sort();
        w
    };
    assert_eq!(argvs, want, "the daemon's work during the run, nothing before or after: {err}");
    for p in &work {
        let code = p.exits.last().and_then(|x| x["code"].as_i64());
        let want = if argv0(p)[0] == "sh" { 3 } else { 0 };
        assert_eq!(code, Some(want), "{p:?}");
    }
    // The compile's own children (the compiler proper, the assembler) are under it.
    let cc = work.iter().find(|p| argv0(p)[0] == "cc").unwrap();
    assert!(!children_of(&lines, cc.pid).is_empty(), "{err}");
    // The client that asked after the command ended is in the tree (in the background); what
    // the daemon ran for it, after the run's window, is not.
    let ps = processes(&lines);
    find(&ps, &["sccache", "/bin/echo", "after"]);
    assert!(
        !ps.values().any(|p| p.execs.iter().flatten().any(|a| a[0] == "/bin/echo")),
        "{err}"
    );

    // The tree shows the node under its own name.
    assert!(
        err.lines().any(|l| l.starts_with(&format!("{} [ran in the sccache server] ", d.pid))),
        "{err}"
    );
    assert!(err.contains("daemon: the sccache server (pid "), "{err}");

    // The summary counts it: the daemon's processes, its costs, the path into its work.
    let ds = summary["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["pid"] == d.pid)
        .unwrap_or_else(|| panic!("{summary}"));
    assert_eq!(ds["daemon"], "sccache");
    assert_eq!(ds["pid"], d.pid);
    let under = ds["processes"].as_u64().unwrap();
    assert!(under >= 4, "cc, its compiler, sleep, sh: {ds}");
    let total = summary["processes"].as_u64().unwrap();
    let in_tree = processes(&lines).len() as u64;
    assert_eq!(total, in_tree, "every process of the trace is counted");
    assert!(ds["cpu_s"].as_f64().unwrap() > 0.0, "{ds}");
    assert!(
        summary["cpu_s"].as_f64().unwrap() >= ds["cpu_s"].as_f64().unwrap(),
        "{summary}"
    );
    assert!(summary.get("outside_tree").is_none(), "{summary}");
    let path = summary["critical_path"].as_array().unwrap();
    let into: Vec<&Value> = path.iter().filter(|s| s["ran_in"] == "the sccache server").collect();
    assert!(!into.is_empty(), "the critical path goes into the daemon's work: {path:#?}");
    for s in &into {
        assert!(
            work.iter().any(|p| p.pid == s["pid"].as_i64().unwrap()),
            "{s} is the daemon's work"
        );
    }
    // A daemon's node is not a program of the run.
    let by: Vec<&String> = summary["by_program"].as_object().unwrap().keys().collect();
    assert!(!by.iter().any(|k| k.contains("ran in")), "{by:?}");

    // The timeline is valid and shows each of them.
    let chrome = tmp("c.json");
    let re = tmp("re.jsonl");
    let html = tmp("report.html");
    let a = Command::new(PROCTRACE)
        .args(["analyze", &file, "-o", &re, "--chrome", &chrome, "--html", &html, "--tree", "full"])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", stderr(&a));
    crate::chrome_check::validate(
        &std::fs::read_to_string(&chrome).unwrap(),
        &crate::chrome_out::expected(&lines),
    )
    .unwrap();
    // The report names the node, and the path's step into the daemon, as the text does.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("[ran in the sccache server]"));
    assert!(page.contains("[in the sccache server] "));
    // The saved trace gives the same trace and tree back.
    let again = read_lines(&re);
    let body = |l: &[Value]| -> Vec<Value> {
        l.iter()
            .filter(|l| l["event"] != "start" && l["event"] != "end")
            .cloned()
            .collect()
    };
    assert_eq!(body(&again), body(&lines));
    assert_eq!(again[0]["daemons"], lines[0]["daemons"]);
    assert_eq!(tree(&stderr(&a)), tree(&err));
    // OTLP: the node is a span of its own in the run's trace, named as everywhere, the work's
    // spans under it.
    let rx = crate::otlp::Receiver::start(&[]);
    let o = Command::new(PROCTRACE)
        .args(["analyze", "--tree", "none", "--otlp", &rx.url(), &file])
        .env("TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let spans = rx.process_spans();
    let span_of = |pid: i64| {
        spans
            .iter()
            .find(|s| s["attributes"]["process.pid"] == pid)
            .unwrap_or_else(|| panic!("no span of {pid}"))
    };
    let node_span = span_of(d.pid);
    assert_eq!(node_span["name"], "[ran in the sccache server]");
    assert_eq!(node_span["parent_span_id"], "00f067aa0ba902b7");
    let root_pid = lines[1]["pid"].as_i64().unwrap();
    assert_eq!(span_of(root_pid)["parent_span_id"], "00f067aa0ba902b7");
    for p in &work {
        assert_eq!(span_of(p.pid)["parent_span_id"], node_span["span_id"], "{p:?}");
    }
    // And so does the capture, replayed.
    let replayed = tmp("replayed.jsonl");
    let r = Command::new(PROCTRACE)
        .args(["replay", &capture, "-o", &replayed, "--tree", "full"])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    let again = read_lines(&replayed);
    assert_eq!(body(&again), body(&lines));
    assert_eq!(again[0]["daemons"], lines[0]["daemons"]);
    assert_eq!(tree(&stderr(&r)), tree(&err));
}
}

/// ptrace sees only the command's tree: `--include-daemons` says so once, and the client is
/// still named as hiding work.
fn ptrace_cannot_and_says_so() {
    let d = Daemon::start();
    let (out, lines, _, summary) = d.run(&["--backend", "ptrace", "--include-daemons"], "sccache true");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("--include-daemons:")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("the ptrace backend sees only the command's tree"),
        "{}",
        said[0]
    );
    assert!(
        said[0].contains(&format!("the sccache server (pid {})", d.pid)),
        "{}",
        said[0]
    );
    assert!(lines[0].get("daemons").is_none(), "{}", lines[0]);
    assert!(!lines.iter().any(|l| l["pid"] == d.pid), "{err}");
    assert_eq!(summary["outside_tree"][0]["client"], "sccache", "{summary}");
    assert!(summary.get("daemons").is_none(), "{summary}");
}

/// Without the flag, nothing of the daemon is in the trace and the client is named as hiding
/// work, with `--include-daemons` among the fixes.
#[test]
fn without_the_flag_the_client_is_said_to_hide_work() {
    let d = Daemon::start();
    let (out, lines, _, summary) = d.run(&[], "sccache true");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!lines.iter().any(|l| l["pid"] == d.pid), "{err}");
    assert!(err.contains("outside the tree: sccache (pid "), "{err}");
    assert!(err.contains("`run --include-daemons`"), "{err}");
    assert!(summary.get("daemons").is_none(), "{summary}");
}

/// A daemon followed that started nothing during the run has no node; the summary says it
/// was followed and started nothing, and does not call the client's work hidden.
#[test]
fn a_daemon_that_started_nothing_is_said_so() {
    let d = Daemon::start();
    let (out, lines, _, summary) = d.run(&["--include-daemons=sccache"], "true");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!lines.iter().any(|l| l["pid"] == d.pid), "{err}");
    let ours = summary["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["pid"] == d.pid)
        .unwrap_or_else(|| panic!("{summary}"));
    assert_eq!(ours["processes"], 0, "{summary}");
    assert!(
        err.contains(&format!(
            "daemon: the sccache server (pid {}): started no process during the run",
            d.pid
        )),
        "{err}"
    );
    // Only the kinds asked for: no daemon of another kind is followed.
    let (out, lines, _, summary) = d.run(&["--include-daemons=bazel,gradle"], "sccache true");
    assert_eq!(out.status.code(), Some(0));
    assert!(lines[0].get("daemons").is_none(), "{}", lines[0]);
    assert!(summary.get("daemons").is_none(), "{summary}");
    // A kind that does not exist is a usage error naming the known ones.
    let (out, _, _, _) = d.run(&["--include-daemons=nope"], "true");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'nope' is not a kind of daemon (known: bazel, buck2"),
        "{}",
        stderr(&out)
    );
}

/// The real sccache (Debian's), its server started before the run as a user starts it: two
/// compiles asked for at once are in the trace as the server's work, each with its compiler
/// proper and assembler, the critical path goes from a client into the server, and nothing is
/// said to be outside the tree.
fn the_real_sccache_server(backend: &str) {
    let _one = one_daemon();
    let dir = tmp("real-sccache");
    std::fs::create_dir_all(format!("{dir}/cache")).unwrap();
    for f in ["f1", "f2"] {
        std::fs::write(
            format!("{dir}/{f}.c"),
            format!("#include <stdio.h>\nint {f}(void) {{ return printf(\"{f}\"); }}\n"),
        )
        .unwrap();
    }
    // A server of its own: its own port and cache (a cold one: every compile runs).
    let port = (20_000 + std::process::id() % 20_000).to_string();
    let sccache = |args: &[&str]| {
        Command::new("sccache")
            .args(args)
            .env("SCCACHE_DIR", format!("{dir}/cache"))
            .env("SCCACHE_SERVER_PORT", &port)
            .env("SCCACHE_IDLE_TIMEOUT", "0")
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
    };
    assert!(sccache(&["--start-server"]).success());
    struct Stop<'a>(&'a dyn Fn(&[&str]) -> std::process::ExitStatus);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            (self.0)(&["--stop-server"]);
        }
    }
    let _stop = Stop(&sccache);
    let out_file = format!("{dir}/out.jsonl");
    let summary = format!("{dir}/summary.json");
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", backend, "--include-daemons", "-o", &out_file])
        .args(["--summary-json", &summary, "--tree", "full", "--"])
        .args([
            "sh",
            "-c",
            "sccache cc -c f1.c -o f1.o & sccache cc -c f2.c -o f2.o & wait",
        ])
        .env("SCCACHE_DIR", format!("{dir}/cache"))
        .env("SCCACHE_SERVER_PORT", &port)
        .env("NO_COLOR", "1")
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for f in ["f1", "f2"] {
        assert!(
            std::path::Path::new(&format!("{dir}/{f}.o")).exists(),
            "{f}.o: {err}"
        );
    }
    let lines = read_lines(&out_file);
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    // Our server: the followed sccache whose node is the parent of the compiles.
    let servers: Vec<i64> = lines[0]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["daemon"] == "sccache")
        .map(|d| d["pid"].as_i64().unwrap())
        .collect();
    assert!(!servers.is_empty(), "{}", lines[0]);
    for f in ["f1", "f2"] {
        let source = format!("{f}.c");
        let object = format!("{f}.o");
        let compile = servers
            .iter()
            .flat_map(|&s| children_of(&lines, s))
            .find(|p| {
                let a = argv0(p);
                a[0].ends_with("cc")
                    && a.contains(&"-c".to_string())
                    && a.contains(&source)
                    && a.contains(&object)
            })
            .unwrap_or_else(|| panic!("no compile of {source} in the server's work: {err}"));
        assert_eq!(compile.exits.last().and_then(|x| x["code"].as_i64()), Some(0));
        // Its compiler proper and assembler, under it.
        let kids: Vec<String> = children_of(&lines, compile.pid)
            .iter()
            .map(|p| argv0(p)[0].rsplit('/').next().unwrap().to_string())
            .collect();
        assert!(
            kids.iter().any(|k| k == "cc1") && kids.iter().any(|k| k == "as"),
            "{kids:?}"
        );
    }
    assert!(summary.get("outside_tree").is_none(), "{summary}");
    assert!(!err.contains("not in this trace"), "{err}");
    let path = summary["critical_path"].as_array().unwrap();
    assert!(
        path.iter().any(|s| s["ran_in"] == "the sccache server"),
        "the critical path goes into the server: {path:#?}"
    );
}

#[test]
fn the_real_sccache_server_on_the_connector() {
    the_real_sccache_server("connector");
}

#[test]
fn the_real_sccache_server_on_ebpf() {
    the_real_sccache_server("ebpf");
}
