//! A BPF object file as clang writes it (`clang -target bpf -g -O2`, CO-RE): its programs
//! (one per executable section), their relocations against maps and global data, the maps
//! defined in `.maps` (BTF-defined), the global data sections, the license and the `.BTF.ext`
//! records (function and line info, CO-RE relocations).
//!
//! Read with the `object` crate (bounds-checked ELF parsing, fuzzed upstream); nothing here
//! trusts a size, an offset or an index it did not check.

use object::{Object as _, ObjectSection, ObjectSymbol, RelocationTarget, SectionIndex};

use crate::Error;
use crate::btf::{Btf, kind};

/// One eBPF instruction's size.
pub const INSN: usize = 8;

/// Names with a number each.
type Named = Vec<(String, u32)>;

/// A map as the object defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapDef {
    /// Its name (the variable's in `.maps`, or the data section's).
    pub name: String,
    /// `BPF_MAP_TYPE_*`.
    pub map_type: u32,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes.
    pub value_size: u32,
    /// Entries.
    pub max_entries: u32,
    /// `BPF_F_*`.
    pub map_flags: u32,
    /// For a global data section's map: the section's index and its initial bytes.
    pub data: Option<(SectionIndex, Vec<u8>)>,
}

/// What an instruction refers to, for the loader to fill in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A map's fd in an `ld_imm64` (`BPF_PSEUDO_MAP_FD`): index into [`Object::maps`].
    Map(usize),
    /// An address in a global data section's map, in an `ld_imm64` (`BPF_PSEUDO_MAP_VALUE`):
    /// map index, offset.
    Data(usize, u32),
    /// A kernel function called (`BPF_PSEUDO_KFUNC_CALL`): index into [`Object::kfuncs`].
    Kfunc(usize),
}

/// A program: a global function of an executable section, linked with the functions of
/// `.text` it calls or passes as callbacks (appended after its own instructions, as libbpf
/// does, each once; the calls' and `ld_imm64`s' immediates made relative to them).
#[derive(Debug, Clone)]
pub struct ProgramDef {
    /// The function's name (`on_exec`).
    pub name: String,
    /// Its section (`tp_btf/sched_process_exec`).
    pub section: String,
    /// Its instructions, linked.
    pub insns: Vec<u8>,
    /// Instruction index → what it refers to.
    pub relocations: Vec<(usize, Target)>,
    /// Its CO-RE relocations and those of the functions appended (byte offsets in `insns`).
    pub core_relos: Vec<CoreRelo>,
    /// func_info records (byte offset in `insns`, type id): its own, then the appended
    /// functions'.
    pub func_info: Vec<[u32; 2]>,
    /// line_info records (byte offset in `insns`, file, line, column), likewise.
    pub line_info: Vec<[u32; 4]>,
    /// The functions of `.text` appended, in order, with their first instruction's index.
    pub subprograms: Vec<(String, usize)>,
}

/// `BPF_JMP | BPF_CALL`.
const CALL: u8 = 0x85;
/// `BPF_LD | BPF_IMM | BPF_DW`.
const LD_IMM64: u8 = 0x18;
/// A call's `src_reg`: a BPF function (its index relative to the call in `imm`).
pub const PSEUDO_CALL: u8 = 1;
/// A call's `src_reg`: a kernel function (its BTF id in `imm`).
pub const PSEUDO_KFUNC_CALL: u8 = 2;
/// An `ld_imm64`'s `src_reg`: a BPF function's address (relative index in `imm`).
pub const PSEUDO_FUNC: u8 = 4;

/// A function in an executable section.
struct Func {
    name: String,
    /// Byte range in its section.
    start: usize,
    end: usize,
    global: bool,
}

/// What a relocated instruction of a section refers to.
#[derive(Clone, Copy)]
enum Rel {
    Data(Target),
    Kfunc(usize),
    /// A call of the function of .text at this byte offset.
    Call(usize),
    /// The address of the function of .text at this byte offset (`ld_imm64`).
    FuncAddr(usize),
}

/// An executable section.
struct Code<'a> {
    index: SectionIndex,
    name: String,
    insns: &'a [u8],
    funcs: Vec<Func>,
    /// Byte offset → what, sorted.
    rels: Vec<(usize, Rel)>,
}

/// A section's `.BTF.ext` records.
struct Ext1<'r> {
    funcs: &'r [[u32; 2]],
    lines: &'r [[u32; 4]],
    core: &'r [CoreRelo],
}

/// Most functions of .text appended to one program (the kernel's own limit on a program's
/// functions is 256).
const MAX_SUBPROGRAMS: usize = 256;

/// Program `f` of section `c`, linked: its instructions, then each function of .text it
/// reaches, once, with every relocation and `.BTF.ext` record moved along.
fn link<'r>(
    code: &[Code<'_>],
    text: Option<usize>,
    c: &Code<'_>,
    f: &Func,
    ext_of: &dyn Fn(&str) -> Ext1<'r>,
) -> Result<ProgramDef, Error> {
    let mut p = ProgramDef {
        name: f.name.clone(),
        section: c.name.clone(),
        insns: Vec::new(),
        relocations: Vec::new(),
        core_relos: Vec::new(),
        func_info: Vec::new(),
        line_info: Vec::new(),
        subprograms: Vec::new(),
    };
    // (section in `code`, function index in it or None for the program, its start in p.insns)
    let mut queue: Vec<(usize, Option<usize>, usize)> = Vec::new();
    let ci = code.iter().position(|x| x.index == c.index).unwrap_or(0);
    queue.push((ci, None, 0));
    // Functions of .text placed: index in text's funcs → start (instruction index).
    let mut placed: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    p.insns.extend_from_slice(&c.insns[f.start..f.end]);
    while next < queue.len() {
        let (si, fi, dst) = queue[next];
        next += 1;
        let sec = &code[si];
        let (start, end) = match fi {
            Some(i) => (sec.funcs[i].start, sec.funcs[i].end),
            None => (f.start, f.end),
        };
        let from = sec.rels.partition_point(|r| r.0 < start);
        for &(off, rel) in sec.rels[from..].iter().take_while(|r| r.0 < end) {
            let at = dst + (off - start) / INSN;
            // An ld_imm64 is two instructions, both the function's.
            if !matches!(rel, Rel::Call(_) | Rel::Kfunc(_)) && off + 2 * INSN > end {
                return Err(elf(format!(
                    "{}: an ld_imm64 cut at the end of a function (byte {off} of {})",
                    p.name, sec.name
                )));
            }
            let target = match rel {
                Rel::Data(t) => {
                    p.relocations.push((at, t));
                    continue;
                }
                Rel::Kfunc(k) => {
                    p.relocations.push((at, Target::Kfunc(k)));
                    continue;
                }
                Rel::Call(t) | Rel::FuncAddr(t) => t,
            };
            let ti = text.ok_or_else(|| elf(format!("{}: a call into .text, which is empty", p.name)))?;
            let tf = code[ti]
                .funcs
                .iter()
                .position(|g| g.start == target)
                .ok_or_else(|| {
                    elf(format!(
                        "{}: a call or callback at byte {target} of .text, where no function starts",
                        p.name
                    ))
                })?;
            let callee = match placed.iter().find(|x| x.0 == tf) {
                Some(&(_, s)) => s,
                None => {
                    if placed.len() >= MAX_SUBPROGRAMS {
                        return Err(elf(format!("{}: more than {MAX_SUBPROGRAMS} functions", p.name)));
                    }
                    let g = &code[ti].funcs[tf];
                    let s = p.insns.len() / INSN;
                    p.insns.extend_from_slice(&code[ti].insns[g.start..g.end]);
                    placed.push((tf, s));
                    p.subprograms.push((g.name.clone(), s));
                    queue.push((ti, Some(tf), s));
                    s
                }
            };
            let rel_imm = i32::try_from(callee as i64 - (at as i64 + 1))
                .map_err(|_| elf(format!("{}: a call too far", p.name)))?;
            let insn = &mut p.insns[at * INSN..(at + 1) * INSN];
            let src = if matches!(rel, Rel::Call(_)) {
                PSEUDO_CALL
            } else {
                PSEUDO_FUNC
            };
            insn[1] = (insn[1] & 0x0f) | (src << 4);
            insn[4..8].copy_from_slice(&rel_imm.to_le_bytes());
        }
        let e = ext_of(&sec.name);
        let moved = |o: u32| -> Option<u32> {
            let o = o as usize;
            (o >= start && o < end).then(|| (dst * INSN + o - start) as u32)
        };
        for r in e.funcs {
            if let Some(o) = moved(r[0]) {
                p.func_info.push([o, r[1]]);
            }
        }
        for r in e.lines {
            if let Some(o) = moved(r[0]) {
                p.line_info.push([o, r[1], r[2], r[3]]);
            }
        }
        for r in e.core {
            if let Some(o) = moved(r.insn_off) {
                p.core_relos.push(CoreRelo { insn_off: o, ..*r });
            }
        }
    }
    Ok(p)
}

/// A CO-RE relocation record (`struct bpf_core_relo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreRelo {
    /// Byte offset of the instruction in its section.
    pub insn_off: u32,
    /// The local (object's BTF) root type.
    pub type_id: u32,
    /// The access string's offset in the object's BTF strings (`0:1:2`).
    pub access_str_off: u32,
    /// `BPF_CORE_*`.
    pub kind: u32,
}

/// A parsed object.
pub struct Object<'a> {
    /// Programs, in section order.
    pub programs: Vec<ProgramDef>,
    /// Maps: the `.maps` ones, then one per global data section.
    pub maps: Vec<MapDef>,
    /// The license string.
    pub license: Vec<u8>,
    /// The object's own BTF.
    pub btf: Btf<'a>,
    /// The raw `.BTF` bytes (for `BPF_BTF_LOAD`).
    pub btf_bytes: &'a [u8],
    /// CO-RE relocations by section name (each program has its own, linked).
    pub core_relos: Vec<(String, Vec<CoreRelo>)>,
    /// func_info records (insn byte offset, type id) by section; record size.
    pub func_info: Vec<(String, Vec<[u32; 2]>)>,
    /// line_info records (insn byte offset, file, line, column) by section.
    pub line_info: Vec<(String, Vec<[u32; 4]>)>,
    /// Global variables: name → (map index, offset, size).
    pub globals: Vec<(String, usize, u32, u32)>,
    /// Kernel functions called (externs in `.ksyms`), by name.
    pub kfuncs: Vec<String>,
    /// Sizes of the sections, and offsets of the symbols, that DATASECs name (for BTF_LOAD).
    datasec_facts: (Named, Named),
}

/// `BPF_MAP_TYPE_ARRAY`, for global data.
const MAP_ARRAY: u32 = 2;
/// `BPF_F_RDONLY_PROG`: `.rodata` cannot be written by the programs.
pub const F_RDONLY_PROG: u32 = 1 << 7;

fn elf(why: impl Into<String>) -> Error {
    Error::Elf(why.into())
}

impl<'a> Object<'a> {
    /// Parses an object file.
    pub fn parse(data: &'a [u8]) -> Result<Object<'a>, Error> {
        let file = object::read::elf::ElfFile64::<object::Endianness>::parse(data)
            .map_err(|e| elf(format!("not a 64-bit ELF object: {e}")))?;
        if file.elf_header().e_machine.get(file.endian()) != object::elf::EM_BPF {
            return Err(elf("not a BPF object (e_machine is not EM_BPF)"));
        }
        if !file.is_little_endian() {
            return Err(elf("a big-endian object (this loader reads little-endian BTF)"));
        }
        let section = |name: &str| file.section_by_name(name);
        let data_of = |s: &object::read::elf::ElfSection64<'a, '_, object::Endianness>| {
            s.data()
                .map_err(|e| elf(format!("section {}: {e}", s.name().unwrap_or("?"))))
        };
        let btf_sec = section(".BTF").ok_or_else(|| elf("no .BTF section (built without -g?)"))?;
        let btf_bytes = data_of(&btf_sec)?;
        let btf = Btf::parse(btf_bytes, "the object's BTF")?;
        let license = match section("license") {
            Some(s) => {
                let d = data_of(&s)?;
                d[..d.iter().position(|&c| c == 0).unwrap_or(d.len())].to_vec()
            }
            None => return Err(elf("no license section")),
        };

        // Maps defined in .maps, by their BTF (the variables of the DATASEC named .maps).
        let mut maps = Vec::new();
        let maps_index = section(".maps").map(|s| s.index());
        let text_index = section(".text").map(|s| s.index());
        if maps_index.is_some() {
            maps = btf_maps(&btf)?;
        }
        // Global data sections: one array map each, with one element, the section's bytes.
        let mut data_maps: Vec<(SectionIndex, usize)> = Vec::new();
        for s in file.sections() {
            let name = s.name().unwrap_or("");
            let is_data = name == ".rodata"
                || name == ".data"
                || name == ".bss"
                || name.starts_with(".rodata.")
                || name.starts_with(".data.");
            // Strings merged by the compiler (.rodata.str1.1) are data too.
            if !is_data || s.size() == 0 {
                continue;
            }
            let size = u32::try_from(s.size()).map_err(|_| elf(format!("section {name} is too big")))?;
            let bytes = if name == ".bss" {
                vec![0; size as usize]
            } else {
                data_of(&s)?.to_vec()
            };
            if bytes.len() != size as usize {
                return Err(elf(format!("section {name} is cut")));
            }
            data_maps.push((s.index(), maps.len()));
            maps.push(MapDef {
                name: name.to_string(),
                map_type: MAP_ARRAY,
                key_size: 4,
                value_size: size,
                max_entries: 1,
                map_flags: if name.starts_with(".rodata") {
                    F_RDONLY_PROG
                } else {
                    0
                },
                data: Some((s.index(), bytes)),
            });
        }
        let map_by_name = |n: &str| maps.iter().position(|m| m.name == n);

        // Global variables (symbols in data sections).
        let mut globals = Vec::new();
        for sym in file.symbols() {
            let Some(idx) = sym.section_index() else { continue };
            let Some(&(_, m)) = data_maps.iter().find(|(i, _)| *i == idx) else {
                continue;
            };
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() || sym.kind() == object::SymbolKind::Section {
                continue;
            }
            let (off, size) = (sym.address(), sym.size());
            if off
                .checked_add(size)
                .is_none_or(|e| e > u64::from(maps[m].value_size))
            {
                return Err(elf(format!("global {name} lies outside its section")));
            }
            globals.push((name.to_string(), m, off as u32, size as u32));
        }

        let (func_info, line_info, core_relos) = match section(".BTF.ext") {
            Some(s) => ext(data_of(&s)?, &btf)?,
            None => (Vec::new(), Vec::new(), Vec::new()),
        };

        // The code: every executable section's functions and relocations.
        let mut code: Vec<Code<'a>> = Vec::new();
        let mut kfuncs: Vec<String> = Vec::new();
        for s in file.sections() {
            let name = s.name().unwrap_or("");
            if s.kind() != object::SectionKind::Text || s.size() == 0 {
                continue;
            }
            let insns = data_of(&s)?;
            if !insns.len().is_multiple_of(INSN) {
                return Err(elf(format!(
                    "section {name}: {} bytes, not whole instructions",
                    insns.len()
                )));
            }
            let mut funcs = Vec::new();
            for y in file.symbols() {
                if y.section_index() != Some(s.index()) || y.kind() != object::SymbolKind::Text {
                    continue;
                }
                let fname = y
                    .name()
                    .map_err(|e| elf(format!("{name}: a function's name: {e}")))?;
                let (start, size) = (y.address(), y.size());
                let end = start.checked_add(size).filter(|&e| e <= insns.len() as u64);
                let Some(end) = end.filter(|_| {
                    size > 0 && start.is_multiple_of(INSN as u64) && size.is_multiple_of(INSN as u64)
                }) else {
                    return Err(elf(format!(
                        "{name}: function {fname} at {start}+{size} is not whole instructions inside its section"
                    )));
                };
                funcs.push(Func {
                    name: fname.to_string(),
                    start: start as usize,
                    end: end as usize,
                    global: y.is_global(),
                });
            }
            funcs.sort_by_key(|f| f.start);
            if funcs.windows(2).any(|w| w[0].end > w[1].start) {
                return Err(elf(format!("{name}: functions overlap")));
            }
            let mut rels = Vec::new();
            for (off, r) in s.relocations() {
                let RelocationTarget::Symbol(si) = r.target() else {
                    return Err(elf(format!("{name}: a relocation at {off} has no symbol")));
                };
                let sym = file
                    .symbol_by_index(si)
                    .map_err(|e| elf(format!("{name}: relocation at {off}: {e}")))?;
                let at = usize::try_from(off).unwrap_or(usize::MAX);
                if !at.is_multiple_of(INSN) || at.checked_add(INSN).is_none_or(|e| e > insns.len()) {
                    return Err(elf(format!(
                        "{name}: relocation at byte {off} is not on an instruction"
                    )));
                }
                let sym_name = sym.name().unwrap_or("?");
                let imm = i32::from_le_bytes([insns[at + 4], insns[at + 5], insns[at + 6], insns[at + 7]]);
                let is_call = insns[at] == CALL;
                if !is_call && (insns[at] != LD_IMM64 || at + 2 * INSN > insns.len()) {
                    return Err(elf(format!(
                        "{name}: relocation at instruction {} is on opcode {:#04x}, neither ld_imm64 nor a call",
                        at / INSN,
                        insns[at]
                    )));
                }
                let Some(sec) = sym.section_index() else {
                    // An extern: a kernel function (kfunc, in .ksyms), called.
                    if !is_call || !sym.is_undefined() {
                        return Err(elf(format!(
                            "{name}: relocation against {sym_name}, which is not defined here (an extern variable: not supported)"
                        )));
                    }
                    let k = match kfuncs.iter().position(|k| k == sym_name) {
                        Some(k) => k,
                        None => {
                            kfuncs.push(sym_name.to_string());
                            kfuncs.len() - 1
                        }
                    };
                    rels.push((at, Rel::Kfunc(k)));
                    continue;
                };
                let target = if sym.kind() == object::SymbolKind::Text
                    || file
                        .section_by_index(sec)
                        .is_ok_and(|t| t.kind() == object::SectionKind::Text)
                {
                    // A function of .text: called (its index relative to the call, from the
                    // symbol: a section's, with the offset in imm, or the function's, imm -1),
                    // or its address taken (a callback: the offset is the symbol's plus imm).
                    if Some(sec) != text_index {
                        return Err(elf(format!(
                            "{name}: a call or function address of {sym_name}, in a section other than .text"
                        )));
                    }
                    let target = if is_call {
                        (sym.address() as i64).checked_add((i64::from(imm) + 1) * INSN as i64)
                    } else {
                        (sym.address() as i64).checked_add(i64::from(imm))
                    };
                    let target = target
                        .and_then(|t| usize::try_from(t).ok())
                        .ok_or_else(|| elf(format!("{name}: a call to {sym_name}{imm:+} outside .text")))?;
                    if is_call {
                        Rel::Call(target)
                    } else {
                        Rel::FuncAddr(target)
                    }
                } else if is_call {
                    return Err(elf(format!(
                        "{name}: a call at instruction {} to {sym_name}, which is not a function",
                        at / INSN
                    )));
                } else if Some(sec) == maps_index {
                    Rel::Data(Target::Map(map_by_name(sym_name).ok_or_else(|| {
                        elf(format!(
                            "{name}: relocation against map {sym_name}, not in .maps' BTF"
                        ))
                    })?))
                } else if let Some(&(_, m)) = data_maps.iter().find(|(i, _)| *i == sec) {
                    // The instruction's imm holds the offset from the symbol (a section symbol:
                    // from the section's start).
                    let off = (sym.address() as i64).checked_add(i64::from(imm));
                    let off = off
                        .and_then(|o| u32::try_from(o).ok())
                        .filter(|&o| o < maps[m].value_size)
                        .ok_or_else(|| {
                            elf(format!(
                                "{name}: reference to {sym_name}+{imm} outside its section"
                            ))
                        })?;
                    Rel::Data(Target::Data(m, off))
                } else {
                    return Err(elf(format!(
                        "{name}: relocation against {sym_name} in a section this loader does not know"
                    )));
                };
                rels.push((at, target));
            }
            rels.sort_by_key(|r| r.0);
            // A call with no relocation (BPF_PSEUDO_CALL) is to a function of the same section.
            for at in (0..insns.len()).step_by(INSN) {
                if insns[at] == CALL
                    && insns[at + 1] >> 4 == PSEUDO_CALL
                    && rels.binary_search_by_key(&at, |r| r.0).is_err()
                {
                    let imm =
                        i32::from_le_bytes([insns[at + 4], insns[at + 5], insns[at + 6], insns[at + 7]]);
                    let target =
                        usize::try_from(at as i64 + (i64::from(imm) + 1) * INSN as i64).map_err(|_| {
                            elf(format!(
                                "{name}: a call at instruction {} before the section",
                                at / INSN
                            ))
                        })?;
                    if Some(s.index()) != text_index {
                        return Err(elf(format!(
                            "{name}: a call at instruction {} to a function of its own section: only functions in .text can be called",
                            at / INSN
                        )));
                    }
                    let pos = rels.partition_point(|r| r.0 < at);
                    rels.insert(pos, (at, Rel::Call(target)));
                }
            }
            code.push(Code {
                index: s.index(),
                name: name.to_string(),
                insns,
                funcs,
                rels,
            });
        }
        let text = code.iter().position(|c| Some(c.index) == text_index);
        let ext_of = |sec: &str| Ext1 {
            funcs: func_info
                .iter()
                .find(|(s, _)| s == sec)
                .map_or(&[][..], |(_, r)| r.as_slice()),
            lines: line_info
                .iter()
                .find(|(s, _)| s == sec)
                .map_or(&[][..], |(_, r)| r.as_slice()),
            core: core_relos
                .iter()
                .find(|(s, _)| s == sec)
                .map_or(&[][..], |(_, r)| r.as_slice()),
        };

        // Programs: the global functions of the sections other than .text, each linked with the
        // functions of .text it calls or takes the address of.
        let mut programs = Vec::new();
        for c in &code {
            if Some(c.index) == text_index {
                continue;
            }
            let mut any = false;
            for f in c.funcs.iter().filter(|f| f.global) {
                any = true;
                programs.push(link(&code, text, c, f, &ext_of)?);
            }
            if !any {
                return Err(elf(format!(
                    "section {} has no program (no global function)",
                    c.name
                )));
            }
        }

        let mut datasec_facts = (Vec::new(), Vec::new());
        for s in file.sections() {
            if let Ok(name) = s.name() {
                datasec_facts.0.push((name.to_string(), s.size() as u32));
            }
        }
        for sym in file.symbols() {
            if sym.kind() == object::SymbolKind::Data
                && let Ok(name) = sym.name()
            {
                datasec_facts.1.push((name.to_string(), sym.address() as u32));
            }
        }
        Ok(Object {
            programs,
            maps,
            license,
            btf,
            btf_bytes,
            core_relos,
            func_info,
            line_info,
            globals,
            kfuncs,
            datasec_facts,
        })
    }

    /// Fills in, in `bytes` (a copy of the object's `.BTF`), each DATASEC's size and its
    /// variables' offsets from the ELF sections and symbols, as libbpf does before loading it.
    pub fn fix_datasecs(&self, bytes: &mut [u8]) -> Result<(), Error> {
        let btf = &self.btf;
        let put = |bytes: &mut [u8], at: usize, v: u32| {
            if let Some(s) = bytes.get_mut(at..at + 4) {
                s.copy_from_slice(&v.to_le_bytes());
            }
        };
        for id in 1..btf.len() {
            if btf.kind(id)? != kind::DATASEC {
                continue;
            }
            let Some(pos) = btf.type_pos(id) else { continue };
            let name = String::from_utf8_lossy(btf.name(id)?).into_owned();
            if let Some((_, size)) = self.datasec_facts.0.iter().find(|(n, _)| *n == name) {
                put(bytes, pos + 8, *size);
            }
            for i in 0..btf.vlen(id)? {
                let (var, _, _) = btf.datasec_entry(id, i)?;
                let vname = String::from_utf8_lossy(btf.name(var)?).into_owned();
                if let Some((_, off)) = self.datasec_facts.1.iter().find(|(n, _)| *n == vname) {
                    put(bytes, pos + 12 + 12 * i as usize + 4, *off);
                }
            }
        }
        Ok(())
    }

    /// The object's BTF as the kernel takes it (`BPF_BTF_LOAD`), as libbpf makes it: each
    /// DATASEC's size and variables' offsets filled in ([`Object::fix_datasecs`]), and the
    /// kernel functions the object calls made acceptable: the kernel refuses a FUNC of extern
    /// linkage (made global here), a prototype's unnamed parameters (named after their
    /// function) and a FUNC in a DATASEC (`.ksyms`'s entries point to one 4-byte VAR appended,
    /// one after the other).
    pub fn kernel_btf(&self) -> Result<Vec<u8>, Error> {
        let mut b = self.btf_bytes.to_vec();
        self.fix_datasecs(&mut b)?;
        let btf = &self.btf;
        let bad = |why: &str| btf.bad(format!("the object's BTF: {why}"));
        let g = |b: &[u8], at: usize| -> Result<u32, Error> {
            b.get(at..at + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
                .ok_or_else(|| bad("cut short"))
        };
        let put = |b: &mut [u8], at: usize, v: u32| {
            if let Some(s) = b.get_mut(at..at + 4) {
                s.copy_from_slice(&v.to_le_bytes());
            }
        };
        let mut ksyms = None;
        let mut int4 = None;
        for id in 1..btf.len() {
            let Some(pos) = btf.type_pos(id) else { continue };
            match btf.kind(id)? {
                kind::FUNC if btf.vlen(id)? == 2 => {
                    // Extern → global; the prototype's parameters named.
                    let info = g(&b, pos + 4)?;
                    put(&mut b, pos + 4, (info & !0xffff) | 1);
                    let proto = btf.size_or_type(id)?;
                    let Some(ppos) = btf
                        .type_pos(proto)
                        .filter(|_| btf.kind(proto).ok() == Some(kind::FUNC_PROTO))
                    else {
                        return Err(bad("an extern function without a prototype"));
                    };
                    let name_off = g(&b, pos)?;
                    for j in 0..btf.vlen(proto)? as usize {
                        let at = ppos + 12 + 8 * j;
                        if g(&b, at)? == 0 && g(&b, at + 4)? != 0 {
                            put(&mut b, at, name_off);
                        }
                    }
                }
                kind::DATASEC if btf.name(id)? == b".ksyms" => ksyms = Some(id),
                kind::INT if int4.is_none() && btf.resolve_size(id)? == 4 => int4 = Some(id),
                _ => {}
            }
        }
        let Some(sec) = ksyms else { return Ok(b) };
        let (Some(pos), Some(int4)) = (btf.type_pos(sec), int4) else {
            return Err(bad("no 4-byte int for .ksyms' variables"));
        };
        // The header: magic, version, flags, hdr_len, type_off, type_len, str_off, str_len.
        let hdr_len = g(&b, 4)? as usize;
        let (type_off, type_len, str_off) = (g(&b, 8)?, g(&b, 12)?, g(&b, 16)?);
        if type_off != 0 || str_off != type_len {
            return Err(bad("types and strings not in the usual order"));
        }
        let var_id = btf.len();
        let mut name_off = 0;
        let n = btf.vlen(sec)? as usize;
        for i in 0..n {
            let at = pos + 12 + 12 * i;
            let ty = g(&b, at)?;
            if btf.kind(ty)? == kind::FUNC {
                name_off = g(&b, btf.type_pos(ty).unwrap_or(0))?;
                put(&mut b, at, var_id);
            }
            put(&mut b, at + 4, 4 * i as u32);
            put(&mut b, at + 8, 4);
        }
        put(&mut b, pos + 8, 4 * n as u32);
        // The VAR: named after a function (a valid name, no new string), global, an int.
        let mut var = Vec::with_capacity(16);
        for w in [name_off, kind::VAR << 24, int4, 1] {
            var.extend_from_slice(&w.to_le_bytes());
        }
        let types_end = hdr_len + type_len as usize;
        if types_end > b.len() {
            return Err(bad("cut short"));
        }
        b.splice(types_end..types_end, var);
        put(&mut b, 12, type_len + 16);
        put(&mut b, 16, str_off + 16);
        Ok(b)
    }

    /// The index of the map named `name`.
    pub fn map_index(&self, name: &str) -> Option<usize> {
        self.maps.iter().position(|m| m.name == name)
    }
}

/// The maps of the `.maps` DATASEC: each variable is a struct whose members say, by libbpf's
/// convention (`__uint(name, n)`: a pointer to an array of n ints; `__type(name, T)`: a pointer
/// to T), the map's type, sizes, entries and flags.
fn btf_maps(btf: &Btf<'_>) -> Result<Vec<MapDef>, Error> {
    let found = btf.find_by_names(&[(b".maps", kind::DATASEC)])?;
    let Some(&sec) = found.first().and_then(|v| v.first()) else {
        return Err(btf.bad("the object has a .maps section but no .maps in its BTF".into()));
    };
    let mut maps = Vec::new();
    for i in 0..btf.vlen(sec)? {
        let (var, _, _) = btf.datasec_entry(sec, i)?;
        if btf.kind(var)? != kind::VAR {
            return Err(btf.bad(format!(".maps entry {i} is not a variable")));
        }
        let name = String::from_utf8_lossy(btf.name(var)?).into_owned();
        let def = btf.skip_mods(btf.size_or_type(var)?)?;
        if btf.kind(def)? != kind::STRUCT {
            return Err(btf.bad(format!("map {name}: its definition is not a struct")));
        }
        let mut m = MapDef {
            name: name.clone(),
            map_type: 0,
            key_size: 0,
            value_size: 0,
            max_entries: 0,
            map_flags: 0,
            data: None,
        };
        for j in 0..btf.vlen(def)? {
            let mem = btf.member(def, j)?;
            let field = btf.string(mem.name_off)?;
            let ptr = btf.skip_mods(mem.type_id)?;
            if btf.kind(ptr)? != kind::PTR {
                return Err(btf.bad(format!(
                    "map {name}: member {} is not a pointer (__uint/__type)",
                    String::from_utf8_lossy(field)
                )));
            }
            let pointee = btf.size_or_type(ptr)?;
            // __uint(x, n): int (*x)[n].
            let uint = || -> Result<u32, Error> {
                let a = btf.skip_mods(pointee)?;
                Ok(btf.array(a)?.nelems)
            };
            let size = || -> Result<u32, Error> {
                u32::try_from(btf.resolve_size(pointee)?)
                    .map_err(|_| btf.bad(format!("map {name}: a key or value too big")))
            };
            match field {
                b"type" => m.map_type = uint()?,
                b"max_entries" => m.max_entries = uint()?,
                b"map_flags" => m.map_flags = uint()?,
                b"key_size" => m.key_size = uint()?,
                b"value_size" => m.value_size = uint()?,
                b"key" => m.key_size = size()?,
                b"value" => m.value_size = size()?,
                other => {
                    return Err(btf.bad(format!(
                        "map {name}: member {} is not supported by this loader",
                        String::from_utf8_lossy(other)
                    )));
                }
            }
        }
        maps.push(m);
    }
    Ok(maps)
}

type Ext = (
    Vec<(String, Vec<[u32; 2]>)>,
    Vec<(String, Vec<[u32; 4]>)>,
    Vec<(String, Vec<CoreRelo>)>,
);

/// `.BTF.ext`: its header, then three sections of per-ELF-section records.
fn ext(b: &[u8], btf: &Btf<'_>) -> Result<Ext, Error> {
    let bad = |why: String| Error::Btf {
        what: "the object's .BTF.ext",
        why,
    };
    let g = |at: usize| {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            .ok_or_else(|| bad(format!("cut at byte {at}")))
    };
    if b.len() < 8 || u16::from_le_bytes([b[0], b[1]]) != 0xEB9F {
        return Err(bad("no BTF.ext header".into()));
    }
    let hdr_len = g(4)? as usize;
    if hdr_len < 24 || hdr_len > b.len() {
        return Err(bad(format!("header length {hdr_len}")));
    }
    // One info section: u32 record size, then blocks of (section name, count, records).
    let section = |off_at: usize, min_rec: usize| -> Result<Vec<(String, Vec<u32>, usize)>, Error> {
        if off_at + 8 > hdr_len {
            return Ok(Vec::new());
        }
        let (off, len) = (g(off_at)? as usize, g(off_at + 4)? as usize);
        if len == 0 {
            return Ok(Vec::new());
        }
        let start = hdr_len
            .checked_add(off)
            .filter(|s| s.checked_add(len).is_some_and(|e| e <= b.len()))
            .ok_or_else(|| bad(format!("a section at {off}+{len} past the end")))?;
        let end = start + len;
        let rec = g(start)? as usize;
        if rec < min_rec || !rec.is_multiple_of(4) || rec > 256 {
            return Err(bad(format!("record size {rec}")));
        }
        let mut at = start + 4;
        let mut out = Vec::new();
        while at < end {
            let name = btf.string(g(at)?)?;
            let n = g(at + 4)? as usize;
            at += 8;
            let bytes = n
                .checked_mul(rec)
                .filter(|&l| at + l <= end)
                .ok_or_else(|| bad(format!("{n} records of {rec} bytes past the section's end")))?;
            let mut words = Vec::with_capacity(bytes / 4);
            for k in 0..n {
                for w in 0..min_rec / 4 {
                    words.push(g(at + k * rec + 4 * w)?);
                }
            }
            at += bytes;
            out.push((String::from_utf8_lossy(name).into_owned(), words, min_rec / 4));
        }
        Ok(out)
    };
    let funcs = section(8, 8)?
        .into_iter()
        .map(|(s, w, _)| (s, w.chunks_exact(2).map(|c| [c[0], c[1]]).collect()))
        .collect();
    let lines = section(16, 16)?
        .into_iter()
        .map(|(s, w, _)| (s, w.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect()))
        .collect();
    let relos = if hdr_len >= 32 {
        section(24, 16)?
            .into_iter()
            .map(|(s, w, _)| {
                let r = w
                    .chunks_exact(4)
                    .map(|c| CoreRelo {
                        insn_off: c[0],
                        type_id: c[1],
                        access_str_off: c[2],
                        kind: c[3],
                    })
                    .collect();
                (s, r)
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok((funcs, lines, relos))
}
