//! CO-RE: each `.BTF.ext` relocation's access string, resolved against the kernel's BTF by
//! name, as libbpf does (tools/lib/bpf/relo_core.c): the local root type's candidates are the
//! kernel types of the same kind and name (flavours `___x` stripped on both sides); each named
//! member is looked up by name in the candidate, through anonymous structs and unions; array
//! indices are checked against the kernel's array length (a flexible array last member takes
//! any index); the field found must be compatible with the local one. All matching candidates
//! must agree.
//!
//! Kinds: field byte offset, byte size, exists, signed, lshift/rshift (bitfields), type id
//! (local and kernel), type exists/size, enum value exists/value. A field or type that no
//! candidate has poisons the instruction, as libbpf does (so a use guarded by
//! `bpf_core_field_exists` is dead code the verifier drops); if the verifier then reaches it,
//! the load's error names the field ([`Poisoned`]).

use crate::Error;
use crate::btf::{Btf, MAX_DEPTH, essential, kind};
use crate::obj::CoreRelo;

/// Relocation kinds (`enum bpf_core_relo_kind`).
#[allow(missing_docs)]
pub mod relo {
    pub const FIELD_BYTE_OFFSET: u32 = 0;
    pub const FIELD_BYTE_SIZE: u32 = 1;
    pub const FIELD_EXISTS: u32 = 2;
    pub const FIELD_SIGNED: u32 = 3;
    pub const FIELD_LSHIFT_U64: u32 = 4;
    pub const FIELD_RSHIFT_U64: u32 = 5;
    pub const TYPE_ID_LOCAL: u32 = 6;
    pub const TYPE_ID_TARGET: u32 = 7;
    pub const TYPE_EXISTS: u32 = 8;
    pub const TYPE_SIZE: u32 = 9;
    pub const ENUMVAL_EXISTS: u32 = 10;
    pub const ENUMVAL_VALUE: u32 = 11;
    pub const TYPE_MATCHES: u32 = 12;
}

/// The immediate the poisoned instruction calls (libbpf's "bad relo", `0xbad2310`): the
/// verifier says `invalid func unknown#195896080` if it reaches it.
pub const POISON: i32 = 0xbad2310;

/// Longest access string (libbpf's `BPF_CORE_SPEC_MAX_LEN`).
const SPEC_MAX: usize = 64;

/// A relocation that found nothing: where, and what it looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poisoned {
    /// Instruction index.
    pub insn: usize,
    /// `struct task_struct.foo.bar`, for the error.
    pub field: String,
}

#[derive(Debug, Clone, Copy)]
struct Acc {
    type_id: u32,
    idx: u32,
    /// Named member (its name's offset in its BTF), or an array index.
    name_off: Option<u32>,
}

/// One side of a relocation: the accessors that have a name or an index, and where they lead.
#[derive(Debug, Clone)]
struct Spec {
    root: u32,
    acc: Vec<Acc>,
    bit_offset: u64,
}

fn is_composite(k: u32) -> bool {
    k == kind::STRUCT || k == kind::UNION
}

fn is_field_based(k: u32) -> bool {
    k <= relo::FIELD_RSHIFT_U64
}

fn is_type_based(k: u32) -> bool {
    matches!(
        k,
        relo::TYPE_ID_LOCAL | relo::TYPE_ID_TARGET | relo::TYPE_EXISTS | relo::TYPE_SIZE | relo::TYPE_MATCHES
    )
}

fn is_enumval_based(k: u32) -> bool {
    k == relo::ENUMVAL_EXISTS || k == relo::ENUMVAL_VALUE
}

/// A flexible array: the last member of its struct, with no elements.
fn is_flex(btf: &Btf<'_>, prev: Option<&Acc>, nelems: u32) -> Result<bool, Error> {
    let Some(p) = prev else { return Ok(false) };
    if p.name_off.is_none() || nelems > 0 {
        return Ok(false);
    }
    Ok(p.idx + 1 == btf.vlen(p.type_id)?)
}

/// The access string `0:1:2` as numbers.
fn access(btf: &Btf<'_>, r: &CoreRelo) -> Result<Vec<u32>, Error> {
    let s = btf.string(r.access_str_off)?;
    let bad = || btf.bad(format!("CO-RE access string {:?}", String::from_utf8_lossy(s)));
    if s.is_empty() || s[0] == b':' || s.len() > 512 {
        return Err(bad());
    }
    let mut out = Vec::new();
    for part in s.split(|&c| c == b':') {
        let t = std::str::from_utf8(part).map_err(|_| bad())?;
        out.push(t.parse::<u32>().map_err(|_| bad())?);
        if out.len() > SPEC_MAX {
            return Err(bad());
        }
    }
    Ok(out)
}

/// The local spec (libbpf's `bpf_core_parse_spec`).
fn parse_local(btf: &Btf<'_>, r: &CoreRelo, raw: &[u32]) -> Result<Spec, Error> {
    let mut id = btf.skip_mods(r.type_id)?;
    let first = *raw
        .first()
        .ok_or_else(|| btf.bad("an empty CO-RE access string".into()))?;
    let mut spec = Spec {
        root: r.type_id,
        acc: vec![Acc {
            type_id: id,
            idx: first,
            name_off: None,
        }],
        bit_offset: 0,
    };
    if is_enumval_based(r.kind) {
        let k = btf.kind(id)?;
        if (k != kind::ENUM && k != kind::ENUM64) || raw.len() > 1 || first >= btf.vlen(id)? {
            return Err(btf.bad(format!("CO-RE enum value relocation on type {id}")));
        }
        spec.acc[0].name_off = Some(btf.enumerator(id, first)?.0);
        return Ok(spec);
    }
    if !is_field_based(r.kind) {
        return Err(btf.bad(format!("CO-RE relocation kind {}", r.kind)));
    }
    spec.bit_offset = u64::from(first)
        .saturating_mul(btf.resolve_size(id)?)
        .saturating_mul(8);
    for &i in &raw[1..] {
        id = btf.skip_mods(id)?;
        let k = btf.kind(id)?;
        if is_composite(k) {
            let m = btf.member(id, i)?;
            spec.bit_offset = spec.bit_offset.saturating_add(u64::from(m.bit_offset));
            if m.name_off != 0 {
                spec.acc.push(Acc {
                    type_id: id,
                    idx: i,
                    name_off: Some(m.name_off),
                });
            }
            id = m.type_id;
        } else if k == kind::ARRAY {
            let a = btf.array(id)?;
            id = btf.skip_mods(a.elem)?;
            if !is_flex(btf, spec.acc.last(), a.nelems)? && i >= a.nelems {
                return Err(btf.bad(format!("CO-RE index {i} past an array of {}", a.nelems)));
            }
            spec.acc.push(Acc {
                type_id: id,
                idx: i,
                name_off: None,
            });
            spec.bit_offset = spec.bit_offset.saturating_add(
                u64::from(i)
                    .saturating_mul(btf.resolve_size(id)?)
                    .saturating_mul(8),
            );
        } else {
            return Err(btf.bad(format!("CO-RE access into type {id} of kind {k}")));
        }
    }
    Ok(spec)
}

/// libbpf's `bpf_core_fields_are_compat`.
fn fields_compat(local: &Btf<'_>, lid: u32, targ: &Btf<'_>, tid: u32) -> Result<bool, Error> {
    let (mut lid, mut tid) = (lid, tid);
    for _ in 0..MAX_DEPTH {
        lid = local.skip_mods(lid)?;
        tid = targ.skip_mods(tid)?;
        let (lk, tk) = (local.kind(lid)?, targ.kind(tid)?);
        if is_composite(lk) && is_composite(tk) {
            return Ok(true);
        }
        let same =
            lk == tk || (lk == kind::ENUM && tk == kind::ENUM64) || (lk == kind::ENUM64 && tk == kind::ENUM);
        if !same {
            return Ok(false);
        }
        return match lk {
            kind::PTR | kind::FLOAT => Ok(true),
            kind::FWD | kind::ENUM | kind::ENUM64 => {
                let (ln, tn) = (essential(local.name(lid)?), essential(targ.name(tid)?));
                Ok(ln.is_empty() || tn.is_empty() || ln == tn)
            }
            kind::INT => Ok(local.int(lid)?.1 == 0 && targ.int(tid)?.1 == 0),
            kind::ARRAY => {
                lid = local.array(lid)?.elem;
                tid = targ.array(tid)?.elem;
                continue;
            }
            _ => Ok(false),
        };
    }
    Err(local.bad("CO-RE: arrays nested too deep".into()))
}

/// libbpf's `bpf_core_match_member`: the member named as the local accessor's in `tid`, through
/// anonymous members. Returns the target accessor and the member's type.
fn match_member(
    local: &Btf<'_>,
    lacc: &Acc,
    targ: &Btf<'_>,
    tid: u32,
    bit_offset: &mut u64,
    depth: usize,
) -> Result<Option<(Acc, u32)>, Error> {
    if depth > MAX_DEPTH {
        return Err(targ.bad(format!(
            "type {tid}: anonymous members nested deeper than {MAX_DEPTH}"
        )));
    }
    let tid = targ.skip_mods(tid)?;
    if !is_composite(targ.kind(tid)?) {
        return Ok(None);
    }
    let lmember = local.member(lacc.type_id, lacc.idx)?;
    let lname = local.string(lmember.name_off)?;
    for i in 0..targ.vlen(tid)? {
        let m = targ.member(tid, i)?;
        *bit_offset = bit_offset.saturating_add(u64::from(m.bit_offset));
        let tname = targ.string(m.name_off)?;
        if tname.is_empty() {
            if let Some(found) = match_member(local, lacc, targ, m.type_id, bit_offset, depth + 1)? {
                return Ok(Some(found));
            }
        } else if tname == lname {
            if fields_compat(local, lmember.type_id, targ, m.type_id)? {
                return Ok(Some((
                    Acc {
                        type_id: tid,
                        idx: i,
                        name_off: Some(m.name_off),
                    },
                    m.type_id,
                )));
            }
            *bit_offset = bit_offset.saturating_sub(u64::from(m.bit_offset));
            return Ok(None);
        }
        *bit_offset = bit_offset.saturating_sub(u64::from(m.bit_offset));
    }
    Ok(None)
}

/// libbpf's `bpf_core_spec_match` for field and enum value relocations: the target spec, or
/// `None` if this candidate does not have the field.
fn match_spec(
    local: &Btf<'_>,
    lspec: &Spec,
    kind_: u32,
    targ: &Btf<'_>,
    cand: u32,
) -> Result<Option<Spec>, Error> {
    let mut t = Spec {
        root: cand,
        acc: Vec::with_capacity(lspec.acc.len()),
        bit_offset: 0,
    };
    if is_enumval_based(kind_) {
        let tid = targ.skip_mods(cand)?;
        let k = targ.kind(tid)?;
        if k != kind::ENUM && k != kind::ENUM64 {
            return Ok(None);
        }
        let lname = essential(local.string(lspec.acc[0].name_off.unwrap_or(0))?);
        for i in 0..targ.vlen(tid)? {
            let (noff, _) = targ.enumerator(tid, i)?;
            if essential(targ.string(noff)?) == lname {
                t.acc.push(Acc {
                    type_id: tid,
                    idx: i,
                    name_off: Some(noff),
                });
                return Ok(Some(t));
            }
        }
        return Ok(None);
    }
    let mut tid = cand;
    for (i, lacc) in lspec.acc.iter().enumerate() {
        tid = targ.skip_mods(tid)?;
        if lacc.name_off.is_some() {
            match match_member(local, lacc, targ, tid, &mut t.bit_offset, 0)? {
                Some((acc, next)) => {
                    t.acc.push(acc);
                    tid = next;
                }
                None => return Ok(None),
            }
        } else {
            if i > 0 {
                if targ.kind(tid)? != kind::ARRAY {
                    return Ok(None);
                }
                let a = targ.array(tid)?;
                if !is_flex(targ, t.acc.last(), a.nelems)? && lacc.idx >= a.nelems {
                    return Ok(None);
                }
                tid = targ.skip_mods(a.elem)?;
            }
            t.acc.push(Acc {
                type_id: tid,
                idx: lacc.idx,
                name_off: None,
            });
            t.bit_offset = t.bit_offset.saturating_add(
                u64::from(lacc.idx)
                    .saturating_mul(targ.resolve_size(tid)?)
                    .saturating_mul(8),
            );
        }
    }
    Ok(Some(t))
}

/// What a field relocation computes on one side (libbpf's `bpf_core_calc_field_relo`): the
/// value, and for byte offsets the size of the memory access and the field's type.
struct FieldValue {
    val: u64,
    /// Memory access size for an offset relocation (0: a bitfield, not adjusted).
    size: u32,
    type_id: u32,
    validate: bool,
}

fn calc_field(btf: &Btf<'_>, spec: &Spec, kind_: u32) -> Result<FieldValue, Error> {
    let acc = spec
        .acc
        .last()
        .ok_or_else(|| btf.bad("CO-RE: an empty access".into()))?;
    let elem_size = |mut id: u32| -> Result<(u32, u32), Error> {
        id = btf.skip_mods(id)?;
        let mut n = 0;
        while btf.kind(id)? == kind::ARRAY {
            id = btf.skip_mods(btf.array(id)?.elem)?;
            n += 1;
            if n > MAX_DEPTH {
                return Err(btf.bad("CO-RE: arrays nested too deep".into()));
            }
        }
        Ok((btf.resolve_size(id)? as u32, id))
    };
    let mut out = FieldValue {
        val: 0,
        size: 0,
        type_id: 0,
        validate: true,
    };
    if acc.name_off.is_none() {
        // An array element (or the root itself).
        match kind_ {
            relo::FIELD_BYTE_OFFSET => {
                out.val = spec.bit_offset / 8;
                let (sz, _) = elem_size(acc.type_id)?;
                out.size = sz;
                out.type_id = acc.type_id;
            }
            relo::FIELD_BYTE_SIZE => out.val = btf.resolve_size(acc.type_id)?,
            k => return Err(btf.bad(format!("CO-RE relocation kind {k} on an array element"))),
        }
        return Ok(out);
    }
    let m = btf.member(acc.type_id, acc.idx)?;
    let mt = btf.skip_mods(m.type_id)?;
    let bit_off = spec.bit_offset;
    let mut bit_sz = u64::from(m.bitfield_size);
    let bitfield = bit_sz > 0;
    let (byte_off, byte_sz);
    if bitfield {
        let mut sz = u64::from(btf.size_or_type(mt)?).max(1);
        let mut off = bit_off / 8 / sz * sz;
        while bit_off.saturating_add(bit_sz) - off * 8 > sz * 8 {
            if sz >= 8 {
                return Err(btf.bad("CO-RE: a bitfield that a 64-bit load cannot read".into()));
            }
            sz *= 2;
            off = bit_off / 8 / sz * sz;
        }
        byte_off = off;
        byte_sz = sz;
    } else {
        byte_sz = btf.resolve_size(mt)?;
        byte_off = bit_off / 8;
        bit_sz = byte_sz * 8;
    }
    out.validate = !bitfield;
    match kind_ {
        relo::FIELD_BYTE_OFFSET => {
            out.val = byte_off;
            if !bitfield {
                let (sz, _) = elem_size(mt)?;
                out.size = sz;
                out.type_id = mt;
            }
        }
        relo::FIELD_BYTE_SIZE => out.val = byte_sz,
        relo::FIELD_SIGNED => {
            let k = btf.kind(mt)?;
            out.val = u64::from(
                ((k == kind::ENUM || k == kind::ENUM64) && enum_signed(btf, mt)?)
                    || (k == kind::INT && btf.int(mt)?.0 & 1 != 0),
            );
            out.validate = true;
        }
        relo::FIELD_LSHIFT_U64 => {
            out.val = 64u64
                .checked_sub(bit_off.saturating_add(bit_sz) - byte_off * 8)
                .ok_or_else(|| btf.bad("CO-RE: a field wider than 64 bits".into()))?
        }
        relo::FIELD_RSHIFT_U64 => {
            out.val = 64u64
                .checked_sub(bit_sz)
                .ok_or_else(|| btf.bad("CO-RE: a field wider than 64 bits".into()))?;
            out.validate = true;
        }
        k => return Err(btf.bad(format!("CO-RE field relocation kind {k}"))),
    }
    Ok(out)
}

fn enum_signed(btf: &Btf<'_>, id: u32) -> Result<bool, Error> {
    // An enum's kind flag says its values are signed.
    btf.kind_flag(id)
}

/// One resolved relocation: the instruction's new value, or poison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// The new immediate / offset, the local (expected) one, and for a field offset a memory
    /// access size change (local size, kernel size) when it is safe.
    Value {
        /// The kernel's value.
        new: u64,
        /// What the compiler put there (checked before patching, as libbpf does).
        orig: Option<u64>,
        /// Memory access size: (local, kernel), or None to keep it.
        resize: Option<(u32, u32)>,
        /// A size change that is not safe: the instruction is poisoned if it is a memory access.
        bad_resize: bool,
    },
    /// Nothing matched: the instruction is poisoned.
    Poison,
}

/// Kernel types by (essential name, kind), found in one pass for all relocations.
pub struct Candidates {
    keys: Vec<(Vec<u8>, u32)>,
    ids: Vec<Vec<u32>>,
}

impl Candidates {
    /// Every root type the relocations name, looked up in the kernel's BTF in one pass, with
    /// `extra` names (e.g. `btf_trace_*` typedefs) in the same pass.
    pub fn find(
        local: &Btf<'_>,
        relos: &[&CoreRelo],
        targ: &Btf<'_>,
        extra: &[(&[u8], u32)],
    ) -> Result<Candidates, Error> {
        let mut keys: Vec<(Vec<u8>, u32)> = extra.iter().map(|(n, k)| (n.to_vec(), *k)).collect();
        for r in relos {
            if r.kind == relo::TYPE_ID_LOCAL {
                continue;
            }
            let id = r.type_id;
            let name = essential(local.name(id)?).to_vec();
            let k = local.kind(id)?;
            if !keys.iter().any(|(n, kk)| *n == name && *kk == k) {
                keys.push((name, k));
            }
        }
        let q: Vec<(&[u8], u32)> = keys.iter().map(|(n, k)| (n.as_slice(), *k)).collect();
        let ids = targ.find_by_names(&q)?;
        Ok(Candidates { keys, ids })
    }

    /// The kernel's types of this name and kind.
    pub fn get(&self, name: &[u8], k: u32) -> &[u32] {
        self.keys
            .iter()
            .position(|(n, kk)| n == name && *kk == k)
            .map_or(&[], |i| &self.ids[i])
    }
}

/// Resolves one relocation.
pub fn resolve(local: &Btf<'_>, r: &CoreRelo, targ: &Btf<'_>, cands: &Candidates) -> Result<Resolved, Error> {
    let raw = access(local, r)?;
    if r.kind == relo::TYPE_ID_LOCAL {
        return Ok(Resolved::Value {
            new: u64::from(r.type_id),
            orig: None,
            resize: None,
            bad_resize: false,
        });
    }
    let lname = local.name(r.type_id)?;
    if lname.is_empty() {
        return Err(local.bad(format!("CO-RE relocation on anonymous type {}", r.type_id)));
    }
    let lkind = local.kind(r.type_id)?;
    let found = cands.get(essential(lname), lkind);
    if is_type_based(r.kind) {
        if raw != [0] {
            return Err(local.bad("CO-RE type relocation with an access string other than 0".into()));
        }
        // Types of the same kind and name are taken as the same (libbpf also compares their
        // shapes; proctrace's object asks only whether a type exists and its id).
        let value = |id: Option<u32>, btf: &Btf<'_>| -> Result<u64, Error> {
            Ok(match (r.kind, id) {
                (_, None) => 0,
                (relo::TYPE_ID_TARGET, Some(id)) => u64::from(id),
                (relo::TYPE_EXISTS | relo::TYPE_MATCHES, Some(_)) => 1,
                (relo::TYPE_SIZE, Some(id)) => btf.resolve_size(id)?,
                (k, _) => return Err(local.bad(format!("CO-RE relocation kind {k}"))),
            })
        };
        let orig = value(Some(r.type_id), local)?;
        let new = value(found.first().copied(), targ)?;
        return Ok(Resolved::Value {
            new,
            orig: if r.kind == relo::TYPE_ID_TARGET {
                None
            } else {
                Some(orig)
            },
            resize: None,
            bad_resize: false,
        });
    }
    let lspec = parse_local(local, r, &raw)?;
    let mut result: Option<(Spec, Resolved)> = None;
    for &cand in found {
        let Some(tspec) = match_spec(local, &lspec, r.kind, targ, cand)? else {
            continue;
        };
        let res = calc(local, &lspec, targ, &tspec, r.kind)?;
        match &result {
            None => result = Some((tspec, res)),
            Some((prev, pres)) => {
                if prev.bit_offset != tspec.bit_offset || *pres != res {
                    return Err(targ.bad(format!(
                        "CO-RE: kernel types {} and {} named {} disagree",
                        prev.root,
                        tspec.root,
                        String::from_utf8_lossy(lname)
                    )));
                }
            }
        }
    }
    match result {
        Some((_, res)) => Ok(res),
        None if r.kind == relo::FIELD_EXISTS || r.kind == relo::ENUMVAL_EXISTS => Ok(Resolved::Value {
            new: 0,
            orig: Some(1),
            resize: None,
            bad_resize: false,
        }),
        None => Ok(Resolved::Poison),
    }
}

fn calc(local: &Btf<'_>, lspec: &Spec, targ: &Btf<'_>, tspec: &Spec, k: u32) -> Result<Resolved, Error> {
    if is_enumval_based(k) {
        let v = |btf: &Btf<'_>, s: &Spec| -> Result<u64, Error> {
            Ok(if k == relo::ENUMVAL_EXISTS {
                1
            } else {
                btf.enumerator(s.acc[0].type_id, s.acc[0].idx)?.1
            })
        };
        return Ok(Resolved::Value {
            new: v(targ, tspec)?,
            orig: Some(v(local, lspec)?),
            resize: None,
            bad_resize: false,
        });
    }
    if k == relo::FIELD_EXISTS {
        return Ok(Resolved::Value {
            new: 1,
            orig: Some(1),
            resize: None,
            bad_resize: false,
        });
    }
    let l = calc_field(local, lspec, k)?;
    let t = calc_field(targ, tspec, k)?;
    let mut resize = None;
    let mut bad_resize = false;
    if l.size != t.size {
        let lk = local.kind(l.type_id)?;
        let tk = targ.kind(t.type_id)?;
        let unsigned = |b: &Btf<'_>, id: u32, kk: u32| -> Result<bool, Error> {
            Ok(kk == kind::INT && b.int(id)?.0 & 1 == 0)
        };
        if (lk == kind::PTR && tk == kind::PTR)
            || (unsigned(local, l.type_id, lk)? && unsigned(targ, t.type_id, tk)?)
        {
            resize = Some((l.size, t.size));
        } else {
            bad_resize = true;
        }
    }
    Ok(Resolved::Value {
        new: t.val,
        orig: l.validate.then_some(l.val),
        resize,
        bad_resize,
    })
}

/// The field a relocation names, for errors: `task_struct.thread_pid.numbers[0].nr`.
pub fn describe(local: &Btf<'_>, r: &CoreRelo) -> String {
    let mut s = String::new();
    let root = local.name(r.type_id).unwrap_or(b"?");
    let kw = match local.kind(r.type_id) {
        Ok(kind::STRUCT) => "struct ",
        Ok(kind::UNION) => "union ",
        Ok(kind::ENUM | kind::ENUM64) => "enum ",
        _ => "",
    };
    s.push_str(kw);
    s.push_str(&String::from_utf8_lossy(root));
    let Ok(raw) = access(local, r) else { return s };
    if is_type_based(r.kind) {
        return s;
    }
    if is_enumval_based(r.kind) {
        if let Ok(id) = local.skip_mods(r.type_id)
            && let Some(&i) = raw.first()
            && let Ok((n, _)) = local.enumerator(id, i)
        {
            s.push_str("::");
            s.push_str(&String::from_utf8_lossy(local.string(n).unwrap_or(b"?")));
        }
        return s;
    }
    let Ok(mut id) = local.skip_mods(r.type_id) else {
        return s;
    };
    if raw.first().is_some_and(|&i| i != 0) {
        s.push_str(&format!("[{}]", raw[0]));
    }
    for &i in raw.iter().skip(1) {
        let Ok(sid) = local.skip_mods(id) else { break };
        match local.kind(sid) {
            Ok(k) if is_composite(k) => {
                let Ok(m) = local.member(sid, i) else { break };
                let n = local.string(m.name_off).unwrap_or(b"?");
                if !n.is_empty() {
                    s.push('.');
                    s.push_str(&String::from_utf8_lossy(n));
                }
                id = m.type_id;
            }
            Ok(kind::ARRAY) => {
                s.push_str(&format!("[{i}]"));
                match local.array(sid) {
                    Ok(a) => id = a.elem,
                    Err(_) => break,
                }
            }
            _ => break,
        }
    }
    s
}
