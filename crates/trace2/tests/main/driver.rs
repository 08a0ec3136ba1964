//! `trace2-driver` verbs against what git's `test-tool trace2` writes for
//! the same verb, in all three formats (brief mode, as git's t0210, t0211
//! and t0212 do), after scrubbing times, pids, SIDs and the program path.
//! The expectations are derived from `t/helper/test-trace2.c` and the
//! target sources; shapes that real git can produce itself (`version`,
//! `start`, `cmd_name`, `child_start`/`child_exit`, `exit`, `atexit`) were
//! checked against real git in `formats.rs`.

use trace2::reader::json::parse_object_line;

use crate::common::*;

struct Outputs {
    code: i32,
    normal: Vec<String>,
    perf: Vec<String>,
    event: Vec<String>,
    stderr: String,
}

const EXE: &str = env!("CARGO_BIN_EXE_trace2-driver");

fn run_verb(args: &[&str], extra_env: &[(&str, &str)]) -> Outputs {
    let home = TempDir::new("driver");
    let (n, p, e) = (home.join("n"), home.join("p"), home.join("e"));
    let mut c = driver(home.path());
    c.arg("trace2").args(args);
    c.env("GIT_TRACE2", &n)
        .env("GIT_TRACE2_PERF", &p)
        .env("GIT_TRACE2_EVENT", &e);
    c.env("GIT_TRACE2_BRIEF", "1")
        .env("GIT_TRACE2_PERF_BRIEF", "1")
        .env("GIT_TRACE2_EVENT_BRIEF", "1");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = run(&mut c);
    Outputs {
        code: out.status.code().unwrap_or(-1),
        normal: scrub_normal(&read(&n)),
        perf: scrub_perf(&read(&p)),
        event: scrub_event(&read(&e)),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn scrub_text(l: &str) -> String {
    let mut s = l.replace(EXE, "_EXE_");
    for k in ["elapsed:", "pid:", "total:", "min:", "max:"] {
        s = mask_number_after(&s, k);
    }
    s
}

/// t0210: drop cmd_ancestry/cmd_path, mask versions and times.
fn scrub_normal(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with("cmd_ancestry") && !l.starts_with("cmd_path"))
        .map(|l| {
            if l.starts_with("version ") {
                "version _V_".to_string()
            } else {
                scrub_text(l)
            }
        })
        .collect()
}

/// t0211: split on `|`, trim, mask non-empty time columns.
fn scrub_perf(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let mut cols: Vec<String> = l.splitn(8, " | ").map(|c| c.trim().to_string()).collect();
            if cols.len() != 8 || cols[2] == "cmd_ancestry" || cols[2] == "cmd_path" {
                return None;
            }
            for i in [4, 5] {
                if !cols[i].is_empty() {
                    cols[i] = "_T_".into();
                }
            }
            if cols[2] == "version" {
                cols[7] = "_V_".into();
            }
            cols[7] = scrub_text(&cols[7]);
            Some(cols.join("|"))
        })
        .collect()
}

/// t0212-like: one line per event, `name key=value…` in git's key order,
/// SIDs numbered by first appearance, times masked.
fn scrub_event(text: &str) -> Vec<String> {
    let mut sids: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let m = parse_object_line(line.as_bytes()).expect("valid JSON line");
        let name = m[0].value.as_str().unwrap_or("").to_string();
        if name == "cmd_ancestry" || name == "cmd_path" {
            continue;
        }
        let mut parts = vec![name.clone()];
        for mem in &m[1..] {
            let raw = String::from_utf8_lossy(&mem.raw).into_owned();
            let v = match mem.key.as_str() {
                "sid" => {
                    let s = mem.value.as_str().unwrap_or("").to_string();
                    let i = sids.iter().position(|x| *x == s).unwrap_or_else(|| {
                        sids.push(s);
                        sids.len() - 1
                    });
                    format!("_SID{i}_")
                }
                "time" | "t_abs" | "t_rel" | "t_total" | "t_min" | "t_max" => "_T_".into(),
                "pid" => "_PID_".into(),
                "exe" if name == "version" => "_V_".into(),
                _ => raw.replace(EXE, "_EXE_"),
            };
            parts.push(format!("{}={v}", mem.key));
        }
        out.push(parts.join(" "));
    }
    out
}

fn lines(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Common head of every run: (normal, perf, event) lines before the verb.
fn head(verb_argv: &str, json_argv: &str, depth: u32, sid: u32, hier: &str) -> (String, String, String) {
    let normal = format!("version _V_\nstart _EXE_ trace2 {verb_argv}\ncmd_name trace2 ({hier})\n");
    let perf = format!(
        "d{depth}|main|version|||||_V_\nd{depth}|main|start||_T_|||_EXE_ trace2 {verb_argv}\nd{depth}|main|cmd_name|||||trace2 ({hier})\n"
    );
    let event = format!(
        "version sid=_SID{sid}_ thread=\"main\" time=_T_ evt=\"4\" exe=_V_\n\
         start sid=_SID{sid}_ thread=\"main\" t_abs=_T_ argv=[\"_EXE_\",\"trace2\",{json_argv}]\n\
         cmd_name sid=_SID{sid}_ thread=\"main\" name=\"trace2\" hierarchy=\"{hier}\"\n"
    );
    (normal, perf, event)
}

fn tail(code: i32, depth: u32, sid: u32) -> (String, String, String) {
    (
        format!("exit elapsed:_T_ code:{code}\natexit elapsed:_T_ code:{code}\n"),
        format!("d{depth}|main|exit||_T_|||code:{code}\nd{depth}|main|atexit||_T_|||code:{code}\n"),
        format!(
            "exit sid=_SID{sid}_ thread=\"main\" t_abs=_T_ code={code}\n\
             atexit sid=_SID{sid}_ thread=\"main\" time=_T_ t_abs=_T_ code={code}\n"
        ),
    )
}

struct Expect {
    code: i32,
    normal: String,
    perf: String,
    event: String,
}

/// Builds the whole expectation of a simple verb: head, body, tail.
fn simple(args: &[&str], code: i32, body: (&str, &str, &str), metrics: (&str, &str, &str)) -> Expect {
    simple_shown(args, &args.join(" "), code, body, metrics)
}

/// Like [`simple`] with the argv as the normal/perf targets quote it.
fn simple_shown(
    args: &[&str],
    verb_argv: &str,
    code: i32,
    body: (&str, &str, &str),
    metrics: (&str, &str, &str),
) -> Expect {
    let json_argv = args
        .iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(",");
    let h = head(verb_argv, &json_argv, 0, 0, "trace2");
    let t = tail(code, 0, 0);
    let split = |s: &str| s.lines().next().map(|x| format!("{x}\n")).unwrap_or_default();
    let rest = |s: &str| s.lines().skip(1).map(|x| format!("{x}\n")).collect::<String>();
    Expect {
        code,
        normal: format!("{}{}{}{}{}", h.0, body.0, split(&t.0), metrics.0, rest(&t.0)),
        perf: format!("{}{}{}{}{}", h.1, body.1, split(&t.1), metrics.1, rest(&t.1)),
        event: format!("{}{}{}{}{}", h.2, body.2, split(&t.2), metrics.2, rest(&t.2)),
    }
}

fn check(args: &[&str], exp: Expect) {
    let out = run_verb(args, &[]);
    assert_eq!(
        out.code, exp.code,
        "exit code of {args:?}; stderr: {}",
        out.stderr
    );
    assert_eq!(out.normal, lines(&exp.normal), "normal output of {args:?}");
    assert_eq!(out.perf, lines(&exp.perf), "perf output of {args:?}");
    assert_eq!(out.event, lines(&exp.event), "event output of {args:?}");
}

const NONE: (&str, &str, &str) = ("", "", "");

#[test]
fn v001return_and_002exit() {
    check(&["001return", "0"], simple(&["001return", "0"], 0, NONE, NONE));
    check(&["001return", "3"], simple(&["001return", "3"], 3, NONE, NONE));
    // exit() reports `code & 0xff`.
    check(&["002exit", "258"], simple(&["002exit", "258"], 2, NONE, NONE));
}

#[test]
fn v003error() {
    let body = (
        "error hello world\nerror second\n",
        "d0|main|error|||||hello world\nd0|main|error|||||second\n",
        "error sid=_SID0_ thread=\"main\" msg=\"hello world\" fmt=\"%s\"\n\
         error sid=_SID0_ thread=\"main\" msg=\"second\" fmt=\"%s\"\n",
    );
    let args = ["003error", "hello world", "second"];
    check(
        &args,
        simple_shown(&args, "003error 'hello world' second", 0, body, NONE),
    );
}

#[test]
fn bad_arguments_die_with_128_and_unknown_verbs_give_129() {
    let body = (
        "error expect <exit_code>\n",
        "d0|main|error|||||expect <exit_code>\n",
        "error sid=_SID0_ thread=\"main\" msg=\"expect <exit_code>\" fmt=\"expect <exit_code>\"\n",
    );
    check(
        &["001return", "12x"],
        simple(&["001return", "12x"], 128, body, NONE),
    );
    let out = run_verb(&["999nope"], &[]);
    assert_eq!(out.code, 129);
    assert!(out.stderr.starts_with("usage:"), "{}", out.stderr);
    assert_eq!(
        out.normal.last().map(String::as_str),
        Some("atexit elapsed:_T_ code:129")
    );
}

#[test]
fn v004child_nests_a_traced_child() {
    let out = run_verb(&["004child", EXE, "trace2", "001return", "7"], &[]);
    assert_eq!(out.code, 7);
    let exp_normal = "version _V_\n\
        start _EXE_ trace2 004child _EXE_ trace2 001return 7\n\
        cmd_name trace2 (trace2)\n\
        child_start[0] _EXE_ trace2 001return 7\n\
        version _V_\n\
        start _EXE_ trace2 001return 7\n\
        cmd_name trace2 (trace2/trace2)\n\
        exit elapsed:_T_ code:7\n\
        atexit elapsed:_T_ code:7\n\
        child_exit[0] pid:_T_ code:7 elapsed:_T_\n\
        exit elapsed:_T_ code:7\n\
        atexit elapsed:_T_ code:7\n";
    assert_eq!(out.normal, lines(exp_normal));
    let exp_perf = "d0|main|version|||||_V_\n\
        d0|main|start||_T_|||_EXE_ trace2 004child _EXE_ trace2 001return 7\n\
        d0|main|cmd_name|||||trace2 (trace2)\n\
        d0|main|child_start||_T_|||[ch0] class:? argv:[_EXE_ trace2 001return 7]\n\
        d1|main|version|||||_V_\n\
        d1|main|start||_T_|||_EXE_ trace2 001return 7\n\
        d1|main|cmd_name|||||trace2 (trace2/trace2)\n\
        d1|main|exit||_T_|||code:7\n\
        d1|main|atexit||_T_|||code:7\n\
        d0|main|child_exit||_T_|_T_||[ch0] pid:_T_ code:7\n\
        d0|main|exit||_T_|||code:7\n\
        d0|main|atexit||_T_|||code:7\n";
    assert_eq!(out.perf, lines(exp_perf));
    let exp_event = "version sid=_SID0_ thread=\"main\" time=_T_ evt=\"4\" exe=_V_\n\
        start sid=_SID0_ thread=\"main\" t_abs=_T_ argv=[\"_EXE_\",\"trace2\",\"004child\",\"_EXE_\",\"trace2\",\"001return\",\"7\"]\n\
        cmd_name sid=_SID0_ thread=\"main\" name=\"trace2\" hierarchy=\"trace2\"\n\
        child_start sid=_SID0_ thread=\"main\" child_id=0 child_class=\"?\" use_shell=false argv=[\"_EXE_\",\"trace2\",\"001return\",\"7\"]\n\
        version sid=_SID1_ thread=\"main\" time=_T_ evt=\"4\" exe=_V_\n\
        start sid=_SID1_ thread=\"main\" t_abs=_T_ argv=[\"_EXE_\",\"trace2\",\"001return\",\"7\"]\n\
        cmd_name sid=_SID1_ thread=\"main\" name=\"trace2\" hierarchy=\"trace2/trace2\"\n\
        exit sid=_SID1_ thread=\"main\" t_abs=_T_ code=7\n\
        atexit sid=_SID1_ thread=\"main\" time=_T_ t_abs=_T_ code=7\n\
        child_exit sid=_SID0_ thread=\"main\" child_id=0 pid=_PID_ code=7 t_rel=_T_\n\
        exit sid=_SID0_ thread=\"main\" t_abs=_T_ code=7\n\
        atexit sid=_SID0_ thread=\"main\" time=_T_ t_abs=_T_ code=7\n";
    assert_eq!(out.event, lines(exp_event));
}

#[test]
fn v004child_runs_real_git_and_reports_a_failed_spawn() {
    let out = run_verb(&["004child", "git", "version"], &[]);
    assert_eq!(out.code, 0);
    // git's own lines nest under the driver: hierarchy and depth.
    assert!(
        out.normal
            .contains(&"cmd_name version (trace2/version)".to_string()),
        "{:?}",
        out.normal
    );
    assert!(out.perf.iter().any(|l| l.starts_with("d1|main|cmd_name|")));
    let out = run_verb(&["004child", "/nonexistent/program"], &[]);
    assert_eq!(out.code, 255);
    assert!(
        out.normal
            .contains(&"child_exit[0] pid:_T_ code:-1 elapsed:_T_".to_string()),
        "{:?}",
        out.normal
    );
    assert!(
        out.event
            .iter()
            .any(|l| l.contains("child_exit") && l.contains("code=-1"))
    );
    assert!(out.normal.contains(&"exit elapsed:_T_ code:255".to_string()));
}

/// The lines of `lines` strictly between the first one starting with
/// `from` and the next one starting with `to`.
fn between<'a>(lines: &'a [String], from: &str, to: &str) -> Vec<&'a str> {
    let start = lines
        .iter()
        .position(|l| l.starts_with(from))
        .unwrap_or_else(|| panic!("no {from} in {lines:?}"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| l.starts_with(to))
            .unwrap_or_else(|| panic!("no {to} in {lines:?}"));
    lines[start + 1..end].iter().map(String::as_str).collect()
}

#[test]
fn v004child_reports_failed_starts_and_signals_like_run_command() {
    // What git's run_command() reports between child_start and child_exit
    // (checked against test-tool 2.47.3): a name not on PATH, a path that
    // cannot be executed, and a child killed by a signal (not SIGPIPE).
    let home = TempDir::new("not-exec");
    let not_exec = home.join("data.txt");
    std::fs::write(&not_exec, "not a program\n").unwrap();
    let not_exec = not_exec.to_str().unwrap().to_string();
    // (child argv, exit code, `error` as (msg, fmt), stderr prefix)
    type Case<'a> = (Vec<&'a str>, i32, Option<(String, &'a str)>, &'a str);
    let cases: [Case<'_>; 5] = [
        (
            vec!["no-such-program-t2gs"],
            255,
            Some((
                "cannot run no-such-program-t2gs: No such file or directory".into(),
                "cannot run %s: No such file or directory",
            )),
            "error: ",
        ),
        (
            vec!["/nonexistent/program"],
            255,
            Some((
                "cannot exec '/nonexistent/program': No such file or directory".into(),
                "cannot exec '%s': No such file or directory",
            )),
            "fatal: ",
        ),
        (
            vec![&not_exec],
            255,
            Some((
                format!("cannot exec '{not_exec}': Permission denied"),
                "cannot exec '%s': Permission denied",
            )),
            "fatal: ",
        ),
        (
            vec!["sh", "-c", "kill -9 $$"],
            137,
            Some(("sh died of signal 9".into(), "%s died of signal %d")),
            "error: ",
        ),
        (vec!["sh", "-c", "kill -PIPE $$"], 141, None, ""),
    ];
    for (child, code, error, prefix) in cases {
        let mut args = vec!["004child"];
        args.extend(&child);
        let out = run_verb(&args, &[]);
        assert_eq!(out.code, code, "{args:?}: {}", out.stderr);
        let normal = between(&out.normal, "child_start", "child_exit");
        let perf = between(&out.perf, "d0|main|child_start", "d0|main|child_exit");
        let event = between(&out.event, "child_start", "child_exit");
        match &error {
            Some((msg, fmt)) => {
                assert_eq!(normal, [format!("error {msg}")], "{args:?}");
                assert_eq!(perf, [format!("d0|main|error|||||{msg}")], "{args:?}");
                assert_eq!(
                    event,
                    [format!(
                        "error sid=_SID0_ thread=\"main\" msg={msg:?} fmt={fmt:?}"
                    )],
                    "{args:?}"
                );
                assert_eq!(out.stderr, format!("{prefix}{msg}\n"), "{args:?}");
            }
            None => {
                assert!(
                    normal.is_empty() && perf.is_empty() && event.is_empty(),
                    "{out:?}",
                    out = out.normal
                );
                assert_eq!(out.stderr, "", "{args:?}");
            }
        }
        let exit = if code == 255 { -1 } else { code };
        assert!(
            out.normal
                .contains(&format!("child_exit[0] pid:_T_ code:{exit} elapsed:_T_")),
            "{:?}",
            out.normal
        );
    }
}

#[test]
fn v005exec_replaces_the_process_with_git() {
    let out = run_verb(&["005exec", "version"], &[]);
    assert_eq!(out.code, 0);
    let names: Vec<&str> = out
        .event
        .iter()
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "version", "start", "cmd_name", "exec", "version", "start", "cmd_name", "exit", "atexit"
        ]
    );
    assert_eq!(
        out.event[3],
        "exec sid=_SID0_ thread=\"main\" exec_id=0 exe=\"git\" argv=[\"git\",\"version\"]"
    );
    assert!(out.event[4].contains("sid=_SID1_"));
    assert_eq!(out.normal[3], "exec[0] git git version");
    assert_eq!(out.perf[3], "d0|main|exec||_T_|||id:0 argv:[git git version]");
    assert_eq!(out.perf[4], "d1|main|version|||||_V_");
    // A failed exec writes exec_result with the errno and returns -1.
    let out = run_verb(&["005exec", "version"], &[("PATH", "/nonexistent")]);
    assert_eq!(out.code, 255);
    assert_eq!(
        out.normal[4],
        "exec_result[0] code:2 err:No such file or directory"
    );
    assert_eq!(
        out.perf[4],
        "d0|main|exec_result||_T_|||id:0 code:2 err:No such file or directory"
    );
    assert_eq!(
        out.event[4],
        "exec_result sid=_SID0_ thread=\"main\" exec_id=0 code=2"
    );
    assert_eq!(out.normal[5], "exit elapsed:_T_ code:255");
}

#[test]
fn v006data_and_007bug() {
    let body = (
        "",
        "d0|main|data|r0|_T_|_T_|cat|k1:v1\nd0|main|data|r0|_T_|_T_|cat2|k2:v2\n",
        "data sid=_SID0_ thread=\"main\" repo=0 t_abs=_T_ t_rel=_T_ nesting=1 category=\"cat\" key=\"k1\" value=\"v1\"\n\
         data sid=_SID0_ thread=\"main\" repo=0 t_abs=_T_ t_rel=_T_ nesting=1 category=\"cat2\" key=\"k2\" value=\"v2\"\n",
    );
    let args = ["006data", "cat", "k1", "v1", "cat2", "k2", "v2"];
    check(&args, simple(&args, 0, body, NONE));
    let body = (
        "error the bug message\n",
        "d0|main|error|||||the bug message\n",
        "error sid=_SID0_ thread=\"main\" msg=\"the bug message\" fmt=\"the bug message\"\n",
    );
    check(&["007bug"], simple(&["007bug"], 99, body, NONE));
}

/// The messages of `BUG: <file>:<line>: <msg>` lines on stderr, as t0210
/// reads them (`sed "s/^.*: //"`).
fn bug_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(|l| match l.rfind(": ") {
            Some(i) => l[i + 2..].to_string(),
            None => l.to_string(),
        })
        .collect()
}

/// `error` lines for (msg, fmt) pairs in the three formats.
fn errors(pairs: &[(&str, &str)]) -> (String, String, String) {
    let mut b = (String::new(), String::new(), String::new());
    for (msg, fmt) in pairs {
        b.0 += &format!("error {msg}\n");
        b.1 += &format!("d0|main|error|||||{msg}\n");
        b.2 += &format!("error sid=_SID0_ thread=\"main\" msg=\"{msg}\" fmt=\"{fmt}\"\n");
    }
    b
}

#[test]
fn v008_to_010_bug_calls_exit_99_like_test_tool() {
    // git's t0210 tests 8-10: `bug()` reports and goes on, `BUG_if_bug()`
    // or the exit turns it into `BUG()`, which test-tool exits with 99.
    let explicit = "an explicit BUG_if_bug() following bug() call(s) is nice, but not required";
    let on_exit = "on exit(): had bug() call(s) in this process without explicit BUG_if_bug()";
    // (verb, `error` events as (msg, fmt), messages on stderr)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: [Case<'_>; 3] = [
        (
            "008bug",
            vec![
                ("a bug message", "a bug message"),
                ("another bug message", "another bug message"),
                (explicit, explicit),
            ],
            vec!["a bug message", "another bug message", explicit],
        ),
        (
            "009bug_BUG",
            vec![
                ("a bug message", "a bug message"),
                ("another bug message", "another bug message"),
                (on_exit, on_exit),
            ],
            vec![
                "a bug message",
                "another bug message",
                "had bug() call(s) in this process without explicit BUG_if_bug()",
            ],
        ),
        (
            "010bug_BUG",
            vec![
                ("a bug message", "a %s message"),
                ("a BUG message", "a %s message"),
            ],
            vec!["a bug message", "a BUG message"],
        ),
    ];
    for (verb, errs, stderr) in cases {
        let body = errors(&errs);
        check(&[verb], simple(&[verb], 99, (&body.0, &body.1, &body.2), NONE));
        let out = run_verb(&[verb], &[]);
        assert_eq!(bug_messages(&out.stderr), stderr, "stderr of {verb}");
        assert!(
            out.stderr.lines().all(|l| l.starts_with("BUG: ")),
            "{verb}: {}",
            out.stderr
        );
    }
}

/// t0213's filters: the `cmd_ancestry` lists of a trace, immediate parent
/// first, cut after the outermost `trace2-driver`.
fn ancestries(target: &str, text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let names: Vec<String> = match target {
            "normal" => match line.strip_prefix("cmd_ancestry ") {
                Some(rest) => rest.split(" <- ").map(str::to_string).collect(),
                None => continue,
            },
            "perf" => match line.split_once("ancestry:[") {
                Some((_, rest)) if line.contains("| cmd_ancestry ") => rest
                    .trim_end_matches(']')
                    .split(' ')
                    .map(str::to_string)
                    .collect(),
                _ => continue,
            },
            _ => {
                let m = parse_object_line(line.as_bytes()).expect("valid JSON line");
                if m[0].value.as_str() != Some("cmd_ancestry") {
                    continue;
                }
                let list = m.iter().find(|x| x.key == "ancestry").expect("ancestry");
                let raw = String::from_utf8_lossy(&list.raw).into_owned();
                raw.trim_matches(|c| c == '[' || c == ']')
                    .split(',')
                    .map(|n| n.trim_matches('"').to_string())
                    .collect()
            }
        };
        let cut = names
            .iter()
            .rposition(|n| n == "trace2-driver")
            .map_or(names.len(), |i| i + 1);
        out.push(names[..cut].to_vec());
    }
    out
}

#[test]
fn v400ancestry_traces_only_the_child_into_one_target() {
    // git 2.54's verb for t0213: the child (git resolving an alias, which
    // runs git again) writes only <target>, brief, into <file>; the driver
    // writes its own events to its own targets.
    for target in ["normal", "perf", "event"] {
        let home = TempDir::new("ancestry");
        let (out, parent) = (home.join("child.trace"), home.join("parent.json"));
        let o = run(driver(home.path())
            .env("GIT_TRACE2_EVENT", &parent)
            .env("GIT_TRACE2_PERF", home.join("parent.perf"))
            .args(["trace2", "400ancestry", target])
            .arg(&out)
            .args(["git", "-c", "alias.xyz=version", "xyz"]));
        assert_eq!(o.status.code(), Some(0), "{target}: {o:?}");
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("git version "));
        let child = read(&out);
        let want = vec![
            vec!["trace2-driver".to_string()],
            vec!["git".into(), "trace2-driver".into()],
        ];
        assert_eq!(ancestries(target, &child), want, "{target}: {child}");
        // Only the chosen format; GIT_TRACE2_BRIEF=1 makes only the normal
        // target brief (perf and event have their own variables), as in git.
        let first = child.lines().next().unwrap_or("");
        match target {
            "normal" => assert!(first.starts_with("version "), "{first}"),
            "perf" => assert!(first.contains(" | d1 | main "), "{first}"),
            _ => assert!(first.starts_with("{\"event\":\"version\""), "{first}"),
        }
        // The driver's own stream: one child, none of git's events.
        let ev = scrub_event(&read(&parent));
        let kids: Vec<&String> = ev.iter().filter(|l| l.starts_with("child_")).collect();
        assert_eq!(kids.len(), 2, "{ev:?}");
        assert!(
            kids[0].contains("argv=[\"git\",\"-c\",\"alias.xyz=version\",\"xyz\"]"),
            "{}",
            kids[0]
        );
        assert!(kids[1].contains(" code=0"), "{}", kids[1]);
        assert!(ev.iter().all(|l| l.contains("sid=_SID0_")), "{ev:?}");
        let perf = read(&home.join("parent.perf"));
        assert!(
            perf.lines().count() > 5 && perf.lines().all(|l| l.contains(" | d0 | main ")),
            "{perf}"
        );
    }
    // Bad arguments die like git's helper.
    let home = TempDir::new("ancestry-bad");
    let o = run(driver(home.path()).args(["trace2", "400ancestry", "bogus", "f", "true"]));
    assert_eq!(o.status.code(), Some(128));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "fatal: invalid target 'bogus', expected: normal, perf, event\n"
    );
    let o = run(driver(home.path()).args(["trace2", "400ancestry", "normal", "f"]));
    assert_eq!(o.status.code(), Some(128));
    assert!(!home.join("f").exists());
}

#[test]
fn v100timer_and_200counter() {
    let out = run_verb(&["100timer", "3", "2"], &[]);
    assert_eq!(out.code, 0);
    let want = "timer test/test1 intervals:3 total:_T_ min:_T_ max:_T_";
    assert_eq!(out.normal[out.normal.len() - 2], want);
    assert_eq!(
        out.perf[out.perf.len() - 2],
        "d0|main|timer||||test|name:test1 intervals:3 total:_T_ min:_T_ max:_T_"
    );
    assert_eq!(
        out.event[out.event.len() - 2],
        "timer sid=_SID0_ thread=\"main\" category=\"test\" name=\"test1\" intervals=3 t_total=_T_ t_min=_T_ t_max=_T_"
    );
    let metrics = (
        "counter test/test1 value:6\n",
        "d0|main|counter||||test|name:test1 value:6\n",
        "counter sid=_SID0_ thread=\"main\" category=\"test\" name=\"test1\" count=6\n",
    );
    check(
        &["200counter", "1", "2", "3"],
        simple(&["200counter", "1", "2", "3"], 0, NONE, metrics),
    );
}

#[test]
fn v101timer_and_201counter_per_thread() {
    let out = run_verb(&["101timer", "2", "1", "3"], &[]);
    assert_eq!(out.code, 0);
    for th in ["th01:ut_101", "th02:ut_101", "th03:ut_101"] {
        let mine: Vec<&String> = out
            .event
            .iter()
            .filter(|l| l.contains(&format!("thread=\"{th}\"")))
            .collect();
        assert_eq!(mine.len(), 3, "{th}: {mine:?}");
        assert!(mine[0].starts_with("thread_start "));
        assert_eq!(
            *mine[1],
            format!(
                "th_timer sid=_SID0_ thread=\"{th}\" category=\"test\" name=\"test2\" intervals=2 t_total=_T_ t_min=_T_ t_max=_T_"
            )
        );
        assert_eq!(
            *mine[2],
            format!("thread_exit sid=_SID0_ thread=\"{th}\" t_rel=_T_")
        );
        assert!(
            out.perf.contains(&format!("d0|{th}|thread_start||_T_|||")),
            "{:?}",
            out.perf
        );
    }
    assert!(
        out.normal
            .contains(&"timer test/test2 intervals:6 total:_T_ min:_T_ max:_T_".to_string())
    );
    assert!(!out.normal.iter().any(|l| l.starts_with("thread")));
    let out = run_verb(&["201counter", "5", "6", "2"], &[]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.normal
            .iter()
            .filter(|l| *l == "th_counter test/test2 value:11")
            .count(),
        2
    );
    assert_eq!(out.normal[out.normal.len() - 2], "counter test/test2 value:22");
}

#[test]
fn v300_to_303_redact() {
    let url = "https://user:secret@example.com/repo";
    let red = "https://user:<REDACTED>@example.com/repo";
    let out = run_verb(&["300redact_start", "git", "clone", url], &[]);
    assert_eq!(out.normal[3], format!("start git clone '{red}'"));
    assert!(out.normal[1].ends_with(&format!("300redact_start git clone '{red}'")));
    assert_eq!(
        out.event[3],
        format!("start sid=_SID0_ thread=\"main\" t_abs=_T_ argv=[\"git\",\"clone\",\"{red}\"]")
    );
    let out = run_verb(&["301redact_child_start", "git", "fetch", url], &[]);
    assert_eq!(out.normal[3], format!("child_start[0] git fetch '{red}'"));
    assert_eq!(
        out.perf[3],
        format!("d0|main|child_start||_T_|||[ch0] class:? argv:[git fetch '{red}']")
    );
    assert_eq!(
        out.event[3],
        format!(
            "child_start sid=_SID0_ thread=\"main\" child_id=0 child_class=\"?\" use_shell=false argv=[\"git\",\"fetch\",\"{red}\"]"
        )
    );
    let out = run_verb(&["302redact_exec", "git", "push", url], &[]);
    assert_eq!(out.normal[3], format!("exec[0] git push '{red}'"));
    assert_eq!(
        out.event[3],
        format!("exec sid=_SID0_ thread=\"main\" exec_id=0 exe=\"git\" argv=[\"push\",\"{red}\"]")
    );
    let out = run_verb(&["303redact_def_param", "remote.origin.url", url], &[]);
    assert_eq!(
        out.normal[3],
        format!("def_param scope:unknown remote.origin.url={red}")
    );
    assert_eq!(
        out.perf[3],
        format!("d0|main|def_param||||scope:unknow|remote.origin.url:{red}")
    );
    assert_eq!(
        out.event[3],
        format!(
            "def_param sid=_SID0_ thread=\"main\" scope=\"unknown\" param=\"remote.origin.url\" value=\"{red}\""
        )
    );
    // GIT_TRACE2_REDACT=0 turns it off.
    let out = run_verb(&["303redact_def_param", "k", url], &[("GIT_TRACE2_REDACT", "0")]);
    assert_eq!(out.normal[3], format!("def_param scope:unknown k={url}"));
}

#[test]
fn driver_matches_real_git_for_parent_sid_and_env_vars() {
    // An outside SID and name graft the driver under it, as they do git.
    let out = run_verb(
        &["001return", "0"],
        &[
            ("GIT_TRACE2_PARENT_SID", "outer"),
            ("GIT_TRACE2_PARENT_NAME", "myapp"),
            ("GIT_TRACE2_ENV_VARS", "HOME"),
        ],
    );
    assert_eq!(out.normal[2], "cmd_name trace2 (myapp/trace2)");
    assert!(
        out.normal[3].starts_with("def_param scope:command HOME="),
        "{:?}",
        out.normal
    );
    assert!(out.perf[0].starts_with("d1|"));
    let home = TempDir::new("sid");
    let e = home.join("e");
    let o = run(driver(home.path())
        .args(["001return", "0"])
        .env("GIT_TRACE2_EVENT", &e)
        .env("GIT_TRACE2_PARENT_SID", "outer"));
    assert!(o.status.success());
    let first = read(&e).lines().next().unwrap_or("").to_string();
    let m = parse_object_line(first.as_bytes()).unwrap();
    let sid = m[1].value.as_str().unwrap();
    let comp = sid.strip_prefix("outer/").expect("nested SID");
    assert_eq!(comp.len(), 43);
    assert_eq!(&comp[8..9], "T");
    assert_eq!(&comp[33..35], "-P");
    // Same host hash as git's own SID on this machine.
    let g = home.join("g");
    assert!(
        run(git(home.path()).arg("version").env("GIT_TRACE2_EVENT", &g))
            .status
            .success()
    );
    let gl = read(&g).lines().next().unwrap_or("").to_string();
    let gsid = parse_object_line(gl.as_bytes()).unwrap()[1]
        .value
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(&gsid[24..33], &comp[24..33], "host hash");
}
