//! Golden tests of every formatter: each recorded capture under `tests/fixtures/captures` is
//! replayed with a fixed header through the engine into every output of the registry that names a
//! golden file ([`crate::output::OutputSpec::golden`]: JSON Lines, git Trace2 event, perf and
//! normal, the Chrome trace, the summary files, the SVG picture — a new output is covered by
//! declaring it), plus what a person reads on a terminal (the human lines, the tree, the text
//! summary), and the bytes must equal `tests/fixtures/golden/<capture>.<format>`.
//!
//! An output that changes on purpose is regenerated with
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test -p proctrace --lib golden
//! ```
//!
//! which writes the files instead of comparing them; read `git diff tests/fixtures/golden`
//! before committing it. A new capture needs its name in [`CAPTURES`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::cmd::replay::{Capture, parse_capture, replay};
use crate::model::event::{Argv, Event};
use crate::model::session::{Header, Mode, Summary, Tool};
use crate::model::tracker::Tracker;
use crate::output::registry::OUTPUTS;
use crate::output::{DestKind, FinishedRun, Make, Settings, To};
use crate::report::summary::{self, TextOptions};
use crate::report::tree::{TreeOptions, render};
use crate::sink::chrome_check::{Expect, ExpectRegion, validate_regions};
use crate::sink::trace2::{Trace2Sink, Trace2Target};
use crate::sink::{Fanout, LineDest, lines::HumanLines};

/// Every capture in `tests/fixtures/captures` (checked by [`every_capture_has_golden_files`]).
pub(crate) const CAPTURES: [&str; 9] = [
    "exec-twice",
    "git-regions",
    "leader-exits-first",
    "make-j2",
    "make-j2-usage",
    "reuse-pid",
    "rich-run",
    "thread-exec",
    "threads-then-leader",
];

/// The recorded real builds under `tests/fixtures/builds` (see its README.md), each with golden
/// files of every output under `tests/fixtures/builds/golden` (checked by
/// [`every_build_has_golden_files`]); an output over 160 KiB is kept as its size and SHA-256 in
/// `NAME.digests` instead (the whole-run reports people read are all kept whole but for
/// libffi's tree and summary JSON).
pub(crate) const BUILDS: [&str; 7] = [
    "cargo-zstd-sys",
    "dash-exec",
    "dash-subshell",
    "libffi-run1",
    "libffi-run2",
    "make-fails",
    "pip-wheel",
];

/// Where a set of captures and their golden files are.
#[derive(Clone, Copy)]
struct Set {
    /// Captures, under `tests/fixtures`.
    captures: &'static str,
    /// Their golden files, under `tests/fixtures`.
    golden: &'static str,
    /// Outputs longer than this are kept as a size and SHA-256 (`NAME.digests`), not whole: the
    /// Trace2 event stream of a 3,500-process build is 31 MB.
    whole_max: usize,
}

/// The golden-test captures.
const CAPTURE_SET: Set = Set {
    captures: "captures",
    golden: "golden",
    whole_max: usize::MAX,
};

/// The recorded real builds.
const BUILD_SET: Set = Set {
    captures: "builds",
    golden: "builds/golden",
    whole_max: 160 * 1024,
};

/// What a person reads, not in the registry: `watch`'s lines, the tree, the text summary.
const TERMINAL: [&str; 3] = ["lines", "tree", "summary"];

/// Every output, by the extension of its golden file: the registry's, in its order, then
/// [`TERMINAL`].
fn formats() -> Vec<&'static str> {
    OUTPUTS.iter().filter_map(|s| s.golden).chain(TERMINAL).collect()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A header that says the same on every machine, every day: nothing from this process.
fn fixed_header(name: &str, cap: &Capture, root: i32) -> Header {
    let argv = cap
        .events
        .iter()
        .find_map(|e| match e {
            Event::ExecDetails { tgid, details } if *tgid == root => details.argv.as_ref().map(Argv::to_vec),
            _ => None,
        })
        .unwrap_or_else(|| vec!["/tmp/shapes".to_string(), name.to_string()]);
    let mut tool_argv: Vec<String> = ["proctrace", "run", "--record", "capture.jsonl", "--"]
        .map(String::from)
        .into();
    tool_argv.extend(argv.iter().cloned());
    Header {
        mode: Mode::Run { argv },
        ts: cap.events.iter().find_map(|e| e.ts()).unwrap_or(0),
        // 2024-06-01T12:00:00Z at monotonic 0.
        real_minus_mono: 1_717_243_200_000_000_000,
        tool: Tool {
            pid: 4242,
            argv: tool_argv,
            version: "0.0.0-golden".to_string(),
            parent_sid: Some("20240601T115959.000000Z-Hdeadbeef-P00000001".to_string()),
            host: Some("golden-host".to_string()),
            utc_offset: Some(2 * 3600),
        },
        backend: Some("connector".to_string()),
        refused: Vec::new(),
        files: false,
        daemons: Vec::new(),
    }
}

/// A writer the test keeps a handle on.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Replays `name` of `set` into every output; returns `(format, bytes)` in [`formats`] order.
fn render_all(set: Set, name: &str) -> Vec<(&'static str, Vec<u8>)> {
    render_all_with(set, name).0
}

/// What a Chrome trace of `t` must show: every record, from the session start.
fn expected_slices(t: &Tracker, header: &Header, sum: &Summary) -> Vec<Expect> {
    let mut out = Vec::new();
    let mut todo: Vec<_> = t.roots().to_vec();
    while let Some(id) = todo.pop() {
        let Some(r) = t.get(id) else { continue };
        todo.extend(r.children.iter().copied());
        let s = r.start_ns.unwrap_or(header.ts).max(header.ts);
        let (e, status) = match r.exit {
            Some(x) => (
                x.ts,
                crate::sink::text::exit_text(x.status, crate::sink::text::Paint { on: false }),
            ),
            None => (sum.ts, "running".to_string()),
        };
        out.push(Expect {
            pid: r.pid as i64,
            start_ns: s - header.ts,
            dur_ns: e.max(s) - s,
            status,
        });
    }
    out
}

/// The regions a Chrome trace of `t` must show: every region of every record, clamped into its
/// process's slice (from `t0`, the session start, to its exit, else `end`).
pub(crate) fn expected_regions(t: &Tracker, t0: u64, end: u64) -> Vec<ExpectRegion> {
    let mut out = Vec::new();
    let mut todo: Vec<_> = t.roots().to_vec();
    while let Some(id) = todo.pop() {
        let Some(r) = t.get(id) else { continue };
        todo.extend(r.children.iter().copied());
        let s = r.start_ns.unwrap_or(t0).max(t0);
        let e = r.exit.map_or(end, |x| x.ts).max(s);
        for g in &r.regions {
            let rs = g.ts.clamp((s + 1).min(e), e);
            out.push(ExpectRegion {
                pid: r.pid as i64,
                name: crate::report::summary::region_name(&g.category, &g.label),
                start_ns: rs - t0,
                end_ns: g.end.clamp(rs, e) - t0,
            });
        }
    }
    out
}

/// What a Chrome trace must show: its processes and their regions.
type ChromeExpect = (Vec<Expect>, Vec<ExpectRegion>);

/// [`render_all`], also returning what the Chrome trace must show.
fn render_all_with(set: Set, name: &str) -> (Vec<(&'static str, Vec<u8>)>, ChromeExpect) {
    let path = fixtures().join(format!("{}/{name}.jsonl", set.captures));
    let text = std::fs::read(&path).unwrap();
    let mut cap = parse_capture(text.as_slice(), &path.to_string_lossy()).unwrap();
    // A recorded header names the recording machine and moment: the fixed one stands in.
    cap.header = None;
    let root = cap.command_pid().expect("a capture of `run` forks its command");
    let header = fixed_header(name, &cap, root);

    // One directory per call: tests replaying the same capture run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = std::env::temp_dir().join(format!("proctrace-golden-{}-{name}-{call}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();

    // Every streaming output of the registry to its own file, as the commands open them.
    let settings = Settings {
        redact: true,
        ..Settings::default()
    };
    let mut sinks = Fanout::new();
    for spec in OUTPUTS {
        let (Some(ext), Make::Stream(open)) = (spec.golden, &spec.make) else {
            continue;
        };
        let path = scratch.join(ext);
        let to = match spec.dest {
            DestKind::Trace2 => To::Value(path.to_string_lossy().into_owned()),
            _ => To::Lines(LineDest::File(std::fs::File::create(&path).unwrap())),
        };
        sinks.add(spec.what, "golden", open(to, &settings).unwrap());
    }
    let lines = Shared::default();
    sinks.add(
        "lines",
        "golden",
        Box::new(HumanLines::new(
            LineDest::Stream(Box::new(lines.clone())),
            false,
            true,
        )),
    );

    let (engine, sum) = replay(&cap, Some(root), sinks, header.clone());
    let expected = (
        expected_slices(&engine.tracker, &header, &sum),
        expected_regions(&engine.tracker, header.ts, sum.ts),
    );
    let failures: Vec<String> = engine
        .sinks
        .failures()
        .iter()
        .map(|(n, e)| format!("{}: {e}", n.what))
        .collect();
    assert!(failures.is_empty(), "{name}: sinks failed: {failures:?}");
    let tree = render(
        &engine.tracker,
        &header.mode,
        &sum,
        TreeOptions {
            color: false,
            redact: true,
            max_lines: usize::MAX,
            width: 100,
        },
    );

    drop(engine.sinks);
    let run = FinishedRun::new(
        &header,
        &engine.tracker,
        &sum,
        &crate::output::Settings {
            redact: true,
            ..Default::default()
        },
    );
    let mut out = Vec::new();
    for spec in OUTPUTS {
        let Some(ext) = spec.golden else { continue };
        let bytes = match spec.make {
            Make::Stream(_) => std::fs::read(scratch.join(ext)).unwrap(),
            Make::WholeRun(write) => {
                let mut v = Vec::new();
                write(&run, &mut v).unwrap();
                v
            }
        };
        out.push((ext, bytes));
    }
    out.push(("lines", lines.take()));
    out.push(("tree", tree.into_bytes()));
    out.push((
        "summary",
        summary::render_text(
            run.report(),
            TextOptions {
                color: false,
                width: 100,
            },
        )
        .into_bytes(),
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    (out, expected)
}

/// Compares with (or, under `UPDATE_GOLDEN=1`, writes) the golden files of capture `name`.
fn check(name: &str) {
    check_in(CAPTURE_SET, name);
}

/// [`check`] for `name` of `set`.
fn check_in(set: Set, name: &str) {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let dir = fixtures().join(set.golden);
    let mut wrong = Vec::new();
    let outputs = render_all(set, name);
    assert_eq!(outputs.iter().map(|o| o.0).collect::<Vec<_>>(), formats());
    // Outputs too large to keep whole are kept as their size and SHA-256 in `NAME.digests`.
    let digests_file = dir.join(format!("{name}.digests"));
    let mut digests = String::new();
    for (fmt, got) in &outputs {
        if got.len() > set.whole_max {
            use sha2::Digest as _;
            let hex: String = sha2::Sha256::digest(got)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            digests.push_str(&format!("{fmt} {} {hex}\n", got.len()));
        }
    }
    if update {
        std::fs::create_dir_all(&dir).unwrap();
        if digests.is_empty() {
            let _ = std::fs::remove_file(&digests_file);
        } else {
            std::fs::write(&digests_file, &digests).unwrap();
        }
    } else {
        let want = std::fs::read_to_string(&digests_file).unwrap_or_default();
        for (w, g) in want.lines().zip(digests.lines()).chain(
            // A line only one side has.
            want.lines().skip(digests.lines().count()).map(|w| (w, "<none>")),
        ) {
            if w != g {
                wrong.push(format!(
                    "{}: a large output differs (regenerate and compare the files by hand)\n  golden: {w}\n  now:    {g}",
                    digests_file.display()
                ));
            }
        }
        if digests.lines().count() > want.lines().count() {
            wrong.push(format!(
                "{}: outputs grew past the size kept whole:\n{digests}",
                digests_file.display()
            ));
        }
    }
    for (fmt, got) in outputs {
        assert!(!got.is_empty(), "{name}.{fmt}: no output");
        let file = dir.join(format!("{name}.{fmt}"));
        if got.len() > set.whole_max {
            if update {
                // Kept as a digest now: a whole copy from before is stale.
                let _ = std::fs::remove_file(&file);
            }
            continue;
        }
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        let want = std::fs::read(&file).unwrap_or_default();
        if want != got {
            let (want, got) = (String::from_utf8_lossy(&want), String::from_utf8_lossy(&got));
            let at = want
                .lines()
                .zip(got.lines())
                .position(|(w, g)| w != g)
                .unwrap_or(want.lines().count().min(got.lines().count()));
            wrong.push(format!(
                "{}: first difference at line {}\n  golden: {:?}\n  now:    {:?}",
                file.display(),
                at + 1,
                want.lines().nth(at).unwrap_or("<end>"),
                got.lines().nth(at).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "output differs from the golden files (UPDATE_GOLDEN=1 regenerates them):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn exec_twice() {
    check("exec-twice");
}

#[test]
fn git_regions() {
    check("git-regions");
}

#[test]
fn leader_exits_first() {
    check("leader-exits-first");
}

#[test]
fn make_j2() {
    check("make-j2");
}

/// `make -j2` with what each process cost: every output shows the figures. Recorded with
/// `proctrace run --record` (a 5-file C project, `cc -O2`) while the taskstats crate's
/// `taskstats-dump` example listened to the same run; each process's summed record was added as
/// a `usage` event before its exit. For scale, `/usr/bin/time -v cc -O2 -c f4.c` alone said
/// 2.38 s user, 0.07 s system, 65,952 KiB peak; its `cc1` here: 2.12 s, 0.07 s, 65,808 KiB.
#[test]
fn make_j2_usage() {
    check("make-j2-usage");
}

#[test]
fn reuse_pid() {
    check("reuse-pid");
}

#[test]
fn rich_run() {
    check("rich-run");
}

#[test]
fn thread_exec() {
    check("thread-exec");
}

#[test]
fn threads_then_leader() {
    check("threads-then-leader");
}

/// Every capture's Chrome trace follows the format's rules and shows every process once, with
/// its duration and status, and every region once, inside its process's slice.
#[test]
fn chrome_traces_are_valid() {
    for name in CAPTURES {
        let (outputs, (expected, regions)) = render_all_with(CAPTURE_SET, name);
        let chrome = &outputs.iter().find(|o| o.0 == "chrome").unwrap().1;
        let text = String::from_utf8(chrome.clone()).unwrap();
        let got = validate_regions(&text, &expected, &regions).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(got.slices > 0 && got.counters > 0, "{name}: {got:?}");
        if name == "git-regions" {
            // git's regions, each in its process's slice; on its lane but for the five the
            // clone reported while its two children ran on two lanes (they lie inside one).
            assert_eq!(got.regions, 29, "{got:?}");
            assert!(got.regions_on_process_lane >= 24, "{got:?}");
        }
    }
}

/// Every capture is covered, and every golden file belongs to a capture and a format.
#[test]
fn every_capture_has_golden_files() {
    let names = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(fixtures().join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let mut captures: Vec<String> = CAPTURES.iter().map(|c| format!("{c}.jsonl")).collect();
    captures.sort();
    assert_eq!(names("captures"), captures, "add new captures to CAPTURES");
    if std::env::var_os("UPDATE_GOLDEN").is_none() {
        let mut golden: Vec<String> = CAPTURES
            .iter()
            .flat_map(|c| formats().into_iter().map(move |f| format!("{c}.{f}")))
            .collect();
        golden.sort();
        assert_eq!(names("golden"), golden, "stale or missing golden files");
    }
}

/// The recorded real builds, every output (issue 23: what people read of real builds is pinned
/// down, so a change to any output shows on them in review).
mod builds {
    use super::*;

    #[test]
    fn cargo_zstd_sys() {
        check_in(BUILD_SET, "cargo-zstd-sys");
    }

    #[test]
    fn dash_exec() {
        check_in(BUILD_SET, "dash-exec");
    }

    #[test]
    fn dash_subshell() {
        check_in(BUILD_SET, "dash-subshell");
    }

    #[test]
    fn libffi_run1() {
        check_in(BUILD_SET, "libffi-run1");
    }

    #[test]
    fn libffi_run2() {
        check_in(BUILD_SET, "libffi-run2");
    }

    #[test]
    fn make_fails() {
        check_in(BUILD_SET, "make-fails");
    }

    #[test]
    fn pip_wheel() {
        check_in(BUILD_SET, "pip-wheel");
    }

    /// Every recorded build's Chrome trace follows the format's rules.
    #[test]
    fn chrome_traces_are_valid() {
        for name in BUILDS {
            let (outputs, (expected, regions)) = render_all_with(BUILD_SET, name);
            let chrome = &outputs.iter().find(|o| o.0 == "chrome").unwrap().1;
            let text = String::from_utf8(chrome.clone()).unwrap();
            let got = validate_regions(&text, &expected, &regions).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(got.slices > 0, "{name}: {got:?}");
        }
    }
}

/// Every recorded build is covered, and every golden file belongs to a build and a format.
#[test]
fn every_build_has_golden_files() {
    let mut builds: Vec<String> = std::fs::read_dir(fixtures().join("builds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    builds.sort();
    let mut want: Vec<String> = BUILDS.iter().map(|c| format!("{c}.jsonl")).collect();
    want.sort();
    assert_eq!(builds, want, "add new builds to BUILDS");
    if std::env::var_os("UPDATE_GOLDEN").is_none() {
        let mut golden: Vec<String> = std::fs::read_dir(fixtures().join("builds/golden"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        golden.sort();
        // Each format of each build is a file of its own or a line of the build's digests.
        let mut want: Vec<String> = Vec::new();
        for c in BUILDS {
            let digests = std::fs::read_to_string(fixtures().join(format!("builds/golden/{c}.digests")))
                .unwrap_or_default();
            let digested: Vec<&str> = digests.lines().filter_map(|l| l.split(' ').next()).collect();
            if !digested.is_empty() {
                want.push(format!("{c}.digests"));
            }
            for f in formats() {
                if !digested.contains(&f) {
                    want.push(format!("{c}.{f}"));
                }
            }
        }
        want.sort();
        assert_eq!(golden, want, "stale or missing golden files");
    }
}

/// A header recorded before `host` and `utc_offset` existed still reads; its trace2 output then
/// says `Localhost` and UTC rather than anything about the machine replaying it.
#[test]
fn older_headers_replay_without_host_or_zone() {
    let text = concat!(
        r#"{"e":"header","header":{"mode":{"run":{"argv":["true"]}},"ts":1000000000,"#,
        r#""real_minus_mono":0,"tool":{"pid":7,"argv":["proctrace"],"version":"0.1.0","#,
        r#""parent_sid":null},"backend":"connector"}}"#,
        "\n"
    );
    let cap = parse_capture(text.as_bytes(), "old").unwrap();
    let h = cap.header.clone().unwrap();
    assert_eq!((h.tool.host.as_deref(), h.tool.utc_offset), (None, None));
    let scratch = std::env::temp_dir().join(format!("proctrace-golden-old-{}", std::process::id()));
    let _ = std::fs::remove_file(&scratch);
    let targets = [
        Trace2Target {
            kind: trace2::TargetKind::Normal,
            value: scratch.to_string_lossy().into_owned(),
        },
        Trace2Target {
            kind: trace2::TargetKind::Event,
            value: scratch.to_string_lossy().into_owned(),
        },
    ];
    let mut sinks = Fanout::new();
    sinks.add(
        "trace2",
        "golden",
        Box::new(Trace2Sink::new(&targets, false, true).unwrap()),
    );
    let _ = replay(&cap, None, sinks, h);
    let out = std::fs::read_to_string(&scratch).unwrap();
    let _ = std::fs::remove_file(&scratch);
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("00:00:01.000000 "), "{first}");
    assert!(
        out.contains(r#""sid":"19700101T000001.000000Z-Localhost-P00000007""#),
        "{out}"
    );
}
