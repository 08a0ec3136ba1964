//! `proctrace diff`: two real traced runs of a generated build, compared.
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

/// A C unit with `funcs` functions: more functions, a longer compile (cc1 at -O0 takes about
/// 1 ms per function here).
fn unit(dir: &Path, name: &str, funcs: usize) {
    let mut s = format!("int {name}_main(void) {{ return 0; }}\n");
    for i in 0..funcs {
        s.push_str(&format!(
            "int {name}_f{i}(int x) {{ int y = x * {i}; for (int k = 0; k < x; k++) y += k ^ {i}; return y; }}\n"
        ));
    }
    std::fs::write(dir.join(format!("{name}.c")), s).unwrap();
}

fn makefile(dir: &Path, units: &[&str]) {
    let objs: Vec<String> = units.iter().map(|u| format!("{u}.o")).collect();
    std::fs::write(
        dir.join("Makefile"),
        format!("all: {}\n%.o: %.c\n\tcc -c $< -o $@\n", objs.join(" ")),
    )
    .unwrap();
}

/// Traces `make -k -j2` in `dir` with `--record NAME.cap -o NAME.jsonl`; returns proctrace's
/// output and the two files' paths.
fn traced_make(dir: &Path, name: &str) -> (Output, String, String) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "o") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let cap = tmp(&format!("{name}.cap"));
    let jsonl = tmp(&format!("{name}.jsonl"));
    // ptrace reads every argv at its exec; the connector's /proc reader can miss a process
    // as short as `as` on a loaded machine, and an unread argv is a different group.
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            "ptrace",
            "--quiet",
            "--record",
            &cap,
            "-o",
            &jsonl,
            "--",
            "make",
            "-s",
            "-k",
            "-j2",
        ])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (out, cap, jsonl)
}

fn diff(args: &[&str]) -> Output {
    Command::new(PROCTRACE)
        .arg("diff")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn argv(e: &Value) -> String {
    e["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect::<Vec<_>>()
        .join(" ")
}

fn list(v: &Value, k: &str) -> Vec<String> {
    v[k].as_array()
        .unwrap_or_else(|| panic!("no list {k}"))
        .iter()
        .map(argv)
        .collect()
}

/// Two runs of a six-unit build; in the second, u3 is ten times larger (slower), u4 does not
/// compile, u6 is gone and u7 is new. `diff` names u3 first among the slower commands, u4 as
/// failed now, u7 new and u6 gone, and matches every other command across the runs although
/// cc's temporary files (`/tmp/ccXXXXXX.s`) and every pid differ.
#[test]
fn diff_names_the_slower_unit_first_and_the_failed_new_and_gone_ones() {
    let dir = Path::new(&tmp("build")).parent().unwrap().join("build");
    std::fs::create_dir_all(&dir).unwrap();
    for u in ["u1", "u2", "u3", "u4", "u5", "u6"] {
        unit(&dir, u, 100);
    }
    makefile(&dir, &["u1", "u2", "u3", "u4", "u5", "u6"]);
    let (out, old, old_jsonl) = traced_make(&dir, "old");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    unit(&dir, "u3", 2000);
    std::fs::write(dir.join("u4.c"), "#error this unit is broken now\n").unwrap();
    unit(&dir, "u7", 100);
    makefile(&dir, &["u1", "u2", "u3", "u4", "u5", "u7"]);
    let (out, new, new_jsonl) = traced_make(&dir, "new");
    assert_eq!(
        out.status.code(),
        Some(2),
        "make -k fails on u4: {}",
        stderr(&out)
    );

    let out = diff(&["--json", &old, &new]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let slower = list(&v, "slower");
    // The unit: the compiler proper (`cc1 … u3.c`), compared by its own time. Its driver
    // `cc -c u3.c` and make only waited for it: they are not listed (they were, by their
    // lifetimes, before diff compared own times: issue 23).
    let first_argv = slower.first().cloned().unwrap_or_default();
    assert!(
        first_argv.contains("/cc1 ") && first_argv.contains(" u3.c "),
        "{v:#}"
    );
    assert!(!slower.contains(&"cc -c u3.c -o u3.o".to_string()), "{v:#}");
    assert!(!slower.iter().any(|a| a.starts_with("make")), "{v:#}");
    let first = &v["slower"][0];
    assert_eq!(
        (first["count"].as_u64(), first["old_count"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        first["new_s"].as_f64().unwrap() > first["old_s"].as_f64().unwrap() + 0.3,
        "{first:#}"
    );
    // Sorted by the size of the change (own time).
    let deltas: Vec<f64> = v["slower"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["delta_own_s"].as_f64().unwrap())
        .collect();
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]), "{deltas:?}");

    let failed = list(&v, "failed");
    assert!(failed.contains(&"cc -c u4.c -o u4.o".to_string()), "{failed:?}");
    let u4 = v["failed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| argv(e) == "cc -c u4.c -o u4.o")
        .unwrap();
    assert_eq!(u4["status"]["code"], 1);
    assert_eq!(u4["old_failed"], 0);
    let new_list = list(&v, "new");
    assert!(
        new_list.contains(&"cc -c u7.c -o u7.o".to_string()),
        "{new_list:?}"
    );
    let gone = list(&v, "gone");
    assert!(gone.contains(&"cc -c u6.c -o u6.o".to_string()), "{gone:?}");
    // Every other command was matched: what is new or gone is about u7, u6 and the assembler
    // step u4 no longer reaches, though cc's temporary file names differ in every run.
    for a in new_list.iter() {
        assert!(a.contains("u7"), "unexpectedly new: {a}\n{v:#}");
    }
    for a in gone.iter() {
        assert!(
            a.contains("u6") || a.contains("u4.o"),
            "unexpectedly gone: {a}\n{v:#}"
        );
    }
    assert!(
        gone.iter().any(|a| a.contains("/tmp/<TMP>.s")),
        "the assembler's argv is normalised: {gone:?}"
    );
    assert!(v["wall_s"]["new"].as_f64().unwrap() > v["wall_s"]["old"].as_f64().unwrap());
    assert_eq!(v["runs"]["new"]["status"]["code"], 2);
    assert_eq!(
        v["critical_path"]["new"][0]["argv"],
        serde_json::json!(["make", "-s", "-k", "-j2"])
    );

    // The same runs' `-o` JSON Lines give the same comparison.
    let out = diff(&["--json", &old_jsonl, &new_jsonl]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["new", "gone", "failed", "fixed", "slower", "faster"] {
        assert_eq!(list(&w, k), list(&v, k), "{k} from JSON Lines");
    }
    for k in ["old", "new"] {
        let (a, b) = (v["wall_s"][k].as_f64().unwrap(), w["wall_s"][k].as_f64().unwrap());
        assert!((a - b).abs() < 1e-6, "wall_s.{k}: {a} vs {b}");
    }

    // The text says the same.
    let out = diff(&[&old, &new]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let after = |head: &str| -> String {
        let rest = &text[text
            .find(head)
            .unwrap_or_else(|| panic!("no {head:?} in\n{text}"))..];
        rest.lines().nth(1).unwrap_or_default().to_string()
    };
    assert!(after("slower:").contains(" u3.c "), "{text}");
    assert!(text.contains("failed now:"), "{text}");
    assert!(text.contains("cc -c u4.c -o u4.o  exit 1 (ok before)"), "{text}");
    assert!(after("new:").contains("u7.c"), "{text}");
    assert!(after("gone:").contains("u6.c"), "{text}");
    assert!(text.starts_with("wall time: "), "{text}");

    // For CI: the wall time grew, so --fail-if-slower fails; the same run against itself does not.
    assert_eq!(
        diff(&["--fail-if-slower", "10", &old, &new]).status.code(),
        Some(1)
    );
    let same = diff(&["--json", "--fail-if-slower", "0", &old, &old]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    let v: Value = serde_json::from_slice(&same.stdout).unwrap();
    for k in ["new", "gone", "failed", "slower", "faster"] {
        assert_eq!(v[k], serde_json::json!([]), "{k}");
    }
}

#[test]
fn diff_of_a_corrupt_trace_names_the_file_and_line() {
    let (out, cap) = traced_make_once();
    assert!(out.status.success(), "{}", stderr(&out));
    let bad = tmp("bad.cap");
    let text = std::fs::read_to_string(&cap).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "{\"e\":\"exec\",\"ts\":");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = diff(&[&cap, &bad]);
    assert_eq!(out.status.code(), Some(65), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("{bad}:3:")), "{}", stderr(&out));
    // A file that is no trace at all.
    let junk = tmp("junk.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let out = diff(&[&junk, &cap]);
    assert_eq!(out.status.code(), Some(65), "{}", stderr(&out));
    assert!(stderr(&out).contains(&junk), "{}", stderr(&out));
}

fn traced_make_once() -> (Output, String) {
    let dir = Path::new(&tmp("b")).parent().unwrap().join("one");
    std::fs::create_dir_all(&dir).unwrap();
    unit(&dir, "a", 10);
    makefile(&dir, &["a"]);
    let (out, cap, _) = traced_make(&dir, "one");
    (out, cap)
}

#[test]
fn diff_help_has_examples_and_bad_thresholds_are_usage_errors() {
    let out = Command::new(PROCTRACE).args(["diff", "--help"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Examples:") && text.contains("proctrace diff before.cap after.cap"),
        "{text}"
    );
    for bad in [
        ["--threshold", "nan"],
        ["--min-ms", "x"],
        ["--fail-if-slower", "-1"],
    ] {
        let out = diff(&[bad[0], bad[1], "a", "b"]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
    }
    // Its man page is roff groff takes without a warning.
    let man = Command::new(PROCTRACE).args(["man", "diff"]).output().unwrap();
    assert!(man.status.success(), "{}", stderr(&man));
    let roff = String::from_utf8(man.stdout).unwrap();
    assert!(
        roff.contains(".TH proctrace-diff") && roff.contains("fail\\-if\\-slower"),
        "{roff}"
    );
    let groff = Command::new("sh")
        .args(["-c", "groff -man -Tutf8 -ww -z 2>&1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    if let Ok(mut g) = groff {
        use std::io::Write;
        g.stdin.take().unwrap().write_all(roff.as_bytes()).unwrap();
        let g = g.wait_with_output().unwrap();
        let warnings = String::from_utf8_lossy(&g.stdout);
        assert!(!warnings.contains("warning"), "groff: {warnings}");
    }
    // A missing file is named.
    let out = diff(&["/nonexistent/old.cap", "/nonexistent/new.cap"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("/nonexistent/old.cap"), "{}", stderr(&out));
}

/// Runs `script` under `sh` in `repo` with git's Trace2 event target at `target` (a file or a
/// directory), git's own configuration only from the repository.
fn git_session(repo: &Path, target: &str, script: &str) {
    let st = Command::new("sh")
        .args(["-c", script])
        .current_dir(repo)
        .env("GIT_TRACE2_EVENT", target)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_TRACE2_PARENT_SID")
        .status()
        .unwrap();
    assert!(st.success(), "{script}");
}

/// git's own Trace2 streams (a target directory before, a file after) as diff's inputs: an
/// alias made slower, a command that fails now, one added and one removed, all named; the
/// command run in both and unchanged is matched.
#[test]
fn diff_of_git_trace2_streams_names_the_slower_failed_new_and_gone_commands() {
    let repo = tmp("repo");
    let repo = Path::new(&repo);
    std::fs::create_dir_all(repo).unwrap();
    let setup = "git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m one";
    git_session(repo, "/dev/null", setup);
    let old = tmp("old-t2");
    std::fs::create_dir_all(&old).unwrap();
    git_session(
        repo,
        &old,
        "git config alias.nap '!sleep 0.05' && git status >/dev/null && git nap && git rev-parse HEAD >/dev/null && git log -1 >/dev/null",
    );
    let new = tmp("new.t2.json");
    git_session(
        repo,
        &new,
        "git config alias.nap '!sleep 0.8' && git status >/dev/null && git nap && git branch -q feature && (git log --no-such-option 2>/dev/null; true)",
    );
    let out = diff(&["--json", &old, &new]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The alias's shell changed (its argv says the new sleep): new and gone. `git nap` only
    // waited for it, so it is not slower (by its own time; it was by its lifetime before
    // issue 23).
    assert!(!list(&v, "slower").contains(&"git nap".to_string()), "{v:#}");
    assert_eq!(
        list(&v, "new").first().map(String::as_str),
        Some("/bin/sh -c sleep 0.8"),
        "{v:#}"
    );
    assert!(
        list(&v, "gone").contains(&"/bin/sh -c sleep 0.05".to_string()),
        "{v:#}"
    );
    let failed = list(&v, "failed");
    assert_eq!(failed, ["git log --no-such-option"], "{v:#}");
    assert_eq!(v["failed"][0]["status"]["code"], 128);
    let new_list = list(&v, "new");
    assert!(
        new_list.contains(&"git branch -q feature".to_string()),
        "{new_list:?}"
    );
    let gone = list(&v, "gone");
    assert!(gone.contains(&"git rev-parse HEAD".to_string()), "{gone:?}");
    assert!(gone.contains(&"git log -1".to_string()), "{gone:?}");
    // Matched across the runs (its time may vary on a loaded machine: not checked).
    for k in ["new", "gone", "failed"] {
        assert!(
            !list(&v, k).iter().any(|a| a == "git status"),
            "git status is in {k}: {v:#}"
        );
    }
}

/// Two real runs of the same two commands (the connector's taskstats figures); in the second,
/// `python3 hog.py` burns more CPU and holds more memory — its argv is the same, what it does is
/// read from a file. `diff` lists it under more CPU and more memory, and not the command that did
/// the same work twice.
#[test]
fn diff_names_the_command_that_costs_more_cpu_and_memory() {
    let hog = tmp("hog.py");
    let spec = Path::new(&hog)
        .with_file_name("spec")
        .to_string_lossy()
        .into_owned();
    std::fs::write(
        &hog,
        "import sys, time\n\
         ms, mib = map(int, open(sys.argv[1]).read().split())\n\
         held = b'x' * (mib << 20)\n\
         end = time.process_time() + ms / 1000\n\
         while time.process_time() < end:\n    pass\n",
    )
    .unwrap();
    let script = format!("python3 {hog} {spec}; python3 -c 'sum(range(100000))'");
    let mut files = Vec::new();
    for (ms, mib) in [(30, 10), (500, 150)] {
        std::fs::write(&spec, format!("{ms} {mib}")).unwrap();
        let (out, _, file) = run_file(&["--quiet", "--tree", "none"], &["sh", "-c", &script]);
        assert!(out.status.success(), "{}", stderr(&out));
        files.push(file);
    }
    let out = diff(&["--json", &files[0], &files[1]]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each list holds the hog alone, by its real argv (`example`: the key `argv` is normalised,
    // and a scratch directory under /tmp becomes `<TMP>`); python3 as PATH finds it (pyenv's shim
    // execs the real one: argv[0] is then a full path).
    let is_hog = |k: &str| {
        let l = v["costs"][k].as_array().unwrap();
        l.len() == 1
            && argv(&serde_json::json!({"argv": l[0]["example"]})).ends_with(&format!("{hog} {spec}"))
    };
    assert!(is_hog("more_cpu"), "{v:#}");
    assert!(is_hog("more_memory"), "{v:#}");
    let e = &v["costs"]["more_memory"][0];
    let (old_kib, new_kib) = (
        e["old_max_rss_kib"].as_u64().unwrap(),
        e["new_max_rss_kib"].as_u64().unwrap(),
    );
    // 140 MiB more held (bytes objects of 10 and 150 MiB), give or take the interpreter.
    assert!(
        (130 * 1024..170 * 1024).contains(&(new_kib - old_kib)),
        "{old_kib} → {new_kib}"
    );
    let cpu = &v["costs"]["more_cpu"][0];
    assert!(cpu["delta_cpu_s"].as_f64().unwrap() > 0.4, "{cpu}");
    assert!(v["cpu_s"]["new"].as_f64().unwrap() > v["cpu_s"]["old"].as_f64().unwrap() + 0.4);
    let text = String::from_utf8(diff(&[&files[0], &files[1]]).stdout).unwrap();
    assert!(
        text.contains("more CPU: (1)") && text.contains("more memory: (1)") && text.contains("cpu time:"),
        "{text}"
    );
}

/// `diff --html FILE` follows the one failure policy: the page is written and parses as the
/// data of both runs; an input given as the page is a usage error that leaves it as it was; a
/// bad input leaves no page behind; a failed write is said by its path (exit 74); `--html -`
/// writes the page on stdout instead of the text.
#[test]
fn diff_html_writes_one_page_and_follows_the_failure_policy() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/builds");
    let (a, b) = (dir.join("make-fails.jsonl"), dir.join("dash-subshell.jsonl"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let page = tmp("diff.html");
    let out = diff(&[a, b, "--html", &page]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("wall time:"),
        "the text as well"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let data = html
        .split("<script type=\"application/json\" id=\"proctrace-data\">")
        .nth(1)
        .and_then(|r| r.split("</script>").next())
        .unwrap();
    let v: Value = serde_json::from_str(data).unwrap();
    assert_eq!(v["format"], "proctrace-html-diff");
    assert_eq!(v["old"]["procs"].as_array().unwrap().len(), 24);
    assert_eq!(v["new"]["procs"].as_array().unwrap().len(), 3);
    assert!(
        v["diff"]["gone"].as_array().is_some_and(|g| !g.is_empty()),
        "{:#}",
        v["diff"]
    );
    // An input as the page: usage error, the input untouched.
    let before = std::fs::read(a).unwrap();
    let out = diff(&[a, b, "--html", a]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(a).unwrap(), before);
    // A bad input: no page left behind; an existing page kept as it was.
    let junk = tmp("junk.jsonl");
    std::fs::write(&junk, "hello\n").unwrap();
    let fresh = tmp("fresh.html");
    let out = diff(&[&junk, b, "--html", &fresh]);
    assert_eq!(out.status.code(), Some(65), "{}", stderr(&out));
    assert!(!std::path::Path::new(&fresh).exists());
    let out = diff(&[&junk, b, "--html", &page]);
    assert_eq!(out.status.code(), Some(65), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);
    // A failed write, by its path.
    let out = diff(&[a, b, "--html", "/dev/full"]);
    assert_eq!(out.status.code(), Some(74), "{}", stderr(&out));
    assert!(stderr(&out).contains("/dev/full"), "{}", stderr(&out));
    // On stdout: the page, not the text.
    let out = diff(&[a, b, "--html", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.starts_with("<!DOCTYPE html>") && !s.contains("wall time:"),
        "{}",
        &s[..200.min(s.len())]
    );
}
