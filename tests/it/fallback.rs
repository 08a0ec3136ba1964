//! `--backend auto`'s chain, ebpf → connector → ptrace, where each is refused for a real reason:
//! a seccomp filter that denies `bpf()` (as Docker's default profile does), a user without
//! capabilities, a user namespace, a private network namespace. Each fallback is said in one
//! stderr line, named in the JSON Lines start and end lines (`refused`) and in the closing line;
//! a backend asked for by name is never swapped for another.
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

const SMALL: &str = "ls / >/dev/null; /bin/echo hi; exit 3";

/// Runs `wrapper… proctrace run -o FILE [extra] -- sh -c SMALL`; returns the output and lines.
fn run_under(wrapper: &[&str], extra: &[&str], out_file: &str) -> (Output, Vec<Value>) {
    let out = Command::new(wrapper[0])
        .args(&wrapper[1..])
        .args([PROCTRACE, "run", "-o", out_file])
        .args(extra)
        .args(["--", "sh", "-c", SMALL])
        .env("NO_COLOR", "1")
        .current_dir("/")
        .output()
        .unwrap();
    (out, read_lines(out_file))
}

/// The trace is whole and says which backend ran and which were refused, in order.
fn assert_traced_with(out: &Output, lines: &[Value], backend: &str, refused: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the command's status passes through: {err}"
    );
    let (start, end) = (&lines[0], lines.last().unwrap());
    for l in [start, end] {
        assert_eq!(l["backend"], backend, "{l}");
        let got: Vec<&str> = l["refused"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(got.len(), refused.len(), "{l}");
        for (g, want) in got.iter().zip(refused) {
            assert!(g.starts_with(&format!("{want}: ")), "{g} names {want} and why");
        }
    }
    assert_eq!(end["execs"], 3, "{end}");
    // The connector's `/proc` reader (at normal priority without privileges) can miss a
    // short-lived process's argv; the other two never do.
    if backend != "connector" {
        assert_eq!(end["execs_with_argv"], 3, "{end}");
    }
    let ps = processes(lines);
    assert_eq!(ps.len(), 3, "{ps:?}");
    if backend != "connector" {
        assert_eq!(find(&ps, &["/bin/echo", "hi"]).exits[0]["code"], 0);
    }
    // One line per fallback, each naming the next backend; the closing line names them again.
    let said: Vec<&str> = err.lines().filter(|l| l.contains("tracing with")).collect();
    assert_eq!(said.len(), refused.len(), "{err}");
    let mut next = refused.iter().skip(1).copied().chain([backend]);
    for line in &said {
        let n = next.next().unwrap();
        assert!(line.ends_with(&format!("tracing with {n} instead")), "{line}");
    }
    if refused.is_empty() {
        assert!(!err.contains("refused)"), "{err}");
    } else {
        let closing = err.lines().last().unwrap();
        assert!(
            closing.ends_with(&format!("traced with {backend} ({} refused)", refused.join(", "))),
            "{closing}"
        );
    }
}

#[test]
fn a_seccomp_filter_denying_bpf_falls_back_to_the_connector() {
    for how in [&[][..], &["--enosys"][..]] {
        let out_file = tmp("seccomp.jsonl");
        let mut wrapper = vec![nobpf()];
        wrapper.extend_from_slice(how);
        let (out, lines) = run_under(&wrapper, &[], &out_file);
        assert_traced_with(&out, &lines, "connector", &["ebpf"]);
        let why = lines[0]["refused"][0].as_str().unwrap();
        assert!(why.contains("bpf"), "the reason names bpf(): {why}");
        assert!(
            stderr(&out).contains("cannot trace with eBPF"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn ebpf_asked_for_by_name_is_refused_not_swapped() {
    let out_file = tmp("named.jsonl");
    std::fs::write(&out_file, "what the user had\n").unwrap();
    let out = Command::new(nobpf())
        .args([
            PROCTRACE,
            "run",
            "--backend",
            "ebpf",
            "-o",
            &out_file,
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(69),
        "unavailable (docs/exit-codes.md): {err}"
    );
    assert!(err.contains("bpf"), "{err}");
    assert!(!err.contains("tracing with"), "no other backend was tried: {err}");
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap(),
        "what the user had\n",
        "a backend that cannot start destroys nothing"
    );
}

/// Whether this kernel lets a user without capabilities subscribe to the connector's group
/// (Linux 6.6 allowed it; some kernels since refuse the bind with EPERM): asked of the kernel
/// directly, by Python's socket module as user 65534.
fn connector_open_to_nobody() -> bool {
    let python = if std::path::Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let probe = "import socket\ns = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 11)\ntry:\n    s.bind((0, 1))\nexcept PermissionError:\n    raise SystemExit(1)\n";
    let st = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            python,
            "-c",
            probe,
        ])
        .current_dir("/")
        .status()
        .unwrap();
    assert!(matches!(st.code(), Some(0 | 1)), "the probe ran: {st}");
    st.success()
}

#[test]
fn nobody_without_capabilities_falls_back_to_the_next_backend_the_kernel_allows() {
    let dir = format!("{}/nobody-{}", env!("CARGO_TARGET_TMPDIR"), std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let out_file = format!("{dir}/out.jsonl");
    let (out, lines) = run_under(
        &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
        &[],
        &out_file,
    );
    if connector_open_to_nobody() {
        assert_traced_with(&out, &lines, "connector", &["ebpf"]);
    } else {
        assert_traced_with(&out, &lines, "ptrace", &["ebpf", "connector"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_user_namespace_falls_back_to_ptrace() {
    let out_file = tmp("userns.jsonl");
    let (out, lines) = run_under(&["unshare", "--user", "--map-root-user", "--net"], &[], &out_file);
    assert_traced_with(&out, &lines, "ptrace", &["ebpf", "connector"]);
}

#[test]
fn a_private_network_namespace_keeps_ebpf_and_without_bpf_takes_ptrace() {
    // Root in its own network namespace: BPF works there, the connector does not.
    let out_file = tmp("netns.jsonl");
    let (out, lines) = run_under(&["unshare", "--net"], &[], &out_file);
    assert_traced_with(&out, &lines, "ebpf", &[]);
    let out_file = tmp("netns-seccomp.jsonl");
    let (out, lines) = run_under(&["unshare", "--net", nobpf()], &[], &out_file);
    assert_traced_with(&out, &lines, "ptrace", &["ebpf", "connector"]);
}

#[test]
fn the_first_backend_that_works_runs_with_nothing_refused() {
    let out_file = tmp("plain.jsonl");
    let (out, lines) = run_under(&["env"], &[], &out_file);
    assert_traced_with(&out, &lines, "ebpf", &[]);
}
