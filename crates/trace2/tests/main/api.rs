//! The library's own API: background starts, formatting edge cases from
//! real git lines, destinations used on their own.

use std::borrow::Cow;

use trace2::dst::{Destination, DestinationSpec, OpenOptions};
use trace2::reader::{ReadOptions, read_file};
use trace2::{Event, EventKind, FormatOptions, ReadyState, Target, TargetKind, Timestamp};

use crate::common::*;

fn bg(mode: &str) -> (String, Vec<EventKind<'static>>) {
    let home = TempDir::new("bg");
    let ev = home.join("ev");
    let o = run(driver(home.path())
        .args(["900bg", mode])
        .env("GIT_TRACE2_EVENT", &ev));
    assert!(o.status.success());
    let (recs, _) = read_file(&ev, ReadOptions::default()).unwrap();
    let kinds = recs
        .into_iter()
        .filter(|r| r.event.kind.name().starts_with("child_"))
        .map(|r| r.event.kind)
        .collect();
    (String::from_utf8_lossy(&o.stdout).trim().to_string(), kinds)
}

#[test]
fn background_start_reports_ready_timeout_error_or_exit() {
    for (mode, state) in [
        ("ready", ReadyState::Ready),
        ("timeout", ReadyState::Timeout),
        ("error", ReadyState::Error),
    ] {
        let (out, kinds) = bg(mode);
        assert_eq!(out, format!("released {mode}"));
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert!(
            matches!(&kinds[0], EventKind::ChildStart { child_class, .. } if child_class == "background")
        );
        match &kinds[1] {
            EventKind::ChildReady {
                child_id: 0,
                ready,
                t_rel,
                pid,
            } => {
                assert_eq!(*ready, state);
                assert!(*pid > 0);
                if state == ReadyState::Timeout {
                    assert!(*t_rel >= 0.3, "{t_rel}");
                }
            }
            other => panic!("{other:?}"),
        }
    }
    for (mode, code) in [("exit", 3), ("signal", 137)] {
        let (out, kinds) = bg(mode);
        assert_eq!(out, format!("exited {code}"));
        assert!(
            matches!(kinds[1], EventKind::ChildExit { code: c, .. } if c == code),
            "{kinds:?}"
        );
    }
}

fn ev(kind: EventKind<'static>) -> Event<'static> {
    Event {
        time: Some(Timestamp {
            secs: 0,
            micros: 306_334,
        }),
        file: Some(Cow::Borrowed("fetch-pack.c")),
        line: 1712,
        ..Event::new("a/b", "main", kind)
    }
}

fn perf(e: &Event<'_>, brief: bool) -> String {
    let mut v = Vec::new();
    assert!(TargetKind::Perf.format(
        e,
        &FormatOptions {
            brief,
            event_nesting: 2,
            ..FormatOptions::default()
        },
        &mut v
    ));
    String::from_utf8(v).unwrap()
}

#[test]
fn perf_columns_match_a_real_git_line() {
    // From a real git 2.47 trace (`docs/facts/trace2-facts.md` §7), depth 1 here.
    let mut e = ev(EventKind::RegionEnter {
        category: Some("negotiation_v0_v1".into()),
        label: Some("round 1".into()),
        msg: None,
    });
    e.repo = Some(1);
    e.t_abs = Some(0.271005);
    e.nesting = 2;
    let line = perf(&e, false);
    assert_eq!(
        &line[15..],
        " fetch-pack.c:1712            | d1 | main                     | region_enter | r1  |  0.271005 |           | negotiation_ | ..label:round 1"
    );
    // Long file:line keeps its last 25 bytes after "...".
    e.file = Some("builtin/a/very/long/path/to/source.c".into());
    let line = perf(&e, false);
    assert_eq!(&line[16..47], "...ong/path/to/source.c:1712 | ");
    // Columns widen (never truncate) for big repo ids, depths and times.
    e.repo = Some(1234);
    e.t_abs = Some(123.5);
    e.sid = "1/2/3/4/5/6/7/8/9/10/11".into();
    let line = perf(&e, true);
    assert_eq!(
        line,
        "d10 | main                     | region_enter | r1234  | 123.500000 |           | negotiation_ | ..label:round 1"
    );
}

#[test]
fn normal_prefix_and_quoting() {
    let e = ev(EventKind::Start {
        argv: vec![
            "git".into(),
            "it's".into(),
            "a!b".into(),
            "".into(),
            "x\ty".into(),
        ],
    });
    let mut v = Vec::new();
    assert!(TargetKind::Normal.format(&e, &FormatOptions::default(), &mut v));
    let s = String::from_utf8(v).unwrap();
    assert_eq!(&s[15..50], format!("{:<35}", " fetch-pack.c:1712"));
    assert_eq!(&s[50..], "start git 'it'\\''s' 'a'\\!'b' '' 'x\ty'");
    // Normal ignores regions and data.
    let mut v = Vec::new();
    assert!(!TargetKind::Normal.format(&ev(EventKind::ThreadStart), &FormatOptions::default(), &mut v));
    assert!(v.is_empty());
}

#[test]
fn event_nesting_filter_and_brief_time() {
    let mut e = ev(EventKind::Data {
        t_rel: 0.5,
        category: "c".into(),
        key: "k".into(),
        value: "v".into(),
    });
    e.nesting = 3;
    let mut v = Vec::new();
    assert!(!TargetKind::Event.format(&e, &FormatOptions::default(), &mut v));
    assert!(TargetKind::Event.format(
        &e,
        &FormatOptions {
            brief: true,
            event_nesting: 3,
            ..FormatOptions::default()
        },
        &mut v
    ));
    assert_eq!(
        String::from_utf8(v).unwrap(),
        r#"{"event":"data","sid":"a/b","thread":"main","t_abs":0.000000,"t_rel":0.500000,"nesting":3,"category":"c","key":"k","value":"v"}"#
    );
    let mut v = Vec::new();
    assert!(TargetKind::Event.format(
        &ev(EventKind::Atexit { code: 0 }),
        &FormatOptions {
            brief: true,
            event_nesting: 2,
            ..FormatOptions::default()
        },
        &mut v
    ));
    assert!(
        String::from_utf8(v)
            .unwrap()
            .contains(r#""time":"1970-01-01T00:00:00.306334Z""#)
    );
}

#[test]
fn destinations_on_their_own() {
    let home = TempDir::new("dst");
    let f = home.join("out");
    let spec = DestinationSpec::parse(f.to_str().unwrap());
    assert_eq!(spec, DestinationSpec::File(f.clone()));
    let d = Destination::open(&spec, &OpenOptions::default()).unwrap();
    d.write_line(b"one").unwrap();
    let mut buf = b"two\n".to_vec();
    d.write_line_buf(&mut buf).unwrap();
    assert_eq!(read(&f), "one\ntwo\n");
    // A directory destination names its file after the SID component.
    let opts = OpenOptions {
        file_name: "comp".into(),
        ..OpenOptions::default()
    };
    let spec = DestinationSpec::parse(home.path().to_str().unwrap());
    let a = Destination::open(&spec, &opts).unwrap();
    let b = Destination::open(&spec, &opts).unwrap();
    assert!(a.description().ends_with("/comp") && b.description().ends_with("/comp.1"));
    // A write error disables the destination.
    let (r, w) = std::os::unix::net::UnixStream::pair().unwrap();
    drop(r);
    let d = Destination::from_fd(std::os::fd::AsRawFd::as_raw_fd(&w), false);
    assert!(d.write_line(b"x").is_err());
    assert!(d.is_disabled());
    // Values git rejects.
    assert!(
        Destination::parse_and_open("relative/path", &OpenOptions::default())
            .unwrap_err()
            .always_warn()
    );
    let o = run(driver(home.path())
        .args(["001return", "0"])
        .env("GIT_TRACE2_EVENT", "yes"));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("warning: trace2: unknown value for 'GIT_TRACE2_EVENT': 'yes'")
    );
    let g = run(git(home.path()).arg("version").env("GIT_TRACE2_EVENT", "yes"));
    assert!(
        String::from_utf8_lossy(&g.stderr)
            .contains("warning: trace2: unknown value for 'GIT_TRACE2_EVENT': 'yes'")
    );
}
