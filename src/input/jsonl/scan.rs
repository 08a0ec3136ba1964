//! The JSON scanner of one line: the grammar checked, strings borrowed where they hold no escape,
//! plain numbers and strings found in place (the fast path's primitives).

use super::*;

// The line scanner below is hand-written for the one flat shape these lines have, instead of
// serde_json into a struct of optional borrowed fields (the first version of this reader).
// Measured with `benches/ingest.rs` (reader alone, bytes to events, CPU time) on the 29.6 MB `-o`
// file of a 100,001-process run: serde_json 90 MB/s; this scanner, which checks the same JSON
// grammar, borrows every string without escapes, keeps a reused key table instead of a struct
// of 59 options per line and decodes a field only when the line's kind needs it, about 200 MB/s.
// Figures for big files: BENCHMARKS.md, `bench/run --only ingest`.

/// A value on a line, not yet decoded.
#[derive(Debug, Clone, Copy)]
pub(super) enum Val<'a> {
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
pub(super) const MAX_DEPTH: u32 = 64;

/// A JSON scanner over one line.
pub(super) struct Scan<'a> {
    pub(super) s: &'a str,
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

pub(super) type Res<T> = Result<T, String>;

impl<'a> Scan<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Scan {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    /// Skips whitespace. Lines as proctrace writes them have none: one comparison says so
    /// (the four-way match alone was a tenth of the line scanner's time in `perf`).
    #[inline(always)]
    pub(super) fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if c > b' ' || !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
                return;
            }
            self.i += 1;
        }
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    pub(super) fn eat(&mut self, c: u8) -> Res<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    pub(super) fn slice(&self, from: usize, to: usize) -> Res<&'a str> {
        self.s
            .get(from..to)
            .ok_or_else(|| format!("bad text at byte {from}"))
    }

    /// A string (at its opening quote): its contents and whether it holds escapes.
    pub(super) fn string(&mut self) -> Res<(&'a str, bool)> {
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

    pub(super) fn digits(&mut self) -> usize {
        let s = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - s
    }

    pub(super) fn number(&mut self) -> Res<&'a str> {
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

    pub(super) fn word(&mut self, w: &str, v: Val<'a>) -> Res<Val<'a>> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(format!("bad literal at byte {}", self.i))
        }
    }

    /// An array (at its `[`) of strings only: their places go to `out` and it is `true`; at
    /// anything but a string it stops, `false` (the caller scans the array again as a value).
    pub(super) fn words(&mut self, out: &mut Vec<(usize, usize, bool)>) -> Res<bool> {
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

    pub(super) fn value(&mut self, depth: u32) -> Res<Val<'a>> {
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
pub(super) fn special(b: &[u8], mut i: usize) -> usize {
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
pub(super) fn lead_at(b: &[u8], i: usize, lead: &[u8]) -> bool {
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
pub(super) fn w8(s: &[u8], o: usize) -> Option<u64> {
    let c: [u8; 8] = s.get(o..o + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(c))
}

/// The 4 bytes of `s` at `o`, as a number (`None` past the end).
#[inline(always)]
pub(super) fn w4(s: &[u8], o: usize) -> Option<u32> {
    let c: [u8; 4] = s.get(o..o + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(c))
}

/// The end of a non-negative number at `i` in the form proctrace writes (`0`, or digits not
/// starting with 0, then maybe `.` and digits), if it is one and ends there; anything else
/// (`-`, an exponent, a bad number) is `None`, for [`Scan::number`] to judge.
#[inline]
pub(super) fn plain_number(b: &[u8], i: usize) -> Option<usize> {
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
pub(super) fn parsed(n: &[u8], ty: Type, from: usize, to: usize) -> Slot {
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
pub(super) fn plain_string(b: &[u8], i: usize) -> Option<usize> {
    let end = special(b, i + 1);
    (b.get(end) == Some(&b'"')).then_some(end)
}

/// A string's value, escapes decoded (a lone surrogate becomes U+FFFD).
pub(super) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    unescape_into(s, &mut out);
    out
}

/// [`unescape`], appended to `out`.
pub(super) fn unescape_into(s: &str, out: &mut String) {
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
