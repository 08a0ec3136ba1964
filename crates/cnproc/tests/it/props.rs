//! The parser never panics, whatever the bytes, and round-trips what it encodes.
use cnproc::{EventKind, ProcEvent, encode, parse};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()).prop_map(|(a, b, c, d)| EventKind::Fork {
            parent_pid: a,
            parent_tgid: b,
            child_pid: c,
            child_tgid: d
        }),
        (any::<i32>(), any::<i32>()).prop_map(|(pid, tgid)| EventKind::Exec { pid, tgid }),
        (
            any::<i32>(),
            any::<i32>(),
            any::<u32>(),
            any::<i32>(),
            any::<i32>(),
            any::<i32>()
        )
            .prop_map(|(pid, tgid, exit_code, exit_signal, parent_pid, parent_tgid)| {
                EventKind::Exit {
                    pid,
                    tgid,
                    exit_code,
                    exit_signal,
                    parent_pid,
                    parent_tgid,
                }
            }),
        (any::<i32>(), any::<i32>(), any::<[u8; 16]>()).prop_map(|(pid, tgid, comm)| EventKind::Comm {
            pid,
            tgid,
            comm
        }),
        (any::<i32>(), any::<i32>(), any::<u32>(), any::<u32>()).prop_map(|(pid, tgid, ruid, euid)| {
            EventKind::Uid {
                pid,
                tgid,
                ruid,
                euid,
            }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        for item in parse(&bytes) {
            let _ = item;
        }
    }

    #[test]
    fn mutated_real_datagrams_never_panic(pos in 0usize..76, val in any::<u8>(), cut in 0usize..=76) {
        let mut d = crate::fixtures::load("shapes.cap").remove(5);
        d[pos] = val;
        d.truncate(cut);
        for item in parse(&d) {
            let _ = item;
        }
    }

    #[test]
    fn encode_parse_roundtrip(seq in any::<u32>(), cpu in any::<u32>(), ts in any::<u64>(), k in kind()) {
        let ev = ProcEvent { seq, cpu, timestamp_ns: ts, kind: k };
        let bytes = encode(&ev);
        let back = parse(&bytes).next().unwrap().unwrap();
        prop_assert_eq!(back, ev);
    }
}
