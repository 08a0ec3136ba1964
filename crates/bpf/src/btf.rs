//! BTF, read in place: one pass over the type section records where each type starts (a
//! `Vec<u32>` of offsets by id); everything else (names, members, sizes) is read from the bytes
//! when asked. Nothing is allocated per type.
//!
//! Every read is bounds-checked and every walk (typedef chains, nested anonymous members, sizes
//! of arrays of arrays) is bounded, so a corrupt or hostile BTF gives an [`Error`], never a
//! panic or unbounded work.

use crate::Error;

/// `BTF_MAGIC`.
const MAGIC: u16 = 0xEB9F;

/// How deep a chain of typedefs, qualifiers, arrays or anonymous members may go.
pub(crate) const MAX_DEPTH: usize = 32;

/// BTF kinds (include/uapi/linux/btf.h).
#[allow(missing_docs)]
pub mod kind {
    pub const INT: u32 = 1;
    pub const PTR: u32 = 2;
    pub const ARRAY: u32 = 3;
    pub const STRUCT: u32 = 4;
    pub const UNION: u32 = 5;
    pub const ENUM: u32 = 6;
    pub const FWD: u32 = 7;
    pub const TYPEDEF: u32 = 8;
    pub const VOLATILE: u32 = 9;
    pub const CONST: u32 = 10;
    pub const RESTRICT: u32 = 11;
    pub const FUNC: u32 = 12;
    pub const FUNC_PROTO: u32 = 13;
    pub const VAR: u32 = 14;
    pub const DATASEC: u32 = 15;
    pub const FLOAT: u32 = 16;
    pub const DECL_TAG: u32 = 17;
    pub const TYPE_TAG: u32 = 18;
    pub const ENUM64: u32 = 19;
}

/// The bytes of a BTF blob: borrowed (an object's section), owned (read from a file) or mapped.
pub(crate) enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Mapped(Mapping),
}

/// A read-only private mapping of a file, unmapped on drop.
pub(crate) struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; reading it from any thread is
// sound.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared references only read.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn bytes(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live PROT_READ mapping until drop.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `Btf::from_file`; nothing borrows it past `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

impl Bytes<'_> {
    fn get(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(b) => b,
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m.bytes(),
        }
    }
}

/// One BTF blob (the kernel's, or an object's `.BTF`) with its types indexed by id.
pub struct Btf<'a> {
    bytes: Bytes<'a>,
    /// Where the type section starts in `bytes`, and its length.
    types: (usize, usize),
    /// Where the string section starts, and its length.
    strings: (usize, usize),
    /// Offset in the type section of each type; index 0 (void) is unused.
    offsets: Vec<u32>,
    /// What the errors call it.
    what: &'static str,
}

/// A member of a struct or union.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Its name's offset in the string section (0: anonymous).
    pub name_off: u32,
    /// Its type.
    pub type_id: u32,
    /// Its offset from the start of the enclosing type, in bits.
    pub bit_offset: u32,
    /// Its width if it is a bitfield, else 0.
    pub bitfield_size: u32,
}

/// An array's element type and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Array {
    /// The elements' type.
    pub elem: u32,
    /// How many (0: a flexible array member).
    pub nelems: u32,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

impl Btf<'static> {
    /// The running kernel's BTF, `/sys/kernel/btf/vmlinux`: mapped where the kernel allows it
    /// (Linux 6.16), read otherwise.
    pub fn kernel() -> Result<Btf<'static>, Error> {
        Btf::from_file(std::path::Path::new("/sys/kernel/btf/vmlinux"))
    }

    /// A BTF file: mapped read-only when the file system allows it, else read whole.
    pub fn from_file(path: &std::path::Path) -> Result<Btf<'static>, Error> {
        use std::os::fd::AsRawFd;
        let io = |e: std::io::Error| Error::Io(path.display().to_string(), e);
        let f = std::fs::File::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len() as usize;
        if len > 0 {
            // SAFETY: a private read-only mapping of `len` bytes of an open file; the result is
            // checked, and the mapping is owned by the `Mapping` made from it.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE,
                    f.as_raw_fd(),
                    0,
                )
            };
            if ptr != libc::MAP_FAILED {
                return Btf::parse_bytes(Bytes::Mapped(Mapping { ptr, len }), "the kernel's BTF");
            }
        }
        // sysfs before 6.16 refuses mmap: read it, in large reads (the file's size is known).
        let mut v = Vec::with_capacity(len);
        use std::io::Read;
        let mut f = f;
        f.read_to_end(&mut v).map_err(io)?;
        Btf::parse_bytes(Bytes::Owned(v), "the kernel's BTF")
    }
}

impl<'a> Btf<'a> {
    /// A BTF blob in memory (an object's `.BTF`); `what` names it in errors.
    pub fn parse(data: &'a [u8], what: &'static str) -> Result<Btf<'a>, Error> {
        Btf::parse_bytes(Bytes::Borrowed(data), what)
    }

    fn parse_bytes(bytes: Bytes<'a>, what: &'static str) -> Result<Btf<'a>, Error> {
        let bad = |why: String| Error::Btf { what, why };
        let b = bytes.get();
        if b.len() < 24 {
            return Err(bad(format!("{} bytes: shorter than the header", b.len())));
        }
        let magic = u16::from_ne_bytes([b[0], b[1]]);
        if magic != MAGIC {
            return Err(bad(format!(
                "magic {magic:#06x} is not {MAGIC:#06x} (or of another byte order)"
            )));
        }
        if b[2] != 1 {
            return Err(bad(format!("version {} (only 1 is known)", b[2])));
        }
        let field = |at| u32_at(b, at).map(|v| v as usize).unwrap_or(0);
        let hdr_len = field(4);
        let (type_off, type_len, str_off, str_len) = (field(8), field(12), field(16), field(20));
        let section = |off: usize, len: usize, name: &str| {
            let start = hdr_len
                .checked_add(off)
                .filter(|&s| s.checked_add(len).is_some_and(|e| e <= b.len()));
            start.ok_or_else(|| {
                bad(format!(
                    "the {name} section ({off}+{len} after a {hdr_len}-byte header) is past the end ({} bytes)",
                    b.len()
                ))
            })
        };
        if hdr_len < 24 || hdr_len > b.len() {
            return Err(bad(format!("header length {hdr_len}")));
        }
        let types = (section(type_off, type_len, "type")?, type_len);
        let strings = (section(str_off, str_len, "string")?, str_len);
        let mut btf = Btf {
            bytes,
            types,
            strings,
            offsets: Vec::new(),
            what,
        };
        btf.index()?;
        Ok(btf)
    }

    /// The one pass: where each type starts.
    fn index(&mut self) -> Result<(), Error> {
        let (start, len) = self.types;
        let data = &self.bytes.get()[start..start + len];
        // Each type is at least 12 bytes: this bounds the vector.
        let mut offsets = Vec::with_capacity(len / 16 + 1);
        offsets.push(0);
        let mut at = 0usize;
        while at < len {
            let info = u32_at(data, at + 4)
                .ok_or_else(|| self.bad(format!("type {} is cut at byte {at}", offsets.len())))?;
            let vlen = (info & 0xffff) as usize;
            let k = (info >> 24) & 0x1f;
            let extra = match k {
                kind::INT | kind::VAR | kind::DECL_TAG => 4,
                kind::PTR
                | kind::FWD
                | kind::TYPEDEF
                | kind::VOLATILE
                | kind::CONST
                | kind::RESTRICT
                | kind::FUNC
                | kind::FLOAT
                | kind::TYPE_TAG => 0,
                kind::ARRAY => 12,
                kind::STRUCT | kind::UNION | kind::DATASEC | kind::ENUM64 => 12 * vlen,
                kind::ENUM | kind::FUNC_PROTO => 8 * vlen,
                _ => {
                    return Err(self.bad(format!(
                        "type {} at byte {at} has unknown kind {k}",
                        offsets.len()
                    )));
                }
            };
            let next = at + 12 + extra;
            if next > len {
                return Err(self.bad(format!(
                    "type {} at byte {at} runs past the type section ({len} bytes)",
                    offsets.len()
                )));
            }
            offsets.push(at as u32);
            at = next;
        }
        self.offsets = offsets;
        Ok(())
    }

    pub(crate) fn bad(&self, why: String) -> Error {
        Error::Btf { what: self.what, why }
    }

    /// How many types (the largest id + 1).
    pub fn len(&self) -> u32 {
        self.offsets.len() as u32
    }

    /// Whether it has no types beyond void.
    pub fn is_empty(&self) -> bool {
        self.offsets.len() <= 1
    }

    /// The bytes of type `id`: its 12-byte header and what follows.
    fn raw(&self, id: u32) -> Result<&[u8], Error> {
        let off = *self
            .offsets
            .get(id as usize)
            .filter(|_| id != 0)
            .ok_or_else(|| self.bad(format!("no type {id} (there are {})", self.offsets.len())))?;
        let (start, len) = self.types;
        // In bounds: checked by `index`.
        Ok(&self.bytes.get()[start + off as usize..start + len])
    }

    fn header(&self, id: u32) -> Result<(u32, u32, u32), Error> {
        let r = self.raw(id)?;
        let g = |at| u32_at(r, at).unwrap_or(0);
        Ok((g(0), g(4), g(8)))
    }

    /// Type `id`'s kind (void: 0).
    pub fn kind(&self, id: u32) -> Result<u32, Error> {
        if id == 0 {
            return Ok(0);
        }
        Ok((self.header(id)?.1 >> 24) & 0x1f)
    }

    /// Type `id`'s `vlen` (members, parameters, enumerators, variables).
    pub fn vlen(&self, id: u32) -> Result<u32, Error> {
        Ok(self.header(id)?.1 & 0xffff)
    }

    pub(crate) fn kind_flag(&self, id: u32) -> Result<bool, Error> {
        Ok(self.header(id)?.1 >> 31 != 0)
    }

    /// Type `id`'s name offset (0: anonymous).
    pub fn name_off(&self, id: u32) -> Result<u32, Error> {
        if id == 0 {
            return Ok(0);
        }
        Ok(self.header(id)?.0)
    }

    /// Type `id`'s name (empty: anonymous).
    pub fn name(&self, id: u32) -> Result<&[u8], Error> {
        self.string(self.name_off(id)?)
    }

    /// The `size` of a sized type, or the `type` of a reference.
    pub fn size_or_type(&self, id: u32) -> Result<u32, Error> {
        Ok(self.header(id)?.2)
    }

    /// The string at `off` in the string section, without its NUL.
    pub fn string(&self, off: u32) -> Result<&[u8], Error> {
        let (start, len) = self.strings;
        let s = self.bytes.get()[start..start + len]
            .get(off as usize..)
            .ok_or_else(|| {
                self.bad(format!(
                    "string offset {off} past the string section ({len} bytes)"
                ))
            })?;
        let end = memchr(s).ok_or_else(|| self.bad(format!("the string at {off} has no end")))?;
        Ok(&s[..end])
    }

    /// Member `i` of struct or union `id`.
    pub fn member(&self, id: u32, i: u32) -> Result<Member, Error> {
        let k = self.kind(id)?;
        if k != kind::STRUCT && k != kind::UNION {
            return Err(self.bad(format!("type {id} is not a struct or union")));
        }
        if i >= self.vlen(id)? {
            return Err(self.bad(format!("type {id} has no member {i}")));
        }
        let r = self.raw(id)?;
        let at = 12 + 12 * i as usize;
        let g = |o| u32_at(r, at + o).unwrap_or(0);
        let off = g(8);
        let (bit_offset, bitfield_size) = if self.kind_flag(id)? {
            (off & 0xff_ffff, off >> 24)
        } else {
            (off, 0)
        };
        Ok(Member {
            name_off: g(0),
            type_id: g(4),
            bit_offset,
            bitfield_size,
        })
    }

    /// Array `id`'s element type and length.
    pub fn array(&self, id: u32) -> Result<Array, Error> {
        if self.kind(id)? != kind::ARRAY {
            return Err(self.bad(format!("type {id} is not an array")));
        }
        let r = self.raw(id)?;
        Ok(Array {
            elem: u32_at(r, 12).unwrap_or(0),
            nelems: u32_at(r, 20).unwrap_or(0),
        })
    }

    /// An INT's encoding word: (encoding, bit offset, bits).
    pub fn int(&self, id: u32) -> Result<(u32, u32, u32), Error> {
        if self.kind(id)? != kind::INT {
            return Err(self.bad(format!("type {id} is not an int")));
        }
        let w = u32_at(self.raw(id)?, 12).unwrap_or(0);
        Ok(((w >> 24) & 0xf, (w >> 16) & 0xff, w & 0xff))
    }

    /// Entry `i` of a DATASEC: (variable's type id, offset, size).
    pub fn datasec_entry(&self, id: u32, i: u32) -> Result<(u32, u32, u32), Error> {
        if self.kind(id)? != kind::DATASEC || i >= self.vlen(id)? {
            return Err(self.bad(format!("type {id} has no section entry {i}")));
        }
        let r = self.raw(id)?;
        let at = 12 + 12 * i as usize;
        let g = |o| u32_at(r, at + o).unwrap_or(0);
        Ok((g(0), g(4), g(8)))
    }

    /// Enumerator `i` of an ENUM or ENUM64: (name offset, value).
    pub fn enumerator(&self, id: u32, i: u32) -> Result<(u32, u64), Error> {
        let k = self.kind(id)?;
        if (k != kind::ENUM && k != kind::ENUM64) || i >= self.vlen(id)? {
            return Err(self.bad(format!("type {id} has no enumerator {i}")));
        }
        let r = self.raw(id)?;
        if k == kind::ENUM {
            let at = 12 + 8 * i as usize;
            let v = u32_at(r, at + 4).unwrap_or(0);
            // A signed enum's values are sign-extended, as libbpf does.
            let v = if self.kind_flag(id)? {
                v as i32 as i64 as u64
            } else {
                u64::from(v)
            };
            Ok((u32_at(r, at).unwrap_or(0), v))
        } else {
            let at = 12 + 12 * i as usize;
            let lo = u64::from(u32_at(r, at + 4).unwrap_or(0));
            let hi = u64::from(u32_at(r, at + 8).unwrap_or(0));
            Ok((u32_at(r, at).unwrap_or(0), hi << 32 | lo))
        }
    }

    /// Follows typedefs and qualifiers from `id` to the type they name.
    pub fn skip_mods(&self, mut id: u32) -> Result<u32, Error> {
        for _ in 0..MAX_DEPTH {
            match self.kind(id)? {
                kind::TYPEDEF | kind::VOLATILE | kind::CONST | kind::RESTRICT | kind::TYPE_TAG => {
                    id = self.size_or_type(id)?;
                }
                _ => return Ok(id),
            }
        }
        Err(self.bad(format!(
            "type {id}: typedefs or qualifiers nested deeper than {MAX_DEPTH}"
        )))
    }

    /// Type `id`'s size in bytes (libbpf's `btf__resolve_size`).
    pub fn resolve_size(&self, id: u32) -> Result<u64, Error> {
        let mut id = id;
        let mut n: u64 = 1;
        for _ in 0..MAX_DEPTH {
            id = self.skip_mods(id)?;
            match self.kind(id)? {
                kind::INT
                | kind::STRUCT
                | kind::UNION
                | kind::ENUM
                | kind::ENUM64
                | kind::DATASEC
                | kind::FLOAT => {
                    let s = u64::from(self.size_or_type(id)?);
                    return n
                        .checked_mul(s)
                        .filter(|&v| v <= u64::from(u32::MAX))
                        .ok_or_else(|| self.bad(format!("type {id}: size overflows")));
                }
                kind::PTR => {
                    return n
                        .checked_mul(8)
                        .filter(|&v| v <= u64::from(u32::MAX))
                        .ok_or_else(|| self.bad(format!("type {id}: size overflows")));
                }
                kind::VAR => id = self.size_or_type(id)?,
                kind::ARRAY => {
                    let a = self.array(id)?;
                    n = n
                        .checked_mul(u64::from(a.nelems))
                        .filter(|&v| v <= u64::from(u32::MAX))
                        .ok_or_else(|| self.bad(format!("type {id}: size overflows")))?;
                    id = a.elem;
                }
                k => return Err(self.bad(format!("type {id} (kind {k}) has no size"))),
            }
        }
        Err(self.bad(format!("type {id}: nested deeper than {MAX_DEPTH}")))
    }

    /// The types whose kind is one of `kinds`' and whose name, flavour (`___suffix`) aside,
    /// is one of `names`' (flavours stripped too): one pass over every type, whatever the
    /// number of names. The result is, for each name, the matching ids in id order.
    pub fn find_by_names(&self, names: &[(&[u8], u32)]) -> Result<Vec<Vec<u32>>, Error> {
        let mut found = vec![Vec::new(); names.len()];
        // A first byte not among the names' first bytes is rejected without a comparison.
        let mut first = [false; 256];
        for (n, _) in names {
            if let Some(&c) = n.first() {
                first[c as usize] = true;
            }
        }
        let (sstart, slen) = self.strings;
        let strings = &self.bytes.get()[sstart..sstart + slen];
        let (tstart, tlen) = self.types;
        let types = &self.bytes.get()[tstart..tstart + tlen];
        for (id, &off) in self.offsets.iter().enumerate().skip(1) {
            let off = off as usize;
            let name_off = u32_at(types, off).unwrap_or(0) as usize;
            if name_off == 0 {
                continue;
            }
            let Some(&c) = strings.get(name_off) else {
                return Err(self.bad(format!("type {id}'s name offset {name_off} is past the strings")));
            };
            if !first[c as usize] {
                continue;
            }
            let k = (u32_at(types, off + 4).unwrap_or(0) >> 24) & 0x1f;
            let rest = &strings[name_off..];
            for (i, (n, nk)) in names.iter().enumerate() {
                if *nk == k && rest.starts_with(n) {
                    let tail = &rest[n.len()..];
                    if tail.first() == Some(&0) || tail.starts_with(b"___") {
                        let full = &rest[..memchr(rest).unwrap_or(rest.len())];
                        if essential(full) == *n {
                            found[i].push(id as u32);
                        }
                    }
                }
            }
        }
        Ok(found)
    }

    /// Where type `id` starts in the whole blob.
    pub(crate) fn type_pos(&self, id: u32) -> Option<usize> {
        let off = *self.offsets.get(id as usize).filter(|_| id != 0)?;
        Some(self.types.0 + off as usize)
    }

    /// Whether the bytes are a mapping of the file (not a copy read from it).
    pub fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Mapped(_))
    }
}

fn memchr(s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == 0)
}

/// A name without its CO-RE flavour (`task_struct___old` → `task_struct`; libbpf's
/// `bpf_core_essential_name_len`).
pub fn essential(name: &[u8]) -> &[u8] {
    // The last `X___Y` with X and Y not underscores: the name is what precedes the `___`.
    let n = name.len();
    let mut i = n.saturating_sub(5) + 1;
    while i > 0 {
        i -= 1;
        if i + 5 <= n && name[i] != b'_' && &name[i + 1..i + 4] == b"___" && name[i + 4] != b'_' {
            return &name[..i + 1];
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavours_are_stripped_at_the_last_triple_underscore() {
        assert_eq!(essential(b"task_struct___old"), b"task_struct");
        assert_eq!(essential(b"task_struct"), b"task_struct");
        assert_eq!(essential(b"a___b___c"), b"a___b");
        // "___" at the very end, or among more underscores, is not a flavour.
        assert_eq!(essential(b"abc___"), b"abc___");
        assert_eq!(essential(b"abc____d"), b"abc____d");
        assert_eq!(essential(b"x___y"), b"x");
    }
}
