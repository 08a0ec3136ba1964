//! A command tree of known shape gives exactly the expected records.
use crate::common::*;

fn script(shapes: &str) -> String {
    format!(
        "sleep 0.2 | tr a b | cat >/dev/null
         {shapes} double-fork 3
         sh -c 'sleep 0.2; kill -KILL $$'
         sh -c 'sleep 0.2; exit 5'
         {shapes} thread-exec /bin/sleep 0.2
         {shapes} exec-twice /bin/sleep 0.2
         {shapes} fork-no-exec
         exit 0"
    )
}

both_backends! {
fn known_tree_gives_exact_records(backend: &str) {
    let sh = shapes();
    let (out, lines) = run_on(backend, &[], &["sh", "-c", &script(sh)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(lines.first().unwrap()["event"], "start");
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end");
    assert_eq!(end["code"], 0);
    assert_eq!(end["lost"], 0);
    let ps = processes(&lines);

    let root = find(&ps, &["sh", "-c"]);
    assert_eq!(root.exits.len(), 1);
    assert_eq!(root.exits[0]["code"], 0);
    // Every process but the root descends from it; every one that exited has one exit line.
    for p in ps.values() {
        assert!(p.exits.len() <= 1, "{p:?}");
        if p.pid != root.pid {
            let mut cur = p.ppid;
            let mut hops = 0;
            while cur != root.pid {
                cur = ps
                    .get(&cur)
                    .unwrap_or_else(|| panic!("{p:?} has an unknown ancestor"))
                    .ppid;
                hops += 1;
                assert!(hops < 10);
            }
        }
    }

    // Pipeline members are children of the shell.
    let tr = find(&ps, &["tr", "a", "b"]);
    assert_eq!(tr.ppid, root.pid);
    assert_eq!(tr.exits[0]["code"], 0);
    assert_eq!(find(&ps, &["cat"]).ppid, root.pid);

    // Double fork: shapes → intermediate (setsid, no exec, exit 0) → sleep 3, left running.
    let df = find(&ps, &[sh, "double-fork", "3"]);
    let mid = ps.values().find(|p| p.ppid == df.pid).unwrap();
    // setsid() is a connector event; ptrace sees no system calls.
    assert!((mid.setsid || backend == "ptrace") && mid.execs.is_empty());
    assert_eq!(mid.exits[0]["code"], 0);
    let daemon = find(&ps, &["sleep", "3"]);
    assert_eq!(daemon.ppid, mid.pid);
    assert_eq!(daemon.background.as_deref(), Some("ready"));
    assert!(daemon.exits.is_empty());
    assert_eq!(end["background"], 1);

    // Killed by a signal, and a non-zero exit.
    let killed = find(&ps, &["sh", "-c", "sleep 0.2; kill -KILL $$"]);
    assert_eq!(killed.exits[0]["signal"], 9);
    assert!(killed.exits[0].get("code").is_none());
    assert_eq!(find(&ps, &["sh", "-c", "sleep 0.2; exit 5"]).exits[0]["code"], 5);

    // Exec from a non-leader thread: one process, two execs, one exit.
    let te = find(&ps, &[sh, "thread-exec"]);
    assert_eq!(te.execs.len(), 2);
    assert_eq!(
        te.execs[1].as_deref(),
        Some(&["/bin/sleep".to_string(), "0.2".to_string()][..])
    );
    assert_eq!(te.exits.len(), 1);
    assert_eq!(te.exits[0]["code"], 0);
    assert!(
        ps.values().all(|p| p.ppid != te.pid),
        "threads are not child processes"
    );

    // Exec twice: three execs in one process.
    let et = find(&ps, &[sh, "exec-twice"]);
    assert_eq!(et.execs.len(), 3);
    assert_eq!(
        et.execs[2].as_deref(),
        Some(&["/bin/sleep".to_string(), "0.2".to_string()][..])
    );

    // Fork without exec is a process too.
    let fne = find(&ps, &[sh, "fork-no-exec"]);
    let kid = ps.values().find(|p| p.ppid == fne.pid).unwrap();
    assert!(kid.execs.is_empty());
    assert_eq!(kid.exits[0]["code"], 5);

    // The tree for people names the background child and the signal.
    assert!(err.contains("sleep 3"), "{err}");
    assert!(err.contains("background: still running (ready)"), "{err}");
    assert!(err.contains("killed by SIGKILL"), "{err}");
    assert!(err.contains("1 background child left running"), "{err}");
    assert!(!err.contains('\x1b'), "no colour when not a terminal");
    // Leave no daemon behind.
    let _ = std::process::Command::new("kill")
        .arg(daemon.pid.to_string())
        .status();
}
}

both_backends! {
fn wait_bg_follows_background_children_to_exit_or_timeout(backend: &str) {
    let sh = shapes();
    // The daemon exits within the wait: a normal exit, marked as having outlived the command.
    let (out, lines) = run_on(backend, &["--wait-bg", "5"], &[sh, "double-fork", "0.3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ps = processes(&lines);
    let d = find(&ps, &["sleep", "0.3"]);
    assert!(d.background.is_none());
    assert_eq!(d.exits[0]["code"], 0);
    assert_eq!(d.exits[0]["background"], true);
    assert_eq!(lines.last().unwrap()["background"], 0);

    // Still running when the wait ends: timeout.
    let (out, lines) = run_on(backend, &["--wait-bg", "0.3", "--fail-on-leak"], &[sh, "double-fork", "5"]);
    assert_eq!(out.status.code(), Some(3), "--fail-on-leak: {}", stderr(&out));
    let ps = processes(&lines);
    let d = find(&ps, &["sleep", "5"]);
    assert_eq!(d.background.as_deref(), Some("timeout"));
    let _ = std::process::Command::new("kill").arg(d.pid.to_string()).status();
}
}

#[test]
fn forged_datagrams_during_a_run_are_rejected_and_counted() {
    let sh = shapes();
    // Datagrams are the connector's: forged ones can only reach its socket.
    let (out, lines) = run_on("connector", &[], &[sh, "forge", "25"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let end = lines.last().unwrap();
    assert!(end["rejected"].as_u64().unwrap() >= 25, "{end}");
    assert!(
        lines.iter().all(|l| l["pid"] != 999_999),
        "a forged event got through"
    );
    assert!(stderr(&out).contains("forged or malformed datagrams rejected"));
}

both_backends! {
fn credentials_in_argv_are_redacted_unless_asked(backend: &str) {
    let url = "https://user:s3cret@example.invalid/repo.git";
    let cap = tmp("secret-capture.jsonl");
    let (out, lines) = run_on(backend, &["--record", &cap], &["sh", "-c", "sleep 0.2", url]);
    let recorded = std::fs::read_to_string(&cap).unwrap();
    assert!(
        !recorded.contains("s3cret") && recorded.contains("<REDACTED>"),
        "{recorded}"
    );
    let text = lines.iter().map(|l| l.to_string()).collect::<String>();
    assert!(!text.contains("s3cret"), "{text}");
    assert!(!stderr(&out).contains("s3cret"), "the tree too: {}", stderr(&out));
    assert!(stderr(&out).contains("user:<REDACTED>@"), "{}", stderr(&out));
    assert!(text.contains("https://user:<REDACTED>@example.invalid/repo.git"));
    let (_, lines) = run_on(backend, &["--no-redact"], &["sh", "-c", "sleep 0.2", url]);
    let text = lines.iter().map(|l| l.to_string()).collect::<String>();
    assert!(text.contains("s3cret"));
}
}

both_backends! {
fn no_enrich_reads_nothing_from_proc(backend: &str) {
    let (out, lines) = run_on(backend, &["--no-enrich"], &["sh", "-c", "sleep 0.2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let execs: Vec<_> = lines.iter().filter(|l| l["event"] == "exec").collect();
    assert!(!execs.is_empty());
    assert!(
        execs
            .iter()
            .all(|l| l["argv"].is_null() && l.get("exe").is_none()),
        "{execs:?}"
    );
    assert_eq!(lines.last().unwrap()["execs_with_argv"], 0);
}
}
