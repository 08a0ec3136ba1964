//! Credentials in URLs never reach an output unless the user says so.
//!
//! The rule is git's Trace2 redaction, implemented once in the trace2 crate: an argument starting
//! `http://` or `https://` whose authority holds `user:secret@` shows `user:<REDACTED>@`.

use std::borrow::Cow;

/// Redacts one argument; borrowed when nothing changes.
pub fn redact_arg(arg: &str) -> Cow<'_, str> {
    match trace2::quote::redact_url(arg) {
        Some(r) => Cow::Owned(r),
        None => Cow::Borrowed(arg),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_arg;

    #[test]
    fn only_url_passwords_change() {
        assert_eq!(
            redact_arg("https://user:pwd@host/x"),
            "https://user:<REDACTED>@host/x"
        );
        assert!(matches!(
            redact_arg("https://host:8080/a@b"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(
            redact_arg("--url=https://u:p@h"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
