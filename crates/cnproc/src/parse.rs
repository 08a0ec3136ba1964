//! Pure decoding of connector datagrams: bytes in, events or reasons for rejection out.
//!
//! Usable on recorded bytes with no socket. Never panics and never allocates: every length is
//! checked before it is trusted, and the event payload is copied into a zeroed 40-byte buffer so
//! shorter payloads from older kernels read as zeros rather than out of bounds.

use crate::abi::{self, off, u16_at, u32_at, u64_at};
use crate::event::{EventKind, ProcEvent};

/// Why a message was not accepted as a process event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Fewer bytes than a netlink header.
    #[error("message shorter than a netlink header ({len} bytes)")]
    Short {
        /// Bytes available.
        len: usize,
    },
    /// `nlmsg_len` smaller than the headers or larger than the datagram.
    #[error("nlmsg_len {nlmsg_len} inconsistent with {available} bytes available")]
    BadLength {
        /// The header's claim.
        nlmsg_len: u32,
        /// Bytes actually there.
        available: usize,
    },
    /// Not `NLMSG_DONE`.
    #[error("netlink message type {0} is not NLMSG_DONE")]
    WrongType(u16),
    /// Connector id other than `{CN_IDX_PROC, CN_VAL_PROC}`.
    #[error("connector id {idx}:{val} is not the process connector")]
    WrongId {
        /// `cn_msg.id.idx`.
        idx: u32,
        /// `cn_msg.id.val`.
        val: u32,
    },
    /// `cn_msg.len` too small for an event or overrunning the message.
    #[error("cn_msg.len {cn_len} inconsistent with nlmsg_len {nlmsg_len}")]
    BadPayloadLength {
        /// `cn_msg.len`.
        cn_len: u16,
        /// `nlmsg_len`.
        nlmsg_len: u32,
    },
}

/// Iterator over the netlink messages of one datagram; see [`parse`].
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    rest: &'a [u8],
}

/// Decodes every netlink message in `datagram`.
///
/// Yields one item per message: the event, or why it was rejected. A length error ends the walk
/// (nothing after it can be located reliably). `NLMSG_NOOP` padding messages are skipped.
pub fn parse(datagram: &[u8]) -> Messages<'_> {
    Messages { rest: datagram }
}

impl Iterator for Messages<'_> {
    type Item = Result<ProcEvent, Rejected>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let b = self.rest;
            if b.is_empty() {
                return None;
            }
            if b.len() < abi::NLMSG_HDRLEN {
                self.rest = &[];
                return Some(Err(Rejected::Short { len: b.len() }));
            }
            let nlmsg_len = u32_at(b, off::NLMSG_LEN).unwrap_or(0);
            let len = nlmsg_len as usize;
            if len < abi::NLMSG_HDRLEN || len > b.len() {
                self.rest = &[];
                return Some(Err(Rejected::BadLength {
                    nlmsg_len,
                    available: b.len(),
                }));
            }
            let msg = &b[..len];
            // NLMSG_ALIGN to 4 for the next message.
            let next = (len + 3) & !3;
            self.rest = b.get(next..).unwrap_or(&[]);
            let ty = u16_at(msg, off::NLMSG_TYPE).unwrap_or(0);
            if ty == abi::NLMSG_NOOP {
                continue;
            }
            return Some(parse_message(msg, ty, nlmsg_len));
        }
    }
}

fn parse_message(msg: &[u8], ty: u16, nlmsg_len: u32) -> Result<ProcEvent, Rejected> {
    if ty != abi::NLMSG_DONE {
        return Err(Rejected::WrongType(ty));
    }
    if msg.len() < abi::EVENT_OFFSET {
        return Err(Rejected::BadLength {
            nlmsg_len,
            available: msg.len(),
        });
    }
    let idx = u32_at(msg, off::CN_IDX).unwrap_or(0);
    let val = u32_at(msg, off::CN_VAL).unwrap_or(0);
    if idx != abi::CN_IDX_PROC || val != abi::CN_VAL_PROC {
        return Err(Rejected::WrongId { idx, val });
    }
    let cn_len = u16_at(msg, off::CN_LEN).unwrap_or(0);
    if (cn_len as usize) < abi::MIN_CN_PAYLOAD || abi::EVENT_OFFSET + cn_len as usize > msg.len() {
        return Err(Rejected::BadPayloadLength { cn_len, nlmsg_len });
    }
    let mut ev = [0u8; abi::PROC_EVENT_LEN];
    let n = (cn_len as usize).min(abi::PROC_EVENT_LEN);
    ev[..n].copy_from_slice(&msg[abi::EVENT_OFFSET..abi::EVENT_OFFSET + n]);
    let seq = u32_at(msg, off::CN_SEQ).unwrap_or(0);
    let ack = u32_at(msg, off::CN_ACK).unwrap_or(0);
    Ok(decode_event(&ev, seq, ack))
}

/// Decodes a zero-padded 40-byte `proc_event`.
fn decode_event(ev: &[u8; abi::PROC_EVENT_LEN], seq: u32, ack: u32) -> ProcEvent {
    let u = |o: usize| u32_at(ev, o).unwrap_or(0);
    let i = |o: usize| u32_at(ev, o).unwrap_or(0) as i32;
    let what = u(0);
    let cpu = u(4);
    let timestamp_ns = u64_at(ev, 8).unwrap_or(0);
    // Union starts at 16 within proc_event.
    let kind = match what {
        abi::what::NONE => EventKind::Ack { ack, err: u(16) },
        abi::what::FORK => EventKind::Fork {
            parent_pid: i(16),
            parent_tgid: i(20),
            child_pid: i(24),
            child_tgid: i(28),
        },
        abi::what::EXEC => EventKind::Exec {
            pid: i(16),
            tgid: i(20),
        },
        abi::what::UID => EventKind::Uid {
            pid: i(16),
            tgid: i(20),
            ruid: u(24),
            euid: u(28),
        },
        abi::what::GID => EventKind::Gid {
            pid: i(16),
            tgid: i(20),
            rgid: u(24),
            egid: u(28),
        },
        abi::what::SID => EventKind::Sid {
            pid: i(16),
            tgid: i(20),
        },
        abi::what::PTRACE => EventKind::Ptrace {
            pid: i(16),
            tgid: i(20),
            tracer_pid: i(24),
            tracer_tgid: i(28),
        },
        abi::what::COMM => {
            let mut comm = [0u8; 16];
            comm.copy_from_slice(&ev[24..40]);
            EventKind::Comm {
                pid: i(16),
                tgid: i(20),
                comm,
            }
        }
        abi::what::COREDUMP => EventKind::Coredump {
            pid: i(16),
            tgid: i(20),
            parent_pid: i(24),
            parent_tgid: i(28),
        },
        abi::what::EXIT => EventKind::Exit {
            pid: i(16),
            tgid: i(20),
            exit_code: u(24),
            exit_signal: i(28),
            parent_pid: i(32),
            parent_tgid: i(36),
        },
        other => EventKind::Unknown { what: other },
    };
    ProcEvent {
        seq,
        cpu,
        timestamp_ns,
        kind,
    }
}

/// Encodes an event as the kernel would (76-byte datagram). For tests, fixtures and forgery
/// experiments; the inverse of [`parse`].
pub fn encode(ev: &ProcEvent) -> [u8; abi::EVENT_DATAGRAM_LEN] {
    fn put(b: &mut [u8], o: usize, v: u32) {
        b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
    }
    let mut b = [0u8; abi::EVENT_DATAGRAM_LEN];
    put(&mut b, 0, abi::EVENT_DATAGRAM_LEN as u32);
    b[4..6].copy_from_slice(&abi::NLMSG_DONE.to_ne_bytes());
    put(&mut b, 8, ev.seq);
    put(&mut b, 16, abi::CN_IDX_PROC);
    put(&mut b, 20, abi::CN_VAL_PROC);
    put(&mut b, 24, ev.seq);
    let (what, ack, words): (u32, u32, [u32; 6]) = match ev.kind {
        EventKind::Ack { ack, err } => (abi::what::NONE, ack, [err, 0, 0, 0, 0, 0]),
        EventKind::Fork {
            parent_pid,
            parent_tgid,
            child_pid,
            child_tgid,
        } => (
            abi::what::FORK,
            0,
            [
                parent_pid as u32,
                parent_tgid as u32,
                child_pid as u32,
                child_tgid as u32,
                0,
                0,
            ],
        ),
        EventKind::Exec { pid, tgid } => (abi::what::EXEC, 0, [pid as u32, tgid as u32, 0, 0, 0, 0]),
        EventKind::Uid {
            pid,
            tgid,
            ruid,
            euid,
        } => (abi::what::UID, 0, [pid as u32, tgid as u32, ruid, euid, 0, 0]),
        EventKind::Gid {
            pid,
            tgid,
            rgid,
            egid,
        } => (abi::what::GID, 0, [pid as u32, tgid as u32, rgid, egid, 0, 0]),
        EventKind::Sid { pid, tgid } => (abi::what::SID, 0, [pid as u32, tgid as u32, 0, 0, 0, 0]),
        EventKind::Ptrace {
            pid,
            tgid,
            tracer_pid,
            tracer_tgid,
        } => (
            abi::what::PTRACE,
            0,
            [
                pid as u32,
                tgid as u32,
                tracer_pid as u32,
                tracer_tgid as u32,
                0,
                0,
            ],
        ),
        EventKind::Comm { pid, tgid, comm } => {
            let w = |k: usize| u32::from_ne_bytes([comm[k], comm[k + 1], comm[k + 2], comm[k + 3]]);
            (
                abi::what::COMM,
                0,
                [pid as u32, tgid as u32, w(0), w(4), w(8), w(12)],
            )
        }
        EventKind::Coredump {
            pid,
            tgid,
            parent_pid,
            parent_tgid,
        } => (
            abi::what::COREDUMP,
            0,
            [
                pid as u32,
                tgid as u32,
                parent_pid as u32,
                parent_tgid as u32,
                0,
                0,
            ],
        ),
        EventKind::Exit {
            pid,
            tgid,
            exit_code,
            exit_signal,
            parent_pid,
            parent_tgid,
        } => (
            abi::what::EXIT,
            0,
            [
                pid as u32,
                tgid as u32,
                exit_code,
                exit_signal as u32,
                parent_pid as u32,
                parent_tgid as u32,
            ],
        ),
        EventKind::Unknown { what } => (what, 0, [0; 6]),
    };
    put(&mut b, 28, ack);
    b[32..34].copy_from_slice(&(abi::PROC_EVENT_LEN as u16).to_ne_bytes());
    b[34..36].copy_from_slice(&0u16.to_ne_bytes());
    put(&mut b, 36, what);
    put(&mut b, 40, ev.cpu);
    b[44..52].copy_from_slice(&ev.timestamp_ns.to_ne_bytes());
    for (k, w) in words.iter().enumerate() {
        put(&mut b, 52 + 4 * k, *w);
    }
    b
}
