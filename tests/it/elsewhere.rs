//! Work done outside the traced tree, said: clients of build daemons and container engines
//! (fake executables on PATH named like them) are named once on stderr or in the summary, with
//! the fix, unless their server is in the tree (started by this run).
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// A directory of fake clients: each prints nothing and exits 0; `sccache` with no server
/// variable starts one (`sccache` again, in the background, compiling with `true`).
fn fake_clients() -> String {
    let dir = tmp("fake-clients");
    let dir = dir.trim_end_matches("/fake-clients").to_string() + "/bin";
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["bazel", "gradle", "docker", "buck2"] {
        let p = format!("{dir}/{name}");
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let p = format!("{dir}/sccache");
    std::fs::write(
        &p,
        "#!/bin/sh\n\
         # The server: forks the compiler.\n\
         if [ $# -eq 0 ]; then sh -c true; exit 0; fi\n\
         # A client: starts the server when asked to.\n\
         if [ -n \"$START_SERVER\" ]; then sccache & wait; fi\n\
         exit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn run_with(path: &str, extra: &[&str], script: &str) -> (std::process::Output, Value) {
    let summary = tmp("summary.json");
    let out = Command::new(PROCTRACE)
        .args(["run", "--backend", "ptrace", "--summary-json", &summary])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .env("PATH", format!("{path}:/usr/bin:/bin"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let json = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    (out, json)
}

fn outside_clients(summary: &Value) -> Vec<String> {
    summary["outside_tree"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| o["client"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn clients_of_daemons_are_said_once_with_the_fix() {
    let bin = fake_clients();
    let (out, summary) = run_with(
        &bin,
        &["--tree", "none"],
        "bazel build //...; bazel test //x; sccache cc -c x.c; gradle --no-daemon build; docker ps; docker run --rm img true; exit 0",
    );
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    // bazel twice, one line; gradle without its daemon and `docker ps` hide nothing.
    assert_eq!(
        outside_clients(&summary),
        ["bazel", "sccache", "docker"],
        "{summary}"
    );
    let bazel = &summary["outside_tree"][0];
    assert_eq!(bazel["runs"], 2);
    assert!(
        bazel["fix"].as_str().unwrap().contains("bazel shutdown"),
        "{bazel}"
    );
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(", not in this trace"))
        .collect();
    assert_eq!(said.len(), 3, "{err}");
    assert!(
        said[0].starts_with("proctrace: bazel (2×, first: pid "),
        "{}",
        said[0]
    );
    assert!(said[0].contains("the Bazel server"), "{}", said[0]);
    assert!(said[1].contains("sccache --stop-server"), "{}", said[1]);
    assert!(said[2].contains("proctrace watch"), "{}", said[2]);

    // With the tree and the text summary on stderr, it is said in the summary, once.
    let (out, _) = run_with(&bin, &[], "bazel build //...");
    let err = stderr(&out);
    assert_eq!(err.matches("the Bazel server").count(), 1, "{err}");
    assert!(err.contains("outside the tree: bazel (pid "), "{err}");
    assert!(err.contains("  fix: `bazel shutdown`"), "{err}");
}

#[test]
fn a_server_started_inside_the_run_hides_nothing() {
    let bin = fake_clients();
    let (out, summary) = run_with(&bin, &["--tree", "none"], "START_SERVER=1 sccache cc -c x.c");
    assert_eq!(out.status.code(), Some(0));
    assert!(outside_clients(&summary).is_empty(), "{summary}");
    assert!(!stderr(&out).contains("not in this trace"), "{}", stderr(&out));
}

#[test]
fn a_build_without_clients_says_nothing_of_it() {
    let (out, summary) = run_with("/nonexistent", &[], "true; exit 0");
    assert!(summary.get("outside_tree").is_none(), "{summary}");
    assert!(!stderr(&out).contains("not in this trace"));
}

/// sccache installed as the compiler (`cc` a symbolic link to it: its masquerade) is a client
/// too, told by the executable the exec ran, not by `argv[0]`; a `cc` that is the compiler is not.
#[test]
fn a_compiler_that_is_a_link_to_sccache_is_a_client() {
    let dir = tmp("masquerade");
    let dir = dir.trim_end_matches("/masquerade").to_string() + "/bin";
    std::fs::create_dir_all(&dir).unwrap();
    // A real executable named sccache (it exits 0 whatever it is asked), and `cc` linked to it.
    std::fs::copy("/bin/true", format!("{dir}/sccache")).unwrap();
    let _ = std::fs::remove_file(format!("{dir}/cc"));
    std::os::unix::fs::symlink("sccache", format!("{dir}/cc")).unwrap();
    let (out, summary) = run_with(&dir, &["--tree", "none"], "cc -c x.c; cc -c y.c");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(outside_clients(&summary), ["sccache"], "{summary}");
    assert_eq!(summary["outside_tree"][0]["runs"], 2, "{summary}");
    // The same command line with the real compiler behind `cc` hides nothing.
    let real = dir.trim_end_matches("/bin").to_string() + "/real";
    std::fs::create_dir_all(&real).unwrap();
    let _ = std::fs::remove_file(format!("{real}/cc"));
    std::os::unix::fs::symlink("/bin/true", format!("{real}/cc")).unwrap();
    let (out, summary) = run_with(&real, &["--tree", "none"], "cc -c x.c; cc -c y.c");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(summary.get("outside_tree").is_none(), "{summary}");
}
