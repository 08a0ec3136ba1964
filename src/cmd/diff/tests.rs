use super::*;
use crate::model::event::Event;
use crate::model::tracker::Scope;
use crate::testkit::{exec, exit_status, fork, header, summary, tracker};

// ---- normalisation: one test per rule, and what must be kept ----

#[test]
fn pids_ports_and_long_numbers_become_n() {
    assert_eq!(normalize_word("12345"), "<N>");
    assert_eq!(normalize_word("--port=8080"), "--port=<N>");
    assert_eq!(normalize_word("/proc/4242/status"), "/proc/<N>/status");
    assert_eq!(normalize_word("log.1700000000"), "log.<N>");
}

#[test]
fn short_numbers_and_names_with_digits_are_kept() {
    for w in ["-j8", "-O2", "0.3", "u12.c", "unit1234.c", "x86_64", "100", "cc1"] {
        assert_eq!(normalize_word(w), w);
    }
}

#[test]
fn hex_hashes_and_addresses_become_hex() {
    assert_eq!(normalize_word("3f2a9c1"), "<HEX>");
    assert_eq!(
        normalize_word("e83c5163316f89bfbde7d9ab23ca2e25604af290"),
        "<HEX>"
    );
    assert_eq!(normalize_word("HEAD~1..a1b2c3d4e5"), "HEAD~1..<HEX>");
    assert_eq!(normalize_word("0x7ffd12"), "<HEX>");
    // Words that happen to be hex letters only, or too short, are words.
    assert_eq!(normalize_word("deadbeef"), "deadbeef");
    assert_eq!(normalize_word("abc123"), "abc123");
}

#[test]
fn timestamps_become_time() {
    assert_eq!(normalize_word("2024-05-01"), "<TIME>");
    assert_eq!(normalize_word("--since=2024-05-01T12:30:45Z"), "--since=<TIME>");
    assert_eq!(normalize_word("2024-05-01T12:30:45.123+02:00"), "<TIME>");
    assert_eq!(normalize_word("build-2024-05-01_12:30.log"), "build-<TIME>.log");
    assert_eq!(normalize_word("at 12:30:45.5"), "at <TIME>");
    assert_eq!(normalize_word("snap-20240501T123045.tar"), "snap-<TIME>.tar");
    // Not a time: a version, a ratio.
    assert_eq!(normalize_word("1.2.3"), "1.2.3");
    assert_eq!(normalize_word("16:9"), "16:9");
}

#[test]
fn temp_paths_lose_their_random_part() {
    assert_eq!(normalize_word("/tmp/ccAbc123.s"), "/tmp/<TMP>.s");
    assert_eq!(normalize_word("/tmp/ccRJzmYs.o"), "/tmp/<TMP>.o");
    assert_eq!(
        normalize_word("/tmp/tmp.Xy3kLm9QzA/out.txt"),
        "/tmp/tmp.<TMP>/out.txt"
    );
    assert_eq!(normalize_word("-o/tmp/ccAbc123.s"), "-o/tmp/<TMP>.s");
    assert_eq!(normalize_word("--file=/var/tmp/aB3dE6f"), "--file=/var/tmp/<TMP>");
    assert_eq!(normalize_word("/dev/shm/sem.Qx81kz"), "/dev/shm/sem.<TMP>");
    // Random names all in one case, from templates: gcc's ccXXXXXX (seen in a real run),
    // mktemp's tmp.XXXXXXXXXX, Python's tmpXXXXXXXX.
    assert_eq!(normalize_word("/tmp/ccqwoihv.s"), "/tmp/<TMP>.s");
    assert_eq!(normalize_word("/tmp/tmp.abcdefghij"), "/tmp/tmp.<TMP>");
    assert_eq!(normalize_word("/tmp/tmpkqzjwplx/x.py"), "/tmp/<TMP>/x.py");
    assert_eq!(normalize_word("/tmp/project/main.c"), "/tmp/project/main.c");
    // The same token outside a temp directory is a name.
    assert_eq!(normalize_word("/src/ccZ9y8X7.s"), "/src/ccZ9y8X7.s");
    // A directory merely named tmp inside a path is not a temp directory.
    assert_eq!(
        normalize_word("/work/target/tmp/ccZ9y8X7.s"),
        "/work/target/tmp/ccZ9y8X7.s"
    );
    // Plain words under /tmp stay (build/, out.txt).
    assert_eq!(normalize_word("/tmp/build/out.txt"), "/tmp/build/out.txt");
}

#[test]
fn autoconf_scratch_names_lose_their_random_part() {
    // mktemp -d ./confXXXXXX, as configure and config.status spell it.
    assert_eq!(normalize_word("./confOXGWvh/"), "./conf<TMP>/");
    assert_eq!(normalize_word("./confOXGWvh/config.h"), "./conf<TMP>/config.h");
    assert_eq!(normalize_word("./conf2kZ9aQ/subs.awk"), "./conf<TMP>/subs.awk");
    assert_eq!(
        normalize_word("./confqwerty/defines.awk"),
        "./conf<TMP>/defines.awk"
    );
    // conf$$ and the fallback conf$$-$RANDOM.
    assert_eq!(normalize_word("conf12345.sh"), "conf<N>.sh");
    assert_eq!(normalize_word("conf12345.file"), "conf<N>.file");
    assert_eq!(normalize_word("conf987subs.awk"), "conf<N>subs.awk");
    assert_eq!(normalize_word("./conf12345-321"), "./conf<N>-<N>");
    // The same run's other names are names.
    for w in [
        "conftest",
        "conftest.c",
        "conftest.o",
        "conftest.err",
        "confdefs.h",
        "confcache",
    ] {
        assert_eq!(normalize_word(w), w);
    }
    for w in [
        "configure",
        "./config.status",
        "config.log",
        "configured",
        "--config=x",
    ] {
        assert_eq!(normalize_word(w), w);
    }
    // An argv as configure runs it: `diff fficonfig.h ./confOXGWvh/config.h`.
    assert_eq!(
        normalize_argv(["diff", "fficonfig.h", "./confOXGWvh/config.h"]),
        ["diff", "fficonfig.h", "./conf<TMP>/config.h"]
    );
}

#[test]
fn mktemp_names_anywhere_and_compiler_temp_files() {
    assert_eq!(normalize_word("./tmp.k3JdQm9xZa"), "./tmp.<TMP>");
    assert_eq!(normalize_word("build/tmp.abcdefghij/x"), "build/tmp.<TMP>/x");
    assert_eq!(normalize_word("/tmp/ccAbC123.s"), "/tmp/<TMP>.s");
    assert_eq!(normalize_word("@/tmp/cc8xYz0q"), "@/tmp/<TMP>");
    // Not mktemp's ten: kept.
    assert_eq!(normalize_word("tmp.c"), "tmp.c");
}

#[test]
fn cargo_metadata_hashes_become_hex() {
    assert_eq!(
        normalize_word("target/debug/build/zstd-sys-0123456789abcdef/build-script-build"),
        "target/debug/build/zstd-sys-<HEX>/build-script-build"
    );
    // All digits or all letters: a hash all the same.
    assert_eq!(
        normalize_word("target/release/deps/libfoo-1234567890123456.rlib"),
        "target/release/deps/libfoo-<HEX>.rlib"
    );
    assert_eq!(
        normalize_word("/w/target/debug/build/cc-abcdefabcdefabcd/out"),
        "/w/target/debug/build/cc-<HEX>/out"
    );
    assert_eq!(normalize_word("metadata=9f3e2a1b0c4d5e6f"), "metadata=<HEX>");
    // A 16-letter word after a dash is a word.
    assert_eq!(normalize_word("--enable-maintainer"), "--enable-maintainer");
}

#[test]
fn pids_in_arguments_become_n() {
    assert_eq!(normalize_word("--pid=31337"), "--pid=<N>");
    assert_eq!(normalize_word("/proc/31337/fd/3"), "/proc/<N>/fd/3");
    assert_eq!(normalize_word("out.31337.log"), "out.<N>.log");
}

#[test]
fn non_ascii_words_are_kept_intact() {
    assert_eq!(normalize_word("héllo-12345-wörld"), "héllo-<N>-wörld");
    assert_eq!(normalize_word("日本"), "日本");
}

#[test]
fn argv_of_cc1_from_two_runs_matches() {
    let a = [
        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
        "-quiet",
        "u3.c",
        "-o",
        "/tmp/ccQ2aXbz.s",
    ];
    let b = [
        "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
        "-quiet",
        "u3.c",
        "-o",
        "/tmp/cc9KpLmn.s",
    ];
    assert_eq!(normalize_argv(a), normalize_argv(b));
    assert_ne!(
        normalize_argv(a),
        normalize_argv(["cc1", "-quiet", "u4.c", "-o", "/tmp/cc9KpLmn.s"])
    );
}

// ---- matching and lists, on hand-made runs ----

/// One step of a hand-made run: argv, how long it takes (ms), its raw wait status.
type StepSpec<'a> = (&'a [&'a str], u64, u32);

/// `sh build.sh` (pid 100) runs `steps` one after another (pids from `first_pid`, so the two
/// runs of a test differ in pids, as real runs do), then exits 0.
fn run_of(steps: &[StepSpec<'_>], first_pid: i32) -> (Header, Tracker, Summary) {
    run_with_costs(steps, &[], first_pid)
}

/// As [`run_of`], each step `i` with what it cost when `costs[i]` is given: CPU ms (user),
/// peak RSS KiB.
fn run_with_costs(
    steps: &[StepSpec<'_>],
    costs: &[Option<(u64, u64)>],
    first_pid: i32,
) -> (Header, Tracker, Summary) {
    const MS: u64 = 1_000_000;
    let mut t = tracker(Scope::Tree, true, true);
    t.expect_root(100);
    let mut ev: Vec<Event> = vec![fork(1_000 * MS, 1, 100)];
    ev.extend(exec(1_000 * MS + 10, 100, &["sh", "build.sh"], None));
    let mut ts = 1_001 * MS;
    for (i, (argv, ms, status)) in steps.iter().enumerate() {
        let pid = first_pid + i as i32;
        ev.push(fork(ts, 100, pid));
        ev.extend(exec(ts + 10, pid, argv, None));
        ts += ms * MS;
        if let Some(&Some((cpu_ms, rss_kib))) = costs.get(i) {
            ev.push(crate::testkit::usage(pid, cpu_ms, 0, rss_kib));
        }
        ev.push(exit_status(ts, pid, *status));
        ts += MS;
    }
    finish_run(t, ev, ts)
}

/// The end of a made-up `sh build.sh` run (pid 100): its exit at `ts`, `ev` applied, the header
/// and summary.
fn finish_run(mut t: Tracker, mut ev: Vec<Event>, ts: u64) -> (Header, Tracker, Summary) {
    ev.push(exit_status(ts, 100, 0));
    let mut facts = Vec::new();
    for e in &ev {
        t.apply(e, &mut facts);
    }
    let h = header(1_000_000_000, &["sh", "build.sh"]);
    let s = summary(ts, &t, Some(100));
    (h, t, s)
}

fn side(r: &(Header, Tracker, Summary)) -> Side<'_> {
    Side {
        header: &r.0,
        tracker: &r.1,
        summary: &r.2,
    }
}

fn argvs(es: &[Entry]) -> Vec<String> {
    es.iter().map(|e| e.argv.join(" ")).collect()
}

#[test]
fn new_gone_failed_slower_faster_are_told_apart() {
    let old = run_of(
        &[
            (&["cc", "-c", "u1.c"], 100, 0),
            (&["cc", "-c", "u2.c"], 100, 0),
            (&["cc", "-c", "u3.c"], 400, 0),
            (&["cc", "-c", "u4.c"], 100, 0),
            (&["cc", "-c", "gone.c"], 100, 0),
            (&["cc", "-c", "u5.c"], 100, 0),
        ],
        2000,
    );
    let new = run_of(
        &[
            (&["cc", "-c", "u1.c"], 105, 0),     // within the threshold
            (&["cc", "-c", "u2.c"], 900, 0),     // slower by 800 ms
            (&["cc", "-c", "u3.c"], 100, 0),     // faster by 300 ms
            (&["cc", "-c", "u4.c"], 300, 0),     // slower by 200 ms
            (&["cc", "-c", "added.c"], 50, 0),   // new
            (&["cc", "-c", "u5.c"], 10, 1 << 8), // failed (and faster: not listed so)
        ],
        7000,
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(argvs(&r.slower), ["cc -c u2.c", "cc -c u4.c"]);
    assert_eq!(argvs(&r.faster), ["cc -c u3.c"]);
    assert_eq!(argvs(&r.new), ["cc -c added.c"]);
    assert_eq!(argvs(&r.gone), ["cc -c gone.c"]);
    assert_eq!(argvs(&r.failed), ["cc -c u5.c"]);
    assert!(r.fixed.is_empty());
    let u2 = &r.slower[0];
    assert_eq!((u2.count, u2.old_count, u2.new_count), (1, 1, 1));
    assert!((u2.old_s.unwrap() - 0.1).abs() < 1e-6 && (u2.new_s.unwrap() - 0.9).abs() < 1e-6);
    assert!((u2.delta_s - 0.8).abs() < 1e-6);
    assert_eq!(r.failed[0].status.as_ref().and_then(|s| s.code), Some(1));
    assert_eq!(r.new[0].old_s, None);
    assert_eq!(r.gone[0].new_s, None);
    // The root is not a group: its change is the wall time.
    assert!(r.slower.iter().chain(&r.faster).all(|e| e.argv[0] != "sh"));
    assert!(r.wall_s.new > r.wall_s.old);
    // Both critical paths start at the root and pair their steps.
    assert_eq!(r.critical_path.new[0].argv, ["sh", "build.sh"]);
    let u2_path = r
        .critical_path
        .new
        .iter()
        .find(|s| s.argv.join(" ") == "cc -c u2.c")
        .unwrap();
    assert!((u2_path.other_s.unwrap() - 0.1).abs() < 1e-6);
    let text = render_text(&r, false, 120);
    let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s:?} not in\n{text}"));
    assert!(
        pos("slower: (2)") < pos("cc -c u2.c") && pos("cc -c u2.c") < pos("cc -c u4.c"),
        "{text}"
    );
    assert!(
        text.contains("failed now: (1)\n  cc -c u5.c  exit 1 (ok before)"),
        "{text}"
    );
    assert!(text.contains("new: (1)\n  cc -c added.c"), "{text}");
    assert!(text.contains("gone: (1)\n  cc -c gone.c"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(v["slower"][0]["argv"], serde_json::json!(["cc", "-c", "u2.c"]));
    assert!(v["wall_s"]["old"].is_f64() && v["wall_s"]["new"].is_f64());
    for k in ["new", "gone", "failed", "slower", "faster"] {
        assert!(v[k].is_array(), "{k}");
    }
}

#[test]
fn volatile_argv_parts_match_across_runs() {
    let old = run_of(
        &[
            (&["cc1", "u1.c", "-o", "/tmp/ccAbc123.s"], 100, 0),
            (&["as", "-o", "u1.o", "/tmp/ccAbc123.s"], 100, 0),
            (&["kill", "-0", "41234"], 10, 0),
        ],
        2000,
    );
    let new = run_of(
        &[
            (&["cc1", "u1.c", "-o", "/tmp/ccZ9y8X7.s"], 500, 0),
            (&["as", "-o", "u1.o", "/tmp/ccZ9y8X7.s"], 100, 0),
            (&["kill", "-0", "51999"], 10, 0),
        ],
        7000,
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert!(
        r.new.is_empty() && r.gone.is_empty(),
        "{:?} {:?}",
        argvs(&r.new),
        argvs(&r.gone)
    );
    assert_eq!(argvs(&r.slower), ["cc1 u1.c -o /tmp/<TMP>.s"]);
    // The example is a real command line from the new run.
    assert_eq!(r.slower[0].example, ["cc1", "u1.c", "-o", "/tmp/ccZ9y8X7.s"]);
}

#[test]
fn groups_compare_counts_totals_and_medians() {
    let old = run_of(
        &[(&["./t"], 100, 0), (&["./t"], 100, 0), (&["./t"], 300, 0)],
        2000,
    );
    let new = run_of(
        &[
            (&["./t"], 100, 0),
            (&["./t"], 100, 0),
            (&["./t"], 300, 0),
            (&["./t"], 100, 0),
        ],
        7000,
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(r.slower.len(), 1);
    let e = &r.slower[0];
    assert_eq!((e.old_count, e.new_count, e.count), (3, 4, 4));
    assert!((e.old_median_s.unwrap() - 0.1).abs() < 1e-6);
    assert!((e.new_median_s.unwrap() - 0.1).abs() < 1e-6);
    assert!((e.delta_s - 0.1).abs() < 1e-6);
    let text = render_text(&r, false, 120);
    assert!(text.contains("×3 → ×4"), "{text}");
}

#[test]
fn the_threshold_needs_both_the_share_and_the_absolute_change() {
    // +40 ms on 100 ms is 40% but under 50 ms; +60 ms on 1 s is 6%: neither counts.
    let old = run_of(&[(&["a"], 100, 0), (&["b"], 1000, 0), (&["c"], 100, 0)], 2000);
    let new = run_of(&[(&["a"], 140, 0), (&["b"], 1060, 0), (&["c"], 200, 0)], 7000);
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(argvs(&r.slower), ["c"]);
    let loose = DiffOptions {
        threshold_pct: 5.0,
        min_ms: 30.0,
        ..DiffOptions::default()
    };
    let r = compare(side(&old), side(&new), loose);
    assert_eq!(argvs(&r.slower), ["c", "b", "a"]);
}

#[test]
fn a_signal_now_is_a_failure_and_a_fixed_one_is_listed() {
    let old = run_of(&[(&["t1"], 10, 0), (&["t2"], 10, 2 << 8)], 2000);
    let new = run_of(&[(&["t1"], 10, 9), (&["t2"], 10, 0)], 7000);
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(argvs(&r.failed), ["t1"]);
    assert_eq!(r.failed[0].status.as_ref().and_then(|s| s.signal), Some(9));
    assert_eq!(argvs(&r.fixed), ["t2"]);
    let text = render_text(&r, false, 120);
    assert!(text.contains("t1  killed by SIGKILL (ok before)"), "{text}");
    assert!(text.contains("fixed: (1)\n  t2  ok now, exit 2 before"), "{text}");
}

#[test]
fn identical_runs_report_nothing() {
    let steps: [StepSpec<'_>; 2] = [(&["cc", "-c", "a.c"], 100, 0), (&["ld", "a.o"], 50, 0)];
    let r = compare(
        side(&run_of(&steps, 2000)),
        side(&run_of(&steps, 7000)),
        DiffOptions::default(),
    );
    assert!(r.new.is_empty() && r.gone.is_empty() && r.failed.is_empty());
    assert!(r.slower.is_empty() && r.faster.is_empty());
    assert!(!r.slower_than(0.0));
    assert!(render_text(&r, false, 120).contains("no command changed beyond 10% and 50 ms"));
}

#[test]
fn a_trace_that_names_no_root_uses_its_only_root() {
    // As a Trace2 session tree: no summary root, one top session.
    let mut old = run_of(&[(&["cc", "-c", "a.c"], 100, 0)], 2000);
    let mut new = run_of(&[(&["cc", "-c", "a.c"], 900, 0)], 7000);
    old.2.root = None;
    new.2.root = None;
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(
        argvs(&r.slower),
        ["cc -c a.c"],
        "the root is the wall time, not a group"
    );
}

/// Pseudo-random words over an alphabet chosen to hit every rule and its edges (separators,
/// temp directories, digits, hex, multibyte characters): no panic, and normalising twice
/// changes nothing.
#[test]
fn normalisation_never_panics_and_is_idempotent() {
    const PIECES: [&str; 24] = [
        "/",
        "tmp/",
        "/tmp/",
        "/var/tmp/",
        "-",
        ":",
        "=",
        ".",
        "T",
        "Z",
        "+",
        "0x",
        "1",
        "12",
        "2024",
        "9",
        "ab",
        "Ff",
        "cc",
        "Xy",
        "é",
        "日",
        "@",
        ",",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..200_000 {
        let n = (next() % 12) as usize;
        let w: String = (0..n)
            .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
            .collect();
        let once = normalize_word(&w);
        assert_eq!(normalize_word(&once), once, "from {w:?}");
    }
}

/// A run of one 900 ms step (pid `pid`) that reported the regions `(category, label, ms)`, one
/// after another from its start.
fn run_with_regions(pid: i32, regions: &[(&str, &str, u64)]) -> (Header, Tracker, Summary) {
    const MS: u64 = 1_000_000;
    let (h, mut t, s) = run_of(&[(&["git", "fetch"], 900, 0)], pid);
    let mut ts = 1_002 * MS;
    let mut facts = Vec::new();
    for (category, label, ms) in regions {
        let region = crate::model::event::Region {
            ts,
            end: ts + ms * MS,
            thread: "main".into(),
            category: category.to_string(),
            label: label.to_string(),
            msg: None,
            nesting: 1,
        };
        ts += ms * MS;
        t.apply(&Event::Region { tgid: pid, region }, &mut facts);
    }
    (h, t, s)
}

#[test]
fn regions_are_compared_by_name_with_the_same_thresholds() {
    let old = run_with_regions(
        3000,
        &[
            ("fetch", "negotiate", 100),
            ("fetch", "index-pack", 300),
            ("fetch", "old-only", 20),
            ("x", "same", 200),
        ],
    );
    let new = run_with_regions(
        4000,
        &[
            ("fetch", "negotiate", 60),
            ("fetch", "index-pack", 700),
            ("fetch", "new-only", 30),
            ("x", "same", 210),
        ],
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    let names = |es: &[RegionEntry]| es.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&r.regions.slower), ["fetch:index-pack"]);
    // 40 ms faster is below the 50 ms floor; 10 ms on 200 is below 10%.
    assert!(r.regions.faster.is_empty(), "{:?}", r.regions.faster);
    assert_eq!(names(&r.regions.new), ["fetch:new-only"]);
    assert_eq!(names(&r.regions.gone), ["fetch:old-only"]);
    let e = &r.regions.slower[0];
    assert_eq!((e.old_count, e.new_count), (1, 1));
    assert!((e.delta_s - 0.4).abs() < 1e-9, "{e:?}");
    let text = render_text(&r, false, 120);
    assert!(text.contains("regions slower: (1)\n  "), "{text}");
    assert!(
        text.contains("fetch:index-pack  300.0ms → 700.0ms (+133%), ×1"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(json["regions"]["slower"][0]["name"], "fetch:index-pack");
    assert_eq!(json["regions"]["gone"][0]["old_s"], 0.02);
    // Runs without regions have empty lists, and say nothing about them.
    let plain = run_of(&[(&["cc", "a.c"], 100, 0)], 5000);
    let r = compare(side(&plain), side(&plain), DiffOptions::default());
    assert!(r.regions.slower.is_empty() && r.regions.new.is_empty());
    assert!(!render_text(&r, false, 120).contains("regions"));
}

#[test]
fn commands_that_cost_more_cpu_or_memory_are_listed() {
    let steps: [StepSpec<'_>; 5] = [
        (&["cc", "-c", "a.c"], 100, 0),
        (&["cc", "-c", "b.c"], 100, 0),
        (&["ld", "-o", "app"], 100, 0),
        (&["strip", "app"], 100, 0),
        (&["test", "app"], 100, 0),
    ];
    const MIB: u64 = 1024;
    let old = run_with_costs(
        &steps,
        &[
            Some((80, 50 * MIB)),
            Some((80, 50 * MIB)),
            Some((400, 900 * MIB)),
            Some((30, 4 * MIB)),
            None,
        ],
        2000,
    );
    let new = run_with_costs(
        &steps,
        &[
            Some((300, 52 * MIB)),  // +220 ms CPU; memory within the threshold
            Some((90, 50 * MIB)),   // +10 ms: under --min-ms
            Some((150, 300 * MIB)), // less of both
            Some((30, 12 * MIB)),   // +8 MiB, +200 %: under --min-rss-mib
            Some((10, 500 * MIB)),  // measured now only: not compared
        ],
        7000,
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    let names = |es: &[CostEntry]| es.iter().map(|e| e.argv.join(" ")).collect::<Vec<_>>();
    let c = &r.costs;
    assert_eq!(names(&c.more_cpu), ["cc -c a.c"]);
    assert_eq!(names(&c.less_cpu), ["ld -o app"]);
    assert!(c.more_memory.is_empty(), "{:?}", names(&c.more_memory));
    assert_eq!(names(&c.less_memory), ["ld -o app"]);
    let a = &c.more_cpu[0];
    assert!((a.old_cpu_s - 0.08).abs() < 1e-9 && (a.new_cpu_s - 0.3).abs() < 1e-9);
    assert!((a.delta_cpu_s - 0.22).abs() < 1e-9);
    assert_eq!(c.less_memory[0].delta_rss_kib, -600 * MIB as i64);
    // The runs' totals, and the figures on the time lists' entries.
    assert!((r.cpu_s.old.unwrap() - 0.59).abs() < 1e-9, "{:?}", r.cpu_s);
    assert!((r.cpu_s.new.unwrap() - 0.58).abs() < 1e-9, "{:?}", r.cpu_s);
    assert_eq!(r.max_rss_kib.old, Some(900 * MIB));
    assert_eq!(r.max_rss_kib.new, Some(500 * MIB));
    let loose = DiffOptions {
        min_rss_mib: 5.0,
        ..DiffOptions::default()
    };
    let r2 = compare(side(&old), side(&new), loose);
    assert_eq!(names(&r2.costs.more_memory), ["strip app"]);
    let text = render_text(&r, false, 120);
    for want in [
        "cpu time: 590.0ms → 580.0ms  -10.0ms (-2%)",
        "largest peak memory: 900 MiB → 500 MiB (-44%)",
        "more CPU: (1)\n   +220.0ms  cc -c a.c  80.0ms → 300.0ms CPU (+275%)",
        "less CPU: (1)\n   -250.0ms  ld -o app",
        "less memory: (1)\n   -600 MiB  ld -o app  900 MiB → 300 MiB peak (-67%)",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(
        v["costs"]["more_cpu"][0]["argv"],
        serde_json::json!(["cc", "-c", "a.c"])
    );
    assert_eq!(v["max_rss_kib"]["old"], 900 * MIB);
    assert_eq!(v["threshold"]["min_rss_mib"], 10.0);
    // Runs without figures: nulls and empty lists, no cost lines in the text.
    let bare = compare(
        side(&run_of(&steps, 2000)),
        side(&run_of(&steps, 7000)),
        DiffOptions::default(),
    );
    assert_eq!((bare.cpu_s.old, bare.max_rss_kib.new), (None, None));
    assert!(bare.costs.more_cpu.is_empty() && bare.costs.less_memory.is_empty());
    let text = render_text(&bare, false, 120);
    assert!(
        !text.contains("cpu time") && !text.contains("peak memory"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&render_json(&bare)).unwrap();
    assert!(v["cpu_s"]["old"].is_null() && v["costs"]["more_memory"].as_array().unwrap().is_empty());
    assert!(v["slower"].as_array().unwrap().is_empty());
}

/// `sh build.sh` runs `make` (pid base), which runs a recipe `sh -c 'cc -c x.c'` (base+1),
/// which runs `cc -c x.c` (base+2) taking `cc_ms`; each waiter adds `own_ms` of its own
/// before and after its child.
fn nested_run(cc_ms: u64, own_ms: u64, base: i32) -> (Header, Tracker, Summary) {
    const MS: u64 = 1_000_000;
    let mut t = tracker(Scope::Tree, true, true);
    t.expect_root(100);
    let mut ev: Vec<Event> = vec![fork(1_000 * MS, 1, 100)];
    ev.extend(exec(1_000 * MS + 10, 100, &["sh", "build.sh"], None));
    let chain: [&[&str]; 3] = [
        &["make", "-j2"],
        &["/bin/sh", "-c", "cc -c x.c"],
        &["cc", "-c", "x.c"],
    ];
    let mut ts = 1_001 * MS;
    let mut parent = 100;
    for (i, argv) in chain.iter().enumerate() {
        let pid = base + i as i32;
        ev.push(fork(ts, parent, pid));
        ev.extend(exec(ts + 10, pid, argv, None));
        ts += own_ms * MS;
        parent = pid;
    }
    ts += cc_ms * MS;
    for i in (0..3).rev() {
        ev.push(exit_status(ts, base + i, 0));
        ts += own_ms * MS;
    }
    finish_run(t, ev, ts)
}

/// The compile got 900 ms slower: it is listed, and not make, the recipe's shell or anything
/// else that only waited for it (their lifetimes grew by the same 900 ms).
#[test]
fn waiters_are_not_listed_for_their_childrens_change() {
    let old = nested_run(100, 5, 2000);
    let new = nested_run(1000, 5, 7000);
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(argvs(&r.slower), ["cc -c x.c"]);
    assert!(r.faster.is_empty() && r.new.is_empty() && r.gone.is_empty());
    let cc = &r.slower[0];
    assert!((cc.delta_own_s - 0.9).abs() < 1e-6, "{cc:?}");
    // The lifetimes stay in the entry.
    assert!((cc.delta_s - 0.9).abs() < 1e-6, "{cc:?}");
    // make's own time: 5 ms before its child and 5 ms after, in both runs.
    let go = groups(side(&new));
    let make = &go[&vec!["make".to_string(), "-j2".to_string()]];
    assert_eq!(make.own_ns, 10_000_000);
    assert!(make.total() > 1_000_000_000);
    let text = render_text(&r, false, 120);
    assert!(text.contains("slower: (1)\n  "), "{text}");
    // A waiter whose own work changed is listed, by its own change (190 ms each for make and
    // the shell, 95 ms for cc).
    let r = compare(
        side(&old),
        side(&nested_run(100, 100, 7000)),
        DiffOptions::default(),
    );
    assert_eq!(argvs(&r.slower)[2], "cc -c x.c", "{:?}", r.slower);
    assert!(
        argvs(&r.slower)[..2].contains(&"make -j2".to_string()),
        "{:?}",
        r.slower
    );
    assert!((r.slower[0].delta_own_s - 0.19).abs() < 1e-6, "{:?}", r.slower);
}

/// `sh build.sh` runs each step; a step is `(argv, kernel name)`, its argv unread when empty
/// (the name comes with its exit, as taskstats gives it). Each takes 10 ms; `fail` ones exit 1.
fn run_named(steps: &[(&[&str], &str, bool)], first_pid: i32) -> (Header, Tracker, Summary) {
    const MS: u64 = 1_000_000;
    let mut t = tracker(Scope::Tree, true, true);
    t.expect_root(100);
    let mut ev: Vec<Event> = vec![fork(1_000 * MS, 1, 100)];
    ev.extend(exec(1_000 * MS + 10, 100, &["sh", "build.sh"], None));
    let mut ts = 1_001 * MS;
    for (i, (argv, name, fail)) in steps.iter().enumerate() {
        let pid = first_pid + i as i32;
        ev.push(fork(ts, 100, pid));
        if argv.is_empty() {
            ev.push(Event::Exec {
                ts: ts + 10,
                tgid: pid,
            });
            ev.push(Event::ExecDetails {
                tgid: pid,
                details: crate::model::event::ExecDetails::default(),
            });
        } else {
            ev.extend(exec(ts + 10, pid, argv, None));
        }
        ts += 10 * MS;
        ev.push(Event::ExitName {
            tgid: pid,
            comm: crate::model::event::KernelName::new(name.as_bytes()).unwrap(),
        });
        ev.push(exit_status(ts, pid, if *fail { 1 << 8 } else { 0 }));
        ts += MS;
    }
    finish_run(t, ev, ts)
}

/// A command whose argv one run did not read is the same command as the other run's of its
/// kernel name: neither new nor gone, nor failed now when it failed in both; a command that is
/// really new (no unread process of its name in the old run) still is.
#[test]
fn unread_argv_is_matched_by_kernel_name() {
    let old = run_named(
        &[
            (&["mktemp", "-d", "./confXXXXXX"], "mktemp", false),
            (&[], "uname", true),
            (&["rm", "-f", "conf123.sh"], "rm", false),
            (&[], "rm", false),
        ],
        2000,
    );
    let new = run_named(
        &[
            (&[], "mktemp", false),
            (&["uname", "-X"], "uname", true),
            (&[], "rm", false),
            (&["rm", "-f", "conftest.c"], "rm", false),
            (&["cc", "-c", "new.c"], "cc", false),
        ],
        7000,
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(argvs(&r.new), ["cc -c new.c"], "{r:#?}");
    assert!(r.gone.is_empty(), "{:?}", r.gone);
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    // The unread group keeps the kernel's name as its key.
    let g = groups(side(&new));
    assert_eq!(g[&vec!["[mktemp]".to_string()]].count, 1);
    // Failing now is still told when the unread process of the old run did not fail.
    let old_ok = run_named(&[(&[], "uname", false)], 2000);
    let new_fails = run_named(&[(&["uname", "-X"], "uname", true)], 7000);
    let r = compare(side(&old_ok), side(&new_fails), DiffOptions::default());
    assert_eq!(argvs(&r.failed), ["uname -X"]);
    assert!(r.new.is_empty() && r.gone.is_empty(), "{r:#?}");
}

/// `sh build.sh` runs the recipe `sh -c '(cc -c a.c; cc -c b.c)'` (pid `base`); dash forks the
/// subshell (`base + 1`), which works 600 ms on its own (builtins), runs `cc -c a.c` (100 ms) as
/// its child, then execs `cc -c b.c` (`b_ms`): one process, two images.
fn subshell_run(b_ms: u64, base: i32) -> (Header, Tracker, Summary) {
    const MS: u64 = 1_000_000;
    let mut t = tracker(Scope::Tree, true, true);
    t.expect_root(100);
    let mut ev: Vec<Event> = vec![fork(1_000 * MS, 1, 100)];
    ev.extend(exec(1_000 * MS + 10, 100, &["sh", "build.sh"], None));
    let (sh, sub, a) = (base, base + 1, base + 2);
    let mut ts = 1_001 * MS;
    ev.push(fork(ts, 100, sh));
    ev.extend(exec(ts + 10, sh, &["sh", "-c", "(cc -c a.c; cc -c b.c)"], None));
    ts += MS;
    ev.push(fork(ts, sh, sub));
    ts += 600 * MS;
    ev.push(fork(ts, sub, a));
    ev.extend(exec(ts + 10, a, &["cc", "-c", "a.c"], None));
    ts += 100 * MS;
    ev.push(exit_status(ts, a, 0));
    ts += MS;
    ev.extend(exec(ts, sub, &["cc", "-c", "b.c"], None));
    ts += b_ms * MS;
    ev.push(exit_status(ts, sub, 0));
    ts += MS;
    ev.push(exit_status(ts, sh, 0));
    finish_run(t, ev, ts + MS)
}

/// Only the subshell's exec'd image got slower (+60 ms on 100): it is listed, by its own time;
/// not the subshell's fork image (the same 600 ms of builtins), nor the recipe's shell that
/// waited for it. Matched as a process, the subshell would read `cc -c b.c` for its whole life
/// (702 ms → 762 ms: under 10%, so nothing would be listed).
#[test]
fn each_image_is_matched_on_its_own() {
    let old = subshell_run(100, 2000);
    let new = subshell_run(160, 7000);
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert_eq!(argvs(&r.slower), ["cc -c b.c"], "{r:#?}");
    assert!(
        r.faster.is_empty() && r.new.is_empty() && r.gone.is_empty(),
        "{r:#?}"
    );
    let b = &r.slower[0];
    assert_eq!((b.old_count, b.new_count), (1, 1));
    assert!((b.old_s.unwrap() - 0.1).abs() < 1e-6, "{b:?}");
    assert!((b.new_s.unwrap() - 0.16).abs() < 1e-6, "{b:?}");
    assert!((b.delta_own_s - 0.06).abs() < 1e-6, "{b:?}");
    // The fork image is a group of its own, named as every output names it: its span (fork to
    // exec, 701 ms) less the child it ran (100 ms).
    let g = groups(side(&new));
    let fork = &g[&vec!["[fork of sh]".to_string()]];
    assert_eq!((fork.count, fork.durations.as_slice()), (1, &[701_000_000][..]));
    assert_eq!(fork.own_ns, 601_000_000);
    // The recipe's shell waited for the subshell: 1 ms before it, 1 ms after.
    let recipe = &g[&normalize_argv(["sh", "-c", "(cc -c a.c; cc -c b.c)"])];
    assert_eq!(recipe.own_ns, 2_000_000);
    assert_eq!(g[&normalize_argv(["cc", "-c", "a.c"])].count, 1);
    // Each image is on its own; the process is counted once per image.
    assert_eq!(g.values().map(|g| g.count).sum::<u64>(), 4);
}

/// The traced command is the wall time, but what it exec'd after its first program is compared
/// as any image: `sh -c 'x; exec cc -c z.c'` as the root.
#[test]
fn the_roots_later_images_are_compared() {
    const MS: u64 = 1_000_000;
    let run = |z_ms: u64| {
        let mut t = tracker(Scope::Tree, true, true);
        t.expect_root(100);
        let mut ev: Vec<Event> = vec![fork(1_000 * MS, 1, 100)];
        ev.extend(exec(1_000 * MS + 10, 100, &["sh", "build.sh"], None));
        let ts = 1_050 * MS;
        ev.extend(exec(ts, 100, &["cc", "-c", "z.c"], None));
        finish_run(t, ev, ts + z_ms * MS)
    };
    let r = compare(side(&run(100)), side(&run(400)), DiffOptions::default());
    assert_eq!(argvs(&r.slower), ["cc -c z.c"], "{r:#?}");
    let g = groups(side(&run(100)));
    assert!(!g.contains_key(&vec!["sh".to_string(), "build.sh".to_string()]));
}

/// `sh build.sh` forks `make` (pid `base`), which execs `fork_us` µs after its fork: 16 ms on a
/// loaded machine is a fork image standing on its own (10 ms or more), 0.3 ms is not.
fn slow_fork_run(fork_us: u64, base: i32) -> (Header, Tracker, Summary) {
    const US: u64 = 1_000;
    let mut t = tracker(Scope::Tree, true, true);
    t.expect_root(100);
    let mut ev: Vec<Event> = vec![fork(1_000_000 * US, 1, 100)];
    ev.extend(exec(1_000_000 * US + 10, 100, &["sh", "build.sh"], None));
    let ts = 1_001_000 * US;
    ev.push(fork(ts, 100, base));
    ev.extend(exec(ts + fork_us * US, base, &["make", "-j2"], None));
    ev.push(exit_status(ts + 200_000 * US, base, 0));
    finish_run(t, ev, ts + 201_000 * US)
}

/// Whether a fork image that forked nothing stands is the machine's timing, not the build's:
/// diff counts it in its exec's image, so it is neither new nor gone, and the exec's image
/// keeps the process's whole time.
#[test]
fn a_fork_image_that_forked_nothing_is_part_of_its_exec() {
    let old = slow_fork_run(300, 2000);
    // 120 ms between fork and exec: past `FORK_IMAGE_MIN_NS`, the fork image stands.
    let new = slow_fork_run(120_000, 7000);
    assert!(
        crate::model::images::images(
            &new.1,
            new.1.get(new.1.lookup_at(7000, 1_150_000_000).unwrap()).unwrap()
        )
        .has_fork_image()
    );
    let r = compare(side(&old), side(&new), DiffOptions::default());
    assert!(r.new.is_empty() && r.gone.is_empty(), "{r:#?}");
    let g = groups(side(&new));
    assert_eq!(g.len(), 1, "{:?}", g.keys());
    assert_eq!(
        g[&vec!["make".to_string(), "-j2".to_string()]].durations,
        [200_000_000]
    );
}
