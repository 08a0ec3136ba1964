//! A [`tracing_subscriber::Layer`] that writes what a program reports
//! through the `tracing` crate as Trace2 (feature `tracing`).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! // Configured by MYAPP_TRACE2_EVENT=…, MYAPP_TRACE2_PERF=…, MYAPP_TRACE2=… as `trace2::init`.
//! tracing_subscriber::registry().with(trace2::layer!("MYAPP")).init();
//! ```
//!
//! # The session
//!
//! Building the layer ([`Trace2Layer::from_env`], [`Trace2Layer::new`] or
//! [`layer!`](crate::layer!)) calls [`crate::init`](fn@crate::init): `version`, `start` and
//! `cmd_ancestry` are written then, with the SID nested under
//! `<PREFIX>_TRACE2_PARENT_SID` or `GIT_TRACE2_PARENT_SID` — a program run
//! by git (an alias `!prog`, a hook, `git-foo`) is a child session of git's.
//! The constructor returns `None` when no target is configured; `Option<L>`
//! is itself a layer and tells `tracing` that it wants nothing, so every
//! macro then costs what it costs with no subscriber (one atomic load).
//!
//! The layer also registers an exit hook (glibc `on_exit`) that writes
//! `exit` with the status the process really exits with — `main` returning,
//! `std::process::exit(n)`, or 101 after a panic in `main` — unless the
//! program called [`crate::exit`] itself; `atexit` follows as with the
//! native API. A process killed by a signal writes neither, as git.
//!
//! # Mapping
//!
//! * **Spans → regions.** Each time a span is *entered* on a thread,
//!   `region_enter` is written (category = the span's target, label = the
//!   span's name, `msg` = its fields as `name=value` separated by spaces,
//!   fields recorded later included), and each exit writes `region_leave`
//!   on that thread. Nesting is per thread: a span entered on two threads
//!   is two regions, one in each thread's nesting; a span entered again
//!   while entered (recursion) nests again; an instrumented future writes
//!   one region per poll. If spans are exited out of order, the regions
//!   entered after the exiting one are left first so that every thread's
//!   nesting stays balanced (their own exits then write nothing).
//!   `region_leave` carries the span's target and name again, no `msg`.
//! * **Events → `printf`, `error` and `data`.** The message (the `message`
//!   field a format string gives) becomes `printf`, or `error` for events at
//!   level `ERROR`; every other field becomes one `data` event (category =
//!   the event's target, key = the field's name, value = the value as text:
//!   strings as they are, numbers and booleans in decimal, `?x` with
//!   `Debug` and `%x` with `Display`). They are written in field order,
//!   which for the macros is the message first. Fields named `log.*` (added
//!   by `tracing-log` to events from the `log` crate) are skipped.
//! * **File and line** come from the callsite's metadata (the macro's
//!   location); the level is not written (filter by level with `tracing`'s
//!   own filters, e.g. `layer.with_filter(LevelFilter::INFO)`).
//! * **Threads.** The thread that built the layer is `main`. Another thread
//!   writes `thread_start` (named `thNN:<its Rust name or "unknown">`) the
//!   first time it reports something, and `thread_exit` when it ends (from
//!   a thread-local destructor), unless it called [`crate::thread_start`]
//!   itself.
//!
//! Trace2's own limits apply: the event target drops events nested deeper
//! than `<PREFIX>_TRACE2_EVENT_NESTING` (default 2); the normal target
//! writes only `printf`, `error` and the session events.

use std::cell::{Cell, RefCell};
use std::fmt::{self, Write as _};
use std::sync::Once;

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::api::Src;
use crate::api::located;
use crate::config::Config;

/// Writes `tracing` spans and events as Trace2 regions, `data`, `printf`
/// and `error` (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct Trace2Layer {
    span_fields: bool,
    threads: bool,
}

/// The fields of a span, formatted for `region_enter`'s `msg`.
struct SpanMsg(String);

thread_local! {
    /// Ids of the spans this thread entered, innermost last.
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// Whether this thread's trace2 identity was checked.
    static THREAD_SEEN: Cell<bool> = const { Cell::new(false) };
    /// Formatting buffer for field values.
    static VALUE: RefCell<String> = const { RefCell::new(String::new()) };
    /// Writes `thread_exit` when a thread the layer named ends.
    static THREAD_EXIT: ThreadExit = const { ThreadExit };
}

struct ThreadExit;

impl Drop for ThreadExit {
    fn drop(&mut self) {
        crate::thread_exit();
    }
}

static EXIT_HOOK: Once = Once::new();

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn on_exit_hook(code: libc::c_int, _arg: *mut libc::c_void) {
    let _ = std::panic::catch_unwind(|| located::exit_unless_reported(code));
}

fn register_exit_hook() {
    EXIT_HOOK.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        crate::sys::register_on_exit(on_exit_hook);
    });
}

impl Trace2Layer {
    /// Turns tracing on from `<prefix>_TRACE2*` variables ([`crate::init`](fn@crate::init)
    /// with [`Config::from_env`]) and returns the layer, or `None` if no
    /// target is on. `version.exe` is this crate's version; the
    /// [`layer!`](crate::layer!) macro uses the calling crate's.
    #[track_caller]
    pub fn from_env(prefix: &str) -> Option<Trace2Layer> {
        Trace2Layer::new(Config::from_env(prefix))
    }

    /// Turns tracing on from `config` ([`crate::init`](fn@crate::init)) and returns the
    /// layer, or `None` if no target is on.
    #[track_caller]
    pub fn new(config: Config) -> Option<Trace2Layer> {
        if crate::init(config) {
            Trace2Layer::current()
        } else {
            None
        }
    }

    /// The layer for a program that already called [`crate::init`](fn@crate::init), or
    /// `None` if tracing is off.
    pub fn current() -> Option<Trace2Layer> {
        if !crate::is_enabled() {
            return None;
        }
        register_exit_hook();
        Some(Trace2Layer {
            span_fields: true,
            threads: true,
        })
    }

    /// Whether a span's fields become `region_enter`'s `msg` (default on).
    pub fn span_fields(mut self, on: bool) -> Trace2Layer {
        self.span_fields = on;
        self
    }

    /// Whether threads other than `main` write `thread_start` and
    /// `thread_exit` (default on). Off, they are named `thNN:unknown` and
    /// write neither, as with the native API.
    pub fn thread_events(mut self, on: bool) -> Trace2Layer {
        self.threads = on;
        self
    }

    /// Gives the calling thread a trace2 identity the first time it reports.
    #[inline]
    fn see_thread(&self, meta: &'static Metadata<'static>) {
        if !self.threads || THREAD_SEEN.with(|s| s.replace(true)) {
            return;
        }
        if located::thread_known() {
            return;
        }
        // `thread::current` may panic in a thread-local destructor (a first
        // report from there); such a thread is named "unknown".
        let name = std::panic::catch_unwind(|| std::thread::current().name().map(str::to_owned))
            .ok()
            .flatten();
        located::thread_start_at(src(meta), name.as_deref().unwrap_or("unknown"));
        // Registered after the API's own thread-locals, so destroyed before them.
        THREAD_EXIT.with(|_| {});
    }
}

fn src(meta: &'static Metadata<'static>) -> Src<'static> {
    Src {
        file: meta.file(),
        line: meta.line().unwrap_or(0),
    }
}

impl<S> tracing_subscriber::Layer<S> for Trace2Layer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn max_level_hint(&self) -> Option<tracing_core::LevelFilter> {
        if crate::is_enabled() {
            None
        } else {
            Some(tracing_core::LevelFilter::OFF)
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !self.span_fields || !crate::is_enabled() || attrs.values().is_empty() {
            return;
        }
        let mut msg = String::new();
        attrs.record(&mut MsgVisitor(&mut msg));
        if msg.is_empty() {
            return;
        }
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanMsg(msg));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !self.span_fields || !crate::is_enabled() || values.is_empty() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        match ext.get_mut::<SpanMsg>() {
            Some(SpanMsg(msg)) => values.record(&mut MsgVisitor(msg)),
            None => {
                let mut msg = String::new();
                values.record(&mut MsgVisitor(&mut msg));
                if !msg.is_empty() {
                    ext.insert(SpanMsg(msg));
                }
            }
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !crate::is_enabled() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let meta = span.metadata();
        self.see_thread(meta);
        {
            let ext = span.extensions();
            let msg = ext.get::<SpanMsg>().map(|m| m.0.as_str());
            located::region_enter_at(src(meta), meta.target(), meta.name(), msg);
        }
        let _ = STACK.try_with(|s| s.borrow_mut().push(id.into_u64()));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if !crate::is_enabled() {
            return;
        }
        let n = id.into_u64();
        let _ = STACK.try_with(|s| {
            let mut stack = s.borrow_mut();
            let Some(pos) = stack.iter().rposition(|&x| x == n) else {
                return;
            };
            while stack.len() > pos {
                let Some(top) = stack.pop() else { break };
                match ctx.span(&Id::from_u64(top)) {
                    Some(span) => {
                        let meta = span.metadata();
                        located::region_leave_at(src(meta), Some(meta.target()), Some(meta.name()));
                    }
                    None => located::region_leave_at(Src { file: None, line: 0 }, None, None),
                }
            }
        });
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !crate::is_enabled() {
            return;
        }
        let meta = event.metadata();
        self.see_thread(meta);
        let mut v = EventVisitor {
            src: src(meta),
            target: meta.target(),
            error: *meta.level() == Level::ERROR,
        };
        event.record(&mut v);
    }
}

/// Formats `span` fields as `name=value name=value`.
struct MsgVisitor<'a>(&'a mut String);

impl MsgVisitor<'_> {
    fn sep(&mut self, field: &Field) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        self.0.push_str(field.name());
        self.0.push('=');
    }
}

impl Visit for MsgVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.sep(field);
        self.0.push_str(value);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.sep(field);
        let _ = write!(self.0, "{value:?}");
    }
}

/// Writes each field of an event as it is visited.
struct EventVisitor<'a> {
    src: Src<'static>,
    target: &'a str,
    error: bool,
}

impl EventVisitor<'_> {
    fn emit(&self, field: &Field, value: &str) {
        let name = field.name();
        if name == "message" {
            if self.error {
                located::error_at(self.src, value);
            } else {
                located::printf_at(self.src, value);
            }
        } else if !name.starts_with("log.") {
            located::data_at(self.src, self.target, name, value);
        }
    }

    /// Formats `value` into the thread's buffer (a fresh one if a value's
    /// formatting reports through `tracing` itself) and emits it.
    fn emit_fmt(&self, field: &Field, value: fmt::Arguments<'_>) {
        let with = |buf: &mut String| {
            buf.clear();
            let _ = buf.write_fmt(value);
            self.emit(field, buf);
        };
        let done = VALUE
            .try_with(|b| match b.try_borrow_mut() {
                Ok(mut b) => {
                    with(&mut b);
                    true
                }
                Err(_) => false,
            })
            .unwrap_or(false);
        if !done {
            with(&mut String::new());
        }
    }
}

impl Visit for EventVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.emit(field, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.emit_fmt(field, format_args!("{value}"));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.emit_fmt(field, format_args!("{value}"));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.emit_fmt(field, format_args!("{value}"));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.emit_fmt(field, format_args!("{value}"));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.emit_fmt(field, format_args!("{value:?}"));
    }
}

/// A [`Trace2Layer`] from `<prefix>_TRACE2*` variables with the calling
/// crate's version (`CARGO_PKG_VERSION`) as `version.exe`; `None` if no
/// target is on. Needs the `tracing` feature.
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt;
/// use tracing_subscriber::util::SubscriberInitExt;
///
/// tracing_subscriber::registry().with(trace2::layer!("MYAPP")).init();
/// ```
#[macro_export]
macro_rules! layer {
    ($prefix:expr) => {
        $crate::layer::Trace2Layer::new(
            $crate::Config::from_env($prefix).app_version(env!("CARGO_PKG_VERSION")),
        )
    };
}
