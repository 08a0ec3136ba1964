//! Work done outside the traced tree: clients of build daemons and container engines, told by
//! the argv of their exec. `bazel build` asks a server started by an earlier build; `sccache cc`
//! asks the sccache server; `gradle` hands the build to its daemon; `docker run` asks dockerd.
//! The compiles and tests then run as the server's children, not the client's, so the tree looks
//! fast and empty. This module names such clients, what ran their work and how to bring it into
//! the trace, and tells when the server itself is in the tree (started by this run: proctrace is
//! the subreaper, so a server that daemonized during the run is still in it), in which case
//! nothing was hidden.
//!
//! Pure functions of exec records; it must never say a trace is incomplete without a client
//! seen, nor stay silent about one whose server is not in the tree.

use super::argv::Argv;
use super::tracker::{ProcId, ProcessRecord, Tracker};

/// A kind of client whose work runs elsewhere.
#[derive(Debug)]
pub struct Client {
    /// Its name, as people call it (`bazel`, `sccache`, `docker`).
    pub name: &'static str,
    /// What of it ran elsewhere: `its work`, or a container engine's `the container's
    /// processes`.
    pub work: &'static str,
    /// What runs its work (`the Bazel server`).
    pub ran_in: &'static str,
    /// Its server, short, as a node of the trace names it (`the Bazel server`): `ran in …`.
    pub server: &'static str,
    /// How to bring that work into the trace, or see it, other than `run --include-daemons`.
    pub fix: &'static str,
    /// What `run --include-daemons` traces of that work, with a backend that sees the host
    /// (eBPF, the connector): [`fix_words`].
    pub include: &'static str,
    /// Whether an exec's argv is one of its clients.
    is_client: fn(&[&str]) -> bool,
    /// Whether an exec's argv (of a process that forked children when `forks`) is its server.
    is_server: fn(&[&str], bool) -> bool,
    /// Whether a running process's argv, found in `/proc` before the run, is its server
    /// (`--include-daemons`): whether it forks is not known yet.
    is_running_server: fn(&[&str]) -> bool,
}

/// The base name of a path.
fn base(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The base name of `argv[0]`.
fn program<'a>(a: &[&'a str]) -> &'a str {
    base(a.first().copied().unwrap_or(""))
}

/// The words after `argv[0]`.
fn args<'a, 'b>(a: &'b [&'a str]) -> impl Iterator<Item = &'a str> + 'b {
    a.iter().skip(1).copied()
}

/// The first word after `argv[0]` that is not an option.
fn subcommand<'a>(a: &[&'a str]) -> Option<&'a str> {
    args(a).find(|w| !w.starts_with('-'))
}

/// The command a script's exec ran: the kernel runs `#!/bin/sh` scripts (`gradlew`, Gradle's
/// own `gradle`) as `/bin/sh /path/to/gradlew ARGS`, so the script's words start at the path.
fn script_words<'a>(a: &'a [&'a str]) -> &'a [&'a str] {
    let shell = matches!(program(a), "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh");
    match a.get(1) {
        Some(w) if shell && w.contains('/') && !w.starts_with('-') => &a[1..],
        _ => a,
    }
}

/// Whether a JVM's argv runs `class`.
fn java_runs(a: &[&str], class: &str) -> bool {
    program(a).starts_with("java") && args(a).any(|w| w == class)
}

fn gradle_no_daemon(a: &[&str]) -> bool {
    args(a).any(|w| w == "--no-daemon" || w == "-Dorg.gradle.daemon=false")
}

/// A container engine's global options that take a value (`--context x`, `--root DIR`):
/// docker's, nerdctl's and podman's.
const ENGINE_VALUED: &[&str] = &[
    "-c",
    "--context",
    "-H",
    "--host",
    "--config",
    "--tlscacert",
    "--tlscert",
    "--tlskey",
    "-l",
    "--log-level",
    "--namespace",
    "-n",
    "--address",
    "-a",
    "--snapshotter",
    "--cni-path",
    "--cni-netconfpath",
    "--data-root",
    "--hosts-dir",
    "--host-gateway-ip",
    "--root",
    "--runroot",
    "--runtime",
    "--runtime-flag",
    "--storage-driver",
    "--storage-opt",
    "--cgroup-manager",
    "--conmon",
    "--events-backend",
    "--hooks-dir",
    "--identity",
    "--module",
    "--network-cmd-path",
    "--network-config-dir",
    "--registries-conf",
    "--ssh",
    "--tmpdir",
    "--volumepath",
    "--db-backend",
    "--imagestore",
    "--url",
    "--connection",
];

/// A container engine's command and subcommand (`system service`), its global options that
/// take a value skipped.
fn engine_words<'a>(a: &[&'a str]) -> (Option<&'a str>, Option<&'a str>) {
    let mut words = args(a);
    let sub = loop {
        match words.next() {
            Some(w) if ENGINE_VALUED.contains(&w) => {
                words.next();
            }
            Some(w) if w.starts_with('-') => {}
            other => break other,
        }
    };
    (sub, words.find(|w| !w.starts_with('-')))
}

/// A container engine's subcommands that run or build containers.
fn runs_containers(a: &[&str]) -> bool {
    matches!(
        engine_words(a).0,
        Some("run" | "build" | "buildx" | "exec" | "start" | "compose" | "create")
    )
}

/// podman, or podman-remote (a client only).
fn podman(a: &[&str]) -> bool {
    matches!(program(a), "podman" | "podman-remote")
}

/// The podman service (`podman system service`), which runs containers for remote clients.
fn podman_service(a: &[&str]) -> bool {
    program(a) == "podman" && engine_words(a) == (Some("system"), Some("service"))
}

/// What runs podman's containers: conmon (podman starts one per container, detached), the
/// OCI runtime itself (`podman build` runs each step under runc or crun), a podman service.
fn podman_server(a: &[&str]) -> bool {
    matches!(program(a), "conmon" | "runc" | "crun") || podman_service(a)
}

/// The Bazel server: its JVM names itself `bazel(WORKSPACE)`, or runs `A-server.jar`.
fn bazel_server(a: &[&str]) -> bool {
    program(a).starts_with("bazel(")
        || (program(a).starts_with("java") && args(a).any(|w| w.ends_with("A-server.jar")))
}

/// The buck2 daemon.
fn buck2_server(a: &[&str]) -> bool {
    program(a) == "buck2d" || (program(a) == "buck2" && subcommand(a) == Some("daemon"))
}

/// The Gradle daemon's main class.
const GRADLE_DAEMON: &str = "org.gradle.launcher.daemon.bootstrap.GradleDaemon";

/// containerd, or one of its shims (the parents of a container's processes).
fn containerd(a: &[&str]) -> bool {
    program(a) == "containerd" || program(a).starts_with("containerd-shim")
}

/// dockerd, containerd or a shim.
fn containerd_or_docker(a: &[&str]) -> bool {
    program(a) == "dockerd" || containerd(a)
}

/// What a container engine's work is.
const CONTAINERS: &str = "the container's processes";

/// `proctrace watch` sees a container's processes.
const WATCH_CONTAINERS: &str = "`proctrace watch` on the host sees the container's processes";

/// Every client proctrace recognises, in the order they are reported.
pub const CLIENTS: &[Client] = &[
    Client {
        name: "bazel",
        work: "its work",
        ran_in: "the Bazel server (a JVM started by an earlier build)",
        server: "the Bazel server",
        fix: "`bazel shutdown` before the run lets this run start the server inside the trace; `bazel --batch` runs without one",
        include: "the processes the server starts",
        is_client: |a| {
            matches!(program(a), "bazel" | "bazelisk")
                && !args(a).take_while(|w| w.starts_with('-')).any(|w| w == "--batch")
        },
        is_server: |a, _| bazel_server(a),
        is_running_server: |a| bazel_server(a),
    },
    Client {
        name: "buck2",
        work: "its work",
        ran_in: "the buck2 daemon",
        server: "the buck2 daemon",
        fix: "`buck2 kill` before the run lets this run start the daemon inside the trace",
        include: "the processes the daemon starts",
        is_client: |a| program(a) == "buck2" && subcommand(a) != Some("daemon"),
        is_server: |a, _| buck2_server(a),
        is_running_server: |a| buck2_server(a),
    },
    Client {
        name: "gradle",
        work: "its work",
        ran_in: "the Gradle daemon",
        server: "the Gradle daemon",
        fix: "`--no-daemon` (or `org.gradle.daemon=false`) runs the build in the traced tree",
        include: "the processes the daemon starts (it compiles in its own JVM)",
        is_client: |a| {
            let gradle = matches!(program(a), "gradle" | "gradlew")
                || java_runs(a, "org.gradle.wrapper.GradleWrapperMain")
                || java_runs(a, "org.gradle.launcher.GradleMain");
            gradle && !gradle_no_daemon(a)
        },
        is_server: |a, _| java_runs(a, GRADLE_DAEMON),
        is_running_server: |a| java_runs(a, GRADLE_DAEMON),
    },
    Client {
        name: "sccache",
        work: "its work",
        ran_in: "the sccache server",
        server: "the sccache server",
        fix: "`sccache --stop-server` before the run lets this run start the server inside the trace",
        include: "the compiles the server runs",
        is_client: |a| program(a) == "sccache" && args(a).next().is_some_and(|w| !w.starts_with('-')),
        // The server is `sccache` again; it, and only it, forks the compilers (a client that
        // compiles itself, with no server to ask, did the work in the tree too).
        is_server: |a, forks| program(a) == "sccache" && forks,
        is_running_server: |a| program(a) == "sccache" && a.len() == 1,
    },
    Client {
        name: "docker",
        work: CONTAINERS,
        ran_in: "dockerd's containerd (a containerd-shim for each container)",
        server: "the container engine",
        fix: WATCH_CONTAINERS,
        include: "what dockerd and containerd start, the container's processes among them",
        is_client: |a| program(a) == "docker" && runs_containers(a),
        is_server: |a, _| containerd_or_docker(a),
        is_running_server: |a| containerd_or_docker(a),
    },
    Client {
        name: "nerdctl",
        work: CONTAINERS,
        ran_in: "containerd (a containerd-shim for each container)",
        server: "the container engine",
        fix: WATCH_CONTAINERS,
        include: "what containerd starts, the container's processes among them",
        is_client: |a| program(a) == "nerdctl" && runs_containers(a),
        is_server: |a, _| containerd(a),
        is_running_server: |a| containerd(a),
    },
    Client {
        name: "podman",
        work: CONTAINERS,
        ran_in: "a conmon started by a podman service (`podman system service`), not by this podman",
        server: "podman",
        fix: "podman without `--remote` runs the container under a conmon of its own, in the tree; `proctrace watch` on the host sees the container's processes",
        include: "what the podman service starts, the container's processes among them",
        is_client: |a| podman(a) && runs_containers(a),
        is_server: |a, _| podman_server(a),
        is_running_server: |a| program(a) == "conmon" || podman_service(a),
    },
];

/// The words an exec may be told by: its argv (a script's from the script's path on); and when
/// its executable is not named as `argv[0]` is (a symbolic link masquerading as another program:
/// `cc` → `sccache`, which then runs as `sccache cc …`; `d` → `docker`), also the argv with the
/// executable in `argv[0]`'s place, and with the executable before it.
fn views<'a>(words: &'a [&'a str], exe: Option<&'a str>) -> Vec<Vec<&'a str>> {
    let mut v = vec![script_words(words).to_vec()];
    let exe = exe.map(|e| e.strip_suffix(" (deleted)").unwrap_or(e));
    if let (Some(exe), Some(first)) = (exe, words.first())
        && !exe.is_empty()
        && base(exe) != base(first)
    {
        let mut replaced = words.to_vec();
        replaced[0] = exe;
        v.push(replaced);
        let mut before = Vec::with_capacity(words.len() + 1);
        before.push(exe);
        before.extend_from_slice(words);
        v.push(before);
    }
    v
}

/// The client an exec of `a` (its executable `exe`, when known) is, if any.
pub fn client_of(a: &Argv, exe: Option<&str>) -> Option<&'static Client> {
    let words: Vec<&str> = a.iter().collect();
    let views = views(&words, exe);
    CLIENTS.iter().find(|c| views.iter().any(|w| (c.is_client)(w)))
}

/// How to bring the work of `c` into the trace, or see it, as the fix says it: its own
/// [`Client::fix`], then what `run --include-daemons` traces. `tree_only`: the backend of the
/// run, when it sees only the command's tree (ptrace), where `--include-daemons` cannot work.
pub fn fix_words(c: &Client, tree_only: Option<&str>) -> String {
    match tree_only {
        Some(backend) => format!(
            "{}; the {backend} backend sees only the command's tree: with `--backend ebpf` or `--backend connector`, `run --include-daemons` traces {}",
            c.fix, c.include
        ),
        None => format!("{}; `run --include-daemons` traces {}", c.fix, c.include),
    }
}

/// A kind of daemon whose work `--include-daemons` brings into the trace: the server of one of
/// the [`CLIENTS`], named by its client's name (`sccache`, `bazel`, `docker`) wherever it is
/// written (JSON Lines, the capture, the summaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DaemonKind(u8);

impl DaemonKind {
    /// Every kind, in [`CLIENTS`] order.
    pub fn all() -> impl Iterator<Item = DaemonKind> {
        (0..CLIENTS.len() as u8).map(DaemonKind)
    }

    /// The client whose server it is.
    pub fn client(self) -> &'static Client {
        &CLIENTS[usize::from(self.0) % CLIENTS.len()]
    }

    /// Its name: its client's.
    pub fn name(self) -> &'static str {
        self.client().name
    }

    /// The kind named `name`.
    pub fn of_name(name: &str) -> Option<DaemonKind> {
        CLIENTS
            .iter()
            .position(|c| c.name == name)
            .map(|i| DaemonKind(i as u8))
    }

    /// The names of every kind, for a message: `bazel, buck2, …`.
    pub fn names() -> String {
        CLIENTS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
    }
}

impl serde::Serialize for DaemonKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for DaemonKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        DaemonKind::of_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown daemon '{}' (known: {})",
                crate::model::escape::text(&name),
                DaemonKind::names()
            ))
        })
    }
}

/// The kind of daemon a running process is, by its argv (read from `/proc`), among `kinds`:
/// the first whose server it is.
pub fn running_server(a: &Argv, kinds: &[DaemonKind]) -> Option<DaemonKind> {
    let words: Vec<&str> = a.iter().collect();
    kinds
        .iter()
        .copied()
        .find(|k| (k.client().is_running_server)(&words))
}

/// Whether a process running `a` (its executable `exe`) waits for what it starts even when that
/// outlives the process that started it: a client of a daemon or container engine (`podman
/// run` waits for its container, which conmon's detached fork started) or one of their servers
/// (containerd-shim and conmon are the subreapers of their containers' processes). A shell or
/// `make` does not: an orphan of theirs is waited for by nobody of the trace.
pub fn takes_in_orphans(a: &Argv, exe: Option<&str>) -> bool {
    let words: Vec<&str> = a.iter().collect();
    let views = views(&words, exe);
    CLIENTS
        .iter()
        .any(|c| views.iter().any(|w| (c.is_client)(w) || (c.is_server)(w, true)))
}

/// Whether a daemon whose argv is `server` (a node of the trace) does the work of `client`
/// (containerd serves both docker and nerdctl).
pub fn serves(server: &Argv, client: &Client) -> bool {
    let words: Vec<&str> = server.iter().collect();
    (client.is_running_server)(&words) || (client.is_server)(&words, true)
}

/// A client whose work ran outside the traced tree.
#[derive(Debug)]
pub struct Outside {
    /// Which.
    pub client: &'static Client,
    /// The first process that ran it.
    pub first: ProcId,
    /// How many execs of it the trace saw.
    pub runs: u64,
}

/// The clients among `ids` whose server is not among them, nor `followed` (`run
/// --include-daemons`: a daemon of the same kind, or of the same server, was followed), in
/// [`CLIENTS`] order.
pub fn outside(t: &Tracker, ids: &[ProcId], followed: &[crate::model::session::Followed]) -> Vec<Outside> {
    let mut seen: Vec<Option<(ProcId, u64)>> = vec![None; CLIENTS.len()];
    let mut served: Vec<bool> = CLIENTS
        .iter()
        .map(|c| followed.iter().any(|f| f.daemon.client().server == c.server))
        .collect();
    for &id in ids {
        let Some(r) = t.get(id) else { continue };
        for (a, exe) in argvs(r) {
            let words: Vec<&str> = a.iter().collect();
            let views = views(&words, exe);
            for (i, c) in CLIENTS.iter().enumerate() {
                if views.iter().any(|w| (c.is_client)(w)) {
                    let s = seen[i].get_or_insert((id, 0));
                    s.1 += 1;
                }
                if views.iter().any(|w| (c.is_server)(w, !r.children.is_empty())) {
                    served[i] = true;
                }
            }
        }
    }
    CLIENTS
        .iter()
        .zip(seen.into_iter().zip(served))
        .filter_map(|(client, (s, served))| {
            let (first, runs) = s.filter(|_| !served)?;
            Some(Outside { client, first, runs })
        })
        .collect()
}

/// The argv of each exec of `r` that has one, with its executable when known.
fn argvs(r: &ProcessRecord) -> impl Iterator<Item = (&Argv, Option<&str>)> {
    r.execs.iter().filter_map(|e| {
        let d = e.details.as_ref()?;
        Some((d.argv.as_ref()?, d.exe.as_deref()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Argv {
        let mut b = super::super::argv::ArgvBuilder::new();
        for w in words {
            b.push(w);
        }
        b.take()
    }

    fn name(words: &[&str]) -> Option<&'static str> {
        client_of(&argv(words), None).map(|c| c.name)
    }

    fn name_exe(words: &[&str], exe: &str) -> Option<&'static str> {
        client_of(&argv(words), Some(exe)).map(|c| c.name)
    }

    /// A symbolic link named like the program it stands in for: `cc` → `sccache` (sccache's
    /// masquerade), `d` → `docker`; a program run under its own name is told by its argv only.
    #[test]
    fn masquerading_clients_are_told_by_their_executable() {
        assert_eq!(
            name_exe(&["cc", "-c", "x.c"], "/usr/local/bin/sccache"),
            Some("sccache")
        );
        assert_eq!(
            name_exe(&["/usr/lib/sccache/gcc", "-c", "x.c"], "/opt/sccache"),
            Some("sccache")
        );
        assert_eq!(name_exe(&["d", "run", "img"], "/usr/bin/docker"), Some("docker"));
        assert_eq!(
            name_exe(&["cc", "-c", "x.c"], "/usr/bin/x86_64-linux-gnu-gcc-12"),
            None
        );
        assert_eq!(
            name_exe(&["cc", "-c", "x.c"], "/usr/bin/sccache (deleted)"),
            Some("sccache")
        );
        // sccache's own commands, under its name, are no client.
        assert_eq!(name_exe(&["sccache", "--show-stats"], "/usr/bin/sccache"), None);
        assert_eq!(name_exe(&["cc"], ""), None);
    }

    fn words(a: &[&'static str]) -> Vec<&'static str> {
        a.to_vec()
    }

    /// What runs podman's containers: its conmon, the OCI runtime (`podman build`'s steps), a
    /// podman service; only conmon and the service are daemons found running.
    #[test]
    fn podman_s_servers() {
        let podman = DaemonKind::of_name("podman").unwrap_or_else(|| panic!("podman"));
        let server = |a: &[&'static str]| (podman.client().is_server)(&words(a), true);
        let running = |a: &[&'static str]| running_server(&argv(a), &[podman]).is_some();
        assert!(server(&["/usr/bin/conmon", "--api-version", "1"]));
        assert!(server(&["/usr/bin/runc", "create", "x"]));
        assert!(server(&["crun", "run", "x"]));
        assert!(server(&[
            "podman",
            "--log-level",
            "info",
            "system",
            "service",
            "-t",
            "0"
        ]));
        assert!(!server(&["podman", "system", "df"]));
        assert!(!server(&["podman", "run", "img"]));
        assert!(running(&["podman", "system", "service", "-t", "0", "unix:///s"]));
        assert!(running(&["/usr/bin/conmon", "--api-version", "1"]));
        assert!(!running(&["/usr/bin/runc", "create", "x"]));
    }

    /// The fix names `--include-daemons` as it is, or, for a backend that cannot follow a
    /// daemon, the backends that can.
    #[test]
    fn the_fix_minds_the_backend() {
        let docker = client_of(&argv(&["docker", "run", "img"]), None).unwrap_or_else(|| panic!("docker"));
        assert_eq!(docker.work, "the container's processes");
        let any = fix_words(docker, None);
        assert!(any.starts_with("`proctrace watch` on the host"), "{any}");
        assert!(any.ends_with("; `run --include-daemons` traces what dockerd and containerd start, the container's processes among them"), "{any}");
        let ptrace = fix_words(docker, Some("ptrace"));
        assert!(
            ptrace.contains("; the ptrace backend sees only the command's tree: with `--backend ebpf` or `--backend connector`, `run --include-daemons` traces what dockerd"),
            "{ptrace}"
        );
    }

    #[test]
    fn clients_are_told_by_their_argv() {
        assert_eq!(name(&["/usr/bin/bazel", "build", "//..."]), Some("bazel"));
        assert_eq!(name(&["bazelisk", "test", "//x"]), Some("bazel"));
        assert_eq!(name(&["bazel", "--batch", "build", "//..."]), None);
        // `--batch` is a startup option: after the command it is something else.
        assert_eq!(name(&["bazel", "build", "--batch"]), Some("bazel"));
        assert_eq!(name(&["buck2", "build", "//:x"]), Some("buck2"));
        assert_eq!(name(&["buck2", "daemon"]), None);
        assert_eq!(name(&["./gradlew", "assemble"]), Some("gradle"));
        assert_eq!(name(&["gradle", "--no-daemon", "build"]), None);
        assert_eq!(
            name(&[
                "/usr/lib/jvm/bin/java",
                "-cp",
                "w.jar",
                "org.gradle.wrapper.GradleWrapperMain",
                "build"
            ]),
            Some("gradle")
        );
        assert_eq!(
            name(&[
                "java",
                "org.gradle.wrapper.GradleWrapperMain",
                "-Dorg.gradle.daemon=false"
            ]),
            None
        );
        assert_eq!(name(&["sccache", "cc", "-c", "x.c"]), Some("sccache"));
        assert_eq!(name(&["sccache", "--show-stats"]), None);
        assert_eq!(name(&["sccache"]), None);
        assert_eq!(name(&["docker", "run", "--rm", "alpine", "true"]), Some("docker"));
        assert_eq!(name(&["docker", "--context", "x", "build", "."]), Some("docker"));
        assert_eq!(name(&["docker", "ps"]), None);
        assert_eq!(name(&["nerdctl", "run", "alpine"]), Some("nerdctl"));
        assert_eq!(name(&["podman", "build", "."]), Some("podman"));
        // Global options with a value are skipped to the subcommand.
        assert_eq!(
            name(&["podman", "--root", "/r", "--runtime", "runc", "run", "img"]),
            Some("podman")
        );
        assert_eq!(name(&["podman-remote", "run", "img"]), Some("podman"));
        assert_eq!(
            name(&["podman", "--url", "unix:///s", "exec", "c", "sh"]),
            Some("podman")
        );
        assert_eq!(name(&["podman", "system", "service"]), None);
        assert_eq!(name(&["podman", "images"]), None);
        assert_eq!(name(&["make", "-j2"]), None);
        // Scripts, as the kernel runs them.
        assert_eq!(name(&["/bin/sh", "/src/gradlew", "build"]), Some("gradle"));
        assert_eq!(name(&["/bin/sh", "./gradlew", "--no-daemon"]), None);
        assert_eq!(name(&["sh", "-c", "bazel build"]), None);
        assert_eq!(name(&[]), None);
        assert_eq!(name(&[""]), None);
    }
}
