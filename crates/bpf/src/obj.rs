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

/// What an instruction that loads a 64-bit immediate refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A map's fd (`BPF_PSEUDO_MAP_FD`): index into [`Object::maps`].
    Map(usize),
    /// An address in a global data section's map (`BPF_PSEUDO_MAP_VALUE`): map index, offset.
    Data(usize, u32),
}

/// A program: one executable section.
#[derive(Debug, Clone)]
pub struct ProgramDef {
    /// The function's name (`on_exec`).
    pub name: String,
    /// Its section (`tp_btf/sched_process_exec`).
    pub section: String,
    /// Its instructions as in the object.
    pub insns: Vec<u8>,
    /// Instruction index → what its `ld_imm64` refers to.
    pub relocations: Vec<(usize, Target)>,
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
    /// CO-RE relocations by program section name.
    pub core_relos: Vec<(String, Vec<CoreRelo>)>,
    /// func_info records (insn byte offset, type id) by section; record size.
    pub func_info: Vec<(String, Vec<[u32; 2]>)>,
    /// line_info records (insn byte offset, file, line, column) by section.
    pub line_info: Vec<(String, Vec<[u32; 4]>)>,
    /// Global variables: name → (map index, offset, size).
    pub globals: Vec<(String, usize, u32, u32)>,
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

        // Programs: executable sections with instructions, named by their function symbol.
        let mut programs = Vec::new();
        for s in file.sections() {
            let name = s.name().unwrap_or("");
            if s.kind() != object::SectionKind::Text || s.size() == 0 {
                continue;
            }
            if name == ".text" {
                return Err(elf(
                    "the object has functions in .text (BPF-to-BPF calls): this loader takes only \
                     programs whose functions are inlined (static __always_inline)",
                ));
            }
            let insns = data_of(&s)?.to_vec();
            if !insns.len().is_multiple_of(INSN) {
                return Err(elf(format!(
                    "section {name}: {} bytes, not whole instructions",
                    insns.len()
                )));
            }
            let mut funcs = file.symbols().filter(|y| {
                y.section_index() == Some(s.index()) && y.kind() == object::SymbolKind::Text && y.is_global()
            });
            let func = funcs
                .next()
                .filter(|y| y.address() == 0)
                .and_then(|y| y.name().ok().map(str::to_string))
                .ok_or_else(|| elf(format!("section {name} has no function symbol at its start")))?;
            if funcs.next().is_some() {
                return Err(elf(format!(
                    "section {name} holds several programs: this loader takes one per section"
                )));
            }
            let mut relocations = Vec::new();
            for (off, r) in s.relocations() {
                let RelocationTarget::Symbol(si) = r.target() else {
                    return Err(elf(format!("{name}: a relocation at {off} has no symbol")));
                };
                let sym = file
                    .symbol_by_index(si)
                    .map_err(|e| elf(format!("{name}: relocation at {off}: {e}")))?;
                let at = usize::try_from(off).unwrap_or(usize::MAX);
                if !at.is_multiple_of(INSN) || at.checked_add(2 * INSN).is_none_or(|e| e > insns.len()) {
                    return Err(elf(format!(
                        "{name}: relocation at byte {off} is not on an ld_imm64"
                    )));
                }
                if insns[at] != 0x18 {
                    return Err(elf(format!(
                        "{name}: relocation at instruction {} is on opcode {:#04x}, not ld_imm64 (a call to a function in another section?)",
                        at / INSN,
                        insns[at]
                    )));
                }
                let sym_name = sym.name().unwrap_or("?");
                let sec = sym.section_index().ok_or_else(|| {
                    elf(format!(
                        "{name}: relocation against {sym_name}, which is not defined here"
                    ))
                })?;
                let target = if Some(sec) == maps_index {
                    Target::Map(map_by_name(sym_name).ok_or_else(|| {
                        elf(format!(
                            "{name}: relocation against map {sym_name}, not in .maps' BTF"
                        ))
                    })?)
                } else if let Some(&(_, m)) = data_maps.iter().find(|(i, _)| *i == sec) {
                    // The instruction's imm holds the offset from the symbol (a section symbol:
                    // from the section's start).
                    let imm =
                        i32::from_le_bytes([insns[at + 4], insns[at + 5], insns[at + 6], insns[at + 7]]);
                    let off = (sym.address() as i64).checked_add(i64::from(imm));
                    let off = off
                        .and_then(|o| u32::try_from(o).ok())
                        .filter(|&o| o < maps[m].value_size)
                        .ok_or_else(|| {
                            elf(format!(
                                "{name}: reference to {sym_name}+{imm} outside its section"
                            ))
                        })?;
                    Target::Data(m, off)
                } else {
                    return Err(elf(format!(
                        "{name}: relocation against {sym_name} in a section this loader does not know"
                    )));
                };
                relocations.push((at / INSN, target));
            }
            programs.push(ProgramDef {
                name: func,
                section: name.to_string(),
                insns,
                relocations,
            });
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
        let (func_info, line_info, core_relos) = match section(".BTF.ext") {
            Some(s) => ext(data_of(&s)?, &btf)?,
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
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
