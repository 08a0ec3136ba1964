//! The connector socket: subscribe, receive in batches, validate the sender, account for loss.
//!
//! The socket itself — `recvmmsg` batches, the check that the kernel sent a datagram, the drop
//! counter, the waker, the bounded reply wait — is `proctrace-netlink`'s, which holds the
//! `unsafe`. This file is the connector's protocol on top of it: the LISTEN handshake and its
//! ack, the event-type filter, the sequence-gap accounting. Policy (which processes matter, what
//! to do with a lost event) belongs to the caller; this layer only guarantees that nothing the
//! kernel drops goes unreported and that nothing but the kernel is believed.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use crate::abi::{self, what};
use crate::event::{EventKind, ProcEvent};
use crate::loss::SeqGaps;
use crate::parse::{Rejected, parse};

/// Bytes of receive buffer the kernel charges per queued event (skb truesize).
pub const BYTES_PER_QUEUED_EVENT: usize = 832;
/// Sockets opened by this process, to keep their ack numbers apart.
static SOCKETS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// The netlink socket under a [`Connector`]: 64 messages per `recvmmsg` call, each in 256 bytes
/// (events are 76 bytes; anything larger is forged or foreign).
type Socket = netlink::Socket<64, 256>;

/// How to open the connector.
#[derive(Debug, Clone)]
pub struct Options {
    /// Receive buffer to request, in bytes. The kernel doubles it and charges
    /// [`BYTES_PER_QUEUED_EVENT`] per queued event. `SO_RCVBUFFORCE` is tried first (needs
    /// CAP_NET_ADMIN), then `SO_RCVBUF` (capped by `net.core.rmem_max`).
    pub recv_buffer: usize,
    /// Kernel-side event filter (6.6+), a mask of [`what`] bits. `None` or `what::ALL` receives
    /// everything and allows exact loss accounting from sequence gaps.
    pub event_mask: Option<u32>,
    /// How long to wait for the kernel's acknowledgement of LISTEN.
    pub ack_timeout: Duration,
    /// How `event_mask` is applied.
    pub filter: FilterMethod,
}

/// Where the event-type filter runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterMethod {
    /// The kernel's own filter (6.6+), else a classic BPF socket filter.
    #[default]
    Auto,
    /// Only the kernel's 6.6+ `proc_input` filter.
    Kernel,
    /// A classic BPF socket filter on `what` (any kernel). `NONZERO_EXIT` passes every EXIT.
    Bpf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            recv_buffer: 32 << 20,
            event_mask: None,
            ack_timeout: Duration::from_millis(500),
            filter: FilterMethod::Auto,
        }
    }
}

/// Why the connector could not be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The kernel refused: before 6.6 listening needs CAP_NET_ADMIN.
    #[error(
        "the kernel refused to subscribe to process events ({0}); kernels before 6.6 need CAP_NET_ADMIN: run as root or grant the capability"
    )]
    PermissionDenied(io::Error),
    /// The socket is in a network namespace other than the initial one.
    #[error(
        "the process events connector is not reachable from this network namespace (ECONNREFUSED); run in the host's network namespace"
    )]
    NetworkNamespace,
    /// No acknowledgement: no cn_proc in the kernel, or a non-initial user/pid namespace.
    #[error(
        "no answer from the process events connector: {0}; it answers only in the initial user and pid namespaces"
    )]
    NoAck(&'static str),
    /// Any other system call failure.
    #[error("{call}: {source}")]
    Sys {
        /// Which call failed.
        call: &'static str,
        /// The error.
        source: io::Error,
    },
}

/// Error from [`Connector::recv`].
#[derive(Debug, thiserror::Error)]
pub enum RecvError {
    /// A system call failed in a way draining cannot recover from.
    #[error("{call}: {source}")]
    Sys {
        /// Which call failed.
        call: &'static str,
        /// The error.
        source: io::Error,
    },
}

/// Where a loss figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossSource {
    /// Gaps in a CPU's sequence numbers (exact when no filter is active).
    SeqGap,
    /// The socket's drop counter (`SO_MEMINFO`), for drops not yet revealed by a gap.
    SocketDrops,
}

/// Events the kernel generated that this socket did not receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    /// How many events.
    pub count: u64,
    /// Timestamp of the event that revealed the loss, if any.
    pub timestamp_ns: Option<u64>,
    /// How it was detected.
    pub source: LossSource,
}

/// One item from the connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// An event, in queue (causal) order.
    Event(ProcEvent),
    /// A loss, reported at the position in the stream where it was detected.
    Loss(Loss),
}

/// Counters for everything the connector saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams received from the kernel.
    pub datagrams: u64,
    /// Events accepted (acks excluded).
    pub events: u64,
    /// Datagrams from a sender other than the kernel.
    pub rejected_sender: u64,
    /// Truncated datagrams (`MSG_TRUNC`).
    pub rejected_truncated: u64,
    /// Messages whose lengths, type or connector id were wrong.
    pub rejected_malformed: u64,
    /// Overflow episodes reported by `ENOBUFS`.
    pub overflows: u64,
    /// Sum of per-CPU sequence gaps.
    pub seq_gaps: u64,
    /// Last value read of the socket's drop counter.
    pub socket_drops: u64,
    /// Events reported as lost in total.
    pub lost_reported: u64,
}

impl Stats {
    /// All rejected datagrams or messages.
    pub fn rejected(&self) -> u64 {
        self.rejected_sender + self.rejected_truncated + self.rejected_malformed
    }
}

/// Wakes a thread blocked in [`Connector::recv`] from another thread.
pub use netlink::Waker;

/// A subscribed process events connector socket.
pub struct Connector {
    sock: Socket,
    accepting: Accepting,
    /// Events that arrived while waiting for the LISTEN ack.
    pending: Vec<ProcEvent>,
    kernel_filter: bool,
    seq_counter: u32,
}

/// What turns a datagram from the kernel into [`Received`] items: the state each datagram is
/// checked against, apart from the socket so that the socket can hand datagrams to it.
struct Accepting {
    filtered: bool,
    gaps: SeqGaps,
    /// The counters the socket does not keep (see [`Connector::stats`]).
    stats: Stats,
    keep_acks: bool,
    mask: Option<u32>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("sock", &self.sock)
            .field("filtered", &self.accepting.filtered)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn sys_err(netlink::Error { call, source }: netlink::Error) -> OpenError {
    OpenError::Sys { call, source }
}

fn recv_err(netlink::Error { call, source }: netlink::Error) -> RecvError {
    RecvError::Sys { call, source }
}

impl Connector {
    /// Opens the socket, sizes its buffer, binds to the process events group and subscribes,
    /// returning only once the kernel has acknowledged: every event generated after this returns
    /// is offered to the socket.
    pub fn open(opts: &Options) -> Result<Connector, OpenError> {
        let sock = Socket::open(netlink::Protocol::CONNECTOR, opts.recv_buffer).map_err(sys_err)?;
        if let Err(e) = sock.bind(abi::CN_PROC_GROUP) {
            if e.raw_os_error() == Some(libc::EPERM) {
                return Err(OpenError::PermissionDenied(e));
            }
            return Err(OpenError::Sys {
                call: "bind(NETLINK_CONNECTOR, CN_IDX_PROC)",
                source: e,
            });
        }

        let mut c = Connector {
            sock,
            accepting: Accepting {
                filtered: false,
                gaps: SeqGaps::new(),
                stats: Stats::default(),
                keep_acks: true,
                mask: None,
            },
            pending: Vec::new(),
            kernel_filter: false,
            // Acks are multicast to every listener: make this socket's ack numbers its own.
            seq_counter: std::process::id().wrapping_mul(2_654_435_761).wrapping_add(
                SOCKETS
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    .wrapping_mul(0x1000_0000),
            ),
        };
        // 6.6+ form first (mask 0 = all events; this one is acked), then the legacy 4-byte op.
        let acked = match c.control(abi::PROC_CN_MCAST_LISTEN, Some(what::ALL), opts.ack_timeout)? {
            Some(0) => true,
            Some(err) => return Err(ack_error(err)),
            None => false,
        };
        if !acked {
            match c.control(abi::PROC_CN_MCAST_LISTEN, None, opts.ack_timeout)? {
                Some(0) => {}
                Some(err) => return Err(ack_error(err)),
                None => {
                    let has_cn_proc = std::fs::read_to_string("/proc/net/connector")
                        .map(|s| s.contains("cn_proc"))
                        .unwrap_or(true);
                    return Err(OpenError::NoAck(if has_cn_proc {
                        "LISTEN was not acknowledged (a user or pid namespace other than the initial one?)"
                    } else {
                        "this kernel has no cn_proc (CONFIG_PROC_EVENTS is off)"
                    }));
                }
            }
        } else {
            c.kernel_filter = true;
        }
        if let Some(mask) = opts.event_mask
            && mask & what::ALL != what::ALL
            && mask & what::ALL != 0
        {
            let use_kernel = match opts.filter {
                FilterMethod::Auto => c.kernel_filter,
                FilterMethod::Kernel if !c.kernel_filter => {
                    return Err(OpenError::Sys {
                        call: "event filter",
                        source: io::Error::new(
                            io::ErrorKind::Unsupported,
                            "this kernel has no event-type filter (needs 6.6+)",
                        ),
                    });
                }
                FilterMethod::Kernel => true,
                FilterMethod::Bpf => false,
            };
            if use_kernel {
                // A masked socket never sees its own ack: send and do not wait.
                c.send_control(abi::PROC_CN_MCAST_LISTEN, Some(mask))?;
            } else {
                attach_bpf_filter(&c.sock, mask)?;
            }
            c.accepting.filtered = true;
            c.accepting.mask = Some(mask);
        }
        c.accepting.keep_acks = false;
        Ok(c)
    }

    fn send_control(&mut self, op: u32, mask: Option<u32>) -> Result<u32, OpenError> {
        self.seq_counter = self.seq_counter.wrapping_add(1);
        let ack = self.seq_counter;
        let msg = abi::control_message(op, mask, ack, ack);
        if let Err(e) = self.sock.send_to_kernel(&msg) {
            return Err(match e.raw_os_error() {
                Some(libc::ECONNREFUSED) => OpenError::NetworkNamespace,
                Some(libc::EPERM) => OpenError::PermissionDenied(e),
                _ => OpenError::Sys {
                    call: "sendto(proc connector)",
                    source: e,
                },
            });
        }
        Ok(ack)
    }

    /// Sends a control message and waits for its ack. Returns the ack's errno, or `None` when no
    /// ack came in time. Events that arrive meanwhile are kept for the first `recv`.
    fn control(&mut self, op: u32, mask: Option<u32>, timeout: Duration) -> Result<Option<u32>, OpenError> {
        let ack = self.send_control(op, mask)?;
        let (accepting, pending) = (&mut self.accepting, &mut self.pending);
        let mut items = Vec::new();
        self.sock
            .wait_reply(timeout, |data| {
                items.clear();
                accepting.datagram(data, &mut items);
                let mut found = None;
                for it in &items {
                    if let Received::Event(ev) = it {
                        match ev.kind {
                            EventKind::Ack { ack: a, err } if a == ack.wrapping_add(1) => found = Some(err),
                            EventKind::Ack { .. } => {}
                            _ => pending.push(*ev),
                        }
                    }
                }
                found
            })
            .map_err(sys_err)
    }

    /// Starts (or stops) keeping a copy of every accepted kernel datagram, each prefixed by its
    /// length as a native-endian u32: the format of the recorded fixtures. Not for production.
    pub fn tap_raw(&mut self, on: bool) {
        self.sock.tap_raw(on);
    }

    /// Takes the datagrams recorded since the last call (see [`tap_raw`](Self::tap_raw)).
    pub fn take_raw(&mut self) -> Vec<u8> {
        self.sock.take_raw()
    }

    /// A handle that interrupts a blocking [`recv`](Self::recv) from another thread.
    pub fn waker(&self) -> Waker {
        self.sock.waker()
    }

    /// Sleeps up to `dur` without reading, returning early on a [`Waker::wake`]. Lets a caller
    /// batch a busy stream (events queue in the kernel meanwhile) and still stop promptly.
    pub fn pause(&self, dur: Duration) {
        // A wake is left pending: the next recv sees it and drains the eventfd.
        self.sock.pause(dur);
    }

    /// Whether a kernel-side event filter is active (sequence gaps are then not losses).
    pub fn is_filtered(&self) -> bool {
        self.accepting.filtered
    }

    /// Whether the kernel understood the 6.6+ `proc_input` subscription.
    pub fn has_kernel_filter(&self) -> bool {
        self.kernel_filter
    }

    /// The receive buffer the kernel granted, in bytes (twice the request, within limits).
    pub fn receive_buffer(&self) -> usize {
        self.sock.receive_buffer()
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let (c, mut s) = (self.sock.counters(), self.accepting.stats);
        (s.datagrams, s.overflows) = (c.datagrams, c.overflows);
        (s.rejected_sender, s.rejected_truncated) = (c.rejected_sender, c.rejected_truncated);
        s
    }

    /// Waits up to `timeout_ms` (-1: forever, 0: not at all) for events, then drains the socket
    /// until it is empty (or a large batch is collected), appending to `out` in queue order.
    /// Returns the number of items appended; 0 after a timeout or a [`Waker::wake`].
    pub fn recv(&mut self, out: &mut Vec<Received>, timeout_ms: i32) -> Result<usize, RecvError> {
        let start = out.len();
        if !self.pending.is_empty() {
            let mask = self.accepting.mask;
            for ev in self.pending.drain(..) {
                if matches!(ev.kind, EventKind::Ack { .. }) || mask.is_some_and(|m| !wanted(m, &ev.kind)) {
                    continue;
                }
                self.accepting.stats.events += 1;
                out.push(Received::Event(ev));
            }
        }
        let timeout_ms = if out.len() > start { 0 } else { timeout_ms };
        let accepting = &mut self.accepting;
        let Some(drained) = self
            .sock
            .receive(timeout_ms, netlink::MAX_PER_DRAIN, |data| {
                accepting.datagram(data, out)
            })
            .map_err(recv_err)?
        else {
            return Ok(out.len() - start);
        };
        if self.accepting.filtered {
            self.account_socket_drops(out);
        } else if drained.overflowed {
            // Gaps in the sequence numbers will report these exactly as later events arrive.
            let stats = &mut self.accepting.stats;
            stats.socket_drops = self.sock.drops().unwrap_or(stats.socket_drops);
        }
        Ok(out.len() - start)
    }

    /// Reads the socket's drop counter.
    pub fn socket_drops(&self) -> Option<u64> {
        self.sock.drops()
    }

    /// Reports drops not yet reported. Filtered sockets learn of every drop this way; unfiltered
    /// ones only of drops after the last event received on their CPU (earlier ones surface as
    /// sequence gaps), so they call this once, at the end.
    fn account_socket_drops(&mut self, out: &mut Vec<Received>) {
        let stats = &mut self.accepting.stats;
        let count = self
            .sock
            .report_drops(&mut stats.socket_drops, &mut stats.lost_reported);
        if count > 0 {
            out.push(Received::Loss(Loss {
                count,
                timestamp_ns: None,
                source: LossSource::SocketDrops,
            }));
        }
    }

    /// Final accounting: reports drops that no later event revealed as a gap. Call once, after the
    /// last [`recv`](Self::recv).
    pub fn finish(&mut self, out: &mut Vec<Received>) {
        self.account_socket_drops(out);
    }
}

impl Accepting {
    /// Parses one datagram from the kernel into `out`: gaps in a CPU's sequence become losses
    /// (unless a filter makes gaps normal), unwanted and control messages are left out.
    fn datagram(&mut self, data: &[u8], out: &mut Vec<Received>) {
        for item in parse(data) {
            match item {
                Ok(ev) => {
                    if !self.filtered {
                        let missing = self.gaps.observe(ev.cpu, ev.seq);
                        if missing > 0 {
                            self.stats.seq_gaps += missing;
                            self.stats.lost_reported += missing;
                            out.push(Received::Loss(Loss {
                                count: missing,
                                timestamp_ns: Some(ev.timestamp_ns),
                                source: LossSource::SeqGap,
                            }));
                        }
                    }
                    if self.mask.is_some_and(|m| !wanted(m, &ev.kind)) {
                        // Queued before the filter took effect: the caller asked not to see it.
                        continue;
                    }
                    if matches!(ev.kind, EventKind::Ack { .. }) {
                        // Control replies (ours and, multicast, everyone else's) are not events.
                        if self.keep_acks {
                            out.push(Received::Event(ev));
                        }
                    } else {
                        self.stats.events += 1;
                        out.push(Received::Event(ev));
                    }
                }
                Err(Rejected::Short { .. })
                | Err(Rejected::BadLength { .. })
                | Err(Rejected::WrongType(_))
                | Err(Rejected::WrongId { .. })
                | Err(Rejected::BadPayloadLength { .. }) => self.stats.rejected_malformed += 1,
            }
        }
    }
}

/// Whether an event passes an event-type mask (acks always do).
fn wanted(mask: u32, kind: &EventKind) -> bool {
    let what = match kind {
        EventKind::Ack { .. } => return true,
        EventKind::Fork { .. } => what::FORK,
        EventKind::Exec { .. } => what::EXEC,
        EventKind::Uid { .. } => what::UID,
        EventKind::Gid { .. } => what::GID,
        EventKind::Sid { .. } => what::SID,
        EventKind::Ptrace { .. } => what::PTRACE,
        EventKind::Comm { .. } => what::COMM,
        EventKind::Coredump { .. } => what::COREDUMP,
        EventKind::Exit { exit_code, .. } => {
            return mask & what::EXIT != 0 || (mask & what::NONZERO_EXIT != 0 && *exit_code != 0);
        }
        EventKind::Unknown { what } => *what,
    };
    mask & what != 0
}

fn ack_error(err: u32) -> OpenError {
    let e = io::Error::from_raw_os_error(err as i32);
    if err as i32 == libc::EPERM {
        OpenError::PermissionDenied(e)
    } else {
        OpenError::Sys {
            call: "PROC_CN_MCAST_LISTEN",
            source: e,
        }
    }
}

/// Classic BPF on `what` (datagram offset 36): keep acks (0) and events whose type is in `mask`.
/// `BPF_LD|BPF_W|BPF_ABS` reads in network byte order, so the mask is compared in that order.
fn attach_bpf_filter(sock: &Socket, mask: u32) -> Result<(), OpenError> {
    let mut mask = mask;
    if mask & what::NONZERO_EXIT != 0 {
        mask |= what::EXIT; // exit codes are not inspected here: a superset
    }
    let wire_mask = u32::from_be_bytes(mask.to_ne_bytes());
    let ins = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let prog = [
        ins(0x20, 0, 0, abi::EVENT_OFFSET as u32), // ld [36]
        ins(0x15, 2, 0, 0),                        // jeq #0 (ack) → accept
        ins(0x45, 1, 0, wire_mask),                // jset #mask → accept
        ins(0x06, 0, 0, 0),                        // drop
        ins(0x06, 0, 0, u32::MAX),                 // accept
    ];
    sock.attach_filter(&prog).map_err(|source| OpenError::Sys {
        call: "setsockopt(SO_ATTACH_FILTER)",
        source,
    })
}

impl Drop for Connector {
    fn drop(&mut self) {
        // Closing does not decrement the kernel's global listener count; IGNORE does.
        let _ = self.send_control(
            abi::PROC_CN_MCAST_IGNORE,
            if self.kernel_filter { Some(0) } else { None },
        );
    }
}

impl AsRawFd for Connector {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}
