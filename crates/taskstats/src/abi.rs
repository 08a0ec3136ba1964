//! The kernel's ABI for taskstats over generic netlink, defined here (the `libc` crate has the
//! netlink constants but neither `struct taskstats` nor the generic netlink controller's).
//!
//! Offsets of `struct taskstats` come from the kernel's `include/uapi/linux/taskstats.h`, checked
//! with `offsetof` against the system's header (version 13) and against the kernel's own records
//! (see the crate docs for the versions this kernel sends). Every version but 15 only appends;
//! version 15 (one release, 2025) inserted `*_delay_max`/`*_delay_min` after each delay total and
//! version 16 moved them to the end, so 15 has its own table.

/// `NETLINK_GENERIC` protocol number.
pub const NETLINK_GENERIC: i32 = 16;
/// `GENL_ID_CTRL`: the generic netlink controller's family id.
pub const GENL_ID_CTRL: u16 = 0x10;
/// `CTRL_CMD_GETFAMILY`.
pub const CTRL_CMD_GETFAMILY: u8 = 3;
/// `CTRL_CMD_NEWFAMILY` (the reply).
pub const CTRL_CMD_NEWFAMILY: u8 = 1;
/// `CTRL_ATTR_FAMILY_ID` (u16).
pub const CTRL_ATTR_FAMILY_ID: u16 = 1;
/// `CTRL_ATTR_FAMILY_NAME` (NUL-terminated string).
pub const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// `TASKSTATS_GENL_NAME`.
pub const TASKSTATS_GENL_NAME: &[u8] = b"TASKSTATS\0";
/// `TASKSTATS_GENL_VERSION`.
pub const TASKSTATS_GENL_VERSION: u8 = 1;
/// `TASKSTATS_CMD_GET`: user to kernel.
pub const TASKSTATS_CMD_GET: u8 = 1;
/// `TASKSTATS_CMD_NEW`: kernel to user (exit records and replies).
pub const TASKSTATS_CMD_NEW: u8 = 2;
/// `TASKSTATS_TYPE_PID`: u32, inside `AGGR_PID`.
pub const TYPE_PID: u16 = 1;
/// `TASKSTATS_TYPE_TGID`: u32, inside `AGGR_TGID`.
pub const TYPE_TGID: u16 = 2;
/// `TASKSTATS_TYPE_STATS`: `struct taskstats`.
pub const TYPE_STATS: u16 = 3;
/// `TASKSTATS_TYPE_AGGR_PID`: nest of PID + STATS (the exiting task).
pub const TYPE_AGGR_PID: u16 = 4;
/// `TASKSTATS_TYPE_AGGR_TGID`: nest of TGID + STATS (the thread group, only on its last exit).
pub const TYPE_AGGR_TGID: u16 = 5;
/// `TASKSTATS_TYPE_NULL`: padding on architectures without efficient unaligned access.
pub const TYPE_NULL: u16 = 6;
/// `TASKSTATS_CMD_ATTR_REGISTER_CPUMASK`.
pub const CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
/// `TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK`.
pub const CMD_ATTR_DEREGISTER_CPUMASK: u16 = 4;
/// `NLA_TYPE_MASK`: attribute type without the nested / byte-order flags.
pub const NLA_TYPE_MASK: u16 = 0x3fff;
/// `sizeof(struct nlmsghdr)`.
pub const NLMSG_HDRLEN: usize = 16;
/// `sizeof(struct genlmsghdr)`.
pub const GENL_HDRLEN: usize = 4;
/// `sizeof(struct nlattr)`.
pub const NLA_HDRLEN: usize = 4;
/// `TS_COMM_LEN`.
pub const TS_COMM_LEN: usize = 32;

/// Rounds up to netlink's 4-byte alignment.
#[inline]
pub const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Byte offsets, within `struct taskstats`, of the fields this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// `cpu_count` (`sched_info.pcount`: times queued on a run queue).
    pub cpu_count: usize,
    /// `cpu_delay_total` (ns waiting on a run queue).
    pub cpu_delay_total: usize,
    /// `blkio_count`.
    pub blkio_count: usize,
    /// `cpu_run_virtual_total`: `se.sum_exec_runtime`, ns (filled whatever the delay
    /// accounting switch says).
    pub cpu_run_virtual_total: usize,
    /// `blkio_delay_total` (ns waiting for synchronous block I/O; needs `kernel.task_delayacct`).
    pub blkio_delay_total: usize,
    /// `ac_comm[32]`.
    pub ac_comm: usize,
    /// `ac_uid`.
    pub ac_uid: usize,
    /// `ac_pid`.
    pub ac_pid: usize,
    /// `ac_ppid`.
    pub ac_ppid: usize,
    /// `ac_btime` (u32 seconds).
    pub ac_btime: usize,
    /// `ac_etime` .. `ac_majflt`, `coremem`, `virtmem`, `hiwater_rss` .. `nivcsw`: consecutive u64s
    /// starting here (`ac_etime`), in [`U64_FIELDS`] order.
    pub u64_block: usize,
    /// `ac_btime64` (v10+).
    pub ac_btime64: usize,
    /// `ac_tgid` (v12+).
    pub ac_tgid: usize,
    /// `ac_tgetime` (v12+).
    pub ac_tgetime: usize,
}

/// The consecutive u64 fields from `ac_etime` to `nivcsw`, in kernel order.
pub const U64_FIELDS: [&str; 18] = [
    "ac_etime",
    "ac_utime",
    "ac_stime",
    "ac_minflt",
    "ac_majflt",
    "coremem",
    "virtmem",
    "hiwater_rss",
    "hiwater_vm",
    "read_char",
    "write_char",
    "read_syscalls",
    "write_syscalls",
    "read_bytes",
    "write_bytes",
    "cancelled_write_bytes",
    "nvcsw",
    "nivcsw",
];

/// The layout of every version except 15 (checked with `offsetof` on the v13 header).
pub const LAYOUT: Layout = Layout {
    cpu_count: 16,
    cpu_delay_total: 24,
    blkio_count: 32,
    blkio_delay_total: 40,
    cpu_run_virtual_total: 72,
    ac_comm: 80,
    ac_uid: 120,
    ac_pid: 128,
    ac_ppid: 132,
    ac_btime: 136,
    u64_block: 144,
    ac_btime64: 344,
    ac_tgid: 368,
    ac_tgetime: 376,
};

/// Version 15's layout: 16 bytes (`*_delay_max`, `*_delay_min`) after each delay total.
pub const LAYOUT_V15: Layout = Layout {
    cpu_count: 16,
    cpu_delay_total: 24,
    blkio_count: 48,
    blkio_delay_total: 56,
    cpu_run_virtual_total: 72 + 48,
    ac_comm: 80 + 48,
    ac_uid: 120 + 48,
    ac_pid: 128 + 48,
    ac_ppid: 132 + 48,
    ac_btime: 136 + 48,
    u64_block: 144 + 48,
    ac_btime64: 344 + 80,
    ac_tgid: 368 + 96,
    ac_tgetime: 376 + 96,
};

/// Bytes of `struct taskstats` this crate needs at least (up to `nivcsw`, present since v4).
pub const MIN_STATS_LEN: usize = 144 + 18 * 8;

/// The layout for a version.
pub fn layout(version: u16) -> &'static Layout {
    if version == 15 { &LAYOUT_V15 } else { &LAYOUT }
}

/// `nlmsghdr` + `genlmsghdr` + attributes, as one request.
pub fn request(family: u16, flags: u16, seq: u32, cmd: u8, version: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut v = Vec::with_capacity(64);
    v.extend_from_slice(&0u32.to_ne_bytes());
    v.extend_from_slice(&family.to_ne_bytes());
    v.extend_from_slice(&flags.to_ne_bytes());
    v.extend_from_slice(&seq.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    v.extend_from_slice(&[cmd, version, 0, 0]);
    for (ty, data) in attrs {
        v.extend_from_slice(&((NLA_HDRLEN + data.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(data);
        v.resize(align4(v.len()), 0);
    }
    let len = v.len() as u32;
    v[..4].copy_from_slice(&len.to_ne_bytes());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v15_shifts_follow_the_inserted_pairs() {
        // 3 pairs before the basic block, 5 before btime64 (+freepages, thrashing), 6 before tgid.
        assert_eq!(LAYOUT_V15.u64_block - LAYOUT.u64_block, 3 * 16);
        assert_eq!(LAYOUT_V15.ac_btime64 - LAYOUT.ac_btime64, 5 * 16);
        assert_eq!(LAYOUT_V15.ac_tgid - LAYOUT.ac_tgid, 6 * 16);
        assert_eq!(MIN_STATS_LEN, 288);
    }

    #[test]
    fn request_is_aligned_and_sized() {
        let r = request(
            GENL_ID_CTRL,
            1,
            7,
            CTRL_CMD_GETFAMILY,
            1,
            &[(CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME)],
        );
        assert_eq!(r.len(), 16 + 4 + align4(4 + 10));
        assert_eq!(u32::from_ne_bytes(r[..4].try_into().unwrap()) as usize, r.len());
    }
}
