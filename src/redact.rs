//! Credentials in URLs never reach an output unless the user says so.
//!
//! The rule is git's (trace2 redaction): an argument starting `http://` or `https://` whose
//! authority (up to the first `/`) holds `user:secret@` has everything from that first `:` to the
//! `@` replaced with `:<REDACTED>`.

use std::borrow::Cow;

/// Redacts one argument; borrowed when nothing changes.
pub fn redact_arg(arg: &str) -> Cow<'_, str> {
    let rest = if let Some(r) = arg.strip_prefix("https://") {
        r
    } else if let Some(r) = arg.strip_prefix("http://") {
        r
    } else {
        return Cow::Borrowed(arg);
    };
    let scheme_len = arg.len() - rest.len();
    let Some(end) = rest.find(['@', '/']) else {
        return Cow::Borrowed(arg);
    };
    if rest.as_bytes()[end] != b'@' {
        return Cow::Borrowed(arg);
    }
    let Some(colon) = rest[..end].find(':') else {
        return Cow::Borrowed(arg);
    };
    let mut out = String::with_capacity(arg.len());
    out.push_str(&arg[..scheme_len + colon]);
    out.push_str(":<REDACTED>");
    out.push_str(&rest[end..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::redact_arg;

    #[test]
    fn like_git() {
        assert_eq!(
            redact_arg("https://user:pwd@host/x"),
            "https://user:<REDACTED>@host/x"
        );
        assert_eq!(redact_arg("http://u:p:q@h"), "http://u:<REDACTED>@h");
        assert_eq!(redact_arg("https://user@host/"), "https://user@host/");
        assert_eq!(redact_arg("https://host:8080/a@b"), "https://host:8080/a@b");
        assert_eq!(redact_arg("ftp://u:p@h"), "ftp://u:p@h");
        assert_eq!(redact_arg("HTTPS://u:p@h"), "HTTPS://u:p@h");
        assert_eq!(redact_arg("--url=https://u:p@h"), "--url=https://u:p@h");
    }
}
