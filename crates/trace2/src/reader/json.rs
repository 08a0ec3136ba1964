//! A small JSON parser over bytes, for event lines.
//!
//! git copies bytes ≥ 0x80 into strings unchanged, so lines may be invalid
//! UTF-8; strings are decoded as bytes and converted lossily at the end.
//! Numbers keep their text. Every value remembers its byte span so
//! `data_json.value` can be kept verbatim. Depth is bounded; nothing panics.

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true`/`false`
    Bool(bool),
    /// A number, as written.
    Number(String),
    /// A string (lossily decoded if not UTF-8).
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, keys in input order.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// The number as `i64`, if it is an integer.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.parse().ok().or_else(|| {
                let f: f64 = n.parse().ok()?;
                (f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64)
            }),
            _ => None,
        }
    }
    /// The number as `f64`; `None` for one out of `f64`'s range (`1e999`: as serde_json, a
    /// number JSON cannot hold; it would be written back as `inf`, which is not JSON).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.parse().ok().filter(|f: &f64| f.is_finite()),
            _ => None,
        }
    }
    /// The boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// A top-level object member: key, value and the value's raw bytes.
#[derive(Debug, Clone)]
pub struct Member {
    /// Key.
    pub key: String,
    /// Value.
    pub value: Value,
    /// The value's text as it appeared on the line.
    pub raw: Vec<u8>,
}

const MAX_DEPTH: usize = 128;

/// The first LF in `b`, sixteen bytes at a time (SWAR): line splitting.
pub(crate) fn find_lf(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const LF: u64 = LO * b'\n' as u64;
    // The lowest set bit marks the first LF exactly (borrows only reach bytes above a match).
    let lf = |w: u64| {
        let v = w ^ LF;
        v.wrapping_sub(LO) & !v & HI
    };
    let word = |c: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        u64::from_le_bytes(w)
    };
    let mut i = 0;
    while let Some(c) = b.get(i..i + 16) {
        let (m1, m2) = (lf(word(&c[..8])), lf(word(&c[8..])));
        if m1 != 0 {
            return Some(i + (m1.trailing_zeros() / 8) as usize);
        }
        if m2 != 0 {
            return Some(i + 8 + (m2.trailing_zeros() / 8) as usize);
        }
        i += 16;
    }
    b[i..].iter().position(|&c| c == b'\n').map(|p| i + p)
}

/// The first `x` or `y` in `b`, eight bytes at a time (SWAR). No dependency for this one search.
pub(crate) fn memchr2(x: u8, y: u8, b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let has = |w: u64, c: u8| {
        let v = w ^ (LO * c as u64);
        v.wrapping_sub(LO) & !v & HI
    };
    // Words from the first byte: a string's text is followed by the rest of its line, so even
    // a short one usually has eight bytes to look at (fewer instructions than a byte loop for
    // keys and times: measured with callgrind over git's streams).
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let w = u64::from_le_bytes(w);
        let m = has(w, x) | has(w, y);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| c == x || c == y).map(|p| i + p)
}

/// A number in strict JSON grammar (what git writes): no need to ask the float parser.
fn plain_number(t: &[u8]) -> bool {
    let mut i = usize::from(t.first() == Some(&b'-'));
    let d0 = i;
    while t.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if i == d0 {
        return false;
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        let f0 = i;
        while t.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == f0 {
            return false;
        }
    }
    i == t.len()
}

/// A number as git writes it (`-?[0-9]+(\.[0-9]+)?`, at most 15 digits in all), as `f64`:
/// the digits as an integer over a power of ten, both exact in `f64`, so the one division is
/// correctly rounded — the value `str::parse` gives (tested). `None` for anything else.
pub(crate) fn plain_f64(t: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (neg, d) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    let mut m: u64 = 0;
    let mut digits = 0usize;
    let mut frac = None;
    for (i, &c) in d.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
                if digits > 15 {
                    return None;
                }
            }
            b'.' if frac.is_none() && i > 0 && i + 1 < d.len() => frac = Some(d.len() - i - 1),
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    let v = m as f64 / POW10[frac.unwrap_or(0)];
    Some(if neg { -v } else { v })
}

/// An integer as git writes it (`-?[0-9]{1,18}`), as `i64`; `None` for anything else.
pub(crate) fn plain_i64(t: &[u8]) -> Option<i64> {
    let (neg, d) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    if d.is_empty() || d.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &c in d {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(if neg { -v } else { v })
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

/// Parses one line holding one JSON object. Trailing whitespace is allowed.
pub fn parse_object_line(line: &[u8]) -> Result<Vec<Member>, String> {
    let mut p = Parser { b: line, i: 0 };
    p.ws();
    if p.peek() != Some(b'{') {
        return Err(format!("expected '{{' at byte {}", p.i));
    }
    p.i += 1;
    let mut members = Vec::new();
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            p.ws();
            let key = p.string()?;
            p.ws();
            p.expect(b':')?;
            p.ws();
            let start = p.i;
            let value = p.value(1)?;
            let raw = p.b[start..p.i].to_vec();
            members.push(Member { key, value, raw });
            p.ws();
            match p.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                Some(c) => return Err(format!("unexpected byte 0x{c:02x} at {}", p.i - 1)),
                None => return Err("unterminated object".into()),
            }
        }
    }
    p.ws();
    if p.i != p.b.len() {
        return Err(format!("trailing bytes at {}", p.i));
    }
    Ok(members)
}

/// What a [`RawMember`]'s value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A string; `true` when it holds escapes.
    Str(bool),
    Number,
    Bool(bool),
    Null,
    Array,
    Object,
}

/// A top-level member as it lies on the line: nothing decoded, nothing copied. What
/// [`scan_object_line`] accepts is exactly what [`parse_object_line`] accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawMember<'a> {
    /// The key's text between its quotes.
    pub key: &'a [u8],
    /// The key holds escapes.
    pub key_esc: bool,
    /// The value's text (quotes included for a string).
    pub raw: &'a [u8],
    /// What the value is.
    pub kind: Kind,
}

impl RawMember<'_> {
    /// The key, decoded.
    pub fn key_string(&self) -> String {
        if self.key_esc {
            let mut q = Vec::with_capacity(self.key.len() + 2);
            q.push(b'"');
            q.extend_from_slice(self.key);
            q.push(b'"');
            Parser { b: &q, i: 0 }.string().unwrap_or_default()
        } else {
            lossy(self.key)
        }
    }

    /// The value, decoded.
    pub fn value(&self) -> Value {
        match self.kind {
            Kind::Str(_) => Value::String(self.string().unwrap_or_default()),
            Kind::Number => Value::Number(lossy(self.raw)),
            Kind::Bool(b) => Value::Bool(b),
            Kind::Null => Value::Null,
            Kind::Array | Kind::Object => Parser { b: self.raw, i: 0 }.value(1).unwrap_or(Value::Null),
        }
    }

    /// The string value, decoded (lossily if not UTF-8); `None` if it is not a string.
    pub fn string(&self) -> Option<String> {
        match self.kind {
            Kind::Str(false) => Some(lossy(self.raw.get(1..self.raw.len().saturating_sub(1))?)),
            Kind::Str(true) => Parser { b: self.raw, i: 0 }.string().ok(),
            _ => None,
        }
    }

    /// The number's text, if it is one.
    pub fn number(&self) -> Option<&str> {
        match self.kind {
            Kind::Number => std::str::from_utf8(self.raw).ok(),
            _ => None,
        }
    }
}

/// A string's text (quotes included) decoded; for a string [`scan_object_line`] accepted.
pub(crate) fn unescape(raw: &[u8]) -> Option<String> {
    Parser { b: raw, i: 0 }.string().ok()
}

/// Calls `f` with the text and kind of each item of the array `raw` (an array
/// [`scan_object_line`] accepted) until `f` returns false.
pub(crate) fn array_items<'a>(raw: &'a [u8], mut f: impl FnMut(&'a [u8], Kind) -> bool) {
    let mut p = Parser { b: raw, i: 0 };
    if p.next() != Some(b'[') {
        return;
    }
    p.ws();
    if p.peek() == Some(b']') {
        return;
    }
    loop {
        p.ws();
        let start = p.i;
        let Ok(kind) = p.skip_value(2) else { return };
        if !f(&raw[start..p.i], kind) {
            return;
        }
        p.ws();
        if p.next() != Some(b',') {
            return;
        }
    }
}

pub(crate) fn lossy(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// Where the scanners put the members they find, in line order: a `Vec` (tests), or the
/// reader's members with their keys looked up as they come.
pub(crate) trait PushMember<'a> {
    fn push_member(&mut self, m: RawMember<'a>);
    /// `m` is the `lead`-th of git's leading keys, `event`, `sid`, `thread`, `time`, `file`
    /// and `line` (its key checked already).
    fn push_lead(&mut self, m: RawMember<'a>, lead: usize) {
        let _ = lead;
        self.push_member(m);
    }
}

/// The keys git writes first on every line, in this order ([`scan_compact`] compares them
/// whole); the reader's own key table begins with the same six (tested).
#[cfg(test)]
pub(crate) const LEAD: [&str; 6] = ["event", "sid", "thread", "time", "file", "line"];

/// `b[at..]` begins with `key` (a fixed-size compare, not a call).
fn key_at<const N: usize>(b: &[u8], at: usize, key: &[u8; N]) -> bool {
    b.get(at..at + N).is_some_and(|k| k == key)
}

#[cfg(test)]
impl<'a> PushMember<'a> for Vec<RawMember<'a>> {
    fn push_member(&mut self, m: RawMember<'a>) {
        self.push(m);
    }
}

/// [`parse_object_line`] without decoding: the members are given to `out` as spans of `line`.
pub(crate) fn scan_object_line<'a>(line: &'a [u8], out: &mut impl PushMember<'a>) -> Result<(), String> {
    let mut p = Parser { b: line, i: 0 };
    p.ws();
    if p.peek() != Some(b'{') {
        return Err(format!("expected '{{' at byte {}", p.i));
    }
    p.i += 1;
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            p.ws();
            let ks = p.i;
            let key_esc = p.skip_string()?;
            let key = &line[ks + 1..p.i - 1];
            p.ws();
            p.expect(b':')?;
            p.ws();
            let start = p.i;
            let kind = p.skip_value(1)?;
            out.push_member(RawMember {
                key,
                key_esc,
                raw: &line[start..p.i],
                kind,
            });
            p.ws();
            match p.next() {
                Some(b',') => continue,
                Some(b'}') => break,
                Some(c) => return Err(format!("unexpected byte 0x{c:02x} at {}", p.i - 1)),
                None => return Err("unterminated object".into()),
            }
        }
    }
    p.ws();
    if p.i != p.b.len() {
        return Err(format!("trailing bytes at {}", p.i));
    }
    Ok(())
}

/// [`scan_object_line`] for a line laid out as git and this crate write them: no whitespace
/// and keys without escapes. `None` when the line is laid out otherwise, or is not valid: the
/// caller then clears `out` and runs [`scan_object_line`] (which also says what is wrong). For
/// a line it takes, it pushes exactly what `scan_object_line` does (tests below); it only spares
/// the whitespace checks and the general key scan between members.
pub(crate) fn scan_compact<'a>(line: &'a [u8], out: &mut impl PushMember<'a>) -> Option<()> {
    let b = line;
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut i = 1;
    let mut n = 0;
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let ks = i + 1;
        // Git's first six keys, always in this order: compared whole (fixed-size compares),
        // their fields known.
        let lead = match n {
            0 => key_at(b, ks, b"event\":").then_some((5, 0)),
            1 => key_at(b, ks, b"sid\":").then_some((3, 1)),
            2 => key_at(b, ks, b"thread\":").then_some((6, 2)),
            3 => key_at(b, ks, b"time\":").then_some((4, 3)),
            4 => key_at(b, ks, b"file\":").then_some((4, 4)),
            5 => key_at(b, ks, b"line\":").then_some((4, 5)),
            _ => None,
        };
        n += 1;
        let j = match lead {
            Some((len, _)) => ks + len,
            None => {
                // Any other key: short, so byte by byte; an escape goes to the general scanner.
                let mut j = ks;
                loop {
                    match *b.get(j)? {
                        b'"' => break,
                        b'\\' => return None,
                        _ => j += 1,
                    }
                }
                if b.get(j + 1) != Some(&b':') {
                    return None;
                }
                j
            }
        };
        let vs = j + 2;
        let (kind, ve) = match *b.get(vs)? {
            b'"' => {
                let rest = b.get(vs + 1..)?;
                let q = memchr2(b'"', b'\\', rest)?;
                if rest[q] == b'"' {
                    (Kind::Str(false), vs + 2 + q)
                } else {
                    let mut p = Parser { b, i: vs };
                    let esc = p.skip_string().ok()?;
                    (Kind::Str(esc), p.i)
                }
            }
            c => {
                // A plain number ending the member: what `skip_value` would take, without the
                // dispatch (it reads on over `+-.eE` and digits, none of which ends a member).
                let mut e = vs + usize::from(c == b'-');
                let d = e;
                while b.get(e).is_some_and(u8::is_ascii_digit) {
                    e += 1;
                }
                if e > d && b.get(e) == Some(&b'.') {
                    let f = e + 1;
                    e = f;
                    while b.get(e).is_some_and(u8::is_ascii_digit) {
                        e += 1;
                    }
                    if e == f {
                        e = d;
                    }
                }
                if e > d && matches!(b.get(e), Some(b',' | b'}')) {
                    (Kind::Number, e)
                } else {
                    let mut p = Parser { b, i: vs };
                    let kind = p.skip_value(1).ok()?;
                    (kind, p.i)
                }
            }
        };
        let m = RawMember {
            key: &b[ks..j],
            key_esc: false,
            raw: &b[vs..ve],
            kind,
        };
        match lead {
            Some((_, lead)) => out.push_lead(m, lead),
            None => out.push_member(m),
        }
        match b.get(ve) {
            Some(b',') => i = ve + 1,
            Some(b'}') if ve + 1 == b.len() => return Some(()),
            _ => return None,
        }
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.next() == Some(c) {
            Ok(())
        } else {
            Err(format!(
                "expected '{}' at byte {}",
                c as char,
                self.i.saturating_sub(1)
            ))
        }
    }
    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("nesting too deep".into());
        }
        match self.peek() {
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'{') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Value::Object(v));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    self.expect(b':')?;
                    self.ws();
                    let val = self.value(depth + 1)?;
                    v.push((k, val));
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b'}') => return Ok(Value::Object(v)),
                        _ => return Err(format!("bad object at byte {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Value::Array(v));
                }
                loop {
                    self.ws();
                    v.push(self.value(depth + 1)?);
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b']') => return Ok(Value::Array(v)),
                        _ => return Err(format!("bad array at byte {}", self.i)),
                    }
                }
            }
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'n') => self.word(b"null", Value::Null),
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let s = self.i;
                while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
                    self.i += 1;
                }
                let t = String::from_utf8_lossy(&self.b[s..self.i]).into_owned();
                if t.parse::<f64>().is_err() {
                    return Err(format!("bad number '{t}'"));
                }
                Ok(Value::Number(t))
            }
            Some(c) => Err(format!("unexpected byte 0x{c:02x} at {}", self.i)),
            None => Err("unexpected end of line".into()),
        }
    }
    /// [`Self::string`] without building it: checks it and says whether it holds escapes.
    fn skip_string(&mut self) -> Result<bool, String> {
        self.expect(b'"')?;
        let mut esc = false;
        loop {
            let rest = self.b.get(self.i..).unwrap_or_default();
            let Some(n) = memchr2(b'"', b'\\', rest) else {
                self.i = self.b.len();
                return Err("unterminated string".into());
            };
            self.i += n + 1;
            if rest[n] == b'"' {
                return Ok(esc);
            }
            esc = true;
            let Some(e) = self.next() else {
                return Err("unterminated escape".into());
            };
            match e {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let cp = self.hex4()?;
                    if (0xD800..0xDC00).contains(&cp) && self.b[self.i..].starts_with(b"\\u") {
                        self.i += 2;
                        self.hex4()?;
                    }
                }
                other => return Err(format!("bad escape '\\{}'", other as char)),
            }
        }
    }

    /// [`Self::value`] without building it: checks it and says what it is.
    fn skip_value(&mut self, depth: usize) -> Result<Kind, String> {
        if depth > MAX_DEPTH {
            return Err("nesting too deep".into());
        }
        match self.peek() {
            Some(b'"') => self.skip_string().map(Kind::Str),
            Some(b'{') => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Kind::Object);
                }
                loop {
                    self.ws();
                    self.skip_string()?;
                    self.ws();
                    self.expect(b':')?;
                    self.ws();
                    self.skip_value(depth + 1)?;
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b'}') => return Ok(Kind::Object),
                        _ => return Err(format!("bad object at byte {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Kind::Array);
                }
                loop {
                    self.ws();
                    self.skip_value(depth + 1)?;
                    self.ws();
                    match self.next() {
                        Some(b',') => continue,
                        Some(b']') => return Ok(Kind::Array),
                        _ => return Err(format!("bad array at byte {}", self.i)),
                    }
                }
            }
            Some(b't') => self.word(b"true", Value::Null).map(|_| Kind::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Null).map(|_| Kind::Bool(false)),
            Some(b'n') => self.word(b"null", Value::Null).map(|_| Kind::Null),
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let s = self.i;
                while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
                    self.i += 1;
                }
                let t = &self.b[s..self.i];
                if !plain_number(t) && std::str::from_utf8(t).map_or(true, |t| t.parse::<f64>().is_err()) {
                    return Err(format!("bad number '{}'", String::from_utf8_lossy(t)));
                }
                Ok(Kind::Number)
            }
            Some(c) => Err(format!("unexpected byte 0x{c:02x} at {}", self.i)),
            None => Err("unexpected end of line".into()),
        }
    }

    fn word(&mut self, w: &[u8], v: Value) -> Result<Value, String> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(format!("bad literal at byte {}", self.i))
        }
    }
    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.b.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        let s = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
        let v = u32::from_str_radix(s, 16).map_err(|_| "bad \\u escape")?;
        self.i += 4;
        Ok(v)
    }
    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.next() else {
                return Err("unterminated string".into());
            };
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.next() else {
                        return Err("unterminated escape".into());
                    };
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.b[self.i..].starts_with(b"\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                }
                            }
                            let ch = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
                            let mut tmp = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                        }
                        other => return Err(format!("bad escape '\\{}'", other as char)),
                    }
                }
                _ => out.push(c),
            }
        }
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn parses_git_lines_and_raw_bytes() {
        let line =
            b"{\"event\":\"start\",\"argv\":[\"git\",\"\xff\xfe\"],\"t_abs\":0.000391,\"v\":{\"a\":[1,2]}}";
        let m = parse_object_line(line).unwrap();
        assert_eq!(m[0].value.as_str(), Some("start"));
        assert_eq!(
            m[1].value,
            Value::Array(vec![
                Value::String("git".into()),
                Value::String("\u{fffd}\u{fffd}".into())
            ])
        );
        assert_eq!(m[2].value.as_f64(), Some(0.000391));
        assert_eq!(m[3].raw, b"{\"a\":[1,2]}");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse_object_line(b"{\"event\":\"start\"").is_err());
        assert!(parse_object_line(b"not json").is_err());
        assert!(parse_object_line(b"{\"a\":tru}").is_err());
        assert!(parse_object_line(b"{\"a\":1} x").is_err());
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(500), "]".repeat(500));
        assert!(parse_object_line(deep.as_bytes()).is_err());
    }

    #[test]
    fn unicode_escapes() {
        let m = parse_object_line(br#"{"a":"\u0001\u00e9\ud83d\ude00\n"}"#).unwrap();
        assert_eq!(m[0].value.as_str(), Some("\u{1}é😀\n"));
    }

    /// The scanner `parse_line` uses agrees with the full parser on every line: the same lines
    /// accepted, the same keys, values and raw spans.
    fn agree(line: &[u8]) {
        let full = parse_object_line(line);
        let mut raw: Vec<RawMember<'_>> = Vec::new();
        let scanned = scan_object_line(line, &mut raw);
        assert_eq!(full.is_ok(), scanned.is_ok(), "{}", String::from_utf8_lossy(line));
        // The compact scanner takes only lines the general one takes, and finds the same.
        let mut compact: Vec<RawMember<'_>> = Vec::new();
        if scan_compact(line, &mut compact).is_some() {
            assert!(scanned.is_ok(), "{}", String::from_utf8_lossy(line));
            assert_eq!(format!("{compact:?}"), format!("{raw:?}"));
        }
        if let Ok(full) = full {
            assert_eq!(full.len(), raw.len());
            for (m, r) in full.iter().zip(&raw) {
                assert_eq!(
                    (&m.key, &m.value, &m.raw[..]),
                    (&r.key_string(), &r.value(), r.raw)
                );
            }
        }
    }

    #[test]
    fn scanner_agrees_on_git_lines() {
        for line in [
            &br#"{"event":"start","sid":"a\/b","thread":"main","argv":["git","\u00e9\ud83d\ude00","x\"y"],"t_abs":1e-3,"v":{"a":[1,-2.5,true,null]},"k\u0041":"\ud800\u0041"}"#[..],
            b"{\"event\":\"data\",\"sid\":\"s\",\"value\":\"\xff\xfe\"}",
            b"{}",
            b"  { \"a\" : 1 , \"b\":[ ] }  ",
            br#"{"a":+1}"#,
            br#"{"a":1.}"#,
            br#"{"a":"\x"}"#,
            br#"{"a":"\u12"}"#,
            br#"{"a":"abc"#,
            br#"{"a":[1,2}"#,
        ] {
            agree(line);
        }
    }

    /// Every line real git writes (regions and data included) is laid out as the compact
    /// scanner expects, and it finds there what the general scanner finds; so do the lines of
    /// proctrace's own Trace2 event streams (its golden files).
    #[test]
    fn compact_scanner_takes_real_git_lines_and_agrees() {
        let dir = std::env::temp_dir().join(format!("trace2-compact-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let events = dir.join("events");
        let git = |args: &[&str]| {
            let st = std::process::Command::new("git")
                .args(args)
                .current_dir(&dir)
                .env("GIT_TRACE2_EVENT", &events)
                .env("GIT_TRACE2_EVENT_NESTING", "10")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", &dir)
                .env("GIT_AUTHOR_NAME", "a")
                .env("GIT_AUTHOR_EMAIL", "a@example.com")
                .env("GIT_COMMITTER_NAME", "a")
                .env("GIT_COMMITTER_EMAIL", "a@example.com")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(st.success(), "git {args:?}");
        };
        git(&["init", "-q", "."]);
        std::fs::write(dir.join("f \"q\" é.txt"), "x\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "one"]);
        git(&["status"]);
        git(&["log", "-p"]);
        git(&["gc", "-q"]);
        let text = std::fs::read(&events).unwrap();
        let mut lines = 0;
        for line in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            let mut compact: Vec<RawMember<'_>> = Vec::new();
            assert!(
                scan_compact(line, &mut compact).is_some(),
                "{}",
                String::from_utf8_lossy(line)
            );
            agree(line);
            lines += 1;
        }
        assert!(lines > 100, "{lines} lines");
        let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/golden");
        let mut files = 0;
        for e in std::fs::read_dir(golden).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "trace2-event") {
                files += 1;
                for line in std::fs::read(&p)
                    .unwrap()
                    .split(|&c| c == b'\n')
                    .filter(|l| !l.is_empty())
                {
                    let mut compact: Vec<RawMember<'_>> = Vec::new();
                    assert!(scan_compact(line, &mut compact).is_some(), "{}", p.display());
                    agree(line);
                }
            }
        }
        assert!(files > 3, "{files} golden Trace2 event files");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The fast number readers give what `str::parse` gives, or nothing.
    fn same_number(t: &str) {
        if let Some(v) = plain_f64(t.as_bytes()) {
            let p: f64 = t.parse().unwrap();
            assert_eq!(v.to_bits(), p.to_bits(), "{t}");
        }
        if let Some(v) = plain_i64(t.as_bytes()) {
            assert_eq!(Ok(v), t.parse::<i64>(), "{t}");
        }
    }

    #[test]
    fn plain_numbers_read_as_the_float_and_integer_parsers_read_them() {
        for t in [
            "0",
            "-0",
            "0.000444",
            "1.5",
            "-2.25",
            "123456789012345",
            "0.1",
            "0.3",
            "9007199254740993",
            "999999999999999999",
            "-999999999999999999",
            "1e3",
            "1.",
            ".5",
            "-",
            "",
            "01",
            "1.2.3",
        ] {
            same_number(t);
        }
        assert_eq!(plain_f64(b"0.000444"), Some(0.000444));
        assert_eq!(plain_i64(b"-17"), Some(-17));
        assert_eq!(plain_f64(b"1e3"), None);
        assert_eq!(plain_f64(b"1234567890123456"), None);
    }

    proptest::proptest! {
        #[test]
        fn plain_numbers_agree_with_str_parse(int in 0u64..10_000_000_000_000_000, frac in 0usize..17, neg in proptest::prelude::any::<bool>()) {
            let digits = int.to_string();
            let t = if frac > 0 && frac < digits.len() {
                format!("{}{}.{}", if neg { "-" } else { "" }, &digits[..digits.len() - frac], &digits[digits.len() - frac..])
            } else {
                format!("{}{digits}", if neg { "-" } else { "" })
            };
            same_number(&t);
        }

        #[test]
        fn scanner_agrees_on_mangled_lines(at in 0usize..200, byte in proptest::prelude::any::<u8>(), cut in 1usize..220) {
            let mut l = br#"{"event":"child_start","sid":"20261130T193307.910398Z-H0a7c9cdf-P000009c4","thread":"th01:x","time":"2026-11-30T19:33:07.910462Z","argv":["git","-c","a=\"b\""],"t_abs":0.000444,"use_shell":false,"x":{"y":[null]}}"#.to_vec();
            let at = at % l.len();
            l[at] = byte;
            l.truncate(cut.min(l.len()));
            agree(&l);
        }
    }
}
