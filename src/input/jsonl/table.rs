//! One line's values by key: the reused table the scanners fill (the laid-out fast path for the
//! lines proctrace writes, the general scanner for any other layout), and typed getters.

use super::*;
use crate::model::bytes;

// The keys lines have are the schema's ([`K`]); which ones a line must have depends on its
// `event`. Unknown keys are ignored (a newer proctrace may add some); a key given twice is an
// error.

/// How many keys there are: a slot and a bit of [`Table`] each.
pub(super) const NKEYS: usize = K::ALL.len();
const _: () = assert!(NKEYS <= 128, "Table::set has a bit per key");

/// A value's place on the line (a [`Val`] without the borrow, so the table is reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Absent,
    Null,
    Bool(bool),
    Num(usize, usize),
    /// A number the laid-out reader parsed in place as its key's type ([`Type`]): an integer,
    /// or seconds in nanoseconds. Read as [`Slot::Num`] by everything but the typed getters.
    Parsed(usize, usize, u64),
    Str(usize, usize, bool),
    Raw(usize, usize),
}

/// The values of the line being read, by key: kept between lines so that a line costs no
/// allocation and no clearing beyond the keys it had.
pub(super) struct Table {
    pub(super) v: [Slot; NKEYS],
    pub(super) set: u128,
    /// The strings of `argv` when it is an array of strings (the usual case): where each lies
    /// on the line and whether it holds escapes. Taken while the line is scanned, so the
    /// longest value of an exec line is not scanned a second time to take its words (that
    /// second pass was 6% of `analyze`, `perf` on the 307 MB ingest file).
    pub(super) words: Vec<(usize, usize, bool)>,
    /// `words` holds the line's `argv`.
    pub(super) words_ok: bool,
    /// The line's event, when the laid-out reader read it (it knows it from the line's head);
    /// else the decoder looks the name up.
    pub(super) event: Option<EventName>,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            v: [Slot::Absent; NKEYS],
            set: 0,
            words: Vec::with_capacity(64),
            words_ok: false,
            event: None,
        }
    }
}

/// One scanned line: its text and its values.
pub(super) struct Line<'a> {
    pub(super) s: &'a str,
    pub(super) t: &'a Table,
}

/// The keys of the lines proctrace writes most (`fork`, `exec`, `exit`: nearly all of a file),
/// in the order [`crate::sink::jsonl`] writes them, each with the bytes that lead to its value
/// ([`Field::lead`]): the schema's fields of the event after `event`. See
/// [`Table::fill_laid_out`].
pub(super) const FORK_KEYS: &[Field] = after_event(EventName::Fork);
pub(super) const EXEC_KEYS: &[Field] = after_event(EventName::Exec);
pub(super) const EXIT_KEYS: &[Field] = after_event(EventName::Exit);

/// The schema's fields of `e` after its `event`.
pub(super) const fn after_event(e: EventName) -> &'static [Field] {
    match EVENTS[e as usize].fields.split_first() {
        Some((first, rest)) if matches!(first.key, K::Event) => rest,
        _ => panic!("every event's first key is `event`"),
    }
}

impl Table {
    /// Fills the table from a `fork`, `exec` or `exit` line laid out exactly as proctrace writes
    /// it — no whitespace, its keys in the writer's order (each found by comparing the bytes
    /// that lead to it, not by scanning and looking up its name), none added — and says whether
    /// it was. Values in the forms the writer uses (a plain number, a string without escapes,
    /// an argv of strings) are read in place, numbers parsed as their key's type ([`Type`]);
    /// any other value by the [`Scan`] method [`Table::scan`] uses. A line filled here fills
    /// the table as `scan` would and decodes to the same events (test:
    /// `a_laid_out_line_fills_the_table_as_scan_does`, on every golden line, edge lines and
    /// mutated ones); any other line, and any line with a bad value, is left to `scan`, which
    /// reads it or names the error. Measured: the line scanner was most of `analyze`'s time,
    /// the key lookups and per-value dispatch most of the scanner's (reader 192 → 423 MB/s,
    /// BENCHMARKS.md).
    pub(super) fn fill_laid_out(&mut self, s: &str) -> bool {
        const HEAD: &str = "{\"event\":\"";
        let b = s.as_bytes();
        let Some(rest) = b.strip_prefix(HEAD.as_bytes()) else {
            return false;
        };
        let (event, keys) = match rest.get(..6) {
            Some(b"fork\",") => (EventName::Fork, FORK_KEYS),
            Some(b"exec\",") => (EventName::Exec, EXEC_KEYS),
            Some(b"exit\",") => (EventName::Exit, EXIT_KEYS),
            _ => return false,
        };
        let name = event.name();
        self.set = 0;
        self.words_ok = false;
        self.event = Some(event);
        let start = HEAD.len();
        self.put(K::Event, Slot::Str(start, start + name.len(), false));
        let mut p = Scan::new(s);
        p.i = start + name.len() + 1;
        for &Field { key: k, lead, ty, .. } in keys {
            if !lead_at(b, p.i, lead.as_bytes()) {
                continue;
            }
            p.i += lead.len();
            let from = p.i;
            // The forms the writer uses, read in place; anything else by the general scanner.
            let quick = match b.get(from) {
                Some(b'0'..=b'9') => plain_number(b, from).map(|to| (to, parsed(&b[from..to], ty, from, to))),
                Some(b'"') => plain_string(b, from).map(|to| (to + 1, Slot::Str(from + 1, to, false))),
                Some(b'[') if k == K::Argv => match self.laid_out_words(&mut p) {
                    true => Some((p.i, Slot::Raw(from, p.i))),
                    false => return false,
                },
                _ => None,
            };
            let slot = match quick {
                Some((to, slot)) => {
                    p.i = to;
                    slot
                }
                None => match p.value(1) {
                    Ok(Val::Null) => Slot::Null,
                    Ok(Val::Bool(v)) => Slot::Bool(v),
                    Ok(Val::Num(x)) => Slot::Num(from, from + x.len()),
                    Ok(Val::Str(x, e)) => Slot::Str(from + 1, from + 1 + x.len(), e),
                    Ok(Val::Raw(x)) => Slot::Raw(from, from + x.len()),
                    Err(_) => return false,
                },
            };
            self.put(k, slot);
        }
        p.i + 1 == b.len() && b[p.i] == b'}'
    }

    /// `argv` as [`Scan::words`] takes it, for [`Table::fill_laid_out`]: an array of strings
    /// with no space around its commas, each word found by [`plain_string`] (or [`Scan::string`]
    /// when it holds escapes).
    pub(super) fn laid_out_words(&mut self, p: &mut Scan<'_>) -> bool {
        let b = p.b;
        self.words.clear();
        p.i += 1;
        if b.get(p.i) == Some(&b']') {
            p.i += 1;
            self.words_ok = true;
            return true;
        }
        loop {
            if b.get(p.i) != Some(&b'"') {
                return false;
            }
            let from = p.i + 1;
            match plain_string(b, p.i) {
                Some(to) => {
                    self.words.push((from, to, false));
                    p.i = to + 1;
                }
                None => match p.string() {
                    Ok((w, esc)) => self.words.push((from, from + w.len(), esc)),
                    Err(_) => return false,
                },
            }
            match b.get(p.i) {
                Some(b',') => p.i += 1,
                Some(b']') => {
                    p.i += 1;
                    self.words_ok = true;
                    return true;
                }
                _ => return false,
            }
        }
    }

    pub(super) fn put(&mut self, k: K, v: Slot) {
        self.set |= 1u128 << k as u32;
        self.v[k as usize] = v;
    }

    /// Scans one line (a JSON object and nothing else) into the table.
    pub(super) fn scan(&mut self, s: &str) -> Res<()> {
        // A slot whose bit is not set is absent, whatever it still holds from an earlier line.
        self.set = 0;
        self.words_ok = false;
        self.event = None;
        let base = s.as_ptr() as usize;
        let at = |x: &str| x.as_ptr() as usize - base;
        let mut p = Scan::new(s);
        p.ws();
        p.eat(b'{')?;
        p.ws();
        if p.peek() == Some(b'}') {
            p.i += 1;
        } else {
            loop {
                p.ws();
                let (key, esc) = p.string()?;
                p.ws();
                p.eat(b':')?;
                p.ws();
                // A key with escapes (`"\u0065vent"`, which no writer needs) is decoded first.
                let k = if esc { K::of(&unescape(key)) } else { K::of(key) };
                let v = match (k, p.peek()) {
                    (Some(K::Argv), Some(b'[')) => {
                        let from = p.i;
                        self.words_ok = p.words(&mut self.words)?;
                        if !self.words_ok {
                            // Not only strings: scanned as any value (the decoder refuses it).
                            p.i = from;
                            p.value(1)?
                        } else {
                            Val::Raw(p.slice(from, p.i)?)
                        }
                    }
                    _ => p.value(1)?,
                };
                if let Some(k) = k {
                    let bit = 1u128 << k as u32;
                    if self.set & bit != 0 {
                        return Err(format!("\"{key}\" given twice"));
                    }
                    self.set |= bit;
                    self.v[k as usize] = match v {
                        Val::Null => Slot::Null,
                        Val::Bool(b) => Slot::Bool(b),
                        Val::Num(x) => Slot::Num(at(x), at(x) + x.len()),
                        Val::Str(x, e) => Slot::Str(at(x), at(x) + x.len(), e),
                        Val::Raw(x) => Slot::Raw(at(x), at(x) + x.len()),
                    };
                }
                p.ws();
                match p.peek() {
                    Some(b',') => p.i += 1,
                    Some(b'}') => {
                        p.i += 1;
                        break;
                    }
                    _ => return Err(format!("expected ',' or '}}' at byte {}", p.i)),
                }
            }
        }
        p.ws();
        if p.i != p.b.len() {
            return Err(format!("trailing bytes at {}", p.i));
        }
        Ok(())
    }
}

impl<'a> Line<'a> {
    /// The value of `k`, if the line has it.
    pub(super) fn get(&self, k: K) -> Option<Val<'a>> {
        if self.t.set & (1u128 << k as u32) == 0 {
            return None;
        }
        let s = |a: usize, b: usize| self.s.get(a..b).unwrap_or_default();
        Some(match self.t.v[k as usize] {
            Slot::Absent => return None,
            Slot::Null => Val::Null,
            Slot::Bool(b) => Val::Bool(b),
            Slot::Num(a, b) | Slot::Parsed(a, b, _) => Val::Num(s(a, b)),
            Slot::Str(a, b, e) => Val::Str(s(a, b), e),
            Slot::Raw(a, b) => Val::Raw(s(a, b)),
        })
    }
}

impl<'a> Line<'a> {
    /// Text that came from bytes (a path, a name): `k`'s string as the model's text
    /// ([bytes-in-text](crate::model::bytes)), or the exact bytes of `k64` (base64) when the
    /// line has them. Borrowed in the usual case (no escapes, no base64). `exact`: the line
    /// holds no character of the reserved range ([`Line::exact`]), so no field needs a look.
    pub(super) fn bytes_text(&self, k: K, k64: K, key: &str, exact: bool) -> Res<Option<Cow<'a, str>>> {
        let v = opt_cow(self.get(k), key)?;
        match self.get(k64) {
            None | Some(Val::Null) if exact => Ok(v),
            None | Some(Val::Null) => Ok(v.map(held)),
            Some(Val::Str(b, _)) => {
                let raw = base64_bytes(b).ok_or_else(|| format!("\"{key}_base64\" is not base64"))?;
                Ok(Some(Cow::Owned(bytes::encode(&raw).into_owned())))
            }
            Some(_) => Err(format!("\"{key}_base64\" is not a string")),
        }
    }
}

/// A string read from a line as the model's text: a character of the range bytes-in-text
/// reserves, written by any tool, stays the character it is (held as its bytes).
pub(super) fn held(s: Cow<'_, str>) -> Cow<'_, str> {
    if bytes::is_exact(&s) {
        return s;
    }
    Cow::Owned(bytes::encode(s.as_bytes()).into_owned())
}

/// Standard base64 (padded), as the writer writes it.
pub(super) fn base64_bytes(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// `argv` with its exact bytes: each word `argv_base64` gives (by position) replaced by those
/// bytes, every other word [`held`]. Only for a line that has `argv_base64` or a word holding a
/// reserved character (rare: the usual argv is taken as it is).
pub(super) fn exact_argv(argv: Argv, b64: Option<Val<'_>>) -> Res<Argv> {
    let raw: Vec<Option<String>> = match b64 {
        None | Some(Val::Null) => Vec::new(),
        Some(Val::Raw(r)) => serde_json::from_str(r)
            .map_err(|_| "\"argv_base64\" is not an array of strings and nulls".to_string())?,
        Some(_) => return Err("\"argv_base64\" is not an array".into()),
    };
    if !raw.is_empty() && raw.len() != argv.len() {
        return Err(format!(
            "\"argv_base64\" has {} entries for {} words of \"argv\"",
            raw.len(),
            argv.len()
        ));
    }
    let mut b = ArgvBuilder::new();
    for (i, w) in argv.iter().enumerate() {
        match raw.get(i).and_then(Option::as_deref) {
            Some(e) => {
                let bytes =
                    base64_bytes(e).ok_or_else(|| format!("\"argv_base64\" entry {i} is not base64"))?;
                b.push_with(|t| bytes::encode_into(t, &bytes));
            }
            None => b.push_with(|t| bytes::encode_into(t, w.as_bytes())),
        }
    }
    Ok(b.take())
}

impl Line<'_> {
    /// Whether the line holds no character of the range bytes-in-text reserves (one `memchr`
    /// for the whole line, instead of one per field of text).
    pub(super) fn exact(&self) -> bool {
        bytes::is_exact(self.s)
    }

    /// The number the laid-out reader parsed for `k`, if it did.
    #[inline]
    pub(super) fn parsed(&self, k: K) -> Option<u64> {
        match self.t.v[k as usize] {
            Slot::Parsed(_, _, v) if self.t.set & (1u128 << k as u32) != 0 => Some(v),
            _ => None,
        }
    }

    /// [`opt_int`] of `k`'s value.
    pub(super) fn int<T: TryFrom<i64>>(&self, k: K, key: &str) -> Res<Option<T>> {
        match self.parsed(k).map(|v| T::try_from(v as i64)) {
            Some(Ok(v)) => Ok(Some(v)),
            _ => opt_int(self.get(k), key),
        }
    }

    /// [`secs`] of `k`'s value.
    pub(super) fn secs(&self, k: K, key: &str) -> Res<Option<u64>> {
        match self.parsed(k) {
            Some(v) => Ok(Some(v)),
            None => secs(self.get(k), key),
        }
    }

    /// `k`'s value as a pid, which the line must have.
    pub(super) fn pid(&self, k: K, key: &str) -> Res<Pid> {
        need(self.int(k, key)?, key)
    }

    /// `argv`: its words as [`Table::scan`] found them, straight into one [`Argv`] (no string
    /// per word; `b` is reused from line to line); anything else as [`opt_strings`] takes it
    /// (`null`, or the error).
    pub(super) fn argv(&self, b: &mut ArgvBuilder, exact: bool) -> Res<Option<Argv>> {
        match self.get(K::Argv) {
            Some(Val::Raw(_)) if self.t.words_ok => {
                b.clear();
                for &(from, to, esc) in &self.t.words {
                    let w = self.s.get(from..to).unwrap_or_default();
                    if esc {
                        b.push_with(|t| unescape_into(w, t));
                    } else {
                        b.push(w);
                    }
                }
                self.exact_words(b.take(), exact).map(Some)
            }
            v => match opt_strings(v, "argv", &mut Vec::new())?.map(Argv::from) {
                Some(a) => self.exact_words(a, exact).map(Some),
                None => Ok(None),
            },
        }
    }

    /// `a` with the exact bytes the line gives for it ([`exact_argv`]), when it gives any.
    fn exact_words(&self, a: Argv, exact: bool) -> Res<Argv> {
        match self.get(K::ArgvBase64) {
            None if exact || a.is_exact() => Ok(a),
            v => exact_argv(a, v),
        }
    }
}

/// An optional string (`null` = absent), borrowed unless it holds escapes.
pub(super) fn opt_cow<'a>(v: Option<Val<'a>>, key: &str) -> Res<Option<Cow<'a, str>>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Str(s, false)) => Ok(Some(Cow::Borrowed(s))),
        Some(Val::Str(s, true)) => Ok(Some(Cow::Owned(unescape(s)))),
        Some(_) => Err(format!("\"{key}\" is not a string")),
    }
}

pub(super) fn opt_string(v: Option<Val<'_>>, key: &str) -> Res<Option<String>> {
    opt_cow(v, key).map(|c| c.map(Cow::into_owned))
}

pub(super) fn opt_int<T: TryFrom<i64>>(v: Option<Val<'_>>, key: &str) -> Res<Option<T>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Num(n)) => {
            // As proctrace writes it, or any form of a whole number (`3.0`, `1e+17`).
            let i: i64 = match n.parse() {
                Ok(i) => i,
                Err(_) => scaled(n.as_bytes(), 0, false)
                    .and_then(|(neg, v)| i64::try_from(if neg { -i128::from(v) } else { i128::from(v) }).ok())
                    .ok_or_else(|| format!("\"{key}\" is not an integer: {n}"))?,
            };
            T::try_from(i)
                .map(Some)
                .map_err(|_| format!("\"{key}\" out of range: {n}"))
        }
        Some(_) => Err(format!("\"{key}\" is not a number")),
    }
}

pub(super) fn flag(v: Option<Val<'_>>, key: &str) -> Res<bool> {
    match v {
        None | Some(Val::Null) => Ok(false),
        Some(Val::Bool(b)) => Ok(b),
        Some(_) => Err(format!("\"{key}\" is not true or false")),
    }
}

/// An optional array of strings. They are gathered in `scratch` (reused from line to line) and
/// then moved into a vector of exactly their number: growing a vector push by push left an
/// average argv (about 25 words for a compiler) with room for 32, 170 bytes unused in every
/// record, and its reallocations were a tenth of `analyze`'s time (`perf`, 307 MB file).
pub(super) fn opt_strings(
    v: Option<Val<'_>>,
    key: &str,
    scratch: &mut Vec<String>,
) -> Res<Option<Vec<String>>> {
    let raw = match v {
        None | Some(Val::Null) => return Ok(None),
        Some(Val::Raw(r)) if r.starts_with('[') => r,
        Some(_) => return Err(format!("\"{key}\" is not an array")),
    };
    // The array was checked when the line was scanned; now only its strings are taken.
    let mut p = Scan::new(raw);
    p.i = 1;
    scratch.clear();
    loop {
        p.ws();
        match p.peek() {
            Some(b']') => {
                // Allocated once, to size (`scratch` keeps its room for the next line).
                let mut words = Vec::with_capacity(scratch.len());
                words.append(scratch);
                return Ok(Some(words));
            }
            Some(b',') => p.i += 1,
            Some(b'"') => {
                let (s, esc) = p.string()?;
                scratch.push(if esc { unescape(s) } else { s.to_owned() });
            }
            _ => return Err(format!("\"{key}\" holds a non-string")),
        }
    }
}
