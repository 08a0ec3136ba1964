//! Minimal JSON writing for line-oriented sinks: no allocation, valid output for any string.

/// Appends `s` as a JSON string literal.
pub fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// Appends an integer.
pub fn int(out: &mut Vec<u8>, v: i64) {
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
        let mut o = Vec::new();
        super::seconds(&mut o, 12_000_000_345);
        assert_eq!(o, b"12.000000345");
    }
}
