//! `run --files`: what each process read, wrote, created, renamed and deleted, against strace
//! as ground truth on a real `make -j2` of a generated C project, with real processes for the
//! edges (rename then delete, two writers, a queue overflow forced by stopping proctrace), each
//! under both ways of watching: fanotify (the eBPF backend) and the ptrace backend's seccomp
//! filter (which needs no privilege).
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// A C project of `n` files, each including a shared header and its own, and a Makefile that
/// compiles them and links `prog`.
pub(crate) fn c_project(n: usize) -> String {
    let dir = tmp("proj");
    let dir = dir.trim_end_matches("/proj").to_string() + "/proj";
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(format!("{dir}/common.h"), "#define COMMON 1\n").unwrap();
    let mut objs = Vec::new();
    for i in 0..n {
        std::fs::write(format!("{dir}/h{i}.h"), format!("int f{i}(void);\n")).unwrap();
        std::fs::write(
            format!("{dir}/f{i}.c"),
            format!("#include \"common.h\"\n#include \"h{i}.h\"\n#include <stdio.h>\nint f{i}(void) {{ return COMMON + {i}; }}\n"),
        )
        .unwrap();
        objs.push(format!("f{i}.o"));
    }
    std::fs::write(format!("{dir}/main.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(
        format!("{dir}/Makefile"),
        format!(
            "prog: main.o {o}\n\tcc -o $@ $^\n%.o: %.c\n\tcc -c -o $@ $<\nclean:\n\trm -f prog *.o\n",
            o = objs.join(" ")
        ),
    )
    .unwrap();
    dir
}

/// (pid → the .c file its compile read) and each pid's reads and writes, from proctrace.
fn proctrace_files(lines: &[Value]) -> BTreeMap<i64, (BTreeSet<String>, BTreeSet<String>)> {
    let mut m: BTreeMap<i64, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    for l in lines.iter().filter(|l| l["event"] == "file") {
        let e = m.entry(l["pid"].as_i64().unwrap()).or_default();
        let p = l["path"].as_str().unwrap().to_string();
        match l["access"].as_str().unwrap() {
            "read" => e.0.insert(p),
            "write" => e.1.insert(p),
            _ => false,
        };
    }
    m
}

/// Each strace'd pid's successful opens for reading only and for writing, as absolute paths.
fn strace_files(path: &str, cwd: &str) -> BTreeMap<i64, (BTreeSet<String>, BTreeSet<String>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut m: BTreeMap<i64, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    // Calls strace split in two (`<unfinished ...>` then `<... openat resumed>`), by pid.
    let mut pending: BTreeMap<i64, String> = BTreeMap::new();
    for line in text.lines() {
        // 1234  openat(AT_FDCWD, "f1.c", O_RDONLY|O_NOCTTY) = 3
        let Some((pid, rest)) = line.trim_start().split_once(' ') else {
            continue;
        };
        let Ok(pid) = pid.parse::<i64>() else { continue };
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid, head.to_string());
            continue;
        }
        let joined;
        let rest = if rest.starts_with("<... open") {
            let Some(head) = pending.remove(&pid) else {
                continue;
            };
            let tail = rest.split_once("resumed>").map_or("", |(_, t)| t);
            joined = format!("{head}{tail}");
            joined.as_str()
        } else {
            rest
        };
        if !(rest.starts_with("openat(") || rest.starts_with("open(")) {
            continue;
        }
        // `) = 3`, padded with spaces after a resumed call.
        let Some(ret) = rest
            .rsplit_once(')')
            .and_then(|(_, r)| r.trim_start().strip_prefix("= "))
        else {
            continue;
        };
        if ret.starts_with('-') {
            continue;
        }
        let Some(start) = rest.find('"') else { continue };
        let Some(len) = rest[start + 1..].find('"') else {
            continue;
        };
        let p = &rest[start + 1..start + 1 + len];
        let abs = if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{cwd}/{p}")
        };
        let flags = &rest[start + 1 + len..];
        if flags.contains("O_DIRECTORY") {
            continue;
        }
        let e = m.entry(pid).or_default();
        if flags.contains("O_WRONLY") || flags.contains("O_RDWR") {
            e.1.insert(abs);
        } else {
            e.0.insert(abs);
        }
    }
    m
}

/// The headers and sources a set of paths holds (what the comparison is about).
fn sources(s: &BTreeSet<String>) -> BTreeSet<String> {
    s.iter()
        .filter(|p| p.ends_with(".h") || p.ends_with(".c") || p.ends_with(".o"))
        .cloned()
        .collect()
}

/// The compile of each `.c` (by its file), from a trace's per-pid lists: the process that read
/// the `.c` (cc1), with what it read; and the process that wrote each `.o` (as).
fn by_source(
    m: &BTreeMap<i64, (BTreeSet<String>, BTreeSet<String>)>,
    dir: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let ours = |p: &&String| p.starts_with(dir);
    for (reads, writes) in m.values() {
        for c in reads.iter().filter(ours).filter(|p| p.ends_with(".c")) {
            out.insert(c.clone(), sources(reads));
        }
        for o in writes.iter().filter(ours).filter(|p| p.ends_with(".o")) {
            out.insert(o.clone(), sources(writes));
        }
    }
    out
}

/// Every `(access, path)` of the `file` lines.
fn access_paths(lines: &[Value]) -> BTreeSet<(String, String)> {
    lines
        .iter()
        .filter(|l| l["event"] == "file")
        .map(|l| {
            (
                l["access"].as_str().unwrap().to_string(),
                l["path"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The backends whose `--files` is watched each way: eBPF with fanotify, ptrace with its
/// seccomp filter (both name the short-lived `as` and `ld` by their argv for sure).
const WAYS: [&str; 2] = ["ebpf", "ptrace"];

/// `proctrace run --files --backend B -o OUT --tree none [extra] -- argv` in `dir`.
pub(crate) fn run_files(
    backend: &str,
    dir: &str,
    out: &str,
    extra: &[&str],
    argv: &[&str],
) -> std::process::Output {
    Command::new(PROCTRACE)
        .args([
            "run",
            "--files",
            "--backend",
            backend,
            "-o",
            out,
            "--tree",
            "none",
        ])
        .args(extra)
        .arg("--")
        .args(argv)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn make_j2_files_match_strace() {
    let dir = c_project(8);
    let clean = || {
        let st = Command::new("make")
            .args(["-s", "clean"])
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(st.success());
    };
    let strace_out = tmp("strace.txt");
    let st = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=%file",
            "-o",
            &strace_out,
            "make",
            "-j2",
            "-s",
        ])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    clean();
    let truth = by_source(&strace_files(&strace_out, &dir), &dir);
    assert_eq!(
        truth.len(),
        9 + 9,
        "strace saw each compile's source and object: {truth:#?}"
    );
    for way in WAYS {
        let out_file = tmp("files.jsonl");
        let out = run_files(way, &dir, &out_file, &[], &["make", "-j2", "-s"]);
        assert_eq!(out.status.code(), Some(0), "{way}: {}", stderr(&out));
        let lines = read_lines(&out_file);
        let ours = by_source(&proctrace_files(&lines), &dir);
        clean();
        assert_eq!(
            ours, truth,
            "{way}: each compile's headers and sources read, and each object written"
        );
        check_make_j2_summary(way, &dir, &out_file, &lines);
    }
}

/// The end line and the summary of a `make -j2` of `c_project(8)` traced with `--files`: each
/// object produced by its `as` and consumed by the link's `ld`, the shared header most read.
fn check_make_j2_summary(way: &str, dir: &str, out_file: &str, lines: &[Value]) {
    let end = lines.last().unwrap();
    assert!(end["files"].as_u64().unwrap() > 0, "{way}: {end}");
    assert_eq!(end["files_lost"], 0, "{way}: {end}");

    // The summary: each object produced by its `as` and consumed by the link's `ld`.
    let summary = tmp("summary.json");
    let out = Command::new(PROCTRACE)
        .args(["analyze", "--tree", "none", "--summary-json", &summary, out_file])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{way}: {}", stderr(&out));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let ps = processes(lines);
    let argv0 = |p: &Proc| -> String {
        p.execs
            .iter()
            .flatten()
            .last()
            .and_then(|a| a.first().cloned())
            .unwrap_or_default()
    };
    let ld = ps
        .values()
        .find(|p| argv0(p).ends_with("/ld") || argv0(p) == "ld")
        .unwrap_or_else(|| panic!("{way}: the link's ld: {ps:?}"))
        .pid;
    for i in 0..8 {
        let obj = format!("{dir}/f{i}.o");
        let p = s["files"]["produced"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == obj.as_str())
            .unwrap_or_else(|| panic!("{way}: {obj} produced: {}", s["files"]));
        let producer = p["producers"][0].as_i64().unwrap();
        assert_eq!(argv0(&ps[&producer]), "as", "{way}: {p}");
        let consumers: Vec<i64> = p["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_i64().unwrap())
            .collect();
        assert!(consumers.contains(&ld), "{way}: {p}");
    }
    // The headers every compile read lead the most-read list.
    let common = format!("{dir}/common.h");
    let top = &s["files"]["most_read"];
    assert!(
        top.as_array()
            .unwrap()
            .iter()
            .any(|m| m["path"] == common.as_str() && m["readers"] == 8),
        "{way}: {top}"
    );
}

#[test]
fn write_rename_delete_and_two_writers() {
    for way in WAYS {
        let dir = tmp(&format!("wrd-{way}"));
        let dir = dir.trim_end_matches(&format!("/wrd-{way}")).to_string();
        let out_file = format!("{dir}/out.jsonl");
        let script = "echo one > a; mv a b; rm b; sh -c 'echo x >> shared' & sh -c 'echo y >> shared'; wait";
        let out = run_files(way, &dir, &out_file, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{way}: {}", stderr(&out));
        let lines = read_lines(&out_file);
        let ps = processes(&lines);
        let root = find(&ps, &["sh", "-c", script]).pid;
        let uses: Vec<(i64, String, String, Option<String>)> = lines
            .iter()
            .filter(|l| l["event"] == "file" && l["path"].as_str().unwrap().starts_with(&dir))
            .map(|l| {
                (
                    l["pid"].as_i64().unwrap(),
                    l["access"].as_str().unwrap().to_string(),
                    l["path"].as_str().unwrap()[dir.len()..].to_string(),
                    l["to"].as_str().map(|t| t[dir.len()..].to_string()),
                )
            })
            .filter(|u| u.2 != "/out.jsonl")
            .collect();
        let has = |pid: i64, access: &str, path: &str| {
            uses.iter().any(|u| u.0 == pid && u.1 == access && u.2 == path)
        };
        assert!(has(root, "create", "/a"), "{way}: {uses:?}");
        assert!(has(root, "write", "/a"), "{way}: {uses:?}");
        let mv = find(&ps, &["mv", "a", "b"]).pid;
        assert!(
            uses.iter()
                .any(|u| u.0 == mv && u.1 == "rename" && u.2 == "/a" && u.3.as_deref() == Some("/b")),
            "{way}: {uses:?}"
        );
        let rm = find(&ps, &["rm", "b"]).pid;
        assert!(has(rm, "delete", "/b"), "{way}: {uses:?}");
        // Two writers of one file: both listed, the first to open it made it.
        let x = find(&ps, &["sh", "-c", "echo x >> shared"]).pid;
        let y = find(&ps, &["sh", "-c", "echo y >> shared"]).pid;
        assert!(
            has(x, "write", "/shared") && has(y, "write", "/shared"),
            "{way}: {uses:?}"
        );
        assert!(
            has(x, "create", "/shared") != has(y, "create", "/shared"),
            "{way}: {uses:?}"
        );
        // Nothing else of the directory, and nothing twice.
        assert_eq!(uses.len(), 7, "{way}: {uses:?}");
        // The noise every process reads at start is left out, and so are /dev and /proc.
        assert!(
            !lines.iter().any(|l| l["event"] == "file"
                && (l["path"] == "/etc/ld.so.cache"
                    || l["path"].as_str().unwrap().starts_with("/dev/")
                    || l["path"].as_str().unwrap().starts_with("/proc/"))),
            "{way}: noise left out"
        );
    }
}

/// Without privilege: fanotify is refused clearly (and nothing is left behind), with a backend
/// that works unprivileged otherwise (the connector, given `CAP_NET_ADMIN`); `auto` then goes on
/// to ptrace and says so; the ptrace backend watches files as `nobody`, which is the point of it.
#[test]
fn files_without_privilege() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp("nobody-files");
    let dir = dir.trim_end_matches("/nobody-files").to_string();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = format!("{dir}/proctrace");
    std::fs::copy(PROCTRACE, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = |caps: bool, extra: &[&str], out_file: &str, script: &str| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        if caps {
            c.args(["--inh-caps=+net_admin", "--ambient-caps=+net_admin"]);
        }
        c.args([bin.as_str(), "run", "--files", "--tree", "none", "-o", out_file])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    // fanotify refused: a clear message, no output left.
    let never = format!("{dir}/never.jsonl");
    let out = nobody(true, &["--backend", "connector"], &never, "true");
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("--files") && err.contains("CAP_SYS_ADMIN"), "{err}");
    assert!(
        !std::path::Path::new(&never).exists(),
        "the output it made is removed"
    );
    // auto: on to ptrace, said once and recorded.
    let script = |n: &str| format!("echo one > made{n}; cat made{n} > copy{n}; rm made{n}");
    let auto = format!("{dir}/auto.jsonl");
    let out = nobody(true, &[], &auto, &script("1"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("tracing with ptrace instead"))
            .count(),
        1,
        "{err}"
    );
    // ptrace as nobody, explicitly and by auto without capabilities: the files are there.
    let plain = format!("{dir}/plain.jsonl");
    let out = nobody(false, &["--backend", "ptrace"], &plain, &script("2"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (f, n) in [(&auto, "1"), (&plain, "2")] {
        let lines = read_lines(f);
        assert_eq!(lines[0]["backend"], "ptrace", "{}", lines[0]);
        assert_eq!(lines[0]["files"], true, "{}", lines[0]);
        let uses = access_paths(&lines);
        for (access, name) in [
            ("create", "made"),
            ("write", "made"),
            ("read", "made"),
            ("create", "copy"),
            ("write", "copy"),
            ("delete", "made"),
        ] {
            assert!(
                uses.contains(&(access.to_string(), format!("{dir}/{name}{n}"))),
                "{access} {name}: {uses:?}"
            );
        }
    }
    let refused = &read_lines(&auto)[0]["refused"];
    assert!(
        refused
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("connector: --files: ")),
        "{refused}"
    );
}

#[test]
fn a_queue_overflow_is_counted() {
    // proctrace stopped while the command opens 40,000 files: fanotify's queue (16,384 events)
    // overflows, and the end line says so.
    let dir = tmp("overflow");
    let dir = dir.trim_end_matches("/overflow").to_string();
    let (go, done) = (format!("{dir}/go"), format!("{dir}/done"));
    let out_file = format!("{dir}/out.jsonl");
    let py = format!(
        "import os,time\n\
         d='{dir}/many'; os.makedirs(d, exist_ok=True)\n\
         while not os.path.exists('{go}'): time.sleep(0.01)\n\
         for i in range(40000):\n    open(f'{{d}}/{{i}}', 'w').close()\n\
         open('{done}', 'w').close()\n"
    );
    let mut child = Command::new(PROCTRACE)
        .args([
            "run",
            "--files",
            "-o",
            &out_file,
            "--tree",
            "none",
            "--",
            "/usr/bin/python3",
            "-c",
            &py,
        ])
        .current_dir(&dir)
        .spawn()
        .unwrap();
    wait_for_text(&out_file, "the start line", |t| t.contains("\"start\""));
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(&go, "").unwrap();
    let t0 = std::time::Instant::now();
    while !std::path::Path::new(&done).exists() {
        assert!(t0.elapsed().as_secs() < 60, "the flood did not finish");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let lines = read_lines(&out_file);
    let end = lines.last().unwrap();
    assert!(end["files_lost"].as_u64().unwrap() >= 1, "{end}");
}

#[test]
fn perfetto_gets_arrows_from_each_object_to_the_link() {
    let dir = c_project(3);
    let (jsonl, chrome) = (tmp("flows.jsonl"), tmp("flows.json"));
    let out = run_files(
        "ptrace",
        &dir,
        &jsonl,
        &["--chrome", &chrome],
        &["make", "-j2", "-s"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = read_lines(&jsonl);
    let text = std::fs::read_to_string(&chrome).unwrap();
    let got = crate::chrome_check::validate(&text, &crate::chrome_out::expected(&lines))
        .unwrap_or_else(|e| panic!("{e}"));
    let ps = processes(&lines);
    let argv0 = |pid: i64| -> String {
        ps[&pid]
            .execs
            .iter()
            .flatten()
            .last()
            .and_then(|a| a.first().cloned())
            .unwrap_or_default()
    };
    for i in 0..3 {
        let obj = format!("{dir}/f{i}.o");
        assert!(
            got.flows
                .iter()
                .any(|(from, to, name)| *name == obj && argv0(*from) == "as" && argv0(*to).ends_with("ld")),
            "{obj}: an arrow from its as to the link's ld: {:?}",
            got.flows
        );
    }
    // And the same bytes again from the JSON Lines.
    let again = tmp("again.json");
    let out = Command::new(PROCTRACE)
        .args(["analyze", "--tree", "none", "--chrome", &again, &jsonl])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), text);
}

#[test]
fn diff_says_which_files_a_command_newly_read_and_no_longer_reads() {
    let dir = c_project(3);
    let run = |out: &str| {
        let o = run_files("ptrace", &dir, out, &[], &["make", "-j2", "-s"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            Command::new("make")
                .args(["-s", "clean"])
                .current_dir(&dir)
                .status()
                .unwrap()
                .success()
        );
    };
    let (old, new) = (tmp("old.jsonl"), tmp("new.jsonl"));
    run(&old);
    // f1.c now also includes new.h; f2.c no longer includes h2.h.
    std::fs::write(format!("{dir}/new.h"), "#define NEW 1\n").unwrap();
    std::fs::write(
        format!("{dir}/f1.c"),
        "#include \"common.h\"\n#include \"h1.h\"\n#include \"new.h\"\n#include <stdio.h>\nint f1(void) { return NEW; }\n",
    )
    .unwrap();
    std::fs::write(
        format!("{dir}/f2.c"),
        "#include \"common.h\"\nint f2(void) { return COMMON; }\n",
    )
    .unwrap();
    run(&new);
    let out = Command::new(PROCTRACE)
        .args(["diff", &old, &new])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("files read or written differently: (2)"), "{text}");
    // (the files list's line: the compile may be in the slower or faster list too)
    let line = |src: &str| {
        text.lines()
            .find(|l| l.contains("cc1") && l.contains(src) && l.contains(" reads "))
            .unwrap_or_else(|| panic!("a line for the compile of {src}: {text}"))
            .to_string()
    };
    // Paths are compared normalised: a project under /tmp (a CI clone) has its temporary-looking
    // parts replaced, so the test looks at the end of each path.
    assert!(
        line("f1.c").contains("newly reads ") && line("f1.c").ends_with("/proj/new.h"),
        "{text}"
    );
    // f2.c dropped stdio.h too: the text names the build's own header first and counts the rest.
    assert!(
        line("f2.c").contains("no longer reads ") && line("f2.c").contains("/proj/h2.h (+"),
        "{text}"
    );
    let json = Command::new(PROCTRACE)
        .args(["diff", "--json", &old, &new])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{v}");
    let ends = |p: &Value, tail: &str| p.as_str().is_some_and(|p| p.ends_with(tail));
    assert!(
        files
            .iter()
            .any(|f| ends(&f["newly_read"][0], "/proj/new.h") && f["newly_read_count"] == 1),
        "{v}"
    );
    assert!(
        files.iter().any(|f| f["no_longer_read"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| ends(p, "/proj/h2.h"))),
        "{v}"
    );
    // Traces without --files compare no files.
    let plain = tmp("plain.jsonl");
    let o = Command::new(PROCTRACE)
        .args(["run", "-o", &plain, "--tree", "none", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let json = Command::new(PROCTRACE)
        .args(["diff", "--json", &plain, &plain])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["files"].is_null(), "{v}");
}

#[test]
fn watch_p_lists_the_files_of_the_tree_it_watches() {
    let dir = tmp("watchfiles");
    let dir = dir.trim_end_matches("/watchfiles").to_string();
    std::fs::write(format!("{dir}/input.txt"), "x\n").unwrap();
    let out_file = format!("{dir}/watch.jsonl");
    // The tree waits for the watcher's start line before it touches anything.
    let script = format!(
        "while ! grep -q start {out_file} 2>/dev/null; do sleep 0.02; done; sleep 0.3; \
         cat {dir}/input.txt > {dir}/output.txt; sleep 0.3"
    );
    let (out, _) = watch_sh(&script, &["--files", "-o", &out_file]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    assert_eq!(lines[0]["files"], true, "{}", lines[0]);
    let uses: Vec<(i64, &str, &str)> = lines
        .iter()
        .filter(|l| l["event"] == "file")
        .map(|l| {
            (
                l["pid"].as_i64().unwrap(),
                l["access"].as_str().unwrap(),
                l["path"].as_str().unwrap(),
            )
        })
        .collect();
    let input = format!("{dir}/input.txt");
    let output = format!("{dir}/output.txt");
    assert!(
        uses.iter().any(|u| u.1 == "read" && u.2 == input),
        "cat read its input: {uses:?}"
    );
    // The shell opened the redirection: the write is the watched shell's (or its fork's).
    assert!(uses.iter().any(|u| u.1 == "write" && u.2 == output), "{uses:?}");
    assert!(uses.iter().all(|u| u.0 != std::process::id() as i64));
    // Without -p there is no tree to list files for: a usage error.
    let out = Command::new(PROCTRACE)
        .args(["watch", "--files", "--duration", "0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn the_tree_says_what_each_process_read_and_wrote() {
    let dir = c_project(2);
    let out_file = tmp("tree.jsonl");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--files",
            "--backend",
            "ptrace",
            "-o",
            &out_file,
            "--tree",
            "full",
            "--",
        ])
        .args(["make", "-j2", "-s"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let cc1: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("cc1 ") && l.contains("f0.c") && l.contains(" · reads "))
        .collect();
    assert_eq!(cc1.len(), 1, "{err}");
    // f0.c, common.h, h0.h, stdio.h and what it includes; the assembler input it wrote.
    let reads: usize = cc1[0]
        .split(" · reads ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", cc1[0]));
    assert!(reads >= 4, "{}", cc1[0]);
    assert!(cc1[0].ends_with(", writes 1"), "{}", cc1[0]);
}

/// Mounts a tmpfs on `dir` (a filesystem of its own, not one of the paths marked first) and
/// unmounts it when dropped.
struct Tmpfs(String);

impl Tmpfs {
    fn on(dir: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "proctrace-test", dir])
            .status()
            .unwrap();
        assert!(st.success(), "mount -t tmpfs on {dir}");
        Tmpfs(dir.to_string())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").args(["-l", &self.0]).status();
    }
}

/// A build directory on a filesystem of its own (mounted before the run, and one mounted by the
/// command while it runs) is watched: every mounted filesystem that holds files is marked, and
/// a new mount is marked when `/proc/self/mountinfo` signals it.
#[test]
fn files_on_other_mounts_and_mounted_during_the_run_are_seen() {
    let dir = tmp("mounts");
    let dir = dir.trim_end_matches("/mounts").to_string();
    let _before = Tmpfs::on(&format!("{dir}/before"));
    let later = format!("{dir}/later");
    std::fs::create_dir_all(&later).unwrap();
    let out_file = format!("{dir}/out.jsonl");
    // The command's cwd is elsewhere: `before` is found in mountinfo, not as the cwd's filesystem.
    let script = format!(
        "echo one > '{dir}/before/a'; cat '{dir}/before/a' >/dev/null; \
         mount -t tmpfs proctrace-test '{later}' && sleep 0.3 && echo two > '{later}/b' && cat '{later}/b' >/dev/null; \
         s=$?; umount -l '{later}'; exit $s"
    );
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--files",
            "--backend",
            "connector",
            "-o",
            &out_file,
            "--tree",
            "none",
        ])
        .args(["--", "sh", "-c", &script])
        .current_dir("/")
        .output()
        .unwrap();
    let _ = Command::new("umount").args(["-l", &later]).status();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let uses = access_paths(&lines);
    for (access, path) in [
        ("create", format!("{dir}/before/a")),
        ("write", format!("{dir}/before/a")),
        ("read", format!("{dir}/before/a")),
        ("write", format!("{later}/b")),
        ("read", format!("{later}/b")),
    ] {
        assert!(
            uses.contains(&(access.to_string(), path.clone())),
            "{access} {path}: {uses:?}"
        );
    }
}

/// The exact bytes of a `file` line's path field `key` (`path` or `to`): its `*_base64` when
/// it has one.
fn path_bytes(line: &Value, key: &str) -> Vec<u8> {
    use base64::Engine as _;
    match line[format!("{key}_base64")].as_str() {
        Some(b) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
        None => line[key].as_str().unwrap().as_bytes().to_vec(),
    }
}

/// Paths are named as the kernel resolves them, however the call named them: relative to the
/// working directory or to a directory descriptor (`rm -r` removes by `unlinkat(dirfd, …)`),
/// through `..` and a symbolic link; and they are bytes: a name that is not UTF-8 and holds a
/// newline is kept exactly. Directories made and removed are not files.
#[test]
fn paths_are_named_exactly_and_canonically() {
    use std::os::unix::ffi::OsStrExt;
    for way in WAYS {
        let dir = tmp(&format!("paths-{way}"));
        let dir = dir.trim_end_matches(&format!("/paths-{way}")).to_string();
        let out_file = format!("{dir}/out.jsonl");
        let script = "mkdir sub real; echo hi > real/t; ln -s real link; \
             cd sub && cat ../link/t > /dev/null && cd .. && rm -r real; \
             odd=$(printf 'n\\377l\\nx'); echo x > \"$odd\"; mv \"$odd\" \"$odd.2\"; rm \"$odd.2\"; \
             cat missing1 2>/dev/null; rm missing2 2>/dev/null; mv missing3 x 2>/dev/null; \
             (echo x > nodir/missing4) 2>/dev/null; true";
        let out = run_files(way, &dir, &out_file, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{way}: {}", stderr(&out));
        let lines = read_lines(&out_file);
        let uses: Vec<(String, Vec<u8>, Option<Vec<u8>>)> = lines
            .iter()
            .filter(|l| l["event"] == "file" && path_bytes(l, "path").starts_with(dir.as_bytes()))
            .map(|l| {
                let to = l.get("to").map(|_| path_bytes(l, "to")[dir.len()..].to_vec());
                (
                    l["access"].as_str().unwrap().to_string(),
                    path_bytes(l, "path")[dir.len()..].to_vec(),
                    to,
                )
            })
            .filter(|u| u.1 != b"/out.jsonl")
            .collect();
        let has = |access: &str, path: &[u8]| uses.iter().any(|u| u.0 == access && u.1 == path);
        assert!(
            has("create", b"/real/t") && has("write", b"/real/t"),
            "{way}: {uses:?}"
        );
        assert!(has("create", b"/link"), "{way}: {uses:?}");
        assert!(
            has("read", b"/real/t"),
            "through the link and ..: {way}: {uses:?}"
        );
        assert!(has("delete", b"/real/t"), "rm -r: {way}: {uses:?}");
        let odd: &[u8] = b"/n\xffl\nx";
        let odd2: Vec<u8> = [odd, b".2"].concat();
        assert!(has("create", odd) && has("write", odd), "{way}: {uses:?}");
        assert!(
            uses.iter()
                .any(|u| u.0 == "rename" && u.1 == odd && u.2.as_deref() == Some(&odd2[..])),
            "{way}: {uses:?}"
        );
        assert!(has("delete", &odd2), "{way}: {uses:?}");
        // Failed calls are no uses: nothing named missing*, nothing renamed to x.
        assert!(
            uses.iter()
                .all(|u| !u.1.starts_with(b"/missing") && !u.1.starts_with(b"/nodir") && u.1 != b"/x"),
            "{way}: {uses:?}"
        );
        // No directory: neither sub, real nor link's target were files used.
        for d in [&b"/sub"[..], b"/real"] {
            assert!(
                uses.iter().all(|u| u.1 != d),
                "{way}: {} {uses:?}",
                std::ffi::OsStr::from_bytes(d).to_string_lossy()
            );
        }
    }
}

/// A process that opens more files than a process may keep (100,000 uses): the rest are
/// counted as dropped, not held, and proctrace's memory stays bounded (the ptrace backend: each
/// open is two stops of the tracer, read at both).
#[test]
fn a_hundred_thousand_opens_are_capped_and_counted() {
    let dir = tmp("many");
    let dir = dir.trim_end_matches("/many").to_string();
    let n = 100_010;
    // The files exist before: the traced process only reads them.
    let d = format!("{dir}/many");
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..n {
        std::fs::write(format!("{d}/{i}"), "").unwrap();
    }
    let out_file = format!("{dir}/out.jsonl");
    let py = format!("import os\nfor i in range({n}):\n    os.close(os.open('{d}/%d' % i, os.O_RDONLY))\n");
    let out = Command::new("/usr/bin/time")
        .args([
            "-f",
            "maxrss %M",
            PROCTRACE,
            "run",
            "--files",
            "--backend",
            "ptrace",
            "--tree",
            "none",
            "-o",
        ])
        .args([out_file.as_str(), "--", "/usr/bin/python3", "-c", &py])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let lines = read_lines(&out_file);
    let end = lines.last().unwrap();
    // The process keeps its first 100,000 uses (its reads of the files made, and the few its
    // interpreter reads at start), and counts the rest as dropped.
    let uses = lines.iter().filter(|l| l["event"] == "file").count();
    let reads = lines
        .iter()
        .filter(|l| l["event"] == "file" && l["path"].as_str().unwrap().starts_with(&d))
        .count();
    assert_eq!((uses, end["files"].as_u64()), (100_000, Some(100_000)), "{end}");
    assert!(reads > 99_900, "{reads}");
    assert_eq!(end["files_dropped"].as_u64(), Some((n - reads) as u64), "{end}");
    assert_eq!(end["files_lost"], 0, "{end}");
    let kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no maxrss in {err}"));
    // 100,000 paths of ~60 bytes, kept twice, and their lines: tens of MiB at most.
    assert!(kib < 200 << 10, "proctrace's peak RSS {kib} KiB");
    // 100,010 files are not left behind.
    let _ = std::fs::remove_dir_all(&d);
}

/// Under ptrace `--files`, the processes carry a seccomp filter whose file calls need the
/// tracer: one still running when proctrace ends is ended with it (rather than left to fail
/// every open with ENOSYS), and proctrace says so; `--wait-bg` waits for it instead.
#[test]
fn what_outlives_the_command_is_ended_with_proctrace_under_ptrace_files() {
    let dir = tmp("left");
    let dir = dir.trim_end_matches("/left").to_string();
    let pid_file = format!("{dir}/bg.pid");
    let out_file = format!("{dir}/out.jsonl");
    let script = format!("sleep 30 & echo $! > {pid_file}");
    let out = run_files("ptrace", &dir, &out_file, &[], &["sh", "-c", &script]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--files: 1 process of the tree still running is ended with proctrace"),
        "{err}"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGKILLed as proctrace's tracer ended: gone (reaped by proctrace, its subreaper) within
    // moments.
    let t0 = std::time::Instant::now();
    // SAFETY: kill with signal 0 only asks whether the pid exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(t0.elapsed().as_secs() < 10, "pid {pid} still there");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Waited for, it ends by itself, its files listed.
    let script = format!("(sleep 0.3; echo late > {dir}/late) &");
    let out = run_files(
        "ptrace",
        &dir,
        &out_file,
        &["--wait-bg", "5"],
        &["sh", "-c", &script],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("still running"), "{err}");
    let lines = read_lines(&out_file);
    let late = format!("{dir}/late");
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "file" && l["path"] == late.as_str() && l["access"] == "write"),
        "{err}"
    );
}

/// Under ptrace `--files` the tracer thread is favoured (nice −10, as root), and nothing it
/// forks inherits that: the command runs at its own priority.
#[test]
fn the_command_does_not_inherit_the_tracers_priority() {
    let dir = tmp("nice");
    let dir = dir.trim_end_matches("/nice").to_string();
    let out_file = format!("{dir}/out.jsonl");
    let nice_file = format!("{dir}/nice");
    // The tracer thread's nice value, then the command's (its shell, forked by that thread).
    let script = format!(
        "for t in /proc/$PPID/task/*; do [ \"$(cat $t/comm)\" = pt-ptrace ] && cut -d' ' -f19 $t/stat; done > {nice_file}; \
         cut -d' ' -f19 /proc/$$/stat >> {nice_file}"
    );
    let out = run_files("ptrace", &dir, &out_file, &[], &["sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The tests run as root: the tracer at -10, the command at 0.
    assert_eq!(std::fs::read_to_string(&nice_file).unwrap(), "-10\n0\n");
}

/// `--files-ignore PATH` leaves out every use of PATH and below it, relative or absolute, a
/// directory or a file, with `--files-all` too; a sibling whose name only starts the same is
/// kept.
#[test]
fn files_ignore_leaves_out_what_it_names() {
    for way in WAYS {
        let dir = tmp(&format!("ignore-{way}"));
        let dir = dir.trim_end_matches(&format!("/ignore-{way}")).to_string();
        for d in ["gen", "gen2", "src"] {
            std::fs::create_dir_all(format!("{dir}/{d}")).unwrap();
        }
        let out_file = format!("{dir}/out.jsonl");
        let script = "echo a > gen/a; echo b > gen2/b; echo c > src/c; echo d > src/d; \
                      cat gen/a src/c src/d > /dev/null";
        let out = run_files(
            way,
            &dir,
            &out_file,
            &[
                "--files-all",
                "--files-ignore",
                "gen",
                "--files-ignore",
                &format!("{dir}/src/d"),
            ],
            &["sh", "-c", script],
        );
        assert_eq!(out.status.code(), Some(0), "{way}: {}", stderr(&out));
        let paths: BTreeSet<String> = read_lines(&out_file)
            .iter()
            .filter(|l| l["event"] == "file")
            .filter_map(|l| l["path"].as_str()?.strip_prefix(&dir).map(str::to_string))
            .filter(|p| p != "/out.jsonl")
            .collect();
        assert_eq!(
            paths,
            BTreeSet::from(["/gen2/b".to_string(), "/src/c".to_string()]),
            "{way}"
        );
        // --files-all keeps the loader's libraries still.
        assert!(
            read_lines(&out_file)
                .iter()
                .any(|l| l["event"] == "file" && l["path"].as_str().unwrap().contains(".so")),
            "{way}"
        );
    }
    // Without --files it is a usage error, and names what it needs.
    let out = Command::new(PROCTRACE)
        .args(["run", "--files-ignore", "/x", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--files"), "{}", stderr(&out));
}

/// Many processes appending to one new file at once: each is a writer, and exactly one made it
/// (under ptrace, every one of them may find the name absent at its call: only the first to
/// return is said to have made the file).
#[test]
fn racing_writers_make_each_file_once() {
    for way in WAYS {
        let dir = tmp(&format!("race-{way}"));
        let dir = dir.trim_end_matches(&format!("/race-{way}")).to_string();
        let out_file = format!("{dir}/out.jsonl");
        let script =
            "for f in 1 2 3 4 5 6 7 8 9 10; do for j in 1 2 3 4; do echo $j >> f$f & done; done; wait";
        let out = run_files(way, &dir, &out_file, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{way}: {}", stderr(&out));
        let lines = read_lines(&out_file);
        for f in 1..=10 {
            let path = format!("{dir}/f{f}");
            let count = |access: &str| {
                lines
                    .iter()
                    .filter(|l| l["event"] == "file" && l["path"] == path.as_str() && l["access"] == access)
                    .count()
            };
            assert_eq!((count("create"), count("write")), (1, 4), "{way}: {path}");
        }
    }
}
