//! Bytes from a hostile file through a reader, the model, every sink and every report: what a
//! fuzz target or a property test runs on one input. Nothing here may panic, whatever the
//! bytes; errors are returned so the property tests can check what they say.
//!
//! Shared by the cargo-fuzz targets (`fuzz/fuzz_targets`) and the property tests
//! (`tests/it/readers_props.rs` includes this file).

use std::path::Path;

use proctrace::cmd::analyze::{Analysis, analyze, render_json};
use proctrace::input::capture::CaptureInput;
use proctrace::input::notes::{Clock, NoteBuilder};
use proctrace::input::{Input, InputError, InputOptions};
use proctrace::output::registry::OUTPUTS;
use proctrace::output::{DestKind, FinishedRun, Make, Settings, To};
use proctrace::report::{summary, svg, tree};
use proctrace::sink::{Fanout, LineDest};
use trace2::format::{FormatOptions, TargetKind, format_event};
use trace2::reader::{EventReader, ReadError, ReadOptions, Record};

/// The name inputs get in errors.
pub const NAME: &str = "fuzz-input";

/// The sinks a hostile trace is fed to: every streaming output of the registry (files to
/// nowhere, Trace2 to /dev/null; OTLP, which needs a collector, is left out).
pub fn sinks() -> Fanout {
    let mut f = Fanout::new();
    let settings = Settings {
        redact: true,
        ..Settings::default()
    };
    for spec in OUTPUTS {
        let Make::Stream(open) = spec.make else { continue };
        let to = match spec.dest {
            DestKind::Trace2 => To::Value("/dev/null".into()),
            DestKind::Endpoint => continue,
            DestKind::File | DestKind::Append => To::Lines(LineDest::Stream(Box::new(std::io::sink()))),
        };
        if let Ok(s) = open(to, &settings) {
            f.add(spec.what, "nowhere", s);
        }
    }
    f
}

/// Every whole-run report from an analysis: tree, text and Markdown summaries, SVG and
/// `analyze --json` (the JSON summary and more). Returns the total length, so nothing is optimised away.
pub fn reports(a: &Analysis) -> usize {
    let t = &a.engine.tracker;
    let tree = tree::render(
        t,
        &a.header.mode,
        &a.summary,
        tree::TreeOptions {
            color: true,
            redact: true,
            max_lines: 50,
            width: 80,
        },
    );
    // A low threshold: hostile paths go through the directories summarised.
    let r = summary::summarize(&a.header, t, &a.summary, true, Some(1));
    let text = summary::render_text(
        &r,
        summary::TextOptions {
            color: false,
            width: 60,
        },
    );
    let md = summary::render_markdown(&r);
    let picture = svg::render(&a.header, t, &a.summary, svg::SvgOptions::default());
    let analyzed = render_json(a, false, Some(0));
    // And every whole-run output of the registry, as the commands write them.
    let run = FinishedRun::new(
        &a.header,
        t,
        &a.summary,
        &proctrace::output::Settings {
            redact: true,
            ..Default::default()
        },
    );
    let mut whole = Vec::new();
    for spec in OUTPUTS {
        if let Make::WholeRun(write) = spec.make
            && write(&run, &mut whole).is_err()
        {
            whole.clear();
        }
    }
    tree.len() + text.len() + md.len() + picture.len() + analyzed.len() + whole.len()
}

/// Any input through `analyze` (no root given, as `proctrace analyze` without `--root`) and
/// every report. The reading error, if any, is returned after everything before it was
/// analysed and reported.
pub fn analyze_all(input: &mut dyn Input) -> Result<usize, InputError> {
    let a = analyze(input, None, sinks(), true);
    let n = reports(&a);
    match a.error {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// `--record` capture bytes, read strictly: the first bad line's error (nothing is analysed).
pub fn capture_strict(bytes: &[u8]) -> Result<(), InputError> {
    let opts = InputOptions {
        lenient: false,
        tool: None,
        ..Default::default()
    };
    CaptureInput::new(bytes, Path::new(NAME), &opts)?.feed_all(&mut |_| {})
}

/// `--record` capture bytes, read leniently → [`CaptureInput`] → [`analyze_all`].
pub fn capture(bytes: &[u8]) -> Result<usize, InputError> {
    let opts = InputOptions {
        lenient: true,
        tool: None,
        ..Default::default()
    };
    let mut input = CaptureInput::new(bytes, Path::new(NAME), &opts)?;
    analyze_all(&mut input)
}

/// A saved trace of any format, as `proctrace analyze FILE` opens it: `bytes` are written to a
/// scratch file (in /dev/shm when there is one; removed after), its format told by content
/// ([`proctrace::input::open`]), read strictly (to the first bad line; nothing analysed), then
/// leniently → [`analyze_all`]. The target for proctrace's own `-o` JSON Lines, and for every
/// reader `open` knows.
pub fn any_file(bytes: &[u8]) -> (Result<(), InputError>, Result<usize, InputError>) {
    thread_local! {
        static PATH: std::path::PathBuf = {
            let dir = if Path::new("/dev/shm").is_dir() {
                std::path::PathBuf::from("/dev/shm")
            } else {
                std::env::temp_dir()
            };
            static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            dir.join(format!("proctrace-fuzz-{}-{n}", std::process::id()))
        };
    }
    PATH.with(|path| {
        let paths = [path.clone()];
        if let Err(source) = std::fs::write(path, bytes) {
            let e = || InputError::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            };
            return (Err(e()), Err(e()));
        }
        let strict = InputOptions {
            lenient: false,
            tool: None,
            ..Default::default()
        };
        let first = proctrace::input::open(&paths, &strict).and_then(|mut i| i.feed_all(&mut |_| {}));
        let lenient = InputOptions {
            lenient: true,
            tool: None,
            ..Default::default()
        };
        let second = proctrace::input::open(&paths, &lenient).and_then(|mut i| analyze_all(i.as_mut()));
        let _ = std::fs::remove_file(path);
        (first, second)
    })
}

/// Trace2 event-stream bytes, read strictly: every record, or the first bad line's error.
pub fn trace2_strict(bytes: &[u8]) -> Result<Vec<Record>, ReadError> {
    EventReader::new(
        bytes,
        NAME,
        ReadOptions {
            lenient: false,
            ..Default::default()
        },
    )
    .collect()
}

/// Trace2 event-stream bytes, read leniently → [`EventReader`] → the reader's post-passes
/// (brief times, nesting, grouping by SID) → regions and data as model events
/// ([`NoteBuilder`]) → every record formatted back in the three target formats. A record
/// written in the event format must read back (the writer and the reader agree on what a line
/// is). Returns the records read.
pub fn trace2_stream(bytes: &[u8]) -> Result<Vec<Record>, ReadError> {
    let mut records = EventReader::new(
        bytes,
        NAME,
        ReadOptions {
            lenient: true,
            ..Default::default()
        },
    )
    .collect::<Result<Vec<_>, _>>()?;
    trace2_records(&mut records);
    Ok(records)
}

/// The part of [`trace2_stream`] after reading.
pub fn trace2_records(records: &mut [Record]) {
    trace2::reader::rebuild_brief_times(records);
    trace2::reader::infer_nesting(records);
    let groups = trace2::reader::group_by_sid(records).len();
    let clock = Clock { offset_ns: 0 };
    let mut notes = NoteBuilder::new();
    let mut out = Vec::with_capacity(512);
    for (i, r) in records.iter().enumerate() {
        let ts = r.event.time.map(|t| clock.ns(t)).unwrap_or(i as u64);
        let tgid = 1 + (r.event.sid.len() % 7) as i32 + groups as i32 % 3;
        let _ = notes.on_event(tgid, ts, &r.event);
        for opts in [
            FormatOptions {
                brief: false,
                event_nesting: u32::MAX,
                utc_offset: Some(3600),
            },
            FormatOptions {
                brief: true,
                event_nesting: 2,
                utc_offset: Some(-7 * 3600),
            },
        ] {
            for kind in TargetKind::ALL {
                out.clear();
                let wrote = format_event(kind, &r.event, &opts, &mut out);
                if wrote
                    && kind == TargetKind::Event
                    && !opts.brief
                    && let Err(e) = trace2::reader::parse_line(&out)
                {
                    panic!(
                        "the event target wrote a line the reader refuses ({e}): {}",
                        String::from_utf8_lossy(&out)
                    );
                }
            }
        }
        if let Some(sid) = (i % 16 == 15).then_some(r.event.sid.as_ref()) {
            let _ = notes.close_session(sid, ts);
        }
    }
    let _ = notes.close_open();
}
