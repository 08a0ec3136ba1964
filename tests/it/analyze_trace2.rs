//! `proctrace analyze` on git's own Trace2 event streams (`GIT_TRACE2_EVENT` to a file and to a
//! directory), written by real git commands that also ran under strace: the analysis must
//! match what strace saw (every process with a real pid exists, under its real parent, with its
//! real exit code or signal; every git process is in the analysis).
use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// Above this, a pid is proctrace's stand-in (Linux's PID_MAX_LIMIT).
const PID_MAX_LIMIT: i64 = 4_194_304;

/// A source repository with one commit, and a clone of it to work in (hooks, aliases).
fn repos() -> (String, String) {
    let src = tmp("src");
    let work = tmp("work");
    let git = |dir: &str, args: &[&str]| {
        let st = Command::new("git")
            .args(["-C", dir])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    };
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(format!("{src}/f"), "1\n").unwrap();
    git(&src, &["add", "f"]);
    git(
        &src,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "one",
        ],
    );
    git(&src, &["clone", "-q", &format!("file://{src}"), &work]);
    (src, work)
}

/// Runs `sh -c SCRIPT` in `dir` under strace, with git's event target at `target` (and
/// `extra_env`); identities set, automatic maintenance off unless `maintenance`.
fn traced(dir: &str, script: &str, target: &str, extra_env: &[(&str, &str)], maintenance: bool) -> StraceLog {
    let log = tmp("strace.log");
    let mut cmd = Command::new("strace");
    cmd.args(STRACE_ARGS)
        .args(["-o", &log, "sh", "-c", script])
        .current_dir(dir)
        .env("GIT_TRACE2_EVENT", target)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "maintenance.auto")
        .env("GIT_CONFIG_VALUE_0", if maintenance { "true" } else { "false" })
        .env("GIT_CONFIG_KEY_1", "protocol.file.allow")
        .env("GIT_CONFIG_VALUE_1", "always");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{script}: {}", stderr(&out));
    StraceLog::read(&log)
}

/// `proctrace analyze --json -o FILE [extra] PATHS`: the JSON object, the JSON Lines and stderr.
fn analyze(paths: &[&str], extra: &[&str]) -> (Value, Vec<Value>, String) {
    let out_file = tmp("analyze.jsonl");
    let out = Command::new(PROCTRACE)
        .arg("analyze")
        .args(["--json", "-o", &out_file])
        .args(extra)
        .args(paths)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "analyze {paths:?}: {}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    (json, read_lines(&out_file), stderr(&out))
}

/// What strace says a process's end was, as `code N` / `SIGNAME`, from an analysed exit line.
fn status_word(exit: &Value) -> String {
    match (exit["code"].as_i64(), exit["signal"].as_i64()) {
        (Some(c), _) => format!("code {c}"),
        (_, Some(13)) => "SIGPIPE".into(),
        (_, Some(s)) => signame(s),
        _ => "unknown".into(),
    }
}

/// The analysis matches strace: every analysed process with a real pid is one strace saw, under
/// the parent strace saw (a root's parent was not traced), ending the same way; every process
/// strace saw running git is in the analysis. Returns the analysed processes.
fn check(lines: &[Value], log: &StraceLog) -> BTreeMap<i64, Proc> {
    let ps = processes(lines);
    let mut strace_parent = BTreeMap::new();
    for (p, kids) in &log.children {
        for k in kids {
            strace_parent.insert(*k, *p);
        }
    }
    for p in ps.values().filter(|p| p.pid <= PID_MAX_LIMIT) {
        assert!(
            log.statuses.contains_key(&p.pid),
            "{p:?} is not a process strace saw"
        );
        // The parent is an ancestor strace saw (usually the parent itself). Processes that
        // neither wrote Trace2 nor were started by a git that did (a script's subshell) cannot
        // be seen, and a session knows only its SID's parent: in git-submodule's `printf |
        // git sh-i18n--envsubst "$(git sh-i18n--envsubst --variables …)"`, the inner git is a
        // child of the outer one's process before its exec, but both are children of the
        // script's git in Trace2. A root's real parent is not in the analysis.
        let mut anc = strace_parent.get(&p.pid).copied();
        let mut chain = Vec::new();
        while let Some(a) = anc {
            chain.push(a);
            anc = strace_parent.get(&a).copied();
        }
        if p.ppid == 0 {
            assert!(
                !chain.iter().any(|a| ps.contains_key(a)),
                "{p:?} is a root under {chain:?}"
            );
        } else {
            assert!(chain.contains(&p.ppid), "parent of {p:?} is not among {chain:?}");
        }
        assert_eq!(p.exits.len(), 1, "{p:?} must have ended");
        assert_eq!(
            Some(status_word(&p.exits[0])),
            log.status.get(&p.pid).cloned(),
            "how {p:?} ended"
        );
    }
    for (pid, argvs) in &log.argv {
        let gitty = argvs.iter().any(|a| {
            let a0 = a.split(' ').next().unwrap_or("");
            let base = a0.rsplit('/').next().unwrap_or(a0);
            base == "git" || base.starts_with("git-")
        });
        if gitty {
            assert!(
                ps.contains_key(pid),
                "git process {pid} {argvs:?} is missing from {ps:#?}"
            );
        }
    }
    ps
}

fn words_of(p: &Proc) -> String {
    p.execs.last().cloned().flatten().unwrap_or_default().join(" ")
}

/// The analysed process whose last argv contains `needle`.
fn with<'a>(ps: &'a BTreeMap<i64, Proc>, needle: &str) -> &'a Proc {
    ps.values()
        .find(|p| words_of(p).contains(needle))
        .unwrap_or_else(|| panic!("no process running {needle:?} in {ps:#?}"))
}

#[test]
fn clone_and_fetch_into_a_directory_target() {
    let (src, _) = repos();
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    let top = tmp("top");
    std::fs::create_dir_all(&top).unwrap();
    let script = format!(
        "git clone -q file://{src} dst && git -C {src} commit -q --allow-empty -m two && git -C dst fetch -q"
    );
    let log = traced(&top, &script, &dir, &[], false);
    let svg = tmp("c.svg");
    let chrome = tmp("c.json");
    let (json, lines, _) = analyze(&[&dir], &["--svg", &svg, "--chrome", &chrome]);
    let ps = check(&lines, &log);
    let files = std::fs::read_dir(&dir).unwrap().count() as u64;
    assert_eq!(json["sessions"].as_u64(), Some(files), "one session per file");
    assert_eq!(json["processes"].as_u64(), Some(ps.len() as u64));
    // The transport runs upload-pack through a shell: clone → sh → upload-pack → pack-objects.
    let clone = with(&ps, "clone -q");
    let sh = ps
        .values()
        .find(|p| p.ppid == clone.pid && words_of(p).starts_with("/bin/sh -c git-upload-pack"))
        .unwrap_or_else(|| panic!("no transport shell under clone in {ps:#?}"));
    let up = ps
        .values()
        .find(|p| p.ppid == sh.pid && words_of(p).starts_with("git-upload-pack"))
        .unwrap();
    assert!(
        ps.values()
            .any(|p| p.ppid == up.pid && words_of(p).contains("pack-objects"))
    );
    assert!(
        ps.values()
            .any(|p| p.ppid == clone.pid && words_of(p).contains("index-pack"))
    );
    let fetch = with(&ps, "fetch -q");
    assert!(
        ps.values()
            .any(|p| p.ppid == fetch.pid && words_of(p).contains("rev-list")),
        "{ps:#?}"
    );
    // git's own regions are on git's processes, inside their lifetimes.
    let regions: Vec<&Value> = lines.iter().filter(|l| l["event"] == "region").collect();
    assert!(!regions.is_empty());
    for r in &regions {
        let p = &ps[&r["pid"].as_i64().unwrap()];
        let fork = lines
            .iter()
            .find(|l| l["event"] == "fork" && l["pid"] == r["pid"])
            .unwrap()["ts"]
            .as_f64()
            .unwrap();
        let end = p.exits[0]["ts"].as_f64().unwrap();
        let ts = r["ts"].as_f64().unwrap();
        assert!(ts >= fork - 1e-6 && ts <= end + 1e-6, "{r} outside {p:?}");
    }
    // A file named again (inside the directory) is read once.
    let one = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let (again, _, _) = analyze(&[&dir, one.to_str().unwrap()], &[]);
    assert_eq!(again["processes"], json["processes"]);
    // Asked for no report made from every record, analyze frees each at its exit: the streamed
    // JSON Lines (regions and data included) are the same.
    let streamed = tmp("streamed.jsonl");
    let st = Command::new(PROCTRACE)
        .args(["analyze", "--tree", "none", "-o", &streamed, &dir])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", stderr(&st));
    assert_eq!(read_lines(&streamed), lines);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("git clone") && svg.contains("upload-pack"),
        "the picture names the clone"
    );
    assert!(std::fs::metadata(&chrome).unwrap().len() > 0);
}

#[test]
fn aliases_a_hook_failures_and_a_signal_in_one_file() {
    let (_, work) = repos();
    let hook = format!("{work}/.git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\ngit rev-parse HEAD >/dev/null\nexit 0\n").unwrap();
    Command::new("chmod").args(["+x", &hook]).status().unwrap();
    let file = tmp("events.t2");
    let script = "git -c alias.st=status st >/dev/null; \
                  git -c alias.sh='!git rev-parse HEAD >/dev/null; exit 0' sh; \
                  git rev-parse nope >/dev/null 2>&1; \
                  git -c alias.f='!exit 1' f; \
                  git -c alias.k='!kill -TERM $$' k 2>/dev/null; \
                  git commit -q --allow-empty -m hooked; exit 0";
    let log = traced(&work, script, &file, &[], false);
    let (json, lines, _) = analyze(&[&file], &[]);
    let ps = check(&lines, &log);
    assert_eq!(json["processes"].as_u64(), Some(ps.len() as u64));
    // Alias: git st runs git status as its child.
    let st = with(&ps, "alias.st=status st");
    assert!(
        ps.values()
            .any(|p| p.ppid == st.pid && words_of(p).ends_with("git status"))
    );
    // Shell alias: git → sh → git rev-parse.
    let sh_alias = with(&ps, "alias.sh=");
    let sh = ps.values().find(|p| p.ppid == sh_alias.pid).unwrap();
    assert!(words_of(sh).starts_with("/bin/sh -c"));
    assert!(
        ps.values()
            .any(|p| p.ppid == sh.pid && words_of(p) == "git rev-parse HEAD")
    );
    // Failures: 128 and 1.
    assert_eq!(status_word(&with(&ps, "rev-parse nope").exits[0]), "code 128");
    assert_eq!(status_word(&with(&ps, "alias.f=").exits[0]), "code 1");
    // The shell killed by SIGTERM; git exits 143.
    let k = with(&ps, "alias.k=");
    assert_eq!(status_word(&k.exits[0]), "code 143");
    let killed = ps.values().find(|p| p.ppid == k.pid).unwrap();
    assert_eq!(killed.exits[0]["signal"].as_i64(), Some(15));
    // The hook and the git it ran.
    let commit = with(&ps, "commit -q --allow-empty");
    let h = ps
        .values()
        .find(|p| p.ppid == commit.pid && words_of(p).contains("hooks/pre-commit"))
        .unwrap();
    assert!(
        ps.values()
            .any(|p| p.ppid == h.pid && words_of(p) == "git rev-parse HEAD")
    );
    let failures = json["failures"].as_array().unwrap();
    assert!(failures.iter().any(|f| f["signal"] == 15), "{failures:?}");
    assert!(failures.iter().any(|f| f["code"] == 128));
}

#[test]
fn submodule_add_and_update() {
    let (src, work) = repos();
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!("git submodule -q add {src} sub && git submodule -q update --init --force");
    let log = traced(&work, &script, &dir, &[], false);
    let (_, lines, _) = analyze(&[&dir], &[]);
    let ps = check(&lines, &log);
    // git submodule (a shell script) → git submodule--helper add → git clone.
    let helper = with(&ps, "submodule--helper add");
    let clone = ps
        .values()
        .find(|p| words_of(p).contains(" clone ") && p.ppid == helper.pid)
        .unwrap_or_else(|| panic!("no clone under submodule--helper in {ps:#?}"));
    assert_eq!(status_word(&clone.exits[0]), "code 0");
}

#[test]
fn max_files_makes_too_many_files() {
    let (src, _) = repos();
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    let top = tmp("top");
    std::fs::create_dir_all(&top).unwrap();
    let script = format!("git clone -q file://{src} dst");
    let log = traced(&top, &script, &dir, &[("GIT_TRACE2_MAX_FILES", "4")], false);
    assert!(std::path::Path::new(&format!("{dir}/git-trace2-discard")).exists());
    let (json, lines, err) = analyze(&[&dir], &[]);
    assert_eq!(json["too_many_files"].as_u64(), Some(1));
    // Not silent for a person either.
    assert!(err.contains("file limit (maxFiles) 1 time"), "{err}");
    assert_eq!(json["sessions"].as_u64(), Some(3), "two files and the sentinel");
    let ps = processes(&lines);
    // Whatever was traced matches strace (processes that wrote nothing are their parents'
    // children from child_start alone, or absent when their parent wrote nothing either).
    for p in ps.values() {
        assert!(
            p.pid <= PID_MAX_LIMIT && log.statuses.contains_key(&p.pid),
            "{p:?}"
        );
        assert_eq!(Some(status_word(&p.exits[0])), log.status.get(&p.pid).cloned());
    }
}

#[test]
fn a_git_killed_mid_run_stays_running() {
    let (_, work) = repos();
    let ready = tmp("hook.pid");
    let hook = format!("{work}/.git/hooks/pre-commit");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\necho $$ > {ready}.tmp && mv {ready}.tmp {ready}\nexec sleep 30\n"),
    )
    .unwrap();
    Command::new("chmod").args(["+x", &hook]).status().unwrap();
    let file = tmp("events.t2");
    let mut git = Command::new("git")
        .args([
            "-C",
            &work,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ])
        .env("GIT_TRACE2_EVENT", &file)
        .spawn()
        .unwrap();
    wait_for_file(&ready);
    let hook_pid = std::fs::read_to_string(&ready).unwrap().trim().to_string();
    Command::new("kill")
        .args(["-TERM", &git.id().to_string()])
        .status()
        .unwrap();
    let st = git.wait().unwrap();
    assert!(!st.success());
    Command::new("kill").args(["-KILL", &hook_pid]).status().unwrap();
    let (json, lines, _) = analyze(&[&file], &[]);
    let ps = processes(&lines);
    assert_eq!(ps.len(), 2, "{ps:#?} {}", std::fs::read_to_string(&file).unwrap());
    let commit = &ps[&(git.id() as i64)];
    // git never wrote the hook's child_exit, so its pid is unknown: a stand-in.
    let h = ps.values().find(|p| p.pid != commit.pid).unwrap();
    assert!(h.pid > PID_MAX_LIMIT && h.pid != hook_pid.parse::<i64>().unwrap());
    assert_eq!(h.ppid, commit.pid);
    assert!(words_of(h).contains("hooks/pre-commit"), "{h:?}");
    // Neither wrote an end, and nothing was guessed.
    assert!(commit.exits.is_empty() && h.exits.is_empty(), "{ps:#?}");
    assert!(json["failures"].as_array().unwrap().is_empty());
}

#[test]
fn detached_maintenance_is_a_background_fork() {
    let (_, work) = repos();
    let dir = tmp("t2dir");
    std::fs::create_dir_all(&dir).unwrap();
    let log = traced(&work, "git commit -q --allow-empty -m x", &dir, &[], true);
    // The detached child writes its exit after its parent's atexit: wait for it.
    let done = || {
        std::fs::read_dir(&dir).unwrap().any(|e| {
            let t = std::fs::read_to_string(e.unwrap().path()).unwrap_or_default();
            t.contains("\"maintenance\"") && t.matches("\"event\":\"atexit\"").count() >= 2
        })
    };
    for _ in 0..1000 {
        if done() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(done(), "the detached maintenance never finished");
    let (json, lines, _) = analyze(&[&dir], &[]);
    let ps = processes(&lines);
    let maint = with(&ps, "maintenance run --auto");
    assert_eq!(log.status.get(&maint.pid).map(String::as_str), Some("code 0"));
    let fork = ps
        .values()
        .find(|p| p.ppid == maint.pid && p.pid > PID_MAX_LIMIT)
        .unwrap_or_else(|| panic!("no detached fork under maintenance in {ps:#?}"));
    assert_eq!(fork.background.as_deref(), Some("ready"));
    assert_eq!(status_word(&fork.exits[0]), "code 0");
    assert!(fork.execs.is_empty(), "a fork without exec");
    assert_eq!(json["background"].as_array().map(|a| a.len()), Some(1));
}

#[test]
fn sigpipe_is_a_signal() {
    let (_, work) = repos();
    // 1 MB: more than a pipe holds, so git is still writing when the reader has gone.
    std::fs::write(format!("{work}/big"), "x".repeat(1 << 20)).unwrap();
    let file = tmp("events.t2");
    let script = "git add big && git commit -qm big && git cat-file blob HEAD:big | true";
    let log = traced(&work, script, &file, &[], false);
    let (_, lines, _) = analyze(&[&file], &[]);
    let ps = check(&lines, &log);
    let cat = with(&ps, "cat-file blob");
    assert_eq!(cat.exits[0]["signal"].as_i64(), Some(13), "{cat:?}");
    let t2 = std::fs::read_to_string(&file).unwrap();
    assert!(t2.contains("\"event\":\"signal\""), "git wrote its signal event");
}
