//! The lines of proctrace's own formats (JSON Lines and captures), bounded and in time order:
//! one reader for both, between the bytes and each format's line parser.
//!
//! - **Bounded.** A line longer than the limit is an error naming it, or (lenient) is dropped
//!   and counted, without ever being stored: memory holds at most the limit for it.
//! - **In time order, within a window** (JSON Lines; a capture is read as recorded, its late
//!   lines counted: [`Order`]). Each line's time (its *key*, read cheaply from its
//!   first bytes: [`jsonl_key`], [`capture_key`]) decides its place among the next
//!   [`WINDOW`] lines: a shuffled or reversed file of up to that many lines reads as the file
//!   it was shuffled from. A line without a time of its own (an `exec_details` after its
//!   `exec`, a region written at its end with its start time, a process found already
//!   running) keeps its place right after the line before it. A line older than one already
//!   handed on (beyond the window) is still handed on, at once, and counted
//!   ([`LineCounts::late`]): the command says so, nothing is misplaced silently.
//! - **No copy for lines in order.** Lines are handed on where they lie in the reader's buffer;
//!   only the lines still waiting in the window when the buffer moves on (at most [`WINDOW`]
//!   per buffer) and lines that straddle two fills are copied, into slots reused from line to
//!   line (no allocation per line in the steady state). A file proctrace wrote is in order, so
//!   the window only ever appends at its back and takes from its front.
//!
//! It never parses a line beyond its key, and never drops one that is not over the limit.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::{InputError, read_error};

/// How many lines (at least) a line waits for an earlier one: the reorder window.
pub const WINDOW: usize = 128;

/// Lines split off at once when the window is refilled (up to `WINDOW + BATCH` wait): splitting
/// in batches costs less per line (measured: a batch of 16 cost 5% more reading time than one of
/// 512).
const BATCH: usize = 512;

/// Bytes of waiting lines at most (with lines near the limit, fewer than [`WINDOW`] wait).
const WINDOW_BYTES: usize = 16 << 20;

/// A slot that held a line longer than this is given back to the allocator when it is freed.
const SLOT_KEPT: usize = 1 << 20;

/// A line's key: its time in ns plus one (0 is the first line's: the header; `u64::MAX` the
/// last: the summary); `None` for a line without a time of its own, which stays after the line
/// before it (after the header, if none came before it).
pub type KeyOf = fn(&[u8], &mut KeyState) -> Option<u64>;

/// How lines are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// By key, stable by arrival, within the window (proctrace's JSON Lines: its lines are the
    /// model's facts, each timed).
    ByTime,
    /// As they came, counting a line older than `tolerance` ns behind the latest key as late
    /// (a capture: it is the order the live run took its events in, small inversions between
    /// sources included, and replays exactly that way).
    AsRecorded {
        /// How far behind the latest time a line may be before it is counted late.
        tolerance: u64,
    },
}

/// A capture's events from different sources come this far out of time order at most (the
/// connector's own, a `comm` read from `/proc`: tens of µs); beyond, a line is counted late.
pub const CAPTURE_TOLERANCE_NS: u64 = 10_000_000;

/// What a key function remembers from the line before.
#[derive(Debug, Default)]
pub struct KeyState {
    /// The line before was a process found running (JSON Lines `pre_existing` fork): its
    /// synthetic `exec` carries the process's start time, not a time in the stream.
    after_pre_existing: bool,
}

/// Counts kept while reading lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Lines read (blank ones included).
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines older than a line already handed on (beyond the window): handed on out of order.
    pub late: u64,
    /// Lines put back in time order (they came after a later line, within the window).
    pub reordered: u64,
    /// Lines over the limit dropped (lenient).
    pub long: u64,
}

/// One line handed on: its bytes (without the newline), 1-based number and whether it ended
/// with a newline (a last line without one may be cut).
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// The line.
    pub text: &'a [u8],
    /// Its number in the input.
    pub no: u64,
    /// It ended with a newline.
    pub complete: bool,
}

#[derive(Debug, Clone, Copy)]
enum At {
    /// In the reader's current buffer (nothing of it consumed yet).
    Buffer { start: usize, len: usize },
    /// Copied into a slot.
    Slot(usize),
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    no: u64,
    at: At,
    complete: bool,
}

/// Lines of `R`, bounded and in time order (see the module).
pub struct Lines<R> {
    input: R,
    name: PathBuf,
    max_line: usize,
    lenient: bool,
    key_of: KeyOf,
    keys: KeyState,
    win: Window,
    /// Bytes of the reader's buffer already split into lines.
    scanned: usize,
    slots: Vec<Vec<u8>>,
    free: Vec<usize>,
    /// The slot of the line handed on last (freed at the next call).
    out: Option<usize>,
    /// A line that straddles two fills, being put together.
    partial: Vec<u8>,
    in_partial: bool,
    partial_long: bool,
    counts: LineCounts,
    pending: Option<InputError>,
    eof: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `input` (named `name` in errors), each at most `max_line` bytes, ordered by
    /// `key_of`.
    pub fn new(input: R, name: &Path, max_line: usize, lenient: bool, key_of: KeyOf, order: Order) -> Self {
        Lines {
            input,
            name: name.to_path_buf(),
            max_line: max_line.max(1),
            lenient,
            key_of,
            keys: KeyState::default(),
            win: Window {
                held: VecDeque::with_capacity(WINDOW + BATCH + 2),
                held_bytes: 0,
                last_key: 1,
                released: 0,
                late: 0,
                reordered: 0,
                order,
            },
            scanned: 0,
            slots: Vec::new(),
            free: Vec::new(),
            out: None,
            partial: Vec::new(),
            in_partial: false,
            partial_long: false,
            counts: LineCounts::default(),
            pending: None,
            eof: false,
        }
    }

    /// Counts so far (final at the end).
    pub fn counts(&self) -> LineCounts {
        LineCounts {
            late: self.win.late,
            reordered: self.win.reordered,
            ..self.counts
        }
    }

    /// The next non-blank line in time order; `None` at the end, or at a read error or a line
    /// over the limit (strict), which come after every line before them: then
    /// [`take_error`](Self::take_error) has it. (A small return: this is called for every line.)
    pub fn next_line(&mut self) -> Option<Line<'_>> {
        if let Some(s) = self.out.take() {
            if self.slots[s].capacity() > SLOT_KEPT {
                self.slots[s] = Vec::new();
            }
            self.free.push(s);
        }
        // Filled in batches once it is down to the window: a line waits for at least WINDOW
        // lines after it.
        if self.win.held.len() <= WINDOW {
            while self.win.wants_more() && !self.eof && self.pending.is_none() && self.scan() {}
        }
        let e = self.win.held.pop_front()?;
        if e.complete && e.key > self.win.released {
            self.win.released = e.key;
        }
        let text = match e.at {
            At::Buffer { start, len } => match self.input.fill_buf() {
                Ok(buf) => &buf[start..start + len],
                Err(err) => {
                    self.pending = Some(read_error(&self.name, err));
                    self.win.held.clear();
                    return None;
                }
            },
            At::Slot(s) => {
                self.out = Some(s);
                self.win.held_bytes -= self.slots[s].len();
                &self.slots[s][..]
            }
        };
        Some(Line {
            text,
            no: e.no,
            complete: e.complete,
        })
    }

    /// What ended the lines early (after [`next_line`](Self::next_line) gave `None`), once.
    pub fn take_error(&mut self) -> Option<InputError> {
        self.pending.take()
    }

    /// Splits off more lines (or moves to the next buffer, or finds the end). False when the
    /// buffer is done but more than the window still waits in it: those go first (in place),
    /// so that at most the window is copied when the reader moves on.
    fn scan(&mut self) -> bool {
        let buf = match self.input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return true,
            Err(e) => {
                self.pending = Some(read_error(&self.name, e));
                return true;
            }
        };
        if self.in_partial {
            // A line begun in the buffer before: this buffer is new (nothing of it scanned).
            if buf.is_empty() {
                // The end, in a line without newline: it goes last.
                self.in_partial = false;
                self.eof = true;
                self.counts.lines += 1;
                let no = self.counts.lines;
                self.end_partial(no, false);
                return true;
            }
            let (take, nl) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if !self.partial_long {
                if self.partial.len() + take > self.max_line {
                    self.partial_long = true;
                    self.partial = Vec::new();
                } else {
                    self.partial.extend_from_slice(&buf[..take]);
                }
            }
            if nl {
                self.scanned = take + 1;
                self.counts.bytes += take as u64 + 1;
                self.in_partial = false;
                self.counts.lines += 1;
                let no = self.counts.lines;
                self.end_partial(no, true);
            } else {
                self.counts.bytes += take as u64;
                self.input.consume(take);
            }
            return true;
        }
        // The lines wholly in this buffer, until the window is full.
        let before = self.scanned;
        let mut rest = &buf[before..];
        let mut found = false;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            found = true;
            let start = self.scanned;
            self.scanned += i + 1;
            self.counts.lines += 1;
            let no = self.counts.lines;
            let text = &rest[..i];
            rest = &rest[i + 1..];
            if i > self.max_line {
                self.pending = too_long(&self.name, self.max_line, self.lenient, &mut self.counts, no);
                break;
            }
            // Blank: a first byte that is not `{` is rare; trimming tells then.
            if text.first() != Some(&b'{') && text.trim_ascii().is_empty() {
                continue;
            }
            let key = key_if_whole(self.key_of, text, &mut self.keys);
            self.win.insert(key, no, true, At::Buffer { start, len: i }, 0);
            if !self.win.wants_more() {
                break;
            }
        }
        if found {
            self.counts.bytes += (self.scanned - before) as u64;
            return true;
        }
        if buf.is_empty() {
            self.eof = true;
            return true;
        }
        if self.win.held.len() > WINDOW {
            return false;
        }
        // This buffer is split: the lines still waiting in it are copied, the start of the
        // next line is kept, and the reader moves on.
        for e in self.win.held.iter_mut() {
            if let At::Buffer { start, len } = e.at {
                let s = self.free.pop().unwrap_or_else(|| {
                    self.slots.push(Vec::new());
                    self.slots.len() - 1
                });
                self.slots[s].clear();
                self.slots[s].extend_from_slice(&buf[start..start + len]);
                self.win.held_bytes += len;
                e.at = At::Slot(s);
            }
        }
        self.partial.clear();
        self.partial_long = rest.len() > self.max_line;
        if !self.partial_long {
            self.partial.extend_from_slice(rest);
        }
        self.in_partial = !rest.is_empty();
        self.counts.bytes += rest.len() as u64;
        let n = buf.len();
        self.input.consume(n);
        self.scanned = 0;
        true
    }

    /// The line put together in `partial` is complete (or the input ended in it).
    fn end_partial(&mut self, no: u64, complete: bool) {
        if self.partial_long {
            self.partial_long = false;
            self.pending = too_long(&self.name, self.max_line, self.lenient, &mut self.counts, no);
            return;
        }
        if self.partial.trim_ascii().is_empty() {
            return;
        }
        let s = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Vec::new());
            self.slots.len() - 1
        });
        std::mem::swap(&mut self.slots[s], &mut self.partial);
        self.partial.clear();
        // A cut last line goes last, whatever it says.
        let key = if complete {
            key_if_whole(self.key_of, &self.slots[s], &mut self.keys)
        } else {
            Some(u64::MAX)
        };
        let len = self.slots[s].len();
        self.win.insert(key, no, complete, At::Slot(s), len);
    }
}

/// The lines waiting, in key order.
struct Window {
    /// Sorted by (key, arrival).
    held: VecDeque<Entry>,
    /// Bytes of the waiting lines that were copied.
    held_bytes: usize,
    /// The key of the line before (for a line without one).
    last_key: u64,
    /// The greatest key handed on.
    released: u64,
    late: u64,
    reordered: u64,
    order: Order,
}

impl Window {
    fn wants_more(&self) -> bool {
        self.held.len() <= WINDOW + BATCH && self.held_bytes <= WINDOW_BYTES
    }

    #[inline(always)]
    fn insert(&mut self, key: Option<u64>, no: u64, complete: bool, at: At, copied: usize) {
        self.held_bytes += copied;
        if let Order::AsRecorded { tolerance } = self.order {
            if let Some(k) = key.filter(|_| complete) {
                if k.saturating_add(tolerance) < self.last_key {
                    self.late += 1;
                }
                self.last_key = self.last_key.max(k);
            }
            self.held.push_back(Entry {
                key: 0,
                no,
                at,
                complete,
            });
            return;
        }
        let key = match key {
            Some(k) => {
                if complete {
                    self.last_key = k;
                }
                k
            }
            None => self.last_key,
        };
        if key < self.released {
            self.late += 1;
        }
        let e = Entry {
            key,
            no,
            at,
            complete,
        };
        match self.held.back() {
            Some(b) if b.key > key => {
                let i = self.held.partition_point(|h| h.key <= key);
                self.held.insert(i, e);
                self.reordered += 1;
            }
            _ => self.held.push_back(e),
        }
    }
}

/// A line over the limit: the error (strict), or counted (lenient).
fn too_long(
    name: &Path,
    max_line: usize,
    lenient: bool,
    counts: &mut LineCounts,
    no: u64,
) -> Option<InputError> {
    if lenient {
        counts.long += 1;
        return None;
    }
    Some(InputError::Line {
        path: name.to_path_buf(),
        line: no,
        msg: super::source::LineTooLong {
            line: no,
            max: max_line,
        }
        .to_string(),
    })
}

/// A line's key, if it is a whole object (ends in `}`): a broken line (`{"e":"fork","ts":1,…` cut
/// short, which a lenient read skips) has no time to be trusted, and keeps its place — so the
/// keyless line after it (an exec's details) is not moved with it.
fn key_if_whole(key_of: KeyOf, text: &[u8], st: &mut KeyState) -> Option<u64> {
    if text.trim_ascii_end().ends_with(b"}") {
        key_of(text, st)
    } else {
        None
    }
}

/// The value of the first `"key":` in `line` (whitespace skipped), to its end.
fn value<'a>(line: &'a [u8], quoted_key: &[u8]) -> Option<&'a [u8]> {
    let mut from = 0;
    while let Some(i) = memchr::memmem::find(&line[from..], quoted_key) {
        let mut j = from + i + quoted_key.len();
        let ws = |j: &mut usize| {
            while line.get(*j).is_some_and(|b| b.is_ascii_whitespace()) {
                *j += 1;
            }
        };
        ws(&mut j);
        if line.get(j) == Some(&b':') {
            j += 1;
            ws(&mut j);
            return Some(&line[j..]);
        }
        from += i + 1;
    }
    None
}

/// A string value's contents (no escapes: event names have none).
fn string(v: &[u8]) -> Option<&[u8]> {
    let v = v.strip_prefix(b"\"")?;
    Some(&v[..memchr::memchr(b'"', v)?])
}

/// A number's characters.
fn number(v: &[u8]) -> &[u8] {
    let n = v
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
        .unwrap_or(v.len());
    &v[..n]
}

/// Plain decimal seconds (`12.000000345`: digits, at most nine decimals) at the start of `v`,
/// as ns, in one pass; `None` for anything else (an exponent, a sign, too many digits).
fn plain_seconds(v: &[u8]) -> Option<u64> {
    let mut i = 0;
    let mut secs: u64 = 0;
    while let Some(d) = v.get(i).and_then(|b| b.checked_sub(b'0')).filter(|d| *d < 10) {
        if i == 19 {
            return None;
        }
        secs = secs * 10 + u64::from(d);
        i += 1;
    }
    if i == 0 {
        return None;
    }
    let mut ns: u64 = 0;
    if v.get(i) == Some(&b'.') {
        i += 1;
        // Nine decimals, as proctrace writes them: eight at once, then one.
        if let (Some(w), Some(&d9)) = (v.get(i..i + 8), v.get(i + 8))
            && let Some(eight) = eight_digits(w)
            && d9.is_ascii_digit()
            && !v
                .get(i + 9)
                .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'e' | b'E'))
        {
            return secs
                .checked_mul(1_000_000_000)?
                .checked_add(eight * 10 + u64::from(d9 - b'0'));
        }
        let mut k = 0;
        while let Some(d) = v.get(i).and_then(|b| b.checked_sub(b'0')).filter(|d| *d < 10) {
            if k == 9 {
                return None;
            }
            ns = ns * 10 + u64::from(d);
            i += 1;
            k += 1;
        }
        if k == 0 {
            return None;
        }
        ns *= 10u64.pow(9 - k);
    }
    if matches!(v.get(i), Some(b'e' | b'E')) {
        return None;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Eight ASCII digits as their number (SWAR), or `None` if one is not a digit.
fn eight_digits(w: &[u8]) -> Option<u64> {
    let x = u64::from_le_bytes(w.try_into().ok()?);
    // Every byte 0x30..=0x39: high nibble 3, and adding 6 does not carry into it.
    if x & 0xF0F0_F0F0_F0F0_F0F0 != 0x3030_3030_3030_3030
        || (x.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) != 0x3030_3030_3030_3030
    {
        return None;
    }
    let x = x - 0x3030_3030_3030_3030;
    // Pairs, then quads, then the eight (first digit the most significant: the lowest byte).
    let x = (x * 10 + (x >> 8)) & 0x00FF_00FF_00FF_00FF;
    let x = (x * 100 + (x >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((x * 10000 + (x >> 32)) & 0xFFFF_FFFF)
}

/// Decimal seconds as ns: exactly when written as proctrace writes them, else through `f64`
/// (a key only orders).
fn seconds(v: &[u8]) -> Option<u64> {
    if let Some(ns) = plain_seconds(v) {
        return Some(time_key(ns));
    }
    let n = number(v);
    let ns = super::jsonl::parse_seconds(n).or_else(|| {
        let f: f64 = std::str::from_utf8(n).ok()?.parse().ok()?;
        (f.is_finite() && f >= 0.0).then(|| (f * 1e9).round().min(u64::MAX as f64) as u64)
    })?;
    Some(time_key(ns))
}

/// A time's key: after the header's, before the summary's.
fn time_key(ns: u64) -> u64 {
    ns.saturating_add(1).min(u64::MAX - 1)
}

/// `"pre_existing":true` on a fork line (searched with one finder made once: making one per
/// line cost more than the search).
fn pre_existing(line: &[u8]) -> bool {
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""pre_existing""#));
    let Some(i) = KEY.find(line) else {
        return false;
    };
    value(&line[i..], br#""pre_existing""#).is_some_and(|v| v.starts_with(b"true"))
}

/// The event name and what follows it, for a line that starts `{"<field>":"NAME"`.
fn laid_out<'a>(line: &'a [u8], lead: &[u8]) -> Option<(&'a [u8], &'a [u8])> {
    let rest = line.strip_prefix(lead)?;
    // Names are short: a plain loop (memchr's call cost more, measured).
    let q = rest.iter().take(32).position(|&b| b == b'"')?;
    Some((&rest[..q], &rest[q + 1..]))
}

/// The key of a proctrace JSON Lines line: `start` first, `end` last, a `region` at its end
/// (`ts` + `duration`: it is written when it ends, with its start time), its `ts` else; none
/// for a `pre_existing` fork and the `exec` after it (a process found running: its start time),
/// or a line without `ts`.
pub fn jsonl_key(line: &[u8], st: &mut KeyState) -> Option<u64> {
    let (name, ts) = match laid_out(line, br#"{"event":""#) {
        Some((name, rest)) => (name, rest.strip_prefix(br#","ts":"#)),
        None => (string(value(line, br#""event""#)?)?, None),
    };
    let pre = std::mem::take(&mut st.after_pre_existing);
    let ts = || ts.or_else(|| value(line, br#""ts""#)).and_then(seconds);
    match name {
        b"start" => Some(0),
        b"end" => Some(u64::MAX),
        // Written when it ended, with its start time: in the stream at its end (as the model
        // takes a region's time).
        b"region" => {
            let start = ts()?;
            let d = value(line, br#""duration""#).and_then(seconds)?;
            Some(start.saturating_add(d - 1).min(u64::MAX - 1))
        }
        b"exec" if pre => None,
        b"fork" if pre_existing(line) => {
            st.after_pre_existing = true;
            None
        }
        _ => ts(),
    }
}

/// The key of a capture line: the header and the root first, the summary last, a region at
/// its `end`, its `ts` (ns) else (a `data` event's is inside it); none for a line without one
/// of its own (`exec_details`, `usage`, `existing`, `ancestry`).
pub fn capture_key(line: &[u8], _: &mut KeyState) -> Option<u64> {
    let (name, ts) = match laid_out(line, br#"{"e":""#) {
        Some((name, rest)) => (name, rest.strip_prefix(br#","ts":"#)),
        None => (string(value(line, br#""e""#)?)?, None),
    };
    match name {
        // The root is named right after the header, before any event.
        b"header" | b"root" => Some(0),
        b"summary" => Some(u64::MAX),
        // In the stream at its end.
        b"region" => {
            let end = value(line, br#""end""#)?;
            std::str::from_utf8(number(end)).ok()?.parse().ok().map(time_key)
        }
        // A file use comes from its own reader thread and can trail its process's exit.
        b"exec_details" | b"usage" | b"existing" | b"ancestry" | b"file" => None,
        _ => {
            let v = ts.or_else(|| value(line, br#""ts""#))?;
            let n = number(v);
            std::str::from_utf8(n).ok()?.parse().ok().map(time_key)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(
        text: &[u8],
        max: usize,
        lenient: bool,
        key: KeyOf,
    ) -> (Vec<(u64, String)>, LineCounts, Option<InputError>) {
        // Through a small buffer too: lines straddle fills and the window is copied.
        let mut out = Vec::new();
        let mut err = None;
        let mut counts = LineCounts::default();
        for cap in [7, 64, 1 << 16] {
            let r = std::io::BufReader::with_capacity(cap, text);
            let mut l = Lines::new(r, Path::new("t"), max, lenient, key, Order::ByTime);
            let mut got = Vec::new();
            while let Some(line) = l.next_line() {
                got.push((line.no, String::from_utf8_lossy(line.text).into_owned()));
            }
            let e = l.take_error();
            if cap != 7 {
                assert_eq!(got, out, "buffer {cap}");
                assert_eq!(l.counts(), counts, "buffer {cap}");
            }
            (out, counts, err) = (got, l.counts(), e);
        }
        (out, counts, err)
    }

    fn ev(name: &str, ts: &str) -> String {
        format!("{{\"event\":\"{name}\",\"ts\":{ts},\"pid\":1}}")
    }

    #[test]
    fn lines_in_order_pass_as_they_are() {
        let lines = [
            ev("start", "5.0"),
            ev("fork", "5.1"),
            ev("exec", "5.2"),
            ev("end", "6.0"),
        ];
        let text = lines.join("\n") + "\n";
        let (got, c, e) = all(text.as_bytes(), 1000, false, jsonl_key);
        assert!(e.is_none());
        assert_eq!(got.iter().map(|g| g.1.clone()).collect::<Vec<_>>(), lines);
        assert_eq!(
            (c.lines, c.bytes, c.late, c.reordered),
            (4, text.len() as u64, 0, 0)
        );
    }

    #[test]
    fn a_reversed_or_shuffled_file_is_put_back_in_order() {
        let mut lines = vec![ev("start", "5.0")];
        for i in 0..100 {
            lines.push(ev("fork", &format!("5.{:03}", i * 7)));
        }
        lines.push(ev("end", "9.0"));
        let want = lines.clone();
        let rev: Vec<_> = lines.iter().rev().cloned().collect();
        let mut shuffled = lines.clone();
        let mut x = 88172645463325252u64;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for input in [rev, shuffled] {
            let text = input.join("\n") + "\n\n";
            let (got, c, e) = all(text.as_bytes(), 1000, false, jsonl_key);
            assert!(e.is_none());
            assert_eq!(got.iter().map(|g| g.1.clone()).collect::<Vec<_>>(), want);
            assert_eq!((c.lines, c.late), (103, 0));
            assert!(c.reordered > 0);
            // Numbers are where each line was.
            for (no, l) in &got {
                assert_eq!(&input[*no as usize - 1], l);
            }
        }
    }

    #[test]
    fn lines_without_a_time_stay_after_the_line_before_them() {
        let lines = [
            ev("start", "5.0"),
            r#"{"event":"fork","ts":1.0,"pid":7,"pre_existing":true}"#.to_string(),
            ev("exec", "1.0"),
            ev("exit", "5.5"),
            r#"{"event":"region","ts":5.3,"pid":1,"duration":0.25}"#.to_string(),
            ev("fork", "5.6"),
            r#"{"event":"lost","ts":null,"count":3}"#.to_string(),
            ev("exec", "5.3"),
        ];
        let text = lines.join("\n") + "\n";
        let (got, c, _) = all(text.as_bytes(), 1000, false, jsonl_key);
        let order: Vec<u64> = got.iter().map(|g| g.0).collect();
        // The late exec (5.3) goes before the exit (5.5); the region is at its end (5.55), the
        // lost line after the fork before it.
        assert_eq!(order, [1, 2, 3, 8, 4, 5, 6, 7]);
        assert_eq!((c.reordered, c.late), (1, 0));
    }

    #[test]
    fn beyond_the_window_a_line_is_late_and_counted() {
        let mut lines = vec![ev("fork", "1.5")];
        for i in 0..2 * (WINDOW + BATCH) {
            lines.push(ev("fork", &format!("{}.0", 2 + i)));
        }
        lines.push(ev("exit", "1.0"));
        let text = lines.join("\n") + "\n";
        // Where a late line goes out depends on how many wait when it comes (the window is
        // refilled in batches): handed on, and counted, whatever the buffer.
        for cap in [64, 1 << 16, 1 << 20] {
            let r = std::io::BufReader::with_capacity(cap, text.as_bytes());
            let mut l = Lines::new(r, Path::new("t"), 1000, false, jsonl_key, Order::ByTime);
            let mut got = Vec::new();
            while let Some(line) = l.next_line() {
                got.push(line.no);
            }
            assert_eq!(got.len(), lines.len(), "buffer {cap}");
            assert_eq!(got.first(), Some(&1));
            assert_eq!(l.counts().late, 1, "buffer {cap}");
        }
    }

    #[test]
    fn a_long_line_is_an_error_after_the_lines_before_it_or_dropped_when_lenient() {
        let long = format!("{{\"event\":\"fork\",\"ts\":1.0,\"x\":\"{}\"}}", "y".repeat(300));
        let text = format!("{}\n{long}\n{}\n", ev("start", "0.5"), ev("exit", "2.0"));
        let (got, _, e) = all(text.as_bytes(), 100, false, jsonl_key);
        assert_eq!(got.len(), 1);
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("t:2: a line longer than 100 bytes (the line limit): not a trace, or raise the limit")
        );
        let (got, c, e) = all(text.as_bytes(), 100, true, jsonl_key);
        assert!(e.is_none());
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1, 3]);
        assert_eq!((c.long, c.lines), (1, 3));
    }

    #[test]
    fn a_cut_last_line_comes_last() {
        let text = format!(
            "{}\n{}\n{{\"event\":\"fork\",\"ts\":0.1",
            ev("start", "1.0"),
            ev("end", "2.0")
        );
        let (got, _, _) = all(text.as_bytes(), 1000, false, jsonl_key);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn seconds_fast_and_slow_agree() {
        for t in [
            "0",
            "7",
            "12.5",
            "12.000000345",
            "17324.420805536",
            "1.123456789",
            "0.000000001",
            "99999.99999999",
        ] {
            let exact = super::super::jsonl::parse_seconds(t.as_bytes()).map(time_key);
            assert_eq!(seconds(t.as_bytes()), exact, "{t}");
            assert_eq!(seconds(format!("{t},\"pid\":1").as_bytes()), exact, "{t}");
        }
        assert_eq!(eight_digits(b"12345678"), Some(12_345_678));
        assert_eq!(eight_digits(b"1234567:"), None);
        assert_eq!(eight_digits(b"1234/678"), None);
        assert_eq!(seconds(b"1.0000000001"), Some(time_key(1_000_000_000)));
        assert_eq!(seconds(b"1.000000001e3"), Some(time_key(1_000_000_001_000)));
    }

    #[test]
    fn a_capture_is_read_as_recorded_and_a_late_line_counted() {
        let c = |ts: u64| format!("{{\"e\":\"fork\",\"ts\":{ts}}}");
        let lines = [
            c(100_000_000),
            c(99_990_000),
            r#"{"e":"exec_details","tgid":1}"#.into(),
            c(50_000_000),
            c(200_000_000),
        ];
        let text = lines.join("\n") + "\n";
        let r = std::io::BufReader::with_capacity(16, text.as_bytes());
        let mut l = Lines::new(
            r,
            Path::new("t"),
            1000,
            false,
            capture_key,
            Order::AsRecorded {
                tolerance: CAPTURE_TOLERANCE_NS,
            },
        );
        let mut got = Vec::new();
        while let Some(line) = l.next_line() {
            got.push(line.no);
        }
        assert_eq!(got, [1, 2, 3, 4, 5]);
        // 10 µs behind: within the tolerance; 50 ms behind: late.
        assert_eq!((l.counts().late, l.counts().reordered), (1, 0));
    }

    #[test]
    fn keys_of_any_layout() {
        let mut st = KeyState::default();
        let j = |l: &[u8], st: &mut KeyState| jsonl_key(l, st);
        // A time's key is its ns plus one: 0 is the header's.
        assert_eq!(
            j(br#"{"event":"fork","ts":12.000000345}"#, &mut st),
            Some(12_000_000_346)
        );
        assert_eq!(
            j(br#"{ "pid": 3, "ts" : 5.3688e-05, "event" : "exit" }"#, &mut st),
            Some(53_689)
        );
        assert_eq!(j(br#"{"event":"start","ts":9.0}"#, &mut st), Some(0));
        assert_eq!(
            j(br#"{"argv":["\"ts\":1"],"event":"exec","ts":3}"#, &mut st),
            Some(3_000_000_001)
        );
        assert_eq!(j(br#"{"event":"lost","ts":null}"#, &mut st), None);
        assert_eq!(j(br#"{"event":"exit","ts":0}"#, &mut st), Some(1));
        assert_eq!(j(br#"{"event":"end","ts":1.0}"#, &mut st), Some(u64::MAX));
        assert_eq!(
            j(br#"{"event":"region","ts":2.5,"duration":0.5}"#, &mut st),
            Some(3_000_000_001)
        );
        let c = |l: &[u8], st: &mut KeyState| capture_key(l, st);
        assert_eq!(
            c(br#"{"e":"fork","ts":819889388834,"parent_tgid":1}"#, &mut st),
            Some(819889388835)
        );
        assert_eq!(c(br#"{"ts": 7, "e": "exit"}"#, &mut st), Some(8));
        assert_eq!(c(br#"{"e":"exec_details","tgid":1}"#, &mut st), None);
        assert_eq!(
            c(br#"{"e":"region","tgid":1,"region":{"ts":5,"end":9}}"#, &mut st),
            Some(10)
        );
        assert_eq!(c(br#"{"e":"header","header":{"ts":5}}"#, &mut st), Some(0));
        assert_eq!(c(br#"{"e":"root","tgid":5}"#, &mut st), Some(0));
    }
}
