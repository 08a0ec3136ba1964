//! `proctrace analyze PATH...`: a saved trace (proctrace's capture or JSON Lines, git Trace2
//! streams) through the model and every output a live run has. `replay` is the same path for
//! captures, and ends the same way ([`finish`]).

use std::io::Write;

use crate::capture::Details;
use crate::cli::AnalyzeArgs;
use crate::engine::Engine;
use crate::input::{Input, InputError, InputOptions, InputStats};
use crate::output::{Ask, FinishedRun, Outputs, TreeMode, is_closed_pipe};
use crate::{ProctraceError, exit_codes};

use crate::model::event::Event;
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{Scope, Tracker, TrackerOptions};
use crate::sink::Fanout;

/// `proctrace analyze PATH...`. Exit status: 0; 65 when an input has a bad line (every output
/// is still written for what came before it); 74 when an output could not be written (said on
/// stderr by its path); a closed stdout (`| head`) is a quiet 0.
pub fn command(a: AnalyzeArgs) -> Result<i32, ProctraceError> {
    let tree = a
        .tree
        .map_or(if a.json { TreeMode::None } else { TreeMode::Auto }, Into::into);
    let mut outputs = Outputs::plan(
        &a.out,
        Ask {
            live: false,
            human_stdout: false,
            tree,
            summary_text: true,
            progress: false,
            inputs: a.paths.clone(),
            propagate: false,
        },
    )?;
    let opts = InputOptions {
        lenient: a.lenient,
        tool: Some(crate::model::session::Tool::this_process()),
        max_line: a.max_line,
    };
    let mut input = crate::input::open(&a.paths, &opts)?;
    let sinks = outputs.start()?;
    // Records of exited processes are kept only for what reads them at the end.
    let retain = a.json || outputs.reads_records_at_end();
    let an = analyze(input.as_mut(), a.root, sinks, retain);
    let json = a.json.then_some(!a.out.switches.no_redact);
    Ok(finish(
        an,
        &mut outputs,
        !(a.json && tree == TreeMode::None),
        json,
    ))
}

/// The end of `analyze` and `replay`: the tree on stderr (when `tree`), the reports, `--json`
/// on stdout (`Some(redact)`), what reading could not take in, and every failure — each said
/// once — into the exit status ([`command`]'s).
pub fn finish(mut a: Analysis, outputs: &mut Outputs, tree: bool, json: Option<bool>) -> i32 {
    let run = FinishedRun::new(&a.header, &a.engine.tracker, &a.summary, &outputs.settings);
    if tree {
        outputs.print_tree(&run);
    }
    let mut outcome = outputs.finish(&run, &a.engine.sinks);
    if let Some(redact) = json {
        let mut w = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
        match write_json(&a, redact, outputs.settings.files_dirs.0, &mut w).and_then(|()| w.flush()) {
            Ok(()) => {}
            Err(e) if is_closed_pipe(&e) => outcome.stdout_closed = true,
            Err(e) => {
                outcome.failed += 1;
                crate::say!("proctrace: cannot write the analysis to stdout: {e}");
            }
        }
    }
    if !outputs.settings.quiet {
        // As the live run said it, from the recorded summary.
        crate::cmd::run::report_usage_loss(&a.summary.capture);
        report_reading(&a.stats);
    }
    // The process ends next: its memory goes back at once, not record by record.
    a.engine.tracker.leak_records();
    let ok = match a.error {
        Some(e) => {
            crate::say!("proctrace: {e}");
            exit_codes::DATA
        }
        None => exit_codes::OK,
    };
    outcome.code(ok)
}

/// Says what reading could not take in (nothing lost silently): once each, on stderr.
fn report_reading(s: &InputStats) {
    let said: [(u64, &str, &str); 6] = [
        (s.skipped_lines, "", "bad lines skipped (--lenient)"),
        (
            s.too_many_files,
            "a Trace2 target directory hit its file limit (maxFiles) ",
            "time(s): later sessions were not written, so processes are missing",
        ),
        (
            s.truncated,
            "",
            "file(s) end in a cut-off line (a writer killed mid-line): ignored",
        ),
        (
            s.late_lines,
            "",
            "line(s) older than events already output (beyond the reorder window: 2 s of Trace2, \
             128 lines of JSON Lines; a capture is read as recorded): read, but their events came \
             out of time order",
        ),
        (
            s.long_lines,
            "",
            "line(s) longer than --max-line skipped (--lenient)",
        ),
        (
            s.skipped_entries,
            "",
            "entr(ies) of a Trace2 directory not read: not regular files",
        ),
    ];
    for (n, before, after) in said {
        if n > 0 {
            crate::say!("proctrace: {before}{n} {after}");
        }
    }
}

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
///
/// `retain`: keep the record of every exited process (the tree, the summary, the SVG picture
/// and `diff` read them at the end). Without, a record is freed once the sinks have seen its
/// exit, as `watch` does: memory then follows the processes alive at once, not the file, and
/// only the streaming outputs (`-o`, Trace2, Chrome, OTLP) and the verdict line are made.
pub fn analyze(input: &mut dyn Input, root: Option<i32>, sinks: Fanout, retain: bool) -> Analysis {
    let header = input.header().clone();
    let tree = root.is_some() || matches!(header.mode, Mode::Run { .. } | Mode::Watch { root: Some(_) });
    // A trace that names its root only in the stream (older captures without a header) is
    // followed as a tree once the `Root` event comes: the tracker takes roots at any time.
    let t = Tracker::new(TrackerOptions {
        scope: if tree { Scope::Tree } else { Scope::All },
        retain_exited: retain,
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
        if !retain {
            engine.after_batch();
        }
    });
    // What was read before a bad line is still reported: the outputs end cleanly, then the error.
    engine.settle();
    let stats = engine.tracker.stats();
    let summary = match input.recorded_summary() {
        Some(s) => Summary {
            // The recording run may have kept fewer notes than the trace holds (its outputs
            // needed them longer): what it dropped is still dropped.
            stats: crate::model::tracker::TrackerStats {
                notes_dropped: stats.notes_dropped.max(s.stats.notes_dropped),
                ..stats
            },
            filtered: engine.filtered(),
            ..s.clone()
        },
        None => {
            let t = &engine.tracker;
            let status = named_root
                .and(t.first_root())
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
pub fn render_json(a: &Analysis, redact: bool, files_dirs: Option<usize>) -> String {
    crate::report::summary::json_string(|out| write_json(a, redact, files_dirs, out))
}

/// [`render_json`] written to `w` as it is made (the object of a 600,000-process build is 71
/// MB, most of it the critical path: no copy of it is held).
pub fn write_json(
    a: &Analysis,
    redact: bool,
    files_dirs: Option<usize>,
    w: &mut impl std::io::Write,
) -> std::io::Result<()> {
    /// The summary's members (in `--summary-json`'s order), then what reading found.
    #[derive(serde::Serialize)]
    struct Json<'a> {
        #[serde(flatten)]
        summary: &'a crate::report::summary::RunReport,
        sessions: Option<u64>,
        skipped_lines: u64,
        truncated_files: u64,
        too_many_files: u64,
        input: &'a crate::input::InputStats,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    }
    let r = crate::report::summary::summarize(&a.header, &a.engine.tracker, &a.summary, redact, files_dirs);
    // Written straight from the report: a `serde_json::Value` of it first cost hundreds of MB
    // for a 600,000-process build.
    let json = Json {
        summary: &r,
        sessions: a.stats.sessions,
        skipped_lines: a.stats.skipped_lines,
        truncated_files: a.stats.truncated,
        too_many_files: a.stats.too_many_files,
        input: &a.stats,
        error: a.error.as_ref().map(|e| e.to_string()),
    };
    serde_json::to_writer_pretty(&mut *w, &json)?;
    w.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;
    use std::path::Path;

    use super::*;
    use crate::input::InputOptions;
    use crate::input::jsonl::JsonlInput;
    use crate::model::event::ExitStatus;

    /// A run's JSON Lines: the command (pid 100) runs `n` children one after another, each
    /// exiting 1, then exits 3. (In time order, as proctrace writes: lines are read in time
    /// order.)
    fn build(n: i32) -> String {
        let mut s = String::from(
            "{\"event\":\"start\",\"ts\":0.000000000,\"tool\":\"proctrace\",\"version\":\"0\",\
             \"backend\":\"connector\",\"wall_offset\":0.000000000,\"mode\":\"run\",\"argv\":[\"make\"]}\n\
             {\"event\":\"fork\",\"ts\":0.000000001,\"pid\":100,\"ppid\":1}\n",
        );
        for i in 0..n {
            let (pid, t) = (1000 + i, 10 + 4 * i);
            let _ = writeln!(
                s,
                "{{\"event\":\"fork\",\"ts\":0.{t:09},\"pid\":{pid},\"ppid\":100}}"
            );
            let _ = writeln!(
                s,
                "{{\"event\":\"exec\",\"ts\":0.{:09},\"pid\":{pid},\"ppid\":100,\"argv\":[\"cc\",\"-c\",\"f{i}.c\"]}}",
                t + 1
            );
            let _ = writeln!(
                s,
                "{{\"event\":\"exit\",\"ts\":0.{:09},\"pid\":{pid},\"ppid\":100,\"code\":1}}",
                t + 2
            );
        }
        let _ = writeln!(
            s,
            "{{\"event\":\"exit\",\"ts\":0.{:09},\"pid\":100,\"ppid\":1,\"code\":3}}",
            10 + 4 * n
        );
        s
    }

    fn run(text: &str, retain: bool) -> Analysis {
        let mut input =
            JsonlInput::new(text.as_bytes(), Path::new("t.jsonl"), &InputOptions::default()).unwrap();
        analyze(&mut input, None, Fanout::new(), retain)
    }

    /// Without retention, records are freed as their exits go out: memory follows the processes
    /// alive at once (here two), not the file; the command's record stays, for its status.
    #[test]
    fn streaming_keeps_only_live_records_and_the_command() {
        let text = build(5000);
        let kept = run(&text, true);
        let streamed = run(&text, false);
        for a in [&kept, &streamed] {
            assert!(a.error.is_none());
            assert_eq!(a.engine.tracker.stats().processes, 5001);
            assert_eq!(a.engine.tracker.stats().exits, 5001);
            assert_eq!(a.summary.status, Some(ExitStatus::Code(3)));
        }
        assert_eq!(kept.engine.tracker.stats().held, 5001);
        let s = streamed.engine.tracker.stats();
        assert!(s.peak_held <= 3, "{s:?}");
        assert_eq!(s.held, 1);
        let cmd = streamed
            .engine
            .tracker
            .first_root()
            .and_then(|id| streamed.engine.tracker.get(id));
        assert_eq!(cmd.map(|r| r.pid), Some(100));
    }
}
