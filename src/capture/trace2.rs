//! `run --trace2`: what the traced programs say about themselves over Trace2, joined to the
//! kernel-observed tree by pid.
//!
//! [`Trace2Listener::start`] binds an `af_unix` stream socket in a private directory (`mkdtemp`:
//! an unpredictable name, mode 0700, under `$XDG_RUNTIME_DIR` or the temp dir) and serves it from one thread. The command gets
//! [`child_env`] in its environment: `GIT_TRACE2_EVENT=af_unix:stream:<socket>` (and the same
//! variables under each extra prefix, for programs built on the `trace2` crate), with
//! `GIT_TRACE2_PARENT_SID` set to proctrace's own session, so every git process of the tree
//! connects once and writes its event stream there.
//!
//! Who wrote a line is asked of the kernel, not of the stream: the socket has `SO_PASSCRED`, so
//! each `recvmsg` returns bytes of one writer with its pid (the kernel never merges two writers'
//! data in one read). That also places lines right when a fork that inherited the descriptor
//! (git's detached `maintenance`, `gc --auto`) writes on its parent's connection.
//!
//! Lines are parsed with [`trace2::reader::parse_line`] and turned into [`Event::Region`] /
//! [`Event::Data`] by [`NoteBuilder`], times put on the model's clock with the header's
//! `real_minus_mono`; they are queued as [`CaptureMsg::Events`] on the backend's queue, in
//! batches at most [`SEND_EVERY`] apart. A note may arrive before the kernel's event for its
//! process has been processed: the session holds such notes back until it has (see
//! `engine::Session`). Malformed lines are counted, never fatal.
//!
//! [`Trace2Listener::finish`] drains: it reads what the finished processes wrote until every
//! connection is at end of file, or the grace period is over (a background process may keep its
//! connection, or an inherited copy of it, open forever), then stops the thread.

use std::ffi::OsString;
use std::io::{IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, UnixCredentials, getsockopt, recvmsg, setsockopt, sockopt,
};

use super::CaptureMsg;
use super::procfs;
use crate::input::notes::{Clock, NoteBuilder};
use crate::model::event::{Event, Pid};

/// The longest wait between reading a note and queueing it.
pub const SEND_EVERY: Duration = Duration::from_millis(10);

/// `GIT_TRACE2_EVENT_NESTING` given to the command unless the user set one: deep enough that
/// git's nested regions (fetch → fetch_refs → negotiation_v2 → round, 4 levels) all arrive.
pub const EVENT_NESTING: &str = "100";

/// A partial line longer than this is dropped and counted as malformed (a writer that never
/// ends its line must not grow memory without bound).
const MAX_LINE: usize = 4 << 20;

/// Most reads of one connection per turn of the loop ([`CHUNK`] bytes each).
const READS_PER_TURN: usize = 16;

/// Notes sent at once, however soon.
const BATCH_MAX: usize = 4096;

/// How long the listener waits for the model when it is behind, before it looks again.
const BEHIND_PAUSE: Duration = Duration::from_millis(2);

/// Most notes queued for the model and not yet taken by it: past it the listener stops reading
/// until the model catches up, so a process flooding the socket waits on its own writes (the
/// socket's buffer fills) instead of proctrace's memory growing with the backlog.
pub const NOTES_QUEUED_MAX: usize = 65_536;

/// Bytes read per `recvmsg`.
const CHUNK: usize = 64 << 10;

/// Most bytes of partial lines held over all connections: past it a connection's partial line
/// is dropped and counted as malformed (many writers each holding back a long line).
const MAX_PARTIAL: usize = 64 << 20;

/// Most regions a connection may have open (entered, not yet left): deeper `region_enter`s (and
/// their `region_leave`s) are dropped and counted ([`ListenerStats::too_deep`]). git nests to
/// [`EVENT_NESTING`] at most.
const MAX_OPEN: u32 = 256;

/// Most sessions a connection may enter regions in (one normally; a few when forks inherit it):
/// `region_enter`s of more are dropped and counted as too deep.
const MAX_SIDS: usize = 64;

/// What the listener saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ListenerStats {
    /// Connections accepted (one per Trace2-speaking process, normally).
    pub connections: u64,
    /// Lines read (a last line cut short counts).
    pub lines: u64,
    /// Lines that were not Trace2 events (bad JSON, missing fields), or cut short.
    pub malformed: u64,
    /// Regions and data points queued.
    pub notes: u64,
    /// Connections still open when the listener stopped (a process outlived the run).
    pub open_at_end: u64,
    /// Regions still open on those connections, ended at the run's end.
    pub cut_at_end: u64,
    /// `region_enter`/`region_leave` events dropped because a connection had `MAX_OPEN` regions
    /// open, or entered regions in `MAX_SIDS` sessions: a writer that never leaves them.
    pub too_deep: u64,
}

/// The variables `run --trace2` sets in the command's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    /// Name and value of each variable set.
    pub vars: Vec<(OsString, OsString)>,
    /// Event targets the user had set that the command's environment no longer has (they are
    /// taken over for the command).
    pub replaced: Vec<(String, String)>,
}

/// The environment for the command: for each prefix `P` (`GIT` first), `P_TRACE2_EVENT` points
/// at `socket`, `P_TRACE2_EVENT_BRIEF=false` (times are needed to place notes),
/// `P_TRACE2_PARENT_SID` is `parent_sid`, and `P_TRACE2_EVENT_NESTING` is [`EVENT_NESTING`]
/// unless `get` (the current environment) has a non-empty one.
pub fn child_env(
    socket: &Path,
    parent_sid: &str,
    prefixes: &[String],
    get: impl Fn(&str) -> Option<OsString>,
) -> ChildEnv {
    let mut target = OsString::from("af_unix:stream:");
    target.push(socket.as_os_str());
    let mut out = ChildEnv::default();
    let set = |vars: &mut Vec<(OsString, OsString)>, k: String, v: OsString| {
        vars.retain(|(n, _)| *n != *k);
        vars.push((OsString::from(k), v));
    };
    for p in prefixes {
        let event = format!("{p}_TRACE2_EVENT");
        if let Some(old) = get(&event).filter(|v| !v.is_empty())
            && old != target
        {
            out.replaced
                .push((event.clone(), old.to_string_lossy().into_owned()));
        }
        set(&mut out.vars, event, target.clone());
        set(&mut out.vars, format!("{p}_TRACE2_EVENT_BRIEF"), "false".into());
        set(&mut out.vars, format!("{p}_TRACE2_PARENT_SID"), parent_sid.into());
        let nesting = format!("{p}_TRACE2_EVENT_NESTING");
        if get(&nesting).is_none_or(|v| v.is_empty()) {
            set(&mut out.vars, nesting, EVENT_NESTING.into());
        }
    }
    out
}

/// A private directory holding the socket; removed (with the socket) on drop.
struct SocketDir {
    dir: PathBuf,
    path: PathBuf,
}

impl SocketDir {
    /// Creates `proctrace-XXXXXX` with `mkdtemp` (an unpredictable name, mode 0700) under
    /// `$XDG_RUNTIME_DIR`, or the temp dir when that is unset or the socket path would not fit
    /// in `sun_path`. A predictable name (it was `proctrace-<pid>-<n>`) let any user who
    /// pre-created those names make `run --trace2` fail.
    fn create() -> std::io::Result<SocketDir> {
        use std::os::unix::ffi::OsStringExt;
        let mut bases = Vec::new();
        if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
            bases.push(PathBuf::from(x));
        }
        bases.push(std::env::temp_dir());
        bases.push(PathBuf::from("/tmp"));
        let mut last = std::io::Error::other("no directory for the trace2 socket");
        for base in bases {
            let template = base.join("proctrace-XXXXXX");
            // sun_path holds 108 bytes with the terminating NUL.
            if template.join("trace2.sock").as_os_str().len() >= 108 {
                last = std::io::Error::other(format!(
                    "socket path under '{}' is too long for af_unix",
                    base.display()
                ));
                continue;
            }
            let Ok(template) = std::ffi::CString::new(template.into_os_string().into_vec()) else {
                continue;
            };
            let mut buf = template.into_bytes_with_nul();
            // SAFETY: buf is a NUL-terminated template ending in XXXXXX, which mkdtemp
            // overwrites in place (same length) with the name it created.
            let made = unsafe { libc::mkdtemp(buf.as_mut_ptr().cast()) };
            if made.is_null() {
                last = std::io::Error::last_os_error();
                continue;
            }
            buf.pop(); // the NUL
            let dir = PathBuf::from(OsString::from_vec(buf));
            let path = dir.join("trace2.sock");
            return Ok(SocketDir { dir, path });
        }
        Err(last)
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The running listener. Dropping it without [`finish`](Self::finish) stops the thread without
/// draining and removes the socket.
pub struct Trace2Listener {
    thread: Option<JoinHandle<ListenerStats>>,
    control: Sender<Instant>,
    wake: UnixStream,
    // Declared last: the socket goes away after the thread has stopped.
    dir: SocketDir,
}

impl Trace2Listener {
    /// Binds the socket and starts the thread; notes go to `tx` on `clock`.
    ///
    /// `queued` counts the notes sent on `tx` and not yet taken: the listener adds to it, the
    /// model's side ([`crate::engine::Session::notes_queued`]) takes away what it processed.
    pub fn start(
        clock: Clock,
        tx: Sender<CaptureMsg>,
        queued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> std::io::Result<Trace2Listener> {
        let dir = SocketDir::create()?;
        let listener = UnixListener::bind(&dir.path)?;
        listener.set_nonblocking(true)?;
        let (wake, wake_rx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        let (control, control_rx) = mpsc::channel();
        let server = Server {
            listener,
            wake: wake_rx,
            control: control_rx,
            tx,
            clock,
            notes: NoteBuilder::new(),
            conns: Vec::new(),
            batch: Vec::new(),
            batch_since: None,
            stats: ListenerStats::default(),
            chunk: vec![0; CHUNK],
            partial: 0,
            queued,
        };
        let thread = std::thread::Builder::new()
            .name("pt-trace2".into())
            .spawn(move || server.run())?;
        Ok(Trace2Listener {
            thread: Some(thread),
            control,
            wake,
            dir,
        })
    }

    /// The socket's path.
    pub fn socket_path(&self) -> &Path {
        &self.dir.path
    }

    /// Reads what is left until every connection is at end of file or `grace` has passed,
    /// queues the last notes and stops the thread.
    pub fn finish(mut self, grace: Duration) -> ListenerStats {
        self.stop(Instant::now() + grace)
    }

    fn stop(&mut self, deadline: Instant) -> ListenerStats {
        let _ = self.control.send(deadline);
        // One byte wakes the thread; a full socket means a wakeup is already pending.
        let _ = (&self.wake).write(&[1]);
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_default(),
            None => ListenerStats::default(),
        }
    }
}

impl Drop for Trace2Listener {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop(Instant::now());
        }
    }
}

struct Conn {
    stream: UnixStream,
    /// The process that connected, for bytes that come without credentials.
    peer: Pid,
    /// A partial line.
    buf: Vec<u8>,
    /// Sessions that entered regions on this connection.
    sids: Vec<String>,
    /// Latest note time on this connection.
    last_ts: u64,
    /// Regions entered and not yet left on this connection (at most [`MAX_OPEN`]).
    open: u32,
    /// `region_enter`s dropped past [`MAX_OPEN`] whose `region_leave`s are still to come (those
    /// are dropped too, so the others still pair).
    over: u32,
    eof: bool,
}

struct Server {
    listener: UnixListener,
    wake: UnixStream,
    control: Receiver<Instant>,
    tx: Sender<CaptureMsg>,
    clock: Clock,
    notes: NoteBuilder,
    conns: Vec<Conn>,
    batch: Vec<Event>,
    batch_since: Option<Instant>,
    stats: ListenerStats,
    chunk: Vec<u8>,
    /// Bytes of partial lines held over all connections (at most [`MAX_PARTIAL`]).
    partial: usize,
    /// Notes sent and not yet taken by the model (see [`NOTES_QUEUED_MAX`]).
    queued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Server {
    fn run(mut self) -> ListenerStats {
        let mut deadline: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let mut wait: Option<Duration> = self.batch_since.map(|t| SEND_EVERY.saturating_sub(now - t));
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(now);
                wait = Some(wait.map_or(left, |w| w.min(left)));
            }
            // The model is behind: read nothing more until it catches up (not while finishing:
            // then the model waits for this thread, and what was written is drained).
            let behind = deadline.is_none()
                && self.queued.load(std::sync::atomic::Ordering::Relaxed) >= NOTES_QUEUED_MAX;
            if behind {
                wait = Some(wait.map_or(BEHIND_PAUSE, |w| w.min(BEHIND_PAUSE)));
            }
            let (wake_ready, listen_ready, mut ready) = self.wait(wait, !behind);
            if behind {
                ready.clear();
            }
            if wake_ready {
                let mut sink = [0u8; 64];
                while matches!((&self.wake).read(&mut sink), Ok(n) if n > 0) {}
                while let Ok(d) = self.control.try_recv() {
                    deadline = Some(deadline.map_or(d, |old: Instant| old.min(d)));
                }
            }
            if listen_ready || deadline.is_some() {
                self.accept();
            }
            for i in ready {
                self.read_conn(i);
            }
            if deadline.is_some() {
                // Finishing: read whatever is buffered on every connection, not only the ones
                // poll named, so nothing already written is left behind.
                for i in 0..self.conns.len() {
                    if !self.conns[i].eof {
                        self.read_conn(i);
                    }
                }
            }
            self.conns.retain(|c| !c.eof);
            let due = self.batch_since.is_some_and(|t| t.elapsed() >= SEND_EVERY);
            if due {
                self.send();
            }
            if let Some(d) = deadline
                && (self.conns.is_empty() || Instant::now() >= d)
            {
                break;
            }
        }
        self.stats.open_at_end = self.conns.len() as u64;
        // A process that outlived the run (a daemon git started) may still be inside a region:
        // it ends with the run, so every output shows where the run left it.
        let end = self.clock.ns(trace2::Timestamp::now());
        for i in 0..self.conns.len() {
            for sid in std::mem::take(&mut self.conns[i].sids) {
                let closed = self.notes.close_session(&sid, end);
                self.stats.notes += closed.len() as u64;
                self.stats.cut_at_end += closed.len() as u64;
                self.batch.extend(closed);
            }
        }
        self.send();
        self.stats
    }

    /// Polls the wake socket, the listener and every connection; returns which are readable.
    /// (`conns`: the connections too; else only the wake socket and the listener.)
    fn wait(&self, timeout: Option<Duration>, conns: bool) -> (bool, bool, Vec<usize>) {
        let mut fds = Vec::with_capacity(self.conns.len() + 2);
        fds.push(PollFd::new(self.wake.as_fd(), PollFlags::POLLIN));
        fds.push(PollFd::new(self.listener.as_fd(), PollFlags::POLLIN));
        if conns {
            for c in &self.conns {
                fds.push(PollFd::new(c.stream.as_fd(), PollFlags::POLLIN));
            }
        }
        let timeout = match timeout {
            None => PollTimeout::NONE,
            // Round up so a wait of 0.3 ms is not a busy loop of zero timeouts.
            Some(d) => PollTimeout::try_from(d + Duration::from_micros(999)).unwrap_or(PollTimeout::MAX),
        };
        if poll(&mut fds, timeout).is_err() {
            // EINTR: look again.
            return (false, false, Vec::new());
        }
        let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
        let conns = fds[2..]
            .iter()
            .enumerate()
            .filter(|(_, f)| ready(f))
            .map(|(i, _)| i)
            .collect();
        (ready(&fds[0]), ready(&fds[1]), conns)
    }

    fn accept(&mut self) {
        while let Ok((stream, _)) = self.listener.accept() {
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            // Every read then says which process wrote the bytes it returns.
            let _ = setsockopt(&stream, sockopt::PassCred, &true);
            let peer = getsockopt(&stream, sockopt::PeerCredentials)
                .map(|c| c.pid())
                .unwrap_or(0);
            self.stats.connections += 1;
            self.conns.push(Conn {
                stream,
                peer,
                buf: Vec::new(),
                sids: Vec::new(),
                last_ts: 0,
                open: 0,
                over: 0,
                eof: false,
            });
        }
    }

    /// Reads what is available on connection `i`, handling each complete line: at most
    /// [`READS_PER_TURN`] reads, so a writer as fast as this thread cannot keep it here (and its
    /// notes unsent) for ever; the rest is read on the next turn.
    fn read_conn(&mut self, i: usize) {
        for _ in 0..READS_PER_TURN {
            let conn = &mut self.conns[i];
            let fd = conn.stream.as_raw_fd();
            let mut cmsg = nix::cmsg_space!(UnixCredentials);
            let mut iov = [IoSliceMut::new(&mut self.chunk)];
            let (n, pid) = match recvmsg::<()>(fd, &mut iov, Some(&mut cmsg), MsgFlags::MSG_DONTWAIT) {
                Ok(m) => {
                    let pid = m
                        .cmsgs()
                        .ok()
                        .and_then(|mut it| {
                            it.find_map(|c| match c {
                                ControlMessageOwned::ScmCredentials(cr) => Some(cr.pid()),
                                _ => None,
                            })
                        })
                        .filter(|&p| p > 0)
                        .unwrap_or(conn.peer);
                    (m.bytes, pid)
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => return,
                Err(_) => (0, 0),
            };
            if n == 0 {
                self.close_conn(i);
                return;
            }
            self.take_bytes(i, n, pid);
            if self.batch.len() >= BATCH_MAX {
                self.send();
            }
        }
    }

    /// Splits the `n` bytes just read into lines; `pid` wrote them.
    fn take_bytes(&mut self, i: usize, n: usize, pid: Pid) {
        let mut data = &self.chunk[..n];
        while let Some(nl) = data.iter().position(|&b| b == b'\n') {
            let (head, rest) = data.split_at(nl);
            data = &rest[1..];
            let conn = &mut self.conns[i];
            if conn.buf.is_empty() {
                handle_line(
                    head,
                    pid,
                    conn,
                    &mut self.notes,
                    &self.clock,
                    &mut self.stats,
                    &mut self.batch,
                );
            } else {
                self.partial -= conn.buf.len();
                let mut line = std::mem::take(&mut conn.buf);
                line.extend_from_slice(head);
                handle_line(
                    &line,
                    pid,
                    conn,
                    &mut self.notes,
                    &self.clock,
                    &mut self.stats,
                    &mut self.batch,
                );
                line.clear();
                // A long line's buffer is not kept for the next one.
                if line.capacity() <= CHUNK {
                    conn.buf = line;
                }
            }
        }
        let conn = &mut self.conns[i];
        if conn.buf.len() + data.len() > MAX_LINE || self.partial + data.len() > MAX_PARTIAL {
            self.stats.lines += 1;
            self.stats.malformed += 1;
            self.partial -= conn.buf.len();
            conn.buf = Vec::new();
        } else {
            self.partial += data.len();
            conn.buf.extend_from_slice(data);
        }
        if !self.batch.is_empty() && self.batch_since.is_none() {
            self.batch_since = Some(Instant::now());
        }
    }

    /// End of file: every writer is gone. A partial last line is a process killed mid-write;
    /// regions its sessions left open end at the last time seen on the connection.
    fn close_conn(&mut self, i: usize) {
        let conn = &mut self.conns[i];
        conn.eof = true;
        if !conn.buf.is_empty() {
            self.stats.lines += 1;
            self.stats.malformed += 1;
            self.partial -= conn.buf.len();
            conn.buf = Vec::new();
        }
        for sid in std::mem::take(&mut conn.sids) {
            let closed = self.notes.close_session(&sid, conn.last_ts);
            self.stats.notes += closed.len() as u64;
            self.batch.extend(closed);
        }
        if !self.batch.is_empty() && self.batch_since.is_none() {
            self.batch_since = Some(Instant::now());
        }
    }

    fn send(&mut self) {
        self.batch_since = None;
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.queued
                .fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
            // The model loop is gone only when the run is over: nothing left to tell.
            let _ = self.tx.send(CaptureMsg::Events(batch));
        }
    }
}

/// One line from process `pid` on `conn`.
fn handle_line(
    line: &[u8],
    pid: Pid,
    conn: &mut Conn,
    notes: &mut NoteBuilder,
    clock: &Clock,
    stats: &mut ListenerStats,
    batch: &mut Vec<Event>,
) {
    stats.lines += 1;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    // git writes argv and paths as their bytes: held as text (crate::model::bytes), not lost.
    let mut held = Vec::new();
    let line = match !line.is_ascii() && crate::model::bytes::hold_line(line, &mut held) {
        true => held.as_slice(),
        false => line,
    };
    let ev = match trace2::reader::parse_line(line) {
        Ok((ev, _)) => ev,
        Err(_) => {
            stats.malformed += 1;
            return;
        }
    };
    // Brief streams carry no time: the moment it arrived is the closest we know.
    let ts = ev.time.map_or_else(procfs::mono_now, |t| clock.ns(t));
    conn.last_ts = conn.last_ts.max(ts);
    match ev.kind {
        // A writer that enters regions and never leaves them must not grow memory: past
        // MAX_OPEN open regions (or MAX_SIDS sessions) on a connection, enters are dropped,
        // and as many leaves after them, so that the rest still pair.
        trace2::EventKind::RegionEnter { .. } => {
            let new_sid = !conn.sids.iter().any(|s| *s == *ev.sid);
            if conn.over > 0 || conn.open >= MAX_OPEN || (new_sid && conn.sids.len() >= MAX_SIDS) {
                conn.over += 1;
                stats.too_deep += 1;
                return;
            }
            conn.open += 1;
            if new_sid {
                conn.sids.push(ev.sid.to_string());
            }
        }
        trace2::EventKind::RegionLeave { .. } => {
            if conn.over > 0 {
                conn.over -= 1;
                stats.too_deep += 1;
                return;
            }
            conn.open = conn.open.saturating_sub(1);
        }
        // The session is over: git unwinds the regions still open without a leave.
        trace2::EventKind::Atexit { .. } | trace2::EventKind::Signal { .. } => {
            let closed = notes.close_session(&ev.sid, ts);
            conn.open = conn.open.saturating_sub(closed.len() as u32);
            conn.over = 0;
            conn.sids.retain(|s| *s != *ev.sid);
            stats.notes += closed.len() as u64;
            batch.extend(closed);
            return;
        }
        _ => {}
    }
    if let Some(e) = notes.on_event(pid, ts, &ev) {
        stats.notes += 1;
        batch.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_env_sets_every_prefix_and_keeps_the_users_nesting() {
        let user = |k: &str| match k {
            "GIT_TRACE2_EVENT" => Some(OsString::from("/tmp/mine.json")),
            "MYAPP_TRACE2_EVENT_NESTING" => Some(OsString::from("3")),
            _ => None,
        };
        let env = child_env(
            Path::new("/run/x/trace2.sock"),
            "SID",
            &["GIT".into(), "MYAPP".into()],
            user,
        );
        let get = |k: &str| {
            env.vars
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(
            get("GIT_TRACE2_EVENT").as_deref(),
            Some("af_unix:stream:/run/x/trace2.sock")
        );
        assert_eq!(
            get("MYAPP_TRACE2_EVENT").as_deref(),
            Some("af_unix:stream:/run/x/trace2.sock")
        );
        assert_eq!(get("GIT_TRACE2_PARENT_SID").as_deref(), Some("SID"));
        assert_eq!(get("MYAPP_TRACE2_PARENT_SID").as_deref(), Some("SID"));
        assert_eq!(get("GIT_TRACE2_EVENT_NESTING").as_deref(), Some(EVENT_NESTING));
        assert_eq!(get("MYAPP_TRACE2_EVENT_NESTING"), None);
        assert_eq!(get("GIT_TRACE2_EVENT_BRIEF").as_deref(), Some("false"));
        assert_eq!(
            env.replaced,
            vec![("GIT_TRACE2_EVENT".to_string(), "/tmp/mine.json".to_string())]
        );
    }

    /// Real sockets, real child processes: lines are attributed to the process that wrote them
    /// (even on an inherited connection), regions pair up, bad lines are counted, and `finish`
    /// drains what was written before it.
    #[test]
    fn attributes_lines_to_their_writer_and_drains_at_finish() {
        let (tx, rx) = mpsc::channel();
        let l = Trace2Listener::start(Clock { offset_ns: 0 }, tx, Default::default()).unwrap();
        let sock = l.socket_path().to_path_buf();
        let meta = std::fs::metadata(sock.parent().unwrap()).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o700
        );
        // This process connects and writes the enter; a child `sh` that inherits the
        // connection (as git's detached forks do) writes the leave.
        let client = UnixStream::connect(&sock).unwrap();
        let enter = r#"{"event":"region_enter","sid":"S1","thread":"main","time":"2026-01-01T00:00:01.000000Z","nesting":1,"category":"c","label":"outer"}"#;
        let leave = r#"{"event":"region_leave","sid":"S1","thread":"main","time":"2026-01-01T00:00:02.000000Z","t_rel":1.0,"nesting":1,"category":"c","label":"outer"}"#;
        {
            let mut c = &client;
            writeln!(c, "{enter}").unwrap();
            writeln!(c, "not json").unwrap();
        }
        // The leave comes from a child that inherited the descriptor.
        let fd = std::os::fd::OwnedFd::from(client.try_clone().unwrap());
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' '{leave}' >&0"))
            .stdin(std::process::Stdio::from(fd))
            .spawn()
            .unwrap();
        let child_pid = child.id() as Pid;
        assert!(child.wait().unwrap().success());
        drop(client);
        let stats = l.finish(Duration::from_secs(5));
        assert_eq!(stats.connections, 1);
        assert_eq!(stats.lines, 3);
        assert_eq!(stats.malformed, 1);
        assert_eq!(stats.open_at_end, 0);
        let mut got = Vec::new();
        while let Ok(m) = rx.try_recv() {
            if let CaptureMsg::Events(b) = m {
                got.extend(b);
            }
        }
        assert_eq!(got.len(), 1, "{got:?}");
        match &got[0] {
            Event::Region { tgid, region } => {
                // Paired with the enter written by this process, reported by the writer of the
                // leave: the sh child.
                assert_eq!(*tgid, child_pid);
                assert_eq!(region.label, "outer");
                assert_eq!(region.end - region.ts, 1_000_000_000);
            }
            other => panic!("{other:?}"),
        }
        assert!(!sock.exists());
    }
    /// A process that outlives the run, still inside a region when the listener stops: the
    /// region ends at the run's end (not lost), and the connection is counted as still open.
    #[test]
    fn a_region_still_open_when_the_run_ends_ends_with_the_run() {
        let (tx, rx) = mpsc::channel();
        let l = Trace2Listener::start(Clock { offset_ns: 0 }, tx, Default::default()).unwrap();
        let sock = l.socket_path().to_path_buf();
        let now = trace2::Timestamp::now();
        let mut time = Vec::new();
        now.write_utc_extended(&mut time);
        // A daemon (a real process, holding its own connection) enters a region and stays.
        let enter = format!(
            r#"{{"event":"region_enter","sid":"D1","thread":"main","time":"{}","nesting":1,"category":"daemon","label":"serve"}}"#,
            String::from_utf8_lossy(&time)
        );
        let script = format!(
            "exec python3 -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode()+b\"\\n\"); print(\"up\", flush=True); time.sleep(60)' '{}' '{enter}'",
            sock.display()
        );
        let mut daemon = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = daemon.id() as Pid;
        let mut up = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(daemon.stdout.take().unwrap()),
            &mut up,
        )
        .unwrap();
        assert_eq!(up.trim(), "up");
        let stats = l.finish(Duration::from_millis(300));
        let end = Clock { offset_ns: 0 }.ns(trace2::Timestamp::now());
        let _ = daemon.kill();
        let _ = daemon.wait();
        assert_eq!(stats.open_at_end, 1, "{stats:?}");
        assert_eq!(stats.cut_at_end, 1, "{stats:?}");
        let got: Vec<Event> = rx
            .try_iter()
            .filter_map(|m| match m {
                CaptureMsg::Events(b) => Some(b),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(got.len(), 1, "{got:?}");
        let Event::Region { tgid, region } = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!(*tgid, pid);
        assert_eq!(region.label, "serve");
        assert_eq!(region.ts, Clock { offset_ns: 0 }.ns(now));
        // Ended when the listener stopped: after the grace, before this test read the clock.
        assert!(
            region.end >= region.ts + 300_000_000 && region.end <= end,
            "{region:?}"
        );
    }
}
