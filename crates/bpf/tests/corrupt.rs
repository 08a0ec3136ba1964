//! A corrupt or hostile object or BTF gives an error, never a panic or unbounded work: the
//! committed object and the kernel's BTF, cut short and with bytes flipped, read through every
//! accessor and resolved against the kernel.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use bpf::Btf;
use bpf::btf::kind;
use proptest::prelude::*;

static OBJECT: &[u8] = include_bytes!("../../../bpf/proctrace.bpf.o");
/// The linking test's object (functions of .text called and passed as callbacks).
static CALLS: &[u8] = include_bytes!("fixtures/calls.bpf.o");

fn kernel() -> &'static Btf<'static> {
    static K: OnceLock<Btf<'static>> = OnceLock::new();
    K.get_or_init(|| Btf::kernel().expect("the kernel's BTF"))
}

fn kernel_bytes() -> &'static [u8] {
    static K: OnceLock<Vec<u8>> = OnceLock::new();
    K.get_or_init(|| std::fs::read("/sys/kernel/btf/vmlinux").unwrap())
}

/// The object's `.BTF` section's bytes.
fn object_btf() -> &'static [u8] {
    static B: OnceLock<Vec<u8>> = OnceLock::new();
    B.get_or_init(|| bpf::obj::Object::parse(OBJECT).unwrap().btf_bytes.to_vec())
}

/// Every accessor on every type (errors are fine; panics are not).
fn walk(btf: &Btf<'_>, upto: u32) {
    for id in 0..btf.len().min(upto) {
        let _ = btf.name(id);
        let _ = btf.skip_mods(id);
        let _ = btf.resolve_size(id);
        let _ = btf.array(id);
        let _ = btf.int(id);
        let n = btf.vlen(id).unwrap_or(0).min(64);
        for i in 0..n + 1 {
            if let Ok(m) = btf.member(id, i) {
                let _ = btf.string(m.name_off);
            }
            let _ = btf.enumerator(id, i);
            let _ = btf.datasec_entry(id, i);
        }
    }
}

fn flip(data: &[u8], flips: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    let mut v = data.to_vec();
    for &(at, x) in flips {
        if !v.is_empty() {
            let i = at % v.len();
            v[i] ^= x;
        }
    }
    if let Some(c) = cut {
        v.truncate(c % (data.len() + 1));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_damaged_object_is_an_error_not_a_panic(
        flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 0..8),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let o = flip(OBJECT, &flips, cut);
        // Parsing and linking, the BTF made for the kernel, and CO-RE against the real kernel.
        if let Ok(parsed) = bpf::obj::Object::parse(&o) {
            let _ = parsed.kernel_btf();
        }
        let _ = bpf::core_report(&o, kernel());
    }

    #[test]
    fn a_damaged_object_with_calls_is_an_error_not_a_panic(
        flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 0..8),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let o = flip(CALLS, &flips, cut);
        if let Ok(parsed) = bpf::obj::Object::parse(&o) {
            let _ = parsed.kernel_btf();
        }
        let _ = bpf::core_report(&o, kernel());
    }

    #[test]
    fn a_damaged_object_btf_is_an_error_not_a_panic(
        flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 1..16),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let b = flip(object_btf(), &flips, cut);
        if let Ok(btf) = Btf::parse(&b, "test") {
            walk(&btf, u32::MAX);
            let _ = btf.find_by_names(&[(b".maps", kind::DATASEC), (b"task_struct", kind::STRUCT)]);
        }
    }

    #[test]
    fn a_damaged_kernel_btf_is_an_error_not_a_panic(
        // The header and the first types, where a flip changes the most.
        head in proptest::collection::vec((0usize..4096, 1u8..=255), 0..4),
        anywhere in proptest::collection::vec((any::<usize>(), 1u8..=255), 0..4),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let mut all = head;
        all.extend(anywhere);
        let b = flip(kernel_bytes(), &all, cut);
        if let Ok(btf) = Btf::parse(&b, "test") {
            walk(&btf, 2000);
            let _ = btf.find_by_names(&[(b"task_struct", kind::STRUCT)]);
        }
    }
}

/// Typedefs that name each other, and an anonymous member that contains its own struct: bounded.
#[test]
fn cycles_are_errors() {
    // Header (24 bytes), then types, then strings "\0a\0".
    let mut types = Vec::new();
    let ty = |name: u32, k: u32, vlen: u32, st: u32| {
        let mut v = Vec::new();
        v.extend_from_slice(&name.to_le_bytes());
        v.extend_from_slice(&((k << 24) | vlen).to_le_bytes());
        v.extend_from_slice(&st.to_le_bytes());
        v
    };
    // [1] typedef a -> [2]; [2] typedef a -> [1].
    types.extend(ty(1, kind::TYPEDEF, 0, 2));
    types.extend(ty(1, kind::TYPEDEF, 0, 1));
    // [3] struct a { (anon) [3] at 0 }.
    types.extend(ty(1, kind::STRUCT, 1, 8));
    types.extend_from_slice(&0u32.to_le_bytes());
    types.extend_from_slice(&3u32.to_le_bytes());
    types.extend_from_slice(&0u32.to_le_bytes());
    // [4] array of [4], 2 elements.
    types.extend(ty(0, kind::ARRAY, 0, 0));
    types.extend_from_slice(&4u32.to_le_bytes());
    types.extend_from_slice(&4u32.to_le_bytes());
    types.extend_from_slice(&2u32.to_le_bytes());
    let strings = b"\0a\0";
    let mut b = Vec::new();
    b.extend_from_slice(&0xEB9Fu16.to_le_bytes());
    b.extend_from_slice(&[1, 0]);
    b.extend_from_slice(&24u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&(types.len() as u32).to_le_bytes());
    b.extend_from_slice(&(types.len() as u32).to_le_bytes());
    b.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    b.extend_from_slice(&types);
    b.extend_from_slice(strings);
    let btf = Btf::parse(&b, "test").unwrap();
    assert_eq!(btf.len(), 5);
    assert!(btf.skip_mods(1).is_err());
    assert!(btf.resolve_size(1).is_err());
    assert!(btf.resolve_size(4).is_err());
    walk(&btf, u32::MAX);
}

#[test]
fn cpu_lists() {
    assert_eq!(bpf::parse_cpu_list("0"), Some((1, 1)));
    assert_eq!(bpf::parse_cpu_list("0-1"), Some((2, 2)));
    assert_eq!(bpf::parse_cpu_list("0-3,8"), Some((5, 9)));
    assert_eq!(bpf::parse_cpu_list("3-1"), None);
    assert_eq!(bpf::parse_cpu_list(""), None);
    assert_eq!(bpf::parse_cpu_list("0-4294967295"), None);
}
