//! OpenTelemetry export: every observed process becomes a span, nested by parentage, sent to a
//! collector over OTLP/HTTP (protobuf, gzip, batched).
//!
//! The mapping (also in `docs/otlp.md`):
//! - one span per process, from fork to exit; each exec is also a span event `exec`; the span's
//!   name is the program ([`crate::model::naming::program`]: the base name of the last exec's
//!   `argv[0]`, else of its executable, else its `comm`; `[fork of COMM]` for a fork that never
//!   exec'd);
//! - a process of several *images* ([`crate::model::images`]) has one child span per image, one
//!   after the other over its life, each with its own program
//!   ([`crate::model::naming::image_program`]), `process.command_args`,
//!   `process.executable.*`, times, and `proctrace.image.index`/`.count`/`.fork`. Child spans,
//!   not span events: the process conventions' executable attributes describe one program, and
//!   an image has a duration, which an event has not (docs/otlp.md says more). The fork image's
//!   standing is decided as the first exec arrives (a child forked before it, or
//!   [`crate::model::images::FORK_IMAGE_MIN_NS`]), so the spans do not depend on whether exited
//!   records are kept. Child processes stay under their parent process's span (ids are given at
//!   the fork, before the parent's images are known);
//! - the parent span is the parent process's; a root process's parent is the caller's span when
//!   proctrace was started with `TRACEPARENT` (`run`, `analyze`, `replay`);
//! - attributes from the process semantic conventions (`process.pid`, `process.parent_pid`,
//!   `process.executable.name`, `process.executable.path`, `process.command_args`,
//!   `process.working_directory`, `process.user.id`, `process.exit.code`) and proctrace's own
//!   (`proctrace.signal`, `proctrace.core_dumped`, `proctrace.background`, `proctrace.exit_lost`,
//!   `proctrace.still_running`, `proctrace.events_lost` on root spans);
//! - what the process cost, when measured ([`usage_attributes`]): OpenTelemetry names CPU time,
//!   memory, disk I/O and context switches only as *metrics* (`process.cpu.time` with `cpu.mode`,
//!   `process.memory.usage`, `process.disk.io` with `disk.io.direction`,
//!   `process.context_switches` with `process.context_switch.type`), never as span attributes, so
//!   the attributes are proctrace's, named after those metrics: `proctrace.cpu.time.user`, …;
//! - status ERROR for a non-zero exit or a signal, with the reason as message; UNSET otherwise;
//! - Trace2 regions (`run --trace2`, `analyze` of Trace2 streams) are child spans of their
//!   process's span, nested by time and nesting level within a thread;
//! - `run` and `analyze` send one trace; `watch` sends each top-level process tree as its own.
//!
//! Span ids are derived, not drawn: id *n* of the session is a 64-bit mix of the session's seed and
//! *n*, counted in the order facts arrive. So the span of `run`'s command (number 0) is known
//! before it is spawned — its `TRACEPARENT` points at it — and the spans are a function of the
//! configuration and the events, like every other output (the seed is random per session, fixed
//! in tests).
//!
//! The sink only formats: the spans go to a [`SpanDest`] — the [`export::Exporter`] thread, or
//! memory in tests. What it knows about the session comes from the [`Header`], the facts, the
//! [`Summary`] and its [`config::OtlpConfig`]; it reads no clock and no environment.

pub mod config;
pub mod export;

use std::collections::HashMap;
use std::io;

use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event as SpanEvent, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{Span, Status};

use super::Sink;
use crate::model::bytes::shown;
use crate::model::event::{Argv, ExitStatus, Region};
use crate::model::images::{self, Image, comm_at, images_decided};
use crate::model::naming::{image_program, program, region_name};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{Fact, ProcId, ProcessRecord, Tracker};
use crate::sink::text::signal_name;
use config::{OtlpConfig, TraceParent};
use export::Delivery;

/// Where finished spans go.
pub trait SpanDest {
    /// Called once before any span, with the resource every span belongs to.
    fn start(&mut self, resource: Resource) -> io::Result<()>;
    /// Spans, in batches (never waits).
    fn send(&mut self, spans: Vec<Span>);
    /// Delivers what is left and says what became of everything.
    fn finish(&mut self) -> Delivery;
}

/// The exporter thread, started when the session starts.
pub struct ExportDest {
    cfg: OtlpConfig,
    exporter: Option<export::Exporter>,
    unsent: u64,
}

impl ExportDest {
    /// Sends to the collector `cfg` names.
    pub fn new(cfg: OtlpConfig) -> Self {
        ExportDest {
            cfg,
            exporter: None,
            unsent: 0,
        }
    }
}

impl SpanDest for ExportDest {
    fn start(&mut self, resource: Resource) -> io::Result<()> {
        self.exporter = Some(export::Exporter::start(&self.cfg, resource)?);
        Ok(())
    }
    fn send(&mut self, spans: Vec<Span>) {
        match &mut self.exporter {
            Some(e) => e.send(spans),
            None => self.unsent += spans.len() as u64,
        }
    }
    fn finish(&mut self) -> Delivery {
        let mut d = self.exporter.as_mut().map(|e| e.finish()).unwrap_or_default();
        if self.unsent > 0 {
            d.undelivered += self.unsent;
            d.reason = Some("exporter not started".into());
        }
        d
    }
}

/// splitmix64's finaliser: a bijection that spreads every input bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Span id number `n` of a session (never all zero, as OTLP requires).
pub fn span_id(seed: u64, n: u64) -> [u8; 8] {
    let v = mix(seed ^ mix(n));
    (if v == 0 { 1 } else { v }).to_be_bytes()
}

/// Trace id number `n` of a session (`run` and `analyze` use 0; `watch` one per tree).
pub fn trace_id(seed: u64, n: u64) -> [u8; 16] {
    let a = mix(seed ^ mix(n ^ 0x5452_4143_4549_4400));
    let b = mix(a ^ 0x7472_6163_6569_6431);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_be_bytes());
    out[8..].copy_from_slice(&b.to_be_bytes());
    if out == [0; 16] {
        out[15] = 1;
    }
    out
}

/// The `TRACEPARENT` `run` gives its command: the session's trace, the command's own span
/// (number 0), sampled.
pub fn command_traceparent(cfg: &OtlpConfig) -> TraceParent {
    TraceParent {
        trace_id: cfg.parent.map_or_else(|| trace_id(cfg.seed, 0), |p| p.trace_id),
        span_id: span_id(cfg.seed, 0),
        flags: 0x01,
    }
}

#[derive(Debug, Clone, Copy)]
struct SpanIds {
    trace: [u8; 16],
    span: [u8; 8],
    parent: Option<[u8; 8]>,
    /// A root span: no parent process in the model.
    root: bool,
    /// Events lost before the process appeared.
    lost_before: u64,
    sent: bool,
}

/// What kind of session, as far as the ids go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `run`: one trace; the first root is the command (span 0), sent at the end.
    Run,
    /// `watch`: a trace per top-level tree; ids forgotten at exit.
    Watch,
    /// `analyze`, `replay`: one trace.
    Single,
}

/// The OTLP sink. See the module docs.
pub struct Otlp<D: SpanDest> {
    cfg: OtlpConfig,
    redact: bool,
    dest: D,
    shape: Shape,
    offset: i64,
    header_ts: u64,
    ids: HashMap<ProcId, SpanIds>,
    next_span: u64,
    next_trace: u64,
    command: Option<ProcId>,
    lost: u64,
    /// Processes the capture never saw start (known at the end; on the command's span).
    untraced: u64,
    out: Vec<Span>,
    /// Regions whose process's span has not been sent yet (indices into its `regions`).
    deferred: HashMap<ProcId, Vec<usize>>,
    /// What decides the images of each process not yet sent (see [`ForkImage`]).
    fork_images: HashMap<ProcId, ForkImage>,
}

/// Whether a process's fork image stands on its own ([`images::fork_image_stands_for`]), decided as its
/// first exec arrives (the children that make it stand may be gone by its exit), and the name
/// of the program it was forked from, taken at its fork while its parent is surely known.
#[derive(Debug, Default)]
struct ForkImage {
    forked_child: bool,
    stands: Option<bool>,
    inherited: Option<String>,
}

/// The sink as `run`, `watch` and `analyze` use it: spans to the collector.
pub type OtlpSink = Otlp<ExportDest>;

impl OtlpSink {
    /// Exports to the collector `cfg` names; `redact` hides URL credentials in argv.
    pub fn export(cfg: OtlpConfig, redact: bool) -> Self {
        Otlp::new(cfg.clone(), redact, ExportDest::new(cfg))
    }
}

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}
fn kv_str(key: &str, v: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.to_string()))
}
fn kv_int(key: &str, v: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(v))
}
fn kv_bool(key: &str, v: bool) -> KeyValue {
    kv(key, any_value::Value::BoolValue(v))
}
fn kv_f64(key: &str, v: f64) -> KeyValue {
    kv(key, any_value::Value::DoubleValue(v))
}

/// A process's cost as span attributes (`docs/outputs.md`, "What each process cost"): seconds as doubles, sizes in bytes
/// (OpenTelemetry's units, `s` and `By`), counts as integers; delays only when known.
pub fn usage_attributes(u: &crate::model::event::Usage) -> Vec<KeyValue> {
    let s = |ns: u64| ns as f64 / 1e9;
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut a = vec![
        kv_f64("proctrace.cpu.time.user", s(u.cpu_user_ns)),
        kv_f64("proctrace.cpu.time.system", s(u.cpu_sys_ns)),
        kv_int("proctrace.memory.peak_rss", n(u.max_rss_kib.saturating_mul(1024))),
        kv_int("proctrace.io.read_chars", n(u.read_chars)),
        kv_int("proctrace.io.write_chars", n(u.write_chars)),
        kv_int("proctrace.disk.io.read", n(u.read_bytes)),
        kv_int("proctrace.disk.io.write", n(u.write_bytes)),
        kv_int("proctrace.disk.io.cancelled_write", n(u.cancelled_write_bytes)),
        kv_int("proctrace.context_switches.voluntary", n(u.vol_ctx_switches)),
        kv_int("proctrace.context_switches.involuntary", n(u.invol_ctx_switches)),
    ];
    if let Some(d) = u.cpu_delay_ns {
        a.push(kv_f64("proctrace.delay.cpu", s(d)));
    }
    if let Some(d) = u.io_delay_ns {
        a.push(kv_f64("proctrace.delay.io", s(d)));
    }
    a
}

/// For each region, the index of the region it nests in: the innermost one of the same thread
/// with a lower nesting whose time encloses it. One sort and a stack per thread.
fn region_parents(regions: &[&Region]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..regions.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (regions[a], regions[b]);
        (x.thread.as_str(), x.ts, std::cmp::Reverse(x.end), x.nesting).cmp(&(
            y.thread.as_str(),
            y.ts,
            std::cmp::Reverse(y.end),
            y.nesting,
        ))
    });
    let mut parents = vec![None; regions.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let g = regions[i];
        if k > 0 && regions[order[k - 1]].thread != g.thread {
            stack.clear();
        }
        while let Some(&top) = stack.last() {
            let p = regions[top];
            if p.ts <= g.ts && g.end <= p.end && p.nesting < g.nesting {
                break;
            }
            stack.pop();
        }
        parents[i] = stack.last().copied();
        stack.push(i);
    }
    parents
}

impl<D: SpanDest> Otlp<D> {
    /// A sink sending its spans to `dest`.
    pub fn new(cfg: OtlpConfig, redact: bool, dest: D) -> Self {
        Otlp {
            cfg,
            redact,
            dest,
            shape: Shape::Single,
            offset: 0,
            header_ts: 0,
            ids: HashMap::new(),
            // Span 0 is the command's (run), known before it is spawned.
            next_span: 1,
            next_trace: 1,
            command: None,
            lost: 0,
            untraced: 0,
            out: Vec::new(),
            deferred: HashMap::new(),
            fork_images: HashMap::new(),
        }
    }

    /// The destination (tests read what was sent).
    pub fn dest(&self) -> &D {
        &self.dest
    }

    fn unix(&self, ts: u64) -> u64 {
        (ts as i128 + self.offset as i128).clamp(0, u64::MAX as i128) as u64
    }

    fn session_trace(&self) -> [u8; 16] {
        self.cfg
            .parent
            .map_or_else(|| trace_id(self.cfg.seed, 0), |p| p.trace_id)
    }

    fn alloc_span(&mut self) -> [u8; 8] {
        let s = span_id(self.cfg.seed, self.next_span);
        self.next_span += 1;
        s
    }

    /// Ids for a process entering the model (idempotent).
    fn ids_for(&mut self, id: ProcId, t: &Tracker) -> Option<SpanIds> {
        if let Some(i) = self.ids.get(&id) {
            return Some(*i);
        }
        let r = t.get(id)?;
        let parent = r.parent.and_then(|p| self.ids.get(&p).copied());
        let ids = match parent {
            Some(p) => SpanIds {
                trace: p.trace,
                span: self.alloc_span(),
                parent: Some(p.span),
                root: false,
                lost_before: self.lost,
                sent: false,
            },
            None => {
                let (trace, span, parent) = match self.shape {
                    // A daemon's node (`--include-daemons`) may come in first: not the command.
                    Shape::Run if self.command.is_none() && r.daemon_node().is_none() => {
                        self.command = Some(id);
                        (
                            self.session_trace(),
                            span_id(self.cfg.seed, 0),
                            self.cfg.parent.map(|p| p.span_id),
                        )
                    }
                    Shape::Watch => {
                        let tr = trace_id(self.cfg.seed, self.next_trace);
                        self.next_trace += 1;
                        (tr, self.alloc_span(), None)
                    }
                    _ => (
                        self.session_trace(),
                        self.alloc_span(),
                        self.cfg.parent.map(|p| p.span_id),
                    ),
                };
                SpanIds {
                    trace,
                    span,
                    parent,
                    root: true,
                    lost_before: self.lost,
                    sent: false,
                }
            }
        };
        self.ids.insert(id, ids);
        Some(ids)
    }

    fn argv_value(&self, argv: &Argv) -> any_value::Value {
        let mut r = crate::redact::Argv::new();
        any_value::Value::ArrayValue(ArrayValue {
            values: argv
                .iter()
                .map(|a| AnyValue {
                    value: Some(any_value::Value::StringValue(if self.redact {
                        shown(&r.word(a)).into_owned()
                    } else {
                        shown(a).into_owned()
                    })),
                })
                .collect(),
        })
    }

    /// The process conventions' attributes of what ran: `process.executable.name` (the
    /// kernel's name), `.path`, `process.command_args` and `process.working_directory`, for a
    /// process span (its last exec) and an image span (its exec) alike.
    fn program_attributes(
        &self,
        a: &mut Vec<KeyValue>,
        comm: Option<&str>,
        d: Option<&crate::model::event::ExecDetails>,
    ) {
        if let Some(c) = comm {
            a.push(kv_str("process.executable.name", &shown(c)));
        }
        if let Some(exe) = d.and_then(|d| d.exe.as_deref()) {
            a.push(kv_str("process.executable.path", &shown(exe)));
        }
        if let Some(argv) = d.and_then(|d| d.argv.as_ref()) {
            a.push(kv("process.command_args", self.argv_value(argv)));
        }
        if let Some(cwd) = d.and_then(|d| d.cwd.as_deref()) {
            a.push(kv_str("process.working_directory", &shown(cwd)));
        }
    }

    /// The process's span; `end` when it has not exited (still running at the end).
    fn process_span(&self, ids: &SpanIds, r: &ProcessRecord, end: u64, lost: Option<u64>) -> Span {
        let start = r
            .start_ns
            .or_else(|| r.execs.first().map(|e| e.ts))
            .unwrap_or(self.header_ts);
        let mut a = vec![
            kv_int("process.pid", r.pid as i64),
            kv_int("process.parent_pid", r.ppid as i64),
        ];
        let d = r.execs.last().and_then(|e| e.details.as_ref());
        self.program_attributes(&mut a, r.comm.as_deref(), d);
        if let Some(uid) = d.and_then(|d| d.uid).or(r.uid.map(|u| u.1)) {
            a.push(kv_int("process.user.id", uid as i64));
        }
        let mut status = Status::default();
        match r.exit.map(|x| x.status) {
            Some(Some(ExitStatus::Code(c))) => {
                a.push(kv_int("process.exit.code", c as i64));
                if c != 0 {
                    status = Status {
                        code: StatusCode::Error as i32,
                        message: format!("exit code {c}"),
                    };
                }
            }
            Some(Some(ExitStatus::Signal { signal, core })) => {
                let name = signal_name(signal);
                a.push(kv_str("proctrace.signal", &name));
                a.push(kv_int("proctrace.signal.number", signal as i64));
                if core || r.coredump_signal {
                    a.push(kv_bool("proctrace.core_dumped", core));
                }
                status = Status {
                    code: StatusCode::Error as i32,
                    message: format!("killed by {name}"),
                };
            }
            Some(None) => a.push(kv_bool("proctrace.exit_lost", true)),
            None => a.push(kv_bool("proctrace.still_running", true)),
        }
        if let Some(bg) = r.background {
            a.push(kv_str("proctrace.background", bg.state.as_str()));
        }
        if r.pre_existing {
            a.push(kv_bool("proctrace.pre_existing", true));
        }
        if let Some(n) = lost {
            a.push(kv_int("proctrace.events_lost", n as i64));
            // The trace is incomplete beyond what was lost: processes the capture never saw.
            if self.untraced > 0 {
                a.push(kv_int("proctrace.untraced", self.untraced as i64));
            }
        }
        if let Some(u) = r.usage.as_deref() {
            a.extend(usage_attributes(u));
        }
        let mut events: Vec<SpanEvent> = r
            .execs
            .iter()
            .map(|e| {
                let mut ea = Vec::new();
                if let Some(d) = &e.details {
                    if let Some(exe) = &d.exe {
                        ea.push(kv_str("process.executable.path", &shown(exe)));
                    }
                    if let Some(argv) = &d.argv {
                        ea.push(kv("process.command_args", self.argv_value(argv)));
                    }
                }
                SpanEvent {
                    time_unix_nano: self.unix(e.ts),
                    name: "exec".into(),
                    attributes: ea,
                    dropped_attributes_count: 0,
                }
            })
            .collect();
        if let Some(bg) = r.background {
            events.push(SpanEvent {
                time_unix_nano: self.unix(bg.ts),
                name: "background".into(),
                attributes: vec![kv_str("proctrace.background", bg.state.as_str())],
                dropped_attributes_count: 0,
            });
        }
        Span {
            trace_id: ids.trace.to_vec(),
            span_id: ids.span.to_vec(),
            trace_state: self.cfg.trace_state.clone(),
            parent_span_id: ids.parent.map(|p| p.to_vec()).unwrap_or_default(),
            name: program(r),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: self.unix(start),
            end_time_unix_nano: self.unix(end.max(start)),
            attributes: a,
            events,
            status: Some(status),
            ..Default::default()
        }
    }

    /// One image of a process of several, as a child span of its process's span: its own
    /// program, argv, executable and times (see the module docs). `end`: when the process has
    /// not exited (its last image runs to it).
    fn image_span(&self, ids: &SpanIds, im: &Image<'_>, span: [u8; 8], end: u64) -> Span {
        let r = im.record;
        let start = im.start_ns.or(r.start_ns).unwrap_or(self.header_ts);
        let end = im.end_ns.unwrap_or(end).max(start);
        let mut a = vec![
            kv_int("process.pid", r.pid as i64),
            kv_int("proctrace.image.index", im.index as i64 + 1),
            kv_int("proctrace.image.count", im.count as i64),
        ];
        if im.is_fork() {
            a.push(kv_bool("proctrace.image.fork", true));
        }
        self.program_attributes(&mut a, im.comm(), im.exec.and_then(|e| e.details.as_ref()));
        Span {
            trace_id: ids.trace.to_vec(),
            span_id: span.to_vec(),
            trace_state: self.cfg.trace_state.clone(),
            parent_span_id: ids.span.to_vec(),
            name: image_program(im),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: self.unix(start),
            end_time_unix_nano: self.unix(end),
            attributes: a,
            ..Default::default()
        }
    }

    /// The image spans of `r` (none for a process of one image: its span is the image).
    fn emit_images(&mut self, id: ProcId, ids: &SpanIds, r: &ProcessRecord, t: &Tracker, end: u64) {
        let fi = self.fork_images.remove(&id);
        let ims = match &fi {
            Some(f) => images_decided(r, f.stands.unwrap_or(false), f.inherited.as_deref()),
            None => images::images(t, r),
        };
        if ims.len() < 2 {
            return;
        }
        for im in ims {
            let span = self.alloc_span();
            let s = self.image_span(ids, &im, span, end);
            self.out.push(s);
        }
    }

    fn region_span(&self, ids: &SpanIds, g: &Region, span: [u8; 8], parent: [u8; 8]) -> Span {
        let mut a = vec![
            kv_str("trace2.category", &shown(&g.category)),
            kv_str("trace2.thread", &shown(&g.thread)),
            kv_int("trace2.nesting", g.nesting as i64),
        ];
        if let Some(m) = &g.msg {
            a.push(kv_str("trace2.msg", &shown(m)));
        }
        let name = region_name(&g.category, &g.label);
        Span {
            trace_id: ids.trace.to_vec(),
            span_id: span.to_vec(),
            trace_state: self.cfg.trace_state.clone(),
            parent_span_id: parent.to_vec(),
            name,
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: self.unix(g.ts),
            end_time_unix_nano: self.unix(g.end.max(g.ts)),
            attributes: a,
            ..Default::default()
        }
    }

    /// The regions `idx` of `r` as spans, each under the innermost region of its thread that
    /// encloses it at a lower nesting, else under the process.
    fn emit_regions(&mut self, ids: &SpanIds, r: &ProcessRecord, idx: &[usize]) {
        let regions: Vec<&Region> = idx.iter().filter_map(|&i| r.regions.get(i)).collect();
        // Ids in arrival order, so they do not depend on the sort below.
        let spans: Vec<[u8; 8]> = regions.iter().map(|_| self.alloc_span()).collect();
        let parents = region_parents(&regions);
        for (i, g) in regions.iter().enumerate() {
            let parent = parents[i].map_or(ids.span, |p| spans[p]);
            let s = self.region_span(ids, g, spans[i], parent);
            self.out.push(s);
        }
    }

    fn emit_process(&mut self, id: ProcId, t: &Tracker, end: Option<u64>, lost: Option<u64>) {
        let Some(ids) = self.ids_for(id, t) else { return };
        if ids.sent {
            return;
        }
        let Some(r) = t.get(id) else { return };
        let Some(end) = r.exit.map(|x| x.ts).or(end) else {
            return;
        };
        let lost = lost.or(ids.root.then(|| self.lost - ids.lost_before));
        let span = self.process_span(&ids, r, end, lost);
        self.out.push(span);
        self.emit_images(id, &ids, r, t, end);
        if let Some(idx) = self.deferred.remove(&id) {
            self.emit_regions(&ids, r, &idx);
        }
        if self.shape == Shape::Watch {
            self.ids.remove(&id);
        } else if let Some(i) = self.ids.get_mut(&id) {
            i.sent = true;
        }
    }
}

impl<D: SpanDest> Otlp<D> {
    /// A process came in: its parent (not yet exec'd) forked a child, which makes the parent's
    /// fork image stand; its own fork image is named after what its parent ran then.
    fn forked(&mut self, id: ProcId, t: &Tracker) {
        let Some(r) = t.get(id) else { return };
        let parent = r.parent.and_then(|p| Some((p, t.get(p)?)));
        if let Some((p, _)) = parent.filter(|(_, pr)| pr.execs.is_empty())
            && let Some(f) = self.fork_images.get_mut(&p)
        {
            f.forked_child = true;
        }
        let inherited = match (parent, r.start_ns) {
            (Some((_, pr)), Some(at)) if !r.pre_existing => comm_at(t, pr, at).map(str::to_owned),
            _ => None,
        };
        self.fork_images.insert(
            id,
            ForkImage {
                inherited,
                ..ForkImage::default()
            },
        );
    }
}

impl<D: SpanDest> Sink for Otlp<D> {
    /// A process's regions go with its span: at its exit, the command's at the end.
    fn notes_kept(&self) -> crate::model::tracker::NotesKept {
        crate::model::tracker::NotesKept::ToEnd
    }

    fn start(&mut self, h: &Header) -> io::Result<()> {
        self.shape = match h.mode {
            Mode::Run { .. } => Shape::Run,
            Mode::Watch { .. } => Shape::Watch,
            _ => Shape::Single,
        };
        self.offset = h.real_minus_mono;
        self.header_ts = h.ts;
        let mut attributes: Vec<KeyValue> = self.cfg.resource.iter().map(|(k, v)| kv_str(k, v)).collect();
        if let Some(host) = &h.tool.host
            && !self.cfg.resource.iter().any(|(k, _)| k == "host.name")
        {
            attributes.push(kv_str("host.name", host));
        }
        self.dest.start(Resource {
            attributes,
            ..Default::default()
        })
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        match *fact {
            Fact::Fork(id) => {
                self.ids_for(id, t);
                self.forked(id, t);
            }
            Fact::Exec { id, index: 0 } => {
                if let (Some(r), Some(f)) = (t.get(id), self.fork_images.get_mut(&id))
                    && f.stands.is_none()
                {
                    let stands = images::fork_image_stands_for(r, f.forked_child);
                    f.stands = Some(stands);
                    if !stands {
                        f.inherited = None;
                    }
                }
            }
            // `run` sends its command last, with the session's totals.
            Fact::Exit(id) if self.command != Some(id) => self.emit_process(id, t, None, None),
            Fact::Lost { count, .. } => self.lost += count,
            Fact::Region { id, index } => {
                let Some(ids) = self.ids.get(&id).copied() else {
                    return Ok(());
                };
                if ids.sent {
                    // After its process's span left: a child of it, unnested.
                    let Some(g) = t.get(id).and_then(|r| r.regions.get(index)) else {
                        return Ok(());
                    };
                    let span = self.alloc_span();
                    let s = self.region_span(&ids, g, span, ids.span);
                    self.out.push(s);
                } else {
                    // Regions arrive as they end, inner ones first: they are nested when the
                    // process's span is sent.
                    self.deferred.entry(id).or_default().push(index);
                }
            }
            _ => {}
        }
        // Offline input may bring thousands of facts between flushes: hand over full batches.
        if self.out.len() >= 512 {
            self.flush()?;
        }
        Ok(())
    }

    fn filtered(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        // A `watch` filter narrows what is shown, not the tree: ids still follow parentage so
        // a kept child nests under its (filtered) parent's trace.
        match *fact {
            Fact::Fork(id) => {
                self.ids_for(id, t);
            }
            Fact::Exit(id) if self.shape == Shape::Watch => {
                self.ids.remove(&id);
                self.fork_images.remove(&id);
            }
            _ => {}
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            let spans = std::mem::take(&mut self.out);
            self.dest.send(spans);
        }
        Ok(())
    }

    fn finish(&mut self, sum: &Summary, t: &Tracker) -> io::Result<()> {
        // Still running: a span up to the end of the session, in the order they appeared.
        let mut open: Vec<(ProcId, [u8; 8])> = self
            .ids
            .iter()
            .filter(|(id, i)| !i.sent && Some(**id) != self.command)
            .map(|(id, i)| (*id, i.span))
            .collect();
        open.sort_by_key(|&(id, _)| t.get(id).and_then(|r| r.start_ns));
        for (id, _) in open {
            self.emit_process(id, t, Some(sum.ts), None);
        }
        self.untraced = sum.capture.untraced;
        if let Some(c) = self.command {
            self.emit_process(c, t, Some(sum.ts), Some(sum.stats.lost));
        }
        self.flush()?;
        let d = self.dest.finish();
        if d.undelivered > 0 {
            crate::say!(
                "proctrace: otlp: {} spans not delivered: {}",
                d.undelivered,
                d.reason.as_deref().unwrap_or("unknown reason")
            );
        }
        Ok(())
    }
}

/// `--otlp ENDPOINT` (or the `OTEL_EXPORTER_OTLP_*` variables): spans to a collector.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "otlp",
    short: None,
    value_name: "ENDPOINT",
    help: "Export every process as an OpenTelemetry span to the collector at ENDPOINT (OTLP/HTTP, \
           protobuf, gzip; `/v1/traces` is appended, e.g. http://127.0.0.1:4318). Also turned on by \
           OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_EXPORTER_OTLP_HEADERS, \
           OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and TRACEPARENT are honoured",
    what: "OTLP export",
    golden: None,
    dest: crate::output::DestKind::Endpoint,
    live_only: false,
    make: crate::output::Make::Stream(|_, s| match &s.otlp {
        Some(cfg) => Ok(Box::new(OtlpSink::export(cfg.clone(), s.redact))),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no OTLP settings",
        )),
    }),
};

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::path::Path;
    use std::rc::Rc;

    use super::*;
    use crate::cmd::replay::{parse_capture, replay};
    use crate::model::session::Tool;
    use crate::sink::Fanout;
    use crate::sink::golden::CAPTURES;

    /// Keeps what was sent.
    #[derive(Clone, Default)]
    struct Memory(Rc<RefCell<(Option<Resource>, Vec<Span>)>>);

    impl SpanDest for Memory {
        fn start(&mut self, resource: Resource) -> io::Result<()> {
            self.0.borrow_mut().0 = Some(resource);
            Ok(())
        }
        fn send(&mut self, spans: Vec<Span>) {
            self.0.borrow_mut().1.extend(spans);
        }
        fn finish(&mut self) -> Delivery {
            Delivery {
                delivered: self.0.borrow().1.len() as u64,
                ..Delivery::default()
            }
        }
    }

    fn cfg(parent: Option<TraceParent>) -> OtlpConfig {
        OtlpConfig {
            url: "http://127.0.0.1:1/v1/traces".into(),
            headers: Vec::new(),
            gzip: true,
            timeout: std::time::Duration::from_secs(1),
            resource: vec![("service.name".into(), "proctrace".into())],
            parent,
            parent_error: None,
            trace_state: String::new(),
            seed: 42,
            propagate: true,
            offline: false,
        }
    }

    /// A record as the test compares it: pid, parent's pid, exit, number of regions.
    type Rec = (i32, Option<i32>, Option<ExitStatus>, usize);

    /// Replays a capture as `run` into the sink; the tracker's records (pid, parent pid, exit
    /// code, regions) and the spans.
    fn export(name: &str, parent: Option<TraceParent>) -> (Vec<Rec>, Vec<Span>, Resource) {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/captures/{name}.jsonl"));
        let text = std::fs::read(&path).unwrap();
        let mut cap = parse_capture(text.as_slice(), &path.to_string_lossy()).unwrap();
        cap.header = None;
        let root = cap.command_pid().unwrap();
        let header = Header {
            mode: Mode::Run {
                argv: vec!["x".into()],
            },
            ts: cap.events.iter().find_map(|e| e.ts()).unwrap_or(0),
            real_minus_mono: 1_717_243_200_000_000_000,
            tool: Tool {
                pid: 1,
                argv: vec![],
                version: "0".into(),
                parent_sid: None,
                host: Some("golden-host".into()),
                utc_offset: None,
            },
            backend: None,
            refused: Vec::new(),
            files: false,
            daemons: Vec::new(),
        };
        let mem = Memory::default();
        let mut sinks = Fanout::new();
        sinks.add(
            "otlp",
            "memory",
            Box::new(Otlp::new(cfg(parent), true, mem.clone())),
        );
        let (engine, _) = replay(&cap, Some(root), sinks, header);
        assert!(engine.sinks.failures().is_empty());
        let t = &engine.tracker;
        let mut recs = Vec::new();
        let mut todo: Vec<ProcId> = t.roots().to_vec();
        while let Some(id) = todo.pop() {
            let r = t.get(id).unwrap();
            todo.extend(r.children.iter().copied());
            let parent = r.parent.and_then(|p| t.get(p)).map(|p| p.pid);
            recs.push((r.pid, parent, r.exit.and_then(|x| x.status), r.regions.len()));
        }
        let (res, spans) = mem.0.borrow().clone();
        (recs, spans, res.unwrap())
    }

    /// A process's span (not one of its images', not a region's).
    fn is_process(s: &Span) -> bool {
        int_attr(s, "process.pid").is_some() && int_attr(s, "proctrace.image.index").is_none()
    }

    fn int_attr(s: &Span, k: &str) -> Option<i64> {
        s.attributes
            .iter()
            .find(|a| a.key == k)
            .and_then(|a| match a.value.as_ref()?.value {
                Some(any_value::Value::IntValue(i)) => Some(i),
                _ => None,
            })
    }

    /// What a process cost is in its span's attributes (values from the capture: cc1 of
    /// `f4.c` in the recorded `make -j2`), and nowhere in a trace without figures.
    #[test]
    fn measured_processes_carry_cost_attributes() {
        let f64_attr = |s: &Span, k: &str| -> Option<f64> {
            s.attributes
                .iter()
                .find(|a| a.key == k)
                .and_then(|a| match a.value.as_ref()?.value {
                    Some(any_value::Value::DoubleValue(v)) => Some(v),
                    _ => None,
                })
        };
        let (_, spans, _) = export("make-j2-usage", None);
        let procs: Vec<&Span> = spans.iter().filter(|s| is_process(s)).collect();
        assert_eq!(procs.len(), 19);
        assert!(
            procs
                .iter()
                .all(|s| f64_attr(s, "proctrace.cpu.time.user").is_some())
        );
        let cc1 = procs
            .iter()
            .find(|s| int_attr(s, "process.pid") == Some(15108))
            .unwrap();
        assert_eq!(f64_attr(cc1, "proctrace.cpu.time.user"), Some(2.116118453));
        assert_eq!(f64_attr(cc1, "proctrace.cpu.time.system"), Some(0.070124062));
        assert_eq!(int_attr(cc1, "proctrace.memory.peak_rss"), Some(65808 * 1024));
        assert_eq!(int_attr(cc1, "proctrace.io.read_chars"), Some(50176));
        assert_eq!(int_attr(cc1, "proctrace.io.write_chars"), Some(145408));
        assert_eq!(int_attr(cc1, "proctrace.disk.io.write"), Some(147456));
        assert_eq!(int_attr(cc1, "proctrace.context_switches.involuntary"), Some(626));
        assert_eq!(f64_attr(cc1, "proctrace.delay.cpu"), Some(3.104909964));
        assert_eq!(
            f64_attr(cc1, "proctrace.delay.io"),
            None,
            "not accounted on that run"
        );

        let (_, spans, _) = export("make-j2", None);
        assert!(spans.iter().all(|s| {
            s.attributes
                .iter()
                .all(|a| !a.key.starts_with("proctrace.cpu") && !a.key.starts_with("proctrace.memory"))
        }));
    }

    #[test]
    fn every_capture_maps_to_one_span_per_process_nested_as_the_tree() {
        let mut nested = 0;
        for name in CAPTURES {
            let (recs, spans, res) = export(name, None);
            assert_eq!(res.attributes.len(), 2, "{name}: service.name and host.name");
            let procs: Vec<&Span> = spans.iter().filter(|s| is_process(s)).collect();
            let regions = spans
                .iter()
                .filter(|s| int_attr(s, "process.pid").is_none())
                .count();
            assert_eq!(procs.len(), recs.len(), "{name}");
            assert_eq!(regions, recs.iter().map(|r| r.3).sum::<usize>(), "{name}");
            let trace = &spans[0].trace_id;
            assert!(spans.iter().all(|s| &s.trace_id == trace), "{name}: one trace");
            let mut by_span: HashMap<&[u8], &Span> = HashMap::new();
            for s in &spans {
                assert!(
                    by_span.insert(&s.span_id, s).is_none(),
                    "{name}: span ids are unique"
                );
            }
            // The command's span is span 0, known before it ran.
            let root = recs.first().unwrap();
            let root_span = procs
                .iter()
                .find(|s| int_attr(s, "process.pid") == Some(root.0 as i64))
                .unwrap();
            assert_eq!(root_span.span_id, span_id(42, 0));
            assert!(root_span.parent_span_id.is_empty());
            for (pid, parent, status, _) in &recs {
                // Pids may be reused within a capture: match by pid and parent.
                let s = procs
                    .iter()
                    .find(|s| {
                        int_attr(s, "process.pid") == Some(*pid as i64)
                            && match parent {
                                Some(pp) => by_span
                                    .get(s.parent_span_id.as_slice())
                                    .is_some_and(|p| int_attr(p, "process.pid") == Some(*pp as i64)),
                                None => s.parent_span_id.is_empty(),
                            }
                    })
                    .unwrap_or_else(|| panic!("{name}: no span for pid {pid} under {parent:?}"));
                let error = s.status.as_ref().unwrap().code == StatusCode::Error as i32;
                let failed = matches!(status, Some(ExitStatus::Code(c)) if *c != 0)
                    || matches!(status, Some(ExitStatus::Signal { .. }));
                assert_eq!(error, failed, "{name}: pid {pid} {status:?}");
                assert!(s.end_time_unix_nano >= s.start_time_unix_nano);
                assert!(s.start_time_unix_nano > 1_717_243_200_000_000_000);
            }
            let thread = |s: &Span| s.attributes.iter().find(|a| a.key == "trace2.thread").cloned();
            for s in spans.iter().filter(|s| int_attr(s, "process.pid").is_none()) {
                // A region nests in a region of its thread with a lower nesting that encloses
                // it, else in its process.
                let p = by_span[s.parent_span_id.as_slice()];
                let n = int_attr(s, "trace2.nesting").unwrap();
                let encloses = |q: &Span| {
                    int_attr(q, "trace2.nesting").is_some_and(|m| m < n)
                        && thread(q) == thread(s)
                        && q.start_time_unix_nano <= s.start_time_unix_nano
                        && s.end_time_unix_nano <= q.end_time_unix_nano
                };
                if int_attr(p, "process.pid").is_none() {
                    assert!(encloses(p), "{name}: {s:?} under {p:?}");
                    nested += 1;
                } else {
                    let siblings = |q: &&Span| q.parent_span_id == s.parent_span_id;
                    assert!(
                        !spans.iter().filter(siblings).any(encloses),
                        "{name}: {s:?} has an enclosing region but sits under its process"
                    );
                }
            }
        }
        assert!(nested > 0, "git-regions has nested regions");
    }

    /// A process that exec'd twice (`exec-twice`: shapes → /proc/self/exe → echo) has one
    /// child span per image, one after the other over its life, each with its own argv; its
    /// own span stays one, with its `exec` events.
    #[test]
    fn each_image_is_a_child_span_of_its_process() {
        let (_, spans, _) = export("exec-twice", None);
        let process = spans.iter().find(|s| is_process(s)).unwrap();
        let images: Vec<&Span> = spans
            .iter()
            .filter(|s| int_attr(s, "proctrace.image.index").is_some())
            .collect();
        let names: Vec<&str> = images.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["shapes", "exe", "echo"]);
        let mut at = process.start_time_unix_nano;
        for (k, s) in images.iter().enumerate() {
            assert_eq!(s.parent_span_id, process.span_id);
            assert_eq!(int_attr(s, "proctrace.image.index"), Some(k as i64 + 1));
            assert_eq!(int_attr(s, "proctrace.image.count"), Some(3));
            assert_eq!(int_attr(s, "process.pid"), int_attr(process, "process.pid"));
            assert_eq!(s.start_time_unix_nano, at);
            assert!(s.end_time_unix_nano > s.start_time_unix_nano);
            at = s.end_time_unix_nano;
            let argv = s.attributes.iter().find(|a| a.key == "process.command_args");
            let first = argv.and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                any_value::Value::ArrayValue(v) => match v.values.first()?.value.as_ref()? {
                    any_value::Value::StringValue(w) => Some(w.clone()),
                    _ => None,
                },
                _ => None,
            });
            let want = ["/tmp/shapes", "/proc/self/exe", "/bin/echo"][k];
            assert_eq!(first.as_deref(), Some(want));
        }
        assert_eq!(at, process.end_time_unix_nano);
        assert_eq!(process.events.iter().filter(|e| e.name == "exec").count(), 3);
    }

    #[test]
    fn spans_are_a_function_of_the_events_and_join_the_callers_trace() {
        let (_, a, _) = export("make-j2", None);
        let (_, b, _) = export("make-j2", None);
        assert_eq!(a, b);
        let caller = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        let (_, c, _) = export("make-j2", Some(caller));
        assert!(c.iter().all(|s| s.trace_id == caller.trace_id));
        let roots: Vec<&Span> = c.iter().filter(|s| s.parent_span_id == caller.span_id).collect();
        assert_eq!(roots.len(), 1);
        assert_eq!(roots[0].span_id, command_traceparent(&cfg(Some(caller))).span_id);
        assert_eq!(command_traceparent(&cfg(Some(caller))).trace_id, caller.trace_id);
        assert_eq!(command_traceparent(&cfg(None)).trace_id.to_vec(), a[0].trace_id);
    }

    #[test]
    fn ids_are_never_zero_and_differ() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..10_000 {
            let s = span_id(0, n);
            assert_ne!(s, [0; 8]);
            assert!(seen.insert(s));
        }
        assert_ne!(trace_id(1, 0), trace_id(1, 1));
        assert_ne!(trace_id(1, 0), trace_id(2, 0));
    }
}
