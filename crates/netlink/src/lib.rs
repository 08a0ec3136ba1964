//! A raw Linux netlink socket for reading what the kernel sends: the part that the process events
//! connector (`proctrace-cnproc`) and the taskstats exit records (`proctrace-taskstats`) share.
//!
//! Both crates read a stream of small datagrams that the kernel pushes and drops when the socket
//! is full. What they need from the socket is the same, and lives here:
//!
//! - **batch receive**: `recvmmsg` of up to `BATCH` datagrams of at most `SLOT` bytes into buffers
//!   allocated once, drained until the queue is empty (and, after an overflow, until `EAGAIN`
//!   proves it so), at most a caller-given number of datagrams per call;
//! - **believe only the kernel**: a datagram whose sender port is not 0 (another process), or that
//!   was cut (`MSG_TRUNC`), is counted ([`Counters`]) and never handed on;
//! - **loss**: overflow episodes (`ENOBUFS`) are counted, and the socket's own drop counter
//!   (`SO_MEMINFO`, [`Socket::drops`]) says how many datagrams the kernel dropped;
//! - **a waker** ([`Waker`], an eventfd) that makes a blocked [`Socket::wait`] return from
//!   another thread;
//! - **a reply wait** ([`Socket::wait_reply`]) bounded by a deadline that still reads what is
//!   queued before giving up (a thread descheduled past its deadline finds its reply).
//!
//! It never parses a message — what the bytes mean is the caller's business — and the receive path
//! allocates nothing and makes no system call beyond `poll` (when asked to wait), `recvmmsg` until
//! the queue is empty, and a `read` of the eventfd after a wake. All the `unsafe` of the two crates
//! is here, each block with its `SAFETY` reason.
//!
//! ```no_run
//! use netlink::{Protocol, Socket};
//!
//! // 64 datagrams of up to 256 bytes per recvmmsg.
//! let mut sock = Socket::<64, 256>::open(Protocol::CONNECTOR, 4 << 20)?;
//! sock.bind(1)?; // CN_IDX_PROC's multicast group
//! let mut bytes = 0;
//! sock.receive(1000, 4096, |datagram| bytes += datagram.len())?;
//! println!("{bytes} bytes; dropped by the kernel: {:?}", sock.drops());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `SK_MEMINFO_RMEM_ALLOC` index in the `SO_MEMINFO` array.
const SK_MEMINFO_RMEM_ALLOC: usize = 0;
/// `SK_MEMINFO_DROPS` index in the `SO_MEMINFO` array.
const SK_MEMINFO_DROPS: usize = 8;
/// `SK_MEMINFO_VARS`.
const SK_MEMINFO_VARS: usize = 9;

/// A system call failed.
#[derive(Debug, thiserror::Error)]
#[error("{call}: {source}")]
pub struct Error {
    /// Which call failed.
    pub call: &'static str,
    /// The error.
    pub source: io::Error,
}

impl Error {
    fn last(call: &'static str) -> Error {
        Error {
            call,
            source: io::Error::last_os_error(),
        }
    }
}

/// The socket type a netlink protocol uses (netlink treats both alike; some tools expect one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `SOCK_DGRAM`.
    Datagram,
    /// `SOCK_RAW`.
    Raw,
}

/// A netlink protocol to open a socket for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    /// The protocol number (`NETLINK_*`).
    pub number: libc::c_int,
    /// The socket type.
    pub kind: Kind,
    /// How a failure of `socket(2)` is named in [`Error::call`].
    pub socket_call: &'static str,
}

impl Protocol {
    /// The kernel connector (`NETLINK_CONNECTOR`), which carries the process events.
    pub const CONNECTOR: Protocol = Protocol {
        number: libc::NETLINK_CONNECTOR,
        kind: Kind::Datagram,
        socket_call: "socket(AF_NETLINK, NETLINK_CONNECTOR)",
    };
    /// Generic netlink (`NETLINK_GENERIC`), which carries taskstats among many families.
    pub const GENERIC: Protocol = Protocol {
        number: libc::NETLINK_GENERIC,
        kind: Kind::Raw,
        socket_call: "socket(AF_NETLINK, NETLINK_GENERIC)",
    };
}

/// What the socket saw and did not hand on, since it was opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams received (all of them, the rejected ones too).
    pub datagrams: u64,
    /// Datagrams from a sender other than the kernel.
    pub rejected_sender: u64,
    /// Truncated datagrams (`MSG_TRUNC`: longer than `SLOT`).
    pub rejected_truncated: u64,
    /// Overflow episodes: `ENOBUFS` from a receive (the kernel dropped datagrams meanwhile).
    pub overflows: u64,
}

/// A bound on the datagrams one [`Socket::drain`] takes that keeps a caller responsive while the
/// kernel fills the queue as fast as it is read.
pub const MAX_PER_DRAIN: usize = 4096;

/// What one [`Socket::drain`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Datagrams received (rejected ones included).
    pub datagrams: usize,
    /// Whether the kernel reported an overflow (`ENOBUFS`) during the drain.
    pub overflowed: bool,
}

/// Wakes a thread blocked in [`Socket::wait`] (or [`Socket::pause`], or a receive built on them)
/// from another thread.
#[derive(Debug, Clone)]
pub struct Waker {
    fd: Arc<OwnedFd>,
}

impl Waker {
    /// Makes the current or next [`Socket::wait`] return promptly.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we own. A full counter (EAGAIN)
        // means a wake is already pending, which is what was asked.
        let _ = unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}

/// A netlink socket that receives the kernel's datagrams in batches of `BATCH`, each of at most
/// `SLOT` bytes.
pub struct Socket<const BATCH: usize, const SLOT: usize> {
    fd: OwnedFd,
    wake_fd: Arc<OwnedFd>,
    bufs: Box<[[u8; SLOT]]>,
    addrs: Box<[libc::sockaddr_nl]>,
    receive_buffer: usize,
    counters: Counters,
    tap: Option<Vec<u8>>,
}

impl<const BATCH: usize, const SLOT: usize> std::fmt::Debug for Socket<BATCH, SLOT> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket")
            .field("fd", &self.fd)
            .field("receive_buffer", &self.receive_buffer)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// The kernel's address (port 0, no groups).
fn kernel_addr() -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is plain old data; all-zero is a valid value.
    let mut a: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    a.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    a
}

/// Result of one `recvmmsg`.
enum Batch {
    Got(usize),
    Empty,
    Overflow,
}

impl<const BATCH: usize, const SLOT: usize> Socket<BATCH, SLOT> {
    /// Opens a socket for `protocol` with an eventfd for its [`Waker`], and asks for a receive
    /// buffer of `recv_buffer` bytes: `SO_RCVBUFFORCE` first (needs CAP_NET_ADMIN), else
    /// `SO_RCVBUF` (capped by `net.core.rmem_max`; not being granted it is not an error). The
    /// socket is not bound: [`bind`](Self::bind) it.
    pub fn open(protocol: Protocol, recv_buffer: usize) -> Result<Self, Error> {
        let kind = match protocol.kind {
            Kind::Datagram => libc::SOCK_DGRAM,
            Kind::Raw => libc::SOCK_RAW,
        };
        // SAFETY: plain socket(2) call; the result is checked before use.
        let raw = unsafe { libc::socket(libc::AF_NETLINK, kind | libc::SOCK_CLOEXEC, protocol.number) };
        if raw < 0 {
            return Err(Error::last(protocol.socket_call));
        }
        // SAFETY: raw is a freshly created descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: eventfd(2) with valid flags; checked below.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(Error::last("eventfd"));
        }
        // SAFETY: efd is a fresh descriptor we own.
        let wake_fd = Arc::new(unsafe { OwnedFd::from_raw_fd(efd) });
        let requested = recv_buffer.min(i32::MAX as usize / 2) as libc::c_int;
        if setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, requested).is_err() {
            // Without CAP_NET_ADMIN the cap is net.core.rmem_max; failing here is not fatal.
            let _ = setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, requested);
        }
        let receive_buffer = getsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF).unwrap_or(0) as usize;
        Ok(Socket {
            fd,
            wake_fd,
            bufs: vec![[0u8; SLOT]; BATCH].into_boxed_slice(),
            // SAFETY: sockaddr_nl is plain old data; all-zero is valid.
            addrs: vec![unsafe { std::mem::zeroed::<libc::sockaddr_nl>() }; BATCH].into_boxed_slice(),
            receive_buffer,
            counters: Counters::default(),
            tap: None,
        })
    }

    /// Binds to the multicast `groups` (a bit mask; 0 for none), letting the kernel choose the
    /// port id.
    pub fn bind(&self, groups: u32) -> io::Result<()> {
        let mut addr = kernel_addr();
        addr.nl_groups = groups;
        // SAFETY: addr is a valid sockaddr_nl and the length matches.
        let rc = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The port id the kernel gave this socket (what a sender addresses it by).
    pub fn port_id(&self) -> io::Result<u32> {
        let mut addr = kernel_addr();
        let mut len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
        // SAFETY: addr and len are live and describe a sockaddr_nl-sized buffer.
        let rc = unsafe {
            libc::getsockname(
                self.fd.as_raw_fd(),
                (&mut addr as *mut libc::sockaddr_nl).cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(addr.nl_pid)
    }

    /// Sends one message to the kernel.
    pub fn send_to_kernel(&self, msg: &[u8]) -> io::Result<()> {
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
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Attaches a classic BPF program as the socket's filter (`SO_ATTACH_FILTER`): datagrams it
    /// drops are never queued (and never counted as dropped).
    pub fn attach_filter(&self, program: &[libc::sock_filter]) -> io::Result<()> {
        let len = u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let fprog = libc::sock_fprog {
            len,
            // The kernel copies the program and never writes through this pointer.
            filter: program.as_ptr().cast_mut(),
        };
        // SAFETY: fprog points at a live program of the stated length for the duration of the call.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&fprog as *const libc::sock_fprog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The receive buffer the kernel granted, in bytes (twice the request, within limits).
    pub fn receive_buffer(&self) -> usize {
        self.receive_buffer
    }

    /// What was received and rejected so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// A handle that interrupts a blocking [`wait`](Self::wait) from another thread.
    pub fn waker(&self) -> Waker {
        Waker {
            fd: Arc::clone(&self.wake_fd),
        }
    }

    /// Starts (or stops) keeping a copy of every datagram handed on, each prefixed by its length
    /// as a native-endian u32 (the format of recorded fixtures). Not for production.
    pub fn tap_raw(&mut self, on: bool) {
        self.tap = on.then(Vec::new);
    }

    /// Takes the datagrams kept since the last call (see [`tap_raw`](Self::tap_raw)).
    pub fn take_raw(&mut self) -> Vec<u8> {
        self.tap.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Waits up to `timeout_ms` (-1: forever) for a datagram or a [`Waker::wake`]. Returns whether
    /// the socket has something to read (a datagram or a pending error); `false` after a timeout,
    /// a wake (which it consumes) or a signal.
    pub fn wait(&self, timeout_ms: i32) -> Result<bool, Error> {
        let mut fds = [
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
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
                return Ok(false);
            }
            return Err(Error {
                call: "poll",
                source: e,
            });
        }
        if fds[1].revents & libc::POLLIN != 0 {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into a live u64 from our nonblocking eventfd.
            let _ = unsafe { libc::read(fds[1].fd, (&mut v as *mut u64).cast(), 8) };
        }
        Ok(fds[0].revents & (libc::POLLIN | libc::POLLERR) != 0)
    }

    /// Sleeps up to `dur` without reading, returning early on a [`Waker::wake`]. Lets a caller
    /// batch a busy stream (datagrams queue in the kernel meanwhile) and still stop promptly. The
    /// wake is left pending: the next [`wait`](Self::wait) sees it.
    pub fn pause(&self, dur: Duration) {
        let mut fds = [libc::pollfd {
            fd: self.wake_fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let ms = dur.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: fds is a valid array of one pollfd.
        unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
    }

    /// Waits as [`wait`](Self::wait) does (not at all when `timeout_ms` is 0), then
    /// [`drain`](Self::drain)s. `None`: nothing to read (a timeout, a wake or a signal).
    pub fn receive(
        &mut self,
        timeout_ms: i32,
        max: usize,
        accept: impl FnMut(&[u8]),
    ) -> Result<Option<Drained>, Error> {
        if timeout_ms != 0 && !self.wait(timeout_ms)? {
            return Ok(None);
        }
        self.drain(max, accept).map(Some)
    }

    /// Receives without waiting until the queue is empty or about `max` datagrams were received,
    /// handing each datagram from the kernel to `accept`, in queue order.
    ///
    /// A batch shorter than `BATCH` took everything queued, so the drain stops there without
    /// asking again — unless the kernel reported an overflow: the socket then drops everything
    /// until it is fully drained, so the drain goes on until `EAGAIN`.
    pub fn drain(&mut self, max: usize, mut accept: impl FnMut(&[u8])) -> Result<Drained, Error> {
        let mut done = Drained::default();
        while done.datagrams < max {
            match self.recv_batch(&mut accept)? {
                Batch::Got(n) => {
                    done.datagrams += n;
                    if n < BATCH && !done.overflowed {
                        break;
                    }
                }
                Batch::Empty => break,
                Batch::Overflow => {
                    self.counters.overflows += 1;
                    done.overflowed = true;
                }
            }
        }
        Ok(done)
    }

    /// Waits up to `timeout` for a reply: every datagram from the kernel goes to `accept`, which
    /// returns `Some` for the reply. The rest of the batch the reply came in is still handed to
    /// `accept` (for the caller to keep); the first `Some` is returned. `Ok(None)`: no reply by the
    /// deadline. What is queued is always read before giving up, so a thread descheduled past the
    /// deadline (a loaded machine) still finds a reply the kernel queued in time.
    pub fn wait_reply<T>(
        &mut self,
        timeout: Duration,
        mut accept: impl FnMut(&[u8]) -> Option<T>,
    ) -> Result<Option<T>, Error> {
        let deadline = Instant::now() + timeout;
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
                return Err(Error {
                    call: "poll",
                    source: e,
                });
            }
            if rc == 0 {
                if left.is_zero() {
                    return Ok(None);
                }
                continue;
            }
            let mut found = None;
            let batch = self.recv_batch(&mut |data: &[u8]| {
                let reply = accept(data);
                if found.is_none() {
                    found = reply;
                }
            })?;
            if let Batch::Overflow = batch {
                self.counters.overflows += 1;
            }
            if found.is_some() {
                return Ok(found);
            }
        }
    }

    /// One `recvmmsg` of up to `BATCH` datagrams, without waiting.
    fn recv_batch(&mut self, accept: &mut impl FnMut(&[u8])) -> Result<Batch, Error> {
        let fd = self.fd.as_raw_fd();
        // SAFETY: iovec/mmsghdr are plain old data; zeroed is valid and filled in below.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (i, (buf, addr)) in self.bufs.iter_mut().zip(self.addrs.iter_mut()).enumerate() {
            iov[i].iov_base = buf.as_mut_ptr().cast();
            iov[i].iov_len = SLOT;
            hdrs[i].msg_hdr.msg_name = (addr as *mut libc::sockaddr_nl).cast();
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
                _ => Err(Error {
                    call: "recvmmsg",
                    source: e,
                }),
            };
        }
        let n = n as usize;
        for (i, hdr) in hdrs.iter().enumerate().take(n) {
            self.counters.datagrams += 1;
            if self.addrs[i].nl_pid != 0 {
                self.counters.rejected_sender += 1;
                continue;
            }
            if hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                self.counters.rejected_truncated += 1;
                continue;
            }
            let data = &self.bufs[i][..(hdr.msg_len as usize).min(SLOT)];
            if let Some(tap) = self.tap.as_mut() {
                tap.extend_from_slice(&(data.len() as u32).to_ne_bytes());
                tap.extend_from_slice(data);
            }
            accept(data);
        }
        if n == 0 {
            return Ok(Batch::Empty);
        }
        Ok(Batch::Got(n))
    }

    fn meminfo(&self) -> Option<([u32; SK_MEMINFO_VARS], usize)> {
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
        (rc == 0).then_some((mem, len as usize))
    }

    /// The socket's drop counter (`SO_MEMINFO` `drops`): datagrams the kernel could not queue
    /// because the receive buffer was full, since the socket was opened.
    pub fn drops(&self) -> Option<u64> {
        let (mem, len) = self.meminfo()?;
        (len >= (SK_MEMINFO_DROPS + 1) * 4).then_some(mem[SK_MEMINFO_DROPS] as u64)
    }

    /// Reads the drop counter into `counter` and takes the drops beyond the `reported` losses
    /// (drops already reported, and any loss the caller found otherwise that the counter also
    /// counts) as reported now: returns how many, and adds them to `reported`. Nothing changes
    /// when the counter cannot be read.
    pub fn report_drops(&self, counter: &mut u64, reported: &mut u64) -> u64 {
        let Some(drops) = self.drops() else { return 0 };
        *counter = drops;
        let unreported = drops.saturating_sub(*reported);
        *reported += unreported;
        unreported
    }

    /// Bytes the queued datagrams hold of the receive buffer now (`SO_MEMINFO` `rmem_alloc`: skb
    /// truesize, what the buffer limit is compared with).
    pub fn queued_bytes(&self) -> Option<u64> {
        let (mem, len) = self.meminfo()?;
        (len >= (SK_MEMINFO_RMEM_ALLOC + 1) * 4).then_some(mem[SK_MEMINFO_RMEM_ALLOC] as u64)
    }
}

impl<const BATCH: usize, const SLOT: usize> AsRawFd for Socket<BATCH, SLOT> {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
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

#[cfg(test)]
mod tests;
