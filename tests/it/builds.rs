//! Recorded real builds (`tests/fixtures/builds/`, see its README.md for how each was
//! recorded) replayed through every output: each output is well-formed, `analyze` of the replay's
//! JSON Lines gives the replay's summary, and the facts the README states about the recordings
//! (which pid is the dash subshell, which gcc failed) hold, so later tests can build on them.
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::chrome_check::validate;
use crate::chrome_out::expected;
use crate::common::*;

/// A fixture's path.
fn capture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/builds")
        .join(format!("{name}.jsonl"))
        .to_string_lossy()
        .into_owned()
}

/// What one replay through every output wrote.
struct Replayed {
    lines: Vec<Value>,
    svg: String,
    summary: Value,
    summary_text: String,
    jsonl_path: String,
}

/// `proctrace replay CAPTURE` with every output of the registry at once, each checked for form.
fn replay_everything(name: &str) -> Replayed {
    let cap = capture(name);
    let jsonl = tmp(&format!("{name}.jsonl"));
    let chrome = tmp(&format!("{name}.chrome.json"));
    let svg = tmp(&format!("{name}.svg"));
    let sum_json = tmp(&format!("{name}.summary.json"));
    let sum_md = tmp(&format!("{name}.summary.md"));
    let t2_event = tmp(&format!("{name}.t2.event"));
    let t2_perf = tmp(&format!("{name}.t2.perf"));
    let t2_normal = tmp(&format!("{name}.t2.normal"));
    let out = Command::new(PROCTRACE)
        .args(["replay", &cap, "-o", &jsonl, "--chrome", &chrome, "--svg", &svg])
        .args(["--summary-json", &sum_json, "--summary-md", &sum_md])
        .args(["--trace2-event", &t2_event, "--trace2-perf", &t2_perf])
        .args(["--trace2-normal", &t2_normal, "--tree", "full"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let tree = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{name}: {tree}");

    // JSON Lines: every line parses (read_lines panics naming the line), start to end.
    let lines = read_lines(&jsonl);
    assert_eq!(lines.first().unwrap()["event"], "start", "{name}");
    assert_eq!(lines.last().unwrap()["event"], "end", "{name}");
    let pids: BTreeSet<i64> = lines
        .iter()
        .filter(|l| l["event"] == "fork")
        .map(|l| l["pid"].as_i64().unwrap())
        .collect();
    assert_eq!(
        pids.len() as i64,
        lines.last().unwrap()["processes"].as_i64().unwrap(),
        "{name}: one fork line per process"
    );

    // The tree (full) names every process.
    let words: HashSet<&str> = tree.split(|c: char| !c.is_ascii_digit()).collect();
    let missing: Vec<_> = pids
        .iter()
        .filter(|p| !words.contains(p.to_string().as_str()))
        .collect();
    assert!(missing.is_empty(), "{name}: not in the tree: {missing:?}");

    // Chrome: the Perfetto rules, one slice per process with its times and status.
    let text = std::fs::read_to_string(&chrome).unwrap();
    let got = validate(&text, &expected(&lines)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(got.slices, pids.len(), "{name}: {got:?}");

    // SVG: well-formed XML with an svg root.
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
    let svg_text = text.clone();

    // Summary JSON: one object agreeing with the JSON Lines' end.
    let summary_text = std::fs::read_to_string(&sum_json).unwrap();
    let summary: Value = serde_json::from_str(&summary_text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(summary["processes"], lines.last().unwrap()["processes"], "{name}");
    assert_eq!(summary["status"]["code"], lines.last().unwrap()["code"], "{name}");

    // Markdown: a heading naming the command.
    let md = std::fs::read_to_string(&sum_md).unwrap();
    assert!(md.starts_with("### proctrace: `"), "{name}: {md}");

    // Trace2 event: every line a JSON object of a session; one session per process, and
    // proctrace's own.
    let t2 = std::fs::read_to_string(&t2_event).unwrap();
    let mut sids = HashSet::new();
    for (i, l) in t2.lines().enumerate() {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {t2_event}:{}: {e}", i + 1));
        assert!(v["event"].is_string(), "{name}: {t2_event}:{}: {l}", i + 1);
        sids.insert(v["sid"].as_str().unwrap().to_string());
    }
    assert_eq!(sids.len(), pids.len() + 1, "{name}: sessions");
    // Trace2 perf and normal: text lines, as many sessions' `start` lines as the event stream.
    let starts = t2.lines().filter(|l| l.contains(r#""event":"start""#)).count();
    for (path, sep) in [(&t2_perf, "| start "), (&t2_normal, " start ")] {
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.contains(sep)).count(),
            starts,
            "{name}: {path}"
        );
    }

    Replayed {
        lines,
        svg: svg_text,
        summary,
        summary_text,
        jsonl_path: jsonl,
    }
}

/// `analyze` of the replay's JSON Lines writes the replay's summary JSON byte for byte.
fn analyze_agrees(name: &str, r: &Replayed) {
    let again = tmp(&format!("{name}.analyzed.summary.json"));
    let out = Command::new(PROCTRACE)
        .args([
            "analyze",
            &r.jsonl_path,
            "--summary-json",
            &again,
            "--tree",
            "none",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), r.summary_text, "{name}");
}

/// One test per fixture: every output, then `analyze`.
macro_rules! every_output {
    ($($test:ident: $name:literal,)*) => {$(
        #[test]
        fn $test() {
            let r = replay_everything($name);
            analyze_agrees($name, &r);
        }
    )*};
}

every_output! {
    libffi_run1_through_every_output: "libffi-run1",
    libffi_run2_through_every_output: "libffi-run2",
    cargo_zstd_sys_through_every_output: "cargo-zstd-sys",
    pip_wheel_through_every_output: "pip-wheel",
    make_fails_through_every_output: "make-fails",
    dash_subshell_through_every_output: "dash-subshell",
    dash_exec_through_every_output: "dash-exec",
}

/// A process's images as the JSON Lines tell them: (exec ts, argv), in order; and its fork/exit.
struct Life {
    fork: f64,
    ppid: i64,
    execs: Vec<(f64, Vec<String>)>,
    exit: Option<(f64, Option<i64>)>,
}

fn lives(lines: &[Value]) -> HashMap<i64, Life> {
    let mut out: HashMap<i64, Life> = HashMap::new();
    for l in lines {
        let (Some(pid), Some(ts)) = (l["pid"].as_i64(), l["ts"].as_f64()) else {
            continue;
        };
        match l["event"].as_str().unwrap() {
            "fork" => {
                out.insert(
                    pid,
                    Life {
                        fork: ts,
                        ppid: l["ppid"].as_i64().unwrap(),
                        execs: Vec::new(),
                        exit: None,
                    },
                );
            }
            "exec" => {
                let argv = serde_json::from_value(l["argv"].clone()).unwrap_or_default();
                out.get_mut(&pid).unwrap().execs.push((ts, argv));
            }
            "exit" => out.get_mut(&pid).unwrap().exit = Some((ts, l["code"].as_i64())),
            _ => {}
        }
    }
    out
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The README's facts about the held-out case: subshell 27996 of `sh` 27994 ran `/bin/sleep 0.3`
/// as its child 27997 for ~0.3 s, then exec'd `/bin/sleep 0.4` itself, which ran ~0.4 s.
#[test]
fn the_dash_subshell_runs_its_first_command_as_a_child_then_execs_the_second() {
    let r = replay_everything("dash-subshell");
    let ps = lives(&r.lines);
    let (sh, subshell, child) = (27994, 27996, 27997);
    assert_eq!(ps.len(), 3);
    assert_eq!(ps[&subshell].ppid, sh);
    assert_eq!(ps[&child].ppid, subshell);
    assert_eq!(ps[&child].execs.len(), 1);
    assert_eq!(ps[&child].execs[0].1, argv(&["/bin/sleep", "0.3"]));
    let (child_exit, code) = ps[&child].exit.unwrap();
    assert_eq!(code, Some(0));
    assert!((child_exit - ps[&child].execs[0].0 - 0.3).abs() < 0.05);
    // The subshell is a fork of sh (no exec) until its child is gone, then sleep 0.4.
    assert_eq!(ps[&subshell].execs.len(), 1);
    let (exec_ts, exec_argv) = &ps[&subshell].execs[0];
    assert_eq!(*exec_argv, argv(&["/bin/sleep", "0.4"]));
    assert!(*exec_ts > child_exit);
    assert!((exec_ts - ps[&subshell].fork - 0.3).abs() < 0.05);
    let (exit, code) = ps[&subshell].exit.unwrap();
    assert_eq!(code, Some(0));
    assert!(
        (exit - exec_ts - 0.4).abs() < 0.05,
        "sleep 0.4 ran {}",
        exit - exec_ts
    );
    assert_eq!(r.summary["status"]["code"], 0);
}

/// `sh -c 'x=1; exec /bin/sleep 0.2'`: one process 28002, two images, the second ~0.2 s.
#[test]
fn the_dash_exec_case_is_one_process_with_two_images() {
    let r = replay_everything("dash-exec");
    let ps = lives(&r.lines);
    assert_eq!(ps.len(), 1);
    let p = &ps[&28002];
    let images: Vec<_> = p.execs.iter().map(|(_, a)| a.clone()).collect();
    assert_eq!(
        images,
        [
            argv(&["sh", "-c", "x=1; exec /bin/sleep 0.2"]),
            argv(&["/bin/sleep", "0.2"])
        ]
    );
    let (exit, code) = p.exit.unwrap();
    assert_eq!(code, Some(0));
    assert!((exit - p.execs[1].0 - 0.2).abs() < 0.05);
}

/// The failing make: `gcc -O2 -Wall -c f07.c -o f07.o` (27911) exits 1 after its cc1 (27913)
/// does; make (27891, the root) exits 2; every other process exits 0, and the other nine sources
/// were compiled or not started (make stops starting jobs).
#[test]
fn the_failing_make_fails_in_the_gcc_of_f07() {
    let r = replay_everything("make-fails");
    let ps = lives(&r.lines);
    let failed: BTreeSet<i64> = ps
        .iter()
        .filter(|(_, p)| p.exit.is_some_and(|(_, c)| c != Some(0)))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(failed, BTreeSet::from([27891, 27911, 27913]));
    assert_eq!(ps[&27891].execs[0].1, argv(&["make", "-j2"]));
    assert_eq!(ps[&27891].exit.unwrap().1, Some(2));
    assert_eq!(ps[&27911].ppid, 27891);
    assert_eq!(
        ps[&27911].execs[0].1,
        argv(&["gcc", "-O2", "-Wall", "-c", "f07.c", "-o", "f07.o"])
    );
    assert_eq!(ps[&27911].exit.unwrap().1, Some(1));
    assert_eq!(ps[&27913].ppid, 27911);
    assert!(ps[&27913].execs[0].1[0].ends_with("/cc1"));
    assert!(ps[&27913].exit.unwrap().0 <= ps[&27911].exit.unwrap().0);
    assert_eq!(r.summary["status"]["code"], 2);
    // No archive: make stopped before `ar`.
    assert!(
        ps.values()
            .all(|p| p.execs.iter().all(|(_, a)| a.first().is_none_or(|a| a != "ar")))
    );
    // The picture says on each failed row how it ended (a PNG has no hover), and only there.
    let doc = roxmltree::Document::parse(&r.svg).unwrap();
    let durs: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("dur"))
        .filter_map(|n| n.text())
        .collect();
    // One row a job (issue 23 item 7): make, and a row a compile with its cc1 and as in it,
    // so 9 durations for 24 processes; the failed compile's row names its cause (the cc1
    // that exited 1 under gcc) with its status, where there were two rows saying exit 1.
    let rows = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("job"))
        .count();
    assert_eq!(durs.len(), rows, "one duration a drawn row: {durs:?}");
    assert_eq!(rows, 9, "{durs:?}");
    let with_status: Vec<&&str> = durs.iter().filter(|d| d.contains(" · ")).collect();
    assert_eq!(with_status.len(), 2, "{durs:?}");
    assert_eq!(
        with_status
            .iter()
            .filter(|d| d.ends_with("· exit 1 · cause: cc1 exit 1"))
            .count(),
        1,
        "{durs:?}"
    );
    assert_eq!(
        with_status.iter().filter(|d| d.ends_with("· exit 2")).count(),
        1,
        "{durs:?}"
    );
}

/// The two libffi runs compile the same sources (the ground truth for `diff`: two runs of one
/// build), among them src/closures.c; both succeed.
#[test]
fn the_two_libffi_runs_compile_the_same_sources() {
    let sources = |name: &str| {
        let r = replay_everything(name);
        assert_eq!(r.summary["status"]["code"], 0, "{name}");
        let mut out = BTreeSet::new();
        for p in lives(&r.lines).values() {
            for (_, a) in &p.execs {
                // libtool's compile mode: `… --mode=compile gcc … -c -o X.lo ../src/X.c`.
                if a.iter().any(|w| w == "--mode=compile") {
                    out.insert(a.last().unwrap().clone());
                }
            }
        }
        out
    };
    let one = sources("libffi-run1");
    assert_eq!(one.len(), 10, "{one:?}");
    assert!(one.iter().any(|s| s.ends_with("src/closures.c")), "{one:?}");
    assert_eq!(one, sources("libffi-run2"));
}

/// The text summary's "slowest" of libffi's build (issue 23 item 2): every line reads
/// differently, at the default width and at 80 columns, and the compiles name their file
/// (cut from the right they all read `gcc -DHAVE_CONFIG_H -I. -I.. -I. -I../include …`).
#[test]
fn libffi_slowest_lines_say_which_file() {
    for columns in ["120", "80"] {
        let out = Command::new(PROCTRACE)
            .args(["replay", &capture("libffi-run1"), "--tree", "auto"])
            .env("NO_COLOR", "1")
            .env("COLUMNS", columns)
            .output()
            .unwrap();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{text}");
        let slowest: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "slowest:")
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert_eq!(slowest.len(), 10, "{text}");
        // `  DURATION  PID  LABEL`: the labels.
        let labels: Vec<&str> = slowest
            .iter()
            .map(|l| l.trim_start().splitn(3, "  ").nth(2).unwrap().trim_start())
            .collect();
        // Every row that names a command reads differently (two configure subshells are both
        // `[fork of bash]`: a fork image has no argv of its own to tell them apart).
        let named: Vec<&str> = labels
            .iter()
            .copied()
            .filter(|l| !l.starts_with("[fork of "))
            .collect();
        let distinct: BTreeSet<&str> = named.iter().copied().collect();
        assert_eq!(distinct.len(), named.len(), "{labels:#?}");
        assert!(named.len() >= 7, "{labels:#?}");
        let width: usize = columns.parse().unwrap();
        for l in &slowest {
            assert!(l.chars().count() <= width, "{l}");
        }
        let gcc: Vec<&&str> = labels.iter().filter(|l| l.starts_with("gcc ")).collect();
        assert!(gcc.len() >= 2, "{labels:#?}");
        for l in gcc {
            assert!(l.contains("-c ../src/closures.c") && l.contains("-o src/"), "{l}");
        }
        // The libtool recipes name their file too (`depbase=`echo src/closures.lo …`).
        for l in labels.iter().filter(|l| l.starts_with("bash -c $'depbase=")) {
            assert!(l.contains(".lo"), "{l}");
        }
    }
}

/// libffi's critical path, 2,966 steps, read at any size (issue 23 item 3): configure's own
/// stretch counted with its probes, make's stretch said to be bounded by its two job slots, and
/// the longest job in it named by its source, `closures.c`; the summary JSON has the stretch.
#[test]
fn libffi_critical_path_names_closures_c_and_the_job_slots() {
    for (columns, md) in [("120", false), ("80", false), ("120", true)] {
        let md_file = tmp("libffi.md");
        let out = Command::new(PROCTRACE)
            .args([
                "replay",
                &capture("libffi-run1"),
                "--tree",
                "auto",
                "--summary-md",
                &md_file,
            ])
            .env("NO_COLOR", "1")
            .env("COLUMNS", columns)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = if md {
            std::fs::read_to_string(&md_file).unwrap()
        } else {
            stderr(&out)
        };
        let path: String = text
            .lines()
            .skip_while(|l| !l.contains("ritical path"))
            .take_while(|l| !l.starts_with("proctrace:") && !l.starts_with("#### Slowest"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(path.contains("2966 steps"), "{path}");
        assert!(path.contains("closures.c"), "{columns} {md}: {path}");
        assert!(path.contains("bounded by its job slots"), "{path}");
        assert!(path.contains("shorter steps"), "{path}");
        // Never one slot's compile listed as if it gated the build.
        assert!(!path.contains("-c ../src/prep_cif.c"), "{path}");
        let rows = path.lines().filter(|l| l.contains('%')).count();
        assert!((3..=13).contains(&rows), "{rows} rows: {path}");
    }
    let json = tmp("libffi.json");
    let out = Command::new(PROCTRACE)
        .args([
            "replay",
            &capture("libffi-run1"),
            "--tree",
            "none",
            "-q",
            "--summary-json",
            &json,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let par = v["parallel"].as_array().unwrap();
    assert_eq!(par.len(), 1, "{par:?}");
    assert_eq!(par[0]["slots"], 2);
    let job = par[0]["longest_job"]["argv"].as_array().unwrap();
    assert!(job.iter().any(|w| w == "../src/closures.c"), "{job:?}");
    assert_eq!(v["critical_path"].as_array().unwrap().len(), 2966);
}
