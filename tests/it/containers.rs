//! Containers, with the real engines: `docker run` (dockerd, containerd, containerd-shim, runc)
//! and `podman run` (conmon, runc) under `proctrace run`. The image is made here, offline: a
//! root filesystem of busybox-static, imported (`docker import`, `podman import`).
//!
//! What must hold: podman's container runs in the traced tree (podman forks conmon, conmon
//! runc, runc the container), on every backend; docker's runs under containerd, outside the
//! tree: said in one line (and the summary), truthfully for the backend, and with
//! `--include-daemons` on a backend that sees the host (eBPF, the connector) the container's
//! processes are in the trace under dockerd's node, attributed to the run (the critical path
//! goes from the client into the container); a container started before the run is followed
//! through its shim (`docker exec`). A podman service's containers are followed through the
//! service.
//!
//! The engines run with state of their own under a scratch directory, and are stopped at the
//! end of each test: dockerd with `--storage-driver vfs` (no overlay mounts, and it works on an
//! overlay root), no bridge and no iptables rules (containers run with `--network none`);
//! podman from a `containers.conf` of its own: runc (crun 1.8 refuses a cgroup v1 hybrid whose
//! v2 hierarchy has a controller: "cgroups in hybrid mode not supported"), `vfs` storage, no
//! network, and ulimits a root without `CAP_SYS_RESOURCE` may set (podman's default, nofile
//! 1048576, is refused: "setrlimit `RLIMIT_NOFILE`: Operation not permitted").
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// The image's name in both engines.
const IMAGE: &str = "localhost/proctrace-busybox";

/// A root filesystem of busybox-static (`/bin/busybox`, with `sh`, `sleep` and `echo` linked to
/// it), as a tar file, made once per test run.
fn rootfs_tar() -> &'static str {
    static TAR: OnceLock<String> = OnceLock::new();
    TAR.get_or_init(|| {
        let busybox = "/bin/busybox";
        let ldd = Command::new("ldd").arg(busybox).output().unwrap();
        assert!(
            !ldd.status.success() || String::from_utf8_lossy(&ldd.stdout).contains("not a dynamic"),
            "{busybox} must be static (Debian's busybox-static): {}",
            String::from_utf8_lossy(&ldd.stdout)
        );
        let root = tmp("rootfs");
        for d in ["bin", "proc", "sys", "dev", "etc", "tmp"] {
            std::fs::create_dir_all(format!("{root}/{d}")).unwrap();
        }
        std::fs::copy(busybox, format!("{root}/bin/busybox")).unwrap();
        for a in ["sh", "sleep", "echo", "true", "cat"] {
            std::os::unix::fs::symlink("busybox", format!("{root}/bin/{a}")).unwrap();
        }
        let tar = format!("{root}.tar");
        let st = Command::new("tar")
            .args(["-C", &root, "-cf", &tar, "."])
            .status()
            .unwrap();
        assert!(st.success());
        tar
    })
}

/// A scratch directory for an engine's state, short enough for its sockets' paths (a Unix
/// socket's path has at most 107 bytes), removed when dropped.
struct StateDir(String);

impl StateDir {
    fn new(what: &str) -> StateDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = format!("/tmp/pt-{what}-{}-{n}", std::process::id());
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        StateDir(d)
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        // Whatever an engine left mounted under it first (none is expected with vfs).
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut under: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .filter(|m| m.starts_with(&format!("{}/", self.0)))
            .collect();
        under.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in under {
            let _ = Command::new("umount").args(["-l", m]).status();
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The pid in `pidfile`, once it is there (up to 30 s).
fn read_pid(pidfile: &str) -> i64 {
    let t = Instant::now();
    loop {
        if let Some(p) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return p;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no pid in {pidfile}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` is alive (not a zombie).
fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
        .unwrap_or(false)
}

/// Sends `sig` to `pid`, then waits up to `within` for it to be gone.
fn stop(pid: i64, sig: i32, within: Duration) -> bool {
    // SAFETY: kill(2) of a process this test started.
    unsafe { libc::kill(pid as i32, sig) };
    let t = Instant::now();
    while alive(pid) {
        if t.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// A dockerd of this test's own, with its containerd, started outside proctrace and stopped
/// (with its containers) when dropped.
struct Docker {
    child: std::process::Child,
    pid: i64,
    host: String,
    dir: StateDir,
    _one: DaemonsLock,
}

impl Docker {
    fn start() -> Docker {
        let one = daemons_lock();
        let dir = StateDir::new("docker");
        let d = &dir.0;
        let host = format!("unix://{d}/docker.sock");
        let log = std::fs::File::create(format!("{d}/dockerd.log")).unwrap();
        let child = Command::new("dockerd")
            .args([
                "--data-root",
                &format!("{d}/data"),
                "--exec-root",
                &format!("{d}/exec"),
            ])
            .args(["--pidfile", &format!("{d}/dockerd.pid"), "-H", &host])
            .args([
                "--storage-driver",
                "vfs",
                "--bridge=none",
                "--iptables=false",
                "--ip6tables=false",
            ])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("dockerd (Debian's docker.io): {e}"));
        let pid = child.id() as i64;
        let docker = Docker {
            child,
            pid,
            host,
            dir,
            _one: one,
        };
        // Ready when it answers.
        let t = Instant::now();
        while !docker
            .cmd(&["version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
        {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "dockerd did not answer: {}",
                std::fs::read_to_string(format!("{}/dockerd.log", docker.dir.0)).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let out = docker.cmd(&["import", rootfs_tar(), IMAGE]).output().unwrap();
        assert!(out.status.success(), "docker import: {}", stderr(&out));
        docker
    }

    /// `docker -H HOST ARGS`.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("docker");
        c.args(["-H", &self.host]).args(args);
        c
    }

    /// The argv of `docker -H HOST ARGS`, for proctrace to run.
    fn argv<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["docker", "-H", self.host.as_str()];
        v.extend_from_slice(args);
        v
    }

    /// Its containerd's pid.
    fn containerd(&self) -> i64 {
        read_pid(&format!("{}/exec/containerd/containerd.pid", self.dir.0))
    }
}

impl Drop for Docker {
    fn drop(&mut self) {
        let _ = self
            .cmd(&["rm", "-f", "proctrace-kept"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let containerd = std::fs::read_to_string(format!("{}/exec/containerd/containerd.pid", self.dir.0))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        // dockerd stops its containerd on SIGTERM; both are killed if they take too long.
        if !stop(self.pid, libc::SIGTERM, Duration::from_secs(20)) {
            // SAFETY: kill(2) of the process group this test started dockerd in.
            unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
        }
        let _ = self.child.wait();
        if let Some(c) = containerd.filter(|&c| alive(c)) {
            stop(c, libc::SIGKILL, Duration::from_secs(5));
        }
    }
}

/// podman with a configuration and storage of this test's own (see the module docs); the
/// image imported.
struct Podman {
    dir: StateDir,
    _one: DaemonsLock,
}

impl Podman {
    fn new() -> Podman {
        let one = daemons_lock();
        let dir = StateDir::new("podman");
        let d = &dir.0;
        std::fs::write(
            format!("{d}/containers.conf"),
            format!(
                "[containers]\n\
                 default_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n\
                 netns = \"none\"\n\
                 [engine]\n\
                 runtime = \"runc\"\n\
                 cgroup_manager = \"cgroupfs\"\n\
                 events_logger = \"file\"\n\
                 tmp_dir = \"{d}/tmp\"\n"
            ),
        )
        .unwrap();
        std::fs::write(
            format!("{d}/storage.conf"),
            format!("[storage]\ndriver = \"vfs\"\ngraphroot = \"{d}/root\"\nrunroot = \"{d}/run\"\n"),
        )
        .unwrap();
        let p = Podman { dir, _one: one };
        let out = p.cmd(&["import", rootfs_tar(), IMAGE]).output().unwrap();
        assert!(
            out.status.success(),
            "podman import (Debian's podman): {}",
            stderr(&out)
        );
        p
    }

    fn env(&self) -> [(String, String); 2] {
        [
            (
                "CONTAINERS_CONF".into(),
                format!("{}/containers.conf", self.dir.0),
            ),
            (
                "CONTAINERS_STORAGE_CONF".into(),
                format!("{}/storage.conf", self.dir.0),
            ),
        ]
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("podman");
        c.args(args).envs(self.env());
        c
    }
}

/// `proctrace run ARGS -- CMD` with `env`: the output, the JSON Lines, the summary JSON.
fn trace(extra: &[&str], cmd: &[&str], env: &[(String, String)]) -> (Output, Vec<Value>, Value) {
    let out_file = tmp("out.jsonl");
    let summary = tmp("summary.json");
    let out = Command::new(PROCTRACE)
        .args(["run", "-o", &out_file, "--summary-json", &summary])
        .args(extra)
        .arg("--")
        .args(cmd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let summary =
        std::fs::read_to_string(&summary).map_or(Value::Null, |s| serde_json::from_str(&s).unwrap());
    (out, read_lines(&out_file), summary)
}

/// The pids from `pid` up to its root, by the trace's parents.
fn ancestry(lines: &[Value], pid: i64) -> Vec<i64> {
    let ps = processes(lines);
    let mut out = vec![pid];
    let mut cur = pid;
    while let Some(p) = ps.get(&cur) {
        if p.ppid == cur || !ps.contains_key(&p.ppid) || out.contains(&p.ppid) {
            break;
        }
        out.push(p.ppid);
        cur = p.ppid;
    }
    out
}

/// The program (base name of argv[0]) each of `pids` last ran, `?` for one without an exec.
fn programs(lines: &[Value], pids: &[i64]) -> Vec<String> {
    let ps = processes(lines);
    pids.iter()
        .map(|p| {
            ps.get(p)
                .and_then(|p| p.execs.iter().flatten().last())
                .and_then(|a| a.first())
                .map_or("?".into(), |a| a.rsplit('/').next().unwrap_or(a).to_string())
        })
        .collect()
}

/// The container's command in the tests: it says its own pid (1, in its pid namespace),
/// sleeps, and exits 3.
const SCRIPT: &str = "echo pid $$; sleep 0.3; exit 3";

/// The container's `sh -c SCRIPT` in the trace, and its `sleep 0.3`, both exited as they did.
fn the_container_s_processes(lines: &[Value], err: &str) -> (i64, i64) {
    let ps = processes(lines);
    let sh = find(&ps, &["sh", "-c", SCRIPT]);
    let sleep = find(&ps, &["sleep", "0.3"]);
    assert_eq!(sleep.ppid, sh.pid, "{err}");
    assert_eq!(sh.exits.last().and_then(|x| x["code"].as_i64()), Some(3), "{err}");
    assert_eq!(
        sleep.exits.last().and_then(|x| x["code"].as_i64()),
        Some(0),
        "{err}"
    );
    // The trace has the pid the host gives it (the kernel's connector and the eBPF backend
    // translate to proctrace's namespace; ptrace's event messages are in the tracer's).
    assert_ne!(sh.pid, 1, "{err}");
    (sh.pid, sleep.pid)
}

both_backends! {
/// `podman run` is daemonless: podman forks conmon (which double-forks), conmon runs runc, and
/// runc the container, whose processes are in the traced tree on every backend (ptrace
/// follows the forks whatever reparents them); nothing is said to be hidden.
fn podman_s_container_is_in_the_tree(backend: &str) {
    let p = Podman::new();
    let (out, lines, summary) = trace(
        &["--backend", backend, "--tree", "none"],
        &["podman", "run", "--rm", IMAGE, "sh", "-c", SCRIPT],
        &p.env(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "the container's status, passed through: {err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pid 1\n", "{err}");
    let (sh, _) = the_container_s_processes(&lines, &err);
    let up = programs(&lines, &ancestry(&lines, sh));
    assert_eq!(up.last().map(String::as_str), Some("podman"), "{up:?}");
    assert!(up.iter().any(|p| p == "conmon"), "{up:?}");
    assert!(up.iter().any(|p| p == "runc"), "{up:?}");
    assert!(summary.get("outside_tree").is_none(), "{summary}");
    assert!(!err.contains("not in this trace"), "{err}");
    // podman waited for its container: the critical path goes into it, also when conmon's
    // detached fork is still cleaning up after podman has exited (left in the background).
    let path = summary["critical_path"].as_array().unwrap();
    assert!(
        path.iter().any(|s| s["pid"] == sh),
        "the container's sh on the path: {path:#?}"
    );
}
}

both_backends! {
/// `docker run`: the container runs under containerd, not in the tree. Without
/// `--include-daemons` that is said in one line, with what would bring it in on this
/// backend; with it, on eBPF and the connector, the container's processes are in the trace
/// under dockerd's node (containerd → containerd-shim → runc), in the totals, and on the
/// critical path from the client; ptrace says it cannot. A container started before the run
/// is followed through its shim: `docker exec` into it.
fn docker_s_container_is_said_or_followed(backend: &str) {
    let d = Docker::start();
    let run = d.argv(&["run", "--rm", "--network", "none", IMAGE, "sh", "-c", SCRIPT]);

    // Said, on stderr in one line (no summary printed) and in the summary JSON.
    let (out, lines, summary) = trace(&["--backend", backend, "--tree", "none"], &run, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pid 1\n", "{err}");
    assert_eq!(processes(&lines).len(), 1, "only the client: {err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("not in this trace")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].starts_with("proctrace: docker (pid ")
            && said[0].contains("): the container's processes ran in dockerd's containerd (a containerd-shim for each container), not in this trace; fix: "),
        "{}",
        said[0]
    );
    let o = &summary["outside_tree"][0];
    assert_eq!(o["client"], "docker", "{summary}");
    assert_eq!(o["work"], "the container's processes", "{summary}");
    let fix = o["fix"].as_str().unwrap();
    assert!(said[0].ends_with(fix), "{}", said[0]);
    if backend == "ptrace" {
        assert!(
            fix.contains("the ptrace backend sees only the command's tree: with `--backend ebpf` or `--backend connector`, `run --include-daemons` traces"),
            "{fix}"
        );
        // And with the flag, that it cannot, once; the client is still said to hide work.
        let (out, lines, summary) = trace(&["--backend", backend, "--include-daemons=docker"], &run, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        let cannot: Vec<&str> = err.lines().filter(|l| l.contains("--include-daemons:")).collect();
        assert_eq!(cannot.len(), 1, "{err}");
        assert!(
            cannot[0].contains("the ptrace backend sees only the command's tree: the work of the container engine (pid "),
            "{}",
            cannot[0]
        );
        assert!(cannot[0].contains(&format!("(pid {})", d.pid)), "{}", cannot[0]);
        assert_eq!(processes(&lines).len(), 1, "{err}");
        assert_eq!(summary["outside_tree"][0]["client"], "docker", "{summary}");
        return;
    }
    assert!(fix.contains("; `run --include-daemons` traces what dockerd and containerd start"), "{fix}");
    assert!(!fix.contains("ptrace"), "{fix}");

    // Followed: the container's processes under dockerd's node.
    let (out, lines, summary) = trace(
        &["--backend", backend, "--include-daemons=docker", "--tree", "full"],
        &run,
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pid 1\n", "{err}");
    assert!(!err.contains("not in this trace"), "{err}");
    assert!(summary.get("outside_tree").is_none(), "{summary}");
    assert_eq!(lines[0]["daemons"], serde_json::json!([{"daemon": "docker", "pid": d.pid}]));
    let node: Vec<&Value> = lines.iter().filter(|l| l["event"] == "fork" && l["pid"] == d.pid).collect();
    assert_eq!(node.len(), 1, "{err}");
    assert_eq!(node[0]["daemon"], "docker");
    let (sh, sleep) = the_container_s_processes(&lines, &err);
    let chain = ancestry(&lines, sh);
    assert_eq!(chain.last(), Some(&d.pid), "under dockerd's node: {chain:?} {err}");
    assert!(chain.contains(&d.containerd()), "{chain:?}");
    let up = programs(&lines, &chain);
    assert!(up.iter().any(|p| p == "containerd-shim-runc-v2"), "{up:?}");
    assert!(up.iter().any(|p| p == "runc"), "{up:?}");
    assert!(
        err.lines().any(|l| l.starts_with(&format!("{} [ran in the container engine] dockerd ", d.pid))),
        "{err}"
    );
    // Counted: in the totals and the daemon's line.
    let ds = &summary["daemons"][0];
    assert_eq!(ds["daemon"], "docker", "{summary}");
    assert_eq!(ds["pid"], d.pid, "{summary}");
    assert!(ds["processes"].as_u64().unwrap() >= 5, "shims, runc, sh, sleep: {ds}");
    assert_eq!(summary["processes"].as_u64(), Some(processes(&lines).len() as u64), "{summary}");
    // The critical path goes from the client into the container: what `docker run` waited for.
    let path = summary["critical_path"].as_array().unwrap();
    let at = |pid: i64| path.iter().position(|s| s["pid"] == pid);
    let i = at(sh).unwrap_or_else(|| panic!("the container's sh on the path: {path:#?}"));
    assert!(at(sleep).is_some_and(|j| j > i), "{path:#?}");
    // The step from the client into the engine's work (depth 1) says where the path went.
    let into = path[..=i].iter().rev().find(|s| s["depth"] == 1).unwrap();
    assert_eq!(into["ran_in"], "the container engine", "{into}");

    // A container started before the run: `docker exec` into it goes through its shim,
    // a daemon of its own (its parent ended: it is not under containerd).
    let kept = d
        .cmd(&["run", "-d", "--name", "proctrace-kept", "--network", "none", IMAGE, "sleep", "60"])
        .output()
        .unwrap();
    assert!(kept.status.success(), "{}", stderr(&kept));
    let exec = d.argv(&["exec", "proctrace-kept", "sh", "-c", SCRIPT]);
    let (out, lines, summary) = trace(&["--backend", backend, "--include-daemons=docker"], &exec, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("pid ") && said != "pid 1\n", "not the container's first process: {said} {err}");
    let ps = processes(&lines);
    let sh = find(&ps, &["sh", "-c", SCRIPT]).pid;
    let chain = ancestry(&lines, sh);
    let top = *chain.last().unwrap();
    assert_ne!(top, d.pid, "{chain:?}");
    assert_eq!(programs(&lines, &[top]), ["containerd-shim-runc-v2"], "{chain:?} {err}");
    let shim = lines[0]["daemons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["pid"] == top)
        .unwrap_or_else(|| panic!("the shim is a daemon followed: {}", lines[0]));
    assert_eq!(shim["daemon"], "docker");
    assert!(summary.get("outside_tree").is_none(), "{summary}");
    // The kept container's own sleep, started before the run, is not in it.
    assert!(!ps.values().any(|p| p.execs.iter().flatten().any(|a| a == &["sleep", "60"])), "{err}");
}
}

/// A podman service (`podman system service`, what `podman --remote` and docker-compose talk
/// to) starts the containers: a client of it is said to hide the container's processes, and
/// `--include-daemons` follows the service, conmon and the container under it.
#[test]
fn a_podman_service_s_containers_are_followed_through_it() {
    let p = Podman::new();
    let sock = format!("{}/podman.sock", p.dir.0);
    let url = format!("unix://{sock}");
    let log = std::fs::File::create(format!("{}/service.log", p.dir.0)).unwrap();
    let mut service = p
        .cmd(&["system", "service", "--time", "0", &url])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let pid = self.0.id() as i64;
            if !stop(pid, libc::SIGTERM, Duration::from_secs(10)) {
                // SAFETY: kill(2) of the process group this test started the service in.
                unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
            }
            let _ = self.0.wait();
        }
    }
    let t = Instant::now();
    while !std::path::Path::new(&sock).exists() {
        assert!(t.elapsed() < Duration::from_secs(30), "no {sock}");
        assert!(service.try_wait().unwrap().is_none(), "the podman service ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    let service = Stop(service);
    let pid = service.0.id() as i64;
    // The client starts the container detached and waits for it to end: an attached remote
    // `run` waits 20 s more for the exit code here (podman 4.3).
    let client = format!(
        "c=$(podman --url {url} run -d {IMAGE} sh -c '{SCRIPT}') || exit 1; \
         while [ \"$(podman --url {url} inspect -f '{{{{.State.Status}}}}' $c)\" = running ]; do sleep 0.05; done; \
         podman --url {url} rm $c >/dev/null"
    );
    let argv = ["sh", "-c", client.as_str()];

    let (out, lines, summary) = trace(&["--backend", "connector", "--tree", "none"], &argv, &p.env());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!lines.iter().any(|l| l["pid"] == pid), "{err}");
    let o = &summary["outside_tree"][0];
    assert_eq!(o["client"], "podman", "{summary}");
    assert_eq!(
        o["ran_in"], "a conmon started by a podman service (`podman system service`), not by this podman",
        "{summary}"
    );
    assert!(
        o["fix"]
            .as_str()
            .unwrap()
            .contains("`run --include-daemons` traces what the podman service starts"),
        "{summary}"
    );
    // ptrace cannot follow the service, and the fix says so.
    let (out, _, summary) = trace(&["--backend", "ptrace", "--tree", "none"], &argv, &p.env());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let fix = summary["outside_tree"][0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("the ptrace backend sees only the command's tree: with `--backend ebpf` or `--backend connector`, `run --include-daemons` traces what the podman service starts"),
        "{fix}"
    );

    for backend in ["connector", "ebpf"] {
        let (out, lines, summary) = trace(
            &["--backend", backend, "--include-daemons=podman", "--tree", "full"],
            &argv,
            &p.env(),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        // The service (and a conmon of the run before, if still ending).
        let followed = lines[0]["daemons"].as_array().unwrap();
        assert!(
            followed.contains(&serde_json::json!({"daemon": "podman", "pid": pid})),
            "{err}"
        );
        let (sh, _) = the_container_s_processes(&lines, &err);
        let chain = ancestry(&lines, sh);
        assert_eq!(chain.last(), Some(&pid), "{chain:?} {err}");
        assert!(programs(&lines, &chain).iter().any(|p| p == "conmon"), "{err}");
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("{pid} [ran in podman] podman "))),
            "{err}"
        );
        assert!(summary.get("outside_tree").is_none(), "{summary}");
    }
}
