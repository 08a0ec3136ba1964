//! The instrumentation API with the source location given as data, for
//! adapters whose callers' `file:line` come from elsewhere (the `tracing`
//! layer takes them from a callsite's metadata) rather than from
//! `#[track_caller]`. Every function returns at once when tracing is off.

use super::*;

/// Set once `exit` was emitted (by [`crate::exit`] or [`exit_unless_reported`]).
pub(crate) static EXIT_REPORTED: AtomicBool = AtomicBool::new(false);

impl Runtime {
    /// Emits from the calling thread's context at `src`.
    fn emit_here_src(&self, src: Src<'_>, kind: EventKind<'_>) {
        let now = self.now_us();
        self.with_ctx(|ctx| {
            self.emit_src(
                &ctx.name,
                ctx.nesting(),
                src.file,
                src.line,
                None,
                Some(now),
                kind,
            )
        });
    }
}

/// Whether the calling thread already has a trace2 identity (the main
/// thread, or a thread that emitted something).
pub(crate) fn thread_known() -> bool {
    IS_MAIN.with(|m| m.get()) || CTX.try_with(|c| c.borrow().is_some()).unwrap_or(true)
}

/// [`crate::thread_start`] at `src` on a thread that is not the main thread.
pub(crate) fn thread_start_at(src: Src<'_>, name: &str) {
    let Some(r) = rt() else { return };
    if IS_MAIN.with(|m| m.get()) {
        return;
    }
    let now = r.now_us();
    let id = r.next_thread.fetch_add(1, Ordering::Relaxed);
    let ctx = ThreadCtx::new(thread_name(id, name), now);
    if CTX.try_with(|c| *c.borrow_mut() = Some(ctx)).is_ok() {
        r.emit_here_src(src, EventKind::ThreadStart);
    }
}

/// `region_enter` at the current nesting, then one level deeper.
pub(crate) fn region_enter_at(src: Src<'_>, category: &str, label: &str, msg: Option<&str>) {
    region_enter_src(src, Some(category), Some(label), None, msg);
}

/// Leaves the innermost region (`region_leave` with its elapsed time).
pub(crate) fn region_leave_at(src: Src<'_>, category: Option<&str>, label: Option<&str>) {
    region_leave_src(src, category, label, None, None);
}

/// `data` (`t_rel` counts from the innermost region's start).
pub(crate) fn data_at(src: Src<'_>, category: &str, key: &str, value: &str) {
    data_src(src, None, |t_rel| EventKind::Data {
        t_rel,
        category: Cow::Borrowed(category),
        key: Cow::Borrowed(key),
        value: Cow::Borrowed(value),
    });
}

/// `printf` with `msg`.
pub(crate) fn printf_at(src: Src<'_>, msg: &str) {
    let Some(r) = rt() else { return };
    let kind = EventKind::Printf {
        msg: (!msg.is_empty()).then_some(Cow::Borrowed(msg)),
    };
    r.emit_here_src(src, kind);
}

/// `error` with `msg` as message and format (as [`crate::error`]).
pub(crate) fn error_at(src: Src<'_>, msg: &str) {
    let Some(r) = rt() else { return };
    let kind = EventKind::Error {
        msg: Some(Cow::Borrowed(msg)),
        fmt: Some(Cow::Borrowed(msg)),
    };
    r.emit_here_src(src, kind);
}

/// Emits `exit` with `code` unless the program already reported one. It is
/// written as the `main` thread's, whichever thread calls `exit(3)`.
pub(crate) fn exit_unless_reported(code: i32) {
    let Some(r) = rt() else { return };
    if EXIT_REPORTED.swap(true, Ordering::Relaxed) {
        return;
    }
    let c = code & 0xff;
    r.exit_code.store(i64::from(c), Ordering::Relaxed);
    let now = r.now_us();
    let name = lock(&r.main_ctx).name.clone();
    r.emit(
        &name,
        1,
        Some(Location::caller()),
        None,
        Some(now),
        EventKind::Exit { code: c },
    );
}
