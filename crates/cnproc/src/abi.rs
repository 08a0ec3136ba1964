//! The connector's wire ABI, defined here rather than taken from system headers.
//!
//! Debian 12's `linux-libc-dev` predates the 6.6 `proc_input` filter and `PROC_EVENT_NONZERO_EXIT`,
//! and the `libc` crate carries no `cn_msg`/`proc_event` layout, so every offset and constant the
//! crate relies on lives in this one file. Offsets are datagram offsets (netlink header included):
//! the event struct sits at byte 36, so its 64-bit timestamp is never 8-aligned and is decoded from
//! bytes, never through a struct reference.

/// `NETLINK_CONNECTOR` protocol number.
pub const NETLINK_CONNECTOR: i32 = 11;
/// Connector index of the process events connector.
pub const CN_IDX_PROC: u32 = 1;
/// Connector value of the process events connector.
pub const CN_VAL_PROC: u32 = 1;
/// Multicast group bit for `CN_IDX_PROC` (`1 << (CN_IDX_PROC - 1)`).
pub const CN_PROC_GROUP: u32 = 1;
/// `NLMSG_DONE`, the netlink type every connector message carries.
pub const NLMSG_DONE: u16 = 3;
/// `NLMSG_ERROR`.
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_NOOP`.
pub const NLMSG_NOOP: u16 = 1;

/// Size of `struct nlmsghdr`.
pub const NLMSG_HDRLEN: usize = 16;
/// Size of `struct cn_msg` without payload.
pub const CN_MSG_HDRLEN: usize = 20;
/// Offset of the `proc_event` payload within a datagram.
pub const EVENT_OFFSET: usize = NLMSG_HDRLEN + CN_MSG_HDRLEN;
/// Size of `struct proc_event` (what, cpu, timestamp_ns, 24-byte union).
pub const PROC_EVENT_LEN: usize = 40;
/// Size of a whole event datagram.
pub const EVENT_DATAGRAM_LEN: usize = EVENT_OFFSET + PROC_EVENT_LEN;
/// Smallest `cn_msg.len` that carries `what`, `cpu` and `timestamp_ns`.
pub const MIN_CN_PAYLOAD: usize = 16;

/// `enum proc_cn_mcast_op`: start receiving.
pub const PROC_CN_MCAST_LISTEN: u32 = 1;
/// `enum proc_cn_mcast_op`: stop receiving.
pub const PROC_CN_MCAST_IGNORE: u32 = 2;

/// Event type values (`proc_event.what`), also the bits of the 6.6+ filter mask.
pub mod what {
    /// Acknowledgement of a control message.
    pub const NONE: u32 = 0x0;
    /// fork/clone (processes and threads).
    pub const FORK: u32 = 0x1;
    /// Successful execve.
    pub const EXEC: u32 = 0x2;
    /// Real/effective uid change.
    pub const UID: u32 = 0x4;
    /// ptrace attach/detach.
    pub const PTRACE: u32 = 0x100;
    /// Real/effective gid change.
    pub const GID: u32 = 0x40;
    /// setsid.
    pub const SID: u32 = 0x80;
    /// Thread name change.
    pub const COMM: u32 = 0x200;
    /// Filter bit only: exits with a non-zero status.
    pub const NONZERO_EXIT: u32 = 0x2000_0000;
    /// Core-dumping signal.
    pub const COREDUMP: u32 = 0x4000_0000;
    /// Task exit (every thread).
    pub const EXIT: u32 = 0x8000_0000;
    /// Every event type the 6.6+ filter understands.
    pub const ALL: u32 = FORK | EXEC | UID | GID | SID | PTRACE | COMM | NONZERO_EXIT | COREDUMP | EXIT;
}

/// Datagram offsets of the fixed header fields.
pub(crate) mod off {
    pub const NLMSG_LEN: usize = 0;
    pub const NLMSG_TYPE: usize = 4;
    pub const CN_IDX: usize = 16;
    pub const CN_VAL: usize = 20;
    pub const CN_SEQ: usize = 24;
    pub const CN_ACK: usize = 28;
    pub const CN_LEN: usize = 32;
}

/// Builds a control message (`nlmsghdr` + `cn_msg` + payload) addressed to the proc connector.
///
/// With `mask = None` the legacy 4-byte `op` payload is sent (every kernel understands it and it
/// means "all events"); with `Some(mask)` the 6.6+ `proc_input { mcast_op, event_type }`.
pub fn control_message(op: u32, mask: Option<u32>, seq: u32, ack: u32) -> Vec<u8> {
    let payload_len: usize = if mask.is_some() { 8 } else { 4 };
    let total = NLMSG_HDRLEN + CN_MSG_HDRLEN + payload_len;
    let mut m = Vec::with_capacity(total);
    m.extend_from_slice(&(total as u32).to_ne_bytes()); // nlmsg_len
    m.extend_from_slice(&NLMSG_DONE.to_ne_bytes()); // nlmsg_type
    m.extend_from_slice(&0u16.to_ne_bytes()); // nlmsg_flags
    m.extend_from_slice(&seq.to_ne_bytes()); // nlmsg_seq
    m.extend_from_slice(&std::process::id().to_ne_bytes()); // nlmsg_pid
    m.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    m.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&ack.to_ne_bytes());
    m.extend_from_slice(&(payload_len as u16).to_ne_bytes());
    m.extend_from_slice(&0u16.to_ne_bytes()); // flags
    m.extend_from_slice(&op.to_ne_bytes());
    if let Some(mask) = mask {
        m.extend_from_slice(&mask.to_ne_bytes());
    }
    m
}

#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    b.get(off..off + 2)
        .and_then(|s| s.try_into().ok())
        .map(u16::from_ne_bytes)
}

#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_ne_bytes)
}

#[inline]
pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_ne_bytes)
}
