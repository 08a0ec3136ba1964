//! JSON Lines: one object per lifecycle fact, for tools.
//!
//! Every line has `event` and `ts` (seconds on the kernel's CLOCK_MONOTONIC, nine decimals);
//! process lines add `pid` and `ppid`. The first line (`start`) carries `wall_offset`, the
//! seconds to add to any `ts` for UTC wall time; the last (`end`) the totals.
//!
//! Every event name and key comes from [`crate::model::jsonl_schema`], which declares each
//! event's keys in the order written here (tests below check this writer against it: exactly the
//! declared keys, in that order, every one of them written by some line). The reference is
//! `docs/json-lines.md`. Must stay byte-identical for the same records (the golden files).

use std::io;

use super::json;
use super::{LineWriter, Sink};
use crate::model::bytes;
use crate::model::event::{DataValue, ExitStatus};
use crate::model::jsonl_schema::{EventName, Key};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{Fact, ProcessRecord, Tracker};

/// The JSON Lines sink.
pub struct JsonLines {
    w: LineWriter,
    redact: bool,
    /// The start line's `refused`, said again on the end line.
    refused: Vec<String>,
}

impl JsonLines {
    /// Writes to `out`; `redact` hides URL credentials in argv.
    pub fn new(out: super::LineDest, redact: bool) -> Self {
        JsonLines {
            w: LineWriter::new(out),
            redact,
            refused: Vec::new(),
        }
    }
}

/// `,"argv":[…]` (or `null`), URL credentials redacted when asked; then, when a word is not
/// UTF-8, `,"argv_base64":[…]` with the exact bytes of each such word
/// ([bytes-in-text](crate::model::bytes): the words are written as standard lossy text).
fn argv_field<S: AsRef<str>, I>(b: &mut Vec<u8>, argv: Option<I>, redact: bool)
where
    I: IntoIterator<Item = S>,
    I::IntoIter: Clone,
{
    key(b, Key::Argv);
    let Some(a) = argv else {
        b.extend_from_slice(b"null");
        return;
    };
    let words = a.into_iter();
    // Redaction reads an argv in order (`--password V`); each pass has its own, the same result.
    fn word<'a>(r: &mut crate::redact::Argv, s: &'a str, redact: bool) -> std::borrow::Cow<'a, str> {
        match redact {
            true => r.word(s),
            false => std::borrow::Cow::Borrowed(s),
        }
    }
    b.push(b'[');
    let mut exact = true;
    let mut r = crate::redact::Argv::new();
    for (i, s) in words.clone().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        let w = word(&mut r, s.as_ref(), redact);
        if bytes::is_exact(&w) {
            json::string(b, &w);
        } else {
            exact = false;
            json::string(b, &bytes::lossy(&w));
        }
    }
    b.push(b']');
    if exact {
        return;
    }
    key(b, Key::ArgvBase64);
    b.push(b'[');
    let mut r = crate::redact::Argv::new();
    for (i, s) in words.enumerate() {
        if i > 0 {
            b.push(b',');
        }
        let w = word(&mut r, s.as_ref(), redact);
        if bytes::is_exact(&w) {
            b.extend_from_slice(b"null");
        } else {
            base64_string(b, &bytes::decode(&w));
        }
    }
    b.push(b']');
}

/// `"…"`: `raw` in standard base64.
fn base64_string(b: &mut Vec<u8>, raw: &[u8]) {
    use base64::Engine as _;
    b.push(b'"');
    let at = b.len();
    b.resize(at + base64::encoded_len(raw.len(), true).unwrap_or(0), 0);
    let n = base64::engine::general_purpose::STANDARD
        .encode_slice(raw, &mut b[at..])
        .unwrap_or(0);
    b.truncate(at + n);
    b.push(b'"');
}

/// `,"key":` (the bytes before `key`'s value).
fn key(b: &mut Vec<u8>, k: Key) {
    b.extend_from_slice(k.lead().as_bytes());
}

/// `,"key":N`.
fn int_field(b: &mut Vec<u8>, k: Key, v: i64) {
    key(b, k);
    json::int(b, v);
}

/// `,"key":S.NNNNNNNNN`.
fn seconds_field(b: &mut Vec<u8>, k: Key, ns: u64) {
    key(b, k);
    json::seconds(b, ns);
}

/// `,"key":true` or `false`.
fn bool_field(b: &mut Vec<u8>, k: Key, v: bool) {
    key(b, k);
    b.extend_from_slice(if v { b"true" } else { b"false" });
}

fn head(b: &mut Vec<u8>, event: EventName, ts: Option<u64>) {
    b.extend_from_slice(event.head().as_bytes());
    match ts {
        Some(ts) => json::seconds(b, ts),
        None => b.extend_from_slice(b"null"),
    }
}

fn proc_fields(b: &mut Vec<u8>, r: &ProcessRecord) {
    int_field(b, Key::Pid, r.pid as i64);
    int_field(b, Key::Ppid, r.ppid as i64);
}

/// `,"key":["a","b"]`, left out when `v` is empty.
fn strings_field(b: &mut Vec<u8>, k: Key, v: &[String]) {
    if v.is_empty() {
        return;
    }
    key(b, k);
    b.push(b'[');
    for (i, s) in v.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        json::string(b, s);
    }
    b.push(b']');
}

fn opt_str(b: &mut Vec<u8>, k: Key, v: Option<&str>) {
    if let Some(v) = v {
        key(b, k);
        json::string(b, v);
    }
}

/// [`opt_str`] for text that came from bytes (a path, a name): when it is not UTF-8, the
/// standard lossy text, then `k64` with the exact bytes.
fn opt_bytes(b: &mut Vec<u8>, k: Key, k64: Key, v: Option<&str>) {
    let Some(v) = v else { return };
    key(b, k);
    if bytes::is_exact(v) {
        json::string(b, v);
    } else {
        json::string(b, &bytes::lossy(v));
        key(b, k64);
        base64_string(b, &bytes::decode(v));
    }
}

impl Sink for JsonLines {
    fn start(&mut self, h: &Header) -> io::Result<()> {
        let redact = self.redact;
        self.refused.clone_from(&h.refused);
        let b = self.w.buf();
        head(b, EventName::Start, Some(h.ts));
        opt_str(b, Key::Tool, Some("proctrace"));
        opt_str(b, Key::Version, Some(&h.tool.version));
        opt_str(b, Key::Backend, h.backend.as_deref());
        strings_field(b, Key::Refused, &h.refused);
        if h.files {
            bool_field(b, Key::Files, true);
        }
        if !h.daemons.is_empty() {
            key(b, Key::Daemons);
            b.push(b'[');
            for (i, d) in h.daemons.iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                b.extend_from_slice(b"{\"daemon\":");
                json::string(b, d.daemon.name());
                b.extend_from_slice(b",\"pid\":");
                b.extend_from_slice(itoa::Buffer::new().format(d.pid).as_bytes());
                b.push(b'}');
            }
            b.push(b']');
        }
        key(b, Key::WallOffset);
        let off = h.real_minus_mono;
        if off < 0 {
            b.push(b'-');
        }
        json::seconds(b, off.unsigned_abs());
        match &h.mode {
            Mode::Run { argv } => {
                opt_str(b, Key::Mode, Some("run"));
                argv_field(b, Some(argv), redact);
            }
            Mode::Watch { root } => {
                opt_str(b, Key::Mode, Some("watch"));
                if let Some(r) = root {
                    int_field(b, Key::Root, *r as i64);
                }
            }
            Mode::Replay { path } => {
                opt_str(b, Key::Mode, Some("replay"));
                opt_str(b, Key::Capture, Some(&bytes::lossy(path)));
            }
            Mode::Analyze { inputs } => {
                opt_str(b, Key::Mode, Some("analyze"));
                key(b, Key::Inputs);
                b.push(b'[');
                for (i, p) in inputs.iter().enumerate() {
                    if i > 0 {
                        b.push(b',');
                    }
                    json::string(b, &bytes::lossy(p));
                }
                b.push(b']');
            }
        }
        self.w.buf().extend_from_slice(b"}\n");
        self.w.line_done()
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        match *fact {
            Fact::Lost { ts, count } => {
                let b = self.w.buf();
                head(b, EventName::Lost, ts);
                int_field(b, Key::Count, count as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Fork(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Fork, r.start_ns);
                proc_fields(b, r);
                if r.pre_existing {
                    bool_field(b, Key::PreExisting, true);
                }
                if let Some(d) = r.daemon_node() {
                    opt_str(b, Key::Daemon, Some(d.name()));
                }
                opt_bytes(b, Key::Comm, Key::CommBase64, r.comm.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Exec { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(e) = r.execs.get(index) else {
                    return Ok(());
                };
                let b = self.w.buf();
                head(b, EventName::Exec, Some(e.ts));
                proc_fields(b, r);
                let d = e.details.as_ref();
                argv_field(b, d.and_then(|d| d.argv.as_ref()), self.redact);
                opt_bytes(
                    b,
                    Key::Filename,
                    Key::FilenameBase64,
                    d.and_then(|d| d.filename.as_deref()),
                );
                opt_bytes(b, Key::Exe, Key::ExeBase64, d.and_then(|d| d.exe.as_deref()));
                opt_bytes(b, Key::Cwd, Key::CwdBase64, d.and_then(|d| d.cwd.as_deref()));
                if let Some(u) = d.and_then(|d| d.uid) {
                    int_field(b, Key::Uid, u as i64);
                }
                opt_bytes(b, Key::Comm, Key::CommBase64, r.comm.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Exit(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(x) = r.exit else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Exit, Some(x.ts));
                proc_fields(b, r);
                match x.status {
                    Some(ExitStatus::Code(c)) => int_field(b, Key::Code, c as i64),
                    Some(ExitStatus::Signal { signal, core }) => {
                        int_field(b, Key::Signal, signal as i64);
                        if core || r.coredump_signal {
                            bool_field(b, Key::Core, core);
                        }
                    }
                    None => {
                        key(b, Key::Code);
                        b.extend_from_slice(b"null");
                        bool_field(b, Key::ExitLost, true);
                    }
                }
                if let Some(d) = r.duration_ns() {
                    seconds_field(b, Key::Duration, d);
                }
                if r.background.is_some() {
                    bool_field(b, Key::Background, true);
                }
                if r.comm_at_exit {
                    opt_bytes(b, Key::Comm, Key::CommBase64, r.comm.as_deref());
                }
                if let Some(u) = r.usage.as_deref() {
                    json::usage_fields(b, u);
                }
                b.extend_from_slice(b"}\n");
            }
            Fact::Background(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(bg) = r.background else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Background, Some(bg.ts));
                proc_fields(b, r);
                opt_str(b, Key::State, Some(bg.state.as_str()));
                if let Some(s) = r.start_ns {
                    seconds_field(b, Key::TRel, bg.ts.saturating_sub(s));
                }
                argv_field(b, r.argv(), self.redact);
                b.extend_from_slice(b"}\n");
            }
            Fact::Uid { id, ts, ruid, euid } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Uid, Some(ts));
                proc_fields(b, r);
                int_field(b, Key::Ruid, ruid as i64);
                int_field(b, Key::Euid, euid as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Gid { id, ts, rgid, egid } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Gid, Some(ts));
                proc_fields(b, r);
                int_field(b, Key::Rgid, rgid as i64);
                int_field(b, Key::Egid, egid as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Sid { id, ts } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Setsid, Some(ts));
                proc_fields(b, r);
                b.extend_from_slice(b"}\n");
            }
            Fact::Ptrace { id, ts, tracer } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Ptrace, Some(ts));
                proc_fields(b, r);
                int_field(b, Key::Tracer, tracer as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Comm { id, ts } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, EventName::Comm, Some(ts));
                proc_fields(b, r);
                opt_bytes(b, Key::Comm, Key::CommBase64, r.comm.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Region { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(g) = r.regions.get(index) else {
                    return Ok(());
                };
                let b = self.w.buf();
                head(b, EventName::Region, Some(g.ts));
                proc_fields(b, r);
                seconds_field(b, Key::Duration, g.end.saturating_sub(g.ts));
                opt_str(b, Key::Thread, Some(&g.thread));
                opt_str(b, Key::Category, Some(&g.category));
                opt_str(b, Key::Label, Some(&g.label));
                int_field(b, Key::Nesting, g.nesting as i64);
                opt_str(b, Key::Msg, g.msg.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::File { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(u) = r.files.as_ref().and_then(|f| f.uses.get(index)) else {
                    return Ok(());
                };
                let b = self.w.buf();
                head(b, EventName::File, Some(u.ts));
                proc_fields(b, r);
                opt_bytes(b, Key::Path, Key::PathBase64, Some(&u.path));
                opt_str(b, Key::Access, Some(u.access.name()));
                opt_bytes(b, Key::To, Key::ToBase64, u.to.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Data { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(d) = r.data.get(index) else {
                    return Ok(());
                };
                let b = self.w.buf();
                let (event, name) = match d.value {
                    DataValue::Text(_) | DataValue::Json(_) => (EventName::Data, Key::Key),
                    DataValue::Timer { .. } => (EventName::Timer, Key::Name),
                    DataValue::Counter { .. } => (EventName::Counter, Key::Name),
                };
                head(b, event, Some(d.ts));
                proc_fields(b, r);
                opt_str(b, Key::Thread, Some(&d.thread));
                opt_str(b, Key::Category, Some(&d.category));
                opt_str(b, name, Some(&d.key));
                int_field(b, Key::Nesting, d.nesting as i64);
                match &d.value {
                    DataValue::Text(v) => opt_str(b, Key::Value, Some(v)),
                    DataValue::Json(v) => {
                        // Raw JSON from a Trace2 `data_json`; written as a string when it is not
                        // JSON after all (a hand-edited capture), so the line stays valid.
                        if serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok() {
                            key(b, Key::Value);
                            b.extend_from_slice(v.trim().as_bytes());
                        } else {
                            opt_str(b, Key::Value, Some(v));
                        }
                    }
                    DataValue::Timer {
                        intervals,
                        total_ns,
                        min_ns,
                        max_ns,
                        per_thread,
                    } => {
                        int_field(b, Key::Intervals, *intervals as i64);
                        seconds_field(b, Key::Total, *total_ns);
                        seconds_field(b, Key::Min, *min_ns);
                        seconds_field(b, Key::Max, *max_ns);
                        if *per_thread {
                            bool_field(b, Key::PerThread, true);
                        }
                    }
                    DataValue::Counter { count, per_thread } => {
                        int_field(b, Key::Count, *count as i64);
                        if *per_thread {
                            bool_field(b, Key::PerThread, true);
                        }
                    }
                }
                b.extend_from_slice(b"}\n");
            }
        }
        self.w.line_done()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    fn finish(&mut self, s: &Summary, _t: &Tracker) -> io::Result<()> {
        let b = self.w.buf();
        head(b, EventName::End, Some(s.ts));
        if let Some(root) = s.root {
            int_field(b, Key::Pid, root as i64);
        }
        match s.status {
            Some(ExitStatus::Code(c)) => int_field(b, Key::Code, c as i64),
            Some(ExitStatus::Signal { signal, .. }) => int_field(b, Key::Signal, signal as i64),
            None => {}
        }
        for (k, v) in [
            (Key::Processes, s.stats.processes),
            (Key::Execs, s.stats.execs),
            (Key::ExecsWithArgv, s.stats.execs_with_argv),
            (Key::Exits, s.stats.exits),
            (Key::Background, s.background),
            (Key::Lost, s.stats.lost),
            (Key::Recovered, s.stats.recovered),
            (Key::ExitsLost, s.stats.exits_inferred),
            (Key::Rejected, s.capture.rejected),
            (Key::Overflows, s.capture.overflows),
            (Key::SocketDrops, s.capture.socket_drops),
            (Key::KernelEvents, s.capture.events),
        ] {
            int_field(b, k, v as i64);
        }
        // Only runs that had Trace2 notes say so (older outputs stay as they were).
        if s.stats.notes + s.stats.notes_unmatched > 0 {
            int_field(b, Key::Notes, s.stats.notes as i64);
            int_field(b, Key::NotesUnmatched, s.stats.notes_unmatched as i64);
        }
        if s.stats.notes_dropped > 0 {
            int_field(b, Key::NotesDropped, s.stats.notes_dropped as i64);
        }
        // Only runs that measured what processes cost say so (older outputs stay as they were):
        // `usage` processes got figures; `usage_lost` taskstats records were dropped, not to be
        // confused with `lost` (the connector's events).
        if s.stats.usage + s.capture.usage_lost + s.capture.usage_incomplete > 0 {
            int_field(b, Key::Usage, s.stats.usage as i64);
            int_field(b, Key::UsageLost, s.capture.usage_lost as i64);
            int_field(b, Key::UsageIncomplete, s.capture.usage_incomplete as i64);
        }
        // Only a capture that found processes it never saw start says so.
        if s.capture.untraced > 0 {
            int_field(b, Key::Untraced, s.capture.untraced as i64);
        }
        if s.stats.files + s.stats.files_dropped + s.capture.files_lost > 0 {
            int_field(b, Key::Files, s.stats.files as i64);
            int_field(b, Key::FilesDropped, s.stats.files_dropped as i64);
            int_field(b, Key::FilesLost, s.capture.files_lost as i64);
        }
        if let Some(n) = s.filtered {
            int_field(b, Key::Filtered, n as i64);
        }
        opt_str(b, Key::Backend, s.backend.as_deref());
        strings_field(b, Key::Refused, &self.refused);
        opt_str(b, Key::ArgvReader, s.argv_reader.as_deref());
        if let Some(cpu) = s.tracer_cpu_ns {
            seconds_field(b, Key::TracerCpu, cpu);
        }
        b.extend_from_slice(b"}\n");
        self.w.flush()
    }
}

/// `-o FILE`: the JSON Lines output.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "output",
    short: Some('o'),
    value_name: "FILE",
    help: "Write JSON Lines (one object per lifecycle fact) to FILE; `-` for stdout",
    what: "JSON Lines",
    golden: Some("jsonl"),
    dest: crate::output::DestKind::File,
    live_only: false,
    make: crate::output::Make::Stream(|to, s| Ok(Box::new(JsonLines::new(to.lines()?, s.redact)))),
};

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::io::Write;
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
    use serde_json::Value;

    use super::*;
    use crate::input::jsonl::JsonlInput;
    use crate::input::{Input, InputOptions};
    use crate::model::jsonl_schema::{CTX_SWITCHES_KEYS, EVENTS, Field, Type};
    use crate::model::tracker::{Scope, TrackerOptions};
    use crate::sink::{Fanout, LineDest};

    /// Hand-made `-o` files that hold, between them and the golden files, every key of every
    /// event, each as this writer writes it (so `analyze -o` gives them back byte for byte).
    const EVERY_KEY: [&str; 4] = ["run", "watch", "replay", "analyze"];

    fn every_key(name: &str) -> String {
        let p = format!(
            "{}/tests/fixtures/jsonl/every-key-{name}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(p).unwrap()
    }

    /// A writer the test keeps a handle on.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
        }
    }

    fn sink(out: &Shared) -> JsonLines {
        JsonLines::new(LineDest::Stream(Box::new(out.clone())), false)
    }

    /// `text` read back, through the model, into this writer (what `analyze -o` does); and its
    /// recorded summary.
    fn analyzed(text: &str) -> (String, Option<Summary>) {
        let out = Shared::default();
        let mut sinks = Fanout::new();
        sinks.add("jsonl", "test", Box::new(sink(&out)));
        let mut input = JsonlInput::new(
            text.as_bytes(),
            Path::new("every-key.jsonl"),
            &InputOptions::default(),
        )
        .unwrap();
        let a = crate::cmd::analyze::analyze(&mut input, None, sinks, true);
        assert!(a.error.is_none(), "{:?}", a.error);
        (out.text(), input.recorded_summary().cloned())
    }

    /// A line's keys in the order written, objects kept in order too.
    struct Ordered(Vec<(String, Node)>);

    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Node {
        Object(Ordered),
        Other(Value),
    }

    impl<'de> Deserialize<'de> for Ordered {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Keys;
            impl<'de> Visitor<'de> for Keys {
                type Value = Ordered;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered, A::Error> {
                    let mut v = Vec::new();
                    while let Some(e) = m.next_entry()? {
                        v.push(e);
                    }
                    Ok(Ordered(v))
                }
            }
            d.deserialize_map(Keys)
        }
    }

    /// Whether `text` starts with seconds as the writer writes them: digits, `.`, nine digits.
    fn nine_decimals(text: &str, signed: bool) -> bool {
        let t = if signed {
            text.strip_prefix('-').unwrap_or(text)
        } else {
            text
        };
        let n: String = t
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let rest = &t[n.len()..];
        matches!(n.split_once('.'), Some((i, f)) if !i.is_empty() && f.len() == 9 && !f.contains('.'))
            && (rest.starts_with(',') || rest.starts_with('}'))
    }

    /// The value of `f` (`v`; `text`: the line from the value on) has the declared type.
    fn typed(f: &Field, v: &Node, text: &str) -> bool {
        match v {
            Node::Other(Value::Null) => f.null,
            Node::Object(o) => match f.ty {
                Type::ContextSwitches => {
                    let keys: Vec<&str> = o.0.iter().map(|(k, _)| k.as_str()).collect();
                    keys == CTX_SWITCHES_KEYS
                        && o.0
                            .iter()
                            .all(|(_, n)| matches!(n, Node::Other(Value::Number(n)) if n.is_u64()))
                }
                Type::Json => true,
                _ => false,
            },
            Node::Other(v) => match f.ty {
                Type::Str => v.is_string(),
                Type::Int => v.is_i64() || v.is_u64(),
                Type::Seconds => v.is_number() && nine_decimals(text, false),
                Type::SignedSeconds => v.is_number() && nine_decimals(text, true),
                Type::Bool => v.is_boolean(),
                Type::Strings => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
                Type::ContextSwitches => false,
                Type::Json => true,
                Type::Base64 => v.as_str().is_some_and(is_base64),
                Type::Base64Words => v
                    .as_array()
                    .is_some_and(|a| a.iter().all(|w| w.is_null() || w.as_str().is_some_and(is_base64))),
            },
        }
    }

    fn is_base64(s: &str) -> bool {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.decode(s).is_ok()
    }

    /// One line as the schema declares its event: its keys in the declared order, none left out
    /// that every line has, each value of its type. The `(event, key)`s go to `seen`.
    fn check_line(line: &str, seen: &mut BTreeSet<(usize, usize)>) -> Result<(), String> {
        let Ordered(fields) = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        let ev = match fields.first() {
            Some((k, Node::Other(Value::String(e)))) if k == "event" => EventName::of(e),
            _ => None,
        };
        let ev = ev.ok_or_else(|| format!("no known event first: {line}"))?;
        let declared = ev.schema().fields;
        let (mut at, mut pos) = (0, 0);
        let missing = |f: &[Field]| match f.iter().find(|f| f.always) {
            Some(f) => Err(format!("`{}` missing: {line}", f.key.name())),
            None => Ok(()),
        };
        for (k, v) in &fields {
            let key = Key::of(k).ok_or_else(|| format!("`{k}` is no key: {line}"))?;
            let i = declared[at..].iter().position(|f| f.key == key).ok_or_else(|| {
                format!(
                    "`{k}` is not declared for `{}`, or out of order: {line}",
                    ev.name()
                )
            })?;
            missing(&declared[at..at + i])?;
            let f = &declared[at + i];
            at += i + 1;
            let lead = if key == Key::Event { "{\"event\":" } else { f.lead };
            pos += line[pos..].find(lead).ok_or("lead not found")? + lead.len();
            if !typed(f, v, &line[pos..]) {
                return Err(format!("`{k}` is not {:?}: {line}", f.ty));
            }
            seen.insert((ev as usize, key as usize));
        }
        missing(&declared[at..])
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Any bytes in argv, the paths and the name come back from `analyze` exactly, and its
        /// output reads back to itself (the `*_base64` fields written only where needed).
        #[test]
        fn any_bytes_round_trip(
            words in proptest::collection::vec(proptest::collection::vec(1u8..=255, 0..6), 1..4),
            cwd in proptest::collection::vec(1u8..=255, 1..8),
            comm in proptest::collection::vec(1u8..=255, 1..6),
        ) {
            use base64::Engine as _;
            let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
            let lossy = |b: &[u8]| serde_json::to_string(&String::from_utf8_lossy(b)).unwrap();
            let argv: Vec<String> = words.iter().map(|w| lossy(w)).collect();
            let argv64: Vec<String> = words.iter().map(|w| format!("\"{}\"", b64(w))).collect();
            let text = format!(
                concat!(
                    "{{\"event\":\"start\",\"ts\":1.000000000,\"tool\":\"proctrace\",\"version\":\"0.1.0\",\"wall_offset\":0.000000000,\"mode\":\"run\",\"argv\":[\"x\"]}}\n",
                    "{{\"event\":\"fork\",\"ts\":1.000100000,\"pid\":100,\"ppid\":99}}\n",
                    "{{\"event\":\"exec\",\"ts\":1.000200000,\"pid\":100,\"ppid\":99,\"argv\":[{}],\"argv_base64\":[{}],",
                    "\"cwd\":{},\"cwd_base64\":\"{}\",\"comm\":{},\"comm_base64\":\"{}\"}}\n",
                    "{{\"event\":\"exit\",\"ts\":1.001000000,\"pid\":100,\"ppid\":99,\"code\":0,\"duration\":0.000900000}}\n",
                ),
                argv.join(","), argv64.join(","), lossy(&cwd), b64(&cwd), lossy(&comm), b64(&comm),
            );
            let (once, _) = analyzed(&text);
            let exec: Value = serde_json::from_str(once.lines().nth(2).unwrap()).unwrap();
            let exact = |v: &Value, k: &str| -> Vec<u8> {
                match exec.get(format!("{k}_base64")) {
                    Some(Value::String(e)) => base64::engine::general_purpose::STANDARD.decode(e).unwrap(),
                    _ => v.as_str().unwrap().as_bytes().to_vec(),
                }
            };
            for (i, w) in words.iter().enumerate() {
                let got = match exec["argv_base64"].get(i).and_then(Value::as_str) {
                    Some(e) => base64::engine::general_purpose::STANDARD.decode(e).unwrap(),
                    None => exec["argv"][i].as_str().unwrap().as_bytes().to_vec(),
                };
                proptest::prop_assert_eq!(&got, w);
            }
            proptest::prop_assert_eq!(exact(&exec["cwd"], "cwd"), cwd);
            proptest::prop_assert_eq!(exact(&exec["comm"], "comm"), comm);
            let all_exact = words.iter().all(|w| std::str::from_utf8(w).is_ok_and(crate::model::bytes::is_exact));
            proptest::prop_assert_eq!(exec.get("argv_base64").is_none(), all_exact);
            proptest::prop_assert_eq!(analyzed(&once).0, once);
        }
    }

    /// What the every-key files hold is what this writer writes for the records they make.
    #[test]
    fn analyze_writes_back_what_it_read() {
        for name in EVERY_KEY {
            let text = every_key(name);
            assert_eq!(analyzed(&text).0, text, "{name}");
        }
    }

    /// Every line this writer writes (the golden files, the every-key files, a `watch` end line
    /// with a filter) has exactly the keys the schema declares for its event, in the declared
    /// order and of the declared types; and every key declared is written by some line.
    #[test]
    fn the_writer_writes_the_schema() {
        let mut lines = Vec::new();
        let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");
        for e in std::fs::read_dir(golden).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "jsonl") {
                lines.extend(std::fs::read_to_string(&path).unwrap().lines().map(String::from));
            }
        }
        assert!(lines.len() > 100);
        for name in EVERY_KEY {
            let (text, summary) = analyzed(&every_key(name));
            lines.extend(text.lines().map(String::from));
            // The count of facts a `watch` filter kept out, which no saved trace gives back.
            let out = Shared::default();
            let s = Summary {
                filtered: Some(2),
                ..summary.unwrap()
            };
            let t = Tracker::new(TrackerOptions {
                scope: Scope::All,
                retain_exited: false,
                want_details: false,
            });
            sink(&out).finish(&s, &t).unwrap();
            lines.push(out.text().trim_end().to_string());
        }
        let mut seen = BTreeSet::new();
        for line in &lines {
            check_line(line, &mut seen).unwrap();
        }
        for e in EVENTS {
            for f in e.fields {
                assert!(
                    seen.contains(&(e.name as usize, f.key as usize)),
                    "no line writes `{}` of `{}`",
                    f.key.name(),
                    e.name.name()
                );
            }
        }
    }

    /// The check itself refuses what the schema does not declare.
    #[test]
    fn a_line_off_the_schema_is_refused() {
        let good = r#"{"event":"exit","ts":1.000000000,"pid":5,"ppid":1,"code":0,"duration":0.500000000}"#;
        assert_eq!(check_line(good, &mut BTreeSet::new()), Ok(()));
        for bad in [
            r#"{"event":"exit","ts":1.000000000,"ppid":1,"pid":5,"code":0}"#,
            r#"{"event":"exit","ts":1.000000000,"pid":5,"code":0}"#,
            r#"{"event":"exit","ts":1.000000000,"pid":5,"ppid":1,"code":0,"extra":1}"#,
            r#"{"event":"exit","ts":1.000000000,"pid":5,"ppid":1,"cwd":"/"}"#,
            r#"{"event":"exit","ts":1.5,"pid":5,"ppid":1,"code":0}"#,
            r#"{"event":"exit","ts":1.000000000,"pid":5,"ppid":1,"code":"0"}"#,
            r#"{"event":"exit","ts":1.000000000,"pid":5,"ppid":1,"signal":null}"#,
            r#"{"event":"exit","ts":1.000000000,"pid":5,"ppid":1,"code":0,"ctx_switches":{"involuntary":1,"voluntary":2}}"#,
            r#"{"event":"nope","ts":1.000000000}"#,
        ] {
            assert!(check_line(bad, &mut BTreeSet::new()).is_err(), "{bad}");
        }
    }
}
