//! The eBPF backend on the real kernel with real processes: argv of every short-lived process,
//! its edges (an empty last word, a cut argv, a script, a non-leader exec, a failed exec), the
//! exec'd path, exe and cwd walked in the kernel (against `/proc`'s), the kernel-side filter,
//! `watch`, pid namespaces, and a user with only CAP_BPF and CAP_PERFMON.
use super::common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

/// Every exec line's argv, in order.
fn exec_argvs(lines: &[serde_json::Value]) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|l| l["event"] == "exec")
        .map(|l| {
            l["argv"]
                .as_array()
                .unwrap_or_else(|| panic!("an exec without argv: {l}"))
                .iter()
                .map(|w| w.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

fn end(lines: &[serde_json::Value]) -> &serde_json::Value {
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end", "{end}");
    end
}

/// `/bin/true MARK-i` for every i below `n`, each exactly once.
fn assert_every_mark(lines: &[serde_json::Value], n: usize) {
    let mut seen = vec![0u32; n];
    for a in exec_argvs(lines) {
        if a.len() == 2
            && a[0] == "/bin/true"
            && let Some(i) = a[1].strip_prefix("MARK-").and_then(|i| i.parse::<usize>().ok())
        {
            seen[i] += 1;
        }
    }
    let missing: Vec<usize> = (0..n).filter(|&i| seen[i] != 1).collect();
    assert!(missing.is_empty(), "marks not seen exactly once: {missing:?}");
}

#[test]
fn every_argv_of_a_dash_loop_of_2000_true_spawns() {
    let script = "i=0; while [ $i -lt 2000 ]; do /bin/true MARK-$i; i=$((i+1)); done";
    let (out, lines) = run_on("ebpf", &[], &["dash", "-c", script]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_every_mark(&lines, 2000);
    let end = end(&lines);
    assert_eq!(end["lost"], 0);
    assert_eq!(end["execs"], 2001);
    assert_eq!(end["execs_with_argv"], 2001);
    assert_eq!(end["argv_reader"], "kernel");
}

#[test]
fn every_argv_of_a_python_loop_of_2000_spawns() {
    let script = "import subprocess\nfor i in range(2000):\n    subprocess.run(['/bin/true', f'MARK-{i}'])\n";
    let (out, lines) = run_on("ebpf", &[], &["python3", "-c", script]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_every_mark(&lines, 2000);
    assert_eq!(end(&lines)["lost"], 0);
}

#[test]
fn every_argv_of_fork_vfork_and_posix_spawn_loops() {
    for style in ["spawn", "vfork", "posix_spawn"] {
        let (out, lines) = run_on("ebpf", &[], &[shapes(), style, "1000", "/bin/true", "x"]);
        assert!(out.status.success(), "{style}: {}", stderr(&out));
        let n = exec_argvs(&lines)
            .iter()
            .filter(|a| *a == &["/bin/true", "x"])
            .count();
        assert_eq!(n, 1000, "{style}");
        let end = end(&lines);
        assert_eq!(end["execs"], 1001, "{style}");
        assert_eq!(end["execs_with_argv"], 1001, "{style}");
        // Every one has its exe and cwd, walked in the kernel at the exec (read from /proc, as
        // the connector does, most of these would be gone first).
        let exe = std::fs::canonicalize("/bin/true").unwrap();
        let cwd = std::env::current_dir().unwrap();
        let paths: Vec<(&serde_json::Value, &serde_json::Value)> = lines
            .iter()
            .filter(|l| l["event"] == "exec" && l["argv"][0] == "/bin/true")
            .map(|l| (&l["exe"], &l["cwd"]))
            .collect();
        assert_eq!(paths.len(), 1000, "{style}");
        for (e, c) in paths {
            assert_eq!(e.as_str(), exe.to_str(), "{style}");
            assert_eq!(c.as_str(), cwd.to_str(), "{style}");
        }
    }
}

#[test]
fn an_empty_last_argument_is_kept() {
    let (out, lines) = run_on("ebpf", &[], &["sh", "-c", "/bin/true a '' ; /bin/true ''"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let argvs = exec_argvs(&lines);
    assert!(
        argvs.contains(&vec!["/bin/true".into(), "a".into(), String::new()]),
        "{argvs:?}"
    );
    assert!(
        argvs.contains(&vec!["/bin/true".into(), String::new()]),
        "{argvs:?}"
    );
}

#[test]
fn a_100_kib_argv_is_cut_visibly_or_read_whole_from_a_process_that_lives() {
    let big = "y".repeat(100 * 1024);
    // Short-lived: what the kernel side copied (32 KiB), then a word saying where it was cut
    // (or, when the reader's poll happened to come while it still ran, the whole of it).
    let (out, lines) = run_on("ebpf", &[], &["/bin/true", "start", &big, "end"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let argv = &exec_argvs(&lines)[0];
    let full = "/bin/true\0start\0".len() + big.len() + "\0end\0".len();
    assert_eq!(
        argv.len(),
        4,
        "{:?}",
        argv.iter().map(|w| w.len()).collect::<Vec<_>>()
    );
    assert_eq!(argv[..2], ["/bin/true", "start"]);
    if argv[2] != big || argv[3] != "end" {
        assert_eq!(argv[2].len(), 32768 - "/bin/true\0start\0".len());
        assert!(big.starts_with(&argv[2]));
        assert_eq!(argv[3], format!("…[argv cut at 32768 of {full} bytes]"));
    }

    // Alive when the reader comes (it polls every 20 ms): the whole of it, from /proc.
    let (out, lines) = run_on("ebpf", &[], &["sh", "-c", "sleep 1", "sh", &big, "end"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let argv = &exec_argvs(&lines)[0];
    assert_eq!(argv[..], ["sh", "-c", "sleep 1", "sh", &big, "end"]);
}

#[test]
fn a_script_is_seen_with_its_interpreter_and_its_path() {
    let script = tmp("run-me.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 4\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (out, lines) = run_on("ebpf", &[], &[&script, "arg"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let argvs = exec_argvs(&lines);
    assert_eq!(
        argvs,
        vec![vec!["/bin/sh".to_string(), script.clone(), "arg".into()]]
    );
    let exec = lines.iter().find(|l| l["event"] == "exec").unwrap();
    assert_eq!(exec["comm"], "sh");
    // The path exec'd, which /proc cannot give; exe is the interpreter.
    assert_eq!(exec["filename"], script.as_str(), "{exec}");
    assert_eq!(
        exec["exe"],
        std::fs::canonicalize("/bin/sh").unwrap().to_str().unwrap(),
        "{exec}"
    );
}

/// `./configure` run as `/bin/sh ./configure`: the exec'd path names the script from the exec on
/// (without the name at exit, which `--no-usage` leaves out, the connector counts it under `sh`),
/// in the live summary, in `analyze` of the JSON Lines and in the replay of a capture.
#[test]
fn the_execd_path_names_a_script_run_by_its_interpreter() {
    let dir = tmp("configure-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!("{dir}/configure");
    std::fs::write(&script, "#!/bin/sh\n/bin/true checking\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let programs = |summary: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
        v["by_program"].as_object().unwrap().keys().cloned().collect()
    };
    let (sum, cap) = (tmp("summary.json"), tmp("cap.jsonl"));
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", "ebpf", "--no-usage", "--tree", "none", "-q"])
        .args([
            "--summary-json",
            &sum,
            "--record",
            &cap,
            "-o",
            &tmp("unused.jsonl"),
        ])
        .args(["--", "sh", "-c", "cd \"$1\" && ./configure", "sh", &dir])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        programs(&sum).contains(&"configure".to_string()),
        "{:?}",
        programs(&sum)
    );
    let replayed = tmp("replayed.jsonl");
    let rep = Command::new(PROCTRACE)
        .args(["replay", &cap, "-o", &replayed])
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    let lines = read_lines(&replayed);
    let exec = lines
        .iter()
        .find(|l| l["event"] == "exec" && l["argv"][1] == "./configure")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(exec["argv"][0], "/bin/sh", "{exec}");
    assert_eq!(exec["filename"], "./configure", "{exec}");
    let sum2 = tmp("analyzed.json");
    let an = Command::new(PROCTRACE)
        .args(["analyze", &replayed, "--summary-json", &sum2])
        .output()
        .unwrap();
    assert!(an.status.success(), "{}", stderr(&an));
    assert!(
        programs(&sum2).contains(&"configure".to_string()),
        "{:?}",
        programs(&sum2)
    );
    // The connector cannot know it: the script counts under its interpreter.
    let sum3 = tmp("connector.json");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            "connector",
            "--no-usage",
            "--tree",
            "none",
            "-q",
        ])
        .args(["--summary-json", &sum3, "-o", &tmp("connector.jsonl")])
        .args(["--", "sh", "-c", "cd \"$1\" && ./configure", "sh", &dir])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !programs(&sum3).contains(&"configure".to_string()),
        "{:?}",
        programs(&sum3)
    );
}

#[test]
fn an_exec_from_a_non_leader_thread_is_one_process_with_two_execs() {
    let (out, lines) = run_on("ebpf", &[], &[shapes(), "thread-exec", "/bin/true", "after"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ps = processes(&lines);
    let te = find(&ps, &[shapes(), "thread-exec"]);
    assert_eq!(te.execs.len(), 2, "{te:?}");
    assert_eq!(te.execs[1], Some(vec!["/bin/true".to_string(), "after".into()]));
    assert_eq!(te.exits.len(), 1, "{te:?}");
    assert_eq!(te.exits[0]["code"], 0);
    assert_eq!(ps.len(), 1, "threads are not processes: {ps:#?}");
}

#[test]
fn a_failed_exec_is_not_an_exec() {
    let (out, lines) = run_on("ebpf", &[], &["sh", "-c", "/nonexistent/prog arg; exit 0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let argvs = exec_argvs(&lines);
    assert_eq!(argvs.len(), 1, "{argvs:?}");
    let ps = processes(&lines);
    let child = ps
        .values()
        .find(|p| p.execs.is_empty())
        .expect("the forked child");
    assert_eq!(child.exits[0]["code"], 127);
}

#[test]
fn exit_codes_signals_and_threads_are_the_processes() {
    let (out, lines) = run_on(
        "ebpf",
        &[],
        &[
            "sh",
            "-c",
            &format!(
                "sh -c 'exit 7'; sh -c 'kill -TERM $$'; {} threads-then-leader; exit 0",
                shapes()
            ),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ps = processes(&lines);
    assert_eq!(find(&ps, &["sh", "-c", "exit 7"]).exits[0]["code"], 7);
    assert_eq!(find(&ps, &["sh", "-c", "kill -TERM $$"]).exits[0]["signal"], 15);
    let threaded = find(&ps, &[shapes(), "threads-then-leader"]);
    assert_eq!(threaded.exits.len(), 1, "{threaded:?}");
    assert_eq!(threaded.exits[0]["code"], 4);
    // Every record is a process that exec'd (a thread taken for a process would have none).
    assert!(
        ps.values().all(|p| !p.execs.is_empty() && p.exits.len() == 1),
        "{ps:#?}"
    );
}

#[test]
fn the_kernel_filters_out_processes_outside_the_tree() {
    // A busy spawner that is not proctrace's: none of its processes may reach the trace, and
    // they must not cost records (the kernel side drops them at the map lookup).
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do /bin/true OUTSIDE; done"])
        .spawn()
        .unwrap();
    let (out, lines) = run_on("ebpf", &[], &["sh", "-c", "sleep 0.5; /bin/true INSIDE"]);
    busy.kill().unwrap();
    busy.wait().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let argvs = exec_argvs(&lines);
    assert!(
        argvs.iter().all(|a| !a.contains(&"OUTSIDE".to_string())),
        "{argvs:?}"
    );
    assert!(
        argvs.iter().any(|a| a.contains(&"INSIDE".to_string())),
        "{argvs:?}"
    );
    // Records read: the command's few (fork, exec, exit of 3 processes) and proctrace's own
    // threads; the busy loop makes hundreds per half second.
    let records = end(&lines)["kernel_events"].as_u64().unwrap();
    assert!(records < 60, "{records} records read");
}

#[test]
fn watch_sees_processes_it_did_not_start() {
    // The watched shell waits for the start line (the programs are loaded, the self-test seen).
    let out_file = tmp("watch.jsonl");
    let (out, pid) = watch_sh(
        &format!("while [ ! -s {out_file} ]; do sleep 0.02; done; /bin/true WATCHED-a ''; sleep 0.2"),
        &["--backend", "ebpf", "-o", &out_file],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    assert_eq!(lines[0]["backend"], "ebpf");
    let ps = processes(&lines);
    let t = find(&ps, &["/bin/true", "WATCHED-a", ""]);
    assert_eq!(t.ppid, i64::from(pid));
    assert_eq!(t.exits[0]["code"], 0);
}

// The fallback when eBPF is refused (seccomp, nobody, user namespaces): tests/it/fallback.rs.

/// A field's exact bytes: its `_base64` twin when it has one, else the string; `None` for null.
fn exact(l: &serde_json::Value, k: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    match l[format!("{k}_base64")].as_str() {
        Some(b) => Some(base64::engine::general_purpose::STANDARD.decode(b).unwrap()),
        None => l[k].as_str().map(|s| s.as_bytes().to_vec()),
    }
}

/// The exec lines of a run whose argv[1] is `marker`, as (pid, exe, cwd).
type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>);
fn execs_marked(lines: &[serde_json::Value], marker: &str) -> Vec<Seen> {
    lines
        .iter()
        .filter(|l| l["event"] == "exec" && l["argv"][1] == marker)
        .map(|l| (l["pid"].as_i64().unwrap(), exact(l, "exe"), exact(l, "cwd")))
        .collect()
}

/// What /proc said of a living process: (pid, exe, cwd).
type ProcSays = (i64, Vec<u8>, Vec<u8>);

/// Runs, in a mount namespace of its own, each of `cases` (a shell command where `RUN PROG…`
/// runs the program twice over: once living (0.3 s: what `/proc/PID/exe` and `/proc/PID/cwd`
/// say of it is noted), then three times short-lived (gone before the reader could look), told
/// apart by their durations, `argv[1]`). Returns the lines and /proc's (pid, exe, cwd) per case.
/// `old`: with the eBPF programs for kernels before 6.2 (`PROCTRACE_EBPF_PROGRAMS=old`).
fn paths_run(
    base: &std::path::Path,
    setup: &str,
    cases: &[(&str, &str, &str)],
    args: &[&OsStr],
    old: bool,
) -> (Vec<serde_json::Value>, Vec<ProcSays>) {
    let rec = base.join("proc-says");
    let mut script = String::from(
        "set -e\nbase=\"$1\"; rec=\"$2\"\n\
         r() {\n\
           long=$1; short=$2; shift 2\n\
           \"$@\" \"$long\" & p=$!\n\
           sleep 0.15\n\
           { printf '%s\\0' \"$p\"; readlink -z /proc/$p/exe; readlink -z /proc/$p/cwd; } >> \"$rec\"\n\
           wait $p\n\
           for i in 1 2 3; do \"$@\" \"$short\"; done\n\
         }\n\
         cd \"$base\"\n",
    );
    script.push_str(setup);
    for (cmd, long, short) in cases {
        script.push_str(&format!(
            "(cd \"$base\"; {})\n",
            cmd.replace("RUN", &format!("r {long} {short}"))
        ));
    }
    let out_file = base.join("out.jsonl");
    let mut cmd = Command::new(PROCTRACE);
    if old {
        cmd.env("PROCTRACE_EBPF_PROGRAMS", "old");
    }
    let out = cmd
        .args(["run", "--backend", "ebpf", "--tree", "none", "-q", "-o"])
        .arg(&out_file)
        .args([
            "--",
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .arg(base)
        .arg(&rec)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).contains("eBPF: the programs for kernels before 6.2"),
        old,
        "{}",
        stderr(&out)
    );
    let said = std::fs::read(&rec).unwrap();
    let mut it = said.split(|&b| b == 0);
    let mut procs = Vec::new();
    while let (Some(p), Some(e), Some(c)) = (it.next(), it.next(), it.next()) {
        let pid = std::str::from_utf8(p).unwrap().parse().unwrap();
        procs.push((pid, e.to_vec(), c.to_vec()));
    }
    assert_eq!(procs.len(), cases.len(), "{}", String::from_utf8_lossy(&said));
    (read_lines(out_file.to_str().unwrap()), procs)
}

/// Checks each case's living process and its short-lived twins against what /proc said (and
/// what /proc said against `want`, a check of the cases themselves).
fn assert_paths(
    lines: &[serde_json::Value],
    procs: &[ProcSays],
    cases: &[(&str, &str, &str)],
    want: &[(Vec<u8>, Vec<u8>)],
) {
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, ((pid, exe, cwd), (_, long, short))) in procs.iter().zip(cases).enumerate() {
        assert_eq!(
            (show(exe), show(cwd)),
            (show(&want[i].0), show(&want[i].1)),
            "case {i}: /proc"
        );
        let lived = execs_marked(lines, long);
        assert_eq!(
            lived,
            vec![(*pid, Some(exe.clone()), Some(cwd.clone()))],
            "case {i}"
        );
        let twins = execs_marked(lines, short);
        assert_eq!(twins.len(), 3, "case {i}: {twins:?}");
        for t in twins {
            assert_eq!(
                (t.1.as_deref().map(show), t.2.as_deref().map(show)),
                (Some(show(exe)), Some(show(cwd))),
                "case {i}: a short-lived twin"
            );
        }
    }
}

/// exe and cwd as the kernel side walks them are what `/proc` says, byte for byte, for a
/// process that lives (its exec line), and the same for its short-lived twins, which are gone
/// before the reader could look (so the kernel's walk alone gave them): a program in a deep
/// directory, a working directory named with a space, a line break and a byte that is not
/// UTF-8, a tmpfs mounted over a directory, a bind mount, a symlinked working directory (/proc
/// resolves it), a program deleted before its exec, a deleted working directory, a memfd
/// exec'd (`fexecve`), and a chroot (paths from proctrace's root, not the process's).
#[test]
fn exe_and_cwd_are_walked_in_the_kernel_as_proc_gives_them() {
    exe_and_cwd_as_proc_gives_them(false);
}

/// The same with the programs for kernels before 6.2 (their walk unrolled, 32 steps).
#[test]
fn exe_and_cwd_are_walked_as_proc_gives_them_by_the_programs_for_older_kernels() {
    exe_and_cwd_as_proc_gives_them(true);
}

fn exe_and_cwd_as_proc_gives_them(old: bool) {
    let base = std::fs::canonicalize({
        let b = tmp(if old { "paths-old" } else { "paths" });
        std::fs::create_dir_all(&b).unwrap();
        b
    })
    .unwrap();
    // 16 directories deeper than the tests' scratch directory (itself 6 or so below /), within
    // the kernel side's walk (32 steps, with the mounts crossed).
    let mut deep = base.join("deep");
    for i in 0..16 {
        deep.push(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::copy("/bin/sleep", deep.join("prog")).unwrap();
    let mut odd = base.join("odd").into_os_string().into_vec();
    odd.extend_from_slice(b" a\nb\xff");
    std::fs::create_dir_all(OsStr::from_bytes(&odd)).unwrap();
    let setup = "mkdir -p tmpfs bsrc/sub bdst root/usr rmd\n\
        mount -t tmpfs none tmpfs; mkdir tmpfs/sub; cp /bin/sleep tmpfs/prog\n\
        cp /bin/sleep bsrc/prog; mount --bind bsrc bdst\n\
        ln -s \"$base/tmpfs/sub\" link\n\
        mount --bind /usr root/usr; for d in bin lib lib64; do ln -s usr/$d root/$d; done\n\
        cp /bin/sleep gone\n";
    let cases = [
        ("cd \"$3\" && RUN ./prog", "0.31", "0.001"),
        ("cd \"$4\" && RUN sleep", "0.32", "0.002"),
        ("cd tmpfs/sub && RUN ../prog", "0.33", "0.003"),
        ("cd bdst/sub && RUN \"$base/bdst/prog\"", "0.34", "0.004"),
        ("cd link && RUN sleep", "0.35", "0.005"),
        ("exec 3< gone && rm gone && RUN /proc/self/fd/3", "0.36", "0.006"),
        ("cd rmd && rmdir \"$base/rmd\" && RUN sleep", "0.37", "0.007"),
        (
            "RUN /usr/bin/python3 -c 'import os, sys; fd = os.memfd_create(\"pt-memfd\"); \
             os.write(fd, open(\"/bin/sleep\", \"rb\").read()); \
             os.execve(fd, [\"pt-memfd\", sys.argv[1]], {})'",
            "0.38",
            "0.008",
        ),
        ("RUN chroot \"$base/root\" /usr/bin/sleep", "0.39", "0.009"),
    ];
    let (lines, procs) = paths_run(
        &base,
        setup,
        &cases,
        &[deep.as_os_str(), OsStr::from_bytes(&odd)],
        old,
    );
    let b = |p: std::path::PathBuf| p.into_os_string().into_vec();
    let deleted = |p: std::path::PathBuf| [b(p), b" (deleted)".to_vec()].concat();
    let sleep = b"/usr/bin/sleep".to_vec();
    let want = [
        (b(deep.join("prog")), b(deep.clone())),
        (sleep.clone(), odd.clone()),
        (b(base.join("tmpfs/prog")), b(base.join("tmpfs/sub"))),
        (b(base.join("bdst/prog")), b(base.join("bdst/sub"))),
        (sleep.clone(), b(base.join("tmpfs/sub"))),
        (deleted(base.join("gone")), b(base.clone())),
        (sleep.clone(), deleted(base.join("rmd"))),
        (b"/memfd:pt-memfd (deleted)".to_vec(), b(base.clone())),
        (b(base.join("root/usr/bin/sleep")), b(base.join("root"))),
    ];
    assert_paths(&lines, &procs, &cases, &want);
}

/// A path deeper than the kernel side walks is not cut short silently: a process that lives
/// gets it from /proc, one gone before the reader looked gets none. 40 directories deep is
/// past the walk of the programs for kernels before 6.2 (32 steps) and within the others'
/// (1024): there the short-lived ones have it too, whole; 1100 deep is past both.
#[test]
fn a_path_deeper_than_the_walk_is_read_from_proc_or_left_unknown() {
    deeper_than_the_walk(false);
}

#[test]
fn a_path_deeper_than_the_walk_of_the_programs_for_older_kernels() {
    deeper_than_the_walk(true);
}

fn deeper_than_the_walk(old: bool) {
    let base = std::fs::canonicalize({
        let b = tmp(if old { "deeper-old" } else { "deeper" });
        std::fs::create_dir_all(&b).unwrap();
        b
    })
    .unwrap();
    let mut deep = base.join("deep");
    for i in 0..40 {
        deep.push(format!("d{i}"));
    }
    // 1100 one-letter directories: 2.2 KB, within PATH_MAX.
    let mut deeper = base.join("deeper");
    for _ in 0..1100 {
        deeper.push("d");
    }
    for d in [&deep, &deeper] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::copy("/bin/sleep", d.join("prog")).unwrap();
    }
    let cases = [
        ("cd \"$3\" && RUN ./prog", "0.31", "0.001"),
        ("cd \"$4\" && RUN ./prog", "0.32", "0.002"),
    ];
    let (lines, procs) = paths_run(&base, "", &cases, &[deep.as_os_str(), deeper.as_os_str()], old);
    for (i, d) in [&deep, &deeper].into_iter().enumerate() {
        let (pid, exe, cwd) = &procs[i];
        assert_eq!(exe.as_slice(), d.join("prog").as_os_str().as_bytes());
        assert_eq!(cwd.as_slice(), d.as_os_str().as_bytes());
        assert_eq!(
            execs_marked(&lines, cases[i].1),
            vec![(*pid, Some(exe.clone()), Some(cwd.clone()))]
        );
        let twins = execs_marked(&lines, cases[i].2);
        assert_eq!(twins.len(), 3, "{twins:?}");
        for t in twins {
            if i == 0 && !old {
                // Walked whole in the kernel.
                assert_eq!((t.1.as_ref(), t.2.as_ref()), (Some(exe), Some(cwd)));
            } else {
                // Gone: unknown (or, when the reader's poll came while it lived, /proc's).
                assert!(t.1.is_none() || t.1.as_ref() == Some(exe), "{t:?}");
                assert!(t.2.is_none() || t.2.as_ref() == Some(cwd), "{t:?}");
            }
        }
    }
}

/// Inside a pid namespace of its own (and its own /proc), every pid and ppid is the one the
/// traced processes see (`$$`), not the kernel's; `auto` picks eBPF there (the connector
/// listens in the initial namespace only).
#[test]
fn inside_a_pid_namespace_pids_are_the_namespaces() {
    let (out_file, said) = (tmp("ns.jsonl"), tmp("said"));
    let script =
        format!("echo \"$$ $PPID\" >> {said}; sh -c 'echo \"$$ $PPID\" >> {said}; /bin/true in-ns'; exit 5");
    let out = Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount-proc",
            PROCTRACE,
            "run",
            "--tree",
            "none",
            "-o",
        ])
        .args([&out_file, "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    assert_eq!(lines[0]["backend"], "ebpf", "{}", lines[0]);
    let said: Vec<(i64, i64)> = std::fs::read_to_string(&said)
        .unwrap()
        .lines()
        .map(|l| {
            let (p, pp) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), pp.parse().unwrap())
        })
        .collect();
    let ps = processes(&lines);
    let outer = find(&ps, &["sh", "-c", &script]);
    let inner = ps
        .values()
        .find(|p| {
            p.ppid == outer.pid
                && p.execs
                    .first()
                    .and_then(|e| e.as_ref())
                    .is_some_and(|a| a[0] == "sh")
        })
        .unwrap_or_else(|| panic!("{ps:#?}"));
    let t = find(&ps, &["/bin/true", "in-ns"]);
    assert_eq!((outer.pid, outer.ppid), said[0], "{ps:#?}");
    assert_eq!((inner.pid, inner.ppid), said[1], "{ps:#?}");
    assert_eq!(t.ppid, inner.pid);
    assert_eq!(ps.len(), 3, "only the namespace's processes: {ps:#?}");
    assert_eq!(end(&lines)["exits"], 3);
}

/// `watch` inside a pid namespace sees the namespace's processes, by their numbers there, and
/// none of the machine's others (a busy spawner outside).
#[test]
fn watch_inside_a_pid_namespace_sees_only_its_processes() {
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do /bin/true OUTSIDE; done"])
        .spawn()
        .unwrap();
    let out_file = tmp("ns-watch.jsonl");
    let script = format!(
        "{PROCTRACE} watch --backend ebpf -o {out_file} & w=$!; \
         while [ ! -s {out_file} ]; do sleep 0.05; done; \
         sh -c '/bin/true INSIDE'; sleep 0.2; kill -INT $w; wait $w"
    );
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
        .output()
        .unwrap();
    busy.kill().unwrap();
    busy.wait().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    assert_eq!(lines[0]["backend"], "ebpf", "{}", lines[0]);
    let argvs = exec_argvs(&lines);
    assert!(argvs.iter().any(|a| a == &["/bin/true", "INSIDE"]), "{argvs:?}");
    assert!(
        argvs.iter().all(|a| !a.contains(&"OUTSIDE".to_string())),
        "{argvs:?}"
    );
    // The namespace's numbers: its init is 1, proctrace and the watcher's shell come next.
    let ps = processes(&lines);
    let t = find(&ps, &["/bin/true", "INSIDE"]);
    assert!(t.pid < 100 && t.ppid < 100, "{t:?}");
}

/// Inside a pid namespace whose /proc is another's (`unshare --pid --fork` without
/// `--mount-proc`), the reader could not read the processes it reports by their numbers: eBPF is
/// refused, saying so, and `auto` goes on.
#[test]
fn inside_a_pid_namespace_without_its_proc_ebpf_is_refused_saying_why() {
    let out = Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            PROCTRACE,
            "run",
            "--backend",
            "ebpf",
            "--tree",
            "none",
        ])
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("/proc is another's") && err.contains("--mount-proc"),
        "{err}"
    );
}

/// A user with only CAP_BPF and CAP_PERFMON (ambient, as `setpriv` gives them) traces with eBPF,
/// not refused, argv, exe and cwd whole; only the cost figures are missing (taskstats needs
/// CAP_NET_ADMIN), and stderr says so.
#[test]
fn nobody_with_cap_bpf_and_cap_perfmon_traces_with_ebpf() {
    let dir = format!("{}/caps-{}", env!("CARGO_TARGET_TMPDIR"), std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let out_file = format!("{dir}/out.jsonl");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"])
        .args([PROCTRACE, "run", "--tree", "none", "-o", &out_file])
        .args(["--", "sh", "-c", "cd /tmp && /bin/true as-nobody; exit 3"])
        .current_dir("/")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let lines = read_lines(&out_file);
    assert_eq!(lines[0]["backend"], "ebpf", "{}", lines[0]);
    assert!(lines[0].get("refused").is_none(), "{}", lines[0]);
    let exec = lines
        .iter()
        .find(|l| l["event"] == "exec" && l["argv"] == serde_json::json!(["/bin/true", "as-nobody"]))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(exec["uid"], 65534, "{exec}");
    assert_eq!(exec["cwd"], "/tmp", "{exec}");
    assert_eq!(
        exec["exe"],
        std::fs::canonicalize("/bin/true").unwrap().to_str().unwrap()
    );
    assert_eq!(exec["filename"], "/bin/true");
    assert_eq!(end(&lines)["execs_with_argv"], 2);
    assert!(
        err.contains("taskstats") && err.contains("CAP_NET_ADMIN"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
