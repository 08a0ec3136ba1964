//! Capture: where events come from. A backend owns everything that touches the traced processes —
//! subscribing or attaching, spawning the command, reaping it — and yields only the model's
//! [`Event`]s, plus notices about the command on the same queue.
//!
//! Three backends, tried by `auto` in this order:
//! - [`ebpf`]: BTF tracepoints on fork, exec, exit and rename writing to a ring buffer; argv is copied in
//!   the kernel at the exec (always complete, whatever the process's life), kernel timestamps,
//!   only the traced tree costs anything (`run`). Needs root (or CAP_BPF+CAP_PERFMON), kernel
//!   BTF and 5.8+; refused in containers' seccomp profiles and user namespaces.
//! - [`connector`]: the kernel's process events connector. System-wide, kernel timestamps, no
//!   effect on the traced processes beyond a wakeup; argv is read from `/proc` by a racing
//!   reader ([`enrich`]). Refused in containers (private network namespace), user and pid
//!   namespaces, and before 6.6 without CAP_NET_ADMIN.
//! - [`ptrace`]: event stops only (fork/vfork/clone, exec, exit) on the command's own tree. Works
//!   wherever ptrace does; argv is read while the process is stopped at its exec, so it is always
//!   complete; timestamps are CLOCK_MONOTONIC read at the stop.
//!
//! [`Backend::open`] is the one place that chooses between them ([`BACKENDS`]); the engine sees a
//! backend only through [`CaptureBackend`].

use std::ffi::OsString;
use std::sync::mpsc::{Receiver, Sender};

use crate::model::event::{Event, Pid};
use crate::model::session::CaptureSummary;

pub mod connector;
pub mod daemons;
pub mod ebpf;
pub mod enrich;
pub mod files;
pub mod procfs;
pub mod ptrace;
pub mod signals;
pub mod trace2;
pub mod usage;
pub mod usage_join;

/// Notices about the command and the tracer, queued in order with the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The traced command was reaped with this wait status.
    CommandExited(i32),
    /// A stop signal arrived for the tracer itself.
    Interrupted(i32),
    /// Every event that happened before marker `n` was asked for has been queued ahead of this.
    Marker(u32),
}

/// What a backend (and the signal thread) sends to the model loop.
#[derive(Debug)]
pub enum CaptureMsg {
    /// Events in causal order.
    Events(Vec<Event>),
    /// A notice.
    Notice(Notice),
    /// The backend stopped; final counters.
    Done(CaptureSummary),
    /// Capture failed; the trace is over.
    Failed(String),
}

/// Settings shared by both backends.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// Connector socket options.
    pub connector: cnproc::Options,
    /// Read argv/exe/cwd after each exec.
    pub enrich: bool,
    /// Let the connector's `/proc` reader run at real-time priority when allowed.
    pub realtime: bool,
    /// Measure what each process cost (taskstats with the connector, `/proc` at the exit stop
    /// with ptrace).
    pub usage: bool,
    /// Taskstats receive buffer to request, bytes (connector).
    pub usage_buffer: usize,
    /// Every process of the machine (`watch`), not only the command's tree (`run`): backends
    /// that can filter in the kernel (eBPF) do so only when this is false.
    pub whole_system: bool,
    /// `--files` (`run`): the ptrace backend reports file calls itself (seccomp); the others
    /// leave it to fanotify ([`files::FileWatcher`]).
    pub files: Option<files::FilesOptions>,
}

/// Why the command could not be started.
#[derive(Debug)]
pub struct SpawnError {
    /// What the shell would exit with: 127 not found, 126 not executable.
    pub code: i32,
    /// The cause.
    pub error: std::io::Error,
}

impl SpawnError {
    fn from_io(error: std::io::Error) -> SpawnError {
        let code = if error.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        SpawnError { code, error }
    }
}

/// How exec details reach the model.
pub enum Details {
    /// Read from `/proc` when the model asks (connector): from the enricher's early read when it
    /// has one.
    Proc(Option<enrich::Enricher>),
    /// They follow each exec in the event stream (ptrace; replayed captures).
    InStream,
}

/// A way of observing processes: what the engine needs of a backend. Adding a backend is one file
/// implementing this and one line in [`BACKENDS`] (ARCHITECTURE.md, "Add a capture backend").
pub trait CaptureBackend {
    /// Its name, as `--backend` takes it and the outputs report it.
    fn name(&self) -> &'static str;
    /// How argv is read: `realtime`, `nice` or `normal` (the connector's reader thread),
    /// `exec-stop` (ptrace), `off`.
    fn argv_reader(&self) -> &'static str;
    /// Starts the command with `env` added to (or replacing in) proctrace's environment; its end
    /// comes as [`Notice::CommandExited`]. The backend's own events for it are queued before this
    /// returns.
    fn spawn(&mut self, argv: &[String], env: &[(OsString, OsString)]) -> Result<Pid, SpawnError>;
    /// The queue of events and notices.
    fn rx(&self) -> &Receiver<CaptureMsg>;
    /// A sender for other threads (the signal thread) to queue notices.
    fn sender(&self) -> Sender<CaptureMsg>;
    /// Gives a processed batch back for reuse.
    fn recycle(&self, batch: Vec<Event>);
    /// Asks for marker `n`: something on the queue that follows every event already generated.
    fn request_marker(&self, n: u32) -> Marker;
    /// Where exec details come from (asked once, when the engine starts).
    fn take_details(&mut self) -> Details;
    /// Asks the backend to queue what it still has, account for final losses and stop; the last
    /// message is [`CaptureMsg::Done`].
    fn request_stop(&mut self);
    /// Receive buffer granted, bytes (0 where there is none).
    fn receive_buffer(&self) -> u64 {
        0
    }
    /// Also passes on what these processes (not the command's) do from now on, and what they
    /// start (`run --include-daemons`): the model decides what of it to take. `Err` says why
    /// this backend cannot (it sees only the command's tree).
    fn follow_also(&mut self, _pids: &[Pid]) -> Result<(), String> {
        Err(format!(
            "the {} backend sees only the command's tree",
            self.name()
        ))
    }
    /// Whether it reports the file uses of `--files` itself (ptrace, through seccomp); else
    /// fanotify does.
    fn captures_files(&self) -> bool {
        false
    }
}

/// Opens a backend; an [`Unavailable`](crate::ProctraceError::Unavailable)-kind error (exit 69)
/// lets `auto` try the next.
pub type OpenBackend = fn(&CaptureOptions) -> Result<Box<dyn CaptureBackend>, crate::ProctraceError>;

/// A backend, as `--backend` names it.
pub struct BackendSpec {
    /// Its name.
    pub name: &'static str,
    /// What it is, in `--help`.
    pub help: &'static str,
    /// Opens it.
    pub open: OpenBackend,
    /// It can follow processes it did not start (`watch`).
    pub watches: bool,
}

/// Every backend, in the order `--backend auto` tries them.
pub const BACKENDS: &[BackendSpec] = &[
    BackendSpec {
        name: "ebpf",
        help: "BTF tracepoints (argv copied in the kernel): root or CAP_BPF+CAP_PERFMON, kernel 5.8+ with BTF",
        open: |o| Ok(Box::new(ebpf::EbpfBackend::open(o)?)),
        watches: true,
    },
    BackendSpec {
        name: "connector",
        help: "The kernel's process events connector",
        open: |o| Ok(Box::new(connector::ConnectorBackend::open(o)?)),
        watches: true,
    },
    BackendSpec {
        name: "ptrace",
        help: "ptrace (event stops only): works in containers and user namespaces",
        open: |o| Ok(Box::new(ptrace::PtraceBackend::start(o)?)),
        watches: false,
    },
];

/// Whether the backend named `name` sees only the command's tree (it cannot follow processes
/// it did not start: ptrace), as a saved trace's header names it; `false` for a name not known.
pub fn sees_only_the_tree(name: &str) -> bool {
    BACKENDS.iter().any(|b| b.name == name && !b.watches)
}

/// A running backend, and the ones `auto` tried before it.
pub struct Backend(Box<dyn CaptureBackend>, Vec<String>);

impl Backend {
    /// Opens the backend named `choice` (`None`: `auto`, each of [`BACKENDS`] in turn — the next
    /// is tried when one is not available here, with one line on stderr saying why).
    pub fn open(choice: Option<&str>, opts: &CaptureOptions) -> Result<Backend, crate::ProctraceError> {
        if let Some(name) = choice {
            let b = BACKENDS
                .iter()
                .find(|b| b.name == name)
                .ok_or_else(|| crate::ProctraceError::Usage(format!("no backend '{name}'")))?;
            return (b.open)(opts).map(|b| Backend(b, Vec::new()));
        }
        let mut last = None;
        let mut refused = Vec::new();
        // `watch` (whole_system) only with the backends that can follow what they did not start.
        let usable: Vec<&BackendSpec> = BACKENDS
            .iter()
            .filter(|b| b.watches || !opts.whole_system)
            .collect();
        for (i, b) in usable.iter().enumerate() {
            match (b.open)(opts) {
                Ok(b) => return Ok(Backend(b, refused)),
                Err(e) if e.exit_code() == crate::exit_codes::UNAVAILABLE && i + 1 < usable.len() => {
                    crate::say!("proctrace: {e}; tracing with {} instead", usable[i + 1].name);
                    refused.push(format!("{}: {e}", b.name));
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| crate::ProctraceError::Usage("no backend".into())))
    }

    /// The backend's name (`ebpf`, `connector`, `ptrace`).
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// See [`CaptureBackend::captures_files`].
    pub fn captures_files(&self) -> bool {
        self.0.captures_files()
    }

    /// `--files` could not be watched with this backend (`why`: fanotify refused): the ptrace
    /// backend instead, which reports file calls itself; the refusal is said and recorded as the
    /// other fallbacks are.
    pub fn files_fallback(self, opts: &CaptureOptions, why: &str) -> Result<Backend, crate::ProctraceError> {
        let Backend(old, mut refused) = self;
        let name = old.name();
        // The refused backend stops (and lets go of the kernel) before the next one starts.
        drop(old);
        crate::say!("proctrace: --files: {why}; tracing with ptrace instead (it reports file calls itself)");
        refused.push(format!("{name}: --files: {why}"));
        let b = BACKENDS
            .iter()
            .find(|b| b.name == "ptrace")
            .ok_or_else(|| crate::ProctraceError::Usage("no backend 'ptrace'".into()))?;
        (b.open)(opts).map(|b| Backend(b, refused))
    }

    /// The backends `auto` tried before this one, each as `name: why it was refused`.
    pub fn refused(&self) -> &[String] {
        &self.1
    }

    /// See [`CaptureBackend::argv_reader`].
    pub fn argv_reader(&self) -> &'static str {
        self.0.argv_reader()
    }

    /// See [`CaptureBackend::spawn`].
    pub fn spawn(&mut self, argv: &[String], env: &[(OsString, OsString)]) -> Result<Pid, SpawnError> {
        self.0.spawn(argv, env)
    }

    /// See [`CaptureBackend::rx`].
    pub fn rx(&self) -> &Receiver<CaptureMsg> {
        self.0.rx()
    }

    /// See [`CaptureBackend::sender`].
    pub fn sender(&self) -> Sender<CaptureMsg> {
        self.0.sender()
    }

    /// See [`CaptureBackend::recycle`].
    pub fn recycle(&self, batch: Vec<Event>) {
        self.0.recycle(batch)
    }

    /// See [`CaptureBackend::request_marker`].
    pub fn request_marker(&self, n: u32) -> Marker {
        self.0.request_marker(n)
    }

    /// See [`CaptureBackend::take_details`].
    pub fn take_details(&mut self) -> Details {
        self.0.take_details()
    }

    /// See [`CaptureBackend::request_stop`].
    pub fn request_stop(&mut self) {
        self.0.request_stop()
    }

    /// See [`CaptureBackend::receive_buffer`].
    pub fn receive_buffer(&self) -> u64 {
        self.0.receive_buffer()
    }

    /// See [`CaptureBackend::follow_also`].
    pub fn follow_also(&mut self, pids: &[Pid]) -> Result<(), String> {
        self.0.follow_also(pids)
    }
}

/// How a marker shows up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// A COMM event of this thread with this name (restore the name afterwards).
    Rename(connector::Rename),
    /// [`Notice::Marker`] with this number.
    Notice(u32),
}
