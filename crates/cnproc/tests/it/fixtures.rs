//! Parsing real recorded datagrams (see `fixtures/README.md`).
use cnproc::{EventKind, ProcEvent, WaitStatus, encode, parse};

/// Splits a length-prefixed capture into datagrams.
pub fn load(name: &str) -> Vec<Vec<u8>> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    while rest.len() >= 4 {
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        out.push(rest[4..4 + len].to_vec());
        rest = &rest[4 + len..];
    }
    assert!(rest.is_empty(), "trailing bytes in {path}");
    out
}

fn events() -> Vec<ProcEvent> {
    load("shapes.cap")
        .iter()
        .map(|d| {
            let mut it = parse(d);
            let ev = it.next().expect("one message").expect("valid");
            assert!(it.next().is_none());
            ev
        })
        .collect()
}

#[test]
fn every_recorded_datagram_is_76_bytes_and_parses() {
    let raw = load("shapes.cap");
    assert_eq!(raw.len(), 34);
    for d in &raw {
        assert_eq!(d.len(), 76);
    }
    let evs = events();
    // Re-encoding yields the kernel's bytes exactly.
    for (d, ev) in raw.iter().zip(&evs) {
        assert_eq!(&encode(ev)[..], &d[..]);
    }
}

#[test]
fn recorded_shapes_decode_as_the_kernel_sent_them() {
    let evs = events();
    // Non-leader exec: leader EXIT first, then the idle thread's EXIT (signal -1, parent 0), then EXEC.
    let i = evs
        .iter()
        .position(|e| {
            matches!(
                e.kind,
                EventKind::Exit {
                    pid: 4187,
                    tgid: 4187,
                    ..
                }
            )
        })
        .unwrap();
    assert!(matches!(
        evs[i + 1].kind,
        EventKind::Exit {
            pid: 4188,
            tgid: 4187,
            exit_signal: -1,
            parent_pid: 0,
            parent_tgid: 0,
            ..
        }
    ));
    assert!(matches!(
        evs[i + 2].kind,
        EventKind::Exec {
            pid: 4187,
            tgid: 4187
        }
    ));
    // Threads are forks with pid != tgid, naming the process's parent.
    assert!(matches!(
        evs[3].kind,
        EventKind::Fork {
            parent_tgid: 4180,
            child_pid: 4188,
            child_tgid: 4187,
            ..
        }
    ));
    // Fork without exec exits 5.
    let code5 = evs.iter().find_map(|e| match e.kind {
        EventKind::Exit {
            pid: 4191, exit_code, ..
        } => Some(WaitStatus::from_raw(exit_code)),
        _ => None,
    });
    assert_eq!(code5, Some(WaitStatus::Exited(5)));
    // SIGSEGV: COREDUMP then EXIT with signal 11, no core bit (RLIMIT_CORE=0).
    let c = evs
        .iter()
        .position(|e| matches!(e.kind, EventKind::Coredump { pid: 4192, .. }))
        .unwrap();
    match evs[c + 1].kind {
        EventKind::Exit {
            pid: 4192, exit_code, ..
        } => {
            assert_eq!(
                WaitStatus::from_raw(exit_code),
                WaitStatus::Signaled {
                    signal: 11,
                    core: false
                }
            );
            assert_eq!(WaitStatus::from_raw(exit_code).shell_code(), 139);
        }
        other => panic!("expected EXIT after COREDUMP, got {other:?}"),
    }
    // setgid then setuid.
    assert!(evs.iter().any(|e| matches!(
        e.kind,
        EventKind::Gid {
            pid: 4193,
            rgid: 65534,
            egid: 65534,
            ..
        }
    )));
    assert!(evs.iter().any(|e| matches!(
        e.kind,
        EventKind::Uid {
            pid: 4193,
            ruid: 65534,
            euid: 65534,
            ..
        }
    )));
    // COMM carries the new name.
    let comm = evs
        .iter()
        .find_map(|e| match e.kind {
            EventKind::Comm { comm, .. } => Some(comm),
            _ => None,
        })
        .unwrap();
    assert_eq!(&comm[..8], b"newname\0");
    // Leader pthread_exit: leader says 0, the last thread carries exit(3).
    assert!(evs.iter().any(|e| matches!(
        e.kind,
        EventKind::Exit {
            pid: 4196,
            tgid: 4195,
            exit_code: 0x300,
            ..
        }
    )));
}

#[test]
fn timestamps_are_unaligned_u64_and_close_in_queue_order() {
    let evs = events();
    for w in evs.windows(2) {
        // Across CPUs order may invert slightly, never by more than a millisecond here.
        assert!(w[1].timestamp_ns + 1_000_000 > w[0].timestamp_ns);
    }
    assert!(evs[0].timestamp_ns > 1_000_000_000);
}

#[test]
fn short_long_and_foreign_messages_are_rejected() {
    use cnproc::Rejected;
    let good = load("shapes.cap").remove(0);
    // Short.
    assert!(matches!(
        parse(&good[..10]).next(),
        Some(Err(Rejected::Short { .. }))
    ));
    // nlmsg_len beyond the datagram.
    assert!(matches!(
        parse(&good[..60]).next(),
        Some(Err(Rejected::BadLength { .. }))
    ));
    // Wrong connector id.
    let mut bad = good.clone();
    bad[16] = 7;
    assert!(matches!(
        parse(&bad).next(),
        Some(Err(Rejected::WrongId { idx: 7, .. }))
    ));
    // Wrong type.
    let mut bad = good.clone();
    bad[4] = 2;
    assert!(matches!(parse(&bad).next(), Some(Err(Rejected::WrongType(2)))));
    // cn_msg.len overruns the message.
    let mut bad = good.clone();
    bad[32] = 200;
    assert!(matches!(
        parse(&bad).next(),
        Some(Err(Rejected::BadPayloadLength { .. }))
    ));
    // cn_msg.len too small.
    let mut bad = good.clone();
    bad[32] = 8;
    bad[33] = 0;
    assert!(matches!(
        parse(&bad).next(),
        Some(Err(Rejected::BadPayloadLength { .. }))
    ));
    // Two messages in one datagram both decode.
    let mut two = good.clone();
    two.extend_from_slice(&good);
    assert_eq!(parse(&two).filter(|r| r.is_ok()).count(), 2);
    // A shorter payload (older kernel) reads as zeros, no panic.
    let mut old = good[..60].to_vec();
    old[0] = 60;
    old[32] = 24;
    let ev = parse(&old).next().unwrap().unwrap();
    assert_eq!(
        ev.timestamp_ns,
        u64::from_ne_bytes(good[44..52].try_into().unwrap())
    );
}
