//! `proctrace analyze PATH...`: a saved trace (proctrace's capture or JSON Lines, git Trace2
//! streams) through the model and every output a live run has. `replay` is the same path for
//! captures.

use crate::capture::Details;
use crate::engine::Engine;
use crate::input::{Input, InputError, InputStats};

use crate::model::event::Event;
use crate::model::tracker::{Scope, Tracker, TrackerOptions};
use crate::sink::{Fanout, Header, Mode, Summary};

/// A trace, analysed: the model with every record, and what the outputs were given.
pub struct Analysis {
    /// The engine (its tracker holds every record; its sinks have finished).
    pub engine: Engine,
    /// The header the outputs got.
    pub header: Header,
    /// The summary the outputs got.
    pub summary: Summary,
    /// What reading found.
    pub stats: InputStats,
    /// Reading stopped at this error; everything before it was analysed and output.
    pub error: Option<InputError>,
}

/// Feeds `input` through the same engine a live run uses. The tree to follow comes from the
/// trace (its `run` root, a `Root` event) or `root`; with neither, everything is followed (as in
/// `watch`). The sinks get the trace's header and, at the end, its recorded summary with the
/// counters recomputed (or one made from the records).
pub fn analyze(input: &mut dyn Input, root: Option<i32>, sinks: Fanout) -> Analysis {
    let header = input.header().clone();
    let tree = root.is_some() || matches!(header.mode, Mode::Run { .. } | Mode::Watch { root: Some(_) });
    // A trace that names its root only in the stream (older captures without a header) is
    // followed as a tree once the `Root` event comes: the tracker takes roots at any time.
    let t = Tracker::new(TrackerOptions {
        scope: if tree { Scope::Tree } else { Scope::All },
        retain_exited: true,
        want_details: true,
    });
    let mut engine = Engine::new(t, sinks, Details::InStream);
    engine.start(&header);
    if let Some(r) = root {
        engine.feed(&Event::Root { tgid: r });
    }
    let mut last_ts = header.ts;
    let mut named_root = root;
    let mut scoped = tree;
    let result = input.feed_all(&mut |ev| {
        if let Some(ts) = ev.ts() {
            last_ts = last_ts.max(ts);
        }
        if let Event::Root { tgid } = ev {
            named_root.get_or_insert(tgid);
            if !scoped {
                scoped = true;
                engine.tracker.set_scope(Scope::Tree);
            }
        }
        engine.feed_owned(ev);
    });
    // What was read before a bad line is still reported: the outputs end cleanly, then the error.
    engine.settle();
    let stats = engine.tracker.stats();
    let summary = match input.recorded_summary() {
        Some(s) => Summary {
            stats,
            filtered: engine.filtered(),
            ..s.clone()
        },
        None => {
            let t = &engine.tracker;
            let status = named_root
                .and_then(|_| t.roots().first().copied())
                .and_then(|id| t.get(id))
                .and_then(|r| r.exit)
                .and_then(|x| x.status);
            Summary {
                ts: last_ts,
                status,
                stats,
                capture: Default::default(),
                background: t.live_count() as u64,
                root: named_root,
                tracer_cpu_ns: None,
                backend: header.backend.clone(),
                argv_reader: None,
                filtered: engine.filtered(),
            }
        }
    };
    engine.finish(&summary);
    Analysis {
        engine,
        header,
        summary,
        stats: input.stats(),
        error: result.err(),
    }
}

/// `analyze --json`: the summary's JSON object (see `--summary-json`) with what reading found:
/// `sessions` (distinct Trace2 SIDs, `null` for proctrace's own formats), `skipped_lines`,
/// `truncated_files`, `too_many_files` (Trace2 directory targets that hit `maxFiles`) and the
/// `input` counts.
pub fn render_json(a: &Analysis, redact: bool) -> String {
    let r = crate::report::summary::summarize(&a.header, &a.engine.tracker, &a.summary, redact);
    let mut v = serde_json::to_value(&r).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("sessions".into(), serde_json::json!(a.stats.sessions));
        m.insert("skipped_lines".into(), serde_json::json!(a.stats.skipped_lines));
        m.insert("truncated_files".into(), serde_json::json!(a.stats.truncated));
        m.insert("too_many_files".into(), serde_json::json!(a.stats.too_many_files));
        m.insert("input".into(), serde_json::to_value(a.stats).unwrap_or_default());
        if let Some(e) = &a.error {
            m.insert("error".into(), serde_json::json!(e.to_string()));
        }
    }
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
