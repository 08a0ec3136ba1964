//! Byte-level quoting used by the targets: git's JSON string escaping, its
//! "pretty" shell quoting of argv (`sq_quote_buf_pretty`) and URL credential
//! redaction. Pure functions over byte buffers.

/// Appends `s` as a JSON string the way git's json-writer does: `"` and `\`
/// escaped, LF CR TAB FF BS as `\n \r \t \f \b`, other bytes below 0x20 as
/// `\u00XX`; `/`, 0x7f and bytes ≥ 0x80 copied unchanged.
pub fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x0c => b"\\f",
            0x08 => b"\\b",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn is_bare_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+,-./:=@_^".contains(&b)
}

/// Appends one argument quoted like git's `sq_quote_buf_pretty`: `''` for an
/// empty string, bare if every byte is safe, else `'…'` with `'` → `'\''`
/// and `!` → `'\!'`.
pub fn sq_pretty(out: &mut Vec<u8>, s: &str) {
    if s.is_empty() {
        out.extend_from_slice(b"''");
        return;
    }
    if s.bytes().all(is_bare_safe) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    out.push(b'\'');
    for b in s.bytes() {
        match b {
            b'\'' => out.extend_from_slice(b"'\\''"),
            b'!' => out.extend_from_slice(b"'\\!'"),
            _ => out.push(b),
        }
    }
    out.push(b'\'');
}

/// Appends an argv quoted with [`sq_pretty`], elements joined by one space.
pub fn sq_argv<S: AsRef<str>>(out: &mut Vec<u8>, argv: &[S]) {
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        sq_pretty(out, a.as_ref());
    }
}

/// Redacts the password of a URL like git 2.44+: if `s` starts with
/// `https://` or `http://`, the first `@` or `/` after the scheme is an `@`,
/// and a `:` occurs before it, everything from that `:` up to the `@` becomes
/// `:<REDACTED>`. Returns `None` when nothing needs redacting.
pub fn redact_url(s: &str) -> Option<String> {
    let rest_start = if s.starts_with("https://") {
        8
    } else if s.starts_with("http://") {
        7
    } else {
        return None;
    };
    let rest = &s[rest_start..];
    let at = rest.find(['@', '/'])?;
    if rest.as_bytes()[at] != b'@' {
        return None;
    }
    let colon = rest[..at].find(':')?;
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..rest_start + colon]);
    out.push_str(":<REDACTED>");
    out.push_str(&rest[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn js(s: &str) -> String {
        let mut v = Vec::new();
        json_string(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn json_escapes_like_git() {
        assert_eq!(js("a\"b\\c/d"), r#""a\"b\\c/d""#);
        assert_eq!(js("\n\r\t\x0c\x08\x01\x7f"), "\"\\n\\r\\t\\f\\b\\u0001\x7f\"");
        assert_eq!(js("é"), "\"é\"");
    }

    #[test]
    fn sq_quotes_like_git() {
        let mut v = Vec::new();
        sq_argv(
            &mut v,
            &["git", "log", "--", "tab\there", "it's", "a!b", "", "x=@:^,+_"],
        );
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "git log -- 'tab\there' 'it'\\''s' 'a'\\!'b' '' x=@:^,+_"
        );
    }

    #[test]
    fn redaction_rules() {
        assert_eq!(
            redact_url("https://user:pwd@host/x").as_deref(),
            Some("https://user:<REDACTED>@host/x")
        );
        assert_eq!(
            redact_url("http://u:p:q@h").as_deref(),
            Some("http://u:<REDACTED>@h")
        );
        assert_eq!(redact_url("https://user@host/"), None);
        assert_eq!(redact_url("https://host:8080/a@b"), None);
        assert_eq!(redact_url("HTTPS://u:p@h"), None);
        assert_eq!(redact_url("ssh://u:p@h"), None);
    }
}
