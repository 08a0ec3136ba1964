//! The ring buffer reader across the ring's end: proctrace's object with a one-page ring, this
//! test process's children's execs (argv of varying length) read after each one. Its own test
//! binary, so that no other test's processes write to the small ring.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use bpf::{Btf, Loader, RingBuf};

static OBJECT: &[u8] = include_bytes!("../../../bpf/proctrace.bpf.o");

#[test]
fn records_that_wrap_around_the_rings_end_are_read_whole() {
    let kernel = Btf::kernel().unwrap();
    let page = 4096;
    let mut p = Loader::new(OBJECT)
        .max_entries("scratch", bpf::possible_cpus().unwrap().1)
        .max_entries("events", page)
        .prepare(&kernel)
        .unwrap();
    let _links: Vec<_> = ["on_fork", "on_exec"]
        .iter()
        .map(|n| p.load(n).unwrap().attach().unwrap())
        .collect();
    // This process is traced; its children are put in the traced map at their fork.
    p.take_map("traced")
        .unwrap()
        .update(&std::process::id().to_ne_bytes(), &1u32.to_ne_bytes(), 0)
        .unwrap();
    let lost = p.take_map("lost").unwrap();
    let mut ring = RingBuf::new(p.take_map("events").unwrap()).unwrap();
    let mut seen = Vec::new();
    for i in 0..300 {
        let marker = format!("wrap-{i}-{}", "x".repeat(i * 7 % 200));
        Command::new("/bin/true").arg(&marker).status().unwrap();
        ring.read(|rec| {
            // exec_record: kind 2; in data (offset 96) the filename, the exe, the cwd, then
            // argv; their lengths at 44, 80, 84 and 40.
            if rec.len() >= 96 && rec[..4] == 2u32.to_ne_bytes() {
                let len = |at: usize| u32::from_ne_bytes(rec[at..at + 4].try_into().unwrap()) as usize;
                let start = 96 + len(44) + len(80) + len(84);
                let argv = &rec[start..start + len(40)];
                seen.push(String::from_utf8_lossy(argv).into_owned());
            }
        });
    }
    let mut buf = vec![0u8; lost.lookup_size().unwrap()];
    lost.lookup(&0u32.to_ne_bytes(), &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0), "the ring lost records");
    assert_eq!(seen.len(), 300);
    for (i, argv) in seen.iter().enumerate() {
        let marker = format!("wrap-{i}-{}", "x".repeat(i * 7 % 200));
        assert_eq!(*argv, format!("/bin/true\0{marker}\0"), "exec {i}");
    }
    assert!(ring.wrapped() > 0, "no record wrapped: the test tests nothing");
}
