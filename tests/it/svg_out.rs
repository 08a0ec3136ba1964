//! `--svg`: the picture of a real run, parsed back and checked against the JSON Lines of the same
//! run; a replay of the recorded run draws the same bytes.
use std::collections::HashMap;
use std::process::Command;

use crate::common::*;

/// Bars as `pid → (x, width, outcome class, hover text)`.
fn bars(doc: &roxmltree::Document) -> HashMap<i64, (f64, f64, String, String)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("class").is_some_and(|c| c.starts_with("bar ")))
        .map(|n| {
            let num = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            let title = n.children().find(|c| c.has_tag_name("title")).unwrap();
            (
                n.attribute("data-pid").unwrap().parse().unwrap(),
                (
                    num("x"),
                    num("width"),
                    n.attribute("class").unwrap()["bar ".len()..].to_string(),
                    title.text().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

both_backends! {
/// Two sleeps side by side, a failing and a killed command: one bar each, placed and sized as
/// the JSON Lines say, coloured by outcome, with the command on hover.
fn svg_draws_every_process_of_a_real_run(backend: &str) {
    let svg = tmp("run.svg");
    let cap = tmp("cap.jsonl");
    let (out, lines) = run_on(
        backend,
        &["--svg", &svg, "--record", &cap],
        // The failing and the killed shell live 0.1 s, so their argv is read even under load.
        &[
            "sh",
            "-c",
            "sleep 0.3 & sleep 0.3 & sh -c 'sleep 0.1; exit 3'; sh -c 'sleep 0.1; kill -KILL $$'; wait; exit 0",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = doc.root_element();
    let num = |a: &str| root.attribute(a).unwrap().parse::<f64>().unwrap();
    let (t0, t1) = (num("data-t0") / 1e9, num("data-t1") / 1e9);
    let (px, pw, min) = (num("data-plot-x"), num("data-plot-width"), num("data-min-bar"));
    let x_of = |ts: f64| px + (ts - t0) / (t1 - t0) * pw;

    let ps = processes(&lines);
    let b = bars(&doc);
    assert_eq!(b.len(), ps.len(), "one bar per process");
    let forks: HashMap<i64, f64> = lines
        .iter()
        .filter(|l| l["event"] == "fork")
        .map(|l| (l["pid"].as_i64().unwrap(), l["ts"].as_f64().unwrap()))
        .collect();
    for p in ps.values() {
        let (x, w, class, title) = &b[&p.pid];
        let exit = p.exits.last().expect("every process exited");
        let want_w = (exit["duration"].as_f64().unwrap() / (t1 - t0) * pw).max(min);
        assert!((x - x_of(forks[&p.pid])).abs() < 0.11, "pid {}: x {x}", p.pid);
        assert!((w - want_w).abs() < 0.15, "pid {}: width {w}, want {want_w}", p.pid);
        // The command succeeded (exit 0): the failing and the killed shells' ends were handled,
        // drawn muted (issue 23: they were red and purple).
        let want_class = match (exit["code"].as_i64(), exit["signal"].as_i64()) {
            (Some(0), _) => "ok",
            (Some(_), _) | (None, Some(_)) => "handled",
            _ => panic!("{exit}"),
        };
        assert_eq!(class, want_class, "pid {}: {exit}", p.pid);
        if let Some(Some(argv)) = p.execs.last() {
            assert!(title.contains(&argv[0]), "{title}");
        }
    }
    let fail = find(&ps, &["sh", "-c", "sleep 0.1; exit 3"]);
    assert!(b[&fail.pid].3.contains("exit 3"), "{}", b[&fail.pid].3);
    let killed = find(&ps, &["sh", "-c", "sleep 0.1; kill -KILL $$"]);
    assert!(b[&killed.pid].3.contains("killed by SIGKILL"), "{}", b[&killed.pid].3);
    // The two background sleeps overlap on the picture.
    let sleeps: Vec<_> = ps
        .values()
        .filter(|p| {
            p.execs
                .last()
                .is_some_and(|a| a.as_ref().is_some_and(|a| a[..] == ["sleep", "0.3"]))
        })
        .map(|p| &b[&p.pid])
        .collect();
    assert_eq!(sleeps.len(), 2);
    assert!(sleeps[0].0 < sleeps[1].0 + sleeps[1].1 && sleeps[1].0 < sleeps[0].0 + sleeps[0].1);
    let strip = doc.descendants().find(|n| n.attribute("id") == Some("concurrency")).unwrap();
    // The strip's maximum is the most processes alive at one moment by the JSON Lines (at least
    // the shell and both sleeps).
    let iv: Vec<(f64, f64)> = ps
        .values()
        .map(|p| (forks[&p.pid], p.exits.last().unwrap()["ts"].as_f64().unwrap()))
        .collect();
    let most = iv
        .iter()
        .map(|&(s, _)| iv.iter().filter(|&&(s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap();
    assert!(most >= 3);
    assert_eq!(strip.attribute("data-max"), Some(most.to_string().as_str()));

    // Replaying the recording draws the same picture, byte for byte.
    let replayed = tmp("replayed.svg");
    let rep = Command::new(PROCTRACE)
        .args(["replay", &cap, "--svg", &replayed])
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    assert_eq!(std::fs::read_to_string(&replayed).unwrap(), text);
}
}

/// An SVG path that cannot be created stops the run before the command starts, naming the path.
#[test]
fn an_unwritable_svg_path_is_an_error_naming_it() {
    let (out, marker) = run_touching_marker(&["--svg", "/nonexistent-dir/x.svg"]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/nonexistent-dir/x.svg"),
        "{}",
        stderr(&out)
    );
    assert!(
        !std::path::Path::new(&marker).exists(),
        "the command must not run"
    );
}

/// `watch -p PID --svg`: the records of processes that exited during the watch are kept for the
/// picture (watch otherwise drops them), so every one of them has its bar.
#[test]
fn watch_draws_the_processes_that_came_and_went() {
    let svg = tmp("watch.svg");
    let (out, pid) = watch_sh(
        // The first sleep gives `watch` time to subscribe on a loaded machine; the processes
        // after it live long enough for their argv to be read.
        "sleep 1; /bin/sleep 0.2; sh -c 'sleep 0.2; exit 4'; exit 0",
        &["--duration", "10", "--svg", &svg],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    let b = bars(&doc);
    let find = |words: &str| {
        b.values()
            .find(|bar| bar.3.lines().next().is_some_and(|l| l.starts_with(words)))
            .unwrap_or_else(|| panic!("no bar for {words:?} in {b:#?}"))
    };
    assert_eq!(find("sh -c 'sleep 1;").2, "ok");
    assert_eq!(find("/bin/sleep 0.2").2, "ok");
    // The watched shell succeeded: the exit 4 under it was handled (issue 23: it was "fail").
    assert_eq!(find("sh -c 'sleep 0.2; exit 4'").2, "handled");
    assert!(text.contains(&format!("watch -p {pid}")), "titled by the mode");
}

/// A picture that cannot be written at the end (a full disk: /dev/full) is reported with its
/// path and reason; the JSON Lines and the tree are complete and `run` keeps CMD's status, while
/// `replay`, whose only job is its outputs, fails.
#[test]
fn a_failed_svg_write_is_reported_and_loses_nothing_else() {
    let cap = tmp("cap.jsonl");
    let (out, lines) = run(&["--svg", "/dev/full", "--record", &cap], &["sh", "-c", "exit 5"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot write SVG to '/dev/full': No space left on device"),
        "{err}"
    );
    assert!(
        err.contains("1 process, exit 5"),
        "the tree's summary line: {err}"
    );
    assert_eq!(lines.last().unwrap()["event"], "end", "JSON Lines complete");

    let rep = Command::new(PROCTRACE)
        .args(["replay", &cap, "--svg", "/dev/full"])
        .output()
        .unwrap();
    // A failed output fails a replay, whose job is its outputs (EX_IOERR; was 125 before one
    // failure policy for every command).
    assert_eq!(rep.status.code(), Some(74));
    assert!(
        stderr(&rep).contains("cannot write SVG to '/dev/full'"),
        "{}",
        stderr(&rep)
    );
}

/// A command that cannot be started still gets its (empty) picture, not a zero-byte file.
#[test]
fn a_command_that_cannot_start_still_gets_a_picture() {
    let svg = tmp("none.svg");
    let out = Command::new(PROCTRACE)
        .args(["run", "--svg", &svg, "--", "/nonexistent/cmd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    roxmltree::Document::parse(&text).expect("well-formed XML");
    assert!(text.contains("/nonexistent/cmd"), "titled by the command");
}
