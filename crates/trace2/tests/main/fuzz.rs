//! The reader never panics: arbitrary bytes, and real lines mutated (a bounded proptest run).
use std::io::Cursor;

use proptest::prelude::*;
use trace2::reader::{EventReader, ReadOptions, parse_line};

fn corpus() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/corpus");
    let mut lines = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            let bytes = std::fs::read(&p).unwrap();
            lines.extend(
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(|l| l.to_vec()),
            );
        }
    }
    assert!(lines.len() > 50);
    lines
}

#[test]
fn every_corpus_line_parses() {
    for l in corpus() {
        parse_line(&l).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&l)));
    }
}

#[test]
fn pathological_nesting_is_an_error_not_a_crash() {
    let mut deep = b"{\"event\":\"data_json\",\"value\":".to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    assert!(parse_line(&deep).is_err());
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Cut(usize),
    Insert(usize, u8),
    Splice(usize, usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<usize>().prop_map(Mutation::Cut),
        (
            any::<usize>(),
            prop_oneof![
                Just(b'"'),
                Just(b'\\'),
                Just(b'{'),
                Just(b'['),
                Just(b','),
                any::<u8>()
            ]
        )
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(a, b, c)| Mutation::Splice(a, b, c)),
    ]
}

fn apply(line: &mut Vec<u8>, other: &[u8], m: &Mutation) {
    let n = line.len().max(1);
    match *m {
        Mutation::Flip(i, b) => {
            if !line.is_empty() {
                line[i % n] = b;
            }
        }
        Mutation::Cut(i) => line.truncate(i % n),
        Mutation::Insert(i, b) => line.insert(i % (line.len() + 1), b),
        Mutation::Splice(a, b, c) => {
            let at = a % (line.len() + 1);
            let from = b % (other.len() + 1);
            let to = (from + c % 64).min(other.len());
            let tail = line.split_off(at);
            line.extend_from_slice(&other[from..to]);
            line.extend_from_slice(&tail);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_line(&bytes);
    }

    #[test]
    fn mutated_real_lines_never_panic(
        pick in any::<usize>(),
        other in any::<usize>(),
        muts in proptest::collection::vec(mutation(), 1..6),
    ) {
        let c = corpus_cached();
        let mut line = c[pick % c.len()].clone();
        let other = &c[other % c.len()];
        for m in &muts {
            apply(&mut line, other, m);
        }
        let _ = parse_line(&line);
        // And through the stream reader, strict and lenient, as a file's last line and mid-file.
        for lenient in [false, true] {
            let mut stream = line.clone();
            stream.push(b'\n');
            stream.extend_from_slice(other);
            stream.push(b'\n');
            stream.extend_from_slice(&line);
            let r = EventReader::new(Cursor::new(stream), "fuzz", ReadOptions { lenient, ..Default::default() });
            for item in r {
                let _ = item;
            }
        }
    }
}

fn corpus_cached() -> &'static [Vec<u8>] {
    static C: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    C.get_or_init(corpus)
}
