//! Pure parsing of generic netlink datagrams from the taskstats family: no system calls, works
//! on recorded bytes. Everything is decoded with `from_ne_bytes` on slices: the kernel places
//! `struct taskstats` at a 4-byte (not 8-byte) boundary inside its nested attribute.

use crate::abi::{self, Layout};

/// One task's `struct taskstats`, the fields this crate reads, in the kernel's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskRecord {
    /// `version` of the struct the kernel sent.
    pub version: u16,
    /// `ac_exitcode`: the wait status (`exit code << 8`, or the signal number, `| 0x80` for a
    /// core dump). The kernel fills it for thread group leaders only; 0 for other threads.
    pub exit_code: u32,
    /// `ac_flag`: `AFORK` 0x01, `ASU` 0x02, `ACORE` 0x08, `AXSIG` 0x10.
    pub flag: u8,
    /// `ac_comm`, NUL-padded.
    pub comm: [u8; abi::TS_COMM_LEN],
    /// `ac_uid`.
    pub uid: u32,
    /// `ac_pid`: the task (thread) id.
    pub pid: u32,
    /// `ac_ppid`: the parent's tgid (0 if the parent is already gone).
    pub ppid: u32,
    /// `ac_tgid` (v12+), else `None`.
    pub tgid: Option<u32>,
    /// Start time, seconds since the epoch: `ac_btime64` (v10+), else `ac_btime`.
    pub btime_s: u64,
    /// `ac_etime`: the task's elapsed time, µs.
    pub etime_us: u64,
    /// `ac_tgetime` (v12+): the thread group's elapsed time up to this exit, µs.
    pub tgetime_us: Option<u64>,
    /// `ac_utime`, µs.
    pub utime_us: u64,
    /// `ac_stime`, µs.
    pub stime_us: u64,
    /// `ac_minflt`.
    pub minflt: u64,
    /// `ac_majflt`.
    pub majflt: u64,
    /// `hiwater_rss`, KiB: the address space's peak RSS (shared by all threads of the process).
    pub hiwater_rss_kib: u64,
    /// `hiwater_vm`, KiB.
    pub hiwater_vm_kib: u64,
    /// `read_char` (`rchar`): bytes through read-like calls.
    pub read_char: u64,
    /// `write_char` (`wchar`).
    pub write_char: u64,
    /// `read_syscalls`.
    pub read_syscalls: u64,
    /// `write_syscalls`.
    pub write_syscalls: u64,
    /// `read_bytes`: bytes this task caused to be read from storage.
    pub read_bytes: u64,
    /// `write_bytes`: bytes this task caused to be written to storage (dirtied page cache).
    pub write_bytes: u64,
    /// `cancelled_write_bytes`: dirtied bytes that were truncated before writeback.
    pub cancelled_write_bytes: u64,
    /// `nvcsw`: voluntary context switches.
    pub nvcsw: u64,
    /// `nivcsw`: involuntary context switches.
    pub nivcsw: u64,
    /// `cpu_count`: times the task waited on a run queue.
    pub cpu_count: u64,
    /// `cpu_delay_total`: ns runnable but waiting for a CPU (scheduler `sched_info`, always on).
    pub cpu_delay_ns: u64,
    /// `cpu_run_virtual_total`: the scheduler's precise CPU time of the task
    /// (`se.sum_exec_runtime`), ns. `ac_utime`/`ac_stime` are tick samples (4 ms at HZ=250,
    /// minus stolen time in a VM) and measured up to 2× below it on a loaded VM.
    pub run_ns: u64,
    /// `blkio_count`.
    pub blkio_count: u64,
    /// `blkio_delay_total`: ns waiting for synchronous block I/O (0 unless
    /// `kernel.task_delayacct` is 1).
    pub blkio_delay_ns: u64,
}

impl TaskRecord {
    /// `comm` up to its first NUL.
    pub fn comm(&self) -> &[u8] {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(self.comm.len());
        &self.comm[..end]
    }
}

/// One task's exit as the kernel reports it: the task, and on the last exit of a multi-threaded
/// process the thread group's aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskExit {
    /// `TASKSTATS_TYPE_PID`: the task id, in the initial pid namespace.
    pub pid: u32,
    /// The task's own record.
    pub task: TaskRecord,
    /// `TASKSTATS_TYPE_AGGR_TGID`: `(tgid, aggregate)`, sent only with the exit of the last
    /// thread of a process that had more than one. On this kernel the aggregate holds only delay
    /// accounting and context switches summed over the threads (see the crate docs).
    pub group: Option<(u32, TaskRecord)>,
}

impl TaskExit {
    /// The process (thread group) id: `ac_tgid` (v12+), else the group attribute's, else `pid`.
    pub fn tgid(&self) -> u32 {
        self.task.tgid.or(self.group.map(|g| g.0)).unwrap_or(self.pid)
    }
}

/// What one netlink message was.
// Exits are nearly every item; boxing them would allocate once per record, while the callers
// reuse one Vec of these for every batch.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A task's exit record.
    Exit(TaskExit),
    /// `NLMSG_ERROR`: an acknowledgement (`errno == 0`) or a refusal, for request `seq`.
    Ack {
        /// The request's sequence number.
        seq: u32,
        /// 0, or a positive errno.
        errno: i32,
    },
    /// The controller's reply to `CTRL_CMD_GETFAMILY`.
    Family {
        /// The dynamic family id of `TASKSTATS`.
        id: u16,
    },
    /// A well-formed message of another kind (`NLMSG_DONE`, `NLMSG_NOOP`, another command).
    Other {
        /// `nlmsg_type`.
        kind: u16,
    },
}

/// Why a message was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Fewer bytes than a header.
    #[error("{len} bytes, shorter than a netlink header")]
    Short {
        /// Bytes left.
        len: usize,
    },
    /// `nlmsg_len` below the header size or past the datagram.
    #[error("nlmsg_len {claimed} with {available} bytes available")]
    BadLength {
        /// What the header claims.
        claimed: usize,
        /// What the datagram holds.
        available: usize,
    },
    /// An attribute whose length is impossible.
    #[error("attribute of type {kind} with length {len}")]
    BadAttribute {
        /// Attribute type.
        kind: u16,
        /// Its `nla_len`.
        len: usize,
    },
    /// A taskstats record too short for the fields read (or for its version).
    #[error("struct taskstats version {version} of {len} bytes")]
    ShortStats {
        /// The record's version.
        version: u16,
        /// Its length.
        len: usize,
    },
    /// An exit message without its task part.
    #[error("exit message without AGGR_PID")]
    NoTask,
}

/// Iterates over the netlink messages of one datagram. `family` is the taskstats family id (see
/// [`Parsed::Family`]); messages of other types come back as [`Parsed::Other`].
pub fn parse(datagram: &[u8], family: u16) -> Messages<'_> {
    Messages {
        rest: datagram,
        family,
    }
}

/// Iterator returned by [`parse`].
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    rest: &'a [u8],
    family: u16,
}

impl Iterator for Messages<'_> {
    type Item = Result<Parsed, Rejected>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() < abi::NLMSG_HDRLEN {
            let len = self.rest.len();
            self.rest = &[];
            return Some(Err(Rejected::Short { len }));
        }
        let len = u32_at(self.rest, 0) as usize;
        if len < abi::NLMSG_HDRLEN || len > self.rest.len() {
            let available = self.rest.len();
            self.rest = &[];
            return Some(Err(Rejected::BadLength {
                claimed: len,
                available,
            }));
        }
        let msg = &self.rest[..len];
        self.rest = &self.rest[abi::align4(len).min(self.rest.len())..];
        Some(message(msg, self.family))
    }
}

fn message(msg: &[u8], family: u16) -> Result<Parsed, Rejected> {
    let kind = u16_at(msg, 4);
    let seq = u32_at(msg, 8);
    let body = &msg[abi::NLMSG_HDRLEN..];
    if kind == libc::NLMSG_ERROR as u16 {
        if body.len() < 4 {
            return Err(Rejected::Short { len: body.len() });
        }
        let err = i32::from_ne_bytes([body[0], body[1], body[2], body[3]]);
        return Ok(Parsed::Ack { seq, errno: -err });
    }
    if kind != family && kind != abi::GENL_ID_CTRL {
        return Ok(Parsed::Other { kind });
    }
    if body.len() < abi::GENL_HDRLEN {
        return Err(Rejected::Short { len: body.len() });
    }
    let cmd = body[0];
    let attrs = &body[abi::GENL_HDRLEN..];
    if kind == abi::GENL_ID_CTRL {
        if cmd != abi::CTRL_CMD_NEWFAMILY {
            return Ok(Parsed::Other { kind });
        }
        for a in Attrs(attrs) {
            let (ty, data) = a?;
            if ty == abi::CTRL_ATTR_FAMILY_ID && data.len() >= 2 {
                return Ok(Parsed::Family { id: u16_at(data, 0) });
            }
        }
        return Ok(Parsed::Other { kind });
    }
    if cmd != abi::TASKSTATS_CMD_NEW {
        return Ok(Parsed::Other { kind });
    }
    let mut task = None;
    let mut group = None;
    for a in Attrs(attrs) {
        let (ty, data) = a?;
        match ty {
            abi::TYPE_AGGR_PID => task = Some(aggregate(data, abi::TYPE_PID)?),
            abi::TYPE_AGGR_TGID => group = Some(aggregate(data, abi::TYPE_TGID)?),
            _ => {} // TYPE_NULL padding, or attributes of a newer kernel
        }
    }
    let (pid, task) = task.ok_or(Rejected::NoTask)?;
    Ok(Parsed::Exit(TaskExit { pid, task, group }))
}

/// A nest of `{id_type: u32, STATS: struct taskstats}`.
fn aggregate(nest: &[u8], id_type: u16) -> Result<(u32, TaskRecord), Rejected> {
    let mut id = None;
    let mut stats = None;
    for a in Attrs(nest) {
        let (ty, data) = a?;
        if ty == id_type && data.len() >= 4 {
            id = Some(u32_at(data, 0));
        } else if ty == abi::TYPE_STATS {
            stats = Some(record(data)?);
        }
    }
    match (id, stats) {
        (Some(id), Some(s)) => Ok((id, s)),
        _ => Err(Rejected::NoTask),
    }
}

/// Decodes a `struct taskstats` by its version.
pub fn record(s: &[u8]) -> Result<TaskRecord, Rejected> {
    if s.len() < 2 {
        return Err(Rejected::ShortStats {
            version: 0,
            len: s.len(),
        });
    }
    let version = u16_at(s, 0);
    let l: &Layout = abi::layout(version);
    let short = Rejected::ShortStats {
        version,
        len: s.len(),
    };
    if s.len() < l.u64_block + 18 * 8 {
        return Err(short);
    }
    let u = |i: usize| u64_at(s, l.u64_block + 8 * i);
    let mut comm = [0u8; abi::TS_COMM_LEN];
    comm.copy_from_slice(&s[l.ac_comm..l.ac_comm + abi::TS_COMM_LEN]);
    let has = |off: usize, size: usize| s.len() >= off + size;
    let btime64 = (version >= 10 && has(l.ac_btime64, 8)).then(|| u64_at(s, l.ac_btime64));
    if version >= 12 && !has(l.ac_tgetime, 8) {
        return Err(short);
    }
    let v12 = version >= 12;
    Ok(TaskRecord {
        version,
        exit_code: u32_at(s, 4),
        flag: s[8],
        comm,
        uid: u32_at(s, l.ac_uid),
        pid: u32_at(s, l.ac_pid),
        ppid: u32_at(s, l.ac_ppid),
        tgid: v12.then(|| u32_at(s, l.ac_tgid)),
        btime_s: btime64.unwrap_or(u32_at(s, l.ac_btime) as u64),
        etime_us: u(0),
        tgetime_us: v12.then(|| u64_at(s, l.ac_tgetime)),
        utime_us: u(1),
        stime_us: u(2),
        minflt: u(3),
        majflt: u(4),
        hiwater_rss_kib: u(7),
        hiwater_vm_kib: u(8),
        read_char: u(9),
        write_char: u(10),
        read_syscalls: u(11),
        write_syscalls: u(12),
        read_bytes: u(13),
        write_bytes: u(14),
        cancelled_write_bytes: u(15),
        nvcsw: u(16),
        nivcsw: u(17),
        cpu_count: u64_at(s, l.cpu_count),
        cpu_delay_ns: u64_at(s, l.cpu_delay_total),
        run_ns: u64_at(s, l.cpu_run_virtual_total),
        blkio_count: u64_at(s, l.blkio_count),
        blkio_delay_ns: u64_at(s, l.blkio_delay_total),
    })
}

/// Attributes of a message or nest: `(type without flags, payload)`.
struct Attrs<'a>(&'a [u8]);

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<(u16, &'a [u8]), Rejected>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.len() < abi::NLA_HDRLEN {
            return None; // trailing padding
        }
        let len = u16_at(self.0, 0) as usize;
        let ty = u16_at(self.0, 2) & abi::NLA_TYPE_MASK;
        if len < abi::NLA_HDRLEN || len > self.0.len() {
            self.0 = &[];
            return Some(Err(Rejected::BadAttribute { kind: ty, len }));
        }
        let data = &self.0[abi::NLA_HDRLEN..len];
        self.0 = &self.0[abi::align4(len).min(self.0.len())..];
        Some(Ok((ty, data)))
    }
}

#[inline]
fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes([b[o], b[o + 1]])
}

#[inline]
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

#[inline]
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_ne_bytes(a)
}

/// Encodes an exit message the way the kernel does (for tests and fuzzing): `AGGR_PID` with the
/// task's record and, if given, `AGGR_TGID`. `stats_len` is the size of `struct taskstats` to
/// emit (at least [`abi::MIN_STATS_LEN`]); fields are written at `version`'s layout.
pub fn encode(family: u16, seq: u32, exit: &TaskExit, stats_len: usize) -> Vec<u8> {
    let mut attrs: Vec<u8> = Vec::new();
    let mut nest = |ty: u16, id_ty: u16, id: u32, r: &TaskRecord| {
        let stats = encode_record(r, stats_len);
        let inner = 8 + abi::NLA_HDRLEN + stats.len();
        push_attr_header(&mut attrs, ty | 0x8000, abi::NLA_HDRLEN + inner);
        push_attr_header(&mut attrs, id_ty, 8);
        attrs.extend_from_slice(&id.to_ne_bytes());
        push_attr_header(&mut attrs, abi::TYPE_STATS, abi::NLA_HDRLEN + stats.len());
        attrs.extend_from_slice(&stats);
        attrs.resize(abi::align4(attrs.len()), 0);
    };
    nest(abi::TYPE_AGGR_PID, abi::TYPE_PID, exit.pid, &exit.task);
    if let Some((tgid, g)) = &exit.group {
        nest(abi::TYPE_AGGR_TGID, abi::TYPE_TGID, *tgid, g);
    }
    let mut v = abi::request(
        family,
        0,
        seq,
        abi::TASKSTATS_CMD_NEW,
        abi::TASKSTATS_GENL_VERSION,
        &[],
    );
    v.extend_from_slice(&attrs);
    let len = v.len() as u32;
    v[..4].copy_from_slice(&len.to_ne_bytes());
    v
}

fn push_attr_header(v: &mut Vec<u8>, ty: u16, len: usize) {
    v.extend_from_slice(&(len as u16).to_ne_bytes());
    v.extend_from_slice(&ty.to_ne_bytes());
}

/// Writes a record's fields at its version's layout into `len` bytes.
pub fn encode_record(r: &TaskRecord, len: usize) -> Vec<u8> {
    let l = abi::layout(r.version);
    let mut s = vec![0u8; len.max(l.u64_block + 18 * 8)];
    let put = |s: &mut Vec<u8>, o: usize, b: &[u8]| {
        if o + b.len() <= s.len() {
            s[o..o + b.len()].copy_from_slice(b);
        }
    };
    put(&mut s, 0, &r.version.to_ne_bytes());
    put(&mut s, 4, &r.exit_code.to_ne_bytes());
    put(&mut s, 8, &[r.flag]);
    put(&mut s, l.cpu_count, &r.cpu_count.to_ne_bytes());
    put(&mut s, l.cpu_delay_total, &r.cpu_delay_ns.to_ne_bytes());
    put(&mut s, l.blkio_count, &r.blkio_count.to_ne_bytes());
    put(&mut s, l.cpu_run_virtual_total, &r.run_ns.to_ne_bytes());
    put(&mut s, l.blkio_delay_total, &r.blkio_delay_ns.to_ne_bytes());
    put(&mut s, l.ac_comm, &r.comm);
    put(&mut s, l.ac_uid, &r.uid.to_ne_bytes());
    put(&mut s, l.ac_pid, &r.pid.to_ne_bytes());
    put(&mut s, l.ac_ppid, &r.ppid.to_ne_bytes());
    put(&mut s, l.ac_btime, &(r.btime_s as u32).to_ne_bytes());
    let block = [
        r.etime_us,
        r.utime_us,
        r.stime_us,
        r.minflt,
        r.majflt,
        0,
        0,
        r.hiwater_rss_kib,
        r.hiwater_vm_kib,
        r.read_char,
        r.write_char,
        r.read_syscalls,
        r.write_syscalls,
        r.read_bytes,
        r.write_bytes,
        r.cancelled_write_bytes,
        r.nvcsw,
        r.nivcsw,
    ];
    for (i, v) in block.iter().enumerate() {
        put(&mut s, l.u64_block + 8 * i, &v.to_ne_bytes());
    }
    if r.version >= 10 {
        put(&mut s, l.ac_btime64, &r.btime_s.to_ne_bytes());
    }
    if let Some(t) = r.tgid {
        put(&mut s, l.ac_tgid, &t.to_ne_bytes());
    }
    if let Some(t) = r.tgetime_us {
        put(&mut s, l.ac_tgetime, &t.to_ne_bytes());
    }
    s
}
