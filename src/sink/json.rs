//! Minimal JSON writing for line-oriented sinks: no allocation, valid output for any string, one
//! string escaping for JSON Lines and trace2.

/// Appends `s` as a JSON string literal, escaped exactly as git's json-writer (and so the trace2
/// event target) does: `"`, `\` and the control characters below 0x20, with the short forms
/// `\n \r \t \f \b`; everything else (DEL and non-ASCII included) as is. That is all
/// RFC 8259 requires, so every line stays valid JSON for any string.
pub use trace2::quote::json_string as string;

/// Appends an integer.
pub fn int(out: &mut Vec<u8>, v: i64) {
    use std::io::Write;
    let _ = write!(out, "{v}");
}

/// Appends an unsigned integer.
pub fn uint(out: &mut Vec<u8>, v: u64) {
    use std::io::Write;
    let _ = write!(out, "{v}");
}

/// Appends nanoseconds as seconds with nine decimals, exactly (no float rounding).
pub fn seconds(out: &mut Vec<u8>, ns: u64) {
    use std::io::Write;
    let _ = write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
}

/// A process's cost as the JSON fields of its JSONL `exit` line (keys and order from
/// [`crate::model::jsonl_schema`]; docs/json-lines.md) and of its Chrome slice's args: CPU and
/// delays in seconds, memory in KiB, I/O in bytes, context switches as an object. Each field
/// starts with its comma.
pub fn usage_fields(b: &mut Vec<u8>, u: &crate::model::event::Usage) {
    use crate::model::jsonl_schema::{CTX_SWITCHES_KEYS, Key};
    let lead = |b: &mut Vec<u8>, k: Key| b.extend_from_slice(k.lead().as_bytes());
    lead(b, Key::CpuUserS);
    seconds(b, u.cpu_user_ns);
    lead(b, Key::CpuSysS);
    seconds(b, u.cpu_sys_ns);
    for (k, v) in [
        (Key::MaxRssKib, u.max_rss_kib),
        (Key::ReadChars, u.read_chars),
        (Key::WriteChars, u.write_chars),
        (Key::ReadBytes, u.read_bytes),
        (Key::WriteBytes, u.write_bytes),
        (Key::CancelledWriteBytes, u.cancelled_write_bytes),
    ] {
        lead(b, k);
        uint(b, v);
    }
    lead(b, Key::CtxSwitches);
    let [vol, invol] = CTX_SWITCHES_KEYS;
    b.push(b'{');
    string(b, vol);
    b.push(b':');
    uint(b, u.vol_ctx_switches);
    b.push(b',');
    string(b, invol);
    b.push(b':');
    uint(b, u.invol_ctx_switches);
    b.push(b'}');
    if let Some(d) = u.cpu_delay_ns {
        lead(b, Key::CpuDelayS);
        seconds(b, d);
    }
    if let Some(d) = u.io_delay_ns {
        lead(b, Key::IoDelayS);
        seconds(b, d);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes() {
        let mut o = Vec::new();
        super::string(&mut o, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(o).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        // Every character up to U+07FF (all ASCII controls, DEL, two-byte UTF-8) round-trips.
        let all: String = (0u32..0x800).filter_map(char::from_u32).collect();
        let mut o = Vec::new();
        super::string(&mut o, &all);
        assert_eq!(serde_json::from_slice::<String>(&o).unwrap(), all);
        let mut o = Vec::new();
        super::string(&mut o, "\x08\x0c\x7f");
        assert_eq!(o, b"\"\\b\\f\x7f\"");
        let mut o = Vec::new();
        super::seconds(&mut o, 12_000_000_345);
        assert_eq!(o, b"12.000000345");
    }
}
