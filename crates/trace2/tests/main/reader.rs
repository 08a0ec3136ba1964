//! The reader on real git streams produced during the test run.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use trace2::reader::socket::{DgramListener, StreamListener};
use trace2::reader::{ReadOptions, Record, group_by_sid, read_file, read_path, rebuild_brief_times};
use trace2::{EventKind, sid};

use crate::common::*;

fn names(recs: &[Record]) -> Vec<&str> {
    recs.iter().map(|r| r.event.kind.name()).collect()
}

#[test]
fn clone_and_fetch_children_nest() {
    let home = TempDir::new("clone");
    let (_src, bare) = make_repos(home.path());
    let ev = home.join("ev");
    let dst = home.join("dst");
    let url = format!("file://{}", bare.display());
    assert!(
        run(git(home.path())
            .args(["clone", "-q", &url])
            .arg(&dst)
            .env("GIT_TRACE2_EVENT", &ev))
        .status
        .success()
    );
    assert!(
        // No auto-maintenance: a detached `gc --auto` could still be writing its session when
        // the file is read (its last line would not be atexit yet).
        run(git(home.path())
            .args(["-c", "maintenance.auto=false", "-c", "gc.autoDetach=false"])
            .arg("-C")
            .arg(&dst)
            .args(["fetch", "-q"])
            .env("GIT_TRACE2_EVENT", &ev))
        .status
        .success()
    );
    let (recs, stats) = read_file(&ev, ReadOptions::default()).unwrap();
    assert_eq!(stats.bad_lines, 0);
    assert!(!stats.truncated_last_line);
    let groups = group_by_sid(&recs);
    assert!(groups.len() >= 4, "{:?}", groups.keys());
    let all: BTreeSet<&str> = groups.keys().copied().collect();
    for sid in &all {
        if let Some(i) = sid.rfind('/') {
            assert!(all.contains(&sid[..i]), "child {sid} without its parent");
        }
        // Every session that finished wrote exit then atexit last.
        let evs = &groups[sid];
        assert_eq!(evs[0].event.kind.name(), "version");
        assert_eq!(evs.last().unwrap().event.kind.name(), "atexit");
    }
    let starts = recs
        .iter()
        .filter(|r| matches!(r.event.kind, EventKind::ChildStart { .. }))
        .count();
    let exits = recs
        .iter()
        .filter(|r| matches!(r.event.kind, EventKind::ChildExit { .. }))
        .count();
    assert!(starts >= 2 && starts == exits, "{starts} {exits}");
    assert!(recs.iter().any(|r| matches!(&r.event.kind, EventKind::ChildStart { child_class, .. } if child_class == "transport/file")));
    assert!(
        recs.iter()
            .any(|r| matches!(&r.event.kind, EventKind::DataJson { value, .. } if value.starts_with('{')))
    );
    assert!(recs.iter().any(|r| sid::depth(&r.event.sid) >= 1));
}

#[test]
fn aliases_failures_and_non_utf8() {
    let home = TempDir::new("alias");
    let (src, _) = make_repos(home.path());
    let ev = home.join("ev");
    let g = |args: &[&OsStr]| {
        let mut c = git(home.path());
        c.arg("-C").arg(&src).args(args).env("GIT_TRACE2_EVENT", &ev);
        run(&mut c)
    };
    assert!(
        g(&[OsStr::new("-c"), OsStr::new("alias.x=!true"), OsStr::new("x")])
            .status
            .success()
    );
    assert!(
        g(&[OsStr::new("-c"), OsStr::new("alias.st=status"), OsStr::new("st")])
            .status
            .success()
    );
    let fail = g(&[
        OsStr::new("rev-parse"),
        OsStr::new("--verify"),
        OsStr::from_bytes(b"no\xffpe"),
    ]);
    assert_eq!(fail.status.code(), Some(128));
    let raw = std::fs::read(&ev).unwrap();
    assert!(
        std::str::from_utf8(&raw).is_err(),
        "git should have written a raw 0xff byte"
    );
    let (recs, _) = read_file(&ev, ReadOptions::default()).unwrap();
    let aliases: Vec<_> = recs
        .iter()
        .filter_map(|r| match &r.event.kind {
            EventKind::Alias { alias, argv } => Some(format!("{alias}->{}", argv.join(" "))),
            _ => None,
        })
        .collect();
    assert_eq!(aliases, ["x->true", "st->status"]);
    assert!(recs.iter().any(|r| matches!(&r.event.kind,
        EventKind::CmdName { hierarchy: Some(h), .. } if h == "_run_dashed_/_run_shell_alias_")));
    assert!(recs.iter().any(
        |r| matches!(&r.event.kind, EventKind::Start { argv } if argv.iter().any(|a| a == "no\u{fffd}pe"))
    ));
    assert!(recs.iter().any(|r| matches!(
        &r.event.kind,
        EventKind::Error {
            msg: Some(_),
            fmt: Some(_)
        }
    )));
    assert!(
        recs.iter()
            .any(|r| matches!(r.event.kind, EventKind::Exit { code: 128 }))
    );
}

#[test]
fn killed_git_and_truncated_lines() {
    let home = TempDir::new("kill");
    let (src, _) = make_repos(home.path());
    let ev = home.join("ev");
    let mut child = git(home.path())
        .arg("-C")
        .arg(&src)
        .args(["cat-file", "--batch"])
        .env("GIT_TRACE2_EVENT", &ev)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !read(&ev).contains("\"cmd_name\"") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    let st = child.wait().unwrap();
    assert!(!st.success());
    let mut text = std::fs::read(&ev).unwrap();
    let (recs, stats) = read_file(&ev, ReadOptions::default()).unwrap();
    assert!(!stats.truncated_last_line);
    assert!(names(&recs).contains(&"cmd_name"));
    assert!(!names(&recs).contains(&"exit"), "a killed git writes no exit");
    // A writer that died mid-line leaves a partial last line.
    text.extend_from_slice(b"{\"event\":\"exit\",\"sid\":\"x");
    std::fs::write(&ev, &text).unwrap();
    let (recs2, stats) = read_file(&ev, ReadOptions::default()).unwrap();
    assert_eq!(recs2.len(), recs.len());
    assert!(stats.truncated_last_line);
    // A malformed line in the middle is an error naming file and line, or
    // counted in lenient mode.
    let mut bad = b"not json\n".to_vec();
    bad.extend_from_slice(&text);
    std::fs::write(&ev, &bad).unwrap();
    let err = read_file(&ev, ReadOptions::default()).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:1: ", ev.display())), "{err}");
    let (recs3, stats) = read_file(
        &ev,
        ReadOptions {
            lenient: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((recs3.len(), stats.bad_lines), (recs.len(), 1));
}

#[test]
fn several_exits_and_events_after_atexit() {
    // The shape of a detached fork (`gc --auto`, `maintenance --detach`):
    // the daemon keeps the SID and writes after the parent's atexit.
    let home = TempDir::new("fork");
    let f = home.join("ev");
    let s = "20260101T000000.000000Z-H00000000-P00000001";
    let lines = [
        format!(r#"{{"event":"version","sid":"{s}","thread":"main","evt":"4","exe":"2.47.3"}}"#),
        format!(r#"{{"event":"exit","sid":"{s}","thread":"main","t_abs":0.1,"code":0}}"#),
        format!(r#"{{"event":"atexit","sid":"{s}","thread":"main","t_abs":0.1,"code":0}}"#),
        format!(r#"{{"event":"region_leave","sid":"{s}","thread":"main","t_rel":0.2,"nesting":1,"category":"gc"}}"#),
        format!(r#"{{"event":"exit","sid":"{s}","thread":"main","t_abs":0.3,"code":0,"new_field":[1]}}"#),
        format!(r#"{{"event":"atexit","sid":"{s}","thread":"main","t_abs":0.3,"code":0}}"#),
        r#"{"code":0,"t_abs":1.5,"event":"command","sid":"repo-20260101T000000Z-P00000002","thread":"MainThread"}"#.to_string(),
    ];
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let (recs, _) = read_file(&f, ReadOptions::default()).unwrap();
    assert_eq!(
        names(&recs),
        [
            "version",
            "exit",
            "atexit",
            "region_leave",
            "exit",
            "atexit",
            "command"
        ]
    );
    assert_eq!(recs[4].extra.len(), 1);
    assert!(matches!(&recs[6].event.kind, EventKind::Other { name } if name == "command"));
}

#[test]
fn directory_targets_and_max_files() {
    let home = TempDir::new("dir");
    let (src, bare) = make_repos(home.path());
    let dir = home.join("traces");
    std::fs::create_dir(&dir).unwrap();
    let url = format!("file://{}", bare.display());
    let o = run(git(home.path())
        .args(["clone", "-q", &url])
        .arg(home.join("d2"))
        .env("GIT_TRACE2_EVENT", &dir));
    assert!(o.status.success());
    let (recs, _) = read_path(&dir, ReadOptions::default()).unwrap();
    let groups = group_by_sid(&recs);
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let comps: BTreeSet<String> = groups
        .keys()
        .map(|s| sid::last_component(s).to_string())
        .collect();
    assert_eq!(
        files, comps,
        "one file per session, named after the SID's last part"
    );

    // maxFiles: git and the driver both divert to the sentinel.
    for (tag, use_git) in [("git", true), ("ours", false)] {
        let d = home.join(&format!("full-{tag}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("a"), "").unwrap();
        std::fs::write(d.join("b"), "").unwrap();
        let mut c = if use_git {
            git(home.path())
        } else {
            driver(home.path())
        };
        if use_git {
            c.arg("-C").arg(&src).arg("version");
        } else {
            c.args(["001return", "0"]);
        }
        c.env("GIT_TRACE2_EVENT", &d).env("GIT_TRACE2_MAX_FILES", "4");
        assert!(run(&mut c).status.success());
        let sentinel = d.join(trace2::dst::DISCARD_SENTINEL);
        let (recs, _) = read_file(&sentinel, ReadOptions::default()).unwrap();
        assert_eq!(
            &names(&recs)[..3],
            ["version", "too_many_files", "start"],
            "{tag}"
        );
        assert_eq!(recs[0].event.file, recs[1].event.file);
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            3,
            "{tag}: nothing else created"
        );
        // With the sentinel present, nothing is written at all.
        let before = std::fs::read(&sentinel).unwrap();
        let mut c = if use_git {
            git(home.path())
        } else {
            driver(home.path())
        };
        c.arg("version")
            .env("GIT_TRACE2_EVENT", &d)
            .env("GIT_TRACE2_MAX_FILES", "4");
        let _ = run(&mut c);
        assert_eq!(std::fs::read(&sentinel).unwrap(), before, "{tag}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3, "{tag}");
    }
}

#[test]
fn af_unix_stream_and_dgram_targets() {
    let home = TempDir::new("sock");
    let (src, _) = make_repos(home.path());
    let path = home.join("s.sock");
    let l = StreamListener::bind(&path).unwrap();
    let mut child = git(home.path())
        .arg("-C")
        .arg(&src)
        .args(["-c", "alias.x=!git version", "x"])
        .env("GIT_TRACE2_EVENT", format!("af_unix:stream:{}", path.display()))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let atexits = |r: &[Record]| {
        r.iter()
            .filter(|r| matches!(r.event.kind, EventKind::Atexit { .. }))
            .count()
    };
    let recs = l.collect(Duration::from_secs(20), |r| atexits(r) >= 2);
    assert!(child.wait().unwrap().success());
    assert_eq!(atexits(&recs), 2, "{:?}", names(&recs));
    assert_eq!(group_by_sid(&recs).len(), 2);

    // Bare `af_unix:` falls back to a datagram socket (EPROTOTYPE), like git.
    let dpath = home.join("d.sock");
    let d = DgramListener::bind(&dpath).unwrap();
    for (prog, target) in [
        ("git", format!("af_unix:{}", dpath.display())),
        ("ours", format!("af_unix:dgram:{}", dpath.display())),
    ] {
        let mut c = if prog == "git" {
            git(home.path())
        } else {
            driver(home.path())
        };
        if prog == "git" {
            c.arg("version");
        } else {
            c.args(["001return", "0"]);
        }
        let o = run(c
            .env("GIT_TRACE2_EVENT", &target)
            .env("GIT_TRACE2_EVENT_BRIEF", "1"));
        assert!(o.status.success());
        let recs = d.collect(Duration::from_secs(10), |r| atexits(r) >= 1);
        assert_eq!(
            recs.first().map(|r| r.event.kind.name()),
            Some("version"),
            "{prog}"
        );
        assert_eq!(recs.last().map(|r| r.event.kind.name()), Some("atexit"), "{prog}");
    }
}

#[test]
fn brief_streams_rebuild_times() {
    let home = TempDir::new("brief");
    let ev = home.join("ev");
    let o = run(git(home.path())
        .arg("version")
        .env("GIT_TRACE2_EVENT", &ev)
        .env("GIT_TRACE2_EVENT_BRIEF", "true"));
    assert!(o.status.success());
    let (mut recs, _) = read_file(&ev, ReadOptions::default()).unwrap();
    let timed: Vec<&str> = recs
        .iter()
        .filter(|r| r.event.time.is_some())
        .map(|r| r.event.kind.name())
        .collect();
    assert_eq!(timed, ["version", "atexit"]);
    assert!(recs.iter().all(|r| r.event.file.is_none()));
    rebuild_brief_times(&mut recs);
    let start = recs.iter().find(|r| r.event.kind.name() == "start").unwrap();
    let v = recs[0].event.time.unwrap();
    let t = start.event.time.unwrap();
    assert!(t >= v && t.as_micros() - v.as_micros() < 1_000_000);
}
