//! Against the running kernel (as root): its BTF read by this crate against pahole's reading of
//! the same BTF, proctrace's committed object relocated, loaded, attached and read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bpf::btf::kind;
use bpf::core::relo;
use bpf::{Btf, Loader, RingBuf};

/// proctrace's object, as committed.
static OBJECT: &[u8] = include_bytes!("../../../bpf/proctrace.bpf.o");

fn kernel() -> &'static Btf<'static> {
    static K: OnceLock<Btf<'static>> = OnceLock::new();
    K.get_or_init(|| Btf::kernel().expect("the kernel's BTF"))
}

/// `pahole -C STRUCT`: member name → (byte offset, declared type), for the members pahole
/// lists at any depth (a nested one's offset is relative to its anonymous struct or union:
/// [`pahole_offset`] checks these are at 0).
fn pahole(structure: &str) -> Vec<(String, u64, String)> {
    let text = pahole_text(structure);
    let mut v = Vec::new();
    for line in text.lines() {
        // "	pid_t                      tgid;                 /*  1268     4 */"
        let Some((decl, comment)) = line.split_once(';') else {
            continue;
        };
        let words: Vec<&str> = decl.split_whitespace().collect();
        let Some((name, ty)) = words.split_last() else {
            continue;
        };
        let name = name.trim_start_matches('*');
        let name = name.split('[').next().unwrap();
        let nums: Vec<u64> = comment
            .trim()
            .trim_start_matches("/*")
            .trim_end_matches("*/")
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        if let [off, _size] = nums[..] {
            v.push((name.to_string(), off, ty.join(" ")));
        }
    }
    assert!(!v.is_empty(), "pahole said nothing about {structure}: {text}");
    v
}

/// `pahole -C STRUCT`'s output (asked once per struct).
fn pahole_text(structure: &str) -> String {
    static SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    if let Some((_, t)) = SEEN.lock().unwrap().iter().find(|(s, _)| s == structure) {
        return t.clone();
    }
    let out = Command::new("pahole")
        .args(["-C", structure, "/sys/kernel/btf/vmlinux"])
        .output()
        .expect("pahole (apt-get install pahole)");
    assert!(out.status.success(), "pahole -C {structure}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    SEEN.lock().unwrap().push((structure.to_string(), text.clone()));
    text
}

/// The offset of `struct S.a.b.c` by pahole, member by member (a member of type `struct T`
/// leads into T); `None` when a step is not a plain struct (a typedef, a pointer) or an
/// anonymous struct on the way does not start at 0 (pahole's offsets are then relative).
fn pahole_offset(path: &str) -> Option<u64> {
    let path = path.strip_prefix("struct ")?;
    let mut parts = path.split('.');
    let mut st = parts.next()?.to_string();
    let mut total = 0;
    let mut rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let m = rest.remove(0);
        let text = pahole_text(&st);
        // Anonymous structs and unions not at 0 make pahole's nested offsets relative.
        let anon_not_at_0 = text.lines().any(|l| {
            let t = l.trim_start();
            (t.starts_with("} ") || t.starts_with("};")) && t.contains("/*") && !t.contains("/*     0 ")
        });
        let found = pahole(&st).into_iter().find(|(n, ..)| n == m)?;
        if anon_not_at_0 && l_depth(&text, m) > 1 {
            return None;
        }
        total += found.1;
        if rest.is_empty() {
            return Some(total);
        }
        st = found.2.strip_prefix("struct ")?.to_string();
        if st.contains('*') {
            return None;
        }
    }
    Some(total)
}

/// How deeply member `m`'s line is indented in pahole's output (1: a direct member).
fn l_depth(text: &str, m: &str) -> usize {
    text.lines()
        .find(|l| {
            l.split_once(';')
                .and_then(|(d, _)| d.split_whitespace().last())
                .is_some_and(|n| n.trim_start_matches('*').split('[').next() == Some(m))
        })
        .map_or(0, |l| l.chars().take_while(|&c| c == '\t').count())
}

fn member_offset(btf: &Btf<'_>, id: u32, name: &[u8]) -> Option<u64> {
    (0..btf.vlen(id).unwrap()).find_map(|i| {
        let m = btf.member(id, i).unwrap();
        (btf.string(m.name_off).unwrap() == name).then_some(u64::from(m.bit_offset) / 8)
    })
}

#[test]
fn the_kernels_btf_is_read_in_place_and_its_offsets_are_paholes() {
    let k = kernel();
    assert!(k.len() > 10_000, "{} types", k.len());
    // Linux 6.16 maps it; before, it is read.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut v = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let version = (v.next().unwrap(), v.next().unwrap());
    assert_eq!(k.is_mapped(), version >= (6, 16), "{release}");
    let found = k
        .find_by_names(&[
            (b"task_struct", kind::STRUCT),
            (b"btf_trace_sched_process_exec", kind::TYPEDEF),
            (b"no_such_type_anywhere", kind::STRUCT),
        ])
        .unwrap();
    assert_eq!(found[0].len(), 1, "one struct task_struct");
    assert_eq!(found[1].len(), 1, "the exec tracepoint's typedef");
    assert!(found[2].is_empty());
    let task = found[0][0];
    assert_eq!(k.name(task).unwrap(), b"task_struct");
    let size = k.resolve_size(task).unwrap();
    let pa = pahole("task_struct");
    for field in ["pid", "tgid", "real_parent", "exit_code", "comm", "mm", "signal"] {
        let (_, off, _) = pa.iter().find(|(n, ..)| n == field).unwrap();
        assert_eq!(
            member_offset(k, task, field.as_bytes()),
            Some(*off),
            "task_struct.{field}"
        );
    }
    // pahole's closing comment has the size.
    let text = pahole_text("task_struct");
    assert!(text.contains(&format!("/* size: {size},")), "size {size}: {text}");
}

#[test]
fn every_co_re_relocation_of_the_object_resolves_to_paholes_offset() {
    let report = bpf::core_report(OBJECT, kernel()).unwrap();
    assert!(report.len() > 20, "{report:?}");
    assert!(
        report.iter().all(|r| r.value.is_some()),
        "nothing poisoned: {report:#?}"
    );
    let mut checked = Vec::new();
    for r in &report {
        if r.kind != relo::FIELD_BYTE_OFFSET {
            continue;
        }
        // "struct task_struct.tgid", "struct dentry.d_name.len".
        let Some(off) = pahole_offset(&r.field) else {
            continue;
        };
        assert_eq!(r.value, Some(off), "{} in {}", r.field, r.program);
        checked.push(r.field.clone());
    }
    for must in [
        "struct task_struct.tgid",
        "struct task_struct.real_parent",
        // Inside mm_struct's anonymous struct (found through it, as libbpf does).
        "struct mm_struct.arg_start",
        "struct signal_struct.leader",
        "struct linux_binprm.filename",
    ] {
        assert!(
            checked.iter().any(|c| c == must),
            "{must} not checked: {checked:?}"
        );
    }
}

/// Loads each variant of `on_exec` for the whole system in turn (the one for Linux 6.2 and
/// later, and its twin for older kernels), runs a process in a directory of its own, and finds
/// its exec in the ring with the exe and cwd the kernel side walked: /proc's, byte for byte.
#[test]
fn the_object_loads_attaches_and_its_ring_has_the_exec() {
    let (count, top) = bpf::possible_cpus().unwrap();
    assert!(count >= 1 && top >= count);
    let mut p = Loader::new(OBJECT)
        .global("whole_system", &1u32.to_ne_bytes())
        .max_entries("scratch", top)
        .prepare(kernel())
        .unwrap();
    let names: Vec<&str> = p.programs().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "on_fork",
            "on_fork_old",
            "on_exec",
            "on_exec_old",
            "on_exit",
            "on_exit_old",
            "on_rename",
            "on_rename_old"
        ]
    );
    let progs = [p.load("on_exec").unwrap(), p.load("on_exec_old").unwrap()];
    // .rodata is frozen: user space cannot change whole_system any more.
    let rodata = p.take_map(".rodata").unwrap();
    let value = vec![0u8; rodata.def().value_size as usize];
    let err = rodata.update(&0u32.to_ne_bytes(), &value, 0).unwrap_err();
    assert_eq!(err.errno(), Some(libc::EPERM), "{err}");
    // The per-CPU counters: one u64 per possible CPU.
    let lost = p.take_map("lost").unwrap();
    let mut buf = vec![0xffu8; lost.lookup_size().unwrap()];
    assert_eq!(buf.len(), 8 * count as usize);
    lost.lookup(&0u32.to_ne_bytes(), &mut buf).unwrap();
    // A key or value of the wrong size is refused before the kernel is asked.
    assert!(lost.lookup(&0u64.to_ne_bytes(), &mut buf).is_err());
    let traced = p.take_map("traced").unwrap();
    traced
        .update(&7u32.to_ne_bytes(), &1u32.to_ne_bytes(), 0)
        .unwrap();
    let mut ring = RingBuf::new(p.take_map("events").unwrap()).unwrap();
    let exe = std::fs::canonicalize("/bin/true")
        .unwrap()
        .into_os_string()
        .into_encoded_bytes();

    for (variant, prog) in ["on_exec", "on_exec_old"].iter().zip(&progs) {
        let link = prog.attach().unwrap();
        // A directory no other process runs in (the ring has the whole system's execs).
        let dir = std::env::temp_dir().join(format!("bpf-kernel-{}-{variant}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        let cwd = dir.clone().into_os_string().into_encoded_bytes();
        let status = Command::new("/bin/true").current_dir(&dir).status().unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while seen.is_empty() && Instant::now() < deadline {
            ring.read(|rec| {
                // exec_record: kind 2, filename_len at 44, exe_len at 80, cwd_len at 84, walk
                // flags joined into flags at 28; data at 96: the filename, exe, cwd, argv.
                if rec.len() < 96 || rec[..4] != 2u32.to_ne_bytes() {
                    return;
                }
                let u = |at: usize| u32::from_ne_bytes(rec[at..at + 4].try_into().unwrap()) as usize;
                let (f, e, c) = (u(44), u(80), u(84));
                let data = &rec[96..];
                if data.get(f + e..f + e + c) == Some(&cwd[..]) {
                    seen.push((data[..f].to_vec(), data[f..f + e].to_vec(), u(28)));
                }
            });
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(link);
        std::fs::remove_dir(&dir).unwrap();
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let seen: Vec<_> = seen
            .iter()
            .map(|(f, e, flags)| (show(f), show(e), *flags))
            .collect();
        assert_eq!(
            seen,
            [("/bin/true".to_string(), show(&exe), 0)],
            "{variant}: the exec of /bin/true in {}",
            dir.display()
        );
    }
}

/// The verifier's work per program, as the kernel counts it: the variants for Linux 6.2 and
/// later are checked in a fraction of their twins' instructions (the exec's walk once in a
/// bpf_loop callback, not once per step), and load with the object's BTF, which the kernel
/// takes only as the loader rewrites it (an extern function's linkage and `.ksyms`).
#[test]
fn the_variants_for_new_kernels_cost_the_verifier_less() {
    let p = Loader::new(OBJECT)
        .max_entries("scratch", bpf::possible_cpus().unwrap().1)
        .prepare(kernel())
        .unwrap();
    let insns = |name: &str| p.load(name).unwrap().info().unwrap().verified_insns;
    let (fast, old) = (insns("on_exec"), insns("on_exec_old"));
    assert!(fast > 100 && fast * 4 < old, "on_exec {fast}, on_exec_old {old}");
    let (_, stats) = p.load_with_stats("on_fork").unwrap();
    assert!(
        stats.contains("processed ") && stats.contains(" insns"),
        "{stats}"
    );

    let object = bpf::obj::Object::parse(OBJECT).unwrap();
    let raw = bpf::sys::btf_load(object.btf_bytes, None).unwrap_err();
    assert_eq!(
        raw.raw_os_error(),
        Some(libc::EINVAL),
        "the compiler's BTF as it is"
    );
    bpf::sys::btf_load(&object.kernel_btf().unwrap(), None).unwrap();
}

/// A kernel function the kernel lacks (the object's `bpf_rdonly_cast` renamed): the programs
/// that call it are refused by name before the kernel is asked; their twins load.
#[test]
fn a_kernel_function_the_kernel_lacks_is_refused_by_name() {
    let mut object = OBJECT.to_vec();
    let (from, to) = (b"bpf_rdonly_cast\0", b"bpf_rdonly_casX\0");
    let mut n = 0;
    for i in 0..object.len() - from.len() {
        if &object[i..i + from.len()] == from {
            object[i..i + to.len()].copy_from_slice(to);
            n += 1;
        }
    }
    assert!(n >= 2, "in the symbols and the BTF");
    let p = Loader::new(&object)
        .max_entries("scratch", bpf::possible_cpus().unwrap().1)
        .prepare(kernel())
        .unwrap();
    for name in ["on_fork", "on_exec", "on_exit", "on_rename"] {
        let err = p.load(name).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "program {name}: the kernel has no function bpf_rdonly_casX"
            )),
            "{err}"
        );
        p.load(&format!("{name}_old")).unwrap();
    }
}

/// A field the kernel lacks (the object's `tgid` renamed `tgix` in its BTF): the instruction is
/// poisoned, the verifier reaches it, and the error names the field.
#[test]
fn a_field_the_kernel_lacks_is_named_in_the_error() {
    let mut object = OBJECT.to_vec();
    let (from, to) = (b"\0tgid\0", b"\0tgix\0");
    let mut n = 0;
    for i in 0..object.len() - from.len() {
        if &object[i..i + from.len()] == from {
            object[i..i + to.len()].copy_from_slice(to);
            n += 1;
        }
    }
    assert!(n > 0);
    let report = bpf::core_report(&object, kernel()).unwrap();
    assert!(
        report
            .iter()
            .any(|r| r.field == "struct task_struct.tgix" && r.value.is_none()),
        "{report:#?}"
    );
    let p = Loader::new(&object)
        .max_entries("scratch", bpf::possible_cpus().unwrap().1)
        .prepare(kernel())
        .unwrap();
    let err = p.load("on_exec").unwrap_err().to_string();
    assert!(
        err.contains("the running kernel has no struct task_struct.tgix"),
        "{err}"
    );
    assert!(
        err.contains("loading on_exec (tp_btf/sched_process_exec)"),
        "{err}"
    );
    // The verifier's own words, with the object's source line (its BTF was loaded for the log).
    assert!(err.contains("invalid func unknown#195896080"), "{err}");
    assert!(err.contains("tgid"), "the source line: {err}");
}

/// A tracepoint the kernel does not have: the program is refused by name, the others load.
#[test]
fn a_tracepoint_the_kernel_lacks_is_refused_by_name() {
    let mut object = OBJECT.to_vec();
    // Same length: the section name in the ELF string table (and .BTF.ext's), not the function.
    let (from, to) = (b"tp_btf/task_rename\0", b"tp_btf/task_renamX\0");
    for i in 0..object.len() - from.len() {
        if &object[i..i + from.len()] == from {
            object[i..i + to.len()].copy_from_slice(to);
        }
    }
    let p = Loader::new(&object)
        .max_entries("scratch", bpf::possible_cpus().unwrap().1)
        .prepare(kernel())
        .unwrap();
    let err = p.load("on_rename").unwrap_err().to_string();
    assert!(err.contains("no tracepoint task_renamX"), "{err}");
    p.load("on_fork").unwrap();
}
