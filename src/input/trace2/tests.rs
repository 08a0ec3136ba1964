//! The Trace2 input's unit tests (moved unchanged from the single-file module).

use super::*;
use crate::model::event::Usage;
use crate::model::tracker::BackgroundState;
use crate::model::tracker::{Scope, Tracker, TrackerOptions};

/// proctrace's own cost figures (`data`, category `proctrace`) are read back; other keys and
/// values that are not non-negative numbers are not figures (they stay data).
#[test]
fn cost_figures_are_read_back_and_other_data_is_not() {
    let mut u = Usage::default();
    for (k, v) in [
        ("cpu_user_s", "1.250000"),
        ("cpu_sys_s", "0.003001"),
        ("max_rss_kib", "2048"),
        ("ctx_switches_voluntary", "5"),
        ("ctx_switches_involuntary", "7"),
        ("write_chars", "4096"),
        ("cpu_delay_s", "0.001000"),
    ] {
        let (set, x) = cost_figure(k, v).unwrap_or_else(|| panic!("{k}={v}"));
        set(&mut u, x);
    }
    assert_eq!((u.cpu_user_ns, u.cpu_sys_ns), (1_250_000_000, 3_001_000));
    assert_eq!((u.max_rss_kib, u.write_chars), (2048, 4096));
    assert_eq!((u.vol_ctx_switches, u.invol_ctx_switches), (5, 7));
    assert_eq!((u.cpu_delay_ns, u.io_delay_ns), (Some(1_000_000), None));
    for (k, v) in [
        ("cpu_user_s", "-1"),
        ("cpu_user_s", "NaN"),
        ("cpu_user_s", "inf"),
        ("cpu_user_s", "1e300"),
        ("max_rss_kib", "1.5"),
        ("max_rss_kib", "-3"),
        ("uid", "0"),
        ("", ""),
    ] {
        assert!(cost_figure(k, v).is_none(), "{k}={v}");
    }
}

/// One event line: `{"event":E,"sid":S,"thread":"main","time":T,...rest}`.
fn line(ev: &str, sid: &str, time: Option<&str>, rest: &str) -> String {
    let time = time
        .map(|t| format!(",\"time\":\"2026-11-30T10:00:{t}Z\""))
        .unwrap_or_default();
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!(",{rest}")
    };
    format!("{{\"event\":\"{ev}\",\"sid\":\"{sid}\",\"thread\":\"main\"{time}{rest}}}\n")
}

fn read(text: &[u8], lenient: bool) -> (Trace2Input, Vec<Event>, Result<(), InputError>) {
    let opts = InputOptions {
        lenient,
        tool: None,
        ..Default::default()
    };
    let mut input = Trace2Input::from_reader(text, Path::new("mem"), &opts);
    let mut events = Vec::new();
    let r = input.feed_all(&mut |e| events.push(e));
    (input, events, r)
}

/// pid, ppid, argv of the last exec, exit status, background.
type Row = (Pid, Pid, Vec<String>, Option<ExitStatus>, bool);

/// The events through the tracker, one row per process by pid.
fn model(events: &[Event]) -> Vec<Row> {
    let mut t = Tracker::new(TrackerOptions {
        scope: Scope::All,
        retain_exited: true,
        want_details: true,
    });
    let mut facts = Vec::new();
    for e in events {
        t.apply(e, &mut facts);
    }
    let mut out = Vec::new();
    let mut stack: Vec<_> = t.roots().to_vec();
    while let Some(id) = stack.pop() {
        let r = t.get(id).unwrap();
        out.push((
            r.pid,
            r.ppid,
            r.argv().map(|a| a.to_vec()).unwrap_or_default(),
            r.exit.and_then(|x| x.status),
            r.background.is_some(),
        ));
        stack.extend(r.children.iter().copied());
    }
    out.sort_by_key(|p| p.0);
    out
}

const A: &str = "20261130T100000.000000Z-H0a7c9cdf-P00000064"; // pid 100
const B: &str = "20261130T100000.100000Z-H0a7c9cdf-P000000c8"; // pid 200

#[test]
fn parent_child_by_pid_and_interleaved_lines() {
    let b = format!("{A}/{B}");
    let mut s = String::new();
    s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"2.47.3""#);
    s += &line(
        "start",
        A,
        Some("00.000010"),
        r#""t_abs":0.00001,"argv":["git","fetch"]"#,
    );
    s += &line(
        "child_start",
        A,
        Some("00.050000"),
        r#""child_id":0,"child_class":"?","use_shell":false,"argv":["git","index-pack"]"#,
    );
    s += &line("version", &b, Some("00.100000"), r#""evt":"4","exe":"2.47.3""#);
    s += &line(
        "start",
        &b,
        Some("00.100010"),
        r#""t_abs":0.00001,"argv":["/usr/lib/git-core/git","index-pack"]"#,
    );
    s += &line(
        "region_enter",
        &b,
        Some("00.110000"),
        r#""nesting":1,"category":"pack","label":"write""#,
    );
    s += &line(
        "region_leave",
        &b,
        Some("00.120000"),
        r#""t_rel":0.01,"nesting":1,"category":"pack","label":"write""#,
    );
    s += &line("exit", &b, Some("00.130000"), r#""t_abs":0.03,"code":0"#);
    s += &line("atexit", &b, Some("00.130001"), r#""t_abs":0.03,"code":0"#);
    s += &line(
        "child_exit",
        A,
        Some("00.140000"),
        r#""child_id":0,"pid":200,"code":0,"t_rel":0.09"#,
    );
    // A hook via sh: no session of its own.
    s += &line(
        "child_start",
        A,
        Some("00.150000"),
        r#""child_id":1,"child_class":"hook","hook_name":"post-x","use_shell":false,"argv":[".git/hooks/post-x"]"#,
    );
    s += &line(
        "child_exit",
        A,
        Some("00.160000"),
        r#""child_id":1,"pid":300,"code":3,"t_rel":0.01"#,
    );
    s += &line("exit", A, Some("00.200000"), r#""t_abs":0.2,"code":1"#);
    s += &line("atexit", A, Some("00.200001"), r#""t_abs":0.2,"code":1"#);
    let (input, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    assert_eq!(input.stats().sessions, Some(2));
    assert_eq!(events[0], Event::Root { tgid: 100 });
    let m = model(&events);
    assert_eq!(m.len(), 3, "{m:?}");
    assert_eq!((m[0].0, m[0].1, m[0].3), (100, 0, Some(ExitStatus::Code(1))));
    assert_eq!((m[1].0, m[1].1, m[1].3), (200, 100, Some(ExitStatus::Code(0))));
    assert_eq!(m[1].2, vec!["/usr/lib/git-core/git", "index-pack"]);
    assert_eq!((m[2].0, m[2].1, m[2].3), (300, 100, Some(ExitStatus::Code(3))));
    // The region is on index-pack's process, at its times.
    let region = events
        .iter()
        .find_map(|e| match e {
            Event::Region { tgid, region } => Some((*tgid, region.end - region.ts)),
            _ => None,
        })
        .unwrap();
    assert_eq!(region, (200, 10_000_000));
    // Fed in time order.
    let ts: Vec<u64> = events.iter().filter_map(|e| e.ts()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
}

#[test]
fn second_exit_after_atexit_is_a_detached_fork() {
    let mut s = String::new();
    s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
    s += &line(
        "start",
        A,
        Some("00.000010"),
        r#""t_abs":0.0,"argv":["git","maintenance","run","--detach"]"#,
    );
    s += &line(
        "region_enter",
        A,
        Some("00.010000"),
        r#""nesting":1,"category":"maintenance","label":"detach""#,
    );
    s += &line("exit", A, Some("00.020000"), r#""t_abs":0.02,"code":0"#);
    s += &line("atexit", A, Some("00.020001"), r#""t_abs":0.02,"code":0"#);
    s += &line(
        "region_leave",
        A,
        Some("00.500000"),
        r#""t_rel":0.49,"nesting":1,"category":"maintenance","label":"detach""#,
    );
    s += &line("exit", A, Some("00.600000"), r#""t_abs":0.6,"code":0"#);
    s += &line("atexit", A, Some("00.600001"), r#""t_abs":0.6,"code":0"#);
    let (_, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    let m = model(&events);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!((m[0].0, m[0].4), (100, false));
    let fork = &m[1];
    assert!(fork.0 > PID_MAX_LIMIT, "a stand-in pid: {fork:?}");
    assert_eq!((fork.1, fork.3, fork.4), (100, Some(ExitStatus::Code(0)), true));
    // The region left by the daemon is the daemon's.
    let tgid = events.iter().find_map(|e| match e {
        Event::Region { tgid, .. } => Some(*tgid),
        _ => None,
    });
    assert_eq!(tgid, Some(fork.0));
}

#[test]
fn child_ready_is_a_background_child() {
    let mut s = String::new();
    s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
    s += &line(
        "start",
        A,
        Some("00.000010"),
        r#""t_abs":0.0,"argv":["git","fsmonitor--daemon","start"]"#,
    );
    s += &line(
        "child_start",
        A,
        Some("00.010000"),
        r#""child_id":0,"child_class":"background","use_shell":false,"argv":["git","fsmonitor--daemon","run"]"#,
    );
    s += &line(
        "child_ready",
        A,
        Some("00.120000"),
        r#""child_id":0,"pid":300,"ready":"timeout","t_rel":0.11"#,
    );
    s += &line("exit", A, Some("00.130000"), r#""t_abs":0.13,"code":0"#);
    s += &line("atexit", A, Some("00.130001"), r#""t_abs":0.13,"code":0"#);
    let (_, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    assert!(
        events.contains(&Event::Background {
            ts: 1_796_032_800_120_000_000,
            tgid: 300,
            state: BackgroundState::Timeout,
            report: true
        }),
        "{events:#?}"
    );
    let m = model(&events);
    assert_eq!(m.len(), 2);
    // Still running: git never learns how it ends.
    assert_eq!((m[1].0, m[1].1, m[1].3, m[1].4), (300, 100, None, true));
}

#[test]
fn exec_then_nested_session_is_one_process() {
    let a2 = format!("{A}/20261130T100000.300000Z-H0a7c9cdf-P00000064");
    let mut s = String::new();
    s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
    s += &line(
        "start",
        A,
        Some("00.000010"),
        r#""t_abs":0.0,"argv":["test-tool","trace2","005exec","version"]"#,
    );
    s += &line(
        "exec",
        A,
        Some("00.200000"),
        r#""exec_id":0,"exe":"git","argv":["git","version"]"#,
    );
    s += &line("version", &a2, Some("00.300000"), r#""evt":"4","exe":"x""#);
    s += &line(
        "start",
        &a2,
        Some("00.300010"),
        r#""t_abs":0.0,"argv":["git","version"]"#,
    );
    s += &line("exit", &a2, Some("00.400000"), r#""t_abs":0.1,"code":0"#);
    s += &line("atexit", &a2, Some("00.400001"), r#""t_abs":0.1,"code":0"#);
    let (input, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    assert_eq!(input.stats().sessions, Some(2));
    let m = model(&events);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(
        (m[0].0, m[0].2.clone(), m[0].3),
        (
            100,
            vec!["git".to_string(), "version".into()],
            Some(ExitStatus::Code(0))
        )
    );
    let execs = events.iter().filter(|e| matches!(e, Event::Exec { .. })).count();
    assert_eq!(execs, 2);
}

#[test]
fn truncated_session_stays_running_and_missing_parent_is_a_root() {
    // The parent's file is missing: B's parent SID is not in the input.
    let b = format!("{A}/{B}");
    let mut s = String::new();
    s += &line("version", &b, Some("00.100000"), r#""evt":"4","exe":"x""#);
    s += &line(
        "start",
        &b,
        Some("00.100010"),
        r#""t_abs":0.0,"argv":["git","gc"]"#,
    );
    s += &line(
        "region_enter",
        &b,
        Some("00.110000"),
        r#""nesting":1,"category":"gc","label":"repack""#,
    );
    s += r#"{"event":"region_leave","sid":"x","thr"#;
    let (input, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    assert_eq!(input.stats().truncated, 1);
    let m = model(&events);
    assert_eq!(m.len(), 1);
    assert_eq!((m[0].0, m[0].1, m[0].3), (200, 0, None));
    // The open region is closed at the last time seen.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Region { tgid: 200, .. }))
    );
}

#[test]
fn brief_mode_times_from_version_and_t_abs() {
    let b = format!("{A}/{B}");
    let mut s = String::new();
    s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
    s += &line("start", A, None, r#""t_abs":0.000010,"argv":["git","x"]"#);
    s += &line(
        "child_start",
        A,
        None,
        r#""child_id":0,"child_class":"?","use_shell":false,"argv":["git","y"]"#,
    );
    s += &line("version", &b, Some("00.100000"), r#""evt":"4","exe":"x""#);
    s += &line("start", &b, None, r#""t_abs":0.00001,"argv":["git","y"]"#);
    s += &line("exit", &b, None, r#""t_abs":0.05,"code":2"#);
    s += &line("atexit", &b, Some("00.150001"), r#""t_abs":0.05,"code":2"#);
    s += &line(
        "child_exit",
        A,
        None,
        r#""child_id":0,"pid":200,"code":2,"t_rel":0.2"#,
    );
    s += &line("exit", A, None, r#""t_abs":0.5,"code":2"#);
    s += &line("atexit", A, Some("00.500001"), r#""t_abs":0.5,"code":2"#);
    let (input, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    let t0 = input.header().ts;
    let m = model(&events);
    assert_eq!(m.len(), 2);
    assert_eq!((m[1].0, m[1].1, m[1].3), (200, 100, Some(ExitStatus::Code(2))));
    let exit_of = |pid| {
        events.iter().find_map(|e| match e {
            Event::Exit { ts, tgid, .. } if *tgid == pid => Some(ts - t0),
            _ => None,
        })
    };
    assert_eq!(exit_of(100), Some(500_001_000));
    assert_eq!(exit_of(200), Some(150_001_000));
}

#[test]
fn non_utf8_bad_lines_strict_and_lenient() {
    let mut s = Vec::new();
    s.extend(line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#).bytes());
    s.extend(b"{\"event\":\"start\",\"sid\":\"".iter());
    s.extend(A.bytes());
    s.extend(b"\",\"thread\":\"main\",\"t_abs\":0.1,\"argv\":[\"git\",\"caf\xe9\xff\"]}\n");
    s.extend(b"not json\n");
    s.extend(line("exit", A, Some("00.100000"), r#""t_abs":0.1,"code":0"#).bytes());
    let (_, events, r) = read(&s, false);
    match r {
        Err(InputError::Line { path, line, .. }) => assert_eq!((path, line), (PathBuf::from("mem"), 3)),
        other => panic!("{other:?}"),
    }
    // What came before the bad line was fed: the process, running.
    let m = model(&events);
    assert_eq!((m.len(), m[0].3), (1, None));
    assert!(m[0].2[1].starts_with("caf"));
    let (input, events, r) = read(&s, true);
    r.unwrap();
    assert_eq!(input.stats().skipped_lines, 1);
    assert_eq!(model(&events)[0].3, Some(ExitStatus::Code(0)));
}

/// A whole session (version, start, a region, exit, atexit) of `sid` from `t0` to `t1`
/// seconds (< 60), pid from the SID.
fn session(sid: &str, t0: f64, t1: f64, argv: &str) -> Vec<String> {
    let t = |s: f64| format!("{s:09.6}");
    vec![
        line("version", sid, Some(&t(t0)), r#""evt":"4","exe":"x""#),
        line(
            "start",
            sid,
            Some(&t(t0)),
            &format!(r#""t_abs":0.0,"argv":["git","{argv}"]"#),
        ),
        line(
            "region_enter",
            sid,
            Some(&t(t0 + 0.001)),
            r#""nesting":1,"category":"c","label":"l""#,
        ),
        line(
            "region_leave",
            sid,
            Some(&t(t1 - 0.001)),
            r#""t_rel":0.0,"nesting":1,"category":"c","label":"l""#,
        ),
        line("exit", sid, Some(&t(t1)), r#""t_abs":0.0,"code":0"#),
        line("atexit", sid, Some(&t(t1)), r#""t_abs":0.0,"code":0"#),
    ]
}

#[test]
fn lines_out_of_order_within_the_window_are_fed_in_order() {
    // Session A ends (at 1.5 s) before session B's first line (at 0.5 s) is written: 1 s
    // late, within the window. Then C, 1.9 s after B: A and B are built and fed first.
    let a = "a-P00000064";
    let b = "b-P000000c8";
    let c = "c-P0000012c";
    let mut s = session(a, 1.0, 1.5, "a").concat();
    s += &session(b, 0.5, 1.2, "b").concat();
    s += &session(c, 3.1, 3.2, "c").concat();
    let (input, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    assert_eq!(input.stats().late_lines, 0);
    let ts: Vec<u64> = events.iter().filter_map(|e| e.ts()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{events:#?}");
    let forks: Vec<Pid> = events
        .iter()
        .filter_map(|e| match e {
            Event::Fork { child_tgid, .. } => Some(*child_tgid),
            _ => None,
        })
        .collect();
    assert_eq!(forks, vec![200, 100, 300]);
    let m = model(&events);
    assert_eq!(m.len(), 3);
    assert!(m.iter().all(|p| p.3 == Some(ExitStatus::Code(0))));
}

#[test]
fn a_line_older_than_the_window_is_counted_and_still_read() {
    // A ends at 5 s and C starts at 9 s: A is fed. Then B, from 1 s to 2 s: older than what
    // was fed, beyond the window. Its 6 lines are counted late, and B is still a process
    // with its region.
    let mut s = session("a-P00000064", 4.0, 5.0, "a").concat();
    s += &line(
        "version",
        "c-P0000012c",
        Some("09.000000"),
        r#""evt":"4","exe":"x""#,
    );
    s += &session("b-P000000c8", 1.0, 2.0, "b").concat();
    let (input, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    assert_eq!(input.stats().late_lines, 6);
    let m = model(&events);
    assert_eq!(m.iter().map(|p| p.0).collect::<Vec<_>>(), vec![100, 200, 300]);
    assert_eq!(m[1].3, Some(ExitStatus::Code(0)));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Region { tgid: 200, .. }))
    );
    // Within each process, still in order: B's fork before its region and its exit.
    let pos = |f: &dyn Fn(&Event) -> bool| events.iter().position(f).unwrap();
    let fork = pos(&|e| matches!(e, Event::Fork { child_tgid: 200, .. }));
    let region = pos(&|e| matches!(e, Event::Region { tgid: 200, .. }));
    let exit = pos(&|e| matches!(e, Event::Exit { tgid: 200, .. }));
    assert!(fork < region && region < exit);
}

#[test]
fn sessions_that_ended_are_dropped_while_reading() {
    // 200 sessions one after another, 1 s apart: at most the window's worth are live.
    let mut st = Stream::new(false);
    let mut fed = 0usize;
    let mut most = 0usize;
    for i in 0..200u32 {
        let sid = format!("s{i}-P{:08x}", 1000 + i);
        let t0 = f64::from(i) * 1.0;
        let text = session(&sid, t0 % 60.0, t0 % 60.0 + 0.5, "x").concat();
        // Minutes roll over: shift the whole line's minute.
        let text = text.replace("10:00:", &format!("10:{:02}:", i / 60));
        st.read(text.as_bytes(), Path::new("mem"), &mut |_| fed += 1);
        most = most.max(st.fams.iter().flatten().count());
    }
    st.finish(&mut |_| fed += 1);
    assert!(most <= 4, "{most} families live at once");
    assert_eq!(st.stats.sessions, Some(200));
    // fork, exec, exec details, region, exit per session.
    assert_eq!(fed, 200 * 5);
}

#[test]
fn same_pid_alive_twice_gets_a_stand_in_and_sid_parts_are_opaque() {
    let mut s = String::new();
    for (sid, t) in [
        ("hostA-P00000064", "00.0"),
        ("hostB-P00000064", "00.1"),
        ("{opaque guid}", "00.2"),
    ] {
        s += &line("version", sid, Some(t), r#""evt":"4","exe":"x""#);
        s += &line("start", sid, Some(t), r#""t_abs":0.0,"argv":["git","x"]"#);
    }
    let (_, events, r) = read(s.as_bytes(), false);
    r.unwrap();
    let m = model(&events);
    assert_eq!(m.len(), 3, "{m:?}");
    assert_eq!(m[0].0, 100);
    assert!(m[1].0 > PID_MAX_LIMIT && m[2].0 > PID_MAX_LIMIT && m[1].0 != m[2].0);
    assert!(!events.iter().any(|e| matches!(e, Event::Root { .. })));
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let seed = {
        let mut s = String::new();
        s += &line("version", A, Some("00.000000"), r#""evt":"4","exe":"x""#);
        s += &line("child_start", A, None, r#""child_id":0,"argv":["git","y"]"#);
        s += &line("exit", &format!("{A}/{A}"), None, r#""code":1"#);
        s += &line(
            "child_exit",
            A,
            None,
            r#""child_id":0,"pid":-1,"code":-1,"t_rel":1e300"#,
        );
        s.into_bytes()
    };
    for _ in 0..2000 {
        let mut b = seed.clone();
        for _ in 0..8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % b.len();
            b[i] = (x >> 32) as u8;
        }
        let _ = read(&b, true);
        let _ = read(&b, false);
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const SIDS: [&str; 6] = [
        "a-P00000064",
        "a-P00000064/b-P000000c8",
        "a-P00000064/c-P000000c9",
        "a-P00000064/b-P000000c8/d-P0000012c",
        "a-P00000064/b-P000000c8/e-P000000c8",
        "x/y",
    ];

    /// One arbitrary event line of a small world of sessions.
    fn event_line() -> impl Strategy<Value = String> {
        (0..SIDS.len(), 0..14u8, 0..3i64, 0..400u32, 0..5u8, any::<bool>(), 0..=1u8).prop_map(
            |(s, kind, id, t, pid, brief, thread)| {
                let sid = SIDS[s];
                let time = if brief { None } else { Some(format!("{:02}.{:06}", t / 100, (t % 100) * 10_000)) };
                let pid = [100, 200, 201, 300, -1][pid as usize];
                let thread = ["main", "th01:x"][thread as usize];
                let t_abs = f64::from(t) / 100.0;
                let (ev, rest) = match kind {
                    0 => ("version", r#""evt":"4","exe":"x""#.to_string()),
                    1 => ("start", format!(r#""t_abs":{t_abs},"argv":["git","c{id}"]"#)),
                    2 => ("exit", format!(r#""t_abs":{t_abs},"code":{id}"#)),
                    3 => ("atexit", format!(r#""t_abs":{t_abs},"code":{id}"#)),
                    4 => ("signal", format!(r#""t_abs":{t_abs},"signo":{}"#, 13 + id)),
                    5 => ("child_start", format!(r#""child_id":{id},"child_class":"?","use_shell":{brief},"argv":["git","c{id}"]"#)),
                    6 => ("child_exit", format!(r#""child_id":{id},"pid":{pid},"code":{},"t_rel":0.01"#, 128 + 15 * id)),
                    7 => ("child_ready", format!(r#""child_id":{id},"pid":{pid},"ready":"ready","t_rel":0.01"#)),
                    8 => ("exec", format!(r#""exec_id":{id},"argv":["git","e{id}"]"#)),
                    9 => ("exec_result", format!(r#""exec_id":{id},"code":2"#)),
                    10 => ("region_enter", format!(r#""nesting":{},"category":"c","label":"l{id}""#, id + 1)),
                    11 => ("region_leave", format!(r#""t_rel":0.001,"nesting":{},"category":"c","label":"l{id}""#, id + 1)),
                    12 => ("data", format!(r#""t_abs":{t_abs},"t_rel":0.0,"nesting":1,"category":"c","key":"k","value":"{id}""#)),
                    _ => ("too_many_files", String::new()),
                };
                let time = time.map(|t| format!(",\"time\":\"2026-11-30T10:00:{t}Z\"")).unwrap_or_default();
                let rest = if rest.is_empty() { rest } else { format!(",{rest}") };
                format!("{{\"event\":\"{ev}\",\"sid\":\"{sid}\",\"thread\":\"{thread}\"{time}{rest}}}\n")
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Whatever the streams say, the events make sense to the model: fed in time
        /// order, a process forks before anything else about it, never forks while alive,
        /// and every note lands on a process.
        #[test]
        fn streams_become_consistent_events(lines in proptest::collection::vec(event_line(), 0..40), cut in 0..8usize) {
            let mut text = lines.concat().into_bytes();
            text.truncate(text.len().saturating_sub(cut));
            let (input, events, r) = read(&text, false);
            prop_assert!(r.is_ok());
            // Lines further apart than the window come out of order, and are counted.
            let in_order = input.stats().late_lines == 0;
            let mut last = 0;
            let mut alive = std::collections::HashSet::new();
            let mut seen = std::collections::HashSet::new();
            for e in &events {
                if let Some(ts) = e.ts()
                    && in_order && !matches!(e, Event::Region { .. }) {
                        prop_assert!(ts >= last, "{e:?} before {last}");
                        last = ts;
                    }
                match e {
                    Event::Fork { child_tgid, .. } => {
                        prop_assert!(alive.insert(*child_tgid), "{child_tgid} forked while alive");
                        seen.insert(*child_tgid);
                    }
                    Event::Exit { tgid, .. } => prop_assert!(alive.remove(tgid)),
                    Event::Exec { tgid, .. } | Event::ExecDetails { tgid, .. } | Event::Background { tgid, .. } => {
                        prop_assert!(alive.contains(tgid))
                    }
                    Event::Region { tgid, .. } | Event::Data { tgid, .. } => prop_assert!(seen.contains(tgid)),
                    _ => {}
                }
            }
            let m = model(&events);
            prop_assert_eq!(model_stats(&events).notes_unmatched, 0);
            prop_assert!(m.iter().all(|p| p.0 > 0));
        }

        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = read(&bytes, true);
            let _ = read(&bytes, false);
        }
    }

    fn model_stats(events: &[Event]) -> crate::model::tracker::TrackerStats {
        let mut t = Tracker::new(TrackerOptions {
            scope: Scope::All,
            retain_exited: true,
            want_details: true,
        });
        let mut facts = Vec::new();
        for e in events {
            t.apply(e, &mut facts);
        }
        t.stats()
    }
}
