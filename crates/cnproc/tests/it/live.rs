//! Against the real kernel: subscription, events of a real child, forged senders, filters, loss.
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use cnproc::{Connector, EventKind, Options, Received, WaitStatus, abi, encode};

/// Receives until `done` says so or `secs` pass.
fn collect(conn: &mut Connector, secs: u64, mut done: impl FnMut(&[Received]) -> bool) -> Vec<Received> {
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        conn.recv(&mut all, 100).unwrap();
        if done(&all) {
            break;
        }
    }
    all
}

#[test]
fn a_real_child_forks_execs_and_exits_with_its_code() {
    let mut conn = Connector::open(&Options::default()).unwrap();
    let child = Command::new("/bin/sh").args(["-c", "exit 7"]).spawn().unwrap();
    let pid = child.id() as i32;
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    let evs = collect(&mut conn, 5, |all| {
        all.iter().any(|r| matches!(r, Received::Event(e) if matches!(e.kind, EventKind::Exit { pid: p, .. } if p == pid)))
    });
    let mine: Vec<EventKind> = evs
        .iter()
        .filter_map(|r| match r {
            Received::Event(e) if e.kind.pid() == Some(pid) => Some(e.kind),
            _ => None,
        })
        .collect();
    assert!(
        matches!(mine[0], EventKind::Fork { child_pid, child_tgid, parent_tgid, .. }
        if child_pid == pid && child_tgid == pid && parent_tgid == std::process::id() as i32)
    );
    assert!(mine.iter().any(|k| matches!(k, EventKind::Exec { .. })));
    match mine.last().unwrap() {
        EventKind::Exit { exit_code, .. } => {
            assert_eq!(WaitStatus::from_raw(*exit_code), WaitStatus::Exited(7))
        }
        other => panic!("last event {other:?}"),
    }
    assert!(conn.has_kernel_filter(), "this kernel (6.6+) acks proc_input");
    assert!(
        conn.receive_buffer() >= 2 * (32 << 20),
        "root gets SO_RCVBUFFORCE"
    );
}

fn port_id(fd: i32) -> u32 {
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
    let rc = unsafe { libc::getsockname(fd, (&mut addr as *mut libc::sockaddr_nl).cast(), &mut len) };
    assert_eq!(rc, 0);
    addr.nl_pid
}

#[test]
fn forged_datagrams_from_user_space_are_rejected_and_counted() {
    let mut conn = Connector::open(&Options::default()).unwrap();
    let target = port_id(conn.as_raw_fd());
    let forger = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM, abi::NETLINK_CONNECTOR) };
    assert!(forger >= 0);
    let forged_pid = 999_999;
    let fake = encode(&cnproc::ProcEvent {
        seq: 1,
        cpu: 0,
        timestamp_ns: 1,
        kind: EventKind::Exec {
            pid: forged_pid,
            tgid: forged_pid,
        },
    });
    let mut sent = 0;
    // Unicast straight to the listener's port, and multicast to the proc group (root may do both).
    for (nl_pid, groups) in [(target, 0u32), (0, abi::CN_PROC_GROUP)] {
        let mut dst: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        dst.nl_family = libc::AF_NETLINK as u16;
        dst.nl_pid = nl_pid;
        dst.nl_groups = groups;
        for _ in 0..3 {
            let rc = unsafe {
                libc::sendto(
                    forger,
                    fake.as_ptr().cast(),
                    fake.len(),
                    0,
                    (&dst as *const libc::sockaddr_nl).cast(),
                    std::mem::size_of::<libc::sockaddr_nl>() as u32,
                )
            };
            assert_eq!(rc, fake.len() as isize, "{}", std::io::Error::last_os_error());
            sent += 1;
        }
    }
    // An oversized one too.
    let big = [0u8; 600];
    let mut dst: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    dst.nl_family = libc::AF_NETLINK as u16;
    dst.nl_pid = target;
    unsafe {
        libc::sendto(
            forger,
            big.as_ptr().cast(),
            big.len(),
            0,
            (&dst as *const libc::sockaddr_nl).cast(),
            12,
        )
    };
    sent += 1;
    unsafe { libc::close(forger) };
    let evs = collect(&mut conn, 1, |_| false);
    let _ = evs.len();
    let st = conn.stats();
    assert!(
        evs.iter()
            .all(|r| !matches!(r, Received::Event(e) if e.kind.pid() == Some(forged_pid))),
        "a forged event got through"
    );
    assert_eq!(st.rejected_sender, sent, "{st:?}");
}

#[test]
fn exec_only_filter_delivers_only_execs() {
    exec_only(cnproc::FilterMethod::Kernel);
}

#[test]
fn bpf_fallback_filter_delivers_only_execs() {
    exec_only(cnproc::FilterMethod::Bpf);
}

fn exec_only(filter: cnproc::FilterMethod) {
    let opts = Options {
        event_mask: Some(abi::what::EXEC),
        filter,
        ..Options::default()
    };
    let mut conn = Connector::open(&opts).unwrap();
    assert!(conn.is_filtered());
    let st = Command::new("/bin/sh")
        .args(["-c", "/bin/true; exit 0"])
        .status()
        .unwrap();
    assert!(st.success());
    let evs = collect(&mut conn, 1, |_| false);
    let kinds: Vec<_> = evs
        .iter()
        .filter_map(|r| match r {
            Received::Event(e) => Some(e.kind),
            _ => None,
        })
        .collect();
    assert!(kinds.iter().any(|k| matches!(k, EventKind::Exec { .. })));
    assert!(
        kinds.iter().all(|k| matches!(k, EventKind::Exec { .. })),
        "{kinds:?}"
    );
    assert!(
        evs.iter().all(|r| !matches!(r, Received::Loss(_))),
        "filtered gaps are not losses"
    );
}

#[test]
fn overflow_is_reported_exactly_as_the_socket_counted_it() {
    // Smallest buffer: a few events fit, the storm overflows while we do not read.
    let opts = Options {
        recv_buffer: 1,
        ..Options::default()
    };
    let mut conn = Connector::open(&opts).unwrap();
    let n = 3000;
    let storm = Command::new("/bin/sh")
        .args([
            "-c",
            &format!("i=0; while [ $i -lt {n} ]; do /bin/true & i=$((i+1)); done; wait"),
        ])
        .spawn()
        .unwrap();
    let root = storm.id() as i32;
    let out = storm.wait_with_output().unwrap();
    assert!(out.status.success());
    std::thread::sleep(Duration::from_millis(200));
    let mut all = collect(&mut conn, 1, |_| false);
    conn.finish(&mut all);
    let st = conn.stats();
    let lost: u64 = all
        .iter()
        .map(|r| if let Received::Loss(l) = r { l.count } else { 0 })
        .sum();
    assert!(st.overflows >= 1, "{st:?}");
    assert!(lost > 0);
    assert_eq!(lost, st.lost_reported);
    assert_eq!(lost, st.socket_drops.max(st.seq_gaps), "{st:?}");
    // Every fork of the storm's children is either received or among the lost.
    let forks_seen = all
        .iter()
        .filter(|r| matches!(r, Received::Event(e) if matches!(e.kind, EventKind::Fork { parent_tgid, child_pid, child_tgid, .. } if parent_tgid == root && child_pid == child_tgid)))
        .count() as u64;
    assert!(forks_seen + lost >= n, "seen {forks_seen} + lost {lost} < {n}");
}
