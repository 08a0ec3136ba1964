//! The three formatters against git itself: real git runs write all three
//! targets into per-session directories; every event line read back and
//! formatted again must equal git's event line byte for byte, and the
//! normal and perf lines formatted from those events must equal git's
//! normal and perf lines (only the wall-clock time column is masked, and
//! perf's `t_abs` where the event stream does not carry it).

use std::path::Path;

use trace2::reader::{ReadOptions, Record, infer_nesting, read_file};
use trace2::{FormatOptions, Target, TargetKind};

use crate::common::*;

fn scenarios(home: &Path, env: &[(&str, String)]) {
    let (src, bare) = make_repos(home);
    let mut cmds: Vec<Vec<String>> = vec![
        vec!["version".into()],
        vec!["-c".into(), "alias.x=!true".into(), "x".into()],
        vec![
            "-C".into(),
            src.display().to_string(),
            "-c".into(),
            "alias.st=status".into(),
            "st".into(),
        ],
        vec![
            "clone".into(),
            "-q".into(),
            format!("file://{}", bare.display()),
            home.join("dst").display().to_string(),
        ],
        vec![
            "-C".into(),
            src.display().to_string(),
            "rev-parse".into(),
            "--verify".into(),
            "-q".into(),
            "nope".into(),
        ],
        vec![
            "-C".into(),
            src.display().to_string(),
            "-c".into(),
            "core.abbrev=12".into(),
            "status".into(),
        ],
        vec![
            "-C".into(),
            src.display().to_string(),
            "log".into(),
            "-1".into(),
            "--grep=it's a!b\ttab é".into(),
            "--".into(),
            "".into(),
        ],
    ];
    cmds.push(vec![
        "-C".into(),
        src.display().to_string(),
        "branch".into(),
        "--list".into(),
    ]);
    for c in cmds {
        let mut g = git(home);
        g.args(&c)
            .env("GIT_TRACE2_EVENT_NESTING", "100")
            .env("GIT_TRACE2_CONFIG_PARAMS", "core.*");
        g.env("GIT_TRACE2_ENV_VARS", "LC_ALL");
        for (k, v) in env {
            g.env(k, v);
        }
        let _ = run(&mut g);
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// git writes `signal`, `atexit`, `timer` and `counter` with the location
/// of the target's own source file (`trace2/tr2_tgt_<target>.c:<n>`).
pub(crate) fn target_location(r: &Record, kind: TargetKind) -> trace2::Event<'static> {
    let mut ev = r.event.clone();
    if ev
        .file
        .as_deref()
        .is_some_and(|f| f.starts_with("trace2/tr2_tgt_"))
    {
        let t = match kind {
            TargetKind::Normal => "normal",
            TargetKind::Perf => "perf",
            TargetKind::Event => "event",
        };
        ev.file = Some(format!("trace2/tr2_tgt_{t}.c").into());
    }
    ev
}

pub(crate) fn mask_tgt_line(l: &str) -> String {
    let mut s = l.to_string();
    for t in ["normal", "perf"] {
        s = mask_number_after(&s, &format!("tr2_tgt_{t}.c:"));
    }
    s
}

pub(crate) fn format_all(records: &[Record], kind: TargetKind, opts: &FormatOptions) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        let mut buf = Vec::new();
        if kind.format(&target_location(r, kind), opts, &mut buf) {
            // A LF inside an argument splits a normal/perf line, as in git.
            for l in String::from_utf8_lossy(&buf).split('\n') {
                out.push(l.to_string());
            }
        }
    }
    out
}

/// Masks the leading `HH:MM:SS.uuuuuu ` of a non-brief normal/perf line.
pub(crate) fn mask_clock(l: &str) -> String {
    if l.len() > 16 && l.as_bytes()[2] == b':' && l.as_bytes()[15] == b' ' {
        format!("_CLOCK_{}", &l[15..])
    } else {
        l.to_string()
    }
}

/// Masks perf's t_abs column on lines whose event did not carry `t_abs`.
pub(crate) fn mask_perf_tabs(line: &str, has_tabs: bool, brief: bool) -> String {
    if has_tabs {
        return line.to_string();
    }
    let mut cols: Vec<String> = line
        .splitn(if brief { 8 } else { 9 }, " | ")
        .map(String::from)
        .collect();
    let i = if brief { 4 } else { 5 };
    if cols.len() > i && !cols[i].trim().is_empty() {
        cols[i] = "_TABS_".into();
    }
    cols.join(" | ")
}

fn check(brief: bool) {
    let home = TempDir::new(if brief { "fmt-brief" } else { "fmt" });
    let (dn, dp, de) = (home.join("normal"), home.join("perf"), home.join("event"));
    for d in [&dn, &dp, &de] {
        std::fs::create_dir(d).unwrap();
    }
    let b = if brief { "1" } else { "0" };
    let env = [
        ("GIT_TRACE2", dn.display().to_string()),
        ("GIT_TRACE2_PERF", dp.display().to_string()),
        ("GIT_TRACE2_EVENT", de.display().to_string()),
        ("GIT_TRACE2_BRIEF", b.to_string()),
        ("GIT_TRACE2_PERF_BRIEF", b.to_string()),
        ("GIT_TRACE2_EVENT_BRIEF", b.to_string()),
    ];
    scenarios(home.path(), &env);
    let names = files(&de);
    assert!(names.len() >= 10, "expected many git sessions, got {names:?}");
    assert_eq!(names, files(&dn));
    assert_eq!(names, files(&dp));
    let opts = FormatOptions {
        brief,
        event_nesting: 100,
        ..FormatOptions::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    for name in &names {
        let raw = std::fs::read(de.join(name)).unwrap();
        let (mut records, stats) = read_file(&de.join(name), ReadOptions::default()).unwrap();
        assert_eq!(stats.bad_lines, 0);
        // 1. event: byte-identical round trip.
        let ours = format_all(&records, TargetKind::Event, &opts).join("\n") + "\n";
        assert_eq!(
            ours,
            String::from_utf8_lossy(&raw),
            "event target differs for {name}"
        );
        for r in &records {
            seen.insert(r.event.kind.name().to_string());
        }
        // 2. normal.
        let git_normal: Vec<String> = read(&dn.join(name))
            .lines()
            .map(|l| mask_tgt_line(&mask_clock(l)))
            .collect();
        let ours: Vec<String> = format_all(&records, TargetKind::Normal, &opts)
            .iter()
            .map(|l| mask_tgt_line(&mask_clock(l)))
            .collect();
        assert_eq!(ours, git_normal, "normal target differs for {name}");
        // 3. perf.
        infer_nesting(&mut records);
        let git_perf: Vec<String> = read(&dp.join(name))
            .lines()
            .map(|l| mask_tgt_line(&mask_clock(l)))
            .collect();
        let mut ours = Vec::new();
        let mut masked_git = Vec::new();
        let mut gi = git_perf.iter();
        for r in &records {
            let mut buf = Vec::new();
            if TargetKind::Perf.format(&target_location(r, TargetKind::Perf), &opts, &mut buf) {
                for l in String::from_utf8_lossy(&buf).split('\n') {
                    let has = r.event.t_abs.is_some();
                    ours.push(mask_perf_tabs(&mask_tgt_line(&mask_clock(l)), has, brief));
                    masked_git.push(mask_perf_tabs(
                        gi.next().map(|s| s.as_str()).unwrap_or("<missing>"),
                        has,
                        brief,
                    ));
                }
            }
        }
        assert!(gi.next().is_none(), "git wrote more perf lines for {name}");
        assert_eq!(ours, masked_git, "perf target differs for {name}");
    }
    for must in [
        "version",
        "start",
        "cmd_ancestry",
        "cmd_name",
        "alias",
        "child_start",
        "child_exit",
        "def_param",
        "def_repo",
        "region_enter",
        "region_leave",
        "data",
        "data_json",
        "exit",
        "atexit",
    ] {
        assert!(seen.contains(must), "scenarios never produced {must}: {seen:?}");
    }
}

#[test]
fn formats_equal_git_full() {
    check(false);
}

#[test]
fn formats_equal_git_brief() {
    check(true);
}
