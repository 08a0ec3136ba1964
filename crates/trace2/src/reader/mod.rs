//! Reading event-target streams back into typed [`Event`]s: files,
//! directories of per-session files and listening `af_unix` sockets.
//!
//! The reader accepts what git really writes: bytes that are not UTF-8
//! (decoded lossily), a truncated last line (a writer killed mid-run; it is
//! counted, never an error), any order of events across SIDs and threads,
//! several `exit`s for one SID, unknown events ([`EventKind::Other`]) and
//! unknown keys (kept in [`Record::extra`]). Key order is never required.
//! Malformed lines are errors naming the file and line, or, in lenient
//! mode, skipped and counted.

pub mod json;
pub mod socket;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

pub use json::Value;
use json::{Kind, RawMember, find_lf, scan_compact, scan_object_line};

use crate::event::{Event, EventKind, ReadyState, Str};
use crate::time::Timestamp;

/// One event read from a stream, with where it came from.
#[derive(Debug, Clone)]
pub struct Record {
    /// The event.
    pub event: Event<'static>,
    /// Keys this crate does not know, in input order.
    pub extra: Vec<(String, Value)>,
    /// Stream name (file path or socket description).
    pub source: String,
    /// 1-based line number in that stream.
    pub line_no: usize,
}

/// Why reading failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// Path.
        path: PathBuf,
        /// Error.
        source: io::Error,
    },
    /// A line is not a valid event.
    #[error("{source_name}:{line}: {reason}")]
    Malformed {
        /// Stream name.
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Reading options.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Skip and count malformed lines instead of failing.
    pub lenient: bool,
    /// Called with each line that is not plain ASCII, before it is parsed: when it writes a
    /// replacement into the buffer and returns `true`, that is parsed instead. git writes argv
    /// and paths as the bytes they are, so a line may not be UTF-8; the reader decodes such
    /// strings lossily (U+FFFD), and a caller that keeps bytes maps them into text here.
    pub rewrite: Option<Rewrite>,
}

/// [`ReadOptions::rewrite`]: given a line that is not plain ASCII, writes its replacement into
/// the buffer and returns `true`, or returns `false` to parse the line as it is.
pub type Rewrite = fn(&[u8], &mut Vec<u8>) -> bool;

impl ReadOptions {
    /// `line` (or its replacement in `scratch`, when [`ReadOptions::rewrite`] gives one) and its
    /// text when it is UTF-8. One pass over a plain ASCII line, the usual case: that it is ASCII
    /// is what the reader needs to know anyway (its strings then lie on the line as text).
    fn rewritten<'b>(&self, line: &'b [u8], scratch: &'b mut Vec<u8>) -> (&'b [u8], Option<&'b str>) {
        if line.is_ascii() {
            // SAFETY: ASCII is UTF-8.
            return (line, Some(unsafe { std::str::from_utf8_unchecked(line) }));
        }
        let line = match self.rewrite {
            Some(f) => {
                scratch.clear();
                if f(line, scratch) { &scratch[..] } else { line }
            }
            None => line,
        };
        (line, std::str::from_utf8(line).ok())
    }
}

/// Counts kept while reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines seen (including bad ones).
    pub lines: usize,
    /// Malformed lines skipped (lenient mode).
    pub bad_lines: usize,
    /// The last line had no LF and did not parse (a writer died mid-line).
    pub truncated_last_line: bool,
}

/// An iterator of [`Record`]s over any byte stream of event lines.
#[derive(Debug)]
pub struct EventReader<R> {
    input: R,
    name: String,
    line_no: usize,
    opts: ReadOptions,
    stats: ReadStats,
    buf: Vec<u8>,
    done: bool,
}

impl<R: BufRead> EventReader<R> {
    /// Reads from `input`; `name` is used in records and errors.
    pub fn new(input: R, name: impl Into<String>, opts: ReadOptions) -> Self {
        EventReader {
            input,
            name: name.into(),
            line_no: 0,
            opts,
            stats: ReadStats::default(),
            buf: Vec::new(),
            done: false,
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> ReadStats {
        self.stats
    }
}

impl<R: BufRead> EventReader<R> {
    /// Calls `f` with each event and its 1-based line number until `f` returns false or the
    /// input ends; the first error ends it too. Without the per-line copies of the iterator:
    /// the event borrows the line where it can ([`parse_line_borrowed`]), and neither unknown
    /// keys nor the source name are kept.
    pub fn for_each_event(&mut self, mut f: impl FnMut(Event<'_>, usize) -> bool) -> Result<(), ReadError> {
        // Lines are parsed where they lie in the reader's buffer; only a line that straddles
        // two fills is copied (into `buf`).
        self.buf.clear();
        loop {
            if self.done {
                return Ok(());
            }
            let avail = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Err(ReadError::Io {
                        path: PathBuf::from(&self.name),
                        source: e,
                    });
                }
            };
            if avail.is_empty() {
                // The end: what is in `buf` is a last line without LF.
                self.done = true;
                if self.buf.is_empty() {
                    return Ok(());
                }
                let line = std::mem::take(&mut self.buf);
                self.line_no += 1;
                let flow = one_line(
                    &line,
                    false,
                    self.line_no,
                    &mut self.stats,
                    self.opts,
                    &self.name,
                    &mut f,
                );
                self.buf = line;
                self.buf.clear();
                return flow.map(|_| ());
            }
            let Some(n) = find_lf(avail) else {
                self.buf.extend_from_slice(avail);
                let l = avail.len();
                self.input.consume(l);
                continue;
            };
            self.line_no += 1;
            let flow = if self.buf.is_empty() {
                let flow = one_line(
                    &avail[..n],
                    true,
                    self.line_no,
                    &mut self.stats,
                    self.opts,
                    &self.name,
                    &mut f,
                );
                self.input.consume(n + 1);
                flow
            } else {
                self.buf.extend_from_slice(&avail[..n]);
                self.input.consume(n + 1);
                let flow = one_line(
                    &self.buf,
                    true,
                    self.line_no,
                    &mut self.stats,
                    self.opts,
                    &self.name,
                    &mut f,
                );
                self.buf.clear();
                flow
            };
            match flow {
                Ok(Flow::Go) => {}
                Ok(Flow::Stop) => return Ok(()),
                Ok(Flow::End) => {
                    self.done = true;
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// What [`EventReader::for_each_event`] does after a line.
enum Flow {
    Go,
    /// The caller asked to stop.
    Stop,
    /// A cut-off last line: the end.
    End,
}

/// One line (without its LF) for [`EventReader::for_each_event`].
fn one_line(
    raw: &[u8],
    complete: bool,
    line_no: usize,
    stats: &mut ReadStats,
    opts: ReadOptions,
    name: &str,
    f: &mut impl FnMut(Event<'_>, usize) -> bool,
) -> Result<Flow, ReadError> {
    stats.lines += 1;
    let line = trim_line(raw);
    if line.is_empty() {
        return Ok(Flow::Go);
    }
    let mut scratch = Vec::new();
    let (line, text) = opts.rewritten(line, &mut scratch);
    match parse::<Borrowed>(line, text, None) {
        Ok(event) => Ok(if f(event, line_no) { Flow::Go } else { Flow::Stop }),
        Err(_) if !complete => {
            stats.truncated_last_line = true;
            Ok(Flow::End)
        }
        Err(_) if opts.lenient => {
            stats.bad_lines += 1;
            Ok(Flow::Go)
        }
        Err(reason) => Err(ReadError::Malformed {
            source_name: name.to_string(),
            line: line_no,
            reason,
        }),
    }
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            self.buf.clear();
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(ReadError::Io {
                        path: PathBuf::from(&self.name),
                        source: e,
                    }));
                }
            }
            self.line_no += 1;
            self.stats.lines += 1;
            let complete = self.buf.last() == Some(&b'\n');
            let line = trim_line(&self.buf);
            if line.is_empty() {
                continue;
            }
            let mut scratch = Vec::new();
            let (line, text) = self.opts.rewritten(line, &mut scratch);
            let mut extra = Vec::new();
            match parse::<Copied>(line, text, Some(&mut extra)).map(|e| (e, extra)) {
                Ok((event, extra)) => {
                    return Some(Ok(Record {
                        event,
                        extra,
                        source: self.name.clone(),
                        line_no: self.line_no,
                    }));
                }
                Err(_) if !complete => {
                    self.stats.truncated_last_line = true;
                    self.done = true;
                    return None;
                }
                Err(reason) if self.opts.lenient => {
                    let _ = reason;
                    self.stats.bad_lines += 1;
                }
                Err(reason) => {
                    return Some(Err(ReadError::Malformed {
                        source_name: self.name.clone(),
                        line: self.line_no,
                        reason,
                    }));
                }
            }
        }
    }
}

fn trim_line(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &b[..end]
}

/// Reads one file. Returns its records and counts.
pub fn read_file(path: &Path, opts: ReadOptions) -> Result<(Vec<Record>, ReadStats), ReadError> {
    let f = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut r = EventReader::new(BufReader::new(f), path.display().to_string(), opts);
    let mut out = Vec::new();
    for rec in r.by_ref() {
        out.push(rec?);
    }
    Ok((out, r.stats()))
}

/// Reads a file, or every regular file of a directory target (in name
/// order, the `git-trace2-discard` sentinel included). Counts are summed.
pub fn read_path(path: &Path, opts: ReadOptions) -> Result<(Vec<Record>, ReadStats), ReadError> {
    if !path.is_dir() {
        return read_file(path, opts);
    }
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(io_err)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut all = Vec::new();
    let mut stats = ReadStats::default();
    for f in files {
        let (recs, st) = read_file(&f, opts)?;
        all.extend(recs);
        stats.lines += st.lines;
        stats.bad_lines += st.bad_lines;
        stats.truncated_last_line |= st.truncated_last_line;
    }
    Ok((all, stats))
}

/// Groups records by SID, keeping stream order within each SID.
pub fn group_by_sid(records: &[Record]) -> BTreeMap<&str, Vec<&Record>> {
    let mut m: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records {
        m.entry(r.event.sid.as_ref()).or_default().push(r);
    }
    m
}

/// Fills in missing `time`s (brief streams) as `version.time + t_abs` of the
/// same SID, where both are known.
pub fn rebuild_brief_times(records: &mut [Record]) {
    let mut base: BTreeMap<String, Timestamp> = BTreeMap::new();
    for r in records.iter() {
        if let (EventKind::Version { .. }, Some(t)) = (&r.event.kind, r.event.time) {
            base.entry(r.event.sid.to_string()).or_insert(t);
        }
    }
    for r in records.iter_mut() {
        if r.event.time.is_none()
            && let (Some(b), Some(t_abs)) = (base.get(r.event.sid.as_ref()), r.event.t_abs)
        {
            r.event.time = Some(b.add_seconds(t_abs));
        }
    }
}

/// Event streams carry `nesting` only on region and data events. This sets
/// it on every other event from the region events seen before it on the
/// same SID and thread (as the perf target needs for its dots). Exact when
/// the stream holds every region (`GIT_TRACE2_EVENT_NESTING` high enough).
pub fn infer_nesting(records: &mut [Record]) {
    let mut depth: BTreeMap<(String, String), u32> = BTreeMap::new();
    for r in records.iter_mut() {
        let key = (r.event.sid.to_string(), r.event.thread.to_string());
        match r.event.kind {
            EventKind::RegionEnter { .. } => {
                depth.insert(key, r.event.nesting.saturating_add(1));
            }
            EventKind::RegionLeave { .. } | EventKind::Data { .. } | EventKind::DataJson { .. } => {
                depth.insert(key, r.event.nesting);
            }
            _ => r.event.nesting = depth.get(&key).copied().unwrap_or(1),
        }
    }
}

/// The keys [`parse`] asks for: each line's members are found by key in one slot lookup, not by
/// comparing names member after member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Event,
    Sid,
    Thread,
    Time,
    File,
    Line,
    Repo,
    TAbs,
    TRel,
    Nesting,
    Evt,
    Exe,
    Argv,
    Code,
    Signo,
    Msg,
    Fmt,
    Path,
    Ancestry,
    Name,
    Hierarchy,
    Alias,
    ChildId,
    ChildClass,
    HookName,
    Cd,
    UseShell,
    Pid,
    Ready,
    ExecId,
    Scope,
    Param,
    Value,
    Worktree,
    Category,
    Label,
    Key,
    Intervals,
    TTotal,
    TMin,
    TMax,
    Count,
}

impl Field {
    const COUNT: usize = Field::Count as usize + 1;

    /// The key's name on the line.
    fn name(self) -> &'static str {
        const NAMES: [&str; Field::COUNT] = [
            "event",
            "sid",
            "thread",
            "time",
            "file",
            "line",
            "repo",
            "t_abs",
            "t_rel",
            "nesting",
            "evt",
            "exe",
            "argv",
            "code",
            "signo",
            "msg",
            "fmt",
            "path",
            "ancestry",
            "name",
            "hierarchy",
            "alias",
            "child_id",
            "child_class",
            "hook_name",
            "cd",
            "use_shell",
            "pid",
            "ready",
            "exec_id",
            "scope",
            "param",
            "value",
            "worktree",
            "category",
            "label",
            "key",
            "intervals",
            "t_total",
            "t_min",
            "t_max",
            "count",
        ];
        NAMES[self as usize]
    }

    /// The key named `k` (decoded), if [`parse`] asks for it. (Measured slower: the name's
    /// bytes packed into one number and matched, and a perfect hash into a table of names
    /// with one compare; the compiler's match on the byte strings is the fastest here.)
    fn of(k: &[u8]) -> Option<Field> {
        Some(match k {
            b"event" => Field::Event,
            b"sid" => Field::Sid,
            b"thread" => Field::Thread,
            b"time" => Field::Time,
            b"file" => Field::File,
            b"line" => Field::Line,
            b"repo" => Field::Repo,
            b"t_abs" => Field::TAbs,
            b"t_rel" => Field::TRel,
            b"nesting" => Field::Nesting,
            b"evt" => Field::Evt,
            b"exe" => Field::Exe,
            b"argv" => Field::Argv,
            b"code" => Field::Code,
            b"signo" => Field::Signo,
            b"msg" => Field::Msg,
            b"fmt" => Field::Fmt,
            b"path" => Field::Path,
            b"ancestry" => Field::Ancestry,
            b"name" => Field::Name,
            b"hierarchy" => Field::Hierarchy,
            b"alias" => Field::Alias,
            b"child_id" => Field::ChildId,
            b"child_class" => Field::ChildClass,
            b"hook_name" => Field::HookName,
            b"cd" => Field::Cd,
            b"use_shell" => Field::UseShell,
            b"pid" => Field::Pid,
            b"ready" => Field::Ready,
            b"exec_id" => Field::ExecId,
            b"scope" => Field::Scope,
            b"param" => Field::Param,
            b"value" => Field::Value,
            b"worktree" => Field::Worktree,
            b"category" => Field::Category,
            b"label" => Field::Label,
            b"key" => Field::Key,
            b"intervals" => Field::Intervals,
            b"t_total" => Field::TTotal,
            b"t_min" => Field::TMin,
            b"t_max" => Field::TMax,
            b"count" => Field::Count,
            _ => return None,
        })
    }
}

/// A line's members in line order (each taken out once used), and where each [`Field`] is
/// among them: its first occurrence, the one taken (later ones stay for [`Record::extra`]).
struct Members<'a> {
    list: Vec<Option<RawMember<'a>>>,
    /// 1 + the index in `list`; 0: absent.
    slot: [u32; Field::COUNT],
}

impl<'a> Members<'a> {
    /// Appends `m`, the member of field `k` (if [`parse`] asks for one by its key).
    fn put(&mut self, k: Option<usize>, m: RawMember<'a>) {
        if let Some(s) = k.map(|k| &mut self.slot[k])
            && *s == 0
        {
            *s = u32::try_from(self.list.len() + 1).unwrap_or(0);
        }
        self.list.push(Some(m));
    }
}

impl<'a> json::PushMember<'a> for Members<'a> {
    fn push_member(&mut self, m: RawMember<'a>) {
        let k = if m.key_esc {
            Field::of(m.key_string().as_bytes())
        } else {
            Field::of(m.key)
        };
        self.put(k.map(|k| k as usize), m);
    }

    fn push_lead(&mut self, m: RawMember<'a>, lead: usize) {
        // `Field`'s first six are `json::LEAD`, in its order (tested).
        self.put(Some(lead), m);
    }
}

/// The members of one line, taken one by one as the event's kind asks for them; what is left
/// becomes [`Record::extra`]. Values are decoded only when taken.
struct Fields<'a, K> {
    members: Members<'a>,
    /// The line, when it is UTF-8 (checked once for all its strings).
    text: Option<(&'a str, usize)>,
    keep: std::marker::PhantomData<K>,
}

/// How a string lying on the line becomes the event's: copied ([`parse_line`], `'static`) or
/// borrowed from the line ([`parse_line_borrowed`]).
trait Keep<'a, 'o> {
    fn keep(s: &'a str) -> Str<'o>;
}

/// Strings copied out of the line.
struct Copied;
impl<'a, 'o> Keep<'a, 'o> for Copied {
    fn keep(s: &'a str) -> Str<'o> {
        Cow::Owned(s.to_owned())
    }
}

/// Strings borrowed from the line (unless they need unescaping).
struct Borrowed;
impl<'a> Keep<'a, 'a> for Borrowed {
    fn keep(s: &'a str) -> Str<'a> {
        Cow::Borrowed(s)
    }
}

impl<'a, K> Fields<'a, K> {
    /// A string member that needs no decoding, as it lies on the line (UTF-8 lines only).
    fn plain(&self, m: &RawMember<'a>) -> Option<&'a str> {
        if m.kind != Kind::Str(false) {
            return None;
        }
        self.unquoted(m.raw)
    }

    /// A string without escapes (`raw`: its text on the line, quotes included), as it lies on
    /// the line (UTF-8 lines only).
    fn unquoted(&self, raw: &'a [u8]) -> Option<&'a str> {
        let (text, base) = self.text?;
        let at = (raw.as_ptr() as usize).checked_sub(base)?;
        text.get(at + 1..(at + raw.len()).checked_sub(1)?)
    }

    fn take_member(&mut self, key: Field) -> Option<RawMember<'a>> {
        let m = &mut self.members;
        let i = std::mem::take(&mut m.slot[key as usize]).checked_sub(1)?;
        m.list.get_mut(i as usize)?.take()
    }
    fn take(&mut self, key: Field) -> Option<Value> {
        self.take_member(key).map(|m| m.value())
    }
    fn take_raw(&mut self, key: Field) -> Option<&'a [u8]> {
        self.take_member(key).map(|m| m.raw)
    }
    fn str<'o>(&mut self, key: Field) -> Result<Str<'o>, String>
    where
        K: Keep<'a, 'o>,
    {
        self.opt_str(key)?
            .ok_or_else(|| format!("missing \"{}\"", key.name()))
    }
    fn opt_str<'o>(&mut self, key: Field) -> Result<Option<Str<'o>>, String>
    where
        K: Keep<'a, 'o>,
    {
        match self.take_member(key) {
            None => Ok(None),
            Some(m) if m.kind == Kind::Null => Ok(None),
            Some(m) => match self.plain(&m).map(K::keep).or_else(|| m.string().map(Cow::Owned)) {
                Some(s) => Ok(Some(s)),
                None => Err(format!("\"{}\" is not a string", key.name())),
            },
        }
    }
    fn int(&mut self, key: Field) -> Result<i64, String> {
        match self.take_member(key) {
            None => Err(format!("missing \"{}\"", key.name())),
            Some(m) => as_i64(&m).ok_or_else(|| format!("\"{}\" is not an integer", key.name())),
        }
    }
    fn int32(&mut self, key: Field) -> Result<i32, String> {
        let v = self.int(key)?;
        i32::try_from(v).map_err(|_| format!("\"{}\" out of range", key.name()))
    }
    fn uint(&mut self, key: Field) -> Result<u64, String> {
        let v = self.int(key)?;
        u64::try_from(v).map_err(|_| format!("\"{}\" is negative", key.name()))
    }
    fn float(&mut self, key: Field) -> Result<Option<f64>, String> {
        match self.take_member(key) {
            None => Ok(None),
            // What git writes, read in place; anything else by the float parser.
            Some(m) if let Some(v) = json::plain_f64(m.raw).filter(|_| m.kind == Kind::Number) => Ok(Some(v)),
            Some(m) => m
                .number()
                // Out of f64's range is not a number JSON can hold (see `Value::as_f64`).
                .and_then(|n| n.parse().ok().filter(|f: &f64| f.is_finite()))
                .map(Some)
                .ok_or_else(|| format!("\"{}\" is not a number", key.name())),
        }
    }
    fn f_or0(&mut self, key: Field) -> Result<f64, String> {
        Ok(self.float(key)?.unwrap_or(0.0))
    }
    /// An array of strings; each borrowed or copied as [`Self::opt_str`] does (no JSON value
    /// tree built in between).
    fn strings<'o>(&mut self, key: Field) -> Result<Vec<Str<'o>>, String>
    where
        K: Keep<'a, 'o>,
    {
        let Some(m) = self.take_member(key) else {
            return Ok(Vec::new());
        };
        if m.kind != Kind::Array {
            return Err(format!("\"{}\" is not an array", key.name()));
        }
        let mut out = Vec::new();
        let mut bad = false;
        json::array_items(m.raw, |raw, kind| {
            let s = match kind {
                Kind::Str(false) => match self.unquoted(raw) {
                    Some(t) => K::keep(t),
                    None => Cow::Owned(json::lossy(
                        raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default(),
                    )),
                },
                Kind::Str(true) => Cow::Owned(json::unescape(raw).unwrap_or_default()),
                _ => {
                    bad = true;
                    return false;
                }
            };
            out.push(s);
            true
        });
        if bad {
            return Err(format!("\"{}\" holds a non-string", key.name()));
        }
        Ok(out)
    }
}

/// [`Value::as_i64`] on a member, without building the value.
fn as_i64(m: &RawMember<'_>) -> Option<i64> {
    if m.kind == Kind::Number
        && let Some(v) = json::plain_i64(m.raw)
    {
        return Some(v);
    }
    let n = m.number()?;
    n.parse().ok().or_else(|| {
        let f: f64 = n.parse().ok()?;
        (f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64)
    })
}

/// Parses one event line (without its LF) into an event and its unknown keys.
///
/// One pass checks the line's JSON and notes where each member lies; a field is decoded only
/// when the event's kind asks for it, and only the event's own strings are copied (a line costs
/// a few small allocations rather than three per member: about 4× the throughput of decoding
/// every member first, measured with `benches/ingest.rs` of the proctrace crate).
pub fn parse_line(line: &[u8]) -> Result<(Event<'static>, Vec<(String, Value)>), String> {
    let mut extra = Vec::new();
    let event = parse::<Copied>(line, std::str::from_utf8(line).ok(), Some(&mut extra))?;
    Ok((event, extra))
}

/// [`parse_line`] without copies: the event's strings borrow from `line` where they need no
/// unescaping, and unknown keys are not kept (what a reader that uses each event once
/// wants). On git's streams 7–30% more MB/s than `parse_line` in rounds measured side by side
/// on a loaded machine (`/tmp` harness over the `bench/run --only ingest` stream).
pub fn parse_line_borrowed(line: &[u8]) -> Result<Event<'_>, String> {
    parse::<Borrowed>(line, std::str::from_utf8(line).ok(), None)
}

/// Parses `line`; `text` is the line as text when it is UTF-8 (its strings are then taken from
/// it as they lie, checked once for all).
fn parse<'a, 'o, S: Keep<'a, 'o>>(
    line: &'a [u8],
    text: Option<&'a str>,
    extra: Option<&mut Vec<(String, Value)>>,
) -> Result<Event<'o>, String> {
    let mut members = Members {
        list: Vec::with_capacity(16),
        slot: [0; Field::COUNT],
    };
    if scan_compact(line, &mut members).is_none() {
        members.list.clear();
        members.slot = [0; Field::COUNT];
        scan_object_line(line, &mut members)?;
    }
    let mut f = Fields::<S> {
        members,
        text: text.map(|t| (t, line.as_ptr() as usize)),
        keep: std::marker::PhantomData,
    };
    let name_m = f.take_member(Field::Event).ok_or("missing \"event\"")?;
    let name_owned;
    let name: &str = match f.plain(&name_m) {
        Some(n) => n,
        None if name_m.kind == Kind::Null => return Err("missing \"event\"".into()),
        None => {
            name_owned = name_m.string().ok_or("\"event\" is not a string")?;
            &name_owned
        }
    };
    let sid = f.str(Field::Sid)?;
    let thread = match f.take_member(Field::Thread) {
        None => Cow::Borrowed(""),
        Some(m) if m.kind == Kind::Null => Cow::Borrowed(""),
        // Most events come from the main thread: no copy of its name.
        Some(m) if f.plain(&m) == Some("main") => Cow::Borrowed("main"),
        Some(m) => match f.plain(&m) {
            Some(t) => S::keep(t),
            None => Cow::Owned(m.string().ok_or("\"thread\" is not a string")?),
        },
    };
    let time = match f.take_member(Field::Time) {
        None => None,
        Some(m) if m.kind == Kind::Null => None,
        Some(m) => {
            let owned;
            let t = match f.plain(&m) {
                Some(t) => t,
                None => {
                    owned = m.string().ok_or("\"time\" is not a string")?;
                    &owned
                }
            };
            Some(Timestamp::parse_utc(t).ok_or_else(|| format!("bad \"time\" '{t}'"))?)
        }
    };
    let file = f.opt_str(Field::File)?;
    let line_nr = match f.take_member(Field::Line) {
        Some(m) => u32::try_from(as_i64(&m).ok_or("\"line\" is not an integer")?).unwrap_or(0),
        None => 0,
    };
    let repo = match f.take_member(Field::Repo) {
        Some(m) => Some(as_i64(&m).ok_or("\"repo\" is not an integer")?),
        None => None,
    };
    let t_abs = f.float(Field::TAbs)?;
    let nesting = match f.take_member(Field::Nesting) {
        Some(m) => u32::try_from(as_i64(&m).ok_or("\"nesting\" is not an integer")?).unwrap_or(1),
        None => 1,
    };
    use EventKind as K;
    let kind = match name {
        "version" => K::Version {
            evt: f.str(Field::Evt)?,
            exe: f.opt_str(Field::Exe)?.unwrap_or(Cow::Borrowed("")),
        },
        "too_many_files" => K::TooManyFiles,
        "start" => K::Start {
            argv: f.strings(Field::Argv)?,
        },
        "exit" => K::Exit {
            code: f.int32(Field::Code)?,
        },
        "atexit" => K::Atexit {
            code: f.int32(Field::Code)?,
        },
        "signal" => K::Signal {
            signo: f.int32(Field::Signo)?,
        },
        "error" => K::Error {
            msg: f.opt_str(Field::Msg)?,
            fmt: f.opt_str(Field::Fmt)?,
        },
        "cmd_path" => K::CmdPath {
            path: f.str(Field::Path)?,
        },
        "cmd_ancestry" => K::CmdAncestry {
            ancestry: f.strings(Field::Ancestry)?,
        },
        "cmd_name" => K::CmdName {
            name: f.str(Field::Name)?,
            hierarchy: f.opt_str(Field::Hierarchy)?,
        },
        "cmd_mode" => K::CmdMode {
            name: f.str(Field::Name)?,
        },
        "alias" => K::Alias {
            alias: f.str(Field::Alias)?,
            argv: f.strings(Field::Argv)?,
        },
        "child_start" => K::ChildStart {
            child_id: f.int(Field::ChildId)?,
            child_class: f.opt_str(Field::ChildClass)?.unwrap_or(Cow::Borrowed("?")),
            hook_name: f.opt_str(Field::HookName)?,
            cd: f.opt_str(Field::Cd)?,
            use_shell: f.take(Field::UseShell).and_then(|v| v.as_bool()).unwrap_or(false),
            git_cmd: false,
            argv: f.strings(Field::Argv)?,
        },
        "child_exit" => K::ChildExit {
            child_id: f.int(Field::ChildId)?,
            pid: f.int(Field::Pid)?,
            code: f.int32(Field::Code)?,
            t_rel: f.f_or0(Field::TRel)?,
        },
        "child_ready" => {
            let child_id = f.int(Field::ChildId)?;
            let pid = f.int(Field::Pid)?;
            let r = f.str(Field::Ready)?;
            let ready = ReadyState::parse(&r).ok_or_else(|| format!("unknown \"ready\" '{r}'"))?;
            K::ChildReady {
                child_id,
                pid,
                ready,
                t_rel: f.f_or0(Field::TRel)?,
            }
        }
        "exec" => K::Exec {
            exec_id: f.int(Field::ExecId)?,
            exe: f.opt_str(Field::Exe)?,
            argv: f.strings(Field::Argv)?,
        },
        "exec_result" => K::ExecResult {
            exec_id: f.int(Field::ExecId)?,
            code: f.int32(Field::Code)?,
        },
        "thread_start" => K::ThreadStart,
        "thread_exit" => K::ThreadExit {
            t_rel: f.f_or0(Field::TRel)?,
        },
        "def_param" => K::DefParam {
            scope: f.opt_str(Field::Scope)?,
            param: f.str(Field::Param)?,
            value: f.opt_str(Field::Value)?,
        },
        "def_repo" => K::DefRepo {
            worktree: f.str(Field::Worktree)?,
        },
        "region_enter" => K::RegionEnter {
            category: f.opt_str(Field::Category)?,
            label: f.opt_str(Field::Label)?,
            msg: f.opt_str(Field::Msg)?,
        },
        "region_leave" => K::RegionLeave {
            t_rel: f.f_or0(Field::TRel)?,
            category: f.opt_str(Field::Category)?,
            label: f.opt_str(Field::Label)?,
            msg: f.opt_str(Field::Msg)?,
        },
        "data" => {
            let t_rel = f.f_or0(Field::TRel)?;
            let category = f.str(Field::Category)?;
            let key = f.str(Field::Key)?;
            let value = match f.take(Field::Value) {
                Some(Value::String(s)) => Cow::Owned(s),
                Some(Value::Number(n)) => Cow::Owned(n),
                _ => return Err("missing or bad \"value\"".into()),
            };
            K::Data {
                t_rel,
                category,
                key,
                value,
            }
        }
        "data_json" => {
            let t_rel = f.f_or0(Field::TRel)?;
            let category = f.str(Field::Category)?;
            let key = f.str(Field::Key)?;
            let raw = f.take_raw(Field::Value).ok_or("missing \"value\"")?;
            K::DataJson {
                t_rel,
                category,
                key,
                value: Cow::Owned(String::from_utf8_lossy(raw).into_owned()),
            }
        }
        "printf" => K::Printf {
            msg: f.opt_str(Field::Msg)?,
        },
        "timer" | "th_timer" => K::Timer {
            per_thread: name == "th_timer",
            category: f.str(Field::Category)?,
            name: f.str(Field::Name)?,
            intervals: f.uint(Field::Intervals)?,
            t_total: f.f_or0(Field::TTotal)?,
            t_min: f.f_or0(Field::TMin)?,
            t_max: f.f_or0(Field::TMax)?,
        },
        "counter" | "th_counter" => K::Counter {
            per_thread: name == "th_counter",
            category: f.str(Field::Category)?,
            name: f.str(Field::Name)?,
            count: f.uint(Field::Count)?,
        },
        _ => K::Other {
            name: Cow::Owned(name.to_owned()),
        },
    };
    if let Some(extra) = extra {
        extra.extend(
            f.members
                .list
                .into_iter()
                .flatten()
                .map(|m| (m.key_string(), m.value())),
        );
    }
    // Built where it is returned (the event is 248 bytes: each move of it is a copy).
    Ok(Event {
        sid,
        thread,
        time,
        file,
        line: line_nr,
        repo,
        nesting,
        t_abs,
        kind,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Found by fuzzing (`cargo fuzz run trace2_reader`): a number out of `f64`'s range read
    /// as infinity was written back by the event target as `inf`, which no reader takes. It is
    /// a bad line, as serde_json says ("number out of range").
    #[test]
    fn find_lf_finds_the_first_lf_anywhere() {
        for len in 0..40 {
            for at in 0..=len {
                let mut b: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                // Bytes that could fool a SWAR search: 0x0b (LF + 1), 0x8a (LF with its high bit).
                if len > 0 {
                    b[len - 1] = 0x8a;
                    b[0] = 0x0b;
                }
                let want = (at < len).then_some(at);
                if at < len {
                    b[at] = b'\n';
                    if at + 1 < len {
                        b[at + 1] = b'\n';
                    }
                }
                assert_eq!(json::find_lf(&b), want, "{b:?}");
            }
        }
    }

    #[test]
    fn memchr2_finds_the_first_quote_or_backslash_anywhere() {
        for len in 0..40 {
            for at in 0..=len {
                for (x, y) in [(b'"', b'\\'), (b'\\', b'"')] {
                    // Bytes that could fool a SWAR search: one above each, each with its high bit.
                    let fill = [b'#', b']', 0xa2, 0xdc];
                    let mut b: Vec<u8> = (0..len).map(|i| fill[i % fill.len()]).collect();
                    let want = (at < len).then_some(at);
                    if at < len {
                        b[at] = x;
                        if at + 1 < len {
                            b[at + 1] = y;
                        }
                    }
                    assert_eq!(json::memchr2(b'"', b'\\', &b), want, "{b:?}");
                }
            }
        }
    }

    #[test]
    fn for_each_event_matches_the_iterator_across_buffer_fills() {
        let text = concat!(
            "{\"event\":\"version\",\"sid\":\"a\",\"thread\":\"main\",\"evt\":\"4\",\"exe\":\"x\"}\r\n",
            "\n",
            "not json\n",
            "{\"event\":\"start\",\"sid\":\"a/b\",\"thread\":\"main\",\"t_abs\":0.1,\"argv\":[\"git\",\"a b\"]}\n",
            "{\"event\":\"exit\",\"sid\":\"a\",\"thr"
        );
        for cap in [1, 7, 64, 4096] {
            for lenient in [true, false] {
                let opts = ReadOptions {
                    lenient,
                    ..Default::default()
                };
                let mut it = EventReader::new(io::BufReader::with_capacity(cap, text.as_bytes()), "m", opts);
                let mut want: Vec<Result<(Event<'static>, usize), String>> = Vec::new();
                for r in it.by_ref() {
                    let stop = r.is_err();
                    want.push(r.map(|r| (r.event, r.line_no)).map_err(|e| e.to_string()));
                    if stop {
                        break;
                    }
                }
                let mut each =
                    EventReader::new(io::BufReader::with_capacity(cap, text.as_bytes()), "m", opts);
                let mut got: Vec<Result<(Event<'static>, usize), String>> = Vec::new();
                if let Err(e) = each.for_each_event(|e, n| {
                    got.push(Ok((e.into_owned(), n)));
                    true
                }) {
                    got.push(Err(e.to_string()));
                }
                assert_eq!(got, want, "capacity {cap}, lenient {lenient}");
                if lenient {
                    assert_eq!(each.stats(), it.stats());
                    assert_eq!((each.stats().lines, each.stats().bad_lines), (5, 1));
                    assert!(each.stats().truncated_last_line);
                }
            }
        }
    }

    #[test]
    fn borrowed_parse_is_the_same_event_and_borrows_plain_strings() {
        let lines = [
            r#"{"event":"region_enter","sid":"a/b","thread":"th02:preload","time":"2026-11-30T10:00:00.000001Z","file":"x.c","line":3,"repo":1,"nesting":2,"category":"c\"q","label":"l\u00e9","msg":"m","zz":[1]}"#,
            r#"{"event":"child_start","sid":"a","thread":"main","child_id":0,"child_class":"hook","use_shell":true,"argv":["a\nb","c"]}"#,
            r#"{"event":"data","sid":"a","thread":"main","t_abs":0.1,"t_rel":0.1,"nesting":1,"category":"fetch","key":"k","value":5}"#,
            r#"{"event":"mystery","sid":"a"}"#,
        ];
        for l in lines {
            let owned = parse_line(l.as_bytes()).unwrap().0;
            let borrowed = parse_line_borrowed(l.as_bytes()).unwrap();
            assert_eq!(borrowed, owned, "{l}");
        }
        // Arrays of strings too: plain items borrowed, escaped ones decoded; a non-UTF-8 line
        // copies (lossily), as `parse_line` does.
        match parse_line_borrowed(lines[1].as_bytes()).unwrap().kind {
            EventKind::ChildStart { argv, .. } => {
                assert_eq!(argv, ["a\nb", "c"]);
                assert!(matches!(
                    (&argv[0], &argv[1]),
                    (Cow::Owned(_), Cow::Borrowed("c"))
                ));
            }
            k => panic!("{k:?}"),
        }
        let odd = b"{\"event\":\"start\",\"sid\":\"a\",\"argv\":[\"g\xffit\", \"x\" ,\"\\u00e9\"]}";
        assert_eq!(parse_line_borrowed(odd).unwrap(), parse_line(odd).unwrap().0);
        match parse_line(odd).unwrap().0.kind {
            EventKind::Start { argv } => assert_eq!(argv, ["g\u{fffd}it", "x", "é"]),
            k => panic!("{k:?}"),
        }
        for bad in [
            &br#"{"event":"start","sid":"a","argv":["git",1]}"#[..],
            br#"{"event":"start","sid":"a","argv":"git"}"#,
        ] {
            assert!(parse_line_borrowed(bad).is_err());
            assert_eq!(parse_line_borrowed(bad).err(), parse_line(bad).err());
        }
        let e = parse_line_borrowed(lines[0].as_bytes()).unwrap();
        assert!(matches!(e.sid, Cow::Borrowed("a/b")));
        assert!(matches!(e.thread, Cow::Borrowed("th02:preload")));
        match e.kind {
            EventKind::RegionEnter { category, label, .. } => {
                assert_eq!(
                    (category.as_deref(), label.as_deref()),
                    (Some("c\"q"), Some("lé"))
                );
                assert!(matches!(category, Some(Cow::Owned(_))), "unescaped: a copy");
            }
            k => panic!("{k:?}"),
        }
        // Bad lines are refused alike.
        for bad in [
            r#"{"event":"exit","sid":"a"}"#,
            r#"{"sid":"a"}"#,
            "{",
            r#"{"event":"x","sid":1}"#,
        ] {
            assert_eq!(
                parse_line_borrowed(bad.as_bytes()).err(),
                parse_line(bad.as_bytes()).err()
            );
        }
    }

    /// The compact scanner's six leading keys are the first six fields, in order.
    #[test]
    fn the_leading_keys_are_the_first_fields() {
        for (i, k) in json::LEAD.iter().enumerate() {
            assert_eq!(Field::of(k.as_bytes()).map(|f| f as usize), Some(i), "{k}");
            assert_eq!(Field::of(k.as_bytes()).map(Field::name), Some(*k));
        }
    }

    #[test]
    fn a_number_out_of_range_is_a_bad_line() {
        let line = b"{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":0.004e875,\"code\":0}";
        let e = parse_line(line).unwrap_err();
        assert!(e.contains("t_abs"), "{e}");
        // Any float field, not only the header's (found again after the scanner rewrite).
        let data = br#"{"event":"data","sid":"s","thread":"main","t_rel":1e999,"category":"c","key":"k","value":"0"}"#;
        let e = parse_line(data).unwrap_err();
        assert!(e.contains("t_rel"), "{e}");
        // A huge t_abs in a brief stream makes a time that must still be written readably.
        let t = Timestamp::parse_utc("2026-11-30T19:17:47.196131Z").unwrap();
        for secs in [8.9e21, -8.9e21] {
            let mut out = Vec::new();
            t.add_seconds(secs).write_utc_extended(&mut out);
            let text = String::from_utf8(out).unwrap();
            assert!(Timestamp::parse_utc(&text).is_some(), "{text}");
        }
        let ok =
            parse_line(b"{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":4e87,\"code\":0}")
                .unwrap();
        assert_eq!(ok.0.t_abs, Some(4e87));
        let mut out = Vec::new();
        assert!(crate::format::format_event(
            crate::format::TargetKind::Event,
            &ok.0,
            &crate::format::FormatOptions::default(),
            &mut out
        ));
        parse_line(&out).unwrap();
    }

    #[test]
    fn lenient_and_strict_and_truncated() {
        let input: &[u8] =
            b"{\"event\":\"version\",\"sid\":\"s\",\"thread\":\"main\",\"evt\":\"4\",\"exe\":\"x\"}\n\
            garbage\n\
            {\"event\":\"new_thing\",\"sid\":\"s\",\"thread\":\"main\",\"zz\":1}\n\
            {\"event\":\"exit\",\"sid\":\"s\",\"thr";
        let recs: Vec<_> = EventReader::new(
            input,
            "mem",
            ReadOptions {
                lenient: true,
                ..Default::default()
            },
        )
        .collect();
        assert_eq!(recs.len(), 2);
        let mut r = EventReader::new(
            input,
            "mem",
            ReadOptions {
                lenient: true,
                ..Default::default()
            },
        );
        for _ in r.by_ref() {}
        assert_eq!(
            r.stats(),
            ReadStats {
                lines: 4,
                bad_lines: 1,
                truncated_last_line: true
            }
        );
        let strict: Vec<_> = EventReader::new(input, "mem", ReadOptions::default()).collect();
        match &strict[1] {
            Err(ReadError::Malformed {
                source_name, line, ..
            }) => assert_eq!((source_name.as_str(), *line), ("mem", 2)),
            other => panic!("{other:?}"),
        }
        let other = strict[2].as_ref().unwrap();
        assert_eq!(
            other.event.kind,
            EventKind::Other {
                name: "new_thing".into()
            }
        );
        assert_eq!(other.extra, vec![("zz".to_string(), Value::Number("1".into()))]);
    }

    #[test]
    fn missing_required_field_is_malformed() {
        assert!(parse_line(br#"{"event":"exit","sid":"s","thread":"main","t_abs":1.0}"#).is_err());
        assert!(
            parse_line(br#"{"event":"child_ready","sid":"s","child_id":0,"pid":1,"ready":"maybe"}"#).is_err()
        );
    }
}
