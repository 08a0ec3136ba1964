//! Tests that the JSON Lines reader takes any valid JSON a JSON tool writes for the same content
//! (`jq -c .`, `jq -S .`, Python's `json.dumps`, a hand edit) to the same events as the lines
//! proctrace wrote; and that its tables are the schema's. A child of `input::jsonl` (its own file
//! so the reader's file keeps to the reader).

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::input::InputOptions;

/// A JSON value as written, for the rewrites below (test input is valid JSON; anything else
/// panics).
#[derive(Debug, Clone)]
enum J {
    /// A string with its quotes, as written.
    Str(String),
    Num(String),
    Word(String),
    Arr(Vec<J>),
    /// Keys with their quotes, as written.
    Obj(Vec<(String, J)>),
}

fn parse_j(s: &str) -> J {
    let mut p = Scan::new(s);
    let j = value_j(&mut p);
    p.ws();
    assert_eq!(p.i, s.len(), "{s}");
    j
}

fn value_j(p: &mut Scan<'_>) -> J {
    p.ws();
    let from = p.i;
    match p.peek() {
        Some(b'"') => {
            p.string().unwrap();
            J::Str(p.s[from..p.i].to_string())
        }
        Some(b'[') => {
            p.i += 1;
            let mut v = Vec::new();
            loop {
                p.ws();
                match p.peek() {
                    Some(b']') => {
                        p.i += 1;
                        return J::Arr(v);
                    }
                    Some(b',') => p.i += 1,
                    _ => v.push(value_j(p)),
                }
            }
        }
        Some(b'{') => {
            p.i += 1;
            let mut v = Vec::new();
            loop {
                p.ws();
                match p.peek() {
                    Some(b'}') => {
                        p.i += 1;
                        return J::Obj(v);
                    }
                    Some(b',') => p.i += 1,
                    _ => {
                        let k = p.i;
                        p.string().unwrap();
                        let key = p.s[k..p.i].to_string();
                        p.ws();
                        p.eat(b':').unwrap();
                        // A `data` line's value is kept as the JSON it is (a rewrite of it is a
                        // change of the value's bytes, docs/json-lines.md), so left as written.
                        let x = if key == "\"value\"" {
                            p.ws();
                            let from = p.i;
                            p.value(1).unwrap();
                            J::Word(p.s[from..p.i].to_string())
                        } else {
                            value_j(p)
                        };
                        v.push((key, x));
                    }
                }
            }
        }
        Some(b'-' | b'0'..=b'9') => J::Num(p.number().unwrap().to_string()),
        _ => {
            p.value(1).unwrap();
            J::Word(p.s[from..p.i].to_string())
        }
    }
}

/// How a rewrite prints: what a JSON tool may do to a line.
#[derive(Clone, Copy)]
struct Style {
    /// `json.dumps`: `", "` and `": "`.
    spaces: bool,
    /// `jq -S`: keys sorted (at every level).
    sorted: bool,
    /// Every key's first letter as a `\u` escape.
    escaped_keys: bool,
    /// Numbers rewritten (the key they belong to is given).
    number: fn(&str) -> String,
}

fn print_j(j: &J, st: Style, out: &mut String) {
    match j {
        J::Str(s) | J::Word(s) => out.push_str(s),
        J::Num(n) => out.push_str(&(st.number)(n)),
        J::Arr(v) => {
            out.push('[');
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push_str(if st.spaces { ", " } else { "," });
                }
                print_j(x, st, out);
            }
            out.push(']');
        }
        J::Obj(v) => {
            let mut v = v.clone();
            if st.sorted {
                v.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (i, (k, x)) in v.iter().enumerate() {
                if i > 0 {
                    out.push_str(if st.spaces { ", " } else { "," });
                }
                match k.chars().nth(1) {
                    Some(c) if st.escaped_keys && c.is_ascii_alphabetic() => {
                        out.push_str(&format!("\"\\u{:04x}{}", c as u32, &k[2..]));
                    }
                    _ => out.push_str(k),
                }
                out.push_str(if st.spaces { ": " } else { ":" });
                print_j(x, st, out);
            }
            out.push('}');
        }
    }
}

fn rewrite(line: &str, st: Style) -> String {
    let mut out = String::new();
    print_j(&parse_j(line), st, &mut out);
    out
}

/// A number as written.
fn same(n: &str) -> String {
    n.to_string()
}

/// The same value in scientific form, exactly (`0.000053688` → `5.3688e-5`, `1000` → `1e3`,
/// `12.000000345` → `1.2000000345e1`): what `jq` and Python print for small and large numbers.
fn scientific(n: &str) -> String {
    let (neg, n) = match n.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", n),
    };
    let (int, frac) = n.split_once('.').unwrap_or((n, ""));
    let digits: String = format!("{int}{frac}");
    let lead = digits.bytes().take_while(|&b| b == b'0').count();
    if lead == digits.len() {
        return format!("{neg}0e0");
    }
    let sig = digits[lead..].trim_end_matches('0');
    // value = 0.sig × 10^(int.len() - lead) = sig[0].sig[1..] × 10^(int.len() - lead - 1)
    let exp = int.len() as i64 - lead as i64 - 1;
    let mantissa = if sig.len() > 1 {
        format!("{}.{}", &sig[..1], &sig[1..])
    } else {
        sig.to_string()
    };
    // Both exponent letters, with and without a sign.
    let e = if exp < 0 || exp % 2 == 0 { "e" } else { "E+" };
    format!("{neg}{mantissa}{e}{exp}")
}

/// Trailing zeros of a fraction dropped, and every integer given a `.0`: `1.500000000` →
/// `1.5`, `3` → `3.0` (Python prints a float's shortest form; a tool may print `3.0`).
fn short_decimal(n: &str) -> String {
    match n.split_once('.') {
        Some((i, f)) => match f.trim_end_matches('0') {
            "" => format!("{i}.0"),
            f => format!("{i}.{f}"),
        },
        None if n.contains(['e', 'E']) => n.to_string(),
        None => format!("{n}.0"),
    }
}

const PLAIN: Style = Style {
    spaces: false,
    sorted: false,
    escaped_keys: false,
    number: same,
};

/// Every way of writing a line the reader must take as the line itself.
fn styles() -> Vec<(&'static str, Style)> {
    vec![
        (
            "spaces",
            Style {
                spaces: true,
                ..PLAIN
            },
        ),
        (
            "sorted keys",
            Style {
                sorted: true,
                ..PLAIN
            },
        ),
        (
            "escaped keys",
            Style {
                escaped_keys: true,
                ..PLAIN
            },
        ),
        (
            "scientific numbers",
            Style {
                number: scientific,
                ..PLAIN
            },
        ),
        (
            "short decimals",
            Style {
                number: short_decimal,
                ..PLAIN
            },
        ),
        (
            "all at once",
            Style {
                spaces: true,
                sorted: true,
                escaped_keys: true,
                number: scientific,
            },
        ),
    ]
}

/// Header, events, stats and summary of a whole file.
fn read(text: &str) -> (Header, Vec<Event>, (u64, u64, u64), Option<Summary>) {
    let opts = InputOptions::default();
    let mut input = JsonlInput::new(text.as_bytes(), Path::new("mem.jsonl"), &opts).unwrap();
    let mut events = Vec::new();
    input.feed_all(&mut |e| events.push(e)).unwrap();
    let st = input.stats();
    (
        input.header().clone(),
        events,
        (st.lines, st.skipped_lines, st.truncated),
        input.recorded_summary().cloned(),
    )
}

/// Every file proctrace wrote here: the golden files and the every-key fixtures.
fn written_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for dir in ["tests/fixtures/golden", "tests/fixtures/jsonl"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "jsonl") {
                files.push((
                    path.display().to_string(),
                    std::fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    assert!(files.len() >= 13, "{}", files.len());
    files
}

/// Every proctrace-written file, each line rewritten as a JSON tool may (spaces, sorted keys,
/// escaped keys, numbers in scientific form or as short decimals, integers as `3.0`, all at
/// once), reads to the same header, events, counts and summary as the file itself.
#[test]
fn a_file_rewritten_by_a_json_tool_reads_the_same() {
    for (path, text) in written_files() {
        let want = read(&text);
        for (how, st) in styles() {
            let rewritten: String = text.lines().map(|l| rewrite(l, st) + "\n").collect();
            assert_ne!(rewritten, text, "{how} changed nothing in {path}");
            let got = read(&rewritten);
            assert!(got == want, "{path}, {how}:\n{:?}\n!=\n{:?}", got, want);
            // And `analyze` tells it is proctrace JSON Lines (when it has its `start` line).
            if text.starts_with("{\"event\":\"start\"") {
                let f = crate::input::detect_bytes(rewritten.as_bytes());
                assert!(
                    matches!(f, Some(crate::input::Format::Jsonl)),
                    "{path}, {how}: {f:?}"
                );
            }
        }
    }
}

/// The rewrites are the JSON of the same content (checked with serde_json, every number as
/// a float to 12 digits: `1e3` is `1000`).
#[test]
fn the_rewrites_are_the_same_json() {
    fn floats(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            // To 12 digits: serde_json's own reading of long decimals is off in the last ones.
            Value::Number(n) => Value::String(format!("{:.12e}", n.as_f64().unwrap_or(f64::NAN))),
            Value::Array(a) => Value::Array(a.into_iter().map(floats).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, floats(v))).collect()),
            v => v,
        }
    }
    for (path, text) in written_files() {
        for line in text.lines() {
            let want = floats(serde_json::from_str(line).unwrap());
            for (how, st) in styles() {
                let got = floats(serde_json::from_str(&rewrite(line, st)).unwrap());
                assert_eq!(got, want, "{path}, {how}: {line}");
            }
        }
    }
}

/// A line in the order proctrace writes it with a number in a form the writer does not use
/// (what `jq -c .` leaves: the keys in place, `1e-06`) is still read by the laid-out path, and
/// as the scanner reads it.
#[test]
fn jq_numbers_stay_on_the_laid_out_path() {
    for line in [
        r#"{"event":"fork","ts":1e-06,"pid":1000,"ppid":1}"#,
        r#"{"event":"exec","ts":2e-06,"pid":1000,"ppid":1,"argv":["make","-j4"],"exe":"/usr/bin/make","uid":1000,"comm":"make"}"#,
        r#"{"event":"exit","ts":8802.9575727570001,"pid":5,"ppid":1,"code":0,"duration":5.3688e-05,"cpu_user_s":0.0012,"cpu_sys_s":0,"max_rss_kib":1.2e3}"#,
        r#"{"event":"exit","ts":1.5,"pid":5.0,"ppid":1,"code":1E+0}"#,
    ] {
        assert!(super::tests::same_table(line), "{line}");
    }
}

/// Numbers as JSON allows them, to nanoseconds or integers exactly: exponents, rounding half
/// to even below the nanosecond, whole numbers in any form; never a float.
#[test]
fn numbers_in_any_json_form() {
    let ns = |s: &str| secs(Some(Val::Num(s)), "ts");
    assert_eq!(ns("5.3688e-05"), Ok(Some(53_688)));
    assert_eq!(ns("5.3688E-5"), Ok(Some(53_688)));
    assert_eq!(ns("1e-9"), Ok(Some(1)));
    assert_eq!(ns("1e9"), Ok(Some(1_000_000_000_000_000_000)));
    assert_eq!(ns("0.5e1"), Ok(Some(5_000_000_000)));
    assert_eq!(ns("8802.9575727570001"), Ok(Some(8_802_957_572_757)));
    assert_eq!(ns("8802.9575727569999"), Ok(Some(8_802_957_572_757)));
    // Ties to even, and anything past the tie up.
    assert_eq!(ns("0.0000000005"), Ok(Some(0)));
    assert_eq!(ns("0.0000000015"), Ok(Some(2)));
    assert_eq!(ns("0.0000000025"), Ok(Some(2)));
    assert_eq!(ns("0.00000000250000000001"), Ok(Some(3)));
    assert_eq!(ns("0.0000000024999"), Ok(Some(2)));
    assert_eq!(ns("4e-10"), Ok(Some(0)));
    assert_eq!(ns("6e-10"), Ok(Some(1)));
    assert_eq!(ns("1e-999999999999999999999"), Ok(Some(0)));
    assert_eq!(ns("-0"), Ok(Some(0)));
    assert_eq!(ns("-0.0e5"), Ok(Some(0)));
    assert_eq!(ns("0e0"), Ok(Some(0)));
    assert_eq!(ns(&format!("0.{}1e9", "0".repeat(5000))), Ok(Some(0)));
    // The largest number of seconds there is room for, and one nanosecond more.
    assert_eq!(ns("18446744073.709551615"), Ok(Some(u64::MAX)));
    assert_eq!(ns("1.8446744073709551615e10"), Ok(Some(u64::MAX)));
    assert_eq!(ns("18446744073.7095516154"), Ok(Some(u64::MAX)));
    for bad in [
        "18446744073.7095516155",
        "18446744073.709551616",
        "1e11",
        "1e999999999999999999999",
        "-1e-9",
        "-5.3688e-05",
    ] {
        let e = ns(bad).unwrap_err();
        assert!(e.contains("\"ts\"") && e.contains(bad), "{bad}: {e}");
    }
    let int = |s: &str| opt_int::<i64>(Some(Val::Num(s)), "pid");
    assert_eq!(int("3"), Ok(Some(3)));
    assert_eq!(int("3.0"), Ok(Some(3)));
    assert_eq!(int("3e0"), Ok(Some(3)));
    assert_eq!(int("300e-2"), Ok(Some(3)));
    assert_eq!(int("1e+17"), Ok(Some(100_000_000_000_000_000)));
    assert_eq!(int("-1.0"), Ok(Some(-1)));
    assert_eq!(int("-0.0"), Ok(Some(0)));
    assert_eq!(int("9.223372036854775807e18"), Ok(Some(i64::MAX)));
    assert_eq!(int("-9.223372036854775808e18"), Ok(Some(i64::MIN)));
    for bad in [
        "3.5",
        "1e-1",
        "9.223372036854775808e18",
        "1e400",
        "0.30000000000000004e1",
    ] {
        let e = int(bad).unwrap_err();
        assert!(e.contains("\"pid\"") && e.contains(bad), "{bad}: {e}");
    }
    assert_eq!(
        opt_int::<i32>(Some(Val::Num("3e9")), "pid").unwrap_err(),
        "\"pid\" out of range: 3e9"
    );
    assert_eq!(parse_signed_seconds(b"-2.5e0"), Some(-2_500_000_000));
    assert_eq!(
        parse_signed_seconds(b"1.7000000002500000e9"),
        Some(1_700_000_000_250_000_000)
    );
    assert_eq!(
        ctx_switches(r#"{"involuntary": 3e0, "voluntary": 4.0}"#),
        Ok((4, 3))
    );
    assert_eq!(
        ctx_switches(r#"{"\u0076oluntary":1,"involuntary":2,"other":[1]}"#),
        Ok((1, 2))
    );
    assert_eq!(ctx_switches("{ }"), Ok((0, 0)));
    assert!(ctx_switches(r#"{"voluntary":1.5,"involuntary":2}"#).is_err());
    assert!(ctx_switches(r#"{"voluntary":"1","involuntary":2}"#).is_err());
}

/// A start line whose `event` is escaped is still the header; an escaped key is the key.
#[test]
fn escaped_keys_are_the_keys() {
    let text = "{\"\\u0065vent\":\"st\\u0061rt\",\"ts\":1.0,\"t\\u006fol\":\"proctrace\",\"mode\":\"watch\",\"root\":5}\n\
                {\"ev\\u0065nt\":\"fork\",\"ts\":2.0,\"pid\":6,\"\\u0070pid\":5}\n";
    let (h, ev, ..) = read(text);
    assert_eq!(h.mode, Mode::Watch { root: Some(5) });
    assert_eq!(ev, vec![fork(2_000_000_000, 5, 6)]);
    // Escaped or not, a key given twice is an error.
    let twice = "{\"event\":\"fork\",\"ts\":2.0,\"pid\":6,\"\\u0070id\":6,\"ppid\":5}";
    assert!(Table::default().scan(twice).unwrap_err().contains("given twice"));
}

/// A `start` line is told in any layout; a line that is not one (another event, another
/// tool's `start`, Trace2's, not JSON) is not.
#[test]
fn a_start_line_in_any_layout() {
    for yes in [
        r#"{"event":"start","ts":1.0,"tool":"proctrace","mode":"watch"}"#,
        r#"{"event": "start", "ts": 1.0, "tool": "proctrace", "mode": "watch"}"#,
        r#"{"mode":"watch","tool":"proctrace","ts":1e0,"event":"start"}"#,
        r#" { "event" : "start" , "tool" : "proctrace" } "#,
    ] {
        assert!(is_start_line(yes.as_bytes()), "{yes}");
    }
    for no in [
        r#"{"event":"fork","ts":1.0,"tool":"proctrace"}"#,
        r#"{"event":"start","ts":1.0,"tool":"other"}"#,
        r#"{"event":"start","sid":"x","thread":"main","time":"2024-01-01T00:00:00.000000Z","argv":["git"]}"#,
        r#"{"event":"start","tool":"proctrace""#,
        "{\"event\":\"start\",\"tool\":\"proctrace\"}\u{0}",
        "\u{ff}{",
    ] {
        assert!(!is_start_line(no.as_bytes()), "{no}");
    }
}

/// The reader's key table and laid-out lists are the schema's: every key found by its name,
/// and the laid-out lists exactly the event's fields after `event`, in the writer's order.
#[test]
fn the_reader_uses_the_schema() {
    for k in K::ALL {
        assert_eq!(K::of(k.name()), Some(*k));
    }
    for (name, laid_out) in [
        (EventName::Fork, FORK_KEYS),
        (EventName::Exec, EXEC_KEYS),
        (EventName::Exit, EXIT_KEYS),
    ] {
        assert_eq!(laid_out, &name.schema().fields[1..]);
        // And the laid-out path recognises the head the writer writes.
        let line = format!("{}1.0,\"pid\":1,\"ppid\":0}}", name.head());
        let mut t = Table::default();
        assert!(t.fill_laid_out(&line), "{line}");
    }
    // Every key a decoded line can have has its slot and bit.
    assert!(NKEYS <= 128 && NKEYS == K::ALL.len());
}

/// An exit line as proctrace writes it, from its values.
fn exit_line(ts: u64, pid: i32, code: i32, duration: u64, cpu: u64, rss: u64) -> String {
    let s = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    format!(
        "{{\"event\":\"exit\",\"ts\":{},\"pid\":{pid},\"ppid\":1,\"code\":{code},\"duration\":{},\"cpu_user_s\":{},\"cpu_sys_s\":0.000000000,\"max_rss_kib\":{rss},\"ctx_switches\":{{\"voluntary\":1,\"involuntary\":2}}}}",
        s(ts),
        s(duration),
        s(cpu)
    )
}

/// The events of one line (after a `watch` start line), or its error.
fn events_of(line: &str) -> Result<Vec<Event>, String> {
    let text =
        format!("{{\"event\":\"start\",\"ts\":0.5,\"tool\":\"proctrace\",\"mode\":\"watch\"}}\n{line}\n");
    let opts = InputOptions::default();
    let mut input =
        JsonlInput::new(text.as_bytes(), Path::new("mem.jsonl"), &opts).map_err(|e| e.to_string())?;
    let mut ev = Vec::new();
    input.feed_all(&mut |e| ev.push(e)).map_err(|e| e.to_string())?;
    Ok(ev)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    /// A rewritten line (every style) with a byte changed, inserted or cut: events or an error
    /// naming its line, never a panic; lenient reading never fails.
    #[test]
    fn a_changed_rewritten_line_never_panics(which in 0usize..1000, style in 0usize..6, at in 0usize..2000, byte in any::<u8>(), how in 0u8..3) {
        static FILES: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
        let files = FILES.get_or_init(written_files);
        let lines: Vec<&str> = files.iter().flat_map(|(_, t)| t.lines()).collect();
        let line = rewrite(lines[which % lines.len()], styles()[style].1);
        let mut b = line.into_bytes();
        let at = at % b.len();
        match how {
            0 => b[at] = byte,
            1 => b.insert(at, byte),
            _ => b.truncate(at),
        }
        let text = String::from_utf8_lossy(&b);
        let _ = super::tests::same_table(&text);
        let file = format!("{{\"event\":\"start\",\"ts\":0.5,\"tool\":\"proctrace\",\"mode\":\"watch\"}}\n{text}\n");
        if let Err(e) = events_of(&text) {
            prop_assert!(e.contains("mem.jsonl:"), "{}", e);
        }
        let opts = InputOptions {
            lenient: true,
            ..InputOptions::default()
        };
        let mut input = JsonlInput::new(file.as_bytes(), Path::new("mem.jsonl"), &opts).unwrap();
        let read = input.feed_all(&mut |_| ());
        prop_assert!(read.is_ok(), "{:?}", read);
    }

    /// Any exit line, rewritten every way a JSON tool may, gives the same events.
    #[test]
    fn a_rewritten_exit_line_reads_the_same(
        ts in 0u64..u64::MAX / 2,
        pid in 1i32..i32::MAX,
        code in 0i32..256,
        duration in 0u64..10_000_000_000_000,
        cpu in 0u64..1_000_000_000_000,
        rss in 0u64..u64::MAX / 2,
    ) {
        let line = exit_line(ts, pid, code, duration, cpu, rss);
        let want = events_of(&line);
        prop_assert!(want.is_ok(), "{line}: {want:?}");
        for (how, st) in styles() {
            let r = rewrite(&line, st);
            prop_assert_eq!(&events_of(&r), &want, "{}: {}", how, r);
        }
    }

    /// Seconds printed as a float printer prints them come back to the nanosecond: the
    /// shortest form (Python's `repr`, Rust's `{}` and `{:e}`) below 2^23 s (97 days), where a
    /// float's spacing is under 1 ns, so the float nearest the value is within half a
    /// nanosecond of it and its shortest form is the value's own digits; 17 significant digits
    /// (jq 1.6's `%.17g`) below 2^22 s (48 days), where that float and its 17-digit print
    /// together stay within half a nanosecond (above, the print can land on the tie).
    #[test]
    fn float_printed_seconds_come_back_exactly(ns in 0u64..(1u64 << 23) * 1_000_000_000) {
        let f = ns as f64 / 1e9;
        let mut printed = vec![format!("{f:e}"), format!("{f}")];
        if ns < (1u64 << 22) * 1_000_000_000 {
            printed.push(format!("{f:.16e}"));
        }
        for p in printed {
            prop_assert_eq!(secs(Some(Val::Num(&p)), "ts"), Ok(Some(ns)), "{}", p);
        }
    }

    /// The decimal conversion is what exact rational arithmetic gives, for any digits and any
    /// exponent.
    #[test]
    fn scaled_is_exact_arithmetic(int in 0u64..1_000_000_000_000, frac in "[0-9]{0,30}", exp in -40i32..40) {
        let text = if frac.is_empty() { format!("{int}e{exp}") } else { format!("{int}.{frac}e{exp}") };
        let got = scaled(text.as_bytes(), 9, true);
        // Reference: decimal string arithmetic on the whole digit string.
        let all = format!("{int}{frac}");
        let point = int.to_string().len() as i64 + i64::from(exp) + 9;
        let (whole, rest): (String, String) = if point <= 0 {
            (String::from("0"), format!("{}{}", "0".repeat((-point) as usize), all))
        } else if point as usize >= all.len() {
            (format!("{all}{}", "0".repeat(point as usize - all.len())), String::new())
        } else {
            (all[..point as usize].to_string(), all[point as usize..].to_string())
        };
        let whole = whole.trim_start_matches('0');
        let v: Option<u128> = if whole.is_empty() { Some(0) } else if whole.len() > 30 { None } else { whole.parse().ok() };
        let up = match rest.as_bytes().first() {
            Some(&r) if r > b'5' => true,
            Some(b'5') => rest[1..].bytes().any(|b| b != b'0') || v.is_some_and(|v| v % 2 == 1),
            _ => false,
        };
        let want = v.map(|v| v + u128::from(up)).and_then(|v| u64::try_from(v).ok()).map(|v| (false, v));
        prop_assert_eq!(got, want, "{}", text);
    }
}
