//! `diff` of two runs of the same autotools build (tests/fixtures/autotools: configure's probes
//! with their `./confXXXXXX` scratch directories, `conf$$` files and compiler temp files, then
//! a make of four C files) finds nothing that is not there: no new, gone or failed-now
//! command, and no waiter (make, the compiler driver, the recipe's shell, configure) listed
//! as slower or faster for its children's change.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// Commands that mostly wait for what they run.
const WAITERS: [&str; 6] = ["make", "gcc", "cc", "collect2", "configure", "config.status"];

fn diff_json(old: &str, new: &str) -> Value {
    let out = Command::new(PROCTRACE)
        .args(["diff", "--json", old, new])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn argv_of(e: &Value) -> Vec<String> {
    let words = match e["example"].as_array() {
        Some(a) if !a.is_empty() => a,
        _ => e["argv"].as_array().unwrap(),
    };
    words.iter().map(|w| w.as_str().unwrap().to_string()).collect()
}

/// Whether a listed command is one of [`WAITERS`] or a recipe's `sh -c`.
fn is_waiter(argv: &[String]) -> bool {
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let prog = argv.first().map(|a| base(a)).unwrap_or_default();
    let script = argv.get(1).map(|a| base(a)).unwrap_or_default();
    WAITERS.contains(&prog.as_str())
        || WAITERS.contains(&script.as_str())
        || (matches!(prog.as_str(), "sh" | "bash" | "dash") && argv.get(1).is_some_and(|a| a == "-c"))
}

/// What must hold of a diff of two runs of the same build; `waiters_too`: configure and
/// config.status (shells that do much of their own work) are held to it as well.
fn assert_nothing_changed(v: &Value, waiters_too: bool) {
    assert_nothing_changed_beyond(v, waiters_too, 0.0);
}

/// [`assert_nothing_changed`], a waiter's own time allowed to move by `noise_s` in all (its
/// fork-to-exec gaps and scheduling: live runs on a loaded machine).
fn assert_nothing_changed_beyond(v: &Value, waiters_too: bool, noise_s: f64) {
    for k in ["new", "gone", "failed"] {
        let l: Vec<Vec<String>> = v[k].as_array().unwrap().iter().map(argv_of).collect();
        assert!(l.is_empty(), "{k}: {l:?}\n{v:#}");
    }
    for k in ["slower", "faster"] {
        for e in v[k].as_array().unwrap() {
            let a = argv_of(e);
            let script = a.get(1).map(String::as_str).unwrap_or_default();
            let shell_work = script.ends_with("configure") || script.ends_with("config.status");
            if shell_work && !waiters_too {
                continue;
            }
            let own = e["delta_own_s"].as_f64().unwrap_or(f64::MAX).abs();
            assert!(!is_waiter(&a) || own <= noise_s, "{k}: a waiter {a:?}\n{e:#}");
        }
    }
}

/// The two runs recorded on this machine (tests/fixtures/diff-builds/autotools/README.md).
#[test]
fn the_recorded_runs_of_one_autotools_build_diff_to_nothing() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/diff-builds/autotools");
    let (a, b) = (dir.join("run1.jsonl"), dir.join("run2.jsonl"));
    let v = diff_json(a.to_str().unwrap(), b.to_str().unwrap());
    // The runs are the same build: the same processes; configure's failing probes are handled,
    // so neither run has a failure that mattered.
    assert_eq!(
        v["runs"]["old"]["processes"], v["runs"]["new"]["processes"],
        "{v:#}"
    );
    assert_eq!(v["runs"]["old"]["failures"], 0, "{v:#}");
    assert_eq!(v["runs"]["new"]["failures"], 0, "{v:#}");
    assert_nothing_changed(&v, true);
}

/// Two runs recorded now, in one directory, with `run --record`.
#[test]
fn two_runs_of_one_autotools_build_diff_to_nothing() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/autotools");
    let dir = PathBuf::from(tmp("autotools"));
    let mut caps = Vec::new();
    for run in 1..=2 {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
        copy_dir(&src, &dir);
        let cap = tmp(&format!("run{run}.cap"));
        let out = Command::new(PROCTRACE)
            .args(["run", "--tree", "none", "--record", &cap, "--"])
            .args(["sh", "-c", "./configure -q && make -j2"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(dir.join("small").exists(), "the build built: {}", stderr(&out));
        caps.push(cap);
    }
    let v = diff_json(&caps[0], &caps[1]);
    // Live runs: a waiter's own time is its gaps between children (fork to exec, scheduling),
    // which a loaded machine moves by tens of milliseconds (12 `gcc -c conftest.c` drivers by
    // 71 ms at load 8). Were own time not taken, the drivers would be listed with their cc1's
    // whole change (the recorded pair above holds waiters to no change at all).
    assert_nothing_changed_beyond(&v, false, 0.25);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        std::fs::copy(&p, &dest).unwrap();
    }
}

fn recorded_build(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/builds/{name}.jsonl"));
    p.to_str().unwrap().to_string()
}

/// The held-out subshell case (one process with two images: the subshell, then `sleep 0.4`)
/// diffed against itself: nothing, even with no threshold at all.
#[test]
fn the_dash_subshell_against_itself_is_empty() {
    let f = recorded_build("dash-subshell");
    for args in [&[][..], &["--threshold", "0", "--min-ms", "0"][..]] {
        let out = Command::new(PROCTRACE)
            .arg("diff")
            .args(args)
            .args(["--json", &f, &f])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        for k in ["new", "gone", "failed", "fixed", "slower", "faster"] {
            assert!(v[k].as_array().unwrap().is_empty(), "{args:?} {k}\n{v:#}");
        }
    }
}

/// The two recorded libffi builds (tests/fixtures/builds/README.md), compared image by image:
/// no new or gone command, no waiter slower or faster; the one failed-now command is the
/// build's own race (run 2's `mkdir src/.libs`, libtool's two `-j2` compiles making the
/// directory at once).
#[test]
fn the_two_recorded_libffi_builds_diff_to_their_race() {
    let v = diff_json(&recorded_build("libffi-run1"), &recorded_build("libffi-run2"));
    for k in ["new", "gone"] {
        let l: Vec<Vec<String>> = v[k].as_array().unwrap().iter().map(argv_of).collect();
        assert!(l.is_empty(), "{k}: {l:?}");
    }
    let failed: Vec<Vec<String>> = v["failed"].as_array().unwrap().iter().map(argv_of).collect();
    assert_eq!(failed, [["mkdir", "src/.libs"]], "{:#}", v["failed"]);
    for k in ["slower", "faster"] {
        for e in v[k].as_array().unwrap() {
            let a = argv_of(e);
            let script = a.get(1).map(String::as_str).unwrap_or_default();
            // configure does much of its own work in its shell: its own time may change.
            if script.ends_with("configure") || script.ends_with("config.status") {
                continue;
            }
            assert!(!is_waiter(&a), "{k}: a waiter {a:?}\n{e:#}");
        }
    }
}
