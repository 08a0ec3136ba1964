use super::*;
use proptest::prelude::*;

fn read_all(bytes: &[u8], lenient: bool) -> Result<(Vec<Event>, InputStats, Option<Summary>), InputError> {
    let opts = InputOptions {
        lenient,
        tool: None,
        ..Default::default()
    };
    let mut input = JsonlInput::new(bytes, Path::new("mem.jsonl"), &opts)?;
    let mut events = Vec::new();
    input.feed_all(&mut |e| events.push(e))?;
    Ok((events, input.stats(), input.recorded_summary().cloned()))
}

#[test]
fn seconds_are_exact() {
    assert_eq!(parse_seconds(b"12.000000345"), Some(12_000_000_345));
    assert_eq!(parse_seconds(b"8802.957572757"), Some(8_802_957_572_757));
    assert_eq!(parse_seconds(b"0.5"), Some(500_000_000));
    assert_eq!(parse_seconds(b"7"), Some(7_000_000_000));
    for bad in [
        &b""[..],
        b".5",
        b"1.",
        b"1.0000000001",
        b"1e3",
        b"-1.0",
        b"1.2.3",
        b"99999999999999999999",
    ] {
        assert_eq!(parse_seconds(bad), None, "{}", String::from_utf8_lossy(bad));
    }
    assert_eq!(parse_signed_seconds(b"-1.500000000"), Some(-1_500_000_000));
}

#[test]
fn strings_escapes_and_bad_json() {
    let line = br#"{"event":"start","ts":1.000000000,"tool":"proctrace","version":"0.1.0","wall_offset":-2.5,"mode":"run","argv":["sh","-c","echo \"\u00e9\ud83d\ude00\\\n\"","\ud800x"]}"#;
    let mut text = line.to_vec();
    text.extend_from_slice(
        b"\n{\"event\":\"fork\",\"ts\":1.5,\"pid\":5,\"ppid\":1,\"x\":{\"a\":[1,{\"b\":null}]}}\n",
    );
    let opts = InputOptions::default();
    let input = JsonlInput::new(&text[..], Path::new("m"), &opts).unwrap();
    let h = input.header();
    assert_eq!(h.real_minus_mono, -2_500_000_000);
    assert_eq!(
        h.mode,
        Mode::Run {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo \"é😀\\\n\"".into(),
                "\u{fffd}x".into()
            ]
        }
    );
    let (ev, _, _) = read_all(&text, false).unwrap();
    assert_eq!(ev, vec![Event::Root { tgid: 5 }, fork(1_500_000_000, 1, 5)]);
    for bad in [
        &br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1"#[..],
        br#"{"event":"fork","ts":1.5,"pid":5,"pid":6,"ppid":1}"#,
        br#"{"event":"fork","ts":01.5,"pid":5,"ppid":1}"#,
        br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1} x"#,
        br#"{"event":"fork","ts":1.5,"pid":"5","ppid":1}"#,
        br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1,"comm":"a	b"}"#,
        br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1,"comm":"\q"}"#,
        br#"{"event":"fork","ts":1.5,"pid":5,"ppid":1,"comm":tru}"#,
        br#"{"event":"nope","ts":1.5}"#,
        br#"{"event":"exit","ts":1.5,"pid":5,"ppid":1}"#,
        br#"{"event":"exit","ts":1.5,"pid":5,"ppid":1,"code":256}"#,
        br#"{"event":"fork","ts":1.5,"pid":99999999999,"ppid":1}"#,
    ] {
        let mut t = b"{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"mode\":\"watch\"}\n".to_vec();
        t.extend_from_slice(bad);
        t.push(b'\n');
        match read_all(&t, false) {
            Err(InputError::Line { line: 2, .. }) => {}
            other => panic!("{}: {other:?}", String::from_utf8_lossy(bad)),
        }
        let (_, st, _) = read_all(&t, true).unwrap();
        assert_eq!(st.skipped_lines, 1, "{}", String::from_utf8_lossy(bad));
    }
}

/// Exit statuses, exits whose status was lost, quiet background marks, core dumps and the
/// summary come back as the tracker's own events.
#[test]
fn an_exit_line_carries_the_process_cost() {
    let text = "{\"event\":\"exit\",\"ts\":2.0,\"pid\":5,\"ppid\":1,\"code\":0,\"cpu_user_s\":1.250000000,\
        \"cpu_sys_s\":0.000001000,\"max_rss_kib\":2048,\"read_chars\":10,\"write_chars\":20,\"read_bytes\":4096,\
        \"write_bytes\":8192,\"cancelled_write_bytes\":0,\"ctx_switches\":{\"voluntary\":3,\"involuntary\":4},\
        \"cpu_delay_s\":0.5}\n\
        {\"event\":\"exit\",\"ts\":2.0,\"pid\":6,\"ppid\":1,\"code\":0}\n";
    let (ev, _, _) = read_all(text.as_bytes(), false).unwrap();
    let usage = Usage {
        cpu_user_ns: 1_250_000_000,
        cpu_sys_ns: 1_000,
        max_rss_kib: 2048,
        read_chars: 10,
        write_chars: 20,
        read_bytes: 4096,
        write_bytes: 8192,
        cancelled_write_bytes: 0,
        vol_ctx_switches: 3,
        invol_ctx_switches: 4,
        cpu_delay_ns: Some(500_000_000),
        io_delay_ns: None,
    };
    assert_eq!(
        ev[0],
        Event::Usage {
            tgid: 5,
            usage: Box::new(usage)
        }
    );
    assert!(matches!(ev[1], Event::Exit { pid: 5, .. }));
    assert!(
        matches!(ev[2], Event::Exit { pid: 6, .. }),
        "no cost, no usage event: {ev:?}"
    );
    for bad in [
        "\"ctx_switches\":[1,2]",
        "\"ctx_switches\":{\"voluntary\":-1}",
        "\"max_rss_kib\":\"x\"",
        "\"cpu_delay_s\":true",
    ] {
        let line =
            format!("{{\"event\":\"exit\",\"ts\":2.0,\"pid\":5,\"code\":0,\"cpu_user_s\":1.0,{bad}}}\n");
        assert!(read_all(line.as_bytes(), false).is_err(), "{bad}");
    }
}

#[test]
fn exits_and_the_end_line() {
    let text = "{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"mode\":\"watch\"}\n\
        {\"event\":\"exit\",\"ts\":2.0,\"pid\":5,\"ppid\":1,\"signal\":11,\"core\":true}\n\
        {\"event\":\"exit\",\"ts\":2.0,\"pid\":6,\"ppid\":1,\"signal\":6,\"core\":false}\n\
        {\"event\":\"exit\",\"ts\":3.0,\"pid\":7,\"ppid\":1,\"code\":null,\"exit_lost\":true}\n\
        {\"event\":\"exit\",\"ts\":4.0,\"pid\":8,\"ppid\":1,\"code\":2,\"background\":true}\n\
        {\"event\":\"end\",\"ts\":5.0,\"pid\":8,\"signal\":9,\"processes\":4,\"background\":2,\"tracer_cpu\":0.25}\n";
    let (ev, st, sum) = read_all(text.as_bytes(), false).unwrap();
    let s = 1_000_000_000;
    assert_eq!(
        ev,
        vec![
            Event::Exit {
                ts: 2 * s,
                pid: 5,
                tgid: 5,
                status: 11 | 0x80,
                parent_tgid: 1
            },
            Event::Coredump { ts: 2 * s, tgid: 6 },
            Event::Exit {
                ts: 2 * s,
                pid: 6,
                tgid: 6,
                status: 6,
                parent_tgid: 1
            },
            Event::Gone { ts: 3 * s, tgid: 7 },
            Event::Background {
                ts: 4 * s,
                tgid: 8,
                state: BackgroundState::Ready,
                report: false
            },
            Event::Exit {
                ts: 4 * s,
                pid: 8,
                tgid: 8,
                status: 2 << 8,
                parent_tgid: 1
            },
        ]
    );
    assert_eq!((st.lines, st.skipped_lines, st.truncated), (6, 0, 0));
    let sum = sum.unwrap();
    assert_eq!(
        sum.status,
        Some(ExitStatus::Signal {
            signal: 9,
            core: false
        })
    );
    assert_eq!((sum.root, sum.background, sum.stats.processes), (Some(8), 2, 4));
    assert_eq!(sum.tracer_cpu_ns, Some(s / 4));
}

/// An exec's argv is taken while the line is scanned: every shape of array a writer may
/// produce reads back, and an array that is not all strings is an error naming its line.
#[test]
fn argv_words_taken_while_scanning() {
    let start = r#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"watch"}"#;
    let argv_of = |arr: &str| {
        let text =
            format!("{start}\n{{\"event\":\"exec\",\"ts\":2.0,\"argv\":{arr},\"pid\":5,\"ppid\":1}}\n");
        let (ev, ..) = read_all(text.as_bytes(), false)?;
        Ok::<_, InputError>(match ev.as_slice() {
            [_, Event::ExecDetails { details, .. }] => details.argv.clone(),
            other => panic!("{other:?}"),
        })
    };
    let v = |w: &[&str]| Some(Argv::from(w));
    assert_eq!(argv_of(r#"["sh","-c","x"]"#).unwrap(), v(&["sh", "-c", "x"]));
    assert_eq!(argv_of(r#"[ "a" , "b" ]"#).unwrap(), v(&["a", "b"]));
    assert_eq!(argv_of("[]").unwrap(), v(&[]));
    assert_eq!(argv_of("[ ]").unwrap(), v(&[]));
    assert_eq!(argv_of("null").unwrap(), None);
    assert_eq!(
        argv_of(r#"["q\"uote","tab\t","\u00e9\ud83d\ude00",""]"#).unwrap(),
        v(&["q\"uote", "tab\t", "é😀", ""])
    );
    for bad in [
        r#"["a",1]"#,
        r#"[["a"]]"#,
        r#"["a",null]"#,
        r#""a""#,
        r#"{"a":"b"}"#,
    ] {
        let e = argv_of(bad).unwrap_err().to_string();
        assert!(e.contains("mem.jsonl:2:") && e.contains("argv"), "{bad}: {e}");
    }
    for broken in [r#"["a""#, r#"["a",]"#, r#"["a" "b"]"#, r#"[,"a"]"#] {
        let e = argv_of(broken).unwrap_err().to_string();
        assert!(e.contains("mem.jsonl:2:"), "{broken}: {e}");
    }
}

/// Repeated `exe`/`cwd` paths come out as one shared copy; every path, shared or not (more
/// distinct ones than are kept, escapes), reads back as written.
#[test]
fn repeated_paths_are_shared_and_exact() {
    let mut text = String::from(r#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"watch"}"#);
    text.push('\n');
    let exes: Vec<String> = (0..40).map(|i| format!("/usr/bin/tool{}", i % 20)).collect();
    for (i, e) in exes.iter().enumerate() {
        text.push_str(&format!(
            "{{\"event\":\"exec\",\"ts\":2.0,\"pid\":{},\"ppid\":1,\"argv\":[\"x\"],\"exe\":\"{e}\",\"cwd\":\"/src/\\u00e9\"}}\n",
            i + 2
        ));
    }
    let (ev, ..) = read_all(text.as_bytes(), false).unwrap();
    let d: Vec<&ExecDetails> = ev
        .iter()
        .filter_map(|e| match e {
            Event::ExecDetails { details, .. } => Some(details),
            _ => None,
        })
        .collect();
    assert_eq!(d.len(), exes.len());
    for (d, e) in d.iter().zip(&exes) {
        assert_eq!(d.exe.as_deref(), Some(e.as_str()));
        assert_eq!(d.cwd.as_deref(), Some("/src/é"));
    }
    let (a, b) = (d[0].cwd.as_ref().unwrap(), d[39].cwd.as_ref().unwrap());
    assert!(Arc::ptr_eq(a, b), "one working directory, one copy");
}

/// Lines longer than the reader's buffer are read whole; a cut last line is counted.
#[test]
fn long_lines_and_a_cut_last_line() {
    let argv: Vec<String> = (0..5000).map(|i| format!("arg{i}")).collect();
    let words = argv
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(",");
    let text = format!(
        "{{\"event\":\"start\",\"ts\":1.0,\"tool\":\"proctrace\",\"mode\":\"watch\"}}\n\
         {{\"event\":\"exec\",\"ts\":2.0,\"pid\":5,\"ppid\":1,\"argv\":[{words}]}}\n\
         {{\"event\":\"exit\",\"ts\":3.0,\"pid\":5,\"ppid\":1,\"co"
    );
    let opts = InputOptions::default();
    let r = std::io::BufReader::with_capacity(64, text.as_bytes());
    let mut input = JsonlInput::new(r, Path::new("m"), &opts).unwrap();
    let mut got = Vec::new();
    input.feed_all(&mut |e| got.push(e)).unwrap();
    assert_eq!(got.len(), 2);
    assert!(
        matches!(&got[1], Event::ExecDetails { details, .. } if details.argv.as_ref().is_some_and(|a| *a == argv))
    );
    assert_eq!((input.stats().lines, input.stats().truncated), (3, 1));
    assert_eq!(input.stats().bytes, text.len() as u64);
}

/// The counts read in place are what the JSON reading gives; anything else goes to it.
#[test]
fn context_switches_read_in_place_or_as_json() {
    assert_eq!(ctx_switches(r#"{"voluntary":12,"involuntary":0}"#), Ok((12, 0)));
    assert_eq!(ctx_switches(r#"{"involuntary":3,"voluntary":4}"#), Ok((4, 3)));
    assert_eq!(
        ctx_switches(r#"{"voluntary": 5, "involuntary": null}"#),
        Ok((5, 0))
    );
    assert_eq!(
        ctx_switches(r#"{"voluntary":18446744073709551615,"involuntary":1}"#),
        Ok((u64::MAX, 1))
    );
    assert!(ctx_switches(r#"{"voluntary":18446744073709551616,"involuntary":1}"#).is_err());
    assert!(ctx_switches(r#"{"voluntary":01,"involuntary":1}"#).is_err());
    assert!(ctx_switches(r#"{"voluntary":-1,"involuntary":1}"#).is_err());
}

/// What [`Table::fill_laid_out`] made of `line` is what [`Table::scan`] makes of it, when it
/// took the line at all; returns whether it did.
pub(super) fn same_table(line: &str) -> bool {
    let (mut fast, mut full) = (Table::default(), Table::default());
    if !fast.fill_laid_out(line) {
        return false;
    }
    assert!(full.scan(line).is_ok(), "laid out but not JSON: {line}");
    assert_eq!(fast.set, full.set, "{line}");
    for k in 0..NKEYS {
        if full.set & (1u128 << k) != 0 {
            // A number parsed in place is the text `scan` saw, with the value the
            // decoder's own reading of that text gives.
            let v = match fast.v[k] {
                Slot::Parsed(a, b, v) => {
                    let text = line.as_bytes().get(a..b).unwrap();
                    let as_int = std::str::from_utf8(text).unwrap().parse::<u64>().ok();
                    assert!(
                        as_int == Some(v) || parse_seconds(text) == Some(v),
                        "key {k} of {line}"
                    );
                    Slot::Num(a, b)
                }
                v => v,
            };
            assert_eq!(v, full.v[k], "key {k} of {line}");
        }
    }
    // And the decoder, reading numbers through the typed getters, gives the same events
    // (or the same error) from both tables.
    let decode = |t: &Table| {
        let mut out = Vec::new();
        let r = Decoder::default().decode(Line { s: line, t }, &mut out);
        format!("{r:?} {out:?}")
    };
    assert_eq!(decode(&fast), decode(&full), "{line}");
    assert_eq!(fast.words_ok, full.words_ok, "{line}");
    if full.words_ok {
        assert_eq!(fast.words, full.words, "{line}");
    }
    true
}

/// Every line of the golden JSON Lines files that is laid out as proctrace writes it fills
/// the table as the general scanner does — and most of them are; so do hand-made lines at
/// the edges (escapes, `null`s, usage fields), while lines laid out otherwise are left to
/// the scanner.
#[test]
fn a_laid_out_line_fills_the_table_as_scan_does() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");
    let (mut lines, mut laid_out) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                lines += 1;
                laid_out += usize::from(same_table(line));
            }
        }
    }
    assert!(lines > 100 && laid_out * 2 > lines, "{laid_out} of {lines}");
    for line in [
        r#"{"event":"fork","ts":0.000000000,"pid":1,"ppid":0}"#,
        r#"{"event":"fork","ts":null,"pid":1,"ppid":0,"pre_existing":true,"comm":"a\"b"}"#,
        r#"{"event":"exec","ts":1.5,"pid":2,"ppid":1,"argv":[],"exe":null,"cwd":"/","uid":0,"comm":"x"}"#,
        r#"{"event":"exec","ts":1.5,"pid":2,"ppid":1,"argv":["sh","-c","echo \"hi\" \u00e9"],"comm":"sh"}"#,
        r#"{"event":"exec","ts":1.5,"pid":2,"ppid":1,"argv":null}"#,
        r#"{"event":"exit","ts":2.25,"pid":2,"ppid":1,"signal":9,"core":false,"duration":0.75,"background":true}"#,
        r#"{"event":"exit","ts":2.25,"pid":2,"ppid":1,"code":null,"exit_lost":true}"#,
        r#"{"event":"exit","ts":2.25,"pid":2,"ppid":1,"code":0,"duration":1.000000000,"cpu_user_s":0.5,"cpu_sys_s":0.25,"max_rss_kib":10,"read_chars":1,"write_chars":2,"read_bytes":3,"write_bytes":4,"cancelled_write_bytes":5,"ctx_switches":{"voluntary":1,"involuntary":2},"cpu_delay_s":0.1,"io_delay_s":0.2}"#,
        r#"{"event":"exit","ts":-1,"pid":2,"ppid":1,"code":1e3}"#,
        r#"{"event":"exit","ts":2.25,"pid":99999999999,"ppid":1,"code":1234567890123456789012}"#,
        r#"{"event":"exit","ts":1.0000000001,"pid":2,"ppid":1,"code":256,"cpu_user_s":99999999999.5}"#,
        r#"{"event":"fork","ts":18446744073.709551616,"pid":0,"ppid":-1}"#,
    ] {
        assert!(same_table(line), "{line}");
    }
    // Whitespace, another order, an unknown or repeated key, a control character, a bad
    // number, an unclosed line: not laid out (the scanner reads or refuses each).
    for line in [
        r#"{"event":"fork", "ts":1.0,"pid":1,"ppid":0}"#,
        r#"{"event":"fork","pid":1,"ts":1.0,"ppid":0}"#,
        r#"{"event":"fork","ts":1.0,"pid":1,"ppid":0,"new_key":1}"#,
        r#"{"event":"fork","ts":1.0,"pid":1,"pid":1,"ppid":0}"#,
        "{\"event\":\"exec\",\"ts\":1.0,\"pid\":1,\"ppid\":0,\"argv\":[\"a\tb\"]}",
        r#"{"event":"exit","ts":01.0,"pid":1,"ppid":0,"code":0}"#,
        r#"{"event":"exit","ts":1.,"pid":1,"ppid":0,"code":0}"#,
        r#"{"event":"exit","ts":1.0,"pid":1,"ppid":0,"code":0"#,
        r#"{"event":"exit","ts":1.0,"pid":1,"ppid":0,"code":0}}"#,
        r#"{"event":"exec","ts":1.0,"pid":1,"ppid":0,"argv":["a",1]}"#,
    ] {
        assert!(!same_table(line), "{line}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Any bytes: events or an error, never a panic; lenient reading never fails.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = read_all(&bytes, false);
        prop_assert!(read_all(&bytes, true).is_ok());
    }

    /// A laid-out line with a byte changed, inserted or cut: still either left to the
    /// scanner or read exactly as the scanner reads it.
    #[test]
    fn a_changed_laid_out_line_is_read_as_scan_reads_it(which in 0usize..4, at in 0usize..400, byte in any::<u8>(), how in 0u8..3) {
        let lines = [
            r#"{"event":"fork","ts":0.000010000,"pid":1001,"ppid":1000,"comm":"make"}"#,
            r#"{"event":"exec","ts":0.163848300,"pid":1338,"ppid":1337,"argv":["cc1","-quiet","a\"b","-o","/tmp/x.s"],"exe":"/usr/lib/cc1","cwd":"/src","uid":1000,"comm":"cc1"}"#,
            r#"{"event":"exit","ts":0.163888200,"pid":1335,"ppid":1334,"signal":11,"core":true,"duration":0.000790000,"cpu_user_s":0.001,"cpu_sys_s":0.000,"max_rss_kib":1200,"ctx_switches":{"voluntary":1,"involuntary":0}}"#,
            // As `jq -c .` prints it: numbers in scientific form, integers as floats.
            r#"{"event":"exit","ts":8802.9575727570001,"pid":1335,"ppid":1334,"code":0,"duration":7.9e-04,"cpu_user_s":1e-3,"max_rss_kib":1.2E+3,"ctx_switches":{"voluntary":1.0,"involuntary":0e0}}"#,
        ];
        let mut b = lines[which].as_bytes().to_vec();
        let at = at % b.len();
        match how {
            0 => b[at] = byte,
            1 => b.insert(at, byte),
            _ => b.truncate(at),
        }
        let text = String::from_utf8_lossy(&b);
        let _ = same_table(&text);
    }

    /// Valid lines with their bytes shuffled about: the same.
    #[test]
    fn mangled_lines_never_panic(cut in 0usize..300, byte in any::<u8>(), at in 0usize..300) {
        let mut t = br#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"run","argv":["a"]}
{"event":"fork","ts":1.5,"pid":5,"ppid":1,"pre_existing":true}
{"event":"exec","ts":0.000000000,"pid":5,"ppid":1,"argv":["x\"y"],"comm":"x"}
{"event":"data","ts":1.6,"pid":5,"ppid":1,"thread":"main","category":"c","key":"k","nesting":1,"value":{"a":[1]}}
{"event":"region","ts":1.6,"pid":5,"ppid":1,"duration":0.1,"thread":"main","category":"c","label":"l","nesting":1}
{"event":"end","ts":2.0,"processes":1}
"#.to_vec();
        let at = at % t.len();
        t[at] = byte;
        t.truncate(cut.max(1) * t.len() / 300);
        let _ = read_all(&t, false);
        prop_assert!(read_all(&t, true).is_ok());
    }
}
