//! `--files` directories summarised (docs/files.md, "Directories summarised"): on real runs — a
//! compile of a file including many system headers, a `make -j2` of a generated project — the
//! summaries' directory entries and their counts are those the per-file JSON Lines give, worked
//! out here on their own; the text, Markdown and `--files-dirs` say the same.
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::common::*;
use crate::files::{c_project, run_files};

/// The directory holding `p`, with its `/`.
fn parent(p: &str) -> &str {
    &p[..=p.rfind('/').unwrap()]
}

/// (path, dir, files) of a list as the rule makes it, worked out from the paths: a directory
/// holding more than `n` of them is one entry; those under `project` (when given) stay listed.
fn expected(paths: &BTreeSet<String>, n: usize, project: Option<&str>) -> BTreeSet<(String, bool, u64)> {
    let kept = |p: &str| project.is_some_and(|d| p.starts_with(d));
    let mut by_dir: BTreeMap<&str, u64> = BTreeMap::new();
    for p in paths.iter().filter(|p| !kept(p)) {
        *by_dir.entry(parent(p)).or_default() += 1;
    }
    let mut out = BTreeSet::new();
    for p in paths {
        let d = parent(p);
        match by_dir.get(d) {
            Some(&k) if !kept(p) && k > n as u64 => {
                out.insert((d.to_string(), true, k));
            }
            _ => {
                out.insert((p.clone(), false, 1));
            }
        }
    }
    out
}

/// The entries of a summary JSON list as (path, dir, files).
fn entries(list: &Value) -> BTreeSet<(String, bool, u64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["dir"].as_bool().unwrap(),
                e["files"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A line's path as the summary JSON shows it: its exact bytes (`path_base64` when they are not
/// UTF-8), each byte of an invalid sequence as `\xNN`.
fn shown_path(l: &Value) -> String {
    use base64::Engine as _;
    let Some(b) = l["path_base64"].as_str() else {
        return l["path"].as_str().unwrap().to_string();
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(b).unwrap();
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02x}"));
        }
    }
    out
}

/// Each pid's distinct paths read and written, from the JSON Lines.
fn uses(lines: &[Value]) -> BTreeMap<i64, [BTreeSet<String>; 2]> {
    let mut m: BTreeMap<i64, [BTreeSet<String>; 2]> = BTreeMap::new();
    for l in lines.iter().filter(|l| l["event"] == "file") {
        let k = match l["access"].as_str().unwrap() {
            "read" => 0,
            "write" => 1,
            _ => continue,
        };
        m.entry(l["pid"].as_i64().unwrap()).or_default()[k].insert(shown_path(l));
    }
    m
}

/// Checks the summary's `files.directories` and each process's against the JSON Lines with
/// threshold `n` and the project `dir`: every entry and count, the processes of each whole-run
/// entry, the order (most files first; in a process's list the project's files first), and
/// that the entries' files add up to the per-file counts.
fn check_summary(s: &Value, lines: &[Value], n: usize, dir: &str) {
    let f = &s["files"];
    let d = &f["directories"];
    let project = format!("{dir}/");
    assert_eq!(d["more_than"], n, "{d}");
    assert_eq!(d["project"].as_str(), Some(project.as_str()), "{d}");
    let by_pid = uses(lines);
    for (k, key, count) in [(0, "read", "read"), (1, "written", "written")] {
        // The whole run: every path, the project's summarised too.
        let all: BTreeSet<String> = by_pid.values().flat_map(|u| u[k].iter().cloned()).collect();
        assert_eq!(entries(&d[key]), expected(&all, n, None), "{key}: {d}");
        let list = d[key].as_array().unwrap();
        let total: u64 = list.iter().map(|e| e["files"].as_u64().unwrap()).sum();
        assert_eq!(total, f[count].as_u64().unwrap(), "{key}: every file once");
        let files: Vec<u64> = list.iter().map(|e| e["files"].as_u64().unwrap()).collect();
        assert!(
            files.windows(2).all(|w| w[0] >= w[1]),
            "most files first: {files:?}"
        );
        for e in list {
            // Its processes: those that used a file it stands for.
            let p = e["path"].as_str().unwrap();
            let who = by_pid
                .iter()
                .filter(|(_, u)| {
                    u[k].iter()
                        .any(|x| if e["dir"] == true { parent(x) == p } else { x == p })
                })
                .count() as u64;
            assert_eq!(e["processes"].as_u64(), Some(who), "{e}");
            if e["dir"] == true {
                let top = e["top"].as_array().unwrap();
                assert_eq!(top.len(), 3, "{e}");
                assert!(
                    top.iter().all(|t| parent(t["path"].as_str().unwrap()) == p),
                    "{e}"
                );
            }
        }
    }
    // Each process: the directories it read or wrote more than N files in, its project's files
    // aside; the field only when there is one.
    for b in f["by_process"].as_array().unwrap() {
        let u = &by_pid[&b["pid"].as_i64().unwrap()];
        let mut any = false;
        for (k, key) in [(0, "read"), (1, "written")] {
            let want: BTreeSet<(String, bool, u64)> = expected(&u[k], n, Some(&project))
                .into_iter()
                .filter(|e| e.1)
                .collect();
            any |= !want.is_empty();
            let got = match b.get("directories") {
                Some(d) => entries(&d[key]),
                None => BTreeSet::new(),
            };
            assert_eq!(got, want, "pid {} {key}: {b}", b["pid"]);
            assert!(got.iter().all(|e| !e.0.starts_with(&project)), "{b}");
        }
        assert_eq!(b.get("directories").is_some(), any, "{b}");
        assert_eq!(b["read"].as_u64(), Some(u[0].len() as u64), "{b}");
    }
}

/// The text summary's directory lines (`read      25 files in DIR by 12 processes: …`) as
/// (access, files, dir, processes).
fn text_dirs(err: &str) -> Vec<(String, u64, String, u64)> {
    err.lines()
        .filter_map(|l| {
            let l = l.strip_prefix("  ")?;
            let (verb, rest) = l.split_once(' ')?;
            if verb != "read" && verb != "written" {
                return None;
            }
            let (files, rest) = rest.trim_start().split_once(" files in ")?;
            let (dir, rest) = rest.split_once(" by ")?;
            let procs = rest.split(' ').next()?;
            Some((
                verb.to_string(),
                files.parse().ok()?,
                dir.to_string(),
                procs.parse().ok()?,
            ))
        })
        .collect()
}

/// A compile of a file that includes many system headers, and two of the project's own: its
/// cc1 reads dozens of files under `/usr/include/x86_64-linux-gnu/bits/`, which the summaries
/// show as one line each directory with their count, as the JSON Lines count them.
#[test]
fn a_compiles_headers_are_summarised_by_directory() {
    let dir = tmp("cc-dirs");
    std::fs::create_dir_all(format!("{dir}/inc")).unwrap();
    std::fs::write(format!("{dir}/inc/one.h"), "#define ONE 1\n").unwrap();
    std::fs::write(format!("{dir}/two.h"), "#define TWO 2\n").unwrap();
    let headers = [
        "stdio.h",
        "stdlib.h",
        "string.h",
        "math.h",
        "pthread.h",
        "signal.h",
        "sys/socket.h",
        "netinet/in.h",
        "unistd.h",
        "fcntl.h",
        "sys/stat.h",
        "time.h",
    ];
    let mut src: String = headers.iter().map(|h| format!("#include <{h}>\n")).collect();
    src.push_str("#include \"inc/one.h\"\n#include \"two.h\"\nint main(void) { return ONE + TWO; }\n");
    std::fs::write(format!("{dir}/a.c"), src).unwrap();
    let (out_file, summary, md) = (
        format!("{dir}/t.jsonl"),
        format!("{dir}/s.json"),
        format!("{dir}/s.md"),
    );
    let out = Command::new(PROCTRACE)
        .args(["run", "--files", "-o", &out_file, "--summary-json", &summary])
        .args(["--summary-md", &md, "--tree", "full", "--", "cc", "-c", "a.c"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    check_summary(&s, &lines, 3, &dir);

    // cc1: the system's headers in directories, `bits/` the largest with dozens, most of what
    // it read.
    let bp = s["files"]["by_process"].as_array().unwrap();
    let cc1 = bp
        .iter()
        .find(|b| b["program"] == "cc1")
        .unwrap_or_else(|| panic!("cc1: {bp:?}"));
    let read = cc1["directories"]["read"].as_array().unwrap();
    assert_eq!(read[0]["path"], "/usr/include/x86_64-linux-gnu/bits/", "{read:?}");
    assert!(read[0]["files"].as_u64().unwrap() > 20, "{read:?}");
    let summarised: u64 = read.iter().map(|e| e["files"].as_u64().unwrap()).sum();
    assert!(
        summarised * 4 > cc1["read"].as_u64().unwrap() * 3,
        "{summarised} of {} files in {} lines",
        cc1["read"],
        read.len()
    );

    // The text: the whole run's largest directories, as the JSON lists them.
    let err = stderr(&out);
    let shown = text_dirs(&err);
    let want: Vec<(String, u64, String, u64)> = s["files"]["directories"]["read"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["dir"] == true)
        .take(5)
        .map(|e| {
            (
                "read".to_string(),
                e["files"].as_u64().unwrap(),
                e["path"].as_str().unwrap().to_string(),
                e["processes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shown, want, "{err}");
    assert!(shown[0].1 > 20, "{err}");
    // …and a file read by one process is no "most read".
    assert!(!err.contains("read by   1:"), "{err}");
    // The Markdown: a row for each of those directories.
    let md = std::fs::read_to_string(&md).unwrap();
    for (_, n, d, p) in &want {
        assert!(md.contains(&format!("| {n} | `{d}` | {p} |")), "{d}: {md}");
    }

    // --files-dirs: the same trace with another threshold, and with none.
    let again = |n: &str| -> (std::process::Output, Value) {
        let j = format!("{dir}/s-{n}.json");
        let o = Command::new(PROCTRACE)
            .args([
                "analyze",
                "--tree",
                "none",
                "--files-dirs",
                n,
                "--summary-json",
                &j,
                &out_file,
            ])
            .output()
            .unwrap();
        let v = std::fs::read_to_string(&j)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        (o, v)
    };
    let (o, v) = again("10");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_summary(&v, &lines, 10, &dir);
    let (o, v) = again("none");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = &v["files"]["directories"];
    assert!(d["more_than"].is_null(), "{d}");
    assert!(
        d["read"].as_array().unwrap().iter().all(|e| e["dir"] == false),
        "every file listed: {d}"
    );
    assert_eq!(
        d["read"].as_array().unwrap().len() as u64,
        v["files"]["read"].as_u64().unwrap()
    );
    let (o, _) = again("three");
    assert_eq!(o.status.code(), Some(2), "a usage error: {}", stderr(&o));
    assert!(
        stderr(&o).contains("--files-dirs") && stderr(&o).contains("'three'"),
        "{}",
        stderr(&o)
    );
}

/// A `make -j2` of a generated project: each compile's list keeps the project's files one by
/// one, the whole run's summarises the project's directory too (sources, headers, objects),
/// and a directory with a hostile name (an escape sequence, a byte that is not UTF-8) holding
/// more than N files is shown escaped, its files counted.
#[test]
fn a_builds_directories_agree_with_the_per_file_json() {
    let dir = c_project(8);
    // The link step also writes four files into a directory with a hostile name.
    let mk = std::fs::read_to_string(format!("{dir}/Makefile")).unwrap();
    std::fs::write(
        format!("{dir}/Makefile"),
        mk.replace(
            "\tcc -o $@ $^\n",
            "\tcc -o $@ $^\n\tsh -c 'd=\"$$(printf \"out\\033[2J\\377\")\"; mkdir -p \"$$d\"; for i in 1 2 3 4; do echo $$i > \"$$d/$$i.txt\"; done'\n",
        ),
    )
    .unwrap();
    let (out_file, summary) = (tmp("dirs-make.jsonl"), tmp("dirs-make.json"));
    let out = Command::new(PROCTRACE)
        .args(["run", "--files", "-o", &out_file, "--summary-json", &summary])
        .args(["--", "make", "-j2", "-s"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = read_lines(&out_file);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    check_summary(&s, &lines, 3, &dir);
    let d = &s["files"]["directories"];
    // The whole run: the project's directory on one line, its 9 sources, 9 headers and the
    // objects the link read among them.
    let proj = format!("{dir}/");
    let p = d["read"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == proj.as_str())
        .unwrap_or_else(|| panic!("{proj}: {d}"));
    assert!(p["files"].as_u64().unwrap() >= 9 + 9 + 9, "{p}");
    // The hostile directory: its bytes as the summary JSON shows them (`\xff`), its four files.
    let hostile = format!("{dir}/out\u{1b}[2J\\xff/");
    let h = d["written"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == hostile.as_str())
        .unwrap_or_else(|| panic!("{hostile:?}: {d}"));
    assert_eq!(
        (h["files"].as_u64(), h["processes"].as_u64()),
        (Some(4), Some(1)),
        "{h}"
    );
    // The text: escaped, never the escape itself.
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}'), "{err}");
    let shown = text_dirs(&err);
    assert!(
        shown
            .iter()
            .any(|t| t.0 == "written" && t.1 == 4 && t.2 == format!("{dir}/out\\e[2J\\xff/")),
        "{shown:?}\n{err}"
    );
    // A compile's cc1 (of f0.c … f7.c, which include stdio.h): stdio.h's directories
    // summarised, never the project's, though it read three files there.
    let cc1s: Vec<&Value> = s["files"]["by_process"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["program"] == "cc1" && b["read"].as_u64().unwrap() > 10)
        .collect();
    assert_eq!(cc1s.len(), 8, "{s}");
    for b in cc1s {
        let read = b["directories"]["read"].as_array().unwrap();
        assert!(!read.is_empty() && read.iter().all(|e| e["dir"] == true), "{b}");
        assert!(
            read.iter()
                .all(|e| !e["path"].as_str().unwrap().starts_with(&proj)),
            "{b}"
        );
    }
}

/// `diff` of two `make -j2` runs where one compile now includes many more system headers: its
/// newly read files are summarised by directory (the project's new header one by one, first),
/// each directory's count the files it newly reads there, as the two JSON Lines give them.
#[test]
fn diff_summarises_newly_read_files_by_directory() {
    let dir = c_project(3);
    let run = |out: &str| {
        let o = run_files("ptrace", &dir, out, &[], &["make", "-j2", "-s"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let st = Command::new("make")
            .args(["-s", "clean"])
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(st.success());
    };
    let (old, new) = (tmp("old.jsonl"), tmp("new.jsonl"));
    run(&old);
    std::fs::write(format!("{dir}/new.h"), "#define NEW 1\n").unwrap();
    std::fs::write(
        format!("{dir}/f1.c"),
        "#include \"common.h\"\n#include \"h1.h\"\n#include \"new.h\"\n#include <stdio.h>\n#include <stdlib.h>\n\
         #include <string.h>\n#include <signal.h>\n#include <pthread.h>\n#include <sys/socket.h>\nint f1(void) { return NEW; }\n",
    )
    .unwrap();
    run(&new);
    // What the compile of f1.c's cc1 newly reads, from the JSON Lines.
    let reads = |path: &str| -> BTreeSet<String> {
        let lines = read_lines(path);
        let ps = processes(&lines);
        let cc1 = ps
            .values()
            .find(|p| {
                p.execs
                    .iter()
                    .flatten()
                    .any(|a| a[0].ends_with("cc1") && a.iter().any(|w| w == "f1.c"))
            })
            .unwrap_or_else(|| panic!("cc1 of f1.c in {path}"))
            .pid;
        uses(&lines).remove(&cc1).unwrap_or_default()[0].clone()
    };
    let newly: BTreeSet<String> = reads(&new).difference(&reads(&old)).cloned().collect();
    let mut by_dir: BTreeMap<&str, u64> = BTreeMap::new();
    for p in newly.iter().filter(|p| p.starts_with("/usr/")) {
        *by_dir.entry(parent(p)).or_default() += 1;
    }
    assert!(by_dir.values().any(|&n| n > 10), "{newly:?}");

    let out = Command::new(PROCTRACE)
        .args(["diff", "--json", &old, &new])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f1 = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["argv"][0].as_str().unwrap().ends_with("cc1")
                && f["argv"].as_array().unwrap().iter().any(|w| w == "f1.c")
        })
        .unwrap_or_else(|| panic!("cc1 of f1.c: {v}"));
    assert_eq!(f1["newly_read_count"].as_u64(), Some(newly.len() as u64), "{f1}");
    let list = f1["newly_read_dirs"].as_array().unwrap();
    // The project's new header first, on its own.
    assert!(
        list[0]["path"].as_str().unwrap().ends_with("/proj/new.h") && list[0]["dir"] == false,
        "{f1}"
    );
    // Each system directory: one entry with its count when more than 3, else its files.
    for (d, n) in &by_dir {
        let here: Vec<&Value> = list
            .iter()
            .filter(|e| parent(e["path"].as_str().unwrap()) == *d || e["path"] == *d)
            .collect();
        if *n > 3 {
            assert_eq!(here.len(), 1, "{d}: {here:?}");
            assert_eq!(
                (here[0]["dir"].as_bool(), here[0]["files"].as_u64()),
                (Some(true), Some(*n)),
                "{d}"
            );
        } else {
            assert!(
                here.len() as u64 == *n && here.iter().all(|e| e["dir"] == false),
                "{d}: {here:?}"
            );
        }
    }
    let total: u64 = list.iter().map(|e| e["files"].as_u64().unwrap()).sum();
    assert_eq!(total, newly.len() as u64, "every newly read file once: {f1}");
    // The per-file list is still there (its first 20), the build's own first.
    assert!(
        f1["newly_read"][0].as_str().unwrap().ends_with("/proj/new.h"),
        "{f1}"
    );

    // The text names the new header, then counts the rest.
    let out = Command::new(PROCTRACE)
        .args(["diff", &old, &new])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.contains("cc1") && l.contains("f1.c") && l.contains(" reads "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("/proj/new.h (+") && line.ends_with(&format!("(+{} more)", newly.len() - 1)),
        "{line}"
    );
    // --files-dirs none: every file its own entry.
    let out = Command::new(PROCTRACE)
        .args(["diff", "--json", "--files-dirs", "none", &old, &new])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f["newly_read_dirs"].as_array().unwrap().iter())
            .all(|e| e["dir"] == false),
        "{v}"
    );
}
