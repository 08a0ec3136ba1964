//! `run --trace2`: real git's own regions and data, placed inside the kernel-observed processes.
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{self, PROCTRACE};

/// git with no system or global config of the machine in the way.
fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_TRACE2_EVENT")
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?} in {}", dir.display());
}

/// A bare repository with three commits, and an empty repository to fetch into.
fn repos() -> (String, String) {
    let base = common::tmp("repos");
    let base = Path::new(&base);
    let work = base.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    for i in 0..3 {
        std::fs::write(work.join(format!("f{i}")), format!("{i}\n").repeat(100 + i)).unwrap();
        git(&work, &["add", "."]);
        git(
            &work,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                &format!("c{i}"),
            ],
        );
    }
    let bare = base.join("src.git");
    git(base, &["clone", "-q", "--bare", "work", "src.git"]);
    let dst = base.join("dst");
    std::fs::create_dir_all(&dst).unwrap();
    git(&dst, &["init", "-q"]);
    (
        bare.to_string_lossy().into_owned(),
        dst.to_string_lossy().into_owned(),
    )
}

/// `proctrace run --backend B --trace2 -o FILE [extra] -- argv`, with git's config isolated.
fn run_trace2(backend: &str, extra: &[&str], argv: &[&str]) -> (std::process::Output, Vec<Value>) {
    let out_file = common::tmp("out.jsonl");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            backend,
            "--trace2",
            "--tree",
            "none",
            "-o",
            &out_file,
        ])
        .args(extra)
        .arg("--")
        .args(argv)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_TRACE2_EVENT")
        .env_remove("GIT_TRACE2_PARENT_SID")
        .output()
        .unwrap();
    (out, common::read_lines(&out_file))
}

/// A process's lifetime (fork .. exit, seconds on the lines' clock) and its last argv.
#[derive(Debug, Default)]
struct Life {
    fork: Option<f64>,
    exit: Option<f64>,
    argv: Vec<String>,
}

fn lives(lines: &[Value]) -> BTreeMap<i64, Life> {
    let mut m: BTreeMap<i64, Life> = BTreeMap::new();
    for l in lines {
        let Some(pid) = l["pid"].as_i64() else { continue };
        let ts = l["ts"].as_f64();
        match l["event"].as_str().unwrap() {
            "fork" => m.entry(pid).or_default().fork = ts,
            "exit" => m.entry(pid).or_default().exit = ts,
            "exec" => {
                m.entry(pid).or_default().argv = l["argv"]
                    .as_array()
                    .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                    .unwrap_or_default()
            }
            _ => {}
        }
    }
    m
}

fn regions(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["event"] == "region").collect()
}

/// Is `argv` git running subcommand `sub` (`git -C d fetch …`, `/…/git pack-objects …`)?
fn is_git(argv: &[String], sub: &str) -> bool {
    argv.first()
        .is_some_and(|a| Path::new(a).file_name().is_some_and(|n| n == "git"))
        && argv.iter().any(|a| a == sub)
}

both_backends! {
    fn fetch_regions_inside_their_processes(backend: &str) {
        let (bare, dst) = repos();
        let url = format!("file://{bare}");
        let (out, lines) = run_trace2(
            backend,
            &[],
            &["git", "-C", &dst, "fetch", "-q", &url, "HEAD:refs/remotes/t/main"],
        );
        assert!(out.status.success(), "{}", common::stderr(&out));
        let lives = lives(&lines);
        let regs = regions(&lines);
        assert!(!regs.is_empty(), "no region lines: {}", common::stderr(&out));
        // Every region belongs to a process of the tree and lies within its fork..exit; the
        // JSONL region line has the documented fields.
        for r in &regs {
            for k in ["pid", "ts", "duration", "category", "label", "nesting"] {
                assert!(!r[k].is_null(), "region without {k}: {r}");
            }
            let pid = r["pid"].as_i64().unwrap();
            let life = lives.get(&pid).unwrap_or_else(|| panic!("region of unknown pid: {r}"));
            let (start, end) = (
                r["ts"].as_f64().unwrap(),
                r["ts"].as_f64().unwrap() + r["duration"].as_f64().unwrap(),
            );
            let (fork, exit) = (life.fork.unwrap(), life.exit.unwrap());
            // The lines print nanoseconds as seconds with 9 decimals: allow the rounding.
            assert!(
                fork <= start + 1e-9 && end <= exit + 1e-9,
                "region {r} outside its process {fork}..{exit} ({:?})",
                life.argv
            );
        }
        // The regions git 2.47 emits for a fetch, in the processes that run them.
        let in_proc = |sub: &str, category: &str, label: &str| {
            regs.iter().any(|r| {
                r["category"] == category
                    && r["label"] == label
                    && lives
                        .get(&r["pid"].as_i64().unwrap())
                        .is_some_and(|l| is_git(&l.argv, sub))
            })
        };
        assert!(in_proc("fetch", "fetch", "fetch-one"), "{regs:#?}");
        assert!(in_proc("fetch", "fetch", "remote_refs"), "{regs:#?}");
        assert!(in_proc("fetch", "fetch", "fetch_refs"), "{regs:#?}");
        assert!(in_proc("pack-objects", "pack-objects", "write-pack-file"), "{regs:#?}");
        // And not in the wrong one: pack-objects' regions are not the fetch's.
        let fetch_pid = lives
            .iter()
            .find(|(_, l)| is_git(&l.argv, "fetch"))
            .map(|(p, _)| *p)
            .unwrap();
        assert!(
            regs.iter()
                .filter(|r| r["category"] == "pack-objects")
                .all(|r| r["pid"].as_i64() != Some(fetch_pid))
        );
        // Nested regions arrived (git's default event nesting of 2 would drop these).
        assert!(regs.iter().any(|r| r["nesting"].as_i64() >= Some(3)), "{regs:#?}");
        // Data points too, and every note found its process.
        assert!(lines.iter().any(|l| l["event"] == "data" && l["key"] == "negotiated-version"));
        let end = lines.iter().find(|l| l["event"] == "end").unwrap();
        assert_eq!(end["notes_unmatched"], 0, "{end}");
        assert!(end["notes"].as_u64().unwrap() >= regs.len() as u64, "{end}");
    }
}

both_backends! {
    fn a_command_that_is_not_git_writes_no_region(backend: &str) {
        let (out, lines) = run_trace2(backend, &[], &["sh", "-c", "true"]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        assert!(lines.iter().any(|l| l["event"] == "exit"));
        assert!(
            lines
                .iter()
                .all(|l| !matches!(l["event"].as_str(), Some("region" | "data" | "timer" | "counter"))),
            "{lines:#?}"
        );
        assert!(common::stderr(&out).find("trace2").is_none(), "{}", common::stderr(&out));
    }
}

/// git's sessions nest under proctrace's own: an alias run by git sees git's SID (exported as
/// `GIT_TRACE2_PARENT_SID`), which starts with the SID of proctrace's own trace2 output.
#[test]
fn git_sessions_nest_under_proctraces_sid() {
    let sid_file = common::tmp("sid.txt");
    let me = common::tmp("me.json");
    let alias = format!("alias.sidof=!printf %s \"$GIT_TRACE2_PARENT_SID\" > {sid_file}");
    let (out, lines) = run_trace2(
        "connector",
        &["--trace2-event", &me],
        &["git", "-c", &alias, "sidof"],
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    let first: Value =
        serde_json::from_str(std::fs::read_to_string(&me).unwrap().lines().next().unwrap()).unwrap();
    let mine = first["sid"].as_str().unwrap().to_string();
    let git_sid = std::fs::read_to_string(&sid_file).unwrap();
    let (parent, comp) = git_sid.rsplit_once('/').unwrap();
    assert_eq!(
        parent, mine,
        "git's SID {git_sid} is not under proctrace's {mine}"
    );
    // The component names the git process of the tree that ran the alias.
    let git_pid = lives(&lines)
        .iter()
        .find(|(_, l)| l.argv.first().is_some_and(|a| a == "git"))
        .map(|(p, _)| *p)
        .unwrap();
    assert!(
        comp.ends_with(&format!("-P{git_pid:08x}")),
        "{comp} vs pid {git_pid}"
    );
}

/// A user's own GIT_TRACE2_EVENT is taken over for the command, and proctrace says so.
#[test]
fn a_users_event_target_is_taken_over_and_said() {
    let theirs = common::tmp("theirs.json");
    let out_file = common::tmp("out.jsonl");
    let out = Command::new(PROCTRACE)
        .args(["run", "--trace2", "--tree", "none", "-o", &out_file, "--"])
        .args(["git", "version"])
        .env("GIT_TRACE2_EVENT", &theirs)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let err = common::stderr(&out);
    assert!(err.contains("takes over GIT_TRACE2_EVENT"), "{err}");
    assert!(
        !Path::new(&theirs).exists(),
        "git still wrote to the user's target"
    );
}

/// A git killed in the middle of a region (its pre-commit hook kills it): the region still
/// appears, in that process, ending at the last thing it said; the process is signal-killed.
#[test]
fn a_killed_git_keeps_its_open_region() {
    let base = common::tmp("hooked");
    let repo = Path::new(&base);
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q"]);
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, "#!/bin/sh\nkill -9 $PPID\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (out, lines) = run_trace2(
        "connector",
        &[],
        &[
            "git",
            "-C",
            &base,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(137), "{}", common::stderr(&out));
    let lives = lives(&lines);
    let regs = regions(&lines);
    let hook_region = regs
        .iter()
        .find(|r| r["category"] == "hook" && r["label"] == "pre-commit")
        .unwrap_or_else(|| panic!("no pre-commit region: {regs:#?}"));
    let life = &lives[&hook_region["pid"].as_i64().unwrap()];
    assert!(is_git(&life.argv, "commit"), "{life:?}");
    for r in regs {
        let life = &lives[&r["pid"].as_i64().unwrap()];
        let start = r["ts"].as_f64().unwrap();
        let end = start + r["duration"].as_f64().unwrap();
        assert!(
            life.fork.unwrap() <= start + 1e-9 && end <= life.exit.unwrap() + 1e-9,
            "{r}"
        );
    }
}

both_backends! {
    /// What CMD's environment gets: the socket (in a private directory, gone after the run),
    /// the parent SID and the nesting, under GIT_ and each `--trace2-prefix`; a nesting the user
    /// set is kept.
    fn the_commands_environment(backend: &str) {
        let env_file = common::tmp("env.txt");
        let script = format!(
            "env > {env_file}; d=$(dirname \"${{GIT_TRACE2_EVENT#af_unix:stream:}}\"); stat -c %a \"$d\" >> {env_file}"
        );
        let out_file = common::tmp("out.jsonl");
        let out = Command::new(PROCTRACE)
            .args(["run", "--backend", backend, "--trace2", "--trace2-prefix", "MYAPP"])
            .args(["--tree", "none", "-o", &out_file, "--", "sh", "-c", &script])
            .env("MYAPP_TRACE2_EVENT_NESTING", "7")
            .env_remove("GIT_TRACE2_EVENT")
            .env_remove("GIT_TRACE2_EVENT_NESTING")
            .env_remove("GIT_TRACE2_PARENT_SID")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        let text = std::fs::read_to_string(&env_file).unwrap();
        let var = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .map(str::to_string)
        };
        let target = var("GIT_TRACE2_EVENT").unwrap();
        let socket = target.strip_prefix("af_unix:stream:").unwrap();
        assert!(socket.starts_with('/'), "{target}");
        assert_eq!(var("MYAPP_TRACE2_EVENT").as_deref(), Some(target.as_str()));
        assert_eq!(text.lines().last(), Some("700"), "socket directory mode");
        assert!(!Path::new(socket).exists(), "socket left behind");
        assert!(!Path::new(socket).parent().unwrap().exists(), "socket directory left behind");
        let sid = var("GIT_TRACE2_PARENT_SID").unwrap();
        assert!(sid.contains(&format!("-P{:08x}", out_pid(&out_file))), "{sid}");
        assert_eq!(var("MYAPP_TRACE2_PARENT_SID"), Some(sid));
        assert_eq!(var("GIT_TRACE2_EVENT_NESTING").as_deref(), Some("100"));
        assert_eq!(var("MYAPP_TRACE2_EVENT_NESTING").as_deref(), Some("7"));
        assert_eq!(var("GIT_TRACE2_EVENT_BRIEF").as_deref(), Some("false"));
    }
}

/// proctrace's own pid, from the parent of the command in the JSON Lines.
fn out_pid(out_file: &str) -> i64 {
    let lines = common::read_lines(out_file);
    lines
        .iter()
        .find(|l| l["event"] == "fork")
        .and_then(|l| l["ppid"].as_i64())
        .unwrap()
}

/// Whatever a process writes to the socket: lines that are not Trace2 events (not JSON, bad
/// bytes, a last line cut short) are counted and said on stderr; the good lines around them
/// still make their region, in the writer's process.
#[test]
fn malformed_lines_are_counted_not_fatal() {
    let script = r#"
import datetime, os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["GIT_TRACE2_EVENT"][len("af_unix:stream:"):])
def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
sid = os.environ["GIT_TRACE2_PARENT_SID"] + "/py"
s.sendall(b"garbage\n\xff\xfe\x00\n")
s.sendall(('{"event":"region_enter","sid":"%s","thread":"main","time":"%s","nesting":1,"category":"py","label":"work"}\n' % (sid, now())).encode())
s.sendall(('{"event":"region_leave","sid":"%s","thread":"main","time":"%s","t_rel":0.0,"nesting":1,"category":"py","label":"work"}\n' % (sid, now())).encode())
s.sendall(b'{"event":"region_enter","sid"')
"#;
    let (out, lines) = run_trace2("connector", &[], &["python3", "-c", script]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let err = common::stderr(&out);
    assert!(
        err.contains("3 of 5 lines received were not Trace2 events"),
        "{err}"
    );
    let regs = regions(&lines);
    assert_eq!(regs.len(), 1, "{regs:#?}");
    let lives = lives(&lines);
    let life = &lives[&regs[0]["pid"].as_i64().unwrap()];
    // The python process itself (python3 may be a wrapper script that execs it).
    assert!(life.argv.iter().any(|a| a == script), "{life:?}");
    assert_eq!(regs[0]["label"], "work");
}
