//! Capture: where events come from. A backend owns everything that touches the traced processes —
//! subscribing or attaching, spawning the command, reaping it — and yields only the model's
//! [`Event`]s, plus notices about the command on the same queue.
//!
//! Two backends:
//! - [`connector`]: the kernel's process events connector. System-wide, kernel timestamps, no
//!   effect on the traced processes beyond a wakeup; argv is read from `/proc` by a racing
//!   reader ([`enrich`]). Refused in containers (private network namespace), user and pid
//!   namespaces, and before 6.6 without CAP_NET_ADMIN.
//! - [`ptrace`]: event stops only (fork/vfork/clone, exec, exit) on the command's own tree. Works
//!   wherever ptrace does; argv is read while the process is stopped at its exec, so it is always
//!   complete; timestamps are CLOCK_MONOTONIC read at the stop.
//!
//! [`Backend::open`] is the one place that chooses between them.

use std::ffi::OsString;
use std::sync::mpsc::{Receiver, Sender};

use crate::model::event::{Event, Pid};
use crate::model::session::CaptureSummary;

pub mod connector;
pub mod enrich;
pub mod procfs;
pub mod ptrace;
pub mod signals;
pub mod trace2;
pub mod usage;
pub mod usage_join;

/// Which backend the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The connector when it answers, else ptrace (`run` only).
    #[default]
    Auto,
    /// The process events connector.
    Connector,
    /// ptrace, event stops only.
    Ptrace,
}

/// Which backend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// The process events connector.
    Connector,
    /// ptrace.
    Ptrace,
}

impl BackendKind {
    /// The name used in the `start`/`end` lines and the summary.
    pub fn as_str(&self) -> &'static str {
        match self {
            BackendKind::Connector => "connector",
            BackendKind::Ptrace => "ptrace",
        }
    }
}

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

/// A running backend.
pub enum Backend {
    /// See [`connector`].
    Connector(connector::ConnectorBackend),
    /// See [`ptrace`].
    Ptrace(ptrace::PtraceBackend),
}

impl Backend {
    /// Opens the chosen backend. `Auto` takes the connector when it answers and falls back to
    /// ptrace with one line on stderr saying why.
    pub fn open(choice: BackendChoice, opts: &CaptureOptions) -> Result<Backend, crate::ProctraceError> {
        match choice {
            BackendChoice::Connector => Ok(Backend::Connector(connector::ConnectorBackend::open(opts)?)),
            BackendChoice::Ptrace => Ok(Backend::Ptrace(ptrace::PtraceBackend::start(opts)?)),
            BackendChoice::Auto => match connector::ConnectorBackend::open(opts) {
                Ok(b) => Ok(Backend::Connector(b)),
                Err(crate::ProctraceError::Connector(e)) => {
                    crate::say!("proctrace: {e}; tracing with ptrace instead");
                    Ok(Backend::Ptrace(ptrace::PtraceBackend::start(opts)?))
                }
                Err(other) => Err(other),
            },
        }
    }

    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        match self {
            Backend::Connector(_) => BackendKind::Connector,
            Backend::Ptrace(_) => BackendKind::Ptrace,
        }
    }

    /// How the `/proc` reader runs: `realtime`, `nice` or `normal` for the connector's reader,
    /// `exec-stop` for ptrace, `off` without enrichment.
    pub fn argv_reader(&self) -> &'static str {
        match self {
            Backend::Connector(c) => c.argv_reader(),
            Backend::Ptrace(p) if p.enrich => "exec-stop",
            Backend::Ptrace(_) => "off",
        }
    }

    /// Starts the command with `env` added to (or replacing in) proctrace's environment; its end
    /// comes as [`Notice::CommandExited`]. The backend's own events for it are queued before this
    /// returns.
    pub fn spawn(&mut self, argv: &[String], env: &[(OsString, OsString)]) -> Result<Pid, SpawnError> {
        match self {
            Backend::Connector(c) => c.spawn(argv, env),
            Backend::Ptrace(p) => p.spawn(argv, env),
        }
    }

    /// The queue of events and notices.
    pub fn rx(&self) -> &Receiver<CaptureMsg> {
        match self {
            Backend::Connector(c) => &c.capture.rx,
            Backend::Ptrace(p) => &p.rx,
        }
    }

    /// A sender for other threads (the signal thread) to queue notices.
    pub fn sender(&self) -> Sender<CaptureMsg> {
        match self {
            Backend::Connector(c) => c.capture.sender(),
            Backend::Ptrace(p) => p.sender(),
        }
    }

    /// Gives a processed batch back for reuse.
    pub fn recycle(&self, batch: Vec<Event>) {
        match self {
            Backend::Connector(c) => c.capture.recycle(batch),
            Backend::Ptrace(p) => p.recycle(batch),
        }
    }

    /// Asks for marker `n`: a [`Notice::Marker`] (ptrace) or a rename event the engine
    /// recognises (connector) that follows every event already generated.
    pub fn request_marker(&self, n: u32) -> Marker {
        match self {
            Backend::Connector(_) => Marker::Rename(connector::rename_marker(n)),
            Backend::Ptrace(p) => {
                p.request_marker(n);
                Marker::Notice(n)
            }
        }
    }

    /// Where exec details come from.
    pub fn take_details(&mut self) -> Details {
        match self {
            Backend::Connector(c) => Details::Proc(c.enricher.take()),
            Backend::Ptrace(_) => Details::InStream,
        }
    }

    /// Asks the backend to queue what it still has, account for final losses and stop; the last
    /// message is [`CaptureMsg::Done`].
    pub fn request_stop(&mut self) {
        match self {
            Backend::Connector(c) => c.request_stop(),
            Backend::Ptrace(p) => p.request_stop(),
        }
    }

    /// Receive buffer granted (connector), bytes.
    pub fn receive_buffer(&self) -> u64 {
        match self {
            Backend::Connector(c) => c.receive_buffer,
            Backend::Ptrace(_) => 0,
        }
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
