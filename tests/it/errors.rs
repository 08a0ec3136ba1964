//! Where proctrace cannot work, it says so in one clear line with a distinct exit code.
use std::process::Command;

use crate::common::*;

#[test]
fn connector_refused_in_a_private_network_namespace() {
    let marker = tmp("must-not-exist");
    let out = Command::new("unshare")
        .args([
            "--net",
            PROCTRACE,
            "run",
            "--backend",
            "connector",
            "--",
            "touch",
            &marker,
        ])
        .output()
        .expect("unshare (util-linux)");
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("network namespace"), "{err}");
    assert!(
        !std::path::Path::new(&marker).exists(),
        "the command must not run untraced"
    );
}

#[test]
fn an_output_that_cannot_be_opened_stops_before_running_anything() {
    let marker = tmp("must-not-exist-either");
    let out = Command::new(PROCTRACE)
        .args(["run", "-o", "/nonexistent-dir/x.jsonl", "--", "touch", &marker])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("cannot open output '/nonexistent-dir/x.jsonl'"),
        "{}",
        stderr(&out)
    );
    assert!(!std::path::Path::new(&marker).exists());
}

#[test]
fn bad_arguments_are_usage_errors() {
    let out = Command::new(PROCTRACE)
        .args(["run", "--buffer", "lots", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not a size"));
    let out = Command::new(PROCTRACE)
        .args(["watch", "-p", "999999999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no process with pid"));
}

#[test]
fn a_closed_stdout_ends_output_quietly_and_the_command_is_unharmed() {
    use std::io::BufRead;
    let marker = tmp("finished");
    let closed = tmp("closed");
    let mut child = Command::new(PROCTRACE)
        .args(["run", "-o", "-", "--tree", "none", "--", "sh", "-c"])
        .arg(format!(
            "i=0; while [ ! -e {closed} ] && [ $i -lt 1000 ]; do i=$((i+1)); sleep 0.01; done; \
             for i in 1 2 3 4 5 6 7 8; do /bin/true; done; touch {marker}; exit 4"
        ))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then close the pipe like `| head -1` would.
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("\"event\":\"start\""));
    // Closed now (the reader is gone): the command goes on and its events meet the closed pipe.
    std::fs::write(&closed, "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "the command's status: {}",
        stderr(&out)
    );
    assert!(
        std::path::Path::new(&marker).exists(),
        "the command ran to the end"
    );
    let err = stderr(&out);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "quiet: {err}"
    );
}

#[test]
fn an_unprivileged_user_can_trace_on_this_kernel() {
    // Linux 6.6+ lets any user listen. Copy the binary where user 65534 can execute it.
    let dir = format!("/tmp/proctrace-unpriv-{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let bin = format!("{dir}/proctrace");
    std::fs::copy(PROCTRACE, &bin).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &bin,
            "run",
            "-o",
            "-",
            "--",
            "sh",
            "-c",
            "sleep 0.2; exit 4",
        ])
        .current_dir("/")
        .output()
        .expect("setpriv (util-linux)");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\"argv\":[\"sh\",\"-c\",\"sleep 0.2; exit 4\"]"),
        "{text}"
    );
    assert!(text.contains("\"uid\":65534"), "{text}");
}
