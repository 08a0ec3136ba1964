//! `watch`: system-wide and subtree streams.
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;

#[test]
fn watch_system_wide_sees_a_marked_process() {
    let mut w = Watcher::start(&["--duration", "1.5"]);
    let out_file = w.file.clone();
    let st = Command::new("/bin/sh")
        .args(["-c", "/bin/sleep 0.2; exit 6"])
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(6));
    let out = w.child.take().unwrap().wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let ps = processes(&lines);
    let sh = find(&ps, &["/bin/sh", "-c", "/bin/sleep 0.2; exit 6"]);
    assert_eq!(sh.exits[0]["code"], 6);
    assert!(ps.values().any(|p| p.ppid == sh.pid));
    assert!(
        stderr(&out).contains("events lost"),
        "totals printed: {}",
        stderr(&out)
    );
}

#[test]
fn watch_a_subtree_until_it_is_gone() {
    let (out, pid) = watch_sh("sleep 0.6; /bin/sleep 0.2; exit 0", &["--duration", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{pid}")), "{text}");
    assert!(text.contains("(already running)"), "{text}");
    assert!(text.contains("/bin/sleep 0.2"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("exit") && l.contains(&pid.to_string())),
        "{text}"
    );
}

/// `watch -o FILE ARGS`, started and subscribed (its `start` line is written once it is).
struct Watcher {
    child: Option<std::process::Child>,
    file: String,
}

impl Drop for Watcher {
    /// A failed assertion must not leave `watch` running (it would hold the test's pipes open).
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Watcher {
    fn start(args: &[&str]) -> Watcher {
        let file = tmp("watch.jsonl");
        let child = Command::new(PROCTRACE)
            .arg("watch")
            .args(["-o", &file])
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let w = Watcher {
            child: Some(child),
            file,
        };
        w.wait_until(|text| text.contains("\"event\":\"start\""));
        w
    }

    /// Waits (up to 10 s) for the file to satisfy `cond`.
    fn wait_until(&self, cond: impl Fn(&str) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&self.file).unwrap_or_default();
            if cond(&text) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "timed out; have: {text}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit line of the process that exec'd with `marker` among its arguments.
    fn wait_for_exit_of(&self, marker: &str) {
        self.wait_until(|text| {
            let lines: Vec<serde_json::Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            let pid = lines.iter().find_map(|l| {
                let hit = l["event"] == "exec"
                    && l["argv"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(marker)));
                hit.then(|| l["pid"].as_i64()).flatten()
            });
            pid.is_some_and(|p| {
                lines
                    .iter()
                    .any(|l| l["event"] == "exit" && l["pid"].as_i64() == Some(p))
            })
        });
    }

    /// Interrupts it; returns its lines and stderr.
    fn stop(mut self) -> (Vec<serde_json::Value>, String) {
        let child = self.child.take().unwrap();
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        (read_lines(&self.file), stderr(&out))
    }
}

fn events(lines: &[serde_json::Value]) -> Vec<&str> {
    lines.iter().map(|l| l["event"].as_str().unwrap()).collect()
}

#[test]
fn watch_events_exec_is_an_execsnoop() {
    let w = Watcher::start(&["-e", "exec"]);
    let marker = format!("exec-marker-{}", std::process::id());
    // The marker is sh's own argument and sh lives 0.2 s: its argv is read even on a loaded
    // machine (a /bin/true that exits at once may be gone before /proc is read).
    let st = Command::new("/bin/sh")
        .args(["-c", "/bin/sleep 0.2; exit 0", &marker])
        .status()
        .unwrap();
    assert!(st.success());
    w.wait_until(|t| t.contains(&format!("\"{marker}\"]")));
    let (lines, err) = w.stop();
    let ev = events(&lines);
    assert_eq!(ev.first(), Some(&"start"));
    assert_eq!(ev.last(), Some(&"end"));
    for e in &ev[1..ev.len() - 1] {
        assert!(*e == "exec" || *e == "lost", "only exec lines: {ev:?}");
    }
    let end = lines.last().unwrap();
    assert!(
        end["filtered"].as_u64().unwrap() > 0,
        "fork and exit facts kept out: {end}"
    );
    assert!(err.contains("facts filtered out"), "{err}");
    let ps = processes(&lines);
    find(&ps, &["/bin/sh", "-c", "/bin/sleep 0.2; exit 0", &marker]);
    find(&ps, &["/bin/sleep", "0.2"]);
}

#[test]
fn watch_user_keeps_one_users_processes() {
    let w = Watcher::start(&["--user", "nobody"]);
    let id = std::process::id();
    let root_marker = format!("root-marker-{id}");
    let nobody_marker = format!("nobody-marker-{id}");
    let st = Command::new("/bin/sh")
        .args(["-c", "/bin/sleep 0.2; exit 0", &root_marker])
        .status()
        .unwrap();
    assert!(st.success());
    let st = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/bin/sh",
            "-c",
        ])
        .args(["/bin/sleep 0.2; exit 0", &nobody_marker])
        .status()
        .unwrap();
    assert!(st.success());
    // Events arrive in order: once the second command's are in, so are the first's.
    w.wait_for_exit_of(&nobody_marker);
    let (lines, _) = w.stop();
    let text = lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n");
    assert!(
        !text.contains(&root_marker),
        "root's processes filtered out: {text}"
    );
    let ps = processes(&lines);
    let t = find(&ps, &["/bin/sh", "-c", "/bin/sleep 0.2; exit 0", &nobody_marker]);
    assert_eq!(t.exits.len(), 1, "{text}");
    for l in &lines {
        if l["event"] == "exec" {
            assert_eq!(l["uid"], 65534, "{l}");
        }
        if l["event"] == "uid" {
            assert!(l["ruid"] == 65534 || l["euid"] == 65534, "{l}");
        }
    }
    assert!(
        events(&lines).contains(&"uid"),
        "setpriv's setuid to nobody shown: {text}"
    );
}

#[test]
fn watch_comm_keeps_one_program() {
    let dir = tmp("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("ptcomm{}", std::process::id() % 100000);
    let prog = format!("{dir}/{name}");
    std::os::unix::fs::symlink("/bin/sleep", &prog).unwrap();
    let w = Watcher::start(&["--comm", &name, "--quiet"]);
    let st = Command::new("/bin/sh")
        .args(["-c", &format!("/bin/sleep 0.1; {prog} 0.2; exit 0")])
        .status()
        .unwrap();
    assert!(st.success());
    w.wait_until(|t| t.contains("\"event\":\"exit\""));
    let (lines, err) = w.stop();
    assert_eq!(err, "", "--quiet: no totals line");
    let ps = processes(&lines);
    assert_eq!(ps.len(), 1, "only {name}: {ps:#?}");
    let p = ps.values().next().unwrap();
    assert_eq!(p.execs, vec![Some(vec![prog.clone(), "0.2".to_string()])]);
    assert_eq!(p.exits[0]["code"], 0);
}

#[test]
fn watch_filter_mistakes_are_usage_errors() {
    let out = Command::new(PROCTRACE)
        .args(["watch", "-e", "exec,forkk", "--duration", "0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown event 'forkk'") && err.contains("fork, exec, exit"),
        "{err}"
    );
    let out = Command::new(PROCTRACE)
        .args(["watch", "--user", "no-such-user-here", "--duration", "0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no user 'no-such-user-here'"),
        "{}",
        stderr(&out)
    );
}

/// `watch -p` of a process that has exited but is not yet reaped (a zombie: its parent has not
/// waited): its exit came before proctrace subscribed and will never come again, so it is
/// closed as gone and `watch` ends, rather than waiting as long as the parent does not reap.
/// On each backend `watch` uses.
#[test]
fn watch_p_of_a_zombie_ends() {
    for backend in ["ebpf", "connector"] {
        // The parent forks a child that exits at once, and sleeps without waiting for it.
        let mut parent = Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import os, sys, time\npid = os.fork()\nif pid == 0:\n    os._exit(7)\nprint(pid, flush=True)\ntime.sleep(60)\n",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(parent.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let child: u32 = line.trim().parse().unwrap();
        // Until it is a zombie.
        while !std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|s| s.contains(") Z ")) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let out_file = tmp("zombie.jsonl");
        // `timeout` only so that a regression fails instead of hanging the suite.
        let out = Command::new("timeout")
            .args([
                "30",
                PROCTRACE,
                "watch",
                "--backend",
                backend,
                "-p",
                &child.to_string(),
                "-o",
                &out_file,
            ])
            .output()
            .unwrap();
        let still_waiting = parent.try_wait().unwrap().is_none();
        let _ = parent.kill();
        let _ = parent.wait();
        assert!(still_waiting, "the parent had not reaped it");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{backend}: ended by itself: {}",
            stderr(&out)
        );
        let lines = read_lines(&out_file);
        let ps = processes(&lines);
        assert_eq!(ps.len(), 1, "{backend}: {lines:?}");
    }
}
