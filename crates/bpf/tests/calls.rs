//! The loader's linking, on a small object made for it (fixtures/calls.bpf.c): two programs in
//! one section, static functions of .text called (one by another, with no relocation: a call
//! within .text) and passed to bpf_loop as a callback, with map references, a global and CO-RE
//! relocations inside them. Checked as linked, then loaded into the running kernel (as root),
//! which checks the calls, the func_info and the line_info, and run: what each program wrote is
//! what it should have computed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use bpf::obj::{Object, PSEUDO_CALL, PSEUDO_FUNC, Target};
use bpf::{Btf, Loader};

static OBJECT: &[u8] = include_bytes!("fixtures/calls.bpf.o");

const INSN: usize = 8;

/// Every call of a BPF function and every function address in `insns`: (instruction, target).
fn pseudo_refs(insns: &[u8]) -> Vec<(usize, usize, u8)> {
    let mut v = Vec::new();
    for (i, insn) in insns.chunks_exact(INSN).enumerate() {
        let src = insn[1] >> 4;
        let imm = i32::from_le_bytes([insn[4], insn[5], insn[6], insn[7]]);
        let is_call = insn[0] == 0x85 && src == PSEUDO_CALL;
        let is_func = insn[0] == 0x18 && src == PSEUDO_FUNC;
        if is_call || is_func {
            v.push((i, (i as i64 + 1 + i64::from(imm)) as usize, src));
        }
    }
    v
}

#[test]
fn each_program_is_linked_with_the_functions_it_reaches() {
    let o = Object::parse(OBJECT).unwrap();
    let names: Vec<(&str, &str)> = o
        .programs
        .iter()
        .map(|p| (p.name.as_str(), p.section.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("calls", "tp_btf/sched_process_exec"),
            ("calls_too", "tp_btf/sched_process_exec")
        ]
    );
    let calls = &o.programs[0];
    let subs: Vec<&str> = calls.subprograms.iter().map(|(n, _)| n.as_str()).collect();
    // In the order reached: its own call, its callback, its own call of put (which
    // twice_tgid calls too: appended once).
    assert_eq!(subs, ["twice_tgid", "add_index", "put"]);
    let start = |name: &str| calls.subprograms.iter().find(|(n, _)| n == name).unwrap().1;
    let refs = pseudo_refs(&calls.insns);
    let targets: Vec<(usize, u8)> = refs.iter().map(|&(_, t, s)| (t, s)).collect();
    assert_eq!(
        targets,
        [
            (start("twice_tgid"), PSEUDO_CALL),
            (start("add_index"), PSEUDO_FUNC),
            (start("put"), PSEUDO_CALL),
            // twice_tgid's call of put, within .text in the object (no relocation there).
            (start("put"), PSEUDO_CALL),
        ]
    );
    assert!(refs[3].0 >= start("twice_tgid") && refs[3].0 < start("add_index"));
    // The map and the global put reads: relocated where put now is.
    let put = start("put");
    let in_put: Vec<Target> = calls
        .relocations
        .iter()
        .filter(|(i, _)| *i >= put)
        .map(|&(_, t)| t)
        .collect();
    assert!(
        matches!(in_put[..], [Target::Map(_), Target::Data(..)]),
        "{in_put:?}"
    );
    // The CO-RE relocation of twice_tgid's read, where it now is.
    let tw = start("twice_tgid") * INSN;
    assert!(
        calls
            .core_relos
            .iter()
            .any(|r| (tw..start("add_index") * INSN).contains(&(r.insn_off as usize))),
        "{:?}",
        calls.core_relos
    );
    // One func_info per function, at its start; line info at each start too.
    let funcs: Vec<usize> = calls.func_info.iter().map(|r| r[0] as usize / INSN).collect();
    assert_eq!(funcs, [0, start("twice_tgid"), start("add_index"), put]);
    for s in funcs {
        assert!(
            calls.line_info.iter().any(|r| r[0] as usize == s * INSN),
            "line info at {s}"
        );
    }
    // The other program of the section: its own instructions, and put.
    let too = &o.programs[1];
    let subs: Vec<&str> = too.subprograms.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(subs, ["put"]);
    assert_eq!(too.func_info.len(), 2);
}

#[test]
fn linked_programs_load_and_compute_what_they_should() {
    let kernel = Btf::kernel().unwrap();
    let me = std::process::id();
    let mut p = Loader::new(OBJECT)
        .global("parent_tgid", &me.to_ne_bytes())
        .global("bias", &1000u64.to_ne_bytes())
        .prepare(&kernel)
        .unwrap();
    let a = p.load("calls").unwrap();
    let b = p.load("calls_too").unwrap();
    // The kernel counted the functions' instructions as checked.
    assert!(a.info().unwrap().verified_insns > 20);
    let links = [a.attach().unwrap(), b.attach().unwrap()];
    let child = Command::new("/bin/true").spawn().unwrap();
    let pid = child.id();
    assert!(child.wait_with_output().unwrap().status.success());
    drop(links);
    let out = p.take_map("out").unwrap();
    let get = |k: u32| {
        let mut v = [0u8; 8];
        out.lookup(&k.to_ne_bytes(), &mut v).unwrap();
        u64::from_ne_bytes(v)
    };
    assert_eq!(get(1), u64::from(pid) * 2 + 1000, "twice_tgid, through put");
    assert_eq!(get(2), 45 + 1000, "bpf_loop's callback summed 0..10");
    assert_eq!(get(3), 7 + 1000, "the section's second program");
}
