//! The eBPF backend on the real kernel with real processes: argv of every short-lived process,
//! its edges (an empty last word, a cut argv, a script, a non-leader exec, a failed exec), the
//! kernel-side filter, `watch`, and the way `auto` goes on where eBPF is refused.
use super::common::*;
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
        if a.len() == 2 && a[0] == "/bin/true" {
            if let Some(i) = a[1].strip_prefix("MARK-").and_then(|i| i.parse::<usize>().ok()) {
                seen[i] += 1;
            }
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
    let (out, pid) = watch_sh(
        "sleep 0.3; /bin/true WATCHED-a ''; sleep 0.2",
        &["--backend", "ebpf", "-o", "-"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["backend"], "ebpf");
    let ps = processes(&lines);
    let t = find(&ps, &["/bin/true", "WATCHED-a", ""]);
    assert_eq!(t.ppid, i64::from(pid));
    assert_eq!(t.exits[0]["code"], 0);
}

// The fallback when eBPF is refused (seccomp, nobody, user namespaces): tests/it/fallback.rs.

#[test]
fn inside_a_pid_namespace_of_its_own_it_refuses_and_auto_goes_on() {
    let out = Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount-proc",
            PROCTRACE,
            "run",
            "--tree",
            "none",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("pid namespace of its own"), "{err}");
}
