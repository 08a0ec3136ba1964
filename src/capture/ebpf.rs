//! The eBPF backend: BTF tracepoints (`tp_btf/sched_process_{fork,exec,exit}` and
//! `tp_btf/task_rename`) write each fork, exec, exit and rename into a ring buffer, with argv copied from the new image's memory at the
//! exec, so a process that exits at once still has its argv (the connector reads it from `/proc`
//! and loses that race for the shortest ones).
//!
//! Why this shape:
//! - The BPF program is C (`bpf/proctrace.bpf.c`), compiled once with Debian's clang and
//!   committed (`bpf/proctrace.bpf.o`, CO-RE, checked by the CI to match its source): building
//!   proctrace needs nothing beyond Rust. Our own loader (`crates/bpf`, pure Rust) loads it:
//!   it reads the kernel's BTF in place and looks up only what the object's relocations name,
//!   where aya parsed all of it, twice, at every start (80 MB, ~90 ms).
//! - `run`: only the traced tree costs anything. A map of traced processes holds proctrace
//!   itself; the kernel side puts every process created by a traced one in at its fork (before
//!   the child can run), so the command and its descendants are followed from their first
//!   instruction, and the machine's other processes are dropped at the first map lookup.
//!   `watch`: every process (`whole_system`).
//! - The kernel side never wakes the reader per event (`BPF_RB_NO_WAKEUP`): argv is already
//!   copied, nothing races, so the reader polls every [`POLL`] (and at once when the ring
//!   passes a quarter full, for a marker or a stop, and when the command exits), one wakeup
//!   per batch.
//! - Events are the connector's: every task's fork (threads told apart by `pid != tgid`) and
//!   exit (the wait status from `task->exit_code`), the exec; timestamps are
//!   `bpf_ktime_get_ns`, the connector's CLOCK_MONOTONIC. The model folds threads as it does
//!   for the connector. Exec details follow each exec in the stream ([`Details::InStream`]).
//! - Loss is counted exactly: each record the ring had no room for adds one to a per-CPU
//!   counter, read at every poll and passed on as [`Event::Lost`].
//! - Per-process cost figures come from taskstats, as with the connector
//!   ([`crate::capture::usage_join`]).
//! - Before it is trusted, [`EbpfBackend::open`] spawns a child of its own and must see its
//!   exec; any failure to load, attach or see it is an `Unavailable` error (exit 69) so that
//!   `auto` goes on to the connector.
//! - Pids are the ones proctrace sees: in the initial pid namespace the kernel's own, as the
//!   connector's; inside another, the kernel side reports each task by its number in
//!   proctrace's namespace and leaves out every process that has none there (it is outside),
//!   so `run` and `watch` in a container see their own processes by the numbers they know.
//!   There `/proc` must be the namespace's own (it is read by those numbers), else the backend
//!   refuses ([`pid_namespace`]).
//! - exe and cwd are walked in the kernel at the exec (dentries up to the root, across mounts,
//!   as `d_path` makes `/proc/PID/exe` and `/proc/PID/cwd` for proctrace), so a process gone
//!   before the reader looks still has them; a walk that is not whole (past 4 KiB, or 1024
//!   components and mounts; 32 with the programs for older kernels) falls back to `/proc`
//!   while the process lives. The exec'd path (`bprm->filename`) comes with them.
//! - Start-up is mostly the verifier's, so each program comes in two variants
//!   (bpf/proctrace.bpf.c): one for Linux 6.2 and later, which casts the tracepoint's pointers
//!   to untrusted ones (`bpf_rdonly_cast`: since 6.3 the verifier searches the kernel's whole
//!   BTF by name several times for each pointer read from a trusted one) and walks the paths
//!   in a `bpf_loop` callback (checked once, not once per step): ~2 ms to verify all four
//!   against ~26 ms; and its twin for older kernels (`NAME_old`, loaded when the first is
//!   refused or cannot be, or with `PROCTRACE_EBPF_PROGRAMS=old`).
//!
//! What it must never do: block or allocate in the kernel side beyond the ring, hand the model
//! an exec of a process it did not see start without its details, or call a trace complete when
//! the ring or the traced map dropped something.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bpf::{Btf, Link, Map, RingBuf};

use self::record::{KernelPath, Record};
use super::{CaptureMsg, CaptureOptions, Notice, SpawnError};
use crate::capture::usage_join::UsageJoin;
use crate::model::event::{Argv, Event, ExecDetails, Pid};
use crate::model::session::CaptureSummary;

pub mod record;

/// The compiled BPF program (bpf/build.sh makes it from bpf/proctrace.bpf.c).
static OBJECT: &[u8] = include_bytes!("../../bpf/proctrace.bpf.o");

/// How long records wait in the ring at most before the reader takes them (live outputs lag by
/// at most this much).
const POLL: Duration = Duration::from_millis(20);

/// How long the self-test waits for its child's exec.
const SELF_TEST_WAIT: Duration = Duration::from_secs(5);

/// The tracepoints, each with its program; the last is optional (without it renames are not seen).
/// Each program has a twin for older kernels, `NAME_old` (bpf/proctrace.bpf.c: Linux 5.8 to 6.1,
/// without `bpf_rdonly_cast` and `bpf_loop`), loaded when the kernel refuses the first
/// ([`load_program`]).
const PROGRAMS: [(&str, &str); 4] = [
    ("on_fork", "sched_process_fork"),
    ("on_exec", "sched_process_exec"),
    ("on_exit", "sched_process_exit"),
    ("on_rename", "task_rename"),
];

/// Oldest kernel with what the program needs (the BPF ring buffer is 5.8).
const MIN_KERNEL: (u32, u32) = (5, 8);

fn unavailable(why: impl std::fmt::Display) -> crate::ProctraceError {
    crate::ProctraceError::Unavailable(format!("cannot trace with eBPF: {why}"))
}

/// What the reader thread is asked for.
enum Request {
    Marker(u32),
    Stop,
    /// A pidfd of the command: its exit wakes the reader at once (its exit record is in the
    /// ring by then), so `run` ends without waiting for the next poll.
    Watch(OwnedFd),
}

/// The loaded programs and the thread that reads their ring.
pub struct EbpfBackend {
    rx: Receiver<CaptureMsg>,
    tx: Sender<CaptureMsg>,
    requests: Sender<Request>,
    recycle: Sender<Vec<Event>>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    reaper_stop: Arc<AtomicBool>,
    enrich: bool,
    /// The map of traced processes (`run`): `run --include-daemons` adds daemons to it.
    traced: Option<Map>,
}

/// The kernel's `major.minor`, from `uname`.
fn kernel_version() -> Option<(u32, u32)> {
    let u = nix::sys::utsname::uname().ok()?;
    let r = u.release().to_str()?;
    let mut it = r.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// proctrace's pid namespace, as the kernel side is told it (`pidns_inum`): 0 for the initial
/// one (its inode number is fixed, `PROC_PID_INIT_INO` in include/linux/proc_ns.h: the kernel's
/// pids are proctrace's), else its inode number (each task's number in it is reported). In
/// another namespace `/proc` must be that namespace's: the reader reads argv's tail, exe and cwd
/// there by those numbers.
fn pid_namespace() -> Result<u32, String> {
    const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata("/proc/self/ns/pid")
        .map_err(|e| format!("/proc/self/ns/pid: {e}"))?
        .ino();
    if ino == PROC_PID_INIT_INO {
        return Ok(0);
    }
    let me = std::process::id().to_string();
    match std::fs::read_link("/proc/self") {
        Ok(p) if p.as_os_str() == me.as_str() => {
            u32::try_from(ino).map_err(|_| format!("the pid namespace's inode number {ino} is past 32 bits"))
        }
        Ok(p) => Err(format!(
            "proctrace runs in a pid namespace of its own but /proc is another's (it calls proctrace {}, not {me}): mount this namespace's /proc (unshare --pid --fork --mount-proc)",
            p.display()
        )),
        Err(e) => Err(format!("/proc/self: {e}")),
    }
}

/// An eventfd to wake the reader with.
fn eventfd() -> std::io::Result<OwnedFd> {
    // SAFETY: eventfd has no pointer arguments; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn poke(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64 to an eventfd.
    unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

fn drain_eventfd(fd: &OwnedFd) {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a valid u64 from a non-blocking eventfd.
    unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
}

/// Waits up to `timeout` for the ring (a forced wakeup), the eventfd or the command's exit (its
/// pidfd, `watch`, dropped once it has fired).
fn wait(ring: &impl AsRawFd, wake: &OwnedFd, watch: &mut Option<OwnedFd>, timeout: Duration) {
    let mut fds = [
        libc::pollfd {
            fd: ring.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: -1,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // A negative fd is ignored by poll.
    fds[2].fd = watch.as_ref().map_or(-1, |f| f.as_raw_fd());
    // SAFETY: three valid pollfds.
    unsafe { libc::poll(fds.as_mut_ptr(), 3, ms) };
    if fds[1].revents != 0 {
        drain_eventfd(wake);
    }
    if fds[2].revents != 0 {
        *watch = None;
    }
}

/// The attached programs with the maps the reader uses.
struct Loaded {
    /// Keep the programs attached (closing them detaches).
    _links: Vec<Link>,
    ring: RingBuf,
    lost: Map,
    /// Room for one per-CPU lookup of `lost` (its value for each possible CPU).
    lost_buf: Vec<u8>,
    /// The traced map (`run`), until the backend takes it.
    traced: Option<Map>,
}

impl Loaded {
    /// Loads, attaches, and puts proctrace in the traced map (`run`).
    fn open(whole_system: bool) -> Result<Loaded, crate::ProctraceError> {
        match kernel_version() {
            Some(v) if v < MIN_KERNEL => {
                return Err(unavailable(format!(
                    "kernel {}.{} is older than {}.{} (the BPF ring buffer)",
                    v.0, v.1, MIN_KERNEL.0, MIN_KERNEL.1
                )));
            }
            _ => {}
        }
        let pidns = pid_namespace().map_err(unavailable)?;
        let btf = Btf::kernel().map_err(|e| {
            unavailable(format!(
                "no kernel type information (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF): {e}"
            ))
        })?;
        // `scratch` is indexed by CPU id.
        let (_, cpus) = bpf::possible_cpus().map_err(|e| unavailable(e.to_string()))?;
        let whole = u32::from(whole_system);
        let me = std::process::id();
        let mut prepared = bpf::Loader::new(OBJECT)
            .global("whole_system", &whole.to_ne_bytes())
            .global("pidns_inum", &pidns.to_ne_bytes())
            .global("self_tgid", &me.to_ne_bytes())
            .max_entries("scratch", cpus.max(1))
            .prepare(&btf)
            .map_err(|e| unavailable(refusal(&e)))?;
        drop(btf);
        let mut links = Vec::with_capacity(PROGRAMS.len());
        let old_only = std::env::var_os(PROGRAMS_VAR).is_some_and(|v| v == "old");
        if old_only {
            crate::say!("proctrace: eBPF: the programs for kernels before 6.2, as {PROGRAMS_VAR}=old asks");
        }
        for (name, tracepoint) in PROGRAMS {
            // The errors name the program and its tracepoint.
            let attached = load_program(&prepared, name, old_only)
                .and_then(|prog| prog.attach())
                .map_err(|e| refusal(&e));
            match attached {
                Ok(link) => links.push(link),
                Err(e) if tracepoint == "task_rename" => {
                    crate::say!("proctrace: eBPF: renames will not be seen: {e}");
                }
                Err(e) => return Err(unavailable(e)),
            }
        }
        let mut map = |name: &str| {
            prepared
                .take_map(name)
                .ok_or_else(|| unavailable(format!("the object has no map {name}")))
        };
        let traced = if whole_system {
            None
        } else {
            let traced = map("traced")?;
            traced
                .update(&std::process::id().to_ne_bytes(), &1u32.to_ne_bytes(), 0)
                .map_err(|e| unavailable(format!("the traced map: {e}")))?;
            // Kept for `run --include-daemons` (the map stays in the kernel with the programs).
            Some(traced)
        };
        let ring = RingBuf::new(map("events")?).map_err(|e| unavailable(e.to_string()))?;
        let lost = map("lost")?;
        let lost_buf = vec![0u8; lost.lookup_size().map_err(|e| unavailable(e.to_string()))?];
        Ok(Loaded {
            _links: links,
            ring,
            lost,
            lost_buf,
            traced,
        })
    }

    /// Records the ring and the traced map had no room for so far: (ring, map).
    fn lost(&mut self) -> (u64, u64) {
        let mut sum = |i: u32| {
            if self.lost.lookup(&i.to_ne_bytes(), &mut self.lost_buf).is_err() {
                return 0;
            }
            // One u64 per possible CPU.
            self.lost_buf
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .fold(0u64, u64::wrapping_add)
        };
        (sum(0), sum(1))
    }
}

/// Set to `old`, the programs for older kernels are loaded whatever the kernel (to test and
/// compare them: docs/backends.md).
pub const PROGRAMS_VAR: &str = "PROCTRACE_EBPF_PROGRAMS";

/// Loads program `name`, or its twin for older kernels (`NAME_old`) when the kernel does not
/// have what it needs (`bpf_rdonly_cast`, Linux 6.2: no attempt is made) or refuses it (then
/// the twin's error is the one told). A refusal of `bpf()` itself (EPERM, ENOSYS) would refuse
/// the twin too: it is told at once.
fn load_program(
    prepared: &bpf::Prepared<'_>,
    name: &str,
    old_only: bool,
) -> Result<bpf::Program, bpf::Error> {
    if !old_only {
        match prepared.load(name) {
            Ok(p) => return Ok(p),
            Err(e) if matches!(e.errno(), Some(libc::EPERM | libc::ENOSYS)) => return Err(e),
            Err(_) => {}
        }
    }
    prepared.load(&format!("{name}_old"))
}

/// Why the kernel refused, in words a person can act on.
fn refusal(e: &bpf::Error) -> String {
    let mut text = e.to_string();
    let hint = match e.errno() {
        // The verifier's refusal (its log is in the text) is not a matter of privilege.
        _ if e.verifier_log().is_some() => "",
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (needs root, or CAP_BPF and CAP_PERFMON outside a user namespace; lockdown or a seccomp filter may refuse bpf())"
        }
        Some(libc::ENOSYS) => {
            " (bpf() is not available: a seccomp filter or a kernel without CONFIG_BPF_SYSCALL)"
        }
        _ => "",
    };
    // The verifier's log is cut already (its last lines); the whole stays bounded.
    if text.len() > 2000 {
        let mut cut = 2000;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text + hint
}

impl EbpfBackend {
    /// Loads and attaches the programs, runs the self-test, opens taskstats when asked, and
    /// starts the reader.
    pub fn open(opts: &CaptureOptions) -> Result<EbpfBackend, crate::ProctraceError> {
        let mut loaded = Loaded::open(opts.whole_system)?;
        self_test(&mut loaded)?;
        let traced = loaded.traced.take();
        let usage = UsageJoin::when_asked(opts);
        let io = |e| crate::ProctraceError::Io("starting the eBPF reader".into(), e);
        let wake = Arc::new(eventfd().map_err(io)?);
        let (tx, rx) = mpsc::channel();
        let (requests, req_rx) = mpsc::channel();
        let (recycle, recycled) = mpsc::channel();
        let reader = Reader {
            loaded,
            usage,
            tx: tx.clone(),
            requests: req_rx,
            recycled,
            wake: Arc::clone(&wake),
            watch: None,
            enrich: opts.enrich,
            items: Vec::with_capacity(1024),
            events: 0,
            rejected: 0,
            lost_seen: (0, 0),
            state: State {
                me: std::process::id() as Pid,
                ..State::default()
            },
        };
        let thread = std::thread::Builder::new()
            .name("pt-ebpf".into())
            .spawn(move || reader.run())
            .map_err(io)?;
        Ok(EbpfBackend {
            rx,
            tx,
            requests,
            recycle,
            wake,
            thread: Some(thread),
            reaper_stop: Arc::new(AtomicBool::new(false)),
            enrich: opts.enrich,
            traced,
        })
    }

    fn ask(&self, r: Request) {
        let _ = self.requests.send(r);
        poke(&self.wake);
    }
}

/// Spawns a child of proctrace's and waits for its exec to come through the ring: the programs
/// are attached, the traced map works and the records decode. What the ring held until then
/// (the child's own records, and in `watch` other processes' from before the start) is
/// dropped.
fn self_test(loaded: &mut Loaded) -> Result<(), crate::ProctraceError> {
    use std::os::unix::process::CommandExt;
    // /bin/true where it exists (small: quick to exec), else proctrace itself.
    let spawn = |prog: &str, args: &[&str]| {
        std::process::Command::new(prog)
            .arg0("proctrace-ebpf-self-test")
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    };
    let mut child = spawn("/bin/true", &[])
        .or_else(|_| spawn("/proc/self/exe", &["--version"]))
        .map_err(|e| unavailable(format!("the self-test could not start a process: {e}")))?;
    let pid = child.id() as Pid;
    let status = child
        .wait()
        .map_err(|e| unavailable(format!("the self-test's process: {e}")))?;
    // Its exit is in the ring before wait returns (the tracepoint runs before the parent is told).
    let deadline = Instant::now() + SELF_TEST_WAIT;
    let (mut exec, mut exit) = (false, false);
    while !(exec && exit) && Instant::now() < deadline {
        loaded.ring.read(|item| match record::decode(item) {
            Some(Record::Exec { tgid, argv, .. }) if tgid == pid => {
                exec = argv.starts_with(b"proctrace-ebpf-self-test\0");
            }
            Some(Record::Exit {
                tgid,
                group_dead: true,
                ..
            }) if tgid == pid => exit = true,
            _ => {}
        });
        if !(exec && exit) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    if !exec || !exit {
        return Err(unavailable(format!(
            "the self-test's process ({pid}, {status}) was not seen {}",
            if exec { "exiting" } else { "exec'ing" }
        )));
    }
    Ok(())
}

impl super::CaptureBackend for EbpfBackend {
    fn name(&self) -> &'static str {
        "ebpf"
    }

    fn argv_reader(&self) -> &'static str {
        if self.enrich { "kernel" } else { "off" }
    }

    /// The command is a child of proctrace's, which is in the traced map: the kernel side takes
    /// it in at its fork.
    fn spawn(&mut self, argv: &[String], env: &[(OsString, OsString)]) -> Result<Pid, SpawnError> {
        let pid = super::connector::spawn_command(argv, env, self.tx.clone(), Arc::clone(&self.reaper_stop))?;
        // SAFETY: pidfd_open with a pid and no flags; the result is checked.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd >= 0 {
            // SAFETY: a new descriptor owned by nobody else.
            self.ask(Request::Watch(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
        }
        Ok(pid)
    }

    fn rx(&self) -> &Receiver<CaptureMsg> {
        &self.rx
    }

    fn sender(&self) -> Sender<CaptureMsg> {
        self.tx.clone()
    }

    fn recycle(&self, batch: Vec<Event>) {
        let _ = self.recycle.send(batch);
    }

    /// A [`Notice::Marker`] sent once the ring is drained: every record written before the call
    /// is in the ring already (the tracepoints write synchronously).
    fn request_marker(&self, n: u32) -> super::Marker {
        self.ask(Request::Marker(n));
        super::Marker::Notice(n)
    }

    /// They follow each exec in the stream: copied by the kernel side.
    fn take_details(&mut self) -> super::Details {
        super::Details::InStream
    }

    fn request_stop(&mut self) {
        self.reaper_stop.store(true, Ordering::Release);
        self.ask(Request::Stop);
    }

    /// Puts them in the traced map: the kernel side passes on their records, and takes in what
    /// they start at its fork, as it does for the command's tree. (`watch` traces every process.)
    fn follow_also(&mut self, pids: &[Pid]) -> Result<(), String> {
        let Some(traced) = self.traced.as_ref() else {
            return Ok(());
        };
        for &pid in pids {
            traced
                .update(&(pid as u32).to_ne_bytes(), &1u32.to_ne_bytes(), 0)
                .map_err(|e| format!("the traced map: {e}"))?;
        }
        Ok(())
    }
}

impl Drop for EbpfBackend {
    fn drop(&mut self) {
        self.ask(Request::Stop);
        // Joining drops the object: the programs are detached and the maps freed.
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The reader thread.
struct Reader {
    loaded: Loaded,
    usage: Option<UsageJoin>,
    tx: Sender<CaptureMsg>,
    requests: Receiver<Request>,
    recycled: Receiver<Vec<Event>>,
    wake: Arc<OwnedFd>,
    /// The command's pidfd until it exits ([`Request::Watch`]).
    watch: Option<OwnedFd>,
    enrich: bool,
    /// The batch being converted (reused).
    items: Vec<Event>,
    events: u64,
    rejected: u64,
    /// The loss counters as last passed on.
    lost_seen: (u64, u64),
    /// What the records are compared with.
    state: State,
}

impl Reader {
    fn run(mut self) {
        loop {
            wait(&self.loaded.ring, &self.wake, &mut self.watch, POLL);
            let mut markers = Vec::new();
            let mut stopping = false;
            while let Ok(r) = self.requests.try_recv() {
                match r {
                    Request::Marker(n) => markers.push(n),
                    Request::Stop => stopping = true,
                    Request::Watch(fd) => self.watch = Some(fd),
                }
            }
            if stopping && let Some(u) = self.usage.as_mut() {
                u.finish();
            }
            if !self.drain(stopping) {
                return;
            }
            for n in markers {
                if self.tx.send(CaptureMsg::Notice(Notice::Marker(n))).is_err() {
                    return;
                }
            }
            if stopping {
                let (ring, map) = self.loaded.lost();
                let _ = self.tx.send(CaptureMsg::Done(CaptureSummary {
                    rejected: self.rejected,
                    socket_drops: ring,
                    events: self.events,
                    usage_lost: self.usage.as_ref().map_or(0, |u| u.lost()),
                    usage_incomplete: self.usage.as_ref().map_or(0, |u| u.incomplete_traced()),
                    untraced: map,
                    ..CaptureSummary::default()
                }));
                return;
            }
        }
    }

    /// Takes everything in the ring to the model; false when the model is gone.
    fn drain(&mut self, final_drain: bool) -> bool {
        self.items.clear();
        let (ring_lost, map_lost) = self.loaded.lost();
        let new = ring_lost.wrapping_sub(self.lost_seen.0) + map_lost.wrapping_sub(self.lost_seen.1);
        if new > 0 {
            // Loss is known only here, after the records around it: said before them.
            self.items.push(Event::Lost { ts: None, count: new });
            self.lost_seen = (ring_lost, map_lost);
        }
        let (events, rejected, state, enrich, items) = (
            &mut self.events,
            &mut self.rejected,
            &mut self.state,
            self.enrich,
            &mut self.items,
        );
        self.loaded.ring.read(|item| {
            *events += 1;
            match record::decode(item) {
                Some(r) => state.convert(&r, enrich, items),
                None => *rejected += 1,
            }
        });
        // A rename not followed by its process's exec within RENAME_HOLD is a rename.
        let before = if final_drain {
            u64::MAX
        } else {
            crate::capture::procfs::mono_now().saturating_sub(RENAME_HOLD_NS)
        };
        self.state.release_renames(before, &mut self.items);
        if self.items.is_empty() {
            return true;
        }
        let mut batch = self.recycled.try_recv().unwrap_or_default();
        batch.clear();
        match self.usage.as_mut() {
            None => batch.append(&mut self.items),
            Some(u) => with_usage(&mut self.items, u, &mut batch),
        }
        self.tx.send(CaptureMsg::Events(batch)).is_ok()
    }
}

/// How long a rename waits for its process's exec (the exec's own renaming is followed by the
/// exec record within microseconds).
const RENAME_HOLD_NS: u64 = 5_000_000;

/// What the reader remembers between records: session leaders reported, each process's
/// credentials as last seen, renames held back.
#[derive(Default)]
struct State {
    /// Session leaders already reported ([`Event::Sid`]), until they exit.
    leaders: std::collections::HashSet<Pid>,
    /// Each process's credentials as last seen, until it exits.
    creds: std::collections::HashMap<Pid, record::Creds>,
    /// Renames held until it is known whether they are an exec's own (ts, pid, tgid, comm).
    renames: Vec<(u64, Pid, Pid, [u8; 16])>,
    /// proctrace itself: in the traced map (`run`) so that its children are, but its own
    /// threads' records are not passed on (the taskstats join would count proctrace, never
    /// seen starting, as a process with incomplete figures).
    me: Pid,
    /// Paths recently handed out, shared.
    paths: Paths,
}

fn comm_text(comm: &[u8]) -> String {
    let end = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
    crate::model::bytes::encode(&comm[..end]).into_owned()
}

impl State {
    /// There is no tracepoint for `setsid` or for credential changes: a process is reported a
    /// session leader ([`Event::Sid`]) the first time one of its records (its fork of a child,
    /// its exec, its exit) finds it one, and its new uid/gid ([`Event::Gid`], [`Event::Uid`])
    /// when a record finds them changed since the last, at that record's time.
    fn leader(&mut self, ts: u64, tgid: Pid, is: bool, out: &mut Vec<Event>) {
        if is && self.leaders.insert(tgid) {
            out.push(Event::Sid { ts, tgid });
        }
    }

    fn creds_seen(&mut self, ts: u64, tgid: Pid, c: record::Creds, out: &mut Vec<Event>) {
        let Some(old) = self.creds.insert(tgid, c) else {
            return;
        };
        if (old.rgid, old.egid) != (c.rgid, c.egid) {
            out.push(Event::Gid {
                ts,
                tgid,
                rgid: c.rgid,
                egid: c.egid,
            });
        }
        if (old.ruid, old.euid) != (c.ruid, c.euid) {
            out.push(Event::Uid {
                ts,
                tgid,
                ruid: c.ruid,
                euid: c.euid,
            });
        }
    }

    /// Passes on the held renames of `tgid` (before any other record of it).
    fn renames_of(&mut self, tgid: Pid, out: &mut Vec<Event>) {
        if self.renames.iter().any(|r| r.2 == tgid) {
            self.release(|r| r.2 == tgid, out);
        }
    }

    /// Passes on the held renames made before `before` (all: `u64::MAX`).
    fn release_renames(&mut self, before: u64, out: &mut Vec<Event>) {
        if !self.renames.is_empty() {
            self.release(|r| r.0 < before, out);
        }
    }

    fn release(&mut self, which: impl Fn(&(u64, Pid, Pid, [u8; 16])) -> bool, out: &mut Vec<Event>) {
        self.renames.retain(|r| {
            if !which(r) {
                return true;
            }
            out.push(Event::Comm {
                ts: r.0,
                pid: r.1,
                tgid: r.2,
                comm: comm_text(&r.3),
            });
            false
        });
    }

    /// One record as the model's events.
    fn convert(&mut self, r: &Record<'_>, enrich: bool, out: &mut Vec<Event>) {
        let own = match *r {
            Record::Fork { child_tgid, .. } => child_tgid,
            Record::Exit { tgid, .. } | Record::Exec { tgid, .. } | Record::Rename { tgid, .. } => tgid,
        };
        if own == self.me {
            return;
        }
        match *r {
            Record::Fork {
                ts,
                parent_tgid,
                child_pid,
                child_tgid,
                creator_tgid,
                creator_leader,
                creds,
            } => {
                self.renames_of(creator_tgid, out);
                self.leader(ts, creator_tgid, creator_leader, out);
                if self.creds.contains_key(&creator_tgid) {
                    self.creds_seen(ts, creator_tgid, creds, out);
                }
                if child_pid == child_tgid {
                    self.creds.insert(child_tgid, creds);
                }
                out.push(Event::Fork {
                    ts,
                    parent_tgid,
                    child_pid,
                    child_tgid,
                })
            }
            Record::Exit {
                ts,
                pid,
                tgid,
                status,
                parent_tgid,
                group_dead,
                session_leader,
                creds,
            } => {
                self.renames_of(tgid, out);
                if group_dead {
                    self.leader(ts, tgid, session_leader, out);
                    self.leaders.remove(&tgid);
                    self.creds_seen(ts, tgid, creds, out);
                    self.creds.remove(&tgid);
                }
                out.push(Event::Exit {
                    ts,
                    pid,
                    tgid,
                    status,
                    parent_tgid,
                })
            }
            Record::Exec {
                ts,
                tgid,
                flags,
                creds,
                comm,
                ..
            } => {
                // The exec's own renaming (to the program's name) is the last one held for
                // the process, with that name: not a rename.
                if let Some(i) = self.renames.iter().rposition(|h| h.2 == tgid)
                    && comm_text(&self.renames[i].3) == comm_text(comm)
                {
                    self.renames.remove(i);
                }
                self.renames_of(tgid, out);
                self.leader(ts, tgid, flags & record::EXEC_SESSION_LEADER != 0, out);
                self.creds_seen(ts, tgid, creds, out);
                out.push(Event::Exec { ts, tgid });
                if enrich {
                    out.push(Event::ExecDetails {
                        tgid,
                        details: details(r, &mut self.paths),
                    });
                }
            }
            Record::Rename { ts, pid, tgid, comm } => {
                let mut c = [0u8; 16];
                let n = comm.len().min(16);
                c[..n].copy_from_slice(&comm[..n]);
                self.renames.push((ts, pid, tgid, c));
            }
        }
    }
}

/// An exec's details: argv as the kernel side copied it (the rest from `/proc` when it was cut
/// and the process still lives), the uid from the task, the exec'd path, exe and cwd as the
/// kernel side walked them (from `/proc` while the process lives when a walk was not whole);
/// comm as every backend makes it (from argv[0]: the kernel's own, which names a script by the
/// script, comes at the exit with the cost figures, as with the connector).
fn details(r: &Record<'_>, paths: &mut Paths) -> ExecDetails {
    let Record::Exec {
        tgid,
        creds,
        flags,
        argv_full,
        argv,
        filename,
        exe,
        cwd,
        ..
    } = *r
    else {
        return ExecDetails::default();
    };
    let cut = argv_full > argv.len() as u64 || flags & record::EXEC_ARGV_READ_FAILED != 0;
    let argv = if cut {
        match std::fs::read(format!("/proc/{tgid}/cmdline")) {
            // The whole of it, from a process that still lives (and still runs that image: its
            // copied part matches).
            Ok(all) if all.len() as u64 == argv_full && all.starts_with(argv) => {
                crate::capture::procfs::split_cmdline(&all)
            }
            _ => truncated(argv, argv_full),
        }
    } else {
        crate::capture::procfs::split_cmdline(argv)
    };
    let mut buf = [0u8; 4096];
    let mut path = |p: KernelPath<'_>, name: &std::ffi::CStr| match p {
        KernelPath::Whole { path, deleted } => Some(paths.share(path, deleted)),
        KernelPath::Incomplete => readlink(tgid, name, &mut buf).map(Arc::from),
    };
    let exe = path(exe, c"exe");
    let cwd = path(cwd, c"cwd");
    ExecDetails {
        comm: argv
            .as_ref()
            .and_then(|a| a.first())
            .map(|a0| crate::capture::procfs::comm_from_argv0(a0, exe.as_deref())),
        argv,
        exe,
        cwd,
        uid: Some(creds.euid),
        // The kernel's `bprm->filename` is never empty for an exec that ran.
        filename: (!filename.is_empty()).then(|| paths.share(filename, false)),
    }
}

/// The last few paths handed out (exe, cwd, filename), so that an exec of the same program in
/// the same directory, the usual case in a loop or a build, shares them instead of allocating
/// its own.
#[derive(Default)]
struct Paths {
    /// (bytes, deleted, text), the latest first.
    kept: Vec<(Box<[u8]>, bool, Arc<str>)>,
}

impl Paths {
    const KEPT: usize = 8;

    /// `path` as the model's text, with ` (deleted)` after it when `deleted` (as `/proc` shows
    /// it).
    fn share(&mut self, path: &[u8], deleted: bool) -> Arc<str> {
        if let Some(i) = self.kept.iter().position(|k| k.1 == deleted && *k.0 == *path) {
            self.kept[..=i].rotate_right(1);
            return Arc::clone(&self.kept[0].2);
        }
        let text: Arc<str> = if deleted {
            let mut b = Vec::with_capacity(path.len() + 10);
            b.extend_from_slice(path);
            b.extend_from_slice(b" (deleted)");
            Arc::from(crate::model::bytes::encode(&b))
        } else {
            Arc::from(crate::model::bytes::encode(path))
        };
        if self.kept.len() == Self::KEPT {
            self.kept.pop();
        }
        self.kept.insert(0, (Box::from(path), deleted, Arc::clone(&text)));
        text
    }
}

/// The copied part of an argv that was cut, with a last word saying so.
fn truncated(argv: &[u8], full: u64) -> Option<Argv> {
    if argv.is_empty() {
        return None;
    }
    let mut b = crate::model::argv::ArgvBuilder::new();
    let body = argv.strip_suffix(b"\0").unwrap_or(argv);
    for w in body.split(|&c| c == 0) {
        b.push_with(|t| crate::model::bytes::encode_into(t, w));
    }
    b.push(&format!("…[argv cut at {} of {full} bytes]", argv.len()));
    Some(b.take())
}

/// `/proc/PID/NAME`'s target (the process may be gone: `None`).
fn readlink(pid: Pid, name: &std::ffi::CStr, buf: &mut [u8]) -> Option<String> {
    let mut path = [0u8; 64];
    let mut w = std::io::Cursor::new(&mut path[..]);
    use std::io::Write;
    write!(w, "/proc/{pid}/").ok()?;
    w.write_all(name.to_bytes_with_nul()).ok()?;
    // SAFETY: path is NUL-terminated (written above, the rest zero); buf is writable for its length.
    let n = unsafe { libc::readlink(path.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 || n as usize >= buf.len() {
        return None;
    }
    Some(crate::model::bytes::encode(&buf[..n as usize]).into_owned())
}

/// Moves `items` to `batch` with each process's taskstats figures just ahead of its exits (as
/// the connector does, [`crate::capture::connector`]): the taskstats queue is drained once, at
/// the batch's first exit, when every exit of the batch has its record queued (taskstats runs
/// before the exit tracepoint). Threads created in the batch are passed on to the join first.
fn with_usage(items: &mut Vec<Event>, usage: &mut UsageJoin, batch: &mut Vec<Event>) {
    let thread_of = |ev: &Event| match *ev {
        Event::Fork {
            child_pid,
            child_tgid,
            ..
        } if child_pid != child_tgid => Some(child_tgid),
        _ => None,
    };
    let mut drained = false;
    for i in 0..items.len() {
        if !drained {
            if let Some(tgid) = thread_of(&items[i]) {
                usage.thread_started(tgid);
            } else if matches!(items[i], Event::Exit { .. }) {
                // Threads created later in this batch: before the drain, which may take in
                // their leaders' records.
                for tgid in items[i + 1..].iter().filter_map(thread_of) {
                    usage.thread_started(tgid);
                }
                usage.drain();
                drained = true;
            }
        }
        if let Event::Exit { tgid, pid, .. } = items[i] {
            match usage.take_named(tgid) {
                Some((u, comm)) => {
                    if let Some(comm) = comm {
                        batch.push(Event::ExitName { tgid, comm });
                    }
                    batch.push(Event::Usage {
                        tgid,
                        usage: Box::new(u),
                    });
                }
                None if pid == tgid => usage.ended_without_figures(tgid),
                None => {}
            }
        }
        // Moved out without a copy (the placeholder allocates nothing).
        batch.push(std::mem::replace(
            &mut items[i],
            Event::Lost { ts: None, count: 0 },
        ));
    }
    items.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path the kernel side walked becomes the model's text as `/proc` gives it: ` (deleted)`
    /// after a deleted one, bytes that are not UTF-8 kept; a repeated one is shared, not copied.
    #[test]
    fn walked_paths_read_as_proc_gives_them_and_repeats_are_shared() {
        let mut p = Paths::default();
        let a = p.share(b"/usr/bin/true", false);
        assert_eq!(&*a, "/usr/bin/true");
        assert!(Arc::ptr_eq(&a, &p.share(b"/usr/bin/true", false)));
        assert_eq!(&*p.share(b"/tmp/gone", true), "/tmp/gone (deleted)");
        assert_eq!(&*p.share(b"/tmp/gone", false), "/tmp/gone");
        let odd = p.share(b"/tmp/caf\xe9", false);
        assert_eq!(crate::model::bytes::decode(&odd).as_ref(), b"/tmp/caf\xe9");
        // Bounded: the oldest goes once more are kept than it holds.
        for i in 0..Paths::KEPT {
            p.share(format!("/d{i}").as_bytes(), false);
        }
        assert_eq!(p.kept.len(), Paths::KEPT);
        assert!(!Arc::ptr_eq(&a, &p.share(b"/usr/bin/true", false)));
    }
}
