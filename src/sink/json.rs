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
