//! The `bpf(2)` commands the loader uses, each with its `union bpf_attr` member laid out as in
//! include/uapi/linux/bpf.h (fields this loader does not set are zero, which the kernel takes
//! as absent; a kernel older than a field checks that it is zero).

use std::os::fd::{FromRawFd, OwnedFd};

const MAP_CREATE: libc::c_long = 0;
const MAP_LOOKUP_ELEM: libc::c_long = 1;
const MAP_UPDATE_ELEM: libc::c_long = 2;
const PROG_LOAD: libc::c_long = 5;
const RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BTF_LOAD: libc::c_long = 18;
const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const MAP_FREEZE: libc::c_long = 22;
const ENABLE_STATS: libc::c_long = 32;

/// `BPF_PROG_TYPE_TRACING`.
pub const PROG_TYPE_TRACING: u32 = 26;
/// `BPF_TRACE_RAW_TP`.
pub const TRACE_RAW_TP: u32 = 23;

fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<libc::c_long> {
    // SAFETY: `attr` is a valid, initialised `bpf_attr` member of `size_of::<T>()` bytes; the
    // pointers inside it (set by the callers) point to live buffers of the sizes given.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fd(r: libc::c_long) -> OwnedFd {
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

/// A name as the kernel takes it: 15 bytes at most, of `[A-Za-z0-9_.]`.
fn obj_name(name: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, c) in n.iter_mut().zip(
        name.bytes()
            .filter(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')
            .take(15),
    ) {
        *d = c;
    }
    n
}

#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// `BPF_MAP_CREATE`.
pub fn map_create(
    name: &str,
    map_type: u32,
    key: u32,
    value: u32,
    entries: u32,
    flags: u32,
) -> std::io::Result<OwnedFd> {
    let mut a = MapCreate {
        map_type,
        key_size: key,
        value_size: value,
        max_entries: entries,
        map_flags: flags,
        map_name: obj_name(name),
        ..MapCreate::default()
    };
    bpf(MAP_CREATE, &mut a).map(fd)
}

#[repr(C)]
struct MapElem {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// `BPF_MAP_UPDATE_ELEM`; `key` and `value` must be the map's sizes (checked by the caller).
pub fn map_update(map: i32, key: &[u8], value: &[u8], flags: u64) -> std::io::Result<()> {
    let mut a = MapElem {
        map_fd: map as u32,
        _pad: 0,
        key: key.as_ptr() as u64,
        value: value.as_ptr() as u64,
        flags,
    };
    bpf(MAP_UPDATE_ELEM, &mut a).map(drop)
}

/// `BPF_MAP_LOOKUP_ELEM` into `value` (the map's value size, times the possible CPUs for a
/// per-CPU map: checked by the caller).
pub fn map_lookup(map: i32, key: &[u8], value: &mut [u8]) -> std::io::Result<()> {
    let mut a = MapElem {
        map_fd: map as u32,
        _pad: 0,
        key: key.as_ptr() as u64,
        value: value.as_mut_ptr() as u64,
        flags: 0,
    };
    bpf(MAP_LOOKUP_ELEM, &mut a).map(drop)
}

#[repr(C)]
struct MapFreeze {
    map_fd: u32,
}

/// `BPF_MAP_FREEZE`: no more writes from user space (a `.rodata` map's values become known to
/// the verifier).
pub fn map_freeze(map: i32) -> std::io::Result<()> {
    bpf(MAP_FREEZE, &mut MapFreeze { map_fd: map as u32 }).map(drop)
}

#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    attach_btf_id: u32,
}

/// What `BPF_PROG_LOAD` needs for a BTF tracepoint program.
pub struct ProgLoadArgs<'a> {
    /// The program's name.
    pub name: &'a str,
    /// Its instructions.
    pub insns: &'a [u8],
    /// NUL-terminated license.
    pub license: &'a [u8],
    /// The kernel's type id of `btf_trace_<tracepoint>`.
    pub attach_btf_id: u32,
    /// The verifier's log and its level (1: the instructions checked; 4: statistics only),
    /// when wanted.
    pub log: Option<(&'a mut [u8], u32)>,
    /// The object's BTF fd with func_info/line_info records (8 and 16 bytes each), if loaded.
    pub btf: Option<(i32, &'a [u8], &'a [u8])>,
}

/// `BPF_PROG_LOAD` of a `BPF_PROG_TYPE_TRACING` program attached as `BPF_TRACE_RAW_TP`.
pub fn prog_load(p: ProgLoadArgs<'_>) -> std::io::Result<OwnedFd> {
    let mut a = ProgLoad {
        prog_type: PROG_TYPE_TRACING,
        insn_cnt: (p.insns.len() / 8) as u32,
        insns: p.insns.as_ptr() as u64,
        license: p.license.as_ptr() as u64,
        prog_name: obj_name(p.name),
        expected_attach_type: TRACE_RAW_TP,
        attach_btf_id: p.attach_btf_id,
        ..ProgLoad::default()
    };
    if let Some((log, level)) = p.log {
        a.log_level = level;
        a.log_size = log.len() as u32;
        a.log_buf = log.as_mut_ptr() as u64;
    }
    if let Some((btf, funcs, lines)) = p.btf {
        a.prog_btf_fd = btf as u32;
        a.func_info_rec_size = 8;
        a.func_info = funcs.as_ptr() as u64;
        a.func_info_cnt = (funcs.len() / 8) as u32;
        a.line_info_rec_size = 16;
        a.line_info = lines.as_ptr() as u64;
        a.line_info_cnt = (lines.len() / 16) as u32;
    }
    bpf(PROG_LOAD, &mut a).map(fd)
}

#[repr(C)]
struct BtfLoad {
    btf: u64,
    btf_log_buf: u64,
    btf_size: u32,
    btf_log_size: u32,
    btf_log_level: u32,
}

/// `BPF_BTF_LOAD`, with the kernel's log of its checks when `log` is given.
pub fn btf_load(btf: &[u8], log: Option<&mut [u8]>) -> std::io::Result<OwnedFd> {
    let mut a = BtfLoad {
        btf: btf.as_ptr() as u64,
        btf_log_buf: 0,
        btf_size: btf.len() as u32,
        btf_log_size: 0,
        btf_log_level: 0,
    };
    if let Some(log) = log {
        a.btf_log_buf = log.as_mut_ptr() as u64;
        a.btf_log_size = log.len() as u32;
        a.btf_log_level = 1;
    }
    bpf(BTF_LOAD, &mut a).map(fd)
}

#[repr(C)]
struct RawTpOpen {
    name: u64,
    prog_fd: u32,
    _pad: u32,
}

/// `BPF_RAW_TRACEPOINT_OPEN` of a BTF tracepoint program (the tracepoint is its attach type's):
/// the link's fd, which detaches it when closed.
pub fn raw_tracepoint_open(prog: i32) -> std::io::Result<OwnedFd> {
    let mut a = RawTpOpen {
        name: 0,
        prog_fd: prog as u32,
        _pad: 0,
    };
    bpf(RAW_TRACEPOINT_OPEN, &mut a).map(fd)
}

#[repr(C)]
struct ObjInfo {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// What `BPF_OBJ_GET_INFO_BY_FD` says of a program (`struct bpf_prog_info`, the fields used).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgInfo {
    /// Its id.
    pub id: u32,
    /// Nanoseconds spent running it (counted while `kernel.bpf_stats_enabled` is 1).
    pub run_time_ns: u64,
    /// Runs counted.
    pub run_cnt: u64,
    /// Instructions the verifier processed (Linux 5.16; 0 before).
    pub verified_insns: u32,
}

/// `BPF_OBJ_GET_INFO_BY_FD` of a program.
pub fn prog_info(prog: i32) -> std::io::Result<ProgInfo> {
    // struct bpf_prog_info is 232 bytes since Linux 5.16 (attach_btf_id); an older kernel fills
    // what it has and says how much in info_len.
    let mut buf = [0u8; 232];
    let mut a = ObjInfo {
        bpf_fd: prog as u32,
        info_len: buf.len() as u32,
        info: buf.as_mut_ptr() as u64,
    };
    bpf(OBJ_GET_INFO_BY_FD, &mut a)?;
    // What the kernel did not fill stays 0.
    let len = (a.info_len as usize).min(buf.len());
    buf[len..].fill(0);
    let u32_at = |at: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&buf[at..at + 4]);
        u32::from_ne_bytes(b)
    };
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[at..at + 8]);
        u64::from_ne_bytes(b)
    };
    Ok(ProgInfo {
        id: u32_at(4),
        run_time_ns: u64_at(192),
        run_cnt: u64_at(200),
        verified_insns: u32_at(216),
    })
}

/// `BPF_ENABLE_STATS` of `BPF_STATS_RUN_TIME` (Linux 5.8): the programs' run time and count
/// are kept while the returned descriptor is open (as with `kernel.bpf_stats_enabled=1`).
pub fn enable_stats() -> std::io::Result<OwnedFd> {
    #[repr(C)]
    struct EnableStats {
        stats_type: u32,
    }
    bpf(ENABLE_STATS, &mut EnableStats { stats_type: 0 }).map(fd)
}
