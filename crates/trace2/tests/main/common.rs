//! Helpers: temporary directories, running git and the driver with a clean
//! trace2 environment, scrubbing volatile parts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("trace2-test-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const TRACE_VARS: &[&str] = &[
    "GIT_TRACE2",
    "GIT_TRACE2_PERF",
    "GIT_TRACE2_EVENT",
    "GIT_TRACE2_BRIEF",
    "GIT_TRACE2_PERF_BRIEF",
    "GIT_TRACE2_EVENT_BRIEF",
    "GIT_TRACE2_EVENT_NESTING",
    "GIT_TRACE2_CONFIG_PARAMS",
    "GIT_TRACE2_ENV_VARS",
    "GIT_TRACE2_MAX_FILES",
    "GIT_TRACE2_PARENT_SID",
    "GIT_TRACE2_PARENT_NAME",
    "GIT_TRACE2_REDACT",
    "GIT_TRACE2_DST_DEBUG",
];

/// A command with no inherited trace2 settings, an isolated HOME and config.
pub fn clean(program: &str, home: &Path) -> Command {
    let mut c = Command::new(program);
    for v in TRACE_VARS {
        c.env_remove(v);
    }
    c.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "A U Thor")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C");
    c
}

pub fn git(home: &Path) -> Command {
    clean("git", home)
}

pub fn driver(home: &Path) -> Command {
    clean(env!("CARGO_BIN_EXE_trace2-driver"), home)
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

pub fn read(p: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned()
}

/// A non-bare repository with one commit, and a bare clone of it.
pub fn make_repos(home: &Path) -> (PathBuf, PathBuf) {
    let src = home.join("src");
    let bare = home.join("bare.git");
    assert!(run(git(home).args(["init", "-q"]).arg(&src)).status.success());
    std::fs::write(src.join("file.txt"), "hello\n").unwrap();
    assert!(
        run(git(home).arg("-C").arg(&src).args(["add", "file.txt"]))
            .status
            .success()
    );
    assert!(
        run(git(home).arg("-C").arg(&src).args(["commit", "-q", "-m", "one"]))
            .status
            .success()
    );
    assert!(
        run(git(home).args(["clone", "-q", "--bare"]).arg(&src).arg(&bare))
            .status
            .success()
    );
    (src, bare)
}

/// Replaces every `<key><number>` (e.g. `elapsed:0.000123`) with `<key>_T_`.
pub fn mask_number_after(s: &str, key: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .unwrap_or(rest.len());
        if n > 0 {
            out.push_str("_T_");
        }
        rest = &rest[n..];
    }
    out.push_str(rest);
    out
}
