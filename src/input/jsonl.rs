//! proctrace's own `-o` JSON Lines (the format [`crate::sink::jsonl`] writes), read back into
//! the events that made it, so `analyze` of a saved `-o` file gives the run's tree, summary and
//! outputs again (JSON Lines out equal, byte for byte, to the JSON Lines in).
//!
//! How each line becomes events:
//!
//! - `start` → the [`Header`] (mode, `ts`, `wall_offset`, backend, version; proctrace's pid and
//!   argv are not in the file: the reading proctrace's own stand in).
//! - `fork` → [`Event::Fork`] (`child_pid = child_tgid = pid`). In a `run` the first fork is the
//!   traced command: an [`Event::Root`] comes before it. A `pre_existing` fork is an
//!   [`Event::Existing`], with the details of the `exec` line that immediately follows it when
//!   that line is its synthetic exec (same time, or 0 when the start was unknown). A fork with
//!   `ts: null` that is neither is a process taken in without its fork: the root (adopted on its
//!   next event, as the live run did) or one found through `/proc` ([`Event::Ancestry`]).
//! - `exec` → [`Event::Exec`] + [`Event::ExecDetails`].
//! - `exit` → [`Event::Exit`] with the wait status rebuilt from `code`/`signal`/`core`
//!   (`core: false` means the core-dumping signal was seen without a core: an
//!   [`Event::Coredump`] first); `exit_lost` → [`Event::Gone`], which closes the process with
//!   no status exactly as the tracker closes one whose exit was lost; `background: true` on a
//!   process with no `background` line → a quiet [`Event::Background`] (`report: false`).
//! - `background`, `lost`, `uid`, `gid`, `setsid`, `ptrace`, `comm` → the event of that name.
//! - `region` → [`Event::Region`]; `data`, `timer`, `counter` → [`Event::Data`].
//! - `end` → the recorded [`Summary`] (a file from a killed proctrace has none and is still read).
//!
//! The vocabulary (event names, keys, their types, the writer's order) is
//! [`crate::model::jsonl_schema`]'s; the reference is docs/json-lines.md. Any valid JSON a JSON
//! tool writes for the same content reads to the same events (`jq -c .`, `jq -S .`, Python's
//! `json.dumps`): spaces, keys in any order or escaped, numbers in any form. Lines laid out as
//! proctrace writes them take a fast path (`Table::fill_laid_out`); any other line the general
//! scanner (`Table::scan`). Seconds are parsed exactly to nanoseconds (never through `f64`):
//! nine decimals in place, any other form (`scaled`: `5.3688e-05`, 17 digits from jq 1.6)
//! with decimal arithmetic, rounded half to even below the nanosecond. An integer may be written
//! in any form of a whole number (`3.0`, `1e+17`). Unknown keys are ignored.
//!
//! Read as a stream: memory holds one line, the one `pre_existing` fork waiting for its exec and
//! the pids marked background that are still alive.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lines::{Lines, Order, jsonl_key};
use super::{Input, InputError, InputOptions, InputStats};
use crate::model::argv::ArgvBuilder;
use crate::model::event::{Argv, Data, DataValue, Event, ExecDetails, ExitStatus, Pid, Region, Usage};
use crate::model::jsonl_schema::{CTX_SWITCHES_KEYS, EVENTS, EventName, Field, Key as K, Type};
use crate::model::session::{CaptureSummary, Header, Mode, Summary};
use crate::model::tracker::{BackgroundState, TrackerStats};

// The line scanner below is hand-written for the one flat shape these lines have, instead of
// serde_json into a struct of optional borrowed fields (the first version of this reader).
// Measured with `benches/ingest.rs` (reader alone, bytes to events, CPU time) on the 29.6 MB `-o`
// file of a 100,001-process run: serde_json 90 MB/s; this scanner, which checks the same JSON
// grammar, borrows every string without escapes, keeps a reused key table instead of a struct
// of 59 options per line and decodes a field only when the line's kind needs it, about 200 MB/s.
// Figures for big files: BENCHMARKS.md, `bench/run --only ingest`.

/// A value on a line, not yet decoded.
#[derive(Debug, Clone, Copy)]
enum Val<'a> {
    Null,
    Bool(bool),
    /// A number as written (JSON grammar checked).
    Num(&'a str),
    /// A string's contents between its quotes; `true` when it holds escapes.
    Str(&'a str, bool),
    /// An array or object as written (grammar checked).
    Raw(&'a str),
}

/// Deepest nesting of arrays and objects accepted in a value.
const MAX_DEPTH: u32 = 64;

/// A JSON scanner over one line.
struct Scan<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

type Res<T> = Result<T, String>;

impl<'a> Scan<'a> {
    fn new(s: &'a str) -> Self {
        Scan {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    /// Skips whitespace. Lines as proctrace writes them have none: one comparison says so
    /// (the four-way match alone was a tenth of the line scanner's time in `perf`).
    #[inline(always)]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if c > b' ' || !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
                return;
            }
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Res<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    fn slice(&self, from: usize, to: usize) -> Res<&'a str> {
        self.s
            .get(from..to)
            .ok_or_else(|| format!("bad text at byte {from}"))
    }

    /// A string (at its opening quote): its contents and whether it holds escapes.
    fn string(&mut self) -> Res<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut esc = false;
        loop {
            self.i = special(self.b, self.i);
            let Some(&c) = self.b.get(self.i) else {
                return Err("unterminated string".into());
            };
            self.i += 1;
            match c {
                b'"' => return Ok((self.slice(start, self.i - 1)?, esc)),
                b'\\' => {
                    esc = true;
                    match self.b.get(self.i) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            let hex = self.b.get(self.i + 1..self.i + 5).ok_or("short \\u escape")?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err("bad \\u escape".into());
                            }
                            self.i += 5;
                        }
                        _ => return Err(format!("bad escape at byte {}", self.i)),
                    }
                }
                _ => return Err(format!("control character in a string at byte {}", self.i - 1)),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let s = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - s
    }

    fn number(&mut self) -> Res<&'a str> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        if self.digits() == 0 || (self.b[int_start] == b'0' && self.i - int_start > 1) {
            return Err(format!("bad number at byte {start}"));
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(format!("bad number at byte {start}"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(format!("bad number at byte {start}"));
            }
        }
        self.slice(start, self.i)
    }

    fn word(&mut self, w: &str, v: Val<'a>) -> Res<Val<'a>> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(format!("bad literal at byte {}", self.i))
        }
    }

    /// An array (at its `[`) of strings only: their places go to `out` and it is `true`; at
    /// anything but a string it stops, `false` (the caller scans the array again as a value).
    fn words(&mut self, out: &mut Vec<(usize, usize, bool)>) -> Res<bool> {
        out.clear();
        self.eat(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(true);
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Ok(false);
            }
            let (w, esc) = self.string()?;
            let end = self.i - 1;
            out.push((end - w.len(), end, esc));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(true);
                }
                _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
            }
        }
    }

    fn value(&mut self, depth: u32) -> Res<Val<'a>> {
        match self.peek() {
            Some(b'"') => self.string().map(|(s, e)| Val::Str(s, e)),
            Some(b'n') => self.word("null", Val::Null),
            Some(b't') => self.word("true", Val::Bool(true)),
            Some(b'f') => self.word("false", Val::Bool(false)),
            Some(b'-' | b'0'..=b'9') => self.number().map(Val::Num),
            Some(open @ (b'[' | b'{')) => {
                if depth >= MAX_DEPTH {
                    return Err("nesting too deep".into());
                }
                let start = self.i;
                let close = if open == b'[' { b']' } else { b'}' };
                self.i += 1;
                self.ws();
                if self.peek() == Some(close) {
                    self.i += 1;
                    return self.slice(start, self.i).map(Val::Raw);
                }
                loop {
                    self.ws();
                    if open == b'{' {
                        self.string()?;
                        self.ws();
                        self.eat(b':')?;
                        self.ws();
                    }
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {
                            self.i += 1;
                            return self.slice(start, self.i).map(Val::Raw);
                        }
                        _ => return Err(format!("expected ',' or '{}' at byte {}", close as char, self.i)),
                    }
                }
            }
            Some(c) => Err(format!("unexpected byte 0x{c:02x} at {}", self.i)),
            None => Err("unexpected end of line".into()),
        }
    }
}

/// The first byte at or after `i` that ends a run of plain string bytes: `"`, `\\` or a control
/// character (`b.len()` if none). Eight bytes at a time (SWAR: each test sets the high bit of
/// the bytes that match, and the lowest set bit is always a true match), then byte by byte.
/// Measured on 500-byte lines (`benches/ingest.rs`): the reader went from 120 to 190 MB/s with
/// this in place of a short byte loop, memchr2 and a separate control-character pass.
fn special(b: &[u8], mut i: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let eq = |w: u64, c: u8| {
        let v = w ^ (LO * c as u64);
        v.wrapping_sub(LO) & !v & HI
    };
    while let Some(chunk) = b.get(i..i + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(chunk);
        let w = u64::from_le_bytes(a);
        let m = eq(w, b'"') | eq(w, b'\\') | (w.wrapping_sub(LO * 0x20) & !w & HI);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// Whether `lead` lies in `b` at `i`. Eight bytes at a time, the last eight overlapping (four
/// for a lead of 4 to 7 bytes): a `memcmp` call, then a byte loop, were a quarter of the
/// laid-out reader's own time (`perf`), most leads being tried at a place they do not match.
#[inline(always)]
fn lead_at(b: &[u8], i: usize, lead: &[u8]) -> bool {
    let Some(at) = b.get(i..i + lead.len()) else {
        return false;
    };
    let n = lead.len();
    match n {
        0..=3 => at == lead,
        4..=7 => w4(at, 0) == w4(lead, 0) && w4(at, n - 4) == w4(lead, n - 4),
        _ => {
            let mut o = 0;
            while o + 8 < n {
                if w8(at, o) != w8(lead, o) {
                    return false;
                }
                o += 8;
            }
            w8(at, n - 8) == w8(lead, n - 8)
        }
    }
}

/// The 8 bytes of `s` at `o`, as a number (`None` past the end).
#[inline(always)]
fn w8(s: &[u8], o: usize) -> Option<u64> {
    let c: [u8; 8] = s.get(o..o + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(c))
}

/// The 4 bytes of `s` at `o`, as a number (`None` past the end).
#[inline(always)]
fn w4(s: &[u8], o: usize) -> Option<u32> {
    let c: [u8; 4] = s.get(o..o + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(c))
}

/// The end of a non-negative number at `i` in the form proctrace writes (`0`, or digits not
/// starting with 0, then maybe `.` and digits), if it is one and ends there; anything else
/// (`-`, an exponent, a bad number) is `None`, for [`Scan::number`] to judge.
#[inline]
fn plain_number(b: &[u8], i: usize) -> Option<usize> {
    let digits = |mut j: usize| {
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let int_end = digits(i);
    if int_end == i || (b[i] == b'0' && int_end > i + 1) {
        return None;
    }
    let end = if b.get(int_end) == Some(&b'.') {
        let frac_end = digits(int_end + 1);
        if frac_end == int_end + 1 {
            return None;
        }
        frac_end
    } else {
        int_end
    };
    match b.get(end) {
        Some(b'e' | b'E') => None,
        _ => Some(end),
    }
}

/// A plain number's slot: parsed as `ty` says (integers and seconds; other types are not
/// parsed here) when it reads as one exactly as [`opt_int`] or [`secs`] would read it (else
/// left as text, for them to read or refuse).
#[inline]
fn parsed(n: &[u8], ty: Type, from: usize, to: usize) -> Slot {
    let v = match ty {
        // At most 18 digits: no overflow, and within i64 (what `opt_int` parses).
        Type::Int if n.len() <= 18 && !n.contains(&b'.') => {
            Some(n.iter().fold(0u64, |v, &d| v * 10 + u64::from(d - b'0')))
        }
        Type::Seconds => parse_seconds(n),
        _ => None,
    };
    match v {
        Some(v) => Slot::Parsed(from, to, v),
        None => Slot::Num(from, to),
    }
}

/// The place of the closing quote of the string whose opening quote is at `i`, if it holds
/// no escape and no control character (else `None`, for [`Scan::string`] to judge).
#[inline]
fn plain_string(b: &[u8], i: usize) -> Option<usize> {
    let end = special(b, i + 1);
    (b.get(end) == Some(&b'"')).then_some(end)
}

/// A string's value, escapes decoded (a lone surrogate becomes U+FFFD).
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    unescape_into(s, &mut out);
    out
}

/// [`unescape`], appended to `out`.
fn unescape_into(s: &str, out: &mut String) {
    let mut chars = s.char_indices();
    while let Some((_, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let hex4 = |chars: &mut std::str::CharIndices<'_>| -> u32 {
            let mut v = 0;
            for _ in 0..4 {
                v = v * 16 + chars.next().and_then(|(_, h)| h.to_digit(16)).unwrap_or(0);
            }
            v
        };
        match chars.next().map(|(_, e)| e) {
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let mut cp = hex4(&mut chars);
                if (0xD800..0xDC00).contains(&cp) {
                    let rest = chars.as_str();
                    if rest.starts_with("\\u") {
                        let mut ahead = chars.clone();
                        ahead.next();
                        ahead.next();
                        let lo = hex4(&mut ahead);
                        if (0xDC00..0xE000).contains(&lo) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            chars = ahead;
                        }
                    }
                }
                out.push(char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
}

// The keys lines have are the schema's ([`K`]); which ones a line must have depends on its
// `event`. Unknown keys are ignored (a newer proctrace may add some); a key given twice is an
// error.

/// How many keys there are: a slot and a bit of [`Table`] each.
const NKEYS: usize = K::ALL.len();
const _: () = assert!(NKEYS <= 128, "Table::set has a bit per key");

/// A value's place on the line (a [`Val`] without the borrow, so the table is reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
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
struct Table {
    v: [Slot; NKEYS],
    set: u128,
    /// The strings of `argv` when it is an array of strings (the usual case): where each lies
    /// on the line and whether it holds escapes. Taken while the line is scanned, so the
    /// longest value of an exec line is not scanned a second time to take its words (that
    /// second pass was 6% of `analyze`, `perf` on the 307 MB ingest file).
    words: Vec<(usize, usize, bool)>,
    /// `words` holds the line's `argv`.
    words_ok: bool,
    /// The line's event, when the laid-out reader read it (it knows it from the line's head);
    /// else the decoder looks the name up.
    event: Option<EventName>,
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
struct Line<'a> {
    s: &'a str,
    t: &'a Table,
}

/// The keys of the lines proctrace writes most (`fork`, `exec`, `exit`: nearly all of a file),
/// in the order [`crate::sink::jsonl`] writes them, each with the bytes that lead to its value
/// ([`Field::lead`]): the schema's fields of the event after `event`. See
/// [`Table::fill_laid_out`].
const FORK_KEYS: &[Field] = after_event(EventName::Fork);
const EXEC_KEYS: &[Field] = after_event(EventName::Exec);
const EXIT_KEYS: &[Field] = after_event(EventName::Exit);

/// The schema's fields of `e` after its `event`.
const fn after_event(e: EventName) -> &'static [Field] {
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
    fn fill_laid_out(&mut self, s: &str) -> bool {
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
    fn laid_out_words(&mut self, p: &mut Scan<'_>) -> bool {
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

    fn put(&mut self, k: K, v: Slot) {
        self.set |= 1u128 << k as u32;
        self.v[k as usize] = v;
    }

    /// Scans one line (a JSON object and nothing else) into the table.
    fn scan(&mut self, s: &str) -> Res<()> {
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
    fn get(&self, k: K) -> Option<Val<'a>> {
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

impl Line<'_> {
    /// The number the laid-out reader parsed for `k`, if it did.
    #[inline]
    fn parsed(&self, k: K) -> Option<u64> {
        match self.t.v[k as usize] {
            Slot::Parsed(_, _, v) if self.t.set & (1u128 << k as u32) != 0 => Some(v),
            _ => None,
        }
    }

    /// [`opt_int`] of `k`'s value.
    fn int<T: TryFrom<i64>>(&self, k: K, key: &str) -> Res<Option<T>> {
        match self.parsed(k).map(|v| T::try_from(v as i64)) {
            Some(Ok(v)) => Ok(Some(v)),
            _ => opt_int(self.get(k), key),
        }
    }

    /// [`secs`] of `k`'s value.
    fn secs(&self, k: K, key: &str) -> Res<Option<u64>> {
        match self.parsed(k) {
            Some(v) => Ok(Some(v)),
            None => secs(self.get(k), key),
        }
    }

    /// `k`'s value as a pid, which the line must have.
    fn pid(&self, k: K, key: &str) -> Res<Pid> {
        need(self.int(k, key)?, key)
    }

    /// `argv`: its words as [`Table::scan`] found them, straight into one [`Argv`] (no string
    /// per word; `b` is reused from line to line); anything else as [`opt_strings`] takes it
    /// (`null`, or the error).
    fn argv(&self, b: &mut ArgvBuilder) -> Res<Option<Argv>> {
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
                Ok(Some(b.take()))
            }
            v => Ok(opt_strings(v, "argv", &mut Vec::new())?.map(Argv::from)),
        }
    }
}

/// An optional string (`null` = absent), borrowed unless it holds escapes.
fn opt_cow<'a>(v: Option<Val<'a>>, key: &str) -> Res<Option<Cow<'a, str>>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Str(s, false)) => Ok(Some(Cow::Borrowed(s))),
        Some(Val::Str(s, true)) => Ok(Some(Cow::Owned(unescape(s)))),
        Some(_) => Err(format!("\"{key}\" is not a string")),
    }
}

fn opt_string(v: Option<Val<'_>>, key: &str) -> Res<Option<String>> {
    opt_cow(v, key).map(|c| c.map(Cow::into_owned))
}

fn opt_int<T: TryFrom<i64>>(v: Option<Val<'_>>, key: &str) -> Res<Option<T>> {
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

fn flag(v: Option<Val<'_>>, key: &str) -> Res<bool> {
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
fn opt_strings(v: Option<Val<'_>>, key: &str, scratch: &mut Vec<String>) -> Res<Option<Vec<String>>> {
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

/// Decimal seconds (`12.000000345`, at most nine decimals, no sign or exponent) as
/// nanoseconds, exactly.
pub fn parse_seconds(s: &[u8]) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() || frac.len() > 9 || (s.len() > int.len() && frac.is_empty()) {
        return None;
    }
    let mut secs: u64 = 0;
    for &b in int {
        if !b.is_ascii_digit() {
            return None;
        }
        secs = secs.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    let mut ns: u64 = 0;
    for i in 0..9 {
        let d = match frac.get(i) {
            Some(&b) if b.is_ascii_digit() => (b - b'0') as u64,
            Some(_) => return None,
            None => 0,
        };
        ns = ns * 10 + d;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// A JSON number (its grammar already checked) times 10^`scale`, as its sign and magnitude
/// (`true` for a `-`), in decimal arithmetic, never through a float: `5.3688e-05` at scale 9
/// (seconds to nanoseconds) is 53688. Digits below the unit are rounded to the nearest, ties to
/// even, when `round`; else they must be zeros (an integer written `3.0` or `3e0`) or it is
/// `None`. `None` too when the magnitude exceeds `u64`. Time is linear in the number's length,
/// whatever its exponent.
fn scaled(n: &[u8], scale: u32, round: bool) -> Option<(bool, u64)> {
    let (neg, n) = match n.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, n),
    };
    let e_at = n.iter().position(|&c| c == b'e' || c == b'E').unwrap_or(n.len());
    let (mantissa, e) = n.split_at(e_at);
    let exp: i64 = match e.get(1..) {
        None => 0,
        Some(e) => {
            let (minus, digits) = match e.first() {
                Some(b'-') => (true, &e[1..]),
                Some(b'+') => (false, &e[1..]),
                _ => (false, e),
            };
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            // Held at 2^40, far beyond any line's length: the answer (0 or too big) is the same.
            let v = digits
                .iter()
                .fold(0i64, |v, &d| (v * 10 + i64::from(d - b'0')).min(1 << 40));
            if minus { -v } else { v }
        }
    };
    let (int, frac) = match mantissa.iter().position(|&c| c == b'.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, &b""[..]),
    };
    if int.is_empty() || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let digit = |i: usize| {
        int.get(i)
            .or_else(|| frac.get(i - int.len()))
            .map_or(0, |&d| u64::from(d - b'0'))
    };
    let total = int.len() + frac.len();
    let zeros = (0..total).take_while(|&i| digit(i) == 0).count();
    if zeros == total {
        return Some((neg, 0));
    }
    // The value is 0.d1d2…dm × 10^point, d1 the first digit that is not 0.
    let m = (total - zeros) as i64;
    let point = int.len() as i64 - zeros as i64 + exp + i64::from(scale);
    if point > 20 {
        return None; // at least 10^20
    }
    let d = |j: i64| digit(zeros + j as usize);
    let mut v: u64 = 0;
    for j in 0..point.clamp(0, m) {
        v = v.checked_mul(10)?.checked_add(d(j))?;
    }
    if point > m {
        v = v.checked_mul(10u64.checked_pow((point - m) as u32)?)?;
    }
    let below = point.max(0);
    if (below..m).all(|j| d(j) == 0) {
        return Some((neg, v));
    }
    if !round {
        return None;
    }
    // Under a tenth of the unit (point < 0) rounds down; else by the first digit below it.
    let up = point >= 0 && {
        let r = d(point);
        r > 5 || (r == 5 && ((point + 1..m).any(|j| d(j) != 0) || v & 1 == 1))
    };
    Some((neg, if up { v.checked_add(1)? } else { v }))
}

/// Seconds in any JSON form (`5.3688e-05`, `1.5`, `12.0000000004`) as nanoseconds, rounded
/// half to even; not negative (`-0` is 0).
fn general_seconds(s: &[u8]) -> Option<u64> {
    match scaled(s, 9, true)? {
        (true, 0) => Some(0),
        (true, _) => None,
        (false, v) => Some(v),
    }
}

/// Seconds that may be negative (the clock offset), as [`parse_seconds`] reads them with a
/// leading `-`, or in any JSON form.
fn parse_signed_seconds(s: &[u8]) -> Option<i64> {
    let quick = match s.strip_prefix(b"-") {
        Some(rest) => parse_seconds(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        None => parse_seconds(s).and_then(|v| i64::try_from(v).ok()),
    };
    quick.or_else(|| {
        let (neg, v) = scaled(s, 9, true)?;
        i64::try_from(if neg { -i128::from(v) } else { i128::from(v) }).ok()
    })
}

fn secs(v: Option<Val<'_>>, key: &str) -> Res<Option<u64>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Num(t)) => parse_seconds(t.as_bytes())
            .or_else(|| general_seconds(t.as_bytes()))
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "\"{key}\" is not a number of seconds (not negative, at most {} s): {t}",
                    u64::MAX / 1_000_000_000
                )
            }),
        Some(_) => Err(format!("\"{key}\" is not a number")),
    }
}

/// A process's cost from its `exit` line (the fields [`crate::sink::jsonl`] writes), if it has
/// one: `cpu_user_s` is the mark; the other fields default to 0 (delays to unknown).
fn usage(l: &Line<'_>) -> Res<Option<Usage>> {
    let Some(cpu_user_ns) = l.secs(K::CpuUserS, "cpu_user_s")? else {
        return Ok(None);
    };
    let n = |k: K, name: &str| -> Res<u64> { Ok(l.int::<u64>(k, name)?.unwrap_or(0)) };
    let (vol_ctx_switches, invol_ctx_switches) = match l.get(K::CtxSwitches) {
        None | Some(Val::Null) => (0, 0),
        Some(Val::Raw(r)) if r.starts_with('{') => ctx_switches(r)?,
        Some(_) => return Err("\"ctx_switches\" is not an object".into()),
    };
    Ok(Some(Usage {
        cpu_user_ns,
        cpu_sys_ns: l.secs(K::CpuSysS, "cpu_sys_s")?.unwrap_or(0),
        max_rss_kib: n(K::MaxRssKib, "max_rss_kib")?,
        read_chars: n(K::ReadChars, "read_chars")?,
        write_chars: n(K::WriteChars, "write_chars")?,
        read_bytes: n(K::ReadBytes, "read_bytes")?,
        write_bytes: n(K::WriteBytes, "write_bytes")?,
        cancelled_write_bytes: n(K::CancelledWriteBytes, "cancelled_write_bytes")?,
        vol_ctx_switches,
        invol_ctx_switches,
        cpu_delay_ns: l.secs(K::CpuDelayS, "cpu_delay_s")?,
        io_delay_ns: l.secs(K::IoDelayS, "io_delay_s")?,
    }))
}

/// The count at the start of `s` as JSON writes one (digits, no leading zero, within u64) and
/// what follows it.
fn leading_count(s: &str) -> Option<(u64, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let (d, rest) = s.split_at(n);
    if n == 0 || n > 20 || (n > 1 && d.starts_with('0')) {
        return None;
    }
    Some((d.parse().ok()?, rest))
}

/// `{"voluntary":N,"involuntary":M}` (checked as JSON when the line was scanned; its keys are
/// [`CTX_SWITCHES_KEYS`]).
fn ctx_switches(raw: &str) -> Res<(u64, u64)> {
    let [vol, invol] = CTX_SWITCHES_KEYS;
    // As proctrace writes it (one on every measured exit): read in place, no JSON value built.
    fn key<'a>(r: &'a str, k: &str) -> Option<&'a str> {
        r.strip_prefix('"')?.strip_prefix(k)?.strip_prefix("\":")
    }
    if let Some((v, r)) = raw
        .strip_prefix('{')
        .and_then(|r| key(r, vol))
        .and_then(leading_count)
    {
        if let Some((i, "}")) = r
            .strip_prefix(',')
            .and_then(|r| key(r, invol))
            .and_then(leading_count)
        {
            return Ok((v, i));
        }
    }
    // Any other layout (spaces, the keys in another order or escaped, a count written `1e3`):
    // scanned as the line was; other keys ignored, a missing or `null` count is 0.
    let mut counts = [0u64; 2];
    let mut p = Scan::new(raw);
    p.ws();
    p.eat(b'{')?;
    p.ws();
    if p.peek() == Some(b'}') {
        return Ok((0, 0));
    }
    loop {
        p.ws();
        let (k, esc) = p.string()?;
        let k = if esc {
            Cow::Owned(unescape(k))
        } else {
            Cow::Borrowed(k)
        };
        p.ws();
        p.eat(b':')?;
        p.ws();
        let v = p.value(1)?;
        if let Some(i) = CTX_SWITCHES_KEYS.iter().position(|&n| n == k) {
            counts[i] = match v {
                Val::Null => 0,
                Val::Num(n) => {
                    count(n).ok_or_else(|| format!("\"ctx_switches\".\"{k}\" is not a count: {n}"))?
                }
                _ => return Err(format!("\"ctx_switches\".\"{k}\" is not a count")),
            };
        }
        p.ws();
        match p.peek() {
            Some(b',') => p.i += 1,
            Some(b'}') => return Ok((counts[0], counts[1])),
            _ => return Err(format!("\"ctx_switches\": expected ',' or '}}' at byte {}", p.i)),
        }
    }
}

/// A JSON number that is a whole number from 0 to `u64::MAX`, in any form (`12`, `1.2e1`).
fn count(n: &str) -> Option<u64> {
    n.parse().ok().or_else(|| match scaled(n.as_bytes(), 0, false)? {
        (true, v) if v != 0 => None,
        (_, v) => Some(v),
    })
}

fn need<T>(v: Option<T>, key: &str) -> Res<T> {
    v.ok_or_else(|| format!("missing \"{key}\""))
}

/// A `pre_existing` fork waiting for the line after it (its exec, if it has one).
struct HeldExisting {
    pid: Pid,
    ppid: Pid,
    start_ns: Option<u64>,
}

/// Turns parsed lines into events: the little state the format needs.
#[derive(Default)]
struct Decoder {
    /// The header says `run`: the first fork is the traced command's.
    run: bool,
    /// The root was named.
    rooted: bool,
    held: Option<HeldExisting>,
    /// Processes with a `background` line (removed at their exit).
    background: HashSet<Pid>,
    /// The argv being read (reused: see [`Line::argv`]).
    argv: ArgvBuilder,
    /// Executables and working directories seen so far.
    paths: Paths,
}

/// The paths of `exe` and `cwd`, shared: a build runs the same few programs in the same few
/// directories hundreds of thousands of times, and every record keeps them. The
/// [`Paths::KEPT`] most recently used distinct paths are remembered, most recent first, and
/// compared (no hashing: a `HashSet` with std's SipHash cost as much time as the allocations
/// it saved, on the 307 MB ingest file); a path not among them gets its own copy and takes the
/// least recently used one's place. Bounded whatever the input.
#[derive(Default)]
struct Paths {
    kept: Vec<Arc<str>>,
}

impl Paths {
    const KEPT: usize = 16;

    fn share(&mut self, p: &str) -> Arc<str> {
        if let Some(i) = self.kept.iter().position(|a| a.len() == p.len() && **a == *p) {
            self.kept[..=i].rotate_right(1);
            return Arc::clone(&self.kept[0]);
        }
        let a: Arc<str> = Arc::from(p);
        if self.kept.len() == Self::KEPT {
            self.kept.pop();
        }
        self.kept.insert(0, Arc::clone(&a));
        a
    }
}

impl Decoder {
    /// The events of one line (appended to `out`); `end` gives the summary instead.
    fn decode(&mut self, l: Line<'_>, out: &mut Vec<Event>) -> Res<Option<Summary>> {
        let (ev, name) = match l.t.event {
            Some(e) => (Cow::Borrowed(e.name()), Some(e)),
            None => {
                let ev = need(opt_cow(l.get(K::Event), "event")?, "event")?;
                let name = EventName::of(&ev);
                (ev, name)
            }
        };
        if let Some(h) = self.held.take() {
            let synthetic = name == Some(EventName::Exec)
                && l.int::<Pid>(K::Pid, "pid")? == Some(h.pid)
                && l.secs(K::Ts, "ts")? == Some(h.start_ns.unwrap_or(0));
            let details = if synthetic {
                Some(exec_details(&l, &mut self.argv, &mut self.paths)?)
            } else {
                None
            };
            out.push(Event::Existing {
                tgid: h.pid,
                ppid: h.ppid,
                start_ns: h.start_ns,
                details,
            });
            if synthetic {
                return Ok(None);
            }
        }
        let ts = || -> Res<u64> { need(l.secs(K::Ts, "ts")?, "ts") };
        let Some(name) = name else {
            return Err(format!("unknown event '{ev}'"));
        };
        match name {
            EventName::Fork => {
                let (p, pp) = (l.pid(K::Pid, "pid")?, l.pid(K::Ppid, "ppid")?);
                let t = l.secs(K::Ts, "ts")?;
                if self.run && !self.rooted {
                    self.rooted = true;
                    out.push(Event::Root { tgid: p });
                    // Without a time its fork was lost: the tracker adopts it at its next event.
                    if let Some(ts) = t {
                        out.push(fork(ts, pp, p));
                    }
                } else if flag(l.get(K::PreExisting), "pre_existing")? {
                    self.held = Some(HeldExisting {
                        pid: p,
                        ppid: pp,
                        start_ns: t,
                    });
                } else {
                    out.push(match t {
                        Some(ts) => fork(ts, pp, p),
                        None => Event::Ancestry {
                            tgid: p,
                            ppid: pp,
                            start_ns: None,
                        },
                    });
                }
            }
            EventName::Exec => {
                let tgid = l.pid(K::Pid, "pid")?;
                let ts = ts()?;
                let details = exec_details(&l, &mut self.argv, &mut self.paths)?;
                out.push(Event::Exec { ts, tgid });
                out.push(Event::ExecDetails { tgid, details });
            }
            EventName::Exit => {
                let (p, ts) = (l.pid(K::Pid, "pid")?, ts()?);
                let bg = flag(l.get(K::Background), "background")?;
                let reported = self.background.remove(&p);
                if bg && !reported {
                    out.push(Event::Background {
                        ts,
                        tgid: p,
                        state: BackgroundState::Ready,
                        report: false,
                    });
                }
                if flag(l.get(K::ExitLost), "exit_lost")? {
                    out.push(Event::Gone { ts, tgid: p });
                    return Ok(None);
                }
                let core = match l.get(K::Core) {
                    None | Some(Val::Null) => None,
                    v => Some(flag(v, "core")?),
                };
                let status = match (l.int::<i64>(K::Code, "code")?, l.int::<i64>(K::Signal, "signal")?) {
                    (Some(c), None) if (0..=255).contains(&c) => (c as u32) << 8,
                    (None, Some(s)) if (1..=127).contains(&s) => {
                        if core == Some(false) {
                            out.push(Event::Coredump { ts, tgid: p });
                        }
                        s as u32 | if core == Some(true) { 0x80 } else { 0 }
                    }
                    (None, None) => return Err("an exit needs \"code\" or \"signal\"".into()),
                    _ => return Err("bad \"code\"/\"signal\"".into()),
                };
                if let Some(usage) = usage(&l)? {
                    out.push(Event::Usage {
                        tgid: p,
                        usage: Box::new(usage),
                    });
                }
                out.push(Event::Exit {
                    ts,
                    pid: p,
                    tgid: p,
                    status,
                    parent_tgid: l.pid(K::Ppid, "ppid")?,
                });
            }
            EventName::Background => {
                let p = l.pid(K::Pid, "pid")?;
                let state = match need(opt_cow(l.get(K::State), "state")?, "state")?.as_ref() {
                    "ready" => BackgroundState::Ready,
                    "timeout" => BackgroundState::Timeout,
                    "error" => BackgroundState::Error,
                    s => return Err(format!("unknown background \"state\" '{s}'")),
                };
                out.push(Event::Background {
                    ts: ts()?,
                    tgid: p,
                    state,
                    report: true,
                });
                self.background.insert(p);
            }
            EventName::Lost => out.push(Event::Lost {
                ts: l.secs(K::Ts, "ts")?,
                count: need(l.int(K::Count, "count")?, "count")?,
            }),
            EventName::Uid => out.push(Event::Uid {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
                ruid: need(l.int(K::Ruid, "ruid")?, "ruid")?,
                euid: need(l.int(K::Euid, "euid")?, "euid")?,
            }),
            EventName::Gid => out.push(Event::Gid {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
                rgid: need(l.int(K::Rgid, "rgid")?, "rgid")?,
                egid: need(l.int(K::Egid, "egid")?, "egid")?,
            }),
            EventName::Setsid => out.push(Event::Sid {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
            }),
            EventName::Ptrace => out.push(Event::Ptrace {
                ts: ts()?,
                tgid: l.pid(K::Pid, "pid")?,
                tracer: l.pid(K::Tracer, "tracer")?,
            }),
            EventName::Comm => {
                let p = l.pid(K::Pid, "pid")?;
                out.push(Event::Comm {
                    ts: ts()?,
                    pid: p,
                    tgid: p,
                    comm: need(opt_string(l.get(K::Comm), "comm")?, "comm")?,
                });
            }
            EventName::Region => {
                let start = ts()?;
                let d = need(l.secs(K::Duration, "duration")?, "duration")?;
                out.push(Event::Region {
                    tgid: l.pid(K::Pid, "pid")?,
                    region: Region {
                        ts: start,
                        end: start.checked_add(d).ok_or("\"duration\" out of range")?,
                        thread: opt_string(l.get(K::Thread), "thread")?.unwrap_or_default(),
                        category: opt_string(l.get(K::Category), "category")?.unwrap_or_default(),
                        label: opt_string(l.get(K::Label), "label")?.unwrap_or_default(),
                        msg: opt_string(l.get(K::Msg), "msg")?,
                        nesting: need(l.int(K::Nesting, "nesting")?, "nesting")?,
                    },
                });
            }
            EventName::Data | EventName::Timer | EventName::Counter => {
                let per_thread = flag(l.get(K::PerThread), "per_thread")?;
                let (value, key) = match name {
                    EventName::Data => {
                        let v = match need(l.get(K::Value), "value")? {
                            Val::Str(s, esc) => DataValue::Text(if esc { unescape(s) } else { s.to_owned() }),
                            Val::Num(s) | Val::Raw(s) => DataValue::Json(s.to_owned()),
                            Val::Bool(b) => DataValue::Json(b.to_string()),
                            Val::Null => DataValue::Json("null".into()),
                        };
                        (v, opt_string(l.get(K::Key), "key")?)
                    }
                    EventName::Timer => (
                        DataValue::Timer {
                            intervals: need(l.int(K::Intervals, "intervals")?, "intervals")?,
                            total_ns: need(l.secs(K::Total, "total")?, "total")?,
                            min_ns: need(l.secs(K::Min, "min")?, "min")?,
                            max_ns: need(l.secs(K::Max, "max")?, "max")?,
                            per_thread,
                        },
                        opt_string(l.get(K::Name), "name")?,
                    ),
                    _ => (
                        DataValue::Counter {
                            count: need(l.int(K::Count, "count")?, "count")?,
                            per_thread,
                        },
                        opt_string(l.get(K::Name), "name")?,
                    ),
                };
                out.push(Event::Data {
                    tgid: l.pid(K::Pid, "pid")?,
                    data: Data {
                        ts: ts()?,
                        thread: opt_string(l.get(K::Thread), "thread")?.unwrap_or_default(),
                        category: opt_string(l.get(K::Category), "category")?.unwrap_or_default(),
                        key: need(key, if name == EventName::Data { "key" } else { "name" })?,
                        nesting: need(l.int(K::Nesting, "nesting")?, "nesting")?,
                        value,
                    },
                });
            }
            EventName::End => return summary(&l).map(Some),
            EventName::Start => return Err("a second \"start\" line: two outputs in one file?".into()),
        }
        Ok(None)
    }

    /// End of input: what is still held.
    fn flush(&mut self, out: &mut Vec<Event>) {
        if let Some(h) = self.held.take() {
            out.push(Event::Existing {
                tgid: h.pid,
                ppid: h.ppid,
                start_ns: h.start_ns,
                details: None,
            });
        }
    }
}

fn fork(ts: u64, parent: Pid, child: Pid) -> Event {
    Event::Fork {
        ts,
        parent_tgid: parent,
        child_pid: child,
        child_tgid: child,
    }
}

fn exec_details(l: &Line<'_>, argv: &mut ArgvBuilder, paths: &mut Paths) -> Res<ExecDetails> {
    Ok(ExecDetails {
        argv: l.argv(argv)?,
        exe: opt_cow(l.get(K::Exe), "exe")?.map(|p| paths.share(&p)),
        cwd: opt_cow(l.get(K::Cwd), "cwd")?.map(|p| paths.share(&p)),
        uid: l.int(K::Uid, "uid")?,
        comm: opt_string(l.get(K::Comm), "comm")?,
    })
}

fn summary(l: &Line<'_>) -> Res<Summary> {
    let n = |v: Option<Val<'_>>, key: &str| -> Res<u64> { Ok(opt_int(v, key)?.unwrap_or(0)) };
    let status = match (l.int::<i32>(K::Code, "code")?, l.int::<i32>(K::Signal, "signal")?) {
        (Some(c), _) => Some(ExitStatus::Code(c)),
        (None, Some(signal)) => Some(ExitStatus::Signal { signal, core: false }),
        (None, None) => None,
    };
    Ok(Summary {
        ts: need(l.secs(K::Ts, "ts")?, "ts")?,
        status,
        stats: TrackerStats {
            processes: n(l.get(K::Processes), "processes")?,
            execs: n(l.get(K::Execs), "execs")?,
            execs_with_argv: n(l.get(K::ExecsWithArgv), "execs_with_argv")?,
            exits: n(l.get(K::Exits), "exits")?,
            lost: n(l.get(K::Lost), "lost")?,
            exits_inferred: n(l.get(K::ExitsLost), "exits_lost")?,
            recovered: n(l.get(K::Recovered), "recovered")?,
            notes: n(l.get(K::Notes), "notes")?,
            notes_unmatched: n(l.get(K::NotesUnmatched), "notes_unmatched")?,
            usage: n(l.get(K::Usage), "usage")?,
            ..Default::default()
        },
        capture: CaptureSummary {
            rejected: n(l.get(K::Rejected), "rejected")?,
            overflows: n(l.get(K::Overflows), "overflows")?,
            socket_drops: n(l.get(K::SocketDrops), "socket_drops")?,
            events: n(l.get(K::KernelEvents), "kernel_events")?,
            receive_buffer: 0,
            usage_lost: n(l.get(K::UsageLost), "usage_lost")?,
            usage_incomplete: n(l.get(K::UsageIncomplete), "usage_incomplete")?,
        },
        background: n(l.get(K::Background), "background")?,
        root: l.int(K::Pid, "pid")?,
        tracer_cpu_ns: l.secs(K::TracerCpu, "tracer_cpu")?,
        backend: opt_string(l.get(K::Backend), "backend")?,
        argv_reader: opt_string(l.get(K::ArgvReader), "argv_reader")?,
        filtered: l.int(K::Filtered, "filtered")?,
    })
}

/// The header of a `start` line; `base` gives what the file does not record (proctrace's pid,
/// argv, host).
fn header(l: &Line<'_>, mut base: Header) -> Res<Header> {
    if opt_cow(l.get(K::Tool), "tool")?.as_deref() != Some("proctrace") {
        return Err("a \"start\" line not written by proctrace (\"tool\")".into());
    }
    base.ts = need(l.secs(K::Ts, "ts")?, "ts")?;
    base.real_minus_mono = match l.get(K::WallOffset) {
        None | Some(Val::Null) => 0,
        Some(Val::Num(v)) => parse_signed_seconds(v.as_bytes())
            .ok_or_else(|| format!("\"wall_offset\" is not a decimal number of seconds: {v}"))?,
        Some(_) => return Err("\"wall_offset\" is not a number".into()),
    };
    base.mode = match need(opt_cow(l.get(K::Mode), "mode")?, "mode")?.as_ref() {
        "run" => Mode::Run {
            argv: need(opt_strings(l.get(K::Argv), "argv", &mut Vec::new())?, "argv")?,
        },
        "watch" => Mode::Watch {
            root: l.int(K::Root, "root")?,
        },
        "replay" => Mode::Replay {
            path: need(opt_string(l.get(K::Capture), "capture")?, "capture")?,
        },
        "analyze" => Mode::Analyze {
            inputs: need(
                opt_strings(l.get(K::Inputs), "inputs", &mut Vec::new())?,
                "inputs",
            )?,
        },
        m => return Err(format!("unknown \"mode\" '{m}'")),
    };
    base.backend = opt_string(l.get(K::Backend), "backend")?;
    if let Some(v) = opt_string(l.get(K::Version), "version")? {
        base.tool.version = v;
    }
    Ok(base)
}

/// Whether `line` is a `start` line proctrace wrote, laid out in any way JSON allows (spaces,
/// keys in any order or escaped): for telling the format of a file a JSON tool rewrote.
pub fn is_start_line(line: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(line) else {
        return false;
    };
    let mut t = Table::default();
    if t.scan(s).is_err() {
        return false;
    }
    let l = Line { s, t: &t };
    let is = |k: K, v: &str| opt_cow(l.get(k), k.name()).is_ok_and(|x| x.as_deref() == Some(v));
    is(K::Event, EventName::Start.name()) && is(K::Tool, "proctrace")
}

/// What one line held. Boxed: this travels up from every line, and a move of the enum copies
/// its largest variant (with a `Header` and a `Summary` inline, that copy was 2% of `analyze`).
enum Parsed {
    Header(Box<Header>),
    Events,
    Summary(Box<Summary>),
}

/// Scans and decodes one line (without its newline): its events go to `out` (nothing on an
/// error). `first`: a `start` line is the header.
fn parse_line(
    line: &[u8],
    first: bool,
    base: &Header,
    table: &mut Table,
    dec: &mut Decoder,
    out: &mut Vec<Event>,
) -> Res<Parsed> {
    // Written by proctrace, a line is UTF-8; anything else is read lossily rather than refused.
    let text = match std::str::from_utf8(line) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(line),
    };
    if !table.fill_laid_out(&text) {
        table.scan(&text)?;
    }
    let l = Line { s: &text, t: table };
    if first && opt_cow(l.get(K::Event), "event").is_ok_and(|e| e.as_deref() == Some(EventName::Start.name()))
    {
        return header(&l, base.clone()).map(|h| Parsed::Header(Box::new(h)));
    }
    let n = out.len();
    match dec.decode(l, out) {
        Ok(Some(s)) => Ok(Parsed::Summary(Box::new(s))),
        Ok(None) => Ok(Parsed::Events),
        Err(e) => {
            out.truncate(n);
            Err(e)
        }
    }
}

/// proctrace JSON Lines being read.
pub struct JsonlInput<R> {
    path: PathBuf,
    /// The lines, bounded and in time order ([`Lines`]).
    lines: Lines<R>,
    header: Header,
    base: Header,
    dec: Decoder,
    table: Box<Table>,
    /// Events of the line being fed (reused).
    events: Vec<Event>,
    summary: Option<Summary>,
    stats: InputStats,
    lenient: bool,
}

impl JsonlInput<super::source::LineReader<std::fs::File>> {
    /// Opens a JSON Lines file (`-`: stdin), once; refused if it never ends or is empty.
    pub fn open(path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let (name, reader) = super::open_one(path, super::Format::Jsonl, opts)?;
        JsonlInput::new(reader, &name, opts)
    }
}

impl<R: BufRead> JsonlInput<R> {
    /// Reads proctrace JSON Lines from `input`; `path` names it in errors. Reads up to the
    /// `start` line, or the first line with events in a file without one (its header is then
    /// a replay's, starting at that line's time). Any bytes: an error or events, never a panic.
    pub fn new(input: R, path: &Path, opts: &InputOptions) -> Result<Self, InputError> {
        let base = opts.fallback_header(&[path.to_path_buf()], 0, 0);
        let mut me = JsonlInput {
            path: path.to_path_buf(),
            lines: Lines::new(input, path, opts.max_line, opts.lenient, jsonl_key, Order::ByTime),
            header: base.clone(),
            base,
            dec: Decoder::default(),
            table: Box::default(),
            events: Vec::with_capacity(4),
            summary: None,
            stats: InputStats {
                files: 1,
                ..Default::default()
            },
            lenient: opts.lenient,
        };
        while let Some(p) = me.next_line(true)? {
            match p {
                Parsed::Header(h) => {
                    me.dec.run = matches!(h.mode, Mode::Run { .. });
                    me.header = *h;
                    break;
                }
                Parsed::Summary(s) => me.summary = Some(*s),
                Parsed::Events => {
                    if let Some(ts) = me.events.iter().find_map(|e| e.ts()) {
                        me.header.ts = ts;
                    }
                    break;
                }
            }
        }
        Ok(me)
    }

    /// The next good line (its events in `self.events`); `None` at the end or at a truncated
    /// last line. `first`: a `start` line is the header.
    fn next_line(&mut self, first: bool) -> Result<Option<Parsed>, InputError> {
        // Lines are parsed where they lie in the reader's buffer (see [`Lines`]).
        while let Some(l) = self.lines.next_line() {
            let parsed = parse_line(
                l.text.trim_ascii(),
                first,
                &self.base,
                &mut self.table,
                &mut self.dec,
                &mut self.events,
            );
            match parsed {
                Ok(p) => return Ok(Some(p)),
                Err(_) if !l.complete => {
                    self.stats.truncated += 1;
                    return Ok(None);
                }
                Err(_) if self.lenient => self.stats.skipped_lines += 1,
                Err(msg) => {
                    return Err(InputError::Line {
                        path: self.path.clone(),
                        line: l.no,
                        msg: format!("not a proctrace JSON Lines line: {msg}"),
                    });
                }
            }
        }
        match self.lines.take_error() {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

impl<R: BufRead> Input for JsonlInput<R> {
    fn header(&self) -> &Header {
        &self.header
    }

    fn feed_all(&mut self, feed: &mut dyn FnMut(Event)) -> Result<(), InputError> {
        loop {
            for e in self.events.drain(..) {
                feed(e);
            }
            match self.next_line(false) {
                Ok(Some(Parsed::Summary(s))) => self.summary = Some(*s),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    self.dec.flush(&mut self.events);
                    for e in self.events.drain(..) {
                        feed(e);
                    }
                    return Err(e);
                }
            }
        }
        self.dec.flush(&mut self.events);
        for e in self.events.drain(..) {
            feed(e);
        }
        Ok(())
    }

    fn recorded_summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    fn stats(&self) -> InputStats {
        self.stats.with_lines(self.lines.counts())
    }
}

#[cfg(test)]
#[path = "jsonl_any_json_tests.rs"]
mod any_json_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(
        bytes: &[u8],
        lenient: bool,
    ) -> Result<(Vec<Event>, InputStats, Option<Summary>), InputError> {
        let opts = InputOptions {
            lenient,
            tool: None,
            ..Default::default()
        };
        let mut input = JsonlInput::new(bytes, Path::new("mem.jsonl"), &opts)?;
        let mut events = Vec::new();
        input.feed_all(&mut |e| events.push(e))?;
        Ok((events, input.stats(), input.recorded_summary().cloned()))
    }

    #[test]
    fn seconds_are_exact() {
        assert_eq!(parse_seconds(b"12.000000345"), Some(12_000_000_345));
        assert_eq!(parse_seconds(b"8802.957572757"), Some(8_802_957_572_757));
        assert_eq!(parse_seconds(b"0.5"), Some(500_000_000));
        assert_eq!(parse_seconds(b"7"), Some(7_000_000_000));
        for bad in [
            &b""[..],
            b".5",
            b"1.",
            b"1.0000000001",
            b"1e3",
            b"-1.0",
            b"1.2.3",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_seconds(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_signed_seconds(b"-1.500000000"), Some(-1_500_000_000));
    }

    #[test]
    fn strings_escapes_and_bad_json() {
        let line = br#"{"event":"start","ts":1.000000000,"tool":"proctrace","version":"0.1.0","wall_offset":-2.5,"mode":"run","argv":["sh","-c","echo \"\u00e9\ud83d\ude00\\\n\"","\ud800x"]}"#;
        let mut text = line.to_vec();
        text.extend_from_slice(
            b"\n{\"event\":\"fork\",\"ts\":1.5,\"pid\":5,\"ppid\":1,\"x\":{\"a\":[1,{\"b\":null}]}}\n",
        );
        let opts = InputOptions::default();
        let input = JsonlInput::new(&text[..], Path::new("m"), &opts).unwrap();
        let h = input.header();
        assert_eq!(h.real_minus_mono, -2_500_000_000);
        assert_eq!(
            h.mode,
            Mode::Run {
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "echo \"é😀\\\n\"".into(),
                    "\u{fffd}x".into()
                ]
            }
        );
        let (ev, _, _) = read_all(&text, false).unwrap();
        assert_eq!(ev, vec![Event::Root { tgid: 5 }, fork(1_500_000_000, 1, 5)]);
        for bad in [
            &br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1"#[..],
            br#"{"event":"fork","ts":1.5,"pid":5,"pid":6,"ppid":1}"#,
            br#"{"event":"fork","ts":01.5,"pid":5,"ppid":1}"#,
            br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1} x"#,
            br#"{"event":"fork","ts":1.5,"pid":"5","ppid":1}"#,
            br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1,"comm":"a	b"}"#,
            br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1,"comm":"\q"}"#,
            br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1,"comm":tru}"#,
            br#"{"event":"nope","ts":1.5}"#,
            br#"{"event":"exit","ts":1.5,"pid":5,"ppid":1}"#,
            br#"{"event":"exit","ts":1.5,"pid":5,"ppid":1,"code":256}"#,
            br#"{"event":"fork","ts":1.5,"pid":99999999999,"ppid":1}"#,
        ] {
            let mut t =
                b"{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"mode\":\"watch\"}\n".to_vec();
            t.extend_from_slice(bad);
            t.push(b'\n');
            match read_all(&t, false) {
                Err(InputError::Line { line: 2, .. }) => {}
                other => panic!("{}: {other:?}", String::from_utf8_lossy(bad)),
            }
            let (_, st, _) = read_all(&t, true).unwrap();
            assert_eq!(st.skipped_lines, 1, "{}", String::from_utf8_lossy(bad));
        }
    }

    /// Exit statuses, exits whose status was lost, quiet background marks, core dumps and the
    /// summary come back as the tracker's own events.
    #[test]
    fn an_exit_line_carries_the_process_cost() {
        let text = "{\"event\":\"exit\",\"ts\":2.0,\"pid\":5,\"ppid\":1,\"code\":0,\"cpu_user_s\":1.250000000,\
            \"cpu_sys_s\":0.000001000,\"max_rss_kib\":2048,\"read_chars\":10,\"write_chars\":20,\"read_bytes\":4096,\
            \"write_bytes\":8192,\"cancelled_write_bytes\":0,\"ctx_switches\":{\"voluntary\":3,\"involuntary\":4},\
            \"cpu_delay_s\":0.5}\n\
            {\"event\":\"exit\",\"ts\":2.0,\"pid\":6,\"ppid\":1,\"code\":0}\n";
        let (ev, _, _) = read_all(text.as_bytes(), false).unwrap();
        let usage = Usage {
            cpu_user_ns: 1_250_000_000,
            cpu_sys_ns: 1_000,
            max_rss_kib: 2048,
            read_chars: 10,
            write_chars: 20,
            read_bytes: 4096,
            write_bytes: 8192,
            cancelled_write_bytes: 0,
            vol_ctx_switches: 3,
            invol_ctx_switches: 4,
            cpu_delay_ns: Some(500_000_000),
            io_delay_ns: None,
        };
        assert_eq!(
            ev[0],
            Event::Usage {
                tgid: 5,
                usage: Box::new(usage)
            }
        );
        assert!(matches!(ev[1], Event::Exit { pid: 5, .. }));
        assert!(
            matches!(ev[2], Event::Exit { pid: 6, .. }),
            "no cost, no usage event: {ev:?}"
        );
        for bad in [
            "\"ctx_switches\":[1,2]",
            "\"ctx_switches\":{\"voluntary\":-1}",
            "\"max_rss_kib\":\"x\"",
            "\"cpu_delay_s\":true",
        ] {
            let line =
                format!("{{\"event\":\"exit\",\"ts\":2.0,\"pid\":5,\"code\":0,\"cpu_user_s\":1.0,{bad}}}\n");
            assert!(read_all(line.as_bytes(), false).is_err(), "{bad}");
        }
    }

    #[test]
    fn exits_and_the_end_line() {
        let text = "{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"mode\":\"watch\"}\n\
            {\"event\":\"exit\",\"ts\":2.0,\"pid\":5,\"ppid\":1,\"signal\":11,\"core\":true}\n\
            {\"event\":\"exit\",\"ts\":2.0,\"pid\":6,\"ppid\":1,\"signal\":6,\"core\":false}\n\
            {\"event\":\"exit\",\"ts\":3.0,\"pid\":7,\"ppid\":1,\"code\":null,\"exit_lost\":true}\n\
            {\"event\":\"exit\",\"ts\":4.0,\"pid\":8,\"ppid\":1,\"code\":2,\"background\":true}\n\
            {\"event\":\"end\",\"ts\":5.0,\"pid\":8,\"signal\":9,\"processes\":4,\"background\":2,\"tracer_cpu\":0.25}\n";
        let (ev, st, sum) = read_all(text.as_bytes(), false).unwrap();
        let s = 1_000_000_000;
        assert_eq!(
            ev,
            vec![
                Event::Exit {
                    ts: 2 * s,
                    pid: 5,
                    tgid: 5,
                    status: 11 | 0x80,
                    parent_tgid: 1
                },
                Event::Coredump { ts: 2 * s, tgid: 6 },
                Event::Exit {
                    ts: 2 * s,
                    pid: 6,
                    tgid: 6,
                    status: 6,
                    parent_tgid: 1
                },
                Event::Gone { ts: 3 * s, tgid: 7 },
                Event::Background {
                    ts: 4 * s,
                    tgid: 8,
                    state: BackgroundState::Ready,
                    report: false
                },
                Event::Exit {
                    ts: 4 * s,
                    pid: 8,
                    tgid: 8,
                    status: 2 << 8,
                    parent_tgid: 1
                },
            ]
        );
        assert_eq!((st.lines, st.skipped_lines, st.truncated), (6, 0, 0));
        let sum = sum.unwrap();
        assert_eq!(
            sum.status,
            Some(ExitStatus::Signal {
                signal: 9,
                core: false
            })
        );
        assert_eq!((sum.root, sum.background, sum.stats.processes), (Some(8), 2, 4));
        assert_eq!(sum.tracer_cpu_ns, Some(s / 4));
    }

    /// An exec's argv is taken while the line is scanned: every shape of array a writer may
    /// produce reads back, and an array that is not all strings is an error naming its line.
    #[test]
    fn argv_words_taken_while_scanning() {
        let start = r#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"watch"}"#;
        let argv_of = |arr: &str| {
            let text =
                format!("{start}\n{{\"event\":\"exec\",\"ts\":2.0,\"argv\":{arr},\"pid\":5,\"ppid\":1}}\n");
            let (ev, ..) = read_all(text.as_bytes(), false)?;
            Ok::<_, InputError>(match ev.as_slice() {
                [_, Event::ExecDetails { details, .. }] => details.argv.clone(),
                other => panic!("{other:?}"),
            })
        };
        let v = |w: &[&str]| Some(Argv::from(w));
        assert_eq!(argv_of(r#"["sh","-c","x"]"#).unwrap(), v(&["sh", "-c", "x"]));
        assert_eq!(argv_of(r#"[ "a" , "b" ]"#).unwrap(), v(&["a", "b"]));
        assert_eq!(argv_of("[]").unwrap(), v(&[]));
        assert_eq!(argv_of("[ ]").unwrap(), v(&[]));
        assert_eq!(argv_of("null").unwrap(), None);
        assert_eq!(
            argv_of(r#"["q\"uote","tab\t","\u00e9\ud83d\ude00",""]"#).unwrap(),
            v(&["q\"uote", "tab\t", "é😀", ""])
        );
        for bad in [
            r#"["a",1]"#,
            r#"[["a"]]"#,
            r#"["a",null]"#,
            r#""a""#,
            r#"{"a":"b"}"#,
        ] {
            let e = argv_of(bad).unwrap_err().to_string();
            assert!(e.contains("mem.jsonl:2:") && e.contains("argv"), "{bad}: {e}");
        }
        for broken in [r#"["a""#, r#"["a",]"#, r#"["a" "b"]"#, r#"[,"a"]"#] {
            let e = argv_of(broken).unwrap_err().to_string();
            assert!(e.contains("mem.jsonl:2:"), "{broken}: {e}");
        }
    }

    /// Repeated `exe`/`cwd` paths come out as one shared copy; every path, shared or not (more
    /// distinct ones than are kept, escapes), reads back as written.
    #[test]
    fn repeated_paths_are_shared_and_exact() {
        let mut text = String::from(r#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"watch"}"#);
        text.push('\n');
        let exes: Vec<String> = (0..40).map(|i| format!("/usr/bin/tool{}", i % 20)).collect();
        for (i, e) in exes.iter().enumerate() {
            text.push_str(&format!(
                "{{\"event\":\"exec\",\"ts\":2.0,\"pid\":{},\"ppid\":1,\"argv\":[\"x\"],\"exe\":\"{e}\",\"cwd\":\"/src/\\u00e9\"}}\n",
                i + 2
            ));
        }
        let (ev, ..) = read_all(text.as_bytes(), false).unwrap();
        let d: Vec<&ExecDetails> = ev
            .iter()
            .filter_map(|e| match e {
                Event::ExecDetails { details, .. } => Some(details),
                _ => None,
            })
            .collect();
        assert_eq!(d.len(), exes.len());
        for (d, e) in d.iter().zip(&exes) {
            assert_eq!(d.exe.as_deref(), Some(e.as_str()));
            assert_eq!(d.cwd.as_deref(), Some("/src/é"));
        }
        let (a, b) = (d[0].cwd.as_ref().unwrap(), d[39].cwd.as_ref().unwrap());
        assert!(Arc::ptr_eq(a, b), "one working directory, one copy");
    }

    /// Lines longer than the reader's buffer are read whole; a cut last line is counted.
    #[test]
    fn long_lines_and_a_cut_last_line() {
        let argv: Vec<String> = (0..5000).map(|i| format!("arg{i}")).collect();
        let words = argv
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(",");
        let text = format!(
            "{{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"mode\":\"watch\"}}\n\
             {{\"event\":\"exec\",\"ts\":2.0,\"pid\":5,\"ppid\":1,\"argv\":[{words}]}}\n\
             {{\"event\":\"exit\",\"ts\":3.0,\"pid\":5,\"ppid\":1,\"co"
        );
        let opts = InputOptions::default();
        let r = std::io::BufReader::with_capacity(64, text.as_bytes());
        let mut input = JsonlInput::new(r, Path::new("m"), &opts).unwrap();
        let mut got = Vec::new();
        input.feed_all(&mut |e| got.push(e)).unwrap();
        assert_eq!(got.len(), 2);
        assert!(
            matches!(&got[1], Event::ExecDetails { details, .. } if details.argv.as_ref().is_some_and(|a| *a == argv))
        );
        assert_eq!((input.stats().lines, input.stats().truncated), (3, 1));
        assert_eq!(input.stats().bytes, text.len() as u64);
    }

    /// The counts read in place are what the JSON reading gives; anything else goes to it.
    #[test]
    fn context_switches_read_in_place_or_as_json() {
        assert_eq!(ctx_switches(r#"{"voluntary":12,"involuntary":0}"#), Ok((12, 0)));
        assert_eq!(ctx_switches(r#"{"involuntary":3,"voluntary":4}"#), Ok((4, 3)));
        assert_eq!(
            ctx_switches(r#"{"voluntary": 5, "involuntary": null}"#),
            Ok((5, 0))
        );
        assert_eq!(
            ctx_switches(r#"{"voluntary":18446744073709551615,"involuntary":1}"#),
            Ok((u64::MAX, 1))
        );
        assert!(ctx_switches(r#"{"voluntary":18446744073709551616,"involuntary":1}"#).is_err());
        assert!(ctx_switches(r#"{"voluntary":01,"involuntary":1}"#).is_err());
        assert!(ctx_switches(r#"{"voluntary":-1,"involuntary":1}"#).is_err());
    }

    /// What [`Table::fill_laid_out`] made of `line` is what [`Table::scan`] makes of it, when it
    /// took the line at all; returns whether it did.
    pub(super) fn same_table(line: &str) -> bool {
        let (mut fast, mut full) = (Table::default(), Table::default());
        if !fast.fill_laid_out(line) {
            return false;
        }
        assert!(full.scan(line).is_ok(), "laid out but not JSON: {line}");
        assert_eq!(fast.set, full.set, "{line}");
        for k in 0..NKEYS {
            if full.set & (1u128 << k) != 0 {
                // A number parsed in place is the text `scan` saw, with the value the
                // decoder's own reading of that text gives.
                let v = match fast.v[k] {
                    Slot::Parsed(a, b, v) => {
                        let text = line.as_bytes().get(a..b).unwrap();
                        let as_int = std::str::from_utf8(text).unwrap().parse::<u64>().ok();
                        assert!(
                            as_int == Some(v) || parse_seconds(text) == Some(v),
                            "key {k} of {line}"
                        );
                        Slot::Num(a, b)
                    }
                    v => v,
                };
                assert_eq!(v, full.v[k], "key {k} of {line}");
            }
        }
        // And the decoder, reading numbers through the typed getters, gives the same events
        // (or the same error) from both tables.
        let decode = |t: &Table| {
            let mut out = Vec::new();
            let r = Decoder::default().decode(Line { s: line, t }, &mut out);
            format!("{r:?} {out:?}")
        };
        assert_eq!(decode(&fast), decode(&full), "{line}");
        assert_eq!(fast.words_ok, full.words_ok, "{line}");
        if full.words_ok {
            assert_eq!(fast.words, full.words, "{line}");
        }
        true
    }

    /// Every line of the golden JSON Lines files that is laid out as proctrace writes it fills
    /// the table as the general scanner does — and most of them are; so do hand-made lines at
    /// the edges (escapes, `null`s, usage fields), while lines laid out otherwise are left to
    /// the scanner.
    #[test]
    fn a_laid_out_line_fills_the_table_as_scan_does() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");
        let (mut lines, mut laid_out) = (0, 0);
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "jsonl") {
                for line in std::fs::read_to_string(&path).unwrap().lines() {
                    lines += 1;
                    laid_out += usize::from(same_table(line));
                }
            }
        }
        assert!(lines > 100 && laid_out * 2 > lines, "{laid_out} of {lines}");
        for line in [
            r#"{"event":"fork","ts":0.000000000,"pid":1,"ppid":0}"#,
            r#"{"event":"fork","ts":null,"pid":1,"ppid":0,"pre_existing":true,"comm":"a\"b"}"#,
            r#"{"event":"exec","ts":1.5,"pid":2,"ppid":1,"argv":[],"exe":null,"cwd":"/","uid":0,"comm":"x"}"#,
            r#"{"event":"exec","ts":1.5,"pid":2,"ppid":1,"argv":["sh","-c","echo \"hi\" \u00e9"],"comm":"sh"}"#,
            r#"{"event":"exec","ts":1.5,"pid":2,"ppid":1,"argv":null}"#,
            r#"{"event":"exit","ts":2.25,"pid":2,"ppid":1,"signal":9,"core":false,"duration":0.75,"background":true}"#,
            r#"{"event":"exit","ts":2.25,"pid":2,"ppid":1,"code":null,"exit_lost":true}"#,
            r#"{"event":"exit","ts":2.25,"pid":2,"ppid":1,"code":0,"duration":1.000000000,"cpu_user_s":0.5,"cpu_sys_s":0.25,"max_rss_kib":10,"read_chars":1,"write_chars":2,"read_bytes":3,"write_bytes":4,"cancelled_write_bytes":5,"ctx_switches":{"voluntary":1,"involuntary":2},"cpu_delay_s":0.1,"io_delay_s":0.2}"#,
            r#"{"event":"exit","ts":-1,"pid":2,"ppid":1,"code":1e3}"#,
            r#"{"event":"exit","ts":2.25,"pid":99999999999,"ppid":1,"code":1234567890123456789012}"#,
            r#"{"event":"exit","ts":1.0000000001,"pid":2,"ppid":1,"code":256,"cpu_user_s":99999999999.5}"#,
            r#"{"event":"fork","ts":18446744073.709551616,"pid":0,"ppid":-1}"#,
        ] {
            assert!(same_table(line), "{line}");
        }
        // Whitespace, another order, an unknown or repeated key, a control character, a bad
        // number, an unclosed line: not laid out (the scanner reads or refuses each).
        for line in [
            r#"{"event":"fork", "ts":1.0,"pid":1,"ppid":0}"#,
            r#"{"event":"fork","pid":1,"ts":1.0,"ppid":0}"#,
            r#"{"event":"fork","ts":1.0,"pid":1,"ppid":0,"new_key":1}"#,
            r#"{"event":"fork","ts":1.0,"pid":1,"pid":1,"ppid":0}"#,
            "{\"event\":\"exec\",\"ts\":1.0,\"pid\":1,\"ppid\":0,\"argv\":[\"a\tb\"]}",
            r#"{"event":"exit","ts":01.0,"pid":1,"ppid":0,"code":0}"#,
            r#"{"event":"exit","ts":1.,"pid":1,"ppid":0,"code":0}"#,
            r#"{"event":"exit","ts":1.0,"pid":1,"ppid":0,"code":0"#,
            r#"{"event":"exit","ts":1.0,"pid":1,"ppid":0,"code":0}}"#,
            r#"{"event":"exec","ts":1.0,"pid":1,"ppid":0,"argv":["a",1]}"#,
        ] {
            assert!(!same_table(line), "{line}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Any bytes: events or an error, never a panic; lenient reading never fails.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = read_all(&bytes, false);
            prop_assert!(read_all(&bytes, true).is_ok());
        }

        /// A laid-out line with a byte changed, inserted or cut: still either left to the
        /// scanner or read exactly as the scanner reads it.
        #[test]
        fn a_changed_laid_out_line_is_read_as_scan_reads_it(which in 0usize..4, at in 0usize..400, byte in any::<u8>(), how in 0u8..3) {
            let lines = [
                r#"{"event":"fork","ts":0.000010000,"pid":1001,"ppid":1000,"comm":"make"}"#,
                r#"{"event":"exec","ts":0.163848300,"pid":1338,"ppid":1337,"argv":["cc1","-quiet","a\"b","-o","/tmp/x.s"],"exe":"/usr/lib/cc1","cwd":"/src","uid":1000,"comm":"cc1"}"#,
                r#"{"event":"exit","ts":0.163888200,"pid":1335,"ppid":1334,"signal":11,"core":true,"duration":0.000790000,"cpu_user_s":0.001,"cpu_sys_s":0.000,"max_rss_kib":1200,"ctx_switches":{"voluntary":1,"involuntary":0}}"#,
                // As `jq -c .` prints it: numbers in scientific form, integers as floats.
                r#"{"event":"exit","ts":8802.9575727570001,"pid":1335,"ppid":1334,"code":0,"duration":7.9e-04,"cpu_user_s":1e-3,"max_rss_kib":1.2E+3,"ctx_switches":{"voluntary":1.0,"involuntary":0e0}}"#,
            ];
            let mut b = lines[which].as_bytes().to_vec();
            let at = at % b.len();
            match how {
                0 => b[at] = byte,
                1 => b.insert(at, byte),
                _ => b.truncate(at),
            }
            let text = String::from_utf8_lossy(&b);
            let _ = same_table(&text);
        }

        /// Valid lines with their bytes shuffled about: the same.
        #[test]
        fn mangled_lines_never_panic(cut in 0usize..300, byte in any::<u8>(), at in 0usize..300) {
            let mut t = br#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"run","argv":["a"]}
{"event":"fork","ts":1.5,"pid":5,"ppid":1,"pre_existing":true}
{"event":"exec","ts":0.000000000,"pid":5,"ppid":1,"argv":["x\"y"],"comm":"x"}
{"event":"data","ts":1.6,"pid":5,"ppid":1,"thread":"main","category":"c","key":"k","nesting":1,"value":{"a":[1]}}
{"event":"region","ts":1.6,"pid":5,"ppid":1,"duration":0.1,"thread":"main","category":"c","label":"l","nesting":1}
{"event":"end","ts":2.0,"processes":1}
"#.to_vec();
            let at = at % t.len();
            t[at] = byte;
            t.truncate(cut.max(1) * t.len() / 300);
            let _ = read_all(&t, false);
            prop_assert!(read_all(&t, true).is_ok());
        }
    }
}
