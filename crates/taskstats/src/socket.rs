//! The taskstats socket: resolve the family, register for exits on every CPU, receive in
//! batches, validate the sender, account for loss.
//!
//! This is the only file with `unsafe`: thin wrappers around `socket`, `bind`, `sendto`,
//! `recvmmsg`, `poll`, `setsockopt` and `getsockopt`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::abi;
use crate::parse::{Parsed, Rejected, TaskExit, parse};

/// Messages fetched per `recvmmsg` call.
const BATCH: usize = 32;
/// Receive buffer per message. An exit record is about 1.2 KiB with the group aggregate on
/// v16/v17 (two `struct taskstats` of 560 bytes); larger ones are reported as truncated.
const SLOT: usize = 4096;
/// Upper bound of messages handled per [`Listener::recv`] call so callers stay responsive.
const MAX_PER_CALL: usize = 4096;
/// `SK_MEMINFO_DROPS` index in the `SO_MEMINFO` array.
const SK_MEMINFO_DROPS: usize = 8;
/// `SK_MEMINFO_VARS`.
const SK_MEMINFO_VARS: usize = 9;

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
#[derive(Debug, Clone)]
pub struct Waker {
    fd: Arc<OwnedFd>,
}

impl Waker {
    /// Makes the current or next `recv` return promptly.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

/// A socket registered for the exit records of every task on the given CPUs.
pub struct Listener {
    fd: OwnedFd,
    wake_fd: Arc<OwnedFd>,
    family: u16,
    cpus: String,
    stats: Stats,
    pending: Vec<TaskExit>,
    bufs: Box<[[u8; SLOT]]>,
    addrs: Box<[libc::sockaddr_nl]>,
    effective_buffer: usize,
    io_delay: bool,
    seq: u32,
    raw_tap: Option<Vec<u8>>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("fd", &self.fd)
            .field("family", &self.family)
            .field("cpus", &self.cpus)
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
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                abi::NETLINK_GENERIC,
            )
        };
        if raw < 0 {
            return Err(sys_err("socket(AF_NETLINK, NETLINK_GENERIC)"));
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
            let _ = setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, requested);
        }
        let effective_buffer = getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0) as usize;
        let addr = kernel_addr(); // nl_pid 0: the kernel assigns this socket's port id
        // SAFETY: addr is a valid sockaddr_nl and the length matches.
        let rc = unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(sys_err("bind(NETLINK_GENERIC)"));
        }
        let mut l = Listener {
            fd,
            wake_fd,
            family: 0,
            cpus: opts.cpus.clone().unwrap_or_else(possible_cpus),
            stats: Stats::default(),
            pending: Vec::new(),
            bufs: vec![[0u8; SLOT]; BATCH].into_boxed_slice(),
            // SAFETY: sockaddr_nl is plain old data; all-zero is valid.
            addrs: vec![unsafe { std::mem::zeroed::<libc::sockaddr_nl>() }; BATCH].into_boxed_slice(),
            effective_buffer,
            io_delay: io_delay_accounting(),
            seq: std::process::id().wrapping_mul(2_654_435_761),
            raw_tap: None,
        };
        let seq = l.send(
            abi::GENL_ID_CTRL,
            abi::CTRL_CMD_GETFAMILY,
            abi::CTRL_ATTR_FAMILY_NAME,
            abi::TASKSTATS_GENL_NAME,
        )?;
        match l.wait_reply(seq, opts.reply_timeout, "CTRL_CMD_GETFAMILY")? {
            Reply::Family(id) => l.family = id,
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
            l.family,
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
    /// once. What is queued is always read before giving up: a thread descheduled past the
    /// deadline (a loaded machine) still finds its reply, and `NoReply` means nothing came.
    fn wait_reply(&mut self, seq: u32, timeout: Duration, what: &'static str) -> Result<Reply, OpenError> {
        let deadline = Instant::now() + timeout;
        let mut family = None;
        let mut buf = vec![0u8; 16384];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // Past the deadline: one look at the queue without waiting.
            let wait_ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(OpenError::Sys {
                    call: "poll",
                    source: e,
                });
            }
            if rc == 0 {
                if left.is_zero() {
                    return Err(OpenError::NoReply(what));
                }
                continue;
            }
            let mut from = kernel_addr();
            let mut flen = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
            // SAFETY: buf, from and flen are live and sized as stated.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    (&mut from as *mut libc::sockaddr_nl).cast(),
                    &mut flen,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
                    Some(libc::ENOBUFS) => {
                        self.stats.overflows += 1;
                        continue;
                    }
                    _ => {
                        return Err(OpenError::Sys {
                            call: "recvfrom(NETLINK_GENERIC)",
                            source: e,
                        });
                    }
                }
            }
            if from.nl_pid != 0 {
                self.stats.rejected_sender += 1;
                continue;
            }
            for item in parse(&buf[..n as usize], self.family) {
                match item {
                    Ok(Parsed::Family { id }) => family = Some(id),
                    Ok(Parsed::Ack { seq: s, errno }) if s == seq => {
                        return Ok(match family {
                            Some(id) if errno == 0 => Reply::Family(id),
                            _ => Reply::Ack(errno),
                        });
                    }
                    Ok(Parsed::Exit(e)) => {
                        self.stats.exits += 1;
                        self.pending.push(e);
                    }
                    Ok(_) => {}
                    Err(_) => self.stats.rejected_malformed += 1,
                }
            }
        }
    }

    /// The dynamic id of the `TASKSTATS` family (for [`parse`](crate::parse())).
    pub fn family(&self) -> u16 {
        self.family
    }

    /// The CPU list registered.
    pub fn cpus(&self) -> &str {
        &self.cpus
    }

    /// Receive buffer the kernel granted (already doubled), bytes.
    pub fn effective_buffer(&self) -> usize {
        self.effective_buffer
    }

    /// Whether block I/O delays were accounted when the listener opened.
    pub fn io_delay_accounting(&self) -> bool {
        self.io_delay
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// A handle that wakes [`recv`](Self::recv) from another thread.
    pub fn waker(&self) -> Waker {
        Waker {
            fd: self.wake_fd.clone(),
        }
    }

    /// Keeps a copy of every datagram received, each prefixed by its length as a native u32
    /// (for recording fixtures).
    pub fn tap_raw(&mut self, on: bool) {
        self.raw_tap = on.then(Vec::new);
    }

    /// Takes the datagrams kept by [`tap_raw`](Self::tap_raw).
    pub fn take_raw(&mut self) -> Vec<u8> {
        self.raw_tap.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Appends what arrived to `out`, waiting up to `timeout_ms` (-1: forever, 0: not at all)
    /// for the first datagram. Losses are reported where detected.
    pub fn recv(&mut self, out: &mut Vec<Received>, timeout_ms: i32) -> Result<(), RecvError> {
        if !self.pending.is_empty() {
            out.extend(self.pending.drain(..).map(Received::Exit));
            return Ok(());
        }
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
                return Err(RecvError {
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
                        break;
                    }
                }
                Batch::Empty => break,
                Batch::Overflow => {
                    self.stats.overflows += 1;
                    overflowed = true;
                }
            }
        }
        if overflowed {
            // Every drop episode starts with ENOBUFS (the socket is marked congested until its
            // queue is drained), so reading the counter here and in finish() misses none, and
            // costs nothing when nothing was dropped.
            self.account_drops(out);
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
                _ => Err(RecvError {
                    call: "recvmmsg",
                    source: e,
                }),
            };
        }
        let n = n as usize;
        for (i, hdr) in hdrs.iter().enumerate().take(n) {
            let len = hdr.msg_len as usize;
            self.stats.datagrams += 1;
            if self.addrs[i].nl_pid != 0 {
                self.stats.rejected_sender += 1;
                continue;
            }
            if hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                self.stats.rejected_truncated += 1;
                continue;
            }
            let data = &self.bufs[i][..len.min(SLOT)];
            if let Some(tap) = self.raw_tap.as_mut() {
                tap.extend_from_slice(&(data.len() as u32).to_ne_bytes());
                tap.extend_from_slice(data);
            }
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

    /// Bytes the queued records hold of the receive buffer now (`SO_MEMINFO` `rmem_alloc`: skb
    /// truesize, what the buffer limit is compared with).
    pub fn queued_bytes(&self) -> Option<u64> {
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
        (rc == 0 && len as usize >= 4).then_some(mem[0] as u64)
    }

    fn account_drops(&mut self, out: &mut Vec<Received>) {
        let Some(drops) = self.socket_drops() else { return };
        self.stats.socket_drops = drops;
        if drops > self.stats.lost_reported {
            let count = drops - self.stats.lost_reported;
            self.stats.lost_reported = drops;
            out.push(Received::Loss(Loss { count }));
        }
    }

    /// Final accounting: drains what is queued and reports drops not yet reported. Call once,
    /// after the last [`recv`](Self::recv).
    pub fn finish(&mut self, out: &mut Vec<Received>) -> Result<(), RecvError> {
        // One recv handles at most MAX_PER_CALL messages: go on until the queue is empty.
        loop {
            let (before, had_pending) = (self.stats.datagrams, !self.pending.is_empty());
            self.recv(out, 0)?;
            if !had_pending && self.stats.datagrams == before {
                break;
            }
        }
        self.account_drops(out);
        Ok(())
    }
}

enum Reply {
    Family(u16),
    Ack(i32),
}

enum Batch {
    Got(usize),
    Empty,
    Overflow,
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

impl Drop for Listener {
    fn drop(&mut self) {
        // The kernel also drops a listener whose socket is gone the next time a send to it fails
        // (ECONNREFUSED); deregistering frees the per-CPU entries at once.
        if self.family != 0 {
            let mut mask = self.cpus.clone().into_bytes();
            mask.push(0);
            let _ = self.send(
                self.family,
                abi::TASKSTATS_CMD_GET,
                abi::CMD_ATTR_DEREGISTER_CPUMASK,
                &mask,
            );
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
