//! The process-wide instrumentation API: free functions that build an
//! [`Event`] and hand it to every enabled target (normal → perf → event).
//!
//! Every function first does one relaxed load of a global flag and returns
//! if tracing is off; nothing else happens on that path. State that must
//! survive until the C `atexit` hook (the main thread's regions, timers and
//! counters) lives in the global runtime, not in thread-locals, because
//! thread-local destructors run before `atexit` hooks.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use crate::config::Config;
use crate::dst::{Destination, DestinationSpec, DstError, OpenOptions};
use crate::event::{EVENT_FORMAT_VERSION, Event, EventKind, ReadyState, Str};
use crate::format::{FormatOptions, Target, TargetKind};
use crate::sid::Sid;
use crate::time::Timestamp;

#[cfg(feature = "tracing")]
pub(crate) mod located;

static ENABLED: AtomicBool = AtomicBool::new(false);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

thread_local! {
    static IS_MAIN: Cell<bool> = const { Cell::new(false) };
    static CTX: RefCell<Option<ThreadCtx>> = const { RefCell::new(None) };
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

struct TargetSlot {
    kind: TargetKind,
    opts: FormatOptions,
    dst: Destination,
}

#[derive(Default, Clone, Copy)]
struct TimerStats {
    intervals: u64,
    total_ns: u64,
    min_ns: u64,
    max_ns: u64,
    recursion: u32,
    started: Option<Instant>,
}

impl TimerStats {
    fn merge(&mut self, o: &TimerStats) {
        if o.intervals == 0 {
            return;
        }
        if self.intervals == 0 {
            self.min_ns = o.min_ns;
            self.max_ns = o.max_ns;
        } else {
            self.min_ns = self.min_ns.min(o.min_ns);
            self.max_ns = self.max_ns.max(o.max_ns);
        }
        self.intervals += o.intervals;
        self.total_ns += o.total_ns;
    }
}

struct ThreadCtx {
    name: String,
    /// Start times (µs since process start) of the thread and each open region.
    stack: Vec<u64>,
    timers: Vec<TimerStats>,
    counters: Vec<u64>,
}

impl ThreadCtx {
    fn new(name: String, now_us: u64) -> ThreadCtx {
        ThreadCtx {
            name,
            stack: vec![now_us],
            timers: Vec::new(),
            counters: Vec::new(),
        }
    }
    fn nesting(&self) -> u32 {
        u32::try_from(self.stack.len()).unwrap_or(u32::MAX)
    }
}

struct Runtime {
    sid: Sid,
    start: Instant,
    targets: Vec<TargetSlot>,
    redact: bool,
    prefix: String,
    env_vars: Vec<String>,
    config_params: Vec<String>,
    parent_name: Option<String>,
    hierarchy: Mutex<Option<String>>,
    listed_params: AtomicBool,
    next_child: AtomicI64,
    next_exec: AtomicI64,
    next_repo: AtomicI64,
    next_thread: AtomicU32,
    exit_code: AtomicI64,
    atexit_done: AtomicBool,
    main_ctx: Mutex<ThreadCtx>,
    final_timers: Mutex<Vec<TimerStats>>,
    final_counters: Mutex<Vec<u64>>,
}

/// A source location: file (`None` omits it) and line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Src<'a> {
    pub(crate) file: Option<&'a str>,
    pub(crate) line: u32,
}

impl Src<'static> {
    /// Where the (`#[track_caller]`) caller was called from.
    #[track_caller]
    pub(crate) fn caller() -> Self {
        let l = Location::caller();
        Src {
            file: Some(l.file()),
            line: l.line(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runtime {
    fn now_us(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Runs `f` with this thread's context, creating `thNN:unknown` if needed.
    fn with_ctx<R>(&self, f: impl FnOnce(&mut ThreadCtx) -> R) -> Option<R> {
        if IS_MAIN.with(|m| m.get()) {
            let mut g = lock(&self.main_ctx);
            return Some(f(&mut g));
        }
        CTX.try_with(|c| {
            let mut c = c.borrow_mut();
            let ctx = c.get_or_insert_with(|| {
                let id = self.next_thread.fetch_add(1, Ordering::Relaxed);
                ThreadCtx::new(thread_name(id, "unknown"), self.now_us())
            });
            f(ctx)
        })
        .ok()
    }

    fn redact_vec<'a>(&self, argv: impl IntoIterator<Item = &'a str>) -> Vec<Str<'a>> {
        argv.into_iter().map(|a| self.redact_one(a)).collect()
    }

    fn redact_one<'a>(&self, a: &'a str) -> Str<'a> {
        if self.redact
            && let Some(r) = crate::quote::redact_url(a)
        {
            return Cow::Owned(r);
        }
        Cow::Borrowed(a)
    }

    /// Formats and writes one event on every target.
    fn write(&self, ev: &Event<'_>) {
        let write_with = |buf: &mut Vec<u8>| {
            for t in &self.targets {
                if t.dst.is_disabled() {
                    continue;
                }
                buf.clear();
                if t.kind.format(ev, &t.opts, buf) {
                    let _ = t.dst.write_line_buf(buf);
                }
            }
        };
        if BUF.try_with(|b| write_with(&mut b.borrow_mut())).is_err() {
            write_with(&mut Vec::new());
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        thread: &str,
        nesting: u32,
        loc: Option<&Location<'_>>,
        repo: Option<i64>,
        t_abs: Option<u64>,
        kind: EventKind<'_>,
    ) {
        let (file, line) = loc.map_or((None, 0), |l| (Some(l.file()), l.line()));
        self.emit_src(thread, nesting, file, line, repo, t_abs, kind);
    }

    /// [`Runtime::emit`] with the source location as data.
    #[allow(clippy::too_many_arguments)]
    fn emit_src(
        &self,
        thread: &str,
        nesting: u32,
        file: Option<&str>,
        line: u32,
        repo: Option<i64>,
        t_abs: Option<u64>,
        kind: EventKind<'_>,
    ) {
        let ev = Event {
            sid: Cow::Borrowed(self.sid.as_str()),
            thread: Cow::Borrowed(thread),
            time: Some(Timestamp::now()),
            file: file.map(Cow::Borrowed),
            line,
            repo,
            nesting,
            t_abs: t_abs.map(us_to_s),
            kind,
        };
        self.write(&ev);
    }

    /// Emits from the calling thread's context.
    fn emit_here(&self, loc: &Location<'_>, repo: Option<i64>, kind: EventKind<'_>) {
        let now = self.now_us();
        self.with_ctx(|ctx| self.emit(&ctx.name, ctx.nesting(), Some(loc), repo, Some(now), kind));
    }

    fn emit_metrics(&self, timers: &[TimerStats], counters: &[u64], per_thread: bool, ctx_name: &str) {
        let loc = Location::caller();
        for (i, t) in timers.iter().enumerate() {
            let Some(meta) = TIMER_REGISTRY.get(i) else {
                continue;
            };
            if t.intervals == 0 || (per_thread && !meta.per_thread) {
                continue;
            }
            let kind = EventKind::Timer {
                per_thread,
                category: Cow::Borrowed(meta.category),
                name: Cow::Borrowed(meta.name),
                intervals: t.intervals,
                t_total: t.total_ns as f64 / 1e9,
                t_min: t.min_ns as f64 / 1e9,
                t_max: t.max_ns as f64 / 1e9,
            };
            self.emit(ctx_name, 1, Some(loc), None, None, kind);
        }
        for (i, &v) in counters.iter().enumerate() {
            let Some(meta) = COUNTER_REGISTRY.get(i) else {
                continue;
            };
            if v == 0 || (per_thread && !meta.per_thread) {
                continue;
            }
            let kind = EventKind::Counter {
                per_thread,
                category: Cow::Borrowed(meta.category),
                name: Cow::Borrowed(meta.name),
                count: v,
            };
            self.emit(ctx_name, 1, Some(loc), None, None, kind);
        }
    }

    fn merge_final(&self, ctx: &ThreadCtx) {
        let mut ft = lock(&self.final_timers);
        if ft.len() < ctx.timers.len() {
            ft.resize(ctx.timers.len(), TimerStats::default());
        }
        for (f, t) in ft.iter_mut().zip(&ctx.timers) {
            f.merge(t);
        }
        drop(ft);
        let mut fc = lock(&self.final_counters);
        if fc.len() < ctx.counters.len() {
            fc.resize(ctx.counters.len(), 0);
        }
        for (f, c) in fc.iter_mut().zip(&ctx.counters) {
            *f = f.wrapping_add(*c);
        }
    }

    /// git's `tr2_cfg_list_config_fl`: one `def_param` per config entry
    /// whose key matches a `configParams` pattern. The configuration is
    /// read once, here, only when there are patterns; if it cannot be read
    /// (git would have died already) nothing is listed.
    fn list_config(&self, loc: &Location<'_>) {
        if self.config_params.is_empty() {
            return;
        }
        let Ok(entries) = crate::gitconfig::read_early_config() else {
            return;
        };
        for e in entries {
            if crate::gitconfig::key_matches(&self.config_params, &e.key) {
                let kind = EventKind::DefParam {
                    scope: Some(Cow::Borrowed(e.scope.name())),
                    param: Cow::Borrowed(&e.key),
                    value: e.value.as_deref().map(|v| self.redact_one(v)),
                };
                self.emit_here(loc, None, kind);
            }
        }
    }

    fn do_atexit(&self) {
        if self.atexit_done.swap(true, Ordering::SeqCst) {
            return;
        }
        let now = self.now_us();
        let (name, timers, counters) = {
            let mut main = lock(&self.main_ctx);
            main.stack.truncate(1);
            self.merge_final(&main);
            (main.name.clone(), main.timers.clone(), main.counters.clone())
        };
        self.emit_metrics(&timers, &counters, true, &name);
        let ft = lock(&self.final_timers).clone();
        let fc = lock(&self.final_counters).clone();
        self.emit_metrics(&ft, &fc, false, &name);
        let code = i32::try_from(self.exit_code.load(Ordering::Relaxed)).unwrap_or(0);
        self.emit(
            &name,
            1,
            Some(Location::caller()),
            None,
            Some(now),
            EventKind::Atexit { code },
        );
        ENABLED.store(false, Ordering::Relaxed);
    }
}

fn us_to_s(us: u64) -> f64 {
    us as f64 / 1_000_000.0
}

fn thread_name(id: u32, base: &str) -> String {
    let mut s = if id == 0 {
        base.to_string()
    } else {
        format!("th{id:02}:{base}")
    };
    if s.len() > 24 {
        let mut cut = 24;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

#[inline(always)]
fn rt() -> Option<&'static Runtime> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    RUNTIME.get()
}

/// Whether any target is on (one relaxed atomic load).
#[inline]
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// This process's SID, if tracing is on.
pub fn sid() -> Option<String> {
    rt().map(|r| r.sid.as_str().to_string())
}

/// The variable prefix given at init (`GIT`, `MYAPP`…), if tracing is on.
pub fn prefix() -> Option<String> {
    rt().map(|r| r.prefix.clone())
}

/// The current command hierarchy (`parent/…/name`), if a `cmd_name` was emitted.
pub fn hierarchy() -> Option<String> {
    rt().and_then(|r| lock(&r.hierarchy).clone())
}

extern "C" fn atexit_hook() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(r) = rt() {
            r.do_atexit();
        }
    });
}

/// Turns tracing on from `config` (once per process). Opens the targets'
/// destinations, computes the SID, emits `version` (and `too_many_files`),
/// `start` and `cmd_ancestry`, and registers a C `atexit` hook that emits
/// the process totals and `atexit`. Returns whether any target is on.
///
/// The calling thread becomes the `main` thread.
#[track_caller]
pub fn init(config: Config) -> bool {
    let loc = Location::caller();
    if RUNTIME.get().is_some() {
        return is_enabled();
    }
    let start = Instant::now();
    let sid = Sid::for_current_process(config.parent_sid.as_deref());
    let mut targets = Vec::new();
    for kind in TargetKind::ALL {
        let Some(value) = config.targets[match kind {
            TargetKind::Normal => 0,
            TargetKind::Perf => 1,
            TargetKind::Event => 2,
        }]
        .as_deref() else {
            continue;
        };
        let opts = OpenOptions {
            file_name: sid.last_component().to_string(),
            max_files: config.max_files,
            var_name: config.var_name(kind),
        };
        match Destination::open(&DestinationSpec::parse(value), &opts) {
            Ok(dst) => targets.push(TargetSlot {
                kind,
                opts: config.format_options(kind),
                dst,
            }),
            Err(DstError::Off { .. }) => {}
            Err(e) => {
                if e.always_warn() || config.dst_debug {
                    eprintln!("warning: {e}");
                }
            }
        }
    }
    if targets.is_empty() {
        return false;
    }
    let runtime = Runtime {
        sid,
        start,
        targets,
        redact: config.redact,
        prefix: config.prefix.clone(),
        env_vars: config.env_vars.clone(),
        config_params: config.config_params.clone(),
        parent_name: config.parent_name.clone(),
        hierarchy: Mutex::new(None),
        listed_params: AtomicBool::new(false),
        next_child: AtomicI64::new(0),
        next_exec: AtomicI64::new(0),
        next_repo: AtomicI64::new(1),
        next_thread: AtomicU32::new(1),
        exit_code: AtomicI64::new(0),
        atexit_done: AtomicBool::new(false),
        main_ctx: Mutex::new(ThreadCtx::new("main".to_string(), 0)),
        final_timers: Mutex::new(Vec::new()),
        final_counters: Mutex::new(Vec::new()),
    };
    if RUNTIME.set(runtime).is_err() {
        return is_enabled();
    }
    let Some(r) = RUNTIME.get() else { return false };
    IS_MAIN.with(|m| m.set(true));
    ENABLED.store(true, Ordering::Relaxed);
    crate::sys::register_atexit(atexit_hook);

    if config.emit_start {
        let version = EventKind::Version {
            evt: Cow::Borrowed(EVENT_FORMAT_VERSION),
            exe: Cow::Borrowed(config.app_version.as_str()),
        };
        r.emit("main", 1, Some(loc), None, None, version);
        for t in &r.targets {
            if t.kind == TargetKind::Event && t.dst.too_many_files() {
                let ev = Event {
                    time: Some(Timestamp::now()),
                    file: Some(Cow::Borrowed(loc.file())),
                    line: loc.line(),
                    ..Event::new(r.sid.as_str(), "main", EventKind::TooManyFiles)
                };
                let mut buf = Vec::new();
                if t.kind.format(&ev, &t.opts, &mut buf) {
                    let _ = t.dst.write_line_buf(&mut buf);
                }
            }
        }
        let argv: Vec<String> = match &config.argv {
            Some(a) => a.clone(),
            None => std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        };
        let now = r.now_us();
        r.emit(
            "main",
            1,
            Some(loc),
            None,
            Some(now),
            EventKind::Start {
                argv: r.redact_vec(argv.iter().map(|s| s.as_str())),
            },
        );
        let ancestry = crate::ancestry::ancestry_names();
        if !ancestry.is_empty() {
            let kind = EventKind::CmdAncestry {
                ancestry: ancestry.into_iter().map(Cow::Owned).collect(),
            };
            r.emit("main", 1, Some(loc), None, None, kind);
        }
    }
    true
}

/// [`init`] with [`Config::from_env`]`(prefix)`.
#[track_caller]
pub fn init_from_env(prefix: &str) -> bool {
    init(Config::from_env(prefix))
}

/// Records the exit code and emits `exit` (code `& 0xff`). Returns the code
/// unchanged, for `std::process::exit(trace2::exit(code))`. The `atexit`
/// event follows when the process really exits.
#[track_caller]
pub fn exit(code: i32) -> i32 {
    if let Some(r) = rt() {
        #[cfg(feature = "tracing")]
        located::EXIT_REPORTED.store(true, Ordering::Relaxed);
        let c = code & 0xff;
        r.exit_code.store(i64::from(c), Ordering::Relaxed);
        r.emit_here(Location::caller(), None, EventKind::Exit { code: c });
    }
    code
}

/// Emits the process totals and `atexit` now (at most once; the C `atexit`
/// hook does the same at process exit), then turns tracing off.
pub fn atexit() {
    if let Some(r) = rt() {
        r.do_atexit();
    }
}

/// Emits `signal` for a signal the program caught and is dying from.
#[track_caller]
pub fn signal(signo: i32) {
    if let Some(r) = rt() {
        r.emit_here(Location::caller(), None, EventKind::Signal { signo });
        ENABLED.store(false, Ordering::Relaxed);
    }
}

/// Emits a `start` event with `argv` (redacted). [`init`] already emits one
/// for the process's own arguments; this is for an extra one (git's
/// `trace2_cmd_start`).
#[track_caller]
pub fn cmd_start<S: AsRef<str>>(argv: &[S]) {
    if let Some(r) = rt() {
        let argv = r.redact_vec(argv.iter().map(|a| a.as_ref()));
        r.emit_here(Location::caller(), None, EventKind::Start { argv });
    }
}

/// Emits `error` with `msg` as both message and format.
#[track_caller]
pub fn error(msg: &str) {
    if let Some(r) = rt() {
        let kind = EventKind::Error {
            msg: Some(Cow::Borrowed(msg)),
            fmt: Some(Cow::Borrowed(msg)),
        };
        r.emit_here(Location::caller(), None, kind);
    }
}

/// Emits `error` with a formatted message and the format it came from
/// (`fmt` lets readers group messages by kind). An empty `fmt` omits both.
#[track_caller]
pub fn error_fmt(fmt: &str, msg: &str) {
    if let Some(r) = rt() {
        let kind = if fmt.is_empty() {
            EventKind::Error { msg: None, fmt: None }
        } else {
            EventKind::Error {
                msg: Some(Cow::Borrowed(msg)),
                fmt: Some(Cow::Borrowed(fmt)),
            }
        };
        r.emit_here(Location::caller(), None, kind);
    }
}

/// Emits `cmd_path`.
#[track_caller]
pub fn cmd_path(path: &str) {
    if let Some(r) = rt() {
        r.emit_here(
            Location::caller(),
            None,
            EventKind::CmdPath {
                path: Cow::Borrowed(path),
            },
        );
    }
}

/// Emits `cmd_name` with its hierarchy (`<parent name>/…/name`). The first
/// call also reports, as `def_param`, the git config entries matching the
/// `configParams` patterns (`<P>_TRACE2_CONFIG_PARAMS` or
/// `trace2.configParams`, with each entry's scope, in git's reading order)
/// and then the variables listed in `<P>_TRACE2_ENV_VARS` (scope `command`).
#[track_caller]
pub fn cmd_name(name: &str) {
    let Some(r) = rt() else { return };
    let loc = Location::caller();
    let h = {
        let mut g = lock(&r.hierarchy);
        let base = g.clone().or_else(|| r.parent_name.clone());
        let h = match base {
            Some(b) if !b.is_empty() => format!("{b}/{name}"),
            _ => name.to_string(),
        };
        *g = Some(h.clone());
        h
    };
    r.emit_here(
        loc,
        None,
        EventKind::CmdName {
            name: Cow::Borrowed(name),
            hierarchy: Some(Cow::Owned(h)),
        },
    );
    if !r.listed_params.swap(true, Ordering::Relaxed) {
        r.list_config(loc);
        for var in r.env_vars.iter().filter(|v| !v.is_empty()) {
            if let Some(v) = std::env::var_os(var)
                .map(|v| v.to_string_lossy().into_owned())
                .filter(|v| !v.is_empty())
            {
                let kind = EventKind::DefParam {
                    scope: Some(Cow::Borrowed("command")),
                    param: Cow::Borrowed(var),
                    value: Some(r.redact_one(&v).into_owned().into()),
                };
                r.emit_here(loc, None, kind);
            }
        }
    }
}

/// Emits `cmd_mode`.
#[track_caller]
pub fn cmd_mode(mode: &str) {
    if let Some(r) = rt() {
        r.emit_here(
            Location::caller(),
            None,
            EventKind::CmdMode {
                name: Cow::Borrowed(mode),
            },
        );
    }
}

/// Emits `alias` (not redacted, as in git).
#[track_caller]
pub fn alias<S: AsRef<str>>(alias: &str, argv: &[S]) {
    if let Some(r) = rt() {
        let argv = argv.iter().map(|a| Cow::Borrowed(a.as_ref())).collect();
        r.emit_here(
            Location::caller(),
            None,
            EventKind::Alias {
                alias: Cow::Borrowed(alias),
                argv,
            },
        );
    }
}

/// Emits `def_param` (the value is redacted). `scope` is one of git's config
/// scope names (`system global local worktree command submodule unknown`).
#[track_caller]
pub fn def_param(param: &str, value: Option<&str>, scope: &str) {
    if let Some(r) = rt() {
        let kind = EventKind::DefParam {
            scope: Some(Cow::Borrowed(scope)),
            param: Cow::Borrowed(param),
            value: value.map(|v| r.redact_one(v)),
        };
        r.emit_here(Location::caller(), None, kind);
    }
}

/// Reports a config value the program itself set (git's
/// `trace2_cmd_set_config`): a `def_param` with scope `unknown` if `key`
/// matches one of the `configParams` patterns.
#[track_caller]
pub fn cmd_set_config(key: &str, value: Option<&str>) {
    if let Some(r) = rt()
        && crate::gitconfig::key_matches(&r.config_params, key)
    {
        let kind = EventKind::DefParam {
            scope: Some(Cow::Borrowed("unknown")),
            param: Cow::Borrowed(key),
            value: value.map(|v| r.redact_one(v)),
        };
        r.emit_here(Location::caller(), None, kind);
    }
}

/// A repository id from [`def_repo`]. `RepoId(0)` is a repository never
/// announced (git's `the_repository` before setup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepoId(pub i64);

/// Announces a repository (`def_repo`) and returns its id (1, 2, …).
#[track_caller]
pub fn def_repo(worktree: &str) -> RepoId {
    let Some(r) = rt() else { return RepoId(0) };
    let id = r.next_repo.fetch_add(1, Ordering::Relaxed);
    r.emit_here(
        Location::caller(),
        Some(id),
        EventKind::DefRepo {
            worktree: Cow::Borrowed(worktree),
        },
    );
    RepoId(id)
}

/// Enters a region: `region_enter` is written at the current nesting, then
/// the nesting grows by one.
#[inline]
#[track_caller]
pub fn region_enter(category: &str, label: &str) {
    region_enter_with(Some(category), Some(label), None, None);
}

/// Leaves the innermost region.
#[inline]
#[track_caller]
pub fn region_leave(category: &str, label: &str) {
    region_leave_with(Some(category), Some(label), None, None);
}

/// [`region_enter`] with every optional field.
#[inline]
#[track_caller]
pub fn region_enter_with(
    category: Option<&str>,
    label: Option<&str>,
    repo: Option<RepoId>,
    msg: Option<&str>,
) {
    if ENABLED.load(Ordering::Relaxed) {
        region_enter_with_impl(category, label, repo, msg);
    }
}

/// [`region_enter`] with every optional field.
#[inline(never)]
#[track_caller]
fn region_enter_with_impl(
    category: Option<&str>,
    label: Option<&str>,
    repo: Option<RepoId>,
    msg: Option<&str>,
) {
    region_enter_src(Src::caller(), category, label, repo, msg);
}

/// `region_enter` at `src` (the caller's location, or one given as data: [`located`]).
fn region_enter_src(
    src: Src<'_>,
    category: Option<&str>,
    label: Option<&str>,
    repo: Option<RepoId>,
    msg: Option<&str>,
) {
    let Some(r) = rt() else { return };
    let now = r.now_us();
    r.with_ctx(|ctx| {
        let kind = EventKind::RegionEnter {
            category: category.map(Cow::Borrowed),
            label: label.map(Cow::Borrowed),
            msg: msg.filter(|m| !m.is_empty()).map(Cow::Borrowed),
        };
        r.emit_src(
            &ctx.name,
            ctx.nesting(),
            src.file,
            src.line,
            repo.map(|x| x.0),
            Some(now),
            kind,
        );
        ctx.stack.push(now);
    });
}

/// [`region_leave`] with every optional field.
#[inline]
#[track_caller]
pub fn region_leave_with(
    category: Option<&str>,
    label: Option<&str>,
    repo: Option<RepoId>,
    msg: Option<&str>,
) {
    if ENABLED.load(Ordering::Relaxed) {
        region_leave_with_impl(category, label, repo, msg);
    }
}

/// [`region_leave`] with every optional field.
#[inline(never)]
#[track_caller]
fn region_leave_with_impl(
    category: Option<&str>,
    label: Option<&str>,
    repo: Option<RepoId>,
    msg: Option<&str>,
) {
    region_leave_src(Src::caller(), category, label, repo, msg);
}

/// `region_leave` at `src` (the caller's location, or one given as data: [`located`]).
fn region_leave_src(
    src: Src<'_>,
    category: Option<&str>,
    label: Option<&str>,
    repo: Option<RepoId>,
    msg: Option<&str>,
) {
    let Some(r) = rt() else { return };
    let now = r.now_us();
    r.with_ctx(|ctx| {
        let started = ctx.stack.last().copied().unwrap_or(0);
        if ctx.stack.len() > 1 {
            ctx.stack.pop();
        }
        let kind = EventKind::RegionLeave {
            t_rel: us_to_s(now.saturating_sub(started)),
            category: category.map(Cow::Borrowed),
            label: label.map(Cow::Borrowed),
            msg: msg.filter(|m| !m.is_empty()).map(Cow::Borrowed),
        };
        r.emit_src(
            &ctx.name,
            ctx.nesting(),
            src.file,
            src.line,
            repo.map(|x| x.0),
            Some(now),
            kind,
        );
    });
}

/// Leaves a region when dropped.
#[derive(Debug)]
#[must_use = "the region is left when the guard is dropped"]
pub struct RegionGuard {
    category: &'static str,
    label: String,
    loc: &'static Location<'static>,
}

impl Drop for RegionGuard {
    fn drop(&mut self) {
        let Some(r) = rt() else { return };
        let now = r.now_us();
        r.with_ctx(|ctx| {
            let started = ctx.stack.last().copied().unwrap_or(0);
            if ctx.stack.len() > 1 {
                ctx.stack.pop();
            }
            let kind = EventKind::RegionLeave {
                t_rel: us_to_s(now.saturating_sub(started)),
                category: Some(Cow::Borrowed(self.category)),
                label: Some(Cow::Borrowed(&self.label)),
                msg: None,
            };
            r.emit(&ctx.name, ctx.nesting(), Some(self.loc), None, Some(now), kind);
        });
    }
}

/// Enters a region and returns a guard that leaves it.
#[track_caller]
pub fn region(category: &'static str, label: &str) -> RegionGuard {
    let loc = Location::caller();
    region_enter_with(Some(category), Some(label), None, None);
    RegionGuard {
        category,
        label: label.to_string(),
        loc,
    }
}

/// Emits `data` (the value is formatted to a string).
#[inline]
#[track_caller]
pub fn data(category: &str, key: &str, value: impl std::fmt::Display) {
    if is_enabled() {
        data_with(category, None, key, &value.to_string());
    }
}

/// Emits `data` with an optional repository.
#[inline]
#[track_caller]
pub fn data_with(category: &str, repo: Option<RepoId>, key: &str, value: &str) {
    if ENABLED.load(Ordering::Relaxed) {
        data_with_impl(category, repo, key, value);
    }
}

/// Emits `data` with an optional repository.
#[inline(never)]
#[track_caller]
fn data_with_impl(category: &str, repo: Option<RepoId>, key: &str, value: &str) {
    data_src(Src::caller(), repo, |t_rel| EventKind::Data {
        t_rel,
        category: Cow::Borrowed(category),
        key: Cow::Borrowed(key),
        value: Cow::Borrowed(value),
    });
}

/// A `data` or `data_json` event at `src`, made by `kind` from its `t_rel` (counted from the
/// innermost region's start).
fn data_src<'a>(src: Src<'_>, repo: Option<RepoId>, kind: impl FnOnce(f64) -> EventKind<'a>) {
    let Some(r) = rt() else { return };
    let now = r.now_us();
    r.with_ctx(|ctx| {
        let t_rel = us_to_s(now.saturating_sub(ctx.stack.last().copied().unwrap_or(0)));
        r.emit_src(
            &ctx.name,
            ctx.nesting(),
            src.file,
            src.line,
            repo.map(|x| x.0),
            Some(now),
            kind(t_rel),
        );
    });
}

/// Emits `data_json`; `json` must be compact JSON and is embedded verbatim.
#[inline]
#[track_caller]
pub fn data_json(category: &str, repo: Option<RepoId>, key: &str, json: &str) {
    if ENABLED.load(Ordering::Relaxed) {
        data_json_impl(category, repo, key, json);
    }
}

/// Emits `data_json`; `json` must be compact JSON and is embedded verbatim.
#[inline(never)]
#[track_caller]
fn data_json_impl(category: &str, repo: Option<RepoId>, key: &str, json: &str) {
    data_src(Src::caller(), repo, |t_rel| EventKind::DataJson {
        t_rel,
        category: Cow::Borrowed(category),
        key: Cow::Borrowed(key),
        value: Cow::Borrowed(json),
    });
}

/// Emits `printf` with a message.
#[inline]
#[track_caller]
pub fn printf(msg: impl std::fmt::Display) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(r) = RUNTIME.get() {
        let m = msg.to_string();
        let kind = EventKind::Printf {
            msg: (!m.is_empty()).then_some(Cow::Owned(m)),
        };
        r.emit_here(Location::caller(), None, kind);
    }
}

/// A child id from [`child_start`], needed for [`child_exit`]/[`child_ready`].
#[derive(Debug, Clone, Copy)]
pub struct ChildId {
    /// The id (from 0; −1 when tracing is off).
    pub id: i64,
    started_us: u64,
}

/// What [`child_start_with`] reports about a child.
#[derive(Debug, Clone, Default)]
pub struct ChildSpec<'a> {
    /// Class (`None` writes `?`).
    pub class: Option<&'a str>,
    /// Hook name (class is then `hook`).
    pub hook_name: Option<&'a str>,
    /// Working directory, if changed.
    pub cd: Option<&'a str>,
    /// Whether a shell runs it.
    pub use_shell: bool,
    /// Whether it is a git command (`git` is prepended to argv on output).
    pub git_cmd: bool,
    /// Arguments (redacted on output).
    pub argv: Vec<&'a str>,
}

/// Emits `child_start` for `argv` with `class` and returns its id.
#[track_caller]
pub fn child_start<S: AsRef<str>>(argv: &[S], class: &str) -> ChildId {
    let spec = ChildSpec {
        class: Some(class),
        argv: argv.iter().map(|a| a.as_ref()).collect(),
        ..ChildSpec::default()
    };
    child_start_with(&spec)
}

/// Emits `child_start` with every field and returns the child's id.
#[track_caller]
pub fn child_start_with(spec: &ChildSpec<'_>) -> ChildId {
    let Some(r) = rt() else {
        return ChildId {
            id: -1,
            started_us: 0,
        };
    };
    let id = r.next_child.fetch_add(1, Ordering::Relaxed);
    let now = r.now_us();
    let kind = EventKind::ChildStart {
        child_id: id,
        child_class: Cow::Borrowed(spec.class.unwrap_or("?")),
        hook_name: spec.hook_name.map(Cow::Borrowed),
        cd: spec.cd.map(Cow::Borrowed),
        use_shell: spec.use_shell,
        git_cmd: spec.git_cmd,
        argv: r.redact_vec(spec.argv.iter().copied()),
    };
    r.emit_here(Location::caller(), None, kind);
    ChildId { id, started_us: now }
}

/// Emits `child_exit` (`pid` −1 and `code` −1 for a failed spawn; `128 +
/// signal` for a signalled child).
#[track_caller]
pub fn child_exit(child: &ChildId, pid: i64, code: i32) {
    if let Some(r) = rt() {
        let t_rel = us_to_s(r.now_us().saturating_sub(child.started_us));
        r.emit_here(
            Location::caller(),
            None,
            EventKind::ChildExit {
                child_id: child.id,
                pid,
                code,
                t_rel,
            },
        );
    }
}

/// Emits `child_ready` for a background child released in state `ready`.
#[track_caller]
pub fn child_ready(child: &ChildId, pid: i64, ready: ReadyState) {
    if let Some(r) = rt() {
        let t_rel = us_to_s(r.now_us().saturating_sub(child.started_us));
        r.emit_here(
            Location::caller(),
            None,
            EventKind::ChildReady {
                child_id: child.id,
                pid,
                ready,
                t_rel,
            },
        );
    }
}

/// An exec id from [`exec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecId(pub i64);

/// Emits `exec` before replacing the process image (argv redacted).
#[track_caller]
pub fn exec<S: AsRef<str>>(exe: Option<&str>, argv: &[S]) -> ExecId {
    let Some(r) = rt() else { return ExecId(-1) };
    let id = r.next_exec.fetch_add(1, Ordering::Relaxed);
    let kind = EventKind::Exec {
        exec_id: id,
        exe: exe.map(Cow::Borrowed),
        argv: r.redact_vec(argv.iter().map(|a| a.as_ref())),
    };
    r.emit_here(Location::caller(), None, kind);
    ExecId(id)
}

/// Emits `exec_result` after a failed exec (`code` is the errno).
#[track_caller]
pub fn exec_result(id: ExecId, code: i32) {
    if let Some(r) = rt() {
        r.emit_here(
            Location::caller(),
            None,
            EventKind::ExecResult { exec_id: id.0, code },
        );
    }
}

/// Names the calling thread `thNN:<name>` and emits `thread_start`. On the
/// main thread git writes a `region_enter` instead, and so does this.
#[track_caller]
pub fn thread_start(name: &str) {
    let Some(r) = rt() else { return };
    let loc = Location::caller();
    if IS_MAIN.with(|m| m.get()) {
        let msg = format!("thread-proc on main: {name}");
        region_enter_with(None, None, None, Some(&msg));
        return;
    }
    let now = r.now_us();
    let id = r.next_thread.fetch_add(1, Ordering::Relaxed);
    let ctx = ThreadCtx::new(thread_name(id, name), now);
    let _ = CTX.try_with(|c| *c.borrow_mut() = Some(ctx));
    r.emit_here(loc, None, EventKind::ThreadStart);
}

/// Emits the thread's per-thread timers and counters, folds its metrics
/// into the process totals and emits `thread_exit`.
#[track_caller]
pub fn thread_exit() {
    let Some(r) = rt() else { return };
    let loc = Location::caller();
    if IS_MAIN.with(|m| m.get()) {
        region_leave_with(None, None, None, Some("thread-proc on main"));
        return;
    }
    let now = r.now_us();
    let ctx = CTX.try_with(|c| c.borrow_mut().take()).ok().flatten();
    let Some(mut ctx) = ctx else { return };
    ctx.stack.truncate(1);
    r.emit_metrics(&ctx.timers, &ctx.counters, true, &ctx.name);
    r.merge_final(&ctx);
    let t_rel = us_to_s(now.saturating_sub(ctx.stack[0]));
    r.emit(
        &ctx.name,
        1,
        Some(loc),
        None,
        Some(now),
        EventKind::ThreadExit { t_rel },
    );
}

struct MetricMeta {
    category: &'static str,
    name: &'static str,
    per_thread: bool,
}

/// Fixed-capacity registry so reads need no lock.
struct Registry {
    slots: [OnceLock<MetricMeta>; 64],
    len: AtomicUsize,
    lock: Mutex<()>,
}

impl Registry {
    const fn new() -> Registry {
        Registry {
            slots: [const { OnceLock::new() }; 64],
            len: AtomicUsize::new(0),
            lock: Mutex::new(()),
        }
    }
    fn get(&self, i: usize) -> Option<&MetricMeta> {
        self.slots.get(i).and_then(|s| s.get())
    }
    fn register(&self, index: &AtomicUsize, meta: MetricMeta) -> Option<usize> {
        let _g = lock(&self.lock);
        let cur = index.load(Ordering::Acquire);
        if cur != usize::MAX {
            return Some(cur);
        }
        let i = self.len.load(Ordering::Relaxed);
        let slot = self.slots.get(i)?;
        let _ = slot.set(meta);
        self.len.store(i + 1, Ordering::Relaxed);
        index.store(i, Ordering::Release);
        Some(i)
    }
}

static TIMER_REGISTRY: Registry = Registry::new();
static COUNTER_REGISTRY: Registry = Registry::new();

/// A stopwatch timer, declared as a `static`. Intervals are summed per
/// thread and for the process; `timer` (and, if `per_thread`, `th_timer`)
/// events report them. At most 64 timers per process.
#[derive(Debug)]
pub struct Timer {
    category: &'static str,
    name: &'static str,
    per_thread: bool,
    index: AtomicUsize,
}

impl Timer {
    /// Declares a timer.
    pub const fn new(category: &'static str, name: &'static str, per_thread: bool) -> Timer {
        Timer {
            category,
            name,
            per_thread,
            index: AtomicUsize::new(usize::MAX),
        }
    }

    fn slot(&self) -> Option<usize> {
        let i = self.index.load(Ordering::Acquire);
        if i != usize::MAX {
            return Some(i);
        }
        let meta = MetricMeta {
            category: self.category,
            name: self.name,
            per_thread: self.per_thread,
        };
        TIMER_REGISTRY.register(&self.index, meta)
    }

    /// Starts an interval (a nested start of a running timer is not a new interval).
    #[inline]
    pub fn start(&self) {
        if ENABLED.load(Ordering::Relaxed) {
            self.start_impl();
        }
    }

    #[inline(never)]
    fn start_impl(&self) {
        let Some(r) = rt() else { return };
        let Some(i) = self.slot() else { return };
        r.with_ctx(|ctx| {
            if ctx.timers.len() <= i {
                ctx.timers.resize(i + 1, TimerStats::default());
            }
            let t = &mut ctx.timers[i];
            t.recursion += 1;
            if t.recursion == 1 {
                t.started = Some(Instant::now());
            }
        });
    }

    /// Stops the interval.
    #[inline]
    pub fn stop(&self) {
        if ENABLED.load(Ordering::Relaxed) {
            self.stop_impl();
        }
    }

    #[inline(never)]
    fn stop_impl(&self) {
        let Some(r) = rt() else { return };
        let Some(i) = self.slot() else { return };
        r.with_ctx(|ctx| {
            let Some(t) = ctx.timers.get_mut(i) else { return };
            if t.recursion == 0 {
                return;
            }
            t.recursion -= 1;
            if t.recursion > 0 {
                return;
            }
            let Some(s) = t.started.take() else { return };
            let ns = u64::try_from(s.elapsed().as_nanos()).unwrap_or(u64::MAX);
            if t.intervals == 0 {
                t.min_ns = ns;
                t.max_ns = ns;
            } else {
                t.min_ns = t.min_ns.min(ns);
                t.max_ns = t.max_ns.max(ns);
            }
            t.intervals += 1;
            t.total_ns = t.total_ns.saturating_add(ns);
        });
    }
}

/// A counter, declared as a `static`; `counter` (and, if `per_thread`,
/// `th_counter`) events report it. At most 64 counters per process.
#[derive(Debug)]
pub struct Counter {
    category: &'static str,
    name: &'static str,
    per_thread: bool,
    index: AtomicUsize,
}

impl Counter {
    /// Declares a counter.
    pub const fn new(category: &'static str, name: &'static str, per_thread: bool) -> Counter {
        Counter {
            category,
            name,
            per_thread,
            index: AtomicUsize::new(usize::MAX),
        }
    }

    /// Adds `v`.
    #[inline]
    pub fn add(&self, v: u64) {
        if ENABLED.load(Ordering::Relaxed) {
            self.add_impl(v);
        }
    }

    #[inline(never)]
    fn add_impl(&self, v: u64) {
        let Some(r) = rt() else { return };
        let mut i = self.index.load(Ordering::Acquire);
        if i == usize::MAX {
            let meta = MetricMeta {
                category: self.category,
                name: self.name,
                per_thread: self.per_thread,
            };
            match COUNTER_REGISTRY.register(&self.index, meta) {
                Some(x) => i = x,
                None => return,
            }
        }
        r.with_ctx(|ctx| {
            if ctx.counters.len() <= i {
                ctx.counters.resize(i + 1, 0);
            }
            ctx.counters[i] = ctx.counters[i].wrapping_add(v);
        });
    }
}

/// The environment a child should get so that it nests under this process:
/// `<P>_TRACE2_PARENT_SID` and `GIT_TRACE2_PARENT_SID` set to this SID, and
/// the `…_PARENT_NAME` pair set to the current hierarchy. Empty when off.
pub fn child_env() -> Vec<(String, String)> {
    let Some(r) = rt() else { return Vec::new() };
    let mut v = Vec::new();
    let sid = r.sid.as_str().to_string();
    let hier = lock(&r.hierarchy).clone();
    let mut prefixes = vec![r.prefix.as_str()];
    if r.prefix != "GIT" {
        prefixes.push("GIT");
    }
    for p in prefixes {
        v.push((format!("{p}_TRACE2_PARENT_SID"), sid.clone()));
        if let Some(h) = &hier {
            v.push((format!("{p}_TRACE2_PARENT_NAME"), h.clone()));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::thread_name;

    #[test]
    fn thread_names_like_git() {
        assert_eq!(thread_name(0, "main"), "main");
        assert_eq!(thread_name(3, "ut_101"), "th03:ut_101");
        assert_eq!(thread_name(100, "x"), "th100:x");
        assert_eq!(
            thread_name(1, "a_very_long_thread_name_indeed"),
            "th01:a_very_long_thread_"
        );
    }
}
