//! The lines of proctrace's own formats (JSON Lines and captures), bounded and in time order:
//! one reader for both, between the bytes and each format's line parser.
//!
//! - **Bounded.** A line longer than the limit is an error naming it, or (lenient) is dropped
//!   and counted, without ever being stored: memory holds at most the limit for it.
//! - **In time order, within a window.** Each line's time (its *key*, read cheaply from its
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

/// How many lines wait for an earlier one: the reorder window.
pub const WINDOW: usize = 128;

/// Bytes of waiting lines at most (with lines near the limit, fewer than [`WINDOW`] wait).
const WINDOW_BYTES: usize = 16 << 20;

/// A slot that held a line longer than this is given back to the allocator when it is freed.
const SLOT_KEPT: usize = 1 << 20;

/// A line's key: its time in ns plus one (0 is the first line's: the header; `u64::MAX` the
/// last: the summary); `None` for a line without a time of its own, which stays after the line
/// before it (after the header, if none came before it).
pub type KeyOf = fn(&[u8], &mut KeyState) -> Option<u64>;

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
    complete: bool,
    len: usize,
    at: At,
}

/// Lines of `R`, bounded and in time order (see the module).
pub struct Lines<R> {
    input: R,
    name: PathBuf,
    max_line: usize,
    lenient: bool,
    key_of: KeyOf,
    keys: KeyState,
    /// Waiting lines, sorted by (key, arrival).
    held: VecDeque<Entry>,
    held_bytes: usize,
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
    last_key: u64,
    released: Option<u64>,
    counts: LineCounts,
    pending: Option<InputError>,
    eof: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `input` (named `name` in errors), each at most `max_line` bytes, ordered by
    /// `key_of`.
    pub fn new(input: R, name: &Path, max_line: usize, lenient: bool, key_of: KeyOf) -> Self {
        Lines {
            input,
            name: name.to_path_buf(),
            max_line: max_line.max(1),
            lenient,
            key_of,
            keys: KeyState::default(),
            held: VecDeque::with_capacity(WINDOW + 2),
            held_bytes: 0,
            scanned: 0,
            slots: Vec::new(),
            free: Vec::new(),
            out: None,
            partial: Vec::new(),
            in_partial: false,
            partial_long: false,
            last_key: 1,
            released: None,
            counts: LineCounts::default(),
            pending: None,
            eof: false,
        }
    }

    /// Counts so far (final at the end).
    pub fn counts(&self) -> LineCounts {
        self.counts
    }

    /// The next non-blank line in time order; `None` at the end. A read error or a line over
    /// the limit (strict) comes after every line before it.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, InputError> {
        if let Some(s) = self.out.take() {
            if self.slots[s].capacity() > SLOT_KEPT {
                self.slots[s] = Vec::new();
            }
            self.free.push(s);
        }
        while self.held.len() <= WINDOW
            && self.held_bytes <= WINDOW_BYTES
            && !self.eof
            && self.pending.is_none()
        {
            self.scan();
        }
        let Some(e) = self.held.pop_front() else {
            return match self.pending.take() {
                Some(err) => Err(err),
                None => Ok(None),
            };
        };
        self.held_bytes -= e.len;
        if e.complete {
            self.released = Some(self.released.map_or(e.key, |r| r.max(e.key)));
        }
        let text = match e.at {
            At::Buffer { start, len } => {
                let buf = self.input.fill_buf().map_err(|err| read_error(&self.name, err))?;
                &buf[start..start + len]
            }
            At::Slot(s) => {
                self.out = Some(s);
                &self.slots[s][..]
            }
        };
        Ok(Some(Line {
            text,
            no: e.no,
            complete: e.complete,
        }))
    }

    /// Splits off one more line (or moves to the next buffer, or finds the end).
    fn scan(&mut self) {
        let buf = match self.input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return,
            Err(e) => {
                self.pending = Some(read_error(&self.name, e));
                return;
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
                return;
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
            return;
        }
        let rest = &buf[self.scanned..];
        if let Some(i) = memchr::memchr(b'\n', rest) {
            let start = self.scanned;
            self.scanned += i + 1;
            self.counts.bytes += i as u64 + 1;
            self.counts.lines += 1;
            let no = self.counts.lines;
            let text = &buf[start..start + i];
            if i > self.max_line {
                self.too_long(no);
            } else if !text.trim_ascii().is_empty() {
                let key = key_if_whole(self.key_of, text, &mut self.keys);
                self.insert(key, no, true, i, At::Buffer { start, len: i });
            }
            return;
        }
        if buf.is_empty() {
            self.eof = true;
            return;
        }
        // This buffer is split: the lines still waiting in it are copied, the start of the
        // next line is kept, and the reader moves on.
        for e in self.held.iter_mut() {
            if let At::Buffer { start, len } = e.at {
                let s = self.free.pop().unwrap_or_else(|| {
                    self.slots.push(Vec::new());
                    self.slots.len() - 1
                });
                self.slots[s].clear();
                self.slots[s].extend_from_slice(&buf[start..start + len]);
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
    }

    /// The line put together in `partial` is complete (or the input ended in it).
    fn end_partial(&mut self, no: u64, complete: bool) {
        if self.partial_long {
            self.partial_long = false;
            self.too_long(no);
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
        let len = self.slots[s].len();
        // A cut last line goes last, whatever it says.
        let key = if complete {
            key_if_whole(self.key_of, &self.slots[s], &mut self.keys)
        } else {
            Some(u64::MAX)
        };
        self.insert(key, no, complete, len, At::Slot(s));
    }

    fn too_long(&mut self, no: u64) {
        if self.lenient {
            self.counts.long += 1;
        } else {
            self.pending = Some(InputError::Line {
                path: self.name.clone(),
                line: no,
                msg: super::source::LineTooLong {
                    line: no,
                    max: self.max_line,
                }
                .to_string(),
            });
        }
    }

    fn insert(&mut self, key: Option<u64>, no: u64, complete: bool, len: usize, at: At) {
        let key = match key {
            Some(k) => {
                if complete {
                    self.last_key = k;
                }
                k
            }
            None => self.last_key,
        };
        if self.released.is_some_and(|r| key < r) {
            self.counts.late += 1;
        }
        let e = Entry {
            key,
            no,
            complete,
            len,
            at,
        };
        self.held_bytes += len;
        match self.held.back() {
            Some(b) if b.key > key => {
                let i = self.held.partition_point(|h| h.key <= key);
                self.held.insert(i, e);
                self.counts.reordered += 1;
            }
            _ => self.held.push_back(e),
        }
    }
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

/// Decimal seconds as ns: exactly when written as proctrace writes them, else through `f64`
/// (a key only orders).
fn seconds(v: &[u8]) -> Option<u64> {
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

/// The event name and what follows it, for a line that starts `{"<field>":"NAME"`.
fn laid_out<'a>(line: &'a [u8], lead: &[u8]) -> Option<(&'a [u8], &'a [u8])> {
    let rest = line.strip_prefix(lead)?;
    let q = memchr::memchr(b'"', rest)?;
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
        b"fork" if value(line, br#""pre_existing""#).is_some_and(|v| v.starts_with(b"true")) => {
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
        b"exec_details" | b"usage" | b"existing" | b"ancestry" => None,
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
            let mut l = Lines::new(r, Path::new("t"), max, lenient, key);
            let mut got = Vec::new();
            let e = loop {
                match l.next_line() {
                    Ok(Some(line)) => got.push((line.no, String::from_utf8_lossy(line.text).into_owned())),
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            };
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
        for i in 0..(WINDOW + 10) {
            lines.push(ev("fork", &format!("{}.0", 2 + i)));
        }
        lines.push(ev("exit", "1.0"));
        let text = lines.join("\n") + "\n";
        let (got, c, _) = all(text.as_bytes(), 1000, false, jsonl_key);
        assert_eq!(got.len(), lines.len());
        assert_eq!(c.late, 1);
        assert_eq!(got.first().map(|g| g.0), Some(1));
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
