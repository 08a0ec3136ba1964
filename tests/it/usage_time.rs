//! What each process cost, against GNU `time -v` (the tool the issue names, beside `wait4` in
//! usage.rs): a program with no children (`tests/fixtures/hog.c`) burns known CPU, touches known
//! memory and writes known bytes under `/usr/bin/time -v`; its exit line must agree with what
//! `time` printed, on both backends.
use std::sync::OnceLock;

use crate::common::*;

/// `tests/fixtures/hog.c`, compiled once per test run.
fn hog() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| compile_fixture("hog"))
}

/// A `time -v` report's value for `label` (e.g. `User time (seconds)`).
fn field(report: &str, label: &str) -> f64 {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix(label)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no {label:?} in\n{report}"))
        .trim()
        .parse()
        .unwrap()
}

both_backends! {
    /// CPU within 10 ms + 2 % plus `time`'s own rounding (it prints user and system time in
    /// hundredths, truncated: up to 20 ms together), peak RSS within 2 %, and the bytes written.
    fn agrees_with_gnu_time(backend: &str) {
        let report_file = tmp("time.txt");
        let data = tmp("hog.data");
        let (out, lines) = run_on(
            backend,
            &["--tree", "none"],
            &["/usr/bin/time", "-v", "-o", &report_file, hog(), "400", "96", "2048", &data],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let report = std::fs::read_to_string(&report_file).unwrap();
        let ps = processes(&lines);
        let p = find(&ps, &[hog()]);
        assert_eq!(p.exits.len(), 1, "{p:?}");
        let e = &p.exits[0];
        assert_eq!(e["code"], 0, "{e}");

        let cpu = e["cpu_user_s"].as_f64().unwrap() + e["cpu_sys_s"].as_f64().unwrap();
        let time_cpu = field(&report, "User time (seconds)") + field(&report, "System time (seconds)");
        assert!(
            (cpu - time_cpu).abs() <= 0.010 + 0.02 * time_cpu + 0.020,
            "CPU: exit line {cpu} s, time -v {time_cpu} s\n{e}\n{report}"
        );
        assert!(time_cpu >= 0.39, "the program spun 400 ms: {report}");

        let rss = e["max_rss_kib"].as_f64().unwrap();
        let time_rss = field(&report, "Maximum resident set size (kbytes)");
        assert!(
            (rss - time_rss).abs() <= 0.02 * time_rss,
            "peak RSS: exit line {rss} KiB, time -v {time_rss} KiB\n{e}\n{report}"
        );
        assert!(time_rss >= 96.0 * 1024.0, "{report}");
        assert!(e["write_chars"].as_u64().unwrap() >= 2048 * 1024, "{e}");
    }
}
