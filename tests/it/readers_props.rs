//! The readers against hostile bytes (issue 9): arbitrary bytes and real traces made wrong, fed
//! through each reader, the model, every sink and every report, must never panic; strict
//! reading names a line inside the input, the very line that was made bad; lenient reading
//! never fails on a bad line. A bounded run of the same harness the cargo-fuzz targets run
//! (`fuzz/`, BENCHMARKS.md "Fuzzing") for hours.

use proctrace::input::InputError;
use proptest::prelude::*;
use trace2::reader::ReadError;

#[path = "../../fuzz/src/harness.rs"]
mod harness;

/// Lines no reader accepts (each a JSON object where possible, so only its content is wrong).
const BAD: &[&[u8]] = &[
    b"not json",
    b"[1,2,3]",
    b"{\"e\":\"fork\",\"ts\":-1}",
    b"{\"e\":\"exit\"}",
    b"{\"event\":1,\"sid\":\"a\"}",
    b"{\"sid\":\"a\"}",
    b"{\"event\":\"version\",\"sid\":\"a\",\"time\":\"yesterday\"}",
    b"\xff\xfe{\"e\":",
    b"{\"e\":\"fork\",\"ts\":1,\"parent_tgid\":1,\"child_pid\":2,\"child_tgid\":2,\"x\":",
];

fn lines_of(path: &str) -> Vec<Vec<u8>> {
    let p = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&p)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Real `run --record` captures, line by line.
fn captures() -> &'static [Vec<Vec<u8>>] {
    static C: std::sync::OnceLock<Vec<Vec<Vec<u8>>>> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        [
            "exec-twice",
            "reuse-pid",
            "rich-run",
            "thread-exec",
            "make-j2",
            "git-regions",
        ]
        .iter()
        .map(|n| lines_of(&format!("tests/fixtures/captures/{n}.jsonl")))
        .collect()
    })
}

/// Real git Trace2 event streams (status through an alias, log, commit), line by line.
fn git_stream() -> &'static [Vec<u8>] {
    static C: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    C.get_or_init(|| lines_of("crates/trace2/tests/fixtures/corpus/git-2.47-status-alias-log-commit.jsonl"))
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

fn line_count(bytes: &[u8]) -> u64 {
    bytes.split_inclusive(|&b| b == b'\n').count() as u64
}

/// A change that keeps a line looking like a trace line but makes its content wrong or extreme.
#[derive(Debug, Clone)]
enum Wrong {
    /// Every number in the line becomes this one.
    Numbers(&'static str),
    /// The line is cut at this fraction (per mille) of its length.
    Cut(u16),
    /// A byte is replaced.
    Byte(usize, u8),
    /// The line is swapped with another line of the same trace.
    Swap(usize),
    /// The line is written twice.
    Twice,
}

fn wrong() -> impl Strategy<Value = Wrong> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "-1",
            "4294967296",
            "9223372036854775807",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "1e308",
            "-0.0",
        ])
        .prop_map(Wrong::Numbers),
        (0u16..1000).prop_map(Wrong::Cut),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Wrong::Byte(i, b)),
        any::<usize>().prop_map(Wrong::Swap),
        Just(Wrong::Twice),
    ]
}

fn make_wrong(lines: &mut Vec<Vec<u8>>, at: usize, w: &Wrong) {
    if lines.is_empty() {
        return;
    }
    let at = at % lines.len();
    match *w {
        Wrong::Numbers(n) => {
            let l = &lines[at];
            let mut out = Vec::with_capacity(l.len());
            let mut i = 0;
            while i < l.len() {
                if l[i].is_ascii_digit() && (i == 0 || matches!(l[i - 1], b':' | b',' | b'[')) {
                    out.extend_from_slice(n.as_bytes());
                    while i < l.len() && (l[i].is_ascii_digit() || l[i] == b'.') {
                        i += 1;
                    }
                } else {
                    out.push(l[i]);
                    i += 1;
                }
            }
            lines[at] = out;
        }
        Wrong::Cut(pm) => {
            let n = lines[at].len() * pm as usize / 1000;
            lines[at].truncate(n);
        }
        Wrong::Byte(i, b) => {
            let n = lines[at].len();
            if n > 0 {
                lines[at][i % n] = b;
            }
        }
        Wrong::Swap(j) => {
            let j = j % lines.len();
            lines.swap(at, j);
        }
        Wrong::Twice => {
            let l = lines[at].clone();
            lines.insert(at, l);
        }
    }
}

fn capture_line(e: &InputError) -> u64 {
    match e {
        InputError::Line { line, .. } => *line,
        other => panic!("a capture read from memory can only fail on a line: {other}"),
    }
}

fn trace2_line(e: &ReadError) -> u64 {
    match e {
        ReadError::Malformed { line, .. } => *line as u64,
        other => panic!("a stream read from memory can only fail on a line: {other}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn capture_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Err(e) = harness::capture_strict(&bytes) {
            let l = capture_line(&e);
            prop_assert!((1..=line_count(&bytes)).contains(&l), "line {l} of {}", line_count(&bytes));
        }
        prop_assert!(harness::capture(&bytes).is_ok());
    }

}

// Each case below reads a whole real trace, through every report, in a debug build: fewer
// cases keep the file under a few seconds (the fuzz targets run millions).
proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn capture_made_wrong(pick in any::<usize>(), at in proptest::collection::vec(any::<usize>(), 1..4), w in proptest::collection::vec(wrong(), 1..4)) {
        let caps = captures();
        let mut lines = caps[pick % caps.len()].clone();
        for (a, w) in at.iter().zip(&w) {
            make_wrong(&mut lines, *a, w);
        }
        let bytes = join(&lines);
        if let Err(e) = harness::capture_strict(&bytes) {
            let l = capture_line(&e);
            prop_assert!((1..=line_count(&bytes)).contains(&l), "line {l} of {}", line_count(&bytes));
        }
        prop_assert!(harness::capture(&bytes).is_ok());
    }

    /// A bad line in a good capture: strict reading names exactly that line; lenient reading
    /// skips it, reads on and reports as if it were not there.
    #[test]
    fn capture_bad_line_is_named(pick in any::<usize>(), at in any::<usize>(), bad in prop::sample::select(BAD)) {
        static GOOD: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
        let caps = captures();
        let good = GOOD.get_or_init(|| caps.iter().map(|c| harness::capture(&join(c)).unwrap()).collect());
        let mut lines = caps[pick % caps.len()].clone();
        let good = good[pick % caps.len()];
        let at = at % (lines.len() + 1);
        lines.insert(at, bad.to_vec());
        let bytes = join(&lines);
        let e = harness::capture_strict(&bytes).unwrap_err();
        prop_assert_eq!(capture_line(&e), at as u64 + 1, "{}", e);
        prop_assert!(e.to_string().starts_with(&format!("{}:{}: ", harness::NAME, at + 1)), "{}", e);
        prop_assert_eq!(harness::capture(&bytes).unwrap(), good);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn trace2_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Err(e) = harness::trace2_strict(&bytes) {
            let l = trace2_line(&e);
            prop_assert!((1..=line_count(&bytes)).contains(&l), "line {l} of {}", line_count(&bytes));
        }
        prop_assert!(harness::trace2_stream(&bytes).is_ok());
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn trace2_made_wrong(start in any::<usize>(), len in 1usize..40, at in proptest::collection::vec(any::<usize>(), 1..4), w in proptest::collection::vec(wrong(), 1..4)) {
        let all = git_stream();
        let start = start % all.len();
        let mut lines = all[start..(start + len).min(all.len())].to_vec();
        for (a, w) in at.iter().zip(&w) {
            make_wrong(&mut lines, *a, w);
        }
        let bytes = join(&lines);
        if let Err(e) = harness::trace2_strict(&bytes) {
            let l = trace2_line(&e);
            prop_assert!((1..=line_count(&bytes)).contains(&l), "line {l} of {}", line_count(&bytes));
        }
        prop_assert!(harness::trace2_stream(&bytes).is_ok());
    }

    /// A bad line in a real git stream: strict reading names exactly that line; lenient reading
    /// gives every other record.
    #[test]
    fn trace2_bad_line_is_named(start in any::<usize>(), len in 1usize..60, at in any::<usize>(), bad in prop::sample::select(BAD)) {
        let all = git_stream();
        let start = start % all.len();
        let mut lines = all[start..(start + len).min(all.len())].to_vec();
        let n = lines.len();
        let at = at % (n + 1);
        lines.insert(at, bad.to_vec());
        let bytes = join(&lines);
        let e = harness::trace2_strict(&bytes).unwrap_err();
        prop_assert_eq!(trace2_line(&e), at as u64 + 1, "{}", e);
        prop_assert!(e.to_string().starts_with(&format!("{}:{}: ", harness::NAME, at + 1)), "{}", e);
        prop_assert_eq!(harness::trace2_stream(&bytes).unwrap().len(), n);
    }
}

/// First lines of each format `analyze` tells by content: arbitrary bytes after one of them go
/// to that format's reader.
const HEADS: &[&[u8]] = &[
    b"{\"e\":\"header\",\"header\":{\"mode\":\"watch\",\"ts\":1}}\n",
    b"{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"pid\":1}\n",
    b"{\"event\":\"version\",\"sid\":\"a\",\"thread\":\"main\",\"evt\":\"3\",\"exe\":\"2.47\"}\n",
    b"",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any bytes as a file given to `analyze`: a format error, a bad line inside the input
    /// (strict only), or a result; never a panic.
    #[test]
    fn any_file_arbitrary_bytes(head in prop::sample::select(HEADS), tail in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = head.to_vec();
        bytes.extend_from_slice(&tail);
        let (strict, lenient) = harness::any_file(&bytes);
        for (r, is_strict) in [(strict.map(|_| 0), true), (lenient, false)] {
            match r {
                Ok(_) | Err(InputError::Format { .. }) => {}
                Err(InputError::Line { line, .. }) if is_strict => {
                    prop_assert!((1..=line_count(&bytes)).contains(&line), "line {line} of {}", line_count(&bytes));
                }
                Err(e) => prop_assert!(false, "strict: {is_strict}: {e}"),
            }
        }
    }

    /// A real capture as a file: told by content and read without a bad line.
    #[test]
    fn any_file_reads_a_real_capture(pick in any::<usize>()) {
        let caps = captures();
        let bytes = join(&caps[pick % caps.len()]);
        let (strict, lenient) = harness::any_file(&bytes);
        prop_assert!(strict.is_ok());
        prop_assert!(lenient.is_ok());
    }
}
