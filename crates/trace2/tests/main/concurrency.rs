//! Many threads and processes (ours and git's) appending to the same files
//! produce only whole lines.

use std::process::Stdio;

use trace2::reader::{ReadOptions, read_file};

use crate::common::*;

#[test]
fn threads_and_processes_append_whole_lines() {
    let home = TempDir::new("conc");
    let (src, _) = make_repos(home.path());
    let (n, p, e) = (home.join("n"), home.join("p"), home.join("e"));
    let (procs, threads, per) = (4, 4, 150);
    let mut children = Vec::new();
    for _ in 0..procs {
        let mut c = driver(home.path());
        c.args(["901stress", &threads.to_string(), &per.to_string()]);
        c.env("GIT_TRACE2", &n)
            .env("GIT_TRACE2_PERF", &p)
            .env("GIT_TRACE2_EVENT", &e);
        c.env("GIT_TRACE2_BRIEF", "1").env("GIT_TRACE2_PERF_BRIEF", "1");
        children.push(c.stdout(Stdio::null()).spawn().unwrap());
    }
    for _ in 0..4 {
        let mut c = git(home.path());
        c.arg("-C").arg(&src).arg("status");
        c.env("GIT_TRACE2", &n)
            .env("GIT_TRACE2_PERF", &p)
            .env("GIT_TRACE2_EVENT", &e);
        c.env("GIT_TRACE2_BRIEF", "1").env("GIT_TRACE2_PERF_BRIEF", "1");
        children.push(c.stdout(Stdio::null()).spawn().unwrap());
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let (recs, stats) = read_file(&e, ReadOptions::default()).unwrap();
    assert_eq!(stats.bad_lines, 0);
    assert!(!stats.truncated_last_line);
    let data = recs
        .iter()
        .filter(|r| r.event.kind.name() == "data" && r.event.thread.contains(":stress"))
        .count();
    assert_eq!(data, procs * threads * per);
    // normal (brief): our printf lines and git's lines, all whole.
    let normal = read(&n);
    let printf = normal.lines().filter(|l| l.starts_with("line ")).count();
    assert_eq!(printf, procs * threads * per);
    for l in normal.lines() {
        let ok = l.starts_with("line ")
            || [
                "version ",
                "start ",
                "cmd_",
                "exit ",
                "atexit ",
                "def_",
                "worktree ",
                "child_",
                "alias ",
            ]
            .iter()
            .any(|p| l.starts_with(p));
        assert!(ok, "torn normal line: {l:?}");
    }
    // perf (brief): every line has all its columns.
    let perf = read(&p);
    let mut n_data = 0;
    for l in perf.lines() {
        let cols: Vec<&str> = l.splitn(8, " | ").collect();
        assert_eq!(cols.len(), 8, "torn perf line: {l:?}");
        assert!(cols[0].starts_with('d'), "{l:?}");
        if cols[2].trim() == "data" && cols[6].trim() == "stress" {
            assert!(
                cols[7].starts_with("..item:") && cols[7].ends_with(&"x".repeat(300)),
                "{l:?}"
            );
            n_data += 1;
        }
    }
    assert_eq!(n_data, procs * threads * per);
}
