//! The connector socket: subscribe, receive in batches, validate the sender, account for loss.
//!
//! This is the only file with `unsafe`: thin wrappers around `socket`, `bind`, `sendto`,
//! `recvmmsg`, `poll` and `getsockopt`. Policy (which processes matter, what to do with a lost
//! event) belongs to the caller; this layer only guarantees that nothing the kernel drops goes
//! unreported and that nothing but the kernel is believed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::abi::{self, what};
use crate::event::{EventKind, ProcEvent};
use crate::loss::SeqGaps;
use crate::parse::{Rejected, parse};

/// Bytes of receive buffer the kernel charges per queued event (skb truesize).
pub const BYTES_PER_QUEUED_EVENT: usize = 832;
/// Sockets opened by this process, to keep their ack numbers apart.
static SOCKETS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// Messages fetched per `recvmmsg` call.
const BATCH: usize = 64;
/// Receive buffer per message; events are 76 bytes, anything larger is forged or foreign.
const SLOT: usize = 256;
/// Upper bound of messages handled per [`Connector::recv`] call so callers stay responsive.
const MAX_PER_CALL: usize = 4096;
/// `SK_MEMINFO_DROPS` index in the `SO_MEMINFO` array.
const SK_MEMINFO_DROPS: usize = 8;
/// `SK_MEMINFO_VARS`.
const SK_MEMINFO_VARS: usize = 9;

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
#[derive(Debug, Clone)]
pub struct Waker {
    fd: Arc<OwnedFd>,
}

impl Waker {
    /// Makes the current or next `recv` return promptly.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own.
        let _ = unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}

/// A subscribed process events connector socket.
pub struct Connector {
    fd: OwnedFd,
    wake_fd: Arc<OwnedFd>,
    filtered: bool,
    gaps: SeqGaps,
    stats: Stats,
    /// Events that arrived while waiting for the LISTEN ack.
    pending: Vec<ProcEvent>,
    bufs: Box<[[u8; SLOT]; BATCH]>,
    addrs: Box<[libc::sockaddr_nl; BATCH]>,
    effective_buffer: usize,
    kernel_filter: bool,
    seq_counter: u32,
    raw_tap: Option<Vec<u8>>,
    keep_acks: bool,
    mask: Option<u32>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("fd", &self.fd)
            .field("filtered", &self.filtered)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn sys_err(call: &'static str) -> OpenError {
    OpenError::Sys {
        call,
        source: io::Error::last_os_error(),
    }
}

fn kernel_addr() -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is plain old data; all-zero is a valid value.
    let mut a: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    a.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    a
}

impl Connector {
    /// Opens the socket, sizes its buffer, binds to the process events group and subscribes,
    /// returning only once the kernel has acknowledged: every event generated after this returns
    /// is offered to the socket.
    pub fn open(opts: &Options) -> Result<Connector, OpenError> {
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                abi::NETLINK_CONNECTOR,
            )
        };
        if raw < 0 {
            return Err(sys_err("socket(AF_NETLINK, NETLINK_CONNECTOR)"));
        }
        // SAFETY: raw is a freshly created descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: eventfd(2) with valid flags; checked below.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(sys_err("eventfd"));
        }
        // SAFETY: efd is a fresh descriptor we own.
        let wake_fd = Arc::new(unsafe { OwnedFd::from_raw_fd(efd) });

        let requested = opts.recv_buffer.min(i32::MAX as usize / 2) as libc::c_int;
        if setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, requested).is_err() {
            // Without CAP_NET_ADMIN the cap is net.core.rmem_max; failing here is not fatal.
            let _ = setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, requested);
        }
        let effective_buffer = getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0) as usize;

        let mut addr = kernel_addr();
        addr.nl_groups = abi::CN_PROC_GROUP;
        // SAFETY: addr is a valid sockaddr_nl and the length matches.
        let rc = unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EPERM) {
                return Err(OpenError::PermissionDenied(e));
            }
            return Err(OpenError::Sys {
                call: "bind(NETLINK_CONNECTOR, CN_IDX_PROC)",
                source: e,
            });
        }

        let mut c = Connector {
            fd,
            wake_fd,
            filtered: false,
            gaps: SeqGaps::new(),
            stats: Stats::default(),
            pending: Vec::new(),
            // SAFETY: arrays of bytes and of plain-old-data sockaddr_nl are valid when zeroed.
            bufs: Box::new([[0u8; SLOT]; BATCH]),
            addrs: Box::new(unsafe { std::mem::zeroed() }),
            effective_buffer,
            kernel_filter: false,
            // Acks are multicast to every listener: make this socket's ack numbers its own.
            seq_counter: std::process::id().wrapping_mul(2_654_435_761).wrapping_add(
                SOCKETS
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    .wrapping_mul(0x1000_0000),
            ),
            raw_tap: None,
            keep_acks: true,
            mask: None,
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
        if let Some(mask) = opts.event_mask {
            if mask & what::ALL != what::ALL && mask & what::ALL != 0 {
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
                    attach_bpf_filter(c.fd.as_raw_fd(), mask)?;
                }
                c.filtered = true;
                c.mask = Some(mask);
            }
        }
        c.keep_acks = false;
        Ok(c)
    }

    fn send_control(&mut self, op: u32, mask: Option<u32>) -> Result<u32, OpenError> {
        self.seq_counter = self.seq_counter.wrapping_add(1);
        let ack = self.seq_counter;
        let msg = abi::control_message(op, mask, ack, ack);
        let dst = kernel_addr();
        // SAFETY: msg and dst are valid for the lengths given.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&dst as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
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
        let deadline = Instant::now() + timeout;
        let mut items = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            items.clear();
            self.recv_raw(&mut items, left.as_millis() as i32)
                .map_err(|RecvError::Sys { call, source }| OpenError::Sys { call, source })?;
            let mut found = None;
            for it in &items {
                if let Received::Event(ev) = it {
                    match ev.kind {
                        EventKind::Ack { ack: a, err } if a == ack.wrapping_add(1) => found = Some(err),
                        EventKind::Ack { .. } => {}
                        _ => self.pending.push(*ev),
                    }
                }
            }
            if found.is_some() {
                return Ok(found);
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// Starts (or stops) keeping a copy of every accepted kernel datagram, each prefixed by its
    /// length as a native-endian u32: the format of the recorded fixtures. Not for production.
    pub fn tap_raw(&mut self, on: bool) {
        self.raw_tap = if on { Some(Vec::new()) } else { None };
    }

    /// Takes the datagrams recorded since the last call (see [`tap_raw`](Self::tap_raw)).
    pub fn take_raw(&mut self) -> Vec<u8> {
        self.raw_tap.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// A handle that interrupts a blocking [`recv`](Self::recv) from another thread.
    pub fn waker(&self) -> Waker {
        Waker {
            fd: Arc::clone(&self.wake_fd),
        }
    }

    /// Sleeps up to `dur` without reading, returning early on a [`Waker::wake`]. Lets a caller
    /// batch a busy stream (events queue in the kernel meanwhile) and still stop promptly.
    pub fn pause(&self, dur: Duration) {
        let mut fds = [libc::pollfd {
            fd: self.wake_fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let ms = dur.as_millis().min(i32::MAX as u128) as i32;
        // A wake is left pending: the next recv sees it and drains the eventfd.
        // SAFETY: fds is a valid array of one pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
    }

    /// Whether a kernel-side event filter is active (sequence gaps are then not losses).
    pub fn is_filtered(&self) -> bool {
        self.filtered
    }

    /// Whether the kernel understood the 6.6+ `proc_input` subscription.
    pub fn has_kernel_filter(&self) -> bool {
        self.kernel_filter
    }

    /// The receive buffer the kernel granted, in bytes (twice the request, within limits).
    pub fn receive_buffer(&self) -> usize {
        self.effective_buffer
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Waits up to `timeout_ms` (-1: forever, 0: not at all) for events, then drains the socket
    /// until it is empty (or a large batch is collected), appending to `out` in queue order.
    /// Returns the number of items appended; 0 after a timeout or a [`Waker::wake`].
    pub fn recv(&mut self, out: &mut Vec<Received>, timeout_ms: i32) -> Result<usize, RecvError> {
        let start = out.len();
        if !self.pending.is_empty() {
            let mask = self.mask;
            for ev in self.pending.drain(..) {
                if matches!(ev.kind, EventKind::Ack { .. }) || mask.is_some_and(|m| !wanted(m, &ev.kind)) {
                    continue;
                }
                self.stats.events += 1;
                out.push(Received::Event(ev));
            }
        }
        self.recv_raw(out, if out.len() > start { 0 } else { timeout_ms })?;
        Ok(out.len() - start)
    }

    fn recv_raw(&mut self, out: &mut Vec<Received>, timeout_ms: i32) -> Result<(), RecvError> {
        let fd = self.fd.as_raw_fd();
        if timeout_ms != 0 {
            let mut fds = [
                libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.wake_fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: fds is a valid array of two pollfd.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    return Ok(());
                }
                return Err(RecvError::Sys {
                    call: "poll",
                    source: e,
                });
            }
            if fds[1].revents & libc::POLLIN != 0 {
                let mut v = 0u64;
                // SAFETY: reads 8 bytes into a live u64 from our nonblocking eventfd.
                let _ = unsafe { libc::read(fds[1].fd, (&mut v as *mut u64).cast(), 8) };
            }
            if fds[0].revents & (libc::POLLIN | libc::POLLERR) == 0 {
                return Ok(());
            }
        }
        let mut handled = 0usize;
        let mut overflowed = false;
        while handled < MAX_PER_CALL {
            match self.recv_batch(out)? {
                Batch::Got(n) => {
                    handled += n;
                    if n < BATCH && !overflowed {
                        // recvmmsg took everything queued: asking again would only say EAGAIN.
                        // After an overflow, keep going until EAGAIN proves the queue empty.
                        break;
                    }
                }
                Batch::Empty => break,
                Batch::Overflow => {
                    // Congested: the socket drops everything until fully drained, so keep going.
                    self.stats.overflows += 1;
                    overflowed = true;
                }
            }
        }
        if self.filtered {
            self.account_socket_drops(out);
        } else if overflowed {
            // Gaps in the sequence numbers will report these exactly as later events arrive.
            self.stats.socket_drops = self.socket_drops().unwrap_or(self.stats.socket_drops);
        }
        Ok(())
    }

    fn recv_batch(&mut self, out: &mut Vec<Received>) -> Result<Batch, RecvError> {
        let fd = self.fd.as_raw_fd();
        // SAFETY: iovec/mmsghdr are plain old data; zeroed is valid and filled in below.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..BATCH {
            iov[i].iov_base = self.bufs[i].as_mut_ptr().cast();
            iov[i].iov_len = SLOT;
            hdrs[i].msg_hdr.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_nl).cast();
            hdrs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
            hdrs[i].msg_hdr.msg_iov = &mut iov[i];
            hdrs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: every header points at live buffers owned by self or this frame, sized as stated.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(Batch::Empty),
                Some(libc::EINTR) => Ok(Batch::Got(0)),
                Some(libc::ENOBUFS) => Ok(Batch::Overflow),
                _ => Err(RecvError::Sys {
                    call: "recvmmsg",
                    source: e,
                }),
            };
        }
        let n = n as usize;
        for (i, hdr) in hdrs.iter().enumerate().take(n) {
            let len = hdr.msg_len as usize;
            let flags = hdr.msg_hdr.msg_flags;
            let from = self.addrs[i].nl_pid;
            self.stats.datagrams += 1;
            if from != 0 {
                self.stats.rejected_sender += 1;
                continue;
            }
            if flags & libc::MSG_TRUNC != 0 {
                self.stats.rejected_truncated += 1;
                continue;
            }
            let data = &self.bufs[i][..len.min(SLOT)];
            if let Some(tap) = self.raw_tap.as_mut() {
                tap.extend_from_slice(&(data.len() as u32).to_ne_bytes());
                tap.extend_from_slice(data);
            }
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
        if n == 0 {
            return Ok(Batch::Empty);
        }
        Ok(Batch::Got(n))
    }

    /// Reads the socket's drop counter.
    pub fn socket_drops(&self) -> Option<u64> {
        let mut mem = [0u32; SK_MEMINFO_VARS];
        let mut len = std::mem::size_of_val(&mem) as libc::socklen_t;
        // SAFETY: mem is a valid buffer of len bytes.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_MEMINFO,
                mem.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc < 0 || (len as usize) < (SK_MEMINFO_DROPS + 1) * 4 {
            return None;
        }
        Some(mem[SK_MEMINFO_DROPS] as u64)
    }

    /// Reports drops not yet reported. Filtered sockets learn of every drop this way; unfiltered
    /// ones only of drops after the last event received on their CPU (earlier ones surface as
    /// sequence gaps), so they call this once, at the end.
    fn account_socket_drops(&mut self, out: &mut Vec<Received>) {
        let Some(drops) = self.socket_drops() else { return };
        self.stats.socket_drops = drops;
        if drops > self.stats.lost_reported {
            let extra = drops - self.stats.lost_reported;
            self.stats.lost_reported += extra;
            out.push(Received::Loss(Loss {
                count: extra,
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

enum Batch {
    Got(usize),
    Empty,
    Overflow,
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
fn attach_bpf_filter(fd: RawFd, mask: u32) -> Result<(), OpenError> {
    let mut mask = mask;
    if mask & what::NONZERO_EXIT != 0 {
        mask |= what::EXIT; // exit codes are not inspected here: a superset
    }
    let wire_mask = u32::from_be_bytes(mask.to_ne_bytes());
    let ins = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let mut prog = [
        ins(0x20, 0, 0, abi::EVENT_OFFSET as u32), // ld [36]
        ins(0x15, 2, 0, 0),                        // jeq #0 (ack) → accept
        ins(0x45, 1, 0, wire_mask),                // jset #mask → accept
        ins(0x06, 0, 0, 0),                        // drop
        ins(0x06, 0, 0, u32::MAX),                 // accept
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: fprog points at a live program of the stated length for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(sys_err("setsockopt(SO_ATTACH_FILTER)"));
    }
    Ok(())
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int with its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn getsockopt_int(fd: RawFd, level: i32, name: i32) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v and len are live and sized correctly.
    let rc = unsafe { libc::getsockopt(fd, level, name, (&mut v as *mut libc::c_int).cast(), &mut len) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v)
    }
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
        self.fd.as_raw_fd()
    }
}
