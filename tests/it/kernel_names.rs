//! Every process has the kernel's name, argv read or not: `[cc1]`, `[as]` under
//! `run --no-enrich -- make -j2`, never `[?]` or the parent's name; a process that renamed
//! itself keeps its rename; a wrapper script is named by its script. Both backends.
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::common::*;

/// tests/fixtures/make-c copied to a fresh directory (the build writes its objects there).
fn make_dir() -> String {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/make-c");
    let dir = tmp("make-c");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, PathBuf::from(&dir).join(p.file_name().unwrap())).unwrap();
    }
    dir
}

/// The name each process ended with, as its JSON Lines say it: the exit's `comm`, else the
/// last `comm` of its `exec`, `comm` or `fork` lines.
fn names(lines: &[Value]) -> BTreeMap<i64, Option<String>> {
    let mut m = BTreeMap::new();
    for l in lines {
        let Some(pid) = l["pid"].as_i64() else { continue };
        let e = m.entry(pid).or_insert(None);
        if matches!(l["event"].as_str(), Some("fork" | "exec" | "comm" | "exit"))
            && let Some(c) = l["comm"].as_str()
        {
            *e = Some(c.to_string());
        }
    }
    m
}

both_backends! {
    fn a_make_without_argv_has_kernel_names(backend: &str) {
        let dir = make_dir();
        let (out, lines) = run_on(backend, &["--no-enrich"], &["make", "-j2", "-C", &dir]);
        assert!(out.status.success(), "{}", stderr(&out));
        let names = names(&lines);
        let ended: BTreeSet<i64> = lines
            .iter()
            .filter(|l| l["event"] == "exit")
            .filter_map(|l| l["pid"].as_i64())
            .collect();
        assert!(ended.len() >= 12, "make, 5 cc, 4 cc1, 4 as, collect2, ld: {names:?}");
        for pid in &ended {
            assert!(names[pid].is_some(), "pid {pid} has no name: {names:?}");
        }
        let seen: BTreeSet<&str> = names.values().flatten().map(String::as_str).collect();
        for want in ["make", "cc", "cc1", "as", "collect2", "ld"] {
            assert!(seen.contains(want), "no {want} in {seen:?}");
        }
        // The tree names them so (no argv was read), never `[?]`.
        let tree = stderr(&out);
        assert!(!tree.contains("[?]"), "{tree}");
        for want in ["[make]", "[cc1]", "[as]", "[ld]"] {
            assert!(tree.contains(want), "no {want} in\n{tree}");
        }
        // Four assemblers: none is named after its parent `cc`.
        assert_eq!(tree.matches("[as] (argv unavailable)").count(), 4, "{tree}");
        // A saved trace says the same: `analyze` gives the same names back.
        let dir = make_dir();
        let (_, _, file) = run_file(&["--backend", backend, "--no-enrich"], &["make", "-j2", "-C", &dir]);
        let again = std::process::Command::new(PROCTRACE)
            .args(["analyze", "--tree", "full", &file])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&again.stdout).into_owned() + &stderr(&again);
        assert!(again.status.success(), "{text}");
        assert!(!text.contains("[?]") && text.contains("[cc1]") && text.contains("[as]"), "{text}");
    }
}

both_backends! {
    fn a_rename_is_kept(backend: &str) {
        for extra in [&["--no-enrich"][..], &[]] {
            let mut args = vec!["--backend", backend];
            args.extend_from_slice(extra);
            let (out, lines, _) = run_file(&args, &[shapes(), "rename", "worker"]);
            assert!(out.status.success(), "{}", stderr(&out));
            let names = names(&lines);
            assert!(names.values().any(|n| n.as_deref() == Some("worker")), "{names:?}");
            let tree = stderr(&out);
            let want = if extra.is_empty() { "shapes rename worker" } else { "[worker]" };
            assert!(tree.contains(want), "{extra:?}: {tree}");
            // Not a script (the name is an argument's): the program stays `shapes` (without
            // argv, the kernel's name is all there is: `worker`).
            if !extra.is_empty() {
                continue;
            }
            let (_, _, file) = run_file(&args, &[shapes(), "rename", "worker"]);
            let json = std::process::Command::new(PROCTRACE)
                .args(["analyze", "--summary-json", "-", &file])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&json.stdout);
            assert!(text.contains("\"program\": \"shapes\""), "{text}");
            assert!(!text.contains("\"program\": \"worker\""), "{text}");
        }
    }
}

both_backends! {
    fn a_wrapper_script_is_named_by_its_script(backend: &str) {
        let script = tmp("psutil.sh");
        std::fs::write(&script, "#!/bin/sh\n/bin/true\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let (out, lines) = run_on(backend, &[], &[&script]);
        assert!(out.status.success(), "{}", stderr(&out));
        let tree = stderr(&out);
        // Its argv is the interpreter's (`/bin/sh …/psutil.sh`); the kernel names it by the
        // script, and so does its program.
        assert!(tree.contains(&format!("/bin/sh {script}")), "{tree}");
        let exit = lines
            .iter()
            .find(|l| l["event"] == "exit" && l["comm"] == "psutil.sh")
            .unwrap_or_else(|| panic!("no exit named psutil.sh: {lines:#?}"));
        assert_eq!(exit["code"], 0);
        let by = tree.split("by program").nth(1).unwrap_or_default();
        assert!(by.contains("psutil.sh") && !by.contains("  sh "), "{tree}");
    }
}
