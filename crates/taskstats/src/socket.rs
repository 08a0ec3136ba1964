//! The taskstats socket: resolve the family, register for exits on every CPU, receive in
//! batches, validate the sender, account for loss.
//!
//! The socket itself — `recvmmsg` batches, the check that the kernel sent a datagram, the drop
//! counter, the waker, the bounded reply wait — is `proctrace-netlink`'s, which holds the
//! `unsafe` (one `sysconf` call is left here). This file is the generic netlink protocol on top:
//! resolving the `TASKSTATS` family, registering and deregistering the CPUs, parsing the records.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use crate::abi;
use crate::parse::{Parsed, Rejected, TaskExit, parse};

/// The netlink socket under a [`Listener`]: 32 messages per `recvmmsg` call, each in 4096 bytes.
/// An exit record is about 1.2 KiB with the group aggregate on v16/v17 (two `struct taskstats`
/// of 560 bytes); larger ones are reported as truncated.
type Socket = netlink::Socket<32, 4096>;

/// How to open the listener.
#[derive(Debug, Clone)]
pub struct Options {
    /// Receive buffer to request, in bytes (`SO_RCVBUFFORCE`, else `SO_RCVBUF` capped by
    /// `net.core.rmem_max`; the kernel doubles it). Each queued exit record is charged about
    /// 1.2 KiB of it (measured: 1221 bytes for single-threaded exits; a record with the thread
    /// group aggregate is twice as large), so the default holds about 27 000 records.
    pub recv_buffer: usize,
    /// CPUs to register, as a kernel cpulist ("0-3,8"). `None`: every possible CPU
    /// (`/sys/devices/system/cpu/possible`), so CPUs brought online later are covered.
    pub cpus: Option<String>,
    /// How long to wait for each of the kernel's replies while opening.
    pub reply_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recv_buffer: 16 << 20,
            cpus: None,
            reply_timeout: Duration::from_millis(1000),
        }
    }
}

/// Why taskstats could not be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No `TASKSTATS` generic netlink family: the kernel lacks `CONFIG_TASKSTATS`, or this is not
    /// the initial network namespace.
    #[error(
        "the kernel has no TASKSTATS generic netlink family here (CONFIG_TASKSTATS off, or not the initial network namespace)"
    )]
    NoFamily,
    /// Registering needs CAP_NET_ADMIN (`GENL_ADMIN_PERM`).
    #[error("the kernel refused to register for exit statistics ({0}); it needs CAP_NET_ADMIN: run as root")]
    PermissionDenied(io::Error),
    /// EINVAL on registering: not in the initial user and pid namespaces, or a bad CPU list.
    #[error(
        "the kernel refused the registration for CPUs {cpus}: taskstats exits are only for the initial user and pid namespaces, with CPUs among the possible ones ({})",
        possible_cpus()
    )]
    Refused {
        /// The CPU list sent.
        cpus: String,
    },
    /// No reply in time.
    #[error("no reply from the kernel to {0}")]
    NoReply(&'static str),
    /// Any other system call failure.
    #[error("{call}: {source}")]
    Sys {
        /// Which call failed.
        call: &'static str,
        /// The error.
        source: io::Error,
    },
}

/// Error from [`Listener::recv`].
#[derive(Debug, thiserror::Error)]
#[error("{call}: {source}")]
pub struct RecvError {
    /// Which call failed.
    pub call: &'static str,
    /// The error.
    pub source: io::Error,
}

/// Exit records the kernel generated for this socket that it did not receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    /// How many records (one per exiting task, thread or process).
    pub count: u64,
}

/// One item from the listener.
// Exits are nearly every item; boxing them would allocate once per record, while the callers
// reuse one Vec of these for every batch.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A task's exit record, in queue order.
    Exit(TaskExit),
    /// Records dropped by the socket since the last report (`SO_MEMINFO` drop counter: the
    /// kernel's unicast to a full socket increments it once per record).
    Loss(Loss),
}

/// Counters for everything the listener saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams received.
    pub datagrams: u64,
    /// Exit records accepted.
    pub exits: u64,
    /// Datagrams from a sender other than the kernel.
    pub rejected_sender: u64,
    /// Truncated datagrams (`MSG_TRUNC`).
    pub rejected_truncated: u64,
    /// Messages that did not parse.
    pub rejected_malformed: u64,
    /// `ENOBUFS` returned by `recvmmsg` (one per overflow episode).
    pub overflows: u64,
    /// Last value read of the socket's drop counter.
    pub socket_drops: u64,
    /// Records reported as lost in total.
    pub lost_reported: u64,
}

impl Stats {
    /// All rejected datagrams or messages.
    pub fn rejected(&self) -> u64 {
        self.rejected_sender + self.rejected_truncated + self.rejected_malformed
    }
}

/// Wakes a thread blocked in [`Listener::recv`] from another thread.
pub use netlink::Waker;

/// A socket registered for the exit records of every task on the given CPUs.
pub struct Listener {
    sock: Socket,
    accepting: Accepting,
    cpus: String,
    pending: Vec<TaskExit>,
    io_delay: bool,
    seq: u32,
}

/// What turns a datagram from the kernel into [`Received`] items, apart from the socket so that
/// the socket can hand datagrams to it.
struct Accepting {
    /// The `TASKSTATS` family id (0 until resolved).
    family: u16,
    /// The counters the socket does not keep (see [`Listener::stats`]).
    stats: Stats,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("sock", &self.sock)
            .field("family", &self.accepting.family)
            .field("cpus", &self.cpus)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn sys_err(netlink::Error { call, source }: netlink::Error) -> OpenError {
    OpenError::Sys { call, source }
}

impl From<netlink::Error> for RecvError {
    fn from(netlink::Error { call, source }: netlink::Error) -> RecvError {
        RecvError { call, source }
    }
}

/// The kernel's list of possible CPUs, else `0-(N-1)` from `sysconf`.
pub fn possible_cpus() -> String {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/possible") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1);
    format!("0-{}", n - 1)
}

/// Whether the kernel accounts block I/O delays now (`kernel.task_delayacct`); without it the
/// records' `blkio_delay_total` is 0 whatever the task waited.
pub fn io_delay_accounting() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/task_delayacct").is_ok_and(|s| s.trim() == "1")
}

impl Listener {
    /// Opens the socket, resolves the `TASKSTATS` family and registers for the exits on the
    /// CPUs; returns once the kernel acknowledged, so every task exiting afterwards on those CPUs
    /// is sent to this socket.
    pub fn open(opts: &Options) -> Result<Listener, OpenError> {
        let sock = Socket::open(netlink::Protocol::GENERIC, opts.recv_buffer).map_err(sys_err)?;
        // Groups 0: the kernel unicasts the records to this socket's port id, which it assigns.
        sock.bind(0).map_err(|source| OpenError::Sys {
            call: "bind(NETLINK_GENERIC)",
            source,
        })?;
        let mut l = Listener {
            sock,
            accepting: Accepting {
                family: 0,
                stats: Stats::default(),
            },
            cpus: opts.cpus.clone().unwrap_or_else(possible_cpus),
            pending: Vec::new(),
            io_delay: io_delay_accounting(),
            seq: std::process::id().wrapping_mul(2_654_435_761),
        };
        let seq = l.send(
            abi::GENL_ID_CTRL,
            abi::CTRL_CMD_GETFAMILY,
            abi::CTRL_ATTR_FAMILY_NAME,
            abi::TASKSTATS_GENL_NAME,
        )?;
        match l.wait_reply(seq, opts.reply_timeout, "CTRL_CMD_GETFAMILY")? {
            Reply::Family(id) => l.accepting.family = id,
            Reply::Ack(libc::ENOENT) => return Err(OpenError::NoFamily),
            Reply::Ack(e) => {
                return Err(OpenError::Sys {
                    call: "CTRL_CMD_GETFAMILY",
                    source: io::Error::from_raw_os_error(e),
                });
            }
        }
        let mut mask = l.cpus.clone().into_bytes();
        mask.push(0);
        let seq = l.send(
            l.accepting.family,
            abi::TASKSTATS_CMD_GET,
            abi::CMD_ATTR_REGISTER_CPUMASK,
            &mask,
        )?;
        match l.wait_reply(seq, opts.reply_timeout, "TASKSTATS_CMD_ATTR_REGISTER_CPUMASK")? {
            Reply::Ack(0) => {}
            Reply::Ack(libc::EPERM) => {
                return Err(OpenError::PermissionDenied(io::Error::from_raw_os_error(
                    libc::EPERM,
                )));
            }
            // EINVAL: not a subset of the possible CPUs, or not the initial namespaces; ERANGE: a
            // CPU number at or beyond the kernel's NR_CPUS.
            Reply::Ack(libc::EINVAL | libc::ERANGE) => {
                return Err(OpenError::Refused { cpus: l.cpus.clone() });
            }
            Reply::Ack(e) => {
                return Err(OpenError::Sys {
                    call: "TASKSTATS_CMD_ATTR_REGISTER_CPUMASK",
                    source: io::Error::from_raw_os_error(e),
                });
            }
            Reply::Family(_) => {
                return Err(OpenError::Sys {
                    call: "TASKSTATS_CMD_ATTR_REGISTER_CPUMASK",
                    source: io::Error::from_raw_os_error(libc::EPROTO),
                });
            }
        }
        Ok(l)
    }

    /// Sends a request with one attribute and `NLM_F_ACK`; returns its sequence number.
    fn send(&mut self, family: u16, cmd: u8, attr: u16, data: &[u8]) -> Result<u32, OpenError> {
        self.seq = self.seq.wrapping_add(1);
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
        let msg = abi::request(
            family,
            flags,
            self.seq,
            cmd,
            abi::TASKSTATS_GENL_VERSION,
            &[(attr, data)],
        );
        if let Err(e) = self.sock.send_to_kernel(&msg) {
            if e.raw_os_error() == Some(libc::EPERM) {
                return Err(OpenError::PermissionDenied(e));
            }
            return Err(OpenError::Sys {
                call: "sendto(NETLINK_GENERIC)",
                source: e,
            });
        }
        Ok(self.seq)
    }

    /// Waits for the reply to request `seq`, keeping exit records that arrive meanwhile.
    ///
    /// The kernel queues its reply before `sendto` returns, so the reply is normally read at
    /// once; [`netlink::Socket::wait_reply`] reads what is queued before giving up, so
    /// `NoReply` means nothing came.
    fn wait_reply(&mut self, seq: u32, timeout: Duration, what: &'static str) -> Result<Reply, OpenError> {
        let (accepting, pending) = (&mut self.accepting, &mut self.pending);
        let mut family = None;
        let reply = self
            .sock
            .wait_reply(timeout, |data| {
                let mut reply = None;
                for item in parse(data, accepting.family) {
                    match item {
                        Ok(Parsed::Family { id }) => family = Some(id),
                        Ok(Parsed::Ack { seq: s, errno }) if s == seq && reply.is_none() => {
                            reply = Some(match family {
                                Some(id) if errno == 0 => Reply::Family(id),
                                _ => Reply::Ack(errno),
                            });
                        }
                        Ok(Parsed::Exit(e)) => {
                            accepting.stats.exits += 1;
                            pending.push(e);
                        }
                        Ok(_) => {}
                        Err(_) => accepting.stats.rejected_malformed += 1,
                    }
                }
                reply
            })
            .map_err(sys_err)?;
        reply.ok_or(OpenError::NoReply(what))
    }

    /// The dynamic id of the `TASKSTATS` family (for [`parse`](crate::parse())).
    pub fn family(&self) -> u16 {
        self.accepting.family
    }

    /// The CPU list registered.
    pub fn cpus(&self) -> &str {
        &self.cpus
    }

    /// Receive buffer the kernel granted (already doubled), bytes.
    pub fn effective_buffer(&self) -> usize {
        self.sock.receive_buffer()
    }

    /// Whether block I/O delays were accounted when the listener opened.
    pub fn io_delay_accounting(&self) -> bool {
        self.io_delay
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let (c, mut s) = (self.sock.counters(), self.accepting.stats);
        (s.datagrams, s.overflows) = (c.datagrams, c.overflows);
        (s.rejected_sender, s.rejected_truncated) = (c.rejected_sender, c.rejected_truncated);
        s
    }

    /// A handle that wakes [`recv`](Self::recv) from another thread.
    pub fn waker(&self) -> Waker {
        self.sock.waker()
    }

    /// Keeps a copy of every datagram received, each prefixed by its length as a native u32
    /// (for recording fixtures).
    pub fn tap_raw(&mut self, on: bool) {
        self.sock.tap_raw(on);
    }

    /// Takes the datagrams kept by [`tap_raw`](Self::tap_raw).
    pub fn take_raw(&mut self) -> Vec<u8> {
        self.sock.take_raw()
    }

    /// Appends what arrived to `out`, waiting up to `timeout_ms` (-1: forever, 0: not at all)
    /// for the first datagram. Losses are reported where detected.
    pub fn recv(&mut self, out: &mut Vec<Received>, timeout_ms: i32) -> Result<(), RecvError> {
        if !self.pending.is_empty() {
            out.extend(self.pending.drain(..).map(Received::Exit));
            return Ok(());
        }
        let accepting = &mut self.accepting;
        let drained = self.sock.receive(timeout_ms, netlink::MAX_PER_DRAIN, |data| {
            accepting.datagram(data, out)
        })?;
        if drained.is_some_and(|d| d.overflowed) {
            // Every drop episode starts with ENOBUFS (the socket is marked congested until its
            // queue is drained), so reading the counter here and in finish() misses none, and
            // costs nothing when nothing was dropped.
            self.account_drops(out);
        }
        Ok(())
    }

    /// Reads the socket's drop counter.
    pub fn socket_drops(&self) -> Option<u64> {
        self.sock.drops()
    }

    /// Bytes the queued records hold of the receive buffer now (`SO_MEMINFO` `rmem_alloc`: skb
    /// truesize, what the buffer limit is compared with).
    pub fn queued_bytes(&self) -> Option<u64> {
        self.sock.queued_bytes()
    }

    fn account_drops(&mut self, out: &mut Vec<Received>) {
        let stats = &mut self.accepting.stats;
        let count = self
            .sock
            .report_drops(&mut stats.socket_drops, &mut stats.lost_reported);
        if count > 0 {
            out.push(Received::Loss(Loss { count }));
        }
    }

    /// Final accounting: drains what is queued and reports drops not yet reported. Call once,
    /// after the last [`recv`](Self::recv).
    pub fn finish(&mut self, out: &mut Vec<Received>) -> Result<(), RecvError> {
        // One recv handles at most MAX_PER_DRAIN messages: go on until the queue is empty.
        loop {
            let (before, had_pending) = (self.sock.counters().datagrams, !self.pending.is_empty());
            self.recv(out, 0)?;
            if !had_pending && self.sock.counters().datagrams == before {
                break;
            }
        }
        self.account_drops(out);
        Ok(())
    }
}

impl Accepting {
    /// Parses one datagram from the kernel into `out`.
    fn datagram(&mut self, data: &[u8], out: &mut Vec<Received>) {
        for item in parse(data, self.family) {
            match item {
                Ok(Parsed::Exit(e)) => {
                    self.stats.exits += 1;
                    out.push(Received::Exit(e));
                }
                Ok(_) => {}
                Err(
                    Rejected::Short { .. }
                    | Rejected::BadLength { .. }
                    | Rejected::BadAttribute { .. }
                    | Rejected::ShortStats { .. }
                    | Rejected::NoTask,
                ) => self.stats.rejected_malformed += 1,
            }
        }
    }
}

enum Reply {
    Family(u16),
    Ack(i32),
}

impl Drop for Listener {
    fn drop(&mut self) {
        // The kernel also drops a listener whose socket is gone the next time a send to it fails
        // (ECONNREFUSED); deregistering frees the per-CPU entries at once.
        if self.accepting.family != 0 {
            let mut mask = self.cpus.clone().into_bytes();
            mask.push(0);
            let _ = self.send(
                self.accepting.family,
                abi::TASKSTATS_CMD_GET,
                abi::CMD_ATTR_DEREGISTER_CPUMASK,
                &mask,
            );
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}
