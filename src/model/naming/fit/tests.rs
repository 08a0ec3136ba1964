//! [`fit`] on the argv of the recorded real builds, on the cases the rules name, and on
//! hostile labels.

use std::collections::BTreeMap;

use super::*;
use crate::model::naming::quote_argv;

/// The recorded builds whose compiles are checked (tests/fixtures/builds/README.md).
const BUILDS: [&str; 4] = ["libffi-run1", "cargo-zstd-sys", "pip-wheel", "make-fails"];

/// The argv of every exec recorded in `tests/fixtures/builds/NAME.jsonl`.
fn recorded_argv(name: &str) -> Vec<Vec<String>> {
    let path = format!(
        "{}/tests/fixtures/builds/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let argv: Vec<Vec<String>> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["e"] == "exec_details")
        .filter_map(|v| {
            let a = v["details"]["argv"].as_array()?;
            Some(a.iter().map(|w| w.as_str().unwrap().to_string()).collect())
        })
        .collect();
    assert!(argv.len() > 20, "{name}: {} execs", argv.len());
    argv
}

/// What a compile works on, read from its argv independently of [`fit`]: its sources and its
/// `-o` target; `None` when it is no compile (gcc, cc, cc1, as, rustc, libtool
/// `--mode=compile`, a cargo build script).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Compile {
    program: String,
    sources: Vec<String>,
    target: Option<String>,
    crate_name: Option<String>,
}

fn compile(a: &[String]) -> Option<Compile> {
    let program = base_name(a.first()?).to_string();
    let libtool = a.iter().any(|w| w == "--mode=compile");
    let cc = matches!(
        program.as_str(),
        "gcc" | "cc" | "cc1" | "cc1plus" | "as" | "rustc" | "x86_64-linux-gnu-gcc"
    );
    if program.starts_with("build-script-") {
        return Some(Compile {
            program: a[0].clone(),
            sources: Vec::new(),
            target: None,
            crate_name: None,
        });
    }
    if !cc && !libtool {
        return None;
    }
    let after = |opt: &str| a.windows(2).find(|p| p[0] == opt).map(|p| p[1].clone());
    let sources = a
        .windows(2)
        .filter(|p| !p[1].starts_with('-') && p[0] != "-dumpbase")
        .map(|p| &p[1])
        .filter(|w| {
            [".c", ".S", ".s", ".rs", ".cpp", ".cc"]
                .iter()
                .any(|e| w.ends_with(e))
        })
        .cloned()
        .collect();
    Some(Compile {
        program,
        sources,
        target: after("-o"),
        crate_name: after("--crate-name"),
    })
}

/// The columns the words that name a compile take, with a space and a `…` each: when the
/// width is at least this, the fitted label shows their base names.
fn naming_width(a: &[String], c: &Compile) -> usize {
    let q = |w: &str| width(&escape::word(w)) + 2;
    let mut need = q(&c.program);
    if a.iter().any(|w| w == "--mode=compile") {
        // The interpreter, libtool's path and the compiler it runs.
        need += q(base_name(&a[0])) + a.get(1).map_or(0, |s| q(s)) + q("gcc");
    }
    need += c.sources.iter().map(|s| q(s)).sum::<usize>();
    need += c.target.as_deref().map_or(0, |t| q(t) + 3);
    need += c.crate_name.as_deref().map_or(0, |t| q(t) + 13);
    need
}

#[test]
fn compiles_of_different_files_never_read_the_same_on_the_recorded_builds() {
    let mut compiles = 0;
    for name in BUILDS {
        let argv = recorded_argv(name);
        compiles += argv.iter().filter(|a| compile(a).is_some()).count();
        for w in [60, 80] {
            // Each label shown, and the compiles that read so.
            let mut read: BTreeMap<String, (Compile, &[String])> = BTreeMap::new();
            for a in &argv {
                let label = quote_argv(a, false);
                let shown = fit(&label, w);
                assert!(width(&shown) <= w, "{name} at {w}: {shown:?} from {label:?}");
                let Some(c) = compile(a) else { continue };
                if let Some((other, oa)) = read.get(&shown) {
                    assert!(
                        *other == c,
                        "{name} at {w}: {shown:?} reads the same for\n{oa:?}\nand\n{a:?}"
                    );
                }
                read.insert(shown.clone(), (c.clone(), a));
                if naming_width(a, &c) <= w {
                    for f in c.sources.iter().chain(&c.target) {
                        let base = escape::text(base_name(f)).into_owned();
                        assert!(
                            shown.contains(&base),
                            "{name} at {w}: {shown:?} lacks {base:?} ({label:?})"
                        );
                    }
                    if let Some(k) = &c.crate_name {
                        assert!(shown.contains(k.as_str()), "{name} at {w}: {shown:?}");
                    }
                }
            }
        }
    }
    // libffi alone compiles hundreds of times (configure's probes and the build).
    assert!(compiles > 400, "{compiles} compiles");
}

/// The recorded zstd-sys build script and rustc's toolchain path: the crate stays, the
/// toolchain's directory goes.
#[test]
fn cargo_rows_keep_the_crate_and_lose_the_toolchain_path() {
    let argv = recorded_argv("cargo-zstd-sys");
    let script = argv
        .iter()
        .find(|a| a[0].contains("/zstd-sys-") && a[0].ends_with("/build-script-build"))
        .unwrap();
    let shown = fit(&quote_argv(script, false), 60);
    assert!(shown.starts_with("zstd-sys-"), "{shown}");
    assert!(shown.ends_with("/build-script-build"), "{shown}");
    let rustc = argv
        .iter()
        .find(|a| a[0].ends_with("/rustc") && a.iter().any(|w| w == "zstd_sys"))
        .unwrap();
    let shown = fit(&quote_argv(rustc, false), 80);
    assert!(shown.starts_with("rustc --crate-name zstd_sys "), "{shown}");
    assert!(shown.contains("zstd-sys-2.1.3+zstd.1.5.7/src/lib.rs"), "{shown}");
    // `cargo build`: the subcommand stays.
    let cargo = argv.iter().find(|a| a[0].ends_with("/cargo")).unwrap();
    assert_eq!(fit(&quote_argv(cargo, false), 30), "cargo build -j2 --offline");
    assert_eq!(fit(&quote_argv(cargo, false), 14), "cargo build …");
}

/// The issue's examples, one per rule of the module docs.
#[test]
fn each_rule_on_its_example() {
    let f = |argv: &[&str], w: usize| fit(&quote_argv(argv, false), w);
    // The program's directory goes first; its base name stays.
    let cc1 = [
        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
        "-quiet",
        "-I",
        "../include",
        "../src/closures.c",
        "-dumpbase",
        "closures.c",
        "-o",
        "/tmp/cc6gPwzT.s",
    ];
    assert_eq!(
        f(&cc1, 80),
        "cc1 … -I ../include ../src/closures.c -dumpbase closures.c -o /tmp/cc6gPwzT.s"
    );
    assert_eq!(f(&cc1, 50), "cc1 … ../src/closures.c … -o /tmp/cc6gPwzT.s");
    // An option's value goes with it: `-I ../include` as one, `-dumpbase closures.c` too.
    assert_eq!(
        f(&cc1, 63),
        "cc1 … ../src/closures.c -dumpbase closures.c -o /tmp/cc6gPwzT.s"
    );
    assert_eq!(f(&cc1, 62), "cc1 … ../src/closures.c … -o /tmp/cc6gPwzT.s");
    // libtool under bash: libtool (its path kept), its mode, gcc, the source and -o.
    let libtool = [
        "/bin/bash",
        "../../libtool",
        "--silent",
        "--tag=CC",
        "--mode=compile",
        "gcc",
        "-DHAVE_CONFIG_H",
        "-I.",
        "-I..",
        "-O3",
        "-MT",
        "src/closures.lo",
        "-c",
        "-o",
        "src/closures.lo",
        "../src/closures.c",
    ];
    assert_eq!(
        f(&libtool, 82),
        "bash ../../libtool … --mode=compile gcc … -c -o src/closures.lo ../src/closures.c"
    );
    assert_eq!(
        f(&libtool, 80),
        "bash ../../libtool … --mode=compile gcc … -o src/closures.lo ../src/closures.c"
    );
    // Modes go before a file's name is cut, and then the script's directory.
    assert_eq!(
        f(&libtool, 63),
        "bash ../../libtool … gcc … -o src/closures.lo ../src/closures.c"
    );
    // (the room the script's directory leaves takes `-c` back).
    assert_eq!(
        f(&libtool, 60),
        "bash libtool … gcc … -c -o src/closures.lo ../src/closures.c"
    );
    assert_eq!(
        f(&libtool, 57),
        "bash libtool … gcc … -o src/closures.lo ../src/closures.c"
    );
    // A mode left out in vain comes back when the cut leaves the files' names whole.
    let cc = ["cc", "-c", "bad.c", "-o", "/tmp/t24222-0/objs/bad.o"];
    assert_eq!(f(&cc, 40), "cc -c bad.c -o /tmp/t24222-0/objs/bad.o");
    assert_eq!(f(&cc, 36), "cc -c bad.c -o …/t24222-0/objs/bad.o");
    // Then the programs that only lead to the one at work go (the interpreter, libtool), and
    // the kept words are cut from their start, their ends kept; at the narrowest `-o` goes
    // for the source.
    assert_eq!(f(&libtool, 40), "… gcc … -o …c/closures.lo …rc/closures.c");
    assert_eq!(f(&libtool, 30), "… gcc … ../src/closures.c");
    assert_eq!(f(&libtool, 20), "… gcc … …/closures.c");
    // The subcommand of git, cargo, make, pip (after python -m).
    assert_eq!(
        f(
            &[
                "/usr/bin/git",
                "-C",
                "/some/long/repository/path",
                "commit",
                "-q",
                "-m",
                "message"
            ],
            20
        ),
        "git … commit …"
    );
    assert_eq!(
        f(&["make", "-j2", "-s", "all-am", "V=1", "CFLAGS=-O2 -g"], 15),
        "make … all-am …"
    );
    assert_eq!(
        f(
            &[
                "/usr/bin/python3.11",
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "-w",
                "/tmp/wheels/dir",
                "."
            ],
            30
        ),
        "python3.11 -m pip wheel … ."
    );
    // An interpreter's script.
    let python = [
        "/usr/bin/python3",
        "-u",
        "-W",
        "ignore",
        "/opt/tools/setup.py",
        "bdist_wheel",
        "--universal",
    ];
    assert_eq!(f(&python, 43), "python3 … /opt/tools/setup.py bdist_wheel …");
    assert_eq!(f(&python, 40), "python3 … setup.py bdist_wheel …");
    // A wrapper's program is a program: env's assignments go, its directory too.
    assert_eq!(
        f(
            &[
                "/usr/bin/env",
                "CC=gcc",
                "LANG=C",
                "/usr/bin/gcc",
                "-O2",
                "-c",
                "x.c",
                "-o",
                "x.o"
            ],
            25
        ),
        "env … gcc … -c x.c -o x.o"
    );
    // Each run of words left out is one `…`; the last word is kept over the others.
    let ar = [
        "ar",
        "cr",
        ".libs/libffi.a",
        "src/a.o",
        "src/b.o",
        "src/c.o",
        "src/x86/unix64.o",
    ];
    assert_eq!(f(&ar, 47), "ar cr .libs/libffi.a src/a.o … src/x86/unix64.o");
    assert_eq!(f(&ar, 46), "ar cr .libs/libffi.a … src/x86/unix64.o");
    assert_eq!(f(&ar, 20), "ar … …c/x86/unix64.o");
}

/// What the tree puts after a name survives; a bracketed name is one word.
#[test]
fn notes_and_bracketed_names() {
    let argv = ["/usr/bin/gcc", "-DA", "-DB", "-DC", "-c", "x.c", "-o", "x.o"];
    let with = format!("{}  (exec ×2)", quote_argv(argv, false));
    assert_eq!(fit(&with, 32), "gcc … -c x.c -o x.o  (exec ×2)");
    // Too narrow for the note beside a name: the name alone.
    assert!(!fit(&with, 13).contains("exec"));
    assert!(width(&fit(&with, 13)) <= 13);
    let unread = "[cc1plus-very-long-name] (argv unavailable)";
    assert_eq!(fit(unread, 36), "[cc1p…-long-name] (argv unavailable)");
    assert_eq!(fit("[fork of configure-helpe]", 18), "[fork…igure-helpe]");
    // An argv word in quotes that reads like the note is no note: `(` is quoted.
    let quoted = quote_argv(["echo", "a", "(argv unavailable)"], false);
    assert_eq!(quoted, "echo a '(argv unavailable)'");
    assert_eq!(split_note(&quoted), (quoted.as_str(), ""));
}

/// A quoted word is never split at a space inside it, and escapes stay as they were.
#[test]
fn quoted_words_stay_whole() {
    let label = quote_argv(
        ["/bin/sh", "-c", "echo one two three four five six", "sh", "x y"],
        false,
    );
    let shown = fit(&label, 34);
    // The script's text is fitted as a label within its quotes: its first word and its last.
    assert_eq!(shown, "sh -c 'echo one two … six' … 'x y'");
    // Once: a script's text within it is cut in its middle, however deep the nesting.
    let deep = "sh -c ".repeat(100_000) + "'x'";
    let label = quote_argv(["sh", "-c", deep.as_str()], false);
    let shown = fit(&label, 50);
    assert!(
        width(&shown) <= 50 && shown.starts_with("sh -c 'sh -c "),
        "{shown}"
    );
    // `$'…'`: its directory goes inside the quotes, the escape stays escaped.
    let label = quote_argv(["/tmp/d i r/\x1b[2Jevil", "-v", "--long-option", "file"], false);
    assert_eq!(label, r"$'/tmp/d i r/\e[2Jevil' -v --long-option file");
    assert_eq!(fit(&label, 20), r"$'\e[2Jevil' … file");
    // A git-quoted program is quoted again as git would (bare when it can be).
    let label = quote_argv(["/opt/my tools/cc", "-O2", "-c", "a b.c"], false);
    assert_eq!(fit(&label, 16), "cc … -c 'a b.c'");
    assert_eq!(split_words(&label).count(), 4);
    assert_eq!(unquote(r"'it'\''s'").as_deref(), Some("it's"));
    assert_eq!(unquote(r"'open").as_deref(), None);
}

/// What fits is left as it is; nothing is longer than asked; wide characters count two.
#[test]
fn widths() {
    assert_eq!(fit("make all", 8), "make all");
    assert_eq!(fit("make all", 0), "");
    assert_eq!(fit("x", 0), "");
    assert_eq!(fit("", 0), "");
    assert_eq!(fit("日本語 日本語 日本語", 15), "日本語 … 日本語");
    assert_eq!(fit("日本語 日本語 日本語", 9), "…語 … …語");
    assert!(width(&fit("日本語日本語日本語", 5)) <= 5);
    assert_eq!(cut_middle("abcdefghij", 7), "ab…ghij");
    assert_eq!(cut_middle("abcdefghij", 1), "…");
}

/// Pieces of hostile labels: our quoting, escapes, wide and zero-width characters, notes,
/// brackets, options, compilers and paths.
const PIECES: [&str; 24] = [
    " ",
    "  ",
    "'",
    "$'",
    "\\",
    "'\\''",
    "\\e",
    "\\x1b",
    "日本",
    "e\u{301}",
    "…",
    "[",
    "]",
    "  (exec ×3)",
    " (argv unavailable)",
    "-o",
    "-c",
    "gcc",
    "/usr/lib/gcc/",
    "a.c",
    "libtool",
    "--mode=compile",
    "sh",
    "(",
];

fn hostile() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    proptest::collection::vec(0..PIECES.len(), 0..40)
        .prop_map(|ix| ix.into_iter().map(|i| PIECES[i]).collect::<String>())
}

proptest::proptest! {
    /// Any text (not only ours): no panic, never wider than asked, unchanged when it fits.
    #[test]
    fn fit_never_exceeds_the_width(label in hostile(), w in 0usize..90) {
        let shown = fit(&label, w);
        proptest::prop_assert!(width(&shown) <= w, "{label:?} at {w}: {shown:?}");
        if width(&label) <= w {
            proptest::prop_assert_eq!(&shown, &label);
        }
    }

    /// Any argv, quoted as we quote it (control characters as `$'…'`): the same, and the
    /// program's base name is shown whenever it fits with room to spare.
    #[test]
    fn fit_of_any_argv(argv in proptest::collection::vec(".{0,12}", 1..12), w in 0usize..90) {
        let label = quote_argv(&argv, false);
        let shown = fit(&label, w);
        proptest::prop_assert!(width(&shown) <= w, "{label:?} at {w}: {shown:?}");
        let program = escape::word(base_name(&argv[0])).into_owned();
        if !argv[0].is_empty() && !argv[0].contains(['\'', '/']) && width(&program) + 3 <= w / 2 {
            proptest::prop_assert!(shown.contains(&program), "{label:?} at {w}: {shown:?}");
        }
    }
}

/// A single huge word and a huge argv: bounded time (linear), the width kept.
#[test]
fn huge_labels() {
    let word = "x".repeat(2_000_000);
    let shown = fit(&word, 40);
    assert_eq!(width(&shown), 40);
    assert!(shown.ends_with("xxxx"));
    let argv: Vec<String> = std::iter::once("gcc".to_string())
        .chain((0..200_000).map(|i| format!("-DX{i}")))
        .chain(["-c".into(), "huge.c".into(), "-o".into(), "huge.o".into()])
        .collect();
    let t = std::time::Instant::now();
    let shown = fit(&quote_argv(&argv, false), 60);
    // Options go left to right: the last ones, nearest the files, stay when there is room.
    assert_eq!(shown, "gcc … -DX199997 -DX199998 -DX199999 -c huge.c -o huge.o");
    // Linear: well under a second for 200,000 words (quadratic would take minutes).
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
}
