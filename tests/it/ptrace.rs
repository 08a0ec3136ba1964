//! The ptrace backend where it is needed and where it is hard: sandboxes that refuse the
//! connector, job control, signals, concurrency, tracers inside the tree, and strace as ground
//! truth.
use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// A world-writable scratch dir (for runs as nobody), with a copy of the binary nobody can run.
fn nobody_dir() -> (String, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = format!("/tmp/proctrace-nobody-{}-{}", std::process::id(), rand_suffix());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = format!("{dir}/proctrace");
    std::fs::copy(PROCTRACE, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

fn rand_suffix() -> u32 {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Checks a run of `sh -c "ls / >/dev/null; /bin/echo hi; exit 3"`: every process, every argv.
fn assert_complete_small_run(lines: &[Value]) {
    assert_eq!(lines[0]["backend"], "ptrace", "{:?}", lines[0]);
    let end = lines.last().unwrap();
    assert_eq!(end["code"], 3);
    assert_eq!(end["backend"], "ptrace");
    assert_eq!(end["argv_reader"], "exec-stop");
    assert_eq!(end["execs"], 3);
    assert_eq!(end["execs_with_argv"], 3);
    let ps = processes(lines);
    let root = find(&ps, &["sh", "-c"]);
    assert_eq!(find(&ps, &["ls", "/"]).ppid, root.pid);
    assert_eq!(find(&ps, &["/bin/echo", "hi"]).exits[0]["code"], 0);
}

const SMALL: &str = "ls / >/dev/null; /bin/echo hi; exit 3";

#[test]
fn auto_picks_ptrace_in_a_private_network_namespace() {
    let out_file = tmp("netns.jsonl");
    // Under a seccomp filter refusing bpf() too (as Docker's default profile does): eBPF works
    // in a private network namespace as root.
    let out = Command::new("unshare")
        .args([
            "--net",
            nobpf(),
            PROCTRACE,
            "run",
            "-o",
            &out_file,
            "--",
            "sh",
            "-c",
            SMALL,
        ])
        .output()
        .expect("unshare (util-linux)");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("tracing with ptrace"),
        "one line says so: {}",
        stderr(&out)
    );
    assert_complete_small_run(&read_lines(&out_file));
}

#[test]
fn auto_picks_ptrace_in_a_user_namespace() {
    let out_file = tmp("userns.jsonl");
    let out = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--net",
            PROCTRACE,
            "run",
            "-o",
            &out_file,
            "--",
            "sh",
            "-c",
            SMALL,
        ])
        .output()
        .expect("unshare (util-linux)");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_complete_small_run(&read_lines(&out_file));
}

#[test]
fn unprivileged_as_nobody_in_a_sandbox() {
    let (dir, bin) = nobody_dir();
    let out_file = format!("{dir}/out.jsonl");
    // nobody in its own user and network namespace: the connector is refused, ptrace works.
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "unshare",
            "--user",
            "--net",
        ])
        .args([bin.as_str(), "run", "-o", &out_file, "--", "sh", "-c", SMALL])
        .current_dir("/")
        .output()
        .expect("setpriv (util-linux)");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_complete_small_run(&read_lines(&out_file));
    // And nobody asking for ptrace outright.
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args([
            bin.as_str(),
            "run",
            "--backend",
            "ptrace",
            "-o",
            &out_file,
            "--",
            "sh",
            "-c",
            SMALL,
        ])
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_complete_small_run(&read_lines(&out_file));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_setuid_program_traced_unprivileged_gets_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, bin) = nobody_dir();
    let suid = format!("{dir}/suid_id");
    std::fs::copy("/usr/bin/id", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args([
            bin.as_str(),
            "run",
            "--backend",
            "ptrace",
            "--tree",
            "none",
            "--",
            &suid,
            "-u",
        ])
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // As under strace: the exec succeeds without the privilege, and we say so.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "65534");
    assert!(stderr(&out).contains("setuid"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tracer_inside_the_tree_is_explained_not_hung() {
    let start = Instant::now();
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", "ptrace", "--tree", "none", "--"])
        .args(["strace", "-qq", "-o", "/dev/null", "/bin/true"])
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_ne!(out.status.code(), Some(0), "strace cannot ptrace under ptrace");
    assert!(stderr(&out).contains("--backend connector"), "{}", stderr(&out));
}

#[test]
fn job_control_stops_and_continues_without_hanging() {
    // A stopped background job really stops (T, or t while we listen) and resumes on SIGCONT.
    // The stop takes effect when the job next runs: the state is polled (for up to 5 s).
    let script = "sleep 0.5 & p=$!; kill -STOP $p; i=0; \
                  while s=$(sed 's/.*) //' /proc/$p/stat | cut -c1); [ $s != T ] && [ $s != t ] && [ $i -lt 500 ]; \
                  do i=$((i+1)); sleep 0.01; done; kill -CONT $p; wait $p; echo $s";
    let start = Instant::now();
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            "ptrace",
            "--tree",
            "none",
            "--",
            "sh",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "no hang");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(state == "T" || state == "t", "stopped while stopped: {state}");
}

#[test]
fn signals_reach_the_tracee_untouched() {
    let (out, lines) = run_on(
        "ptrace",
        &[],
        &["sh", "-c", "trap 'exit 7' USR1; kill -USR1 $$; sleep 5"],
    );
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert_eq!(lines.last().unwrap()["code"], 7);
    let sh = shapes();
    let (out, lines) = run_on("ptrace", &[], &[sh, "segv"]);
    assert_eq!(out.status.code(), Some(139), "{}", stderr(&out));
    let exit = lines.iter().find(|l| l["event"] == "exit").unwrap();
    assert_eq!(exit["signal"], 11);
}

#[test]
fn concurrent_spawners_and_threads_are_all_linked() {
    // Stops arrive out of order here: children and threads stop before their parent's event.
    let sh = shapes();
    let script = format!(
        "for i in 1 2 3 4; do {sh} spawn 150 /bin/true & done; \
         {sh} threads-then-leader & {sh} leader-exits-first & {sh} thread-exec /bin/true & wait"
    );
    let (out, lines) = run_on("ptrace", &["--tree", "none"], &["sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ps = processes(&lines);
    let spawners: Vec<i64> = ps
        .values()
        .filter(|p| {
            p.execs
                .iter()
                .flatten()
                .any(|a| a.get(1).is_some_and(|m| m == "spawn"))
        })
        .map(|p| p.pid)
        .collect();
    assert_eq!(spawners.len(), 4);
    let kids = lines
        .iter()
        .filter(|l| {
            l["event"] == "exec"
                && l["argv"] == serde_json::json!(["/bin/true"])
                && spawners.contains(&l["ppid"].as_i64().unwrap())
        })
        .count();
    assert_eq!(kids, 600, "every child exec'd under its spawner, with argv");
    let end = lines.last().unwrap();
    assert_eq!(end["execs"], end["execs_with_argv"]);
    assert_eq!(end["processes"], end["exits"], "every process ended: {end}");
    // Threads are never processes.
    let te = find(&ps, &[sh, "thread-exec"]);
    assert_eq!(te.execs.len(), 2);
    assert!(ps.values().all(|p| p.ppid != te.pid));
    let lef = find(&ps, &[sh, "leader-exits-first"]);
    assert_eq!(lef.exits[0]["code"], 3, "the status of the last thread");
}

/// One process as a canonical string: what it ran (argv of its last exec, or `fork`), how it
/// ended, and its children, sorted. Two runs of a deterministic workload give the same string.
fn canon(
    pid: i64,
    argv: &HashMap<i64, String>,
    status: &HashMap<i64, String>,
    kids: &HashMap<i64, Vec<i64>>,
) -> String {
    let mut c: Vec<String> = kids
        .get(&pid)
        .map(|k| k.iter().map(|&k| canon(k, argv, status, kids)).collect())
        .unwrap_or_default();
    c.sort();
    format!(
        "{}[{}]({})",
        argv.get(&pid).map_or("fork", String::as_str),
        status.get(&pid).map_or("?", String::as_str),
        c.join(",")
    )
}

/// The canonical tree strace saw.
fn strace_tree(path: &str) -> String {
    let log = StraceLog::read(path);
    let argv = log
        .argv
        .iter()
        .filter_map(|(p, a)| Some((*p, a.last()?.clone())))
        .collect();
    canon(log.first, &argv, &log.status, &log.children)
}

/// The canonical tree in proctrace's JSON Lines.
fn proctrace_tree(lines: &[Value]) -> String {
    let (mut argv, mut status, mut kids) = (HashMap::new(), HashMap::new(), HashMap::<i64, Vec<i64>>::new());
    let mut root = None;
    for l in lines {
        let Some(pid) = l["pid"].as_i64() else { continue };
        match l["event"].as_str().unwrap() {
            "fork" => {
                if root.is_none() {
                    root = Some(pid);
                } else {
                    kids.entry(l["ppid"].as_i64().unwrap()).or_default().push(pid);
                }
            }
            "exec" => {
                let a: Vec<&str> = l["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w.as_str().unwrap())
                    .collect();
                argv.insert(pid, a.join(" "));
            }
            "exit" => {
                let s = match (l["code"].as_i64(), l["signal"].as_i64()) {
                    (Some(c), _) => format!("code {c}"),
                    (_, Some(s)) => signame(s),
                    _ => "unknown".into(),
                };
                status.insert(pid, s);
            }
            _ => {}
        }
    }
    canon(root.unwrap(), &argv, &status, &kids)
}

#[test]
fn the_tree_agrees_with_strace() {
    // A deterministic workload with every spawn style: fork (shapes), vfork (dash), posix_spawn
    // (Python's subprocess), threads, a non-leader exec, a signal death, a fork without exec.
    let sh = shapes();
    let py = tmp("spawn.py");
    std::fs::write(
        &py,
        "import subprocess\nfor i in range(3):\n    subprocess.run(['/bin/true', str(i)])\n",
    )
    .unwrap();
    let script = format!(
        "for i in 1 2 3; do /bin/true $i; done; {sh} spawn 20 /bin/echo x >/dev/null; python3 {py}; \
         {sh} threads-then-leader; {sh} leader-exits-first; {sh} thread-exec /bin/true; \
         sh -c 'kill -TERM $$'; {sh} fork-no-exec; exit 4"
    );
    let strace_out = tmp("truth.strace");
    let st = Command::new("strace")
        .args(STRACE_ARGS)
        .args(["-o", &strace_out, "sh", "-c", &script])
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(4));
    let truth = strace_tree(&strace_out);
    let (out, lines) = run_on("ptrace", &["--tree", "none"], &["sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(proctrace_tree(&lines), truth);
    let counts: BTreeMap<&str, usize> = lines.iter().fold(BTreeMap::new(), |mut m, l| {
        *m.entry(l["event"].as_str().unwrap()).or_default() += 1;
        m
    });
    assert!(counts["exec"] > 30, "{counts:?}");
}

#[test]
fn a_make_build_in_a_container_like_sandbox_is_complete() {
    // The "done means": `unshare --net proctrace run -- make -j2` in a small C project
    // gives the whole tree, every argv, and make's status.
    let dir = tmp("cproject");
    let dir = std::path::Path::new(&dir).with_extension("d");
    std::fs::create_dir_all(&dir).unwrap();
    let mut objs = Vec::new();
    for i in 0..4 {
        std::fs::write(
            dir.join(format!("f{i}.c")),
            format!("int f{i}(int x) {{ return x + {i}; }}\n"),
        )
        .unwrap();
        objs.push(format!("f{i}.o"));
    }
    std::fs::write(
        dir.join("main.c"),
        "int f0(int);int f1(int);int f2(int);int f3(int);\nint main(void){return f0(0)+f1(0)+f2(0)+f3(0)-6;}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("Makefile"),
        format!(
            "prog: main.o {objs}\n\tcc -o $@ $^\n%.o: %.c\n\tcc -O1 -c -o $@ $<\ncheck: prog\n\t./prog\n",
            objs = objs.join(" ")
        ),
    )
    .unwrap();
    let out_file = tmp("make.jsonl");
    // Container-like: a private network namespace and a seccomp filter refusing bpf().
    let out = Command::new("unshare")
        .args([
            "--net",
            nobpf(),
            PROCTRACE,
            "run",
            "-o",
            &out_file,
            "--",
            "make",
            "-s",
            "-j2",
            "check",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let end = lines.last().unwrap();
    assert_eq!(end["backend"], "ptrace");
    assert_eq!(end["execs"], end["execs_with_argv"], "every argv: {end}");
    assert_eq!(end["processes"], end["exits"]);
    let ps = processes(&lines);
    let compiles = ps
        .values()
        .filter(|p| {
            p.execs
                .iter()
                .flatten()
                .any(|a| a.first().is_some_and(|c| c == "cc") && a.iter().any(|w| w == "-c"))
        })
        .count();
    assert_eq!(compiles, 5, "one cc -c per source file");
    assert!(
        ps.values()
            .any(|p| p.execs.iter().flatten().any(|a| a == &["./prog"]))
    );
    let err = stderr(&out);
    assert!(err.contains("make -s -j2 check"), "the tree: {err}");
}

/// The exec stop's `/proc` reads go by path (`readlink /proc/PID/exe` and `/proc/PID/cwd`, no
/// directory handle): a program whose file was deleted before it exec'd (it runs through its
/// descriptor) and a working directory named with a space, a line break and a byte that is not
/// UTF-8 come out exactly as the kernel gives them, with the process's uid, exe and cwd of every
/// other exec unchanged.
#[test]
fn exe_deleted_before_its_exec_and_an_odd_cwd_are_read_exactly() {
    use base64::Engine as _;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut dir = tmp("odd").into_bytes();
    dir.extend_from_slice(b" a\nb\xff");
    let dir = std::path::PathBuf::from(OsStr::from_bytes(&dir));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy("/bin/true", dir.join("prog")).unwrap();
    let out_file = tmp("deleted.jsonl");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            "ptrace",
            "--tree",
            "none",
            "-q",
            "-o",
            &out_file,
            "--",
        ])
        .args([
            "/bin/sh",
            "-c",
            "exec 3< ./prog && rm ./prog && exec /proc/self/fd/3 x",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    // A field's exact bytes: its `_base64` twin when it has one, else the string.
    let bytes = |l: &Value, k: &str| match l[format!("{k}_base64")].as_str() {
        Some(b) => b64.decode(b).unwrap(),
        None => l[k]
            .as_str()
            .unwrap_or_else(|| panic!("no {k}: {l}"))
            .as_bytes()
            .to_vec(),
    };
    // sh, rm, then the deleted program under sh's pid.
    let execs: Vec<&Value> = lines.iter().filter(|l| l["event"] == "exec").collect();
    assert_eq!(execs.len(), 3, "{execs:?}");
    let (sh, prog) = (execs[0], execs[2]);
    assert_eq!(execs[1]["argv"][0], "rm", "{execs:?}");
    assert_eq!(
        prog["argv"],
        serde_json::json!(["/proc/self/fd/3", "x"]),
        "{prog}"
    );
    let mut deleted = dir.join("prog").as_os_str().as_bytes().to_vec();
    deleted.extend_from_slice(b" (deleted)");
    assert_eq!(bytes(prog, "exe"), deleted, "{prog}");
    assert_eq!(
        bytes(sh, "exe"),
        std::fs::canonicalize("/bin/sh").unwrap().as_os_str().as_bytes()
    );
    for e in execs {
        assert_eq!(bytes(e, "cwd"), dir.as_os_str().as_bytes(), "{e}");
        // SAFETY: geteuid has no preconditions.
        assert_eq!(e["uid"], unsafe { libc::geteuid() }, "{e}");
    }
}

/// argv is read from the new stack at the exec stop: exactly what the kernel laid out there,
/// for words that take several reads (one of 128 KiB − 1 bytes, the longest a word may be, then
/// 20,000 more), an empty word, a newline and bytes that are not UTF-8.
#[test]
fn argv_read_from_the_stack_at_exec_is_exact_however_long() {
    use base64::Engine as _;
    let script =
        "/bin/true '' \"$(printf 'a\\nb\\377')\" \"$(head -c 131071 /dev/zero | tr '\\0' y)\" $(seq 20000)";
    let (out, lines) = run_on("ptrace", &["--tree", "none"], &["sh", "-c", script]);
    assert!(out.status.success(), "{}", stderr(&out));
    let exec = lines
        .iter()
        .find(|l| l["event"] == "exec" && l["argv"][0] == "/bin/true")
        .unwrap_or_else(|| panic!("no exec of /bin/true"));
    let word = |i: usize| -> Vec<u8> {
        match exec["argv_base64"].get(i).and_then(Value::as_str) {
            Some(b) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
            None => exec["argv"][i].as_str().unwrap().as_bytes().to_vec(),
        }
    };
    let mut want: Vec<Vec<u8>> = vec![
        b"/bin/true".to_vec(),
        Vec::new(),
        b"a\nb\xff".to_vec(),
        vec![b'y'; 131071],
    ];
    want.extend((1..=20000).map(|i| i.to_string().into_bytes()));
    assert_eq!(exec["argv"].as_array().unwrap().len(), want.len());
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&word(i), w, "word {i}");
    }
    let end = lines.last().unwrap();
    assert_eq!(end["execs"], end["execs_with_argv"], "{end}");
}
