//! JSON Lines: one object per lifecycle fact, for tools.
//!
//! Every line has `event` and `ts` (seconds on the kernel's CLOCK_MONOTONIC, nine decimals);
//! process lines add `pid` and `ppid`. The first line (`start`) carries `wall_offset`, the
//! seconds to add to any `ts` for UTC wall time; the last (`end`) the totals.

use std::io;

use super::json;
use super::{LineWriter, Sink};
use crate::model::event::{DataValue, ExitStatus};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{Fact, ProcessRecord, Tracker};
use crate::redact::redact_arg;

/// The JSON Lines sink.
pub struct JsonLines {
    w: LineWriter,
    redact: bool,
}

impl JsonLines {
    /// Writes to `out`; `redact` hides URL credentials in argv.
    pub fn new(out: super::LineDest, redact: bool) -> Self {
        JsonLines {
            w: LineWriter::new(out),
            redact,
        }
    }
}

/// An argv array (or `null`), URL credentials redacted when asked.
fn write_argv<S: AsRef<str>>(b: &mut Vec<u8>, argv: Option<impl IntoIterator<Item = S>>, redact: bool) {
    let Some(a) = argv else {
        b.extend_from_slice(b"null");
        return;
    };
    b.push(b'[');
    for (i, s) in a.into_iter().enumerate() {
        let s = s.as_ref();
        if i > 0 {
            b.push(b',');
        }
        if redact {
            json::string(b, &redact_arg(s));
        } else {
            json::string(b, s);
        }
    }
    b.push(b']');
}

fn head(b: &mut Vec<u8>, event: &str, ts: Option<u64>) {
    b.extend_from_slice(b"{\"event\":\"");
    b.extend_from_slice(event.as_bytes());
    b.extend_from_slice(b"\",\"ts\":");
    match ts {
        Some(ts) => json::seconds(b, ts),
        None => b.extend_from_slice(b"null"),
    }
}

fn proc_fields(b: &mut Vec<u8>, r: &ProcessRecord) {
    b.extend_from_slice(b",\"pid\":");
    json::int(b, r.pid as i64);
    b.extend_from_slice(b",\"ppid\":");
    json::int(b, r.ppid as i64);
}

fn opt_str(b: &mut Vec<u8>, key: &str, v: Option<&str>) {
    if let Some(v) = v {
        b.push(b',');
        json::string(b, key);
        b.push(b':');
        json::string(b, v);
    }
}

impl Sink for JsonLines {
    fn start(&mut self, h: &Header) -> io::Result<()> {
        let redact = self.redact;
        let b = self.w.buf();
        head(b, "start", Some(h.ts));
        b.extend_from_slice(b",\"tool\":\"proctrace\",\"version\":");
        json::string(b, &h.tool.version);
        opt_str(b, "backend", h.backend.as_deref());
        b.extend_from_slice(b",\"wall_offset\":");
        let off = h.real_minus_mono;
        if off < 0 {
            b.push(b'-');
        }
        json::seconds(b, off.unsigned_abs());
        b.extend_from_slice(b",\"mode\":");
        match &h.mode {
            Mode::Run { argv } => {
                b.extend_from_slice(b"\"run\",\"argv\":");
                write_argv(b, Some(argv), redact);
            }
            Mode::Watch { root } => {
                b.extend_from_slice(b"\"watch\"");
                if let Some(r) = root {
                    b.extend_from_slice(b",\"root\":");
                    json::int(b, *r as i64);
                }
            }
            Mode::Replay { path } => {
                b.extend_from_slice(b"\"replay\",\"capture\":");
                json::string(b, path);
            }
            Mode::Analyze { inputs } => {
                b.extend_from_slice(b"\"analyze\",\"inputs\":");
                write_argv(b, Some(inputs), false);
            }
        }
        self.w.buf().extend_from_slice(b"}\n");
        self.w.line_done()
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        match *fact {
            Fact::Lost { ts, count } => {
                let b = self.w.buf();
                head(b, "lost", ts);
                b.extend_from_slice(b",\"count\":");
                json::int(b, count as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Fork(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, "fork", r.start_ns);
                proc_fields(b, r);
                if r.pre_existing {
                    b.extend_from_slice(b",\"pre_existing\":true");
                }
                opt_str(b, "comm", r.comm.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Exec { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(e) = r.execs.get(index) else {
                    return Ok(());
                };
                let b = self.w.buf();
                head(b, "exec", Some(e.ts));
                proc_fields(b, r);
                b.extend_from_slice(b",\"argv\":");
                let d = e.details.as_ref();
                write_argv(b, d.and_then(|d| d.argv.as_ref()), self.redact);
                opt_str(b, "exe", d.and_then(|d| d.exe.as_deref()));
                opt_str(b, "cwd", d.and_then(|d| d.cwd.as_deref()));
                if let Some(u) = d.and_then(|d| d.uid) {
                    b.extend_from_slice(b",\"uid\":");
                    json::int(b, u as i64);
                }
                opt_str(b, "comm", r.comm.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Exit(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(x) = r.exit else { return Ok(()) };
                let b = self.w.buf();
                head(b, "exit", Some(x.ts));
                proc_fields(b, r);
                match x.status {
                    Some(ExitStatus::Code(c)) => {
                        b.extend_from_slice(b",\"code\":");
                        json::int(b, c as i64);
                    }
                    Some(ExitStatus::Signal { signal, core }) => {
                        b.extend_from_slice(b",\"signal\":");
                        json::int(b, signal as i64);
                        if core || r.coredump_signal {
                            b.extend_from_slice(if core {
                                b",\"core\":true"
                            } else {
                                b",\"core\":false"
                            });
                        }
                    }
                    None => b.extend_from_slice(b",\"code\":null,\"exit_lost\":true"),
                }
                if let Some(d) = r.duration_ns() {
                    b.extend_from_slice(b",\"duration\":");
                    json::seconds(b, d);
                }
                if r.background.is_some() {
                    b.extend_from_slice(b",\"background\":true");
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
                head(b, "background", Some(bg.ts));
                proc_fields(b, r);
                b.extend_from_slice(b",\"state\":");
                json::string(b, bg.state.as_str());
                if let Some(s) = r.start_ns {
                    b.extend_from_slice(b",\"t_rel\":");
                    json::seconds(b, bg.ts.saturating_sub(s));
                }
                b.extend_from_slice(b",\"argv\":");
                write_argv(b, r.argv(), self.redact);
                b.extend_from_slice(b"}\n");
            }
            Fact::Uid { id, ts, ruid, euid } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, "uid", Some(ts));
                proc_fields(b, r);
                b.extend_from_slice(b",\"ruid\":");
                json::int(b, ruid as i64);
                b.extend_from_slice(b",\"euid\":");
                json::int(b, euid as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Gid { id, ts, rgid, egid } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, "gid", Some(ts));
                proc_fields(b, r);
                b.extend_from_slice(b",\"rgid\":");
                json::int(b, rgid as i64);
                b.extend_from_slice(b",\"egid\":");
                json::int(b, egid as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Sid { id, ts } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, "setsid", Some(ts));
                proc_fields(b, r);
                b.extend_from_slice(b"}\n");
            }
            Fact::Ptrace { id, ts, tracer } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, "ptrace", Some(ts));
                proc_fields(b, r);
                b.extend_from_slice(b",\"tracer\":");
                json::int(b, tracer as i64);
                b.extend_from_slice(b"}\n");
            }
            Fact::Comm { id, ts } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let b = self.w.buf();
                head(b, "comm", Some(ts));
                proc_fields(b, r);
                opt_str(b, "comm", r.comm.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Region { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(g) = r.regions.get(index) else {
                    return Ok(());
                };
                let b = self.w.buf();
                head(b, "region", Some(g.ts));
                proc_fields(b, r);
                b.extend_from_slice(b",\"duration\":");
                json::seconds(b, g.end.saturating_sub(g.ts));
                opt_str(b, "thread", Some(&g.thread));
                opt_str(b, "category", Some(&g.category));
                opt_str(b, "label", Some(&g.label));
                b.extend_from_slice(b",\"nesting\":");
                json::int(b, g.nesting as i64);
                opt_str(b, "msg", g.msg.as_deref());
                b.extend_from_slice(b"}\n");
            }
            Fact::Data { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(d) = r.data.get(index) else {
                    return Ok(());
                };
                let b = self.w.buf();
                let (event, key) = match d.value {
                    DataValue::Text(_) | DataValue::Json(_) => ("data", "key"),
                    DataValue::Timer { .. } => ("timer", "name"),
                    DataValue::Counter { .. } => ("counter", "name"),
                };
                head(b, event, Some(d.ts));
                proc_fields(b, r);
                opt_str(b, "thread", Some(&d.thread));
                opt_str(b, "category", Some(&d.category));
                opt_str(b, key, Some(&d.key));
                b.extend_from_slice(b",\"nesting\":");
                json::int(b, d.nesting as i64);
                match &d.value {
                    DataValue::Text(v) => opt_str(b, "value", Some(v)),
                    DataValue::Json(v) => {
                        // Raw JSON from a Trace2 `data_json`; written as a string when it is not
                        // JSON after all (a hand-edited capture), so the line stays valid.
                        if serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok() {
                            b.extend_from_slice(b",\"value\":");
                            b.extend_from_slice(v.trim().as_bytes());
                        } else {
                            opt_str(b, "value", Some(v));
                        }
                    }
                    DataValue::Timer {
                        intervals,
                        total_ns,
                        min_ns,
                        max_ns,
                        per_thread,
                    } => {
                        b.extend_from_slice(b",\"intervals\":");
                        json::int(b, *intervals as i64);
                        for (k, v) in [("total", total_ns), ("min", min_ns), ("max", max_ns)] {
                            b.push(b',');
                            json::string(b, k);
                            b.push(b':');
                            json::seconds(b, *v);
                        }
                        if *per_thread {
                            b.extend_from_slice(b",\"per_thread\":true");
                        }
                    }
                    DataValue::Counter { count, per_thread } => {
                        b.extend_from_slice(b",\"count\":");
                        json::int(b, *count as i64);
                        if *per_thread {
                            b.extend_from_slice(b",\"per_thread\":true");
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
        head(b, "end", Some(s.ts));
        if let Some(root) = s.root {
            b.extend_from_slice(b",\"pid\":");
            json::int(b, root as i64);
        }
        match s.status {
            Some(ExitStatus::Code(c)) => {
                b.extend_from_slice(b",\"code\":");
                json::int(b, c as i64);
            }
            Some(ExitStatus::Signal { signal, .. }) => {
                b.extend_from_slice(b",\"signal\":");
                json::int(b, signal as i64);
            }
            None => {}
        }
        for (k, v) in [
            ("processes", s.stats.processes),
            ("execs", s.stats.execs),
            ("execs_with_argv", s.stats.execs_with_argv),
            ("exits", s.stats.exits),
            ("background", s.background),
            ("lost", s.stats.lost),
            ("recovered", s.stats.recovered),
            ("exits_lost", s.stats.exits_inferred),
            ("rejected", s.capture.rejected),
            ("overflows", s.capture.overflows),
            ("socket_drops", s.capture.socket_drops),
            ("kernel_events", s.capture.events),
        ] {
            int_field(b, k, v);
        }
        // Only runs that had Trace2 notes say so (older outputs stay as they were).
        if s.stats.notes + s.stats.notes_unmatched > 0 {
            for (k, v) in [
                ("notes", s.stats.notes),
                ("notes_unmatched", s.stats.notes_unmatched),
            ] {
                int_field(b, k, v);
            }
        }
        // Only runs that measured what processes cost say so (older outputs stay as they were):
        // `usage` processes got figures; `usage_lost` taskstats records were dropped, not to be
        // confused with `lost` (the connector's events).
        if s.stats.usage + s.capture.usage_lost + s.capture.usage_incomplete > 0 {
            for (k, v) in [
                ("usage", s.stats.usage),
                ("usage_lost", s.capture.usage_lost),
                ("usage_incomplete", s.capture.usage_incomplete),
            ] {
                int_field(b, k, v);
            }
        }
        if let Some(n) = s.filtered {
            b.extend_from_slice(b",\"filtered\":");
            json::int(b, n as i64);
        }
        opt_str(b, "backend", s.backend.as_deref());
        opt_str(b, "argv_reader", s.argv_reader.as_deref());
        if let Some(cpu) = s.tracer_cpu_ns {
            b.extend_from_slice(b",\"tracer_cpu\":");
            json::seconds(b, cpu);
        }
        b.extend_from_slice(b"}\n");
        self.w.flush()
    }
}

/// `,"k":v` for one count of the `end` line.
fn int_field(b: &mut Vec<u8>, k: &str, v: u64) {
    b.push(b',');
    json::string(b, k);
    b.push(b':');
    json::int(b, v as i64);
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
