//! The parser on encoded messages (every field round-trips, at both layouts) and on bytes the
//! kernel sent (tests/fixtures/exits.bin, recorded on 6.18 with the dump example).

use proptest::prelude::*;
use taskstats::{Parsed, Rejected, TaskExit, TaskRecord, encode, parse};

const FAMILY: u16 = 31;

fn version() -> impl Strategy<Value = u16> {
    prop_oneof![Just(8u16), Just(12), Just(13), Just(15), Just(16), Just(17)]
}

fn record(version: u16) -> impl Strategy<Value = TaskRecord> {
    (
        Just(version),
        any::<[u64; 16]>(),
        any::<[u32; 5]>(),
        any::<[u8; 32]>(),
    )
        .prop_map(|(version, u, w, comm)| TaskRecord {
            version,
            exit_code: w[0],
            flag: (w[1] & 0xff) as u8,
            comm,
            uid: w[2],
            pid: w[3],
            ppid: w[4],
            tgid: (version >= 12).then_some(w[3] ^ 1),
            btime_s: if version >= 10 { u[0] } else { u[0] & 0xffff_ffff },
            etime_us: u[1],
            tgetime_us: (version >= 12).then_some(u[2]),
            utime_us: u[3],
            stime_us: u[4],
            minflt: u[5],
            majflt: u[6],
            hiwater_rss_kib: u[7],
            hiwater_vm_kib: u[8],
            read_char: u[9],
            write_char: u[10],
            read_syscalls: u[11],
            write_syscalls: u[12],
            read_bytes: u[13],
            write_bytes: u[14],
            cancelled_write_bytes: u[15],
            nvcsw: u[0] ^ 3,
            nivcsw: u[1] ^ 5,
            cpu_count: u[2] ^ 7,
            cpu_delay_ns: u[3] ^ 9,
            run_ns: u[6] ^ 15,
            blkio_count: u[4] ^ 11,
            blkio_delay_ns: u[5] ^ 13,
        })
}

proptest! {
    #[test]
    fn encoded_exits_round_trip(
        (task, group) in version().prop_flat_map(|v| (record(v), proptest::option::of(record(v)))),
        pid: u32,
        seq: u32,
    ) {
        let size = if task.version >= 15 { 560 } else { 432 };
        let exit = TaskExit { pid, task, group: group.map(|g| (pid ^ 2, g)) };
        let bytes = encode(FAMILY, seq, &exit, size);
        let got: Vec<_> = parse(&bytes, FAMILY).collect();
        prop_assert_eq!(got, vec![Ok(Parsed::Exit(exit))]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
        for _ in parse(&bytes, FAMILY) {}
    }

    #[test]
    fn truncations_are_rejected_not_misread(cut in 0usize..1100) {
        let exit = TaskExit { pid: 9, task: TaskRecord { version: 16, tgid: Some(9), tgetime_us: Some(1), ..TaskRecord::default() }, group: None };
        let mut bytes = encode(FAMILY, 1, &exit, 560);
        let cut = cut.min(bytes.len() - 1);
        bytes.truncate(cut);
        for m in parse(&bytes, FAMILY) {
            prop_assert!(m.is_err() || matches!(m, Ok(Parsed::Other { .. })), "{:?}", m);
        }
    }
}

#[test]
fn short_stats_are_rejected() {
    let exit = TaskExit {
        pid: 9,
        task: TaskRecord {
            version: 16,
            tgid: Some(9),
            tgetime_us: Some(0),
            ..TaskRecord::default()
        },
        group: None,
    };
    // A v16 record cut before ac_tgid: claims a version its bytes do not hold.
    let mut stats = taskstats::encode_record(&exit.task, 560);
    stats.truncate(360);
    assert!(matches!(
        taskstats::record(&stats),
        Err(Rejected::ShortStats {
            version: 16,
            len: 360
        })
    ));
    stats.truncate(287);
    assert!(matches!(
        taskstats::record(&stats),
        Err(Rejected::ShortStats { .. })
    ));
}

/// Datagrams the kernel sent (length-prefixed), recorded while a three-thread python process and
/// `/bin/true` exited; see tests/fixtures/README.md.
#[test]
fn recorded_kernel_datagrams() {
    let raw = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/exits.bin")).unwrap();
    let mut rest = &raw[..];
    let (mut exits, mut groups) = (0, 0);
    let mut python = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_ne_bytes(rest[..4].try_into().unwrap()) as usize;
        let dgram = &rest[4..4 + len];
        rest = &rest[4 + len..];
        for m in parse(dgram, FAMILY) {
            let Parsed::Exit(e) = m.unwrap() else {
                panic!("only exits recorded")
            };
            assert_eq!(e.task.version, 16);
            assert_eq!(e.task.pid, e.pid);
            exits += 1;
            if e.task.comm() == b"python3" {
                python.push(e);
            }
            groups += e.group.is_some() as usize;
        }
    }
    assert!(exits >= 4);
    assert_eq!(python.len(), 3, "three threads");
    let mut acc = taskstats::Accumulator::new(false);
    let p = python
        .iter()
        .find_map(|e| acc.feed(e))
        .expect("complete with the aggregate");
    assert_eq!(p.threads, 3);
    assert!(groups >= 1);
    let (_, agg) = python[2].group.unwrap();
    assert_eq!(agg.utime_us, python.iter().map(|e| e.task.utime_us).sum::<u64>());
    assert!(!p.threads_lost);
}
