//! A small loader for BPF CO-RE objects of BTF tracepoint programs (`tp_btf/*`), and nothing
//! else: enough for proctrace's object and objects like it, no policy.
//!
//! - [`Btf`]: the kernel's BTF (`/sys/kernel/btf/vmlinux`, mapped where the kernel allows it),
//!   indexed in one pass (an offset per type), read in place.
//! - [`obj::Object`]: the ELF object: programs (each global function of an executable section;
//!   several may share one), linked as libbpf links them with the static functions of `.text`
//!   they call or pass as callbacks (appended, each once, calls' and function addresses'
//!   immediates fixed, their relocations and `.BTF.ext` records moved along), BTF-defined maps
//!   (`.maps`), global data (`.rodata`, `.data`, `.bss`), `.BTF.ext` (CO-RE relocations, func
//!   and line info), kernel functions called (externs in `.ksyms`).
//! - [`Loader`]: sets globals and map sizes, resolves CO-RE relocations against the kernel's
//!   BTF ([`core`]) and kernel functions by name (`BPF_PSEUDO_KFUNC_CALL` of their id: a program
//!   calling one the kernel lacks is refused by name at [`Prepared::load`], its others load),
//!   creates the maps, relocates map references; [`Prepared::load`] loads one program
//!   (`BPF_PROG_TYPE_TRACING`, `BPF_TRACE_RAW_TP`; with the object's BTF and func and line info
//!   when it has functions of `.text`, which the kernel wants for a callback: the BTF rewritten
//!   as libbpf does for the kernel to take it, [`obj::Object::kernel_btf`]),
//!   [`Program::attach`] attaches it, [`Program::info`] says what the kernel counts of it (its
//!   verified instructions, its run time), [`Prepared::load_with_stats`] gives the verifier's
//!   statistics.
//! - [`RingBuf`]: the BPF ring buffer's reader (no allocation per record); [`Map`] for lookups
//!   and updates.
//!
//! Why not aya or libbpf: aya parses the whole kernel BTF into owned structures, twice per load
//! (80 MB and ~90 ms at every start of proctrace); libbpf is C. This loader reads the BTF in
//! place and looks up only the names the object's relocations ask for.
//!
//! What it does not do: other program types, map pinning, maps of maps, extern variables
//! (`.kconfig`, `.ksyms` variables: only extern functions, kfuncs, are taken), kfuncs of kernel
//! modules (only vmlinux's), weak kfuncs (a missing one refuses its program), global functions
//! verified apart (a non-static function of `.text` is linked like a static one, and the
//! kernel checks it as global from its BTF linkage), calls between functions of program
//! sections (only functions of `.text` can be called), tail calls' program arrays: the object
//! is refused with an error that says which.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod btf;
pub mod core;
pub mod obj;
mod ringbuf;
pub mod sys;

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub use btf::Btf;
pub use ringbuf::RingBuf;

use crate::btf::kind;
use crate::core::{Candidates, Resolved};
use crate::obj::{Object, Target};

/// What went wrong, saying where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// A BTF blob is malformed, or lacks what is looked for.
    #[error("{what}: {why}")]
    Btf {
        /// Which BTF.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The object file is malformed or uses what this loader does not support.
    #[error("the BPF object: {0}")]
    Elf(String),
    /// A relocation could not be applied.
    #[error("program {prog}: {why}")]
    Relocation {
        /// The program.
        prog: String,
        /// What and why.
        why: String,
    },
    /// A `bpf()` command failed.
    #[error("{what}: {source}{log}")]
    Sys {
        /// What was asked.
        what: String,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
        /// The verifier's log (its last lines), with a leading newline, or empty.
        log: String,
    },
    /// Asked for what the object does not have.
    #[error("{0}")]
    Missing(String),
}

impl Error {
    /// The verifier's log, if the kernel refused a program with one.
    pub fn verifier_log(&self) -> Option<&str> {
        match self {
            Error::Sys { log, .. } if !log.is_empty() => Some(log),
            _ => None,
        }
    }

    /// The system call's errno, if the error is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Io(_, e) | Error::Sys { source: e, .. } => e.raw_os_error(),
            _ => None,
        }
    }
}

/// A map created in the kernel.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    def: obj::MapDef,
}

impl Map {
    /// Its definition (after overrides).
    pub fn def(&self) -> &obj::MapDef {
        &self.def
    }

    /// Inserts or replaces `key` → `value` (`BPF_ANY` = 0, `BPF_NOEXIST` = 1, `BPF_EXIST` = 2).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<(), Error> {
        self.check(key, value.len(), self.def.value_size as usize)?;
        sys::map_update(self.fd.as_raw_fd(), key, value, flags).map_err(|e| Error::Sys {
            what: format!("updating map {}", self.def.name),
            source: e,
            log: String::new(),
        })
    }

    /// Reads `key`'s value into `value`: the value size, or for a per-CPU map the value size
    /// rounded up to 8 times [`possible_cpus`]' count.
    pub fn lookup(&self, key: &[u8], value: &mut [u8]) -> Result<(), Error> {
        self.check(key, value.len(), self.lookup_size()?)?;
        sys::map_lookup(self.fd.as_raw_fd(), key, value).map_err(|e| Error::Sys {
            what: format!("reading map {}", self.def.name),
            source: e,
            log: String::new(),
        })
    }

    /// The bytes a lookup writes.
    pub fn lookup_size(&self) -> Result<usize, Error> {
        let v = self.def.value_size as usize;
        if is_per_cpu(self.def.map_type) {
            Ok(v.next_multiple_of(8) * possible_cpus()?.0 as usize)
        } else {
            Ok(v)
        }
    }

    fn check(&self, key: &[u8], value: usize, want: usize) -> Result<(), Error> {
        if key.len() != self.def.key_size as usize || value != want {
            return Err(Error::Missing(format!(
                "map {}: key of {} bytes and value of {value} for a map of {}-byte keys and {want}-byte values",
                self.def.name,
                key.len(),
                self.def.key_size
            )));
        }
        Ok(())
    }
}

impl AsRawFd for Map {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn is_per_cpu(map_type: u32) -> bool {
    // PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH, PERCPU_CGROUP_STORAGE.
    matches!(map_type, 5 | 6 | 10 | 21)
}

/// The possible CPUs (`/sys/devices/system/cpu/possible`): how many, and the highest id + 1.
/// Read once (the set is fixed at boot).
pub fn possible_cpus() -> Result<(u32, u32), Error> {
    const PATH: &str = "/sys/devices/system/cpu/possible";
    static CPUS: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    if let Some(&c) = CPUS.get() {
        return Ok(c);
    }
    let s = std::fs::read_to_string(PATH).map_err(|e| Error::Io(PATH.into(), e))?;
    let c = parse_cpu_list(s.trim()).ok_or_else(|| {
        Error::Io(
            PATH.into(),
            std::io::Error::other(format!("not a CPU list: {s:?}")),
        )
    })?;
    Ok(*CPUS.get_or_init(|| c))
}

/// `0-3,8` → (5, 9).
pub fn parse_cpu_list(s: &str) -> Option<(u32, u32)> {
    let (mut count, mut top) = (0u32, 0u32);
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let a = part.parse::<u32>().ok()?;
                (a, a)
            }
        };
        if b < a {
            return None;
        }
        count = count.checked_add((b - a).checked_add(1)?)?;
        top = top.max(b.checked_add(1)?);
    }
    (count > 0).then_some((count, top))
}

/// A loaded program.
#[derive(Debug)]
pub struct Program {
    name: String,
    section: String,
    fd: OwnedFd,
}

/// An attached program: detached when dropped.
#[derive(Debug)]
pub struct Link {
    _fd: OwnedFd,
}

impl Program {
    /// What the kernel says of it: its id, its run time and count (with
    /// `kernel.bpf_stats_enabled`), the instructions its verification processed.
    pub fn info(&self) -> Result<sys::ProgInfo, Error> {
        sys::prog_info(self.fd.as_raw_fd()).map_err(|e| Error::Sys {
            what: format!("reading {}'s info", self.name),
            source: e,
            log: String::new(),
        })
    }

    /// Attaches it to its tracepoint.
    pub fn attach(&self) -> Result<Link, Error> {
        sys::raw_tracepoint_open(self.fd.as_raw_fd())
            .map(|fd| Link { _fd: fd })
            .map_err(|e| Error::Sys {
                what: format!("attaching {} ({})", self.name, self.section),
                source: e,
                log: String::new(),
            })
    }
}

/// What to load: the object, with globals and map sizes set.
pub struct Loader<'a> {
    object: &'a [u8],
    globals: Vec<(String, Vec<u8>)>,
    max_entries: Vec<(String, u32)>,
    object_btf: bool,
}

/// A program ready to load: relocated.
struct PreparedProgram {
    name: String,
    section: String,
    insns: Vec<u8>,
    /// The kernel's `btf_trace_*` typedef, or why the program cannot be loaded (no such
    /// tracepoint, a kernel function it calls that the kernel lacks).
    attach_btf_id: Result<u32, String>,
    poisoned: Vec<core::Poisoned>,
    /// It has functions of .text: loaded with the object's BTF and func_info (the kernel wants
    /// them for a callback).
    needs_btf: bool,
}

/// The maps created and the programs relocated, ready to load.
pub struct Prepared<'a> {
    object: Object<'a>,
    maps: Vec<Option<Map>>,
    programs: Vec<PreparedProgram>,
    /// The object's BTF in the kernel (or the errno of its refusal), loaded when asked for
    /// ([`Loader::object_btf`]) or when a program with functions of .text is loaded.
    btf_fd: std::cell::OnceCell<Result<OwnedFd, i32>>,
}

impl<'a> Loader<'a> {
    /// The object file's bytes.
    pub fn new(object: &'a [u8]) -> Loader<'a> {
        Loader {
            object,
            globals: Vec::new(),
            max_entries: Vec::new(),
            object_btf: false,
        }
    }

    /// Loads the object's BTF up front (`BPF_BTF_LOAD`) and gives every program its function and
    /// line info (source lines in `bpftool prog dump`). Off by default: the kernel needs it only
    /// for a program with functions of `.text` (a callback), which gets it anyway (loaded the
    /// first time one is loaded: 0.05 ms for proctrace's object here). A refused load is retried
    /// with it either way, for the log.
    pub fn object_btf(mut self, yes: bool) -> Self {
        self.object_btf = yes;
        self
    }

    /// Sets a global variable (in `.rodata`, `.data` or `.bss`) to `value`, its exact size.
    pub fn global(mut self, name: &str, value: &[u8]) -> Self {
        self.globals.push((name.to_string(), value.to_vec()));
        self
    }

    /// Sets map `name`'s `max_entries`.
    pub fn max_entries(mut self, name: &str, n: u32) -> Self {
        self.max_entries.push((name.to_string(), n));
        self
    }

    /// Parses the object, resolves its CO-RE relocations against `kernel`, creates its maps
    /// (global data written, `.rodata` frozen) and relocates every program.
    pub fn prepare(self, kernel: &Btf<'_>) -> Result<Prepared<'a>, Error> {
        let mut object = Object::parse(self.object)?;
        for (name, value) in &self.globals {
            let &(_, m, off, size) = object
                .globals
                .iter()
                .find(|g| g.0 == *name)
                .ok_or_else(|| Error::Missing(format!("the object has no global {name}")))?;
            if size as usize != value.len() {
                return Err(Error::Missing(format!(
                    "global {name} is {size} bytes, not {}",
                    value.len()
                )));
            }
            if let Some((_, data)) = object.maps[m].data.as_mut() {
                data[off as usize..off as usize + value.len()].copy_from_slice(value);
            }
        }
        for (name, n) in &self.max_entries {
            let m = object
                .map_index(name)
                .ok_or_else(|| Error::Missing(format!("the object has no map {name}")))?;
            object.maps[m].max_entries = *n;
        }

        // The kernel's types, all looked up in one pass: the CO-RE roots and the tracepoints.
        let tp_names: Vec<Vec<u8>> = object
            .programs
            .iter()
            .map(|p| {
                let tp = p.section.strip_prefix("tp_btf/").unwrap_or("");
                format!("btf_trace_{tp}").into_bytes()
            })
            .collect();
        let mut extra: Vec<(&[u8], u32)> = tp_names.iter().map(|n| (n.as_slice(), kind::TYPEDEF)).collect();
        extra.extend(object.kfuncs.iter().map(|k| (k.as_bytes(), kind::FUNC)));
        let all_relos: Vec<&obj::CoreRelo> = object.core_relos.iter().flat_map(|(_, r)| r.iter()).collect();
        let cands = Candidates::find(&object.btf, &all_relos, kernel, &extra)?;
        // Each kernel function called: its id in the kernel's BTF, or why it cannot be called.
        let kfuncs: Vec<Result<u32, String>> = object
            .kfuncs
            .iter()
            .map(|k| kfunc_id(&object.btf, kernel, &cands, k))
            .collect::<Result<_, _>>()?;

        let mut programs = Vec::with_capacity(object.programs.len());
        for (p, tp_name) in object.programs.iter().zip(&tp_names) {
            let rel_err = |why: String| Error::Relocation {
                prog: p.name.clone(),
                why,
            };
            if !p.section.starts_with("tp_btf/") {
                return Err(rel_err(format!(
                    "section {}: only tp_btf/ programs are supported",
                    p.section
                )));
            }
            let mut attach_btf_id = cands.get(tp_name, kind::TYPEDEF).first().copied().ok_or_else(|| {
                format!(
                    "the kernel has no tracepoint {} (no {} in its BTF)",
                    &p.section["tp_btf/".len()..],
                    String::from_utf8_lossy(tp_name)
                )
            });
            let mut insns = p.insns.clone();
            // Kernel functions: BPF_PSEUDO_KFUNC_CALL of their id in vmlinux's BTF (off 0).
            for &(i, target) in &p.relocations {
                let obj::Target::Kfunc(k) = target else { continue };
                match &kfuncs[k] {
                    Ok(id) => {
                        let insn = &mut insns[i * obj::INSN..(i + 1) * obj::INSN];
                        insn[1] = (insn[1] & 0x0f) | (obj::PSEUDO_KFUNC_CALL << 4);
                        insn[2..4].copy_from_slice(&0i16.to_le_bytes());
                        insn[4..8].copy_from_slice(&id.to_le_bytes());
                    }
                    Err(why) => {
                        if attach_btf_id.is_ok() {
                            attach_btf_id = Err(why.clone());
                        }
                    }
                }
            }
            let mut poisoned = Vec::new();
            relocate_core(&object, p, kernel, &cands, &mut insns, &mut |r| {
                if r.value.is_none() {
                    poisoned.push(core::Poisoned {
                        insn: r.insn,
                        field: r.field,
                    });
                }
            })?;
            programs.push(PreparedProgram {
                name: p.name.clone(),
                section: p.section.clone(),
                insns,
                attach_btf_id,
                poisoned,
                needs_btf: !p.subprograms.is_empty(),
            });
        }

        // The maps.
        let mut maps = Vec::with_capacity(object.maps.len());
        for def in &object.maps {
            let sys_err = |what: String, e| Error::Sys {
                what,
                source: e,
                log: String::new(),
            };
            let fd = sys::map_create(
                &def.name,
                def.map_type,
                def.key_size,
                def.value_size,
                def.max_entries,
                def.map_flags,
            )
            .map_err(|e| sys_err(format!("creating map {}", def.name), e))?;
            if let Some((_, data)) = &def.data {
                if data.iter().any(|&b| b != 0) {
                    sys::map_update(fd.as_raw_fd(), &0u32.to_ne_bytes(), data, 0)
                        .map_err(|e| sys_err(format!("writing {}", def.name), e))?;
                }
                if def.map_flags & obj::F_RDONLY_PROG != 0 {
                    sys::map_freeze(fd.as_raw_fd())
                        .map_err(|e| sys_err(format!("freezing {}", def.name), e))?;
                }
            }
            maps.push(Some(Map {
                fd,
                def: obj::MapDef {
                    data: None,
                    ..def.clone()
                },
            }));
        }

        // Map references.
        for (prog, def) in programs.iter_mut().zip(&object.programs) {
            for &(i, target) in &def.relocations {
                let at = i * obj::INSN;
                let (m, src, off) = match target {
                    Target::Map(m) => (m, 1u8, None),
                    Target::Data(m, off) => (m, 2u8, Some(off)),
                    Target::Kfunc(_) => continue,
                };
                let fd = maps[m].as_ref().map_or(-1, |x| x.fd.as_raw_fd());
                let insn = &mut prog.insns[at..at + 2 * obj::INSN];
                insn[1] = (insn[1] & 0x0f) | (src << 4);
                insn[4..8].copy_from_slice(&fd.to_le_bytes());
                if let Some(off) = off {
                    insn[12..16].copy_from_slice(&off.to_le_bytes());
                }
            }
        }
        let prepared = Prepared {
            object,
            maps,
            programs,
            btf_fd: std::cell::OnceCell::new(),
        };
        if self.object_btf {
            prepared.object_btf()?;
        }
        Ok(prepared)
    }
}

/// One CO-RE relocation as applied ([`core_report`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relocated {
    /// The program.
    pub program: String,
    /// Instruction index.
    pub insn: usize,
    /// What it names: `struct task_struct.real_parent`.
    pub field: String,
    /// `BPF_CORE_*` ([`core::relo`]).
    pub kind: u32,
    /// The value patched in; `None`: nothing matched, the instruction was poisoned.
    pub value: Option<u64>,
}

/// Applies the CO-RE relocations of program `p` to `insns`, telling `seen` each one.
fn relocate_core(
    object: &Object<'_>,
    p: &obj::ProgramDef,
    kernel: &Btf<'_>,
    cands: &Candidates,
    insns: &mut [u8],
    seen: &mut dyn FnMut(Relocated),
) -> Result<(), Error> {
    let rel_err = |why: String| Error::Relocation {
        prog: p.name.clone(),
        why,
    };
    for r in &p.core_relos {
        let at = r.insn_off as usize;
        if !at.is_multiple_of(obj::INSN) || at + obj::INSN > insns.len() {
            return Err(rel_err(format!(
                "CO-RE relocation at byte {at}, outside the program"
            )));
        }
        let field = || core::describe(&object.btf, r);
        let res = core::resolve(&object.btf, r, kernel, cands)
            .map_err(|e| rel_err(format!("CO-RE relocation of {}: {e}", field())))?;
        let poisoned = patch(insns, at / obj::INSN, res).map_err(|why| {
            rel_err(format!(
                "CO-RE relocation of {} at instruction {}: {why}",
                field(),
                at / obj::INSN
            ))
        })?;
        let value = match res {
            Resolved::Value { new, .. } if !poisoned => Some(new),
            _ => None,
        };
        seen(Relocated {
            program: p.name.clone(),
            insn: at / obj::INSN,
            field: field(),
            kind: r.kind,
            value,
        });
    }
    Ok(())
}

/// Every CO-RE relocation of an object resolved against `kernel`, without creating anything
/// in the kernel (for tests and diagnostics).
pub fn core_report(object: &[u8], kernel: &Btf<'_>) -> Result<Vec<Relocated>, Error> {
    let object = Object::parse(object)?;
    let all: Vec<&obj::CoreRelo> = object.core_relos.iter().flat_map(|(_, r)| r.iter()).collect();
    let cands = Candidates::find(&object.btf, &all, kernel, &[])?;
    let mut out = Vec::new();
    for p in &object.programs {
        let mut insns = p.insns.clone();
        relocate_core(&object, p, kernel, &cands, &mut insns, &mut |r| out.push(r))?;
    }
    Ok(out)
}

/// Kernel function `name`'s id in the kernel's BTF, or why it cannot be called: not there, or
/// with another number of parameters than the object declares.
fn kfunc_id(
    local: &Btf<'_>,
    kernel: &Btf<'_>,
    cands: &Candidates,
    name: &str,
) -> Result<Result<u32, String>, Error> {
    let Some(&id) = cands.get(name.as_bytes(), kind::FUNC).first() else {
        return Ok(Err(format!("the kernel has no function {name} (a kfunc)")));
    };
    let params = |btf: &Btf<'_>, func: u32| -> Result<u32, Error> {
        let proto = btf.size_or_type(func)?;
        if btf.kind(proto)? != kind::FUNC_PROTO {
            return Err(btf.bad(format!("{name}: its type is not a function prototype")));
        }
        btf.vlen(proto)
    };
    let mine = local.find_by_names(&[(name.as_bytes(), kind::FUNC)])?;
    let Some(&local_id) = mine.first().and_then(|v| v.first()) else {
        return Err(local.bad(format!("the object calls {name} but its BTF does not declare it")));
    };
    let (k, l) = (params(kernel, id)?, params(local, local_id)?);
    if k != l {
        return Ok(Err(format!(
            "the kernel's {name} takes {k} parameters, the object's {l}"
        )));
    }
    Ok(Ok(id))
}

/// Patches instruction `i` with a CO-RE result; true if it was poisoned.
fn patch(insns: &mut [u8], i: usize, res: Resolved) -> Result<bool, String> {
    let at = i * obj::INSN;
    let code = insns[at];
    let class = code & 7;
    let is_ldimm64 = code == 0x18;
    let poison = |insns: &mut [u8]| {
        let mut p = |j: usize| {
            if let Some(s) = insns.get_mut(j * obj::INSN..(j + 1) * obj::INSN) {
                s[0] = 0x85; // BPF_JMP | BPF_CALL
                s[1] = 0;
                s[2..4].copy_from_slice(&[0, 0]);
                s[4..8].copy_from_slice(&core::POISON.to_le_bytes());
            }
        };
        if is_ldimm64 {
            p(i + 1);
        }
        p(i);
    };
    let (new, orig, resize, bad_resize) = match res {
        Resolved::Poison => {
            poison(insns);
            return Ok(true);
        }
        Resolved::Value {
            new,
            orig,
            resize,
            bad_resize,
        } => (new, orig, resize, bad_resize),
    };
    let imm = i32::from_le_bytes([insns[at + 4], insns[at + 5], insns[at + 6], insns[at + 7]]);
    let off = i16::from_le_bytes([insns[at + 2], insns[at + 3]]);
    match class {
        // ALU, ALU64 with an immediate.
        4 | 7 => {
            if code & 0x08 != 0 {
                return Err("an ALU instruction without an immediate".into());
            }
            if let Some(o) = orig
                && i64::from(imm) != o as i64
                && imm as u32 as u64 != o
            {
                return Err(format!("the instruction holds {imm}, not the expected {o}"));
            }
            insns[at + 4..at + 8].copy_from_slice(&(new as u32).to_le_bytes());
        }
        // LDX, ST, STX.
        1..=3 => {
            if let Some(o) = orig
                && i64::from(off) != o as i64
            {
                return Err(format!("the instruction's offset is {off}, not the expected {o}"));
            }
            if new > i16::MAX as u64 {
                return Err(format!("offset {new} does not fit an instruction"));
            }
            if bad_resize {
                poison(insns);
                return Ok(true);
            }
            insns[at + 2..at + 4].copy_from_slice(&(new as i16).to_le_bytes());
            if let Some((local, kernel)) = resize {
                let size = |b: u32| match b {
                    1 => Some(0x10u8),
                    2 => Some(0x08),
                    4 => Some(0x00),
                    8 => Some(0x18),
                    _ => None,
                };
                if size(local) != Some(code & 0x18) {
                    return Err(format!("a {local}-byte field read with another size"));
                }
                let s = size(kernel).ok_or_else(|| format!("the kernel's field is {kernel} bytes"))?;
                insns[at] = (code & !0x18) | s;
            }
        }
        // LD: only ld_imm64.
        0 if is_ldimm64 => {
            let next = insns
                .get(at + 8..at + 16)
                .ok_or("an ld_imm64 at the end of the program")?;
            if insns[at + 1] & 0xf0 != 0 || off != 0 || next[..4] != [0, 0, 0, 0] {
                return Err("an ld_imm64 of an unexpected form".into());
            }
            let hi = u32::from_le_bytes([next[4], next[5], next[6], next[7]]);
            let cur = u64::from(imm as u32) | u64::from(hi) << 32;
            if let Some(o) = orig
                && cur != o
            {
                return Err(format!("the instruction holds {cur}, not the expected {o}"));
            }
            insns[at + 4..at + 8].copy_from_slice(&(new as u32).to_le_bytes());
            insns[at + 12..at + 16].copy_from_slice(&((new >> 32) as u32).to_le_bytes());
        }
        _ => {
            return Err(format!(
                "an instruction (opcode {code:#04x}) that CO-RE cannot patch"
            ));
        }
    }
    Ok(false)
}

/// The last lines of a verifier log, at most `max` bytes.
fn log_tail(log: &[u8], max: usize) -> String {
    let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    let text = text.trim_end();
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = text.len() - max;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    // From a line's start.
    let rest = &text[cut..];
    let rest = rest.find('\n').map_or(rest, |n| &rest[n + 1..]);
    format!("…\n{rest}")
}

/// The field whose poisoned instruction the verifier reached (`3: (85) call unknown#195896080`).
fn poisoned_reached(log: &str, poisoned: &[core::Poisoned]) -> Option<String> {
    let call = format!("call unknown#{}", core::POISON);
    let line = log.lines().find(|l| l.contains(&call))?;
    let insn: usize = line.split(':').next()?.trim().parse().ok()?;
    // (An ld_imm64's second half is poisoned too, but the verifier stops at the first.)
    poisoned.iter().find(|p| p.insn == insn).map(|p| p.field.clone())
}

/// How much of the verifier's log an error keeps.
const LOG_KEEP: usize = 1500;

impl Prepared<'_> {
    /// The programs' names (their functions'), in the object's order.
    pub fn programs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.programs
            .iter()
            .map(|p| (p.name.as_str(), p.section.as_str()))
    }

    /// Loads program `name` (its function's name). When the kernel refuses it, it is loaded again
    /// with the verifier's log (and the object's BTF, so that the log shows the source lines),
    /// whose last lines go in the error; a relocation that found nothing and that the verifier
    /// reached is named.
    pub fn load(&self, name: &str) -> Result<Program, Error> {
        self.load_logged(name, None)
    }

    /// Loads program `name` as [`Prepared::load`] does, with the verifier's statistics
    /// (`BPF_LOG_STATS`: the instructions processed, the states, the verification time in µs) as
    /// the kernel writes them at the end of its log.
    pub fn load_with_stats(&self, name: &str) -> Result<(Program, String), Error> {
        let mut log = vec![0u8; 4096];
        let prog = self.load_logged(name, Some(&mut log))?;
        let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
        Ok((prog, String::from_utf8_lossy(&log[..end]).trim_end().to_string()))
    }

    fn load_logged(&self, name: &str, stats: Option<&mut [u8]>) -> Result<Program, Error> {
        let p = self
            .programs
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| Error::Missing(format!("the object has no program {name}")))?;
        let attach_btf_id = p
            .attach_btf_id
            .clone()
            .map_err(|why| Error::Missing(format!("program {name}: {why}")))?;
        let mut license = self.object.license.clone();
        license.push(0);
        let (funcs, lines) = self.ext_info(name);
        let args = |log, btf: Option<&OwnedFd>| sys::ProgLoadArgs {
            name,
            insns: &p.insns,
            license: &license,
            attach_btf_id,
            log,
            btf: btf.map(|b| (b.as_raw_fd(), funcs.as_slice(), lines.as_slice())),
        };
        let btf_fd = match self.btf_fd.get() {
            Some(Ok(fd)) => Some(fd),
            _ if p.needs_btf => Some(self.object_btf()?),
            _ => None,
        };
        let first = match sys::prog_load(args(stats.map(|b| (b, 4)), btf_fd)) {
            Ok(fd) => {
                return Ok(Program {
                    name: name.to_string(),
                    section: p.section.clone(),
                    fd,
                });
            }
            Err(e) => e,
        };
        let what = format!("loading {name} ({})", p.section);
        // Refusals of bpf() itself say enough; a log would not be written.
        if matches!(first.raw_os_error(), Some(libc::EPERM | libc::ENOSYS)) {
            return Err(Error::Sys {
                what,
                source: first,
                log: String::new(),
            });
        }
        let mut log = vec![0u8; 1 << 20];
        let btf = self.object_btf().ok();
        // The first refusal's errno stands (the second may differ by the log alone: ENOSPC on
        // kernels before 6.4 when it overflows).
        let _second = sys::prog_load(args(Some((&mut log, 1)), btf));
        let source = first;
        let mut text = log_tail(&log, LOG_KEEP);
        if let Some(field) = poisoned_reached(&text, &p.poisoned) {
            text = format!("the running kernel has no {field} (a CO-RE relocation found no match)\n{text}");
        }
        Err(Error::Sys {
            what,
            source,
            log: if text.is_empty() {
                String::new()
            } else {
                format!("\n{text}")
            },
        })
    }

    /// The object's BTF in the kernel, loaded the first time it is asked for.
    fn object_btf(&self) -> Result<&OwnedFd, Error> {
        let r = self.btf_fd.get_or_init(|| {
            sys::btf_load(&self.fixed_btf(), None).map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL))
        });
        r.as_ref().map_err(|&errno| {
            // Again, for the kernel's words.
            let mut log = vec![0u8; 64 << 10];
            let _ = sys::btf_load(&self.fixed_btf(), Some(&mut log));
            let text = log_tail(&log, LOG_KEEP);
            Error::Sys {
                what: "loading the object's BTF".into(),
                source: std::io::Error::from_raw_os_error(errno),
                log: if text.is_empty() {
                    String::new()
                } else {
                    format!("\n{text}")
                },
            }
        })
    }

    /// The program's func_info and line_info records as the kernel takes them (instruction
    /// indices instead of byte offsets).
    fn ext_info(&self, name: &str) -> (Vec<u8>, Vec<u8>) {
        let mut f = Vec::new();
        let mut l = Vec::new();
        if let Some(p) = self.object.programs.iter().find(|p| p.name == name) {
            for r in &p.func_info {
                f.extend_from_slice(&(r[0] / 8).to_ne_bytes());
                f.extend_from_slice(&r[1].to_ne_bytes());
            }
            for r in &p.line_info {
                l.extend_from_slice(&(r[0] / 8).to_ne_bytes());
                for w in &r[1..] {
                    l.extend_from_slice(&w.to_ne_bytes());
                }
            }
        }
        (f, l)
    }

    /// The object's BTF with its data sections' sizes and variables' offsets filled in (the
    /// compiler leaves them to the loader), for `BPF_BTF_LOAD`.
    fn fixed_btf(&self) -> Vec<u8> {
        self.object
            .kernel_btf()
            .unwrap_or_else(|_| self.object.btf_bytes.to_vec())
    }

    /// Takes map `name` out (the programs keep their own reference to it in the kernel).
    pub fn take_map(&mut self, name: &str) -> Option<Map> {
        let i = self.object.map_index(name)?;
        self.maps.get_mut(i)?.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(code: u8, regs: u8, off: i16, imm: i32) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = code;
        b[1] = regs;
        b[2..4].copy_from_slice(&off.to_le_bytes());
        b[4..8].copy_from_slice(&imm.to_le_bytes());
        b
    }

    fn value(new: u64, orig: Option<u64>) -> Resolved {
        Resolved::Value {
            new,
            orig,
            resize: None,
            bad_resize: false,
        }
    }

    #[test]
    fn a_load_gets_the_kernels_offset_and_size() {
        // r1 = *(u32 *)(r2 + 8)
        let mut p = insn(0x61, 0x21, 8, 0).to_vec();
        assert_eq!(patch(&mut p, 0, value(1268, Some(8))), Ok(false));
        assert_eq!(i16::from_le_bytes([p[2], p[3]]), 1268);
        // The same load of a field the kernel has as 8 bytes (unsigned): a u64 load.
        let mut p = insn(0x61, 0x21, 8, 0).to_vec();
        let r = Resolved::Value {
            new: 16,
            orig: Some(8),
            resize: Some((4, 8)),
            bad_resize: false,
        };
        assert_eq!(patch(&mut p, 0, r), Ok(false));
        assert_eq!(p[0], 0x79, "BPF_LDX | BPF_MEM | BPF_DW");
        // A signed field of another size: poisoned, not read wrongly.
        let mut p = insn(0x61, 0x21, 8, 0).to_vec();
        let r = Resolved::Value {
            new: 16,
            orig: Some(8),
            resize: None,
            bad_resize: true,
        };
        assert_eq!(patch(&mut p, 0, r), Ok(true));
        assert_eq!(p[0], 0x85);
        assert_eq!(i32::from_le_bytes([p[4], p[5], p[6], p[7]]), core::POISON);
    }

    #[test]
    fn what_the_compiler_put_there_is_checked() {
        let mut p = insn(0x61, 0x21, 12, 0).to_vec();
        let e = patch(&mut p, 0, value(1268, Some(8))).unwrap_err();
        assert!(e.contains("offset is 12, not the expected 8"), "{e}");
        // An offset that does not fit 16 bits.
        let mut p = insn(0x61, 0x21, 8, 0).to_vec();
        assert!(patch(&mut p, 0, value(40_000, Some(8))).is_err());
        // An ALU with a register source has no immediate to patch.
        let mut p = insn(0x0f, 0x21, 0, 0).to_vec();
        assert!(patch(&mut p, 0, value(1, None)).is_err());
    }

    #[test]
    fn immediates_and_ld_imm64() {
        // r1 = 24 (mov64 imm)
        let mut p = insn(0xb7, 0x01, 0, 24).to_vec();
        assert_eq!(patch(&mut p, 0, value(40, Some(24))), Ok(false));
        assert_eq!(i32::from_le_bytes([p[4], p[5], p[6], p[7]]), 40);
        // ld_imm64 r1 = 1, then a poisoned one: both halves become calls.
        let mut p = [insn(0x18, 0x01, 0, 1), insn(0, 0, 0, 0)].concat();
        assert_eq!(patch(&mut p, 0, value(1 << 40 | 5, Some(1))), Ok(false));
        assert_eq!(i32::from_le_bytes([p[4], p[5], p[6], p[7]]), 5);
        assert_eq!(i32::from_le_bytes([p[12], p[13], p[14], p[15]]), 1 << 8);
        assert_eq!(patch(&mut p, 0, Resolved::Poison), Ok(true));
        assert_eq!((p[0], p[8]), (0x85, 0x85));
        // An ld_imm64 cut at the end of the program.
        let mut p = insn(0x18, 0x01, 0, 1).to_vec();
        assert!(patch(&mut p, 0, value(2, Some(1))).is_err());
    }

    #[test]
    fn the_verifier_log_keeps_its_last_lines() {
        let log: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let t = log_tail(log.as_bytes(), 100);
        assert!(t.starts_with("…\nline 9"), "{t}");
        assert!(t.ends_with("line 999"), "{t}");
        assert!(t.len() < 110);
        let p = [core::Poisoned {
            insn: 3,
            field: "struct task_struct.tgix".into(),
        }];
        let log =
            "2: (79) r9 = *(u64 *)(r1 +0)\n3: (85) call unknown#195896080\ninvalid func unknown#195896080";
        assert_eq!(
            poisoned_reached(log, &p).as_deref(),
            Some("struct task_struct.tgix")
        );
        assert_eq!(poisoned_reached("4: (85) call unknown#195896080", &p), None);
    }
}
