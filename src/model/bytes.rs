//! Bytes kept in text: how the model holds what the kernel gives as bytes (argv words, the
//! executable's and working directory's paths, `comm`) without losing any, as `str`.
//!
//! Linux names and command lines are bytes, not UTF-8: `echo $'caf\xe9'`, a file named in
//! Latin-1, a `prctl(PR_SET_NAME)` with any bytes. The model keeps them as `str` (every output,
//! matcher and report works on text), so the bytes that are not UTF-8 are carried in it by a
//! reversible mapping, *bytes-in-text*:
//!
//! - a byte of an invalid UTF-8 sequence (always `0x80..=0xFF`) is held as the character
//!   `U+10FF00 + byte` (`U+10FF80..=U+10FFFF`, the last 128 code points of plane 16, private use);
//! - a genuine character in that range, which a process can send too, is held as its four UTF-8
//!   bytes mapped the same way, so that the range always means "a byte";
//! - everything else is itself.
//!
//! [`encode`] and [`decode`] are exact inverses (`decode(encode(b)) == b` for every `b`), and
//! text that is valid UTF-8 without a character of that range, nearly all text, is held as it is
//! (no copy). At the edges:
//!
//! - JSON Lines writes the standard lossy text (each bad byte a U+FFFD, [`lossy`]) and, when a
//!   field was not exact, a sibling field with the exact bytes in base64 (docs/json-lines.md);
//!   its readers map them back.
//! - A capture holds the model's text as it is: the mapped characters are valid UTF-8 and read
//!   back as they were written.
//! - The command proctrace runs gets its words [`decode`]d: `run -- CMD` runs any bytes.
//! - git's Trace2 formats write the bytes themselves, as git does.
//! - Every output for people shows a byte as `\xNN` (`crate::model::escape`).

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The first code point of the range that holds bytes: byte `b` is `BASE + b`.
const BASE: u32 = 0x10_FF00;

/// The character that holds byte `b` (`0x80..=0xFF`).
fn byte_char(b: u8) -> char {
    // BASE + 0x80..=0xFF is U+10FF80..=U+10FFFF: valid scalar values.
    char::from_u32(BASE + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The byte `c` holds, when it is one of the mapped characters.
pub fn held_byte(c: char) -> Option<u8> {
    let v = u32::from(c);
    (BASE + 0x80..=BASE + 0xFF).contains(&v).then(|| (v - BASE) as u8)
}

/// Whether UTF-8 text holds a character of the mapped range: its encoding starts `F4 8F BE` or
/// `F4 8F BF`. Fast: a `memchr` for the rare lead byte.
fn has_mapped(s: &[u8]) -> bool {
    let mut rest = s;
    while let Some(i) = memchr::memchr(0xF4, rest) {
        if rest.len() >= i + 3 && rest[i + 1] == 0x8F && rest[i + 2] >= 0xBE {
            return true;
        }
        rest = &rest[i + 1..];
    }
    false
}

/// Whether `s` is exactly the bytes it shows: no byte held by the mapping.
pub fn is_exact(s: &str) -> bool {
    !has_mapped(s.as_bytes())
}

/// Any bytes as the model's text (see the module docs); borrowed when they are UTF-8 and hold
/// no character of the mapped range.
pub fn encode(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes)
        && !has_mapped(bytes)
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    encode_into(&mut out, bytes);
    Cow::Owned(out)
}

/// [`encode`], appended to `out`.
pub fn encode_into(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        if has_mapped(valid.as_bytes()) {
            for c in valid.chars() {
                if held_byte(c).is_some() {
                    let mut buf = [0u8; 4];
                    for &b in c.encode_utf8(&mut buf).as_bytes() {
                        out.push(byte_char(b));
                    }
                } else {
                    out.push(c);
                }
            }
        } else {
            out.push_str(valid);
        }
        for &b in chunk.invalid() {
            out.push(byte_char(b));
        }
    }
}

/// A line read from a file (git's Trace2 output, which writes argv and paths as their bytes) as
/// UTF-8 whose strings hold those bytes: `false` (nothing written) when `line` already is UTF-8
/// and holds nothing of the mapped range, the usual case. JSON's structure is ASCII, so only
/// the strings change. For [`trace2::reader::ReadOptions::rewrite`].
pub fn hold_line(line: &[u8], out: &mut Vec<u8>) -> bool {
    if std::str::from_utf8(line).is_ok() && !has_mapped(line) {
        return false;
    }
    let mut s = String::with_capacity(line.len() + 16);
    encode_into(&mut s, line);
    out.extend_from_slice(s.as_bytes());
    true
}

/// The bytes the model's text stands for; borrowed when it is exact.
pub fn decode(s: &str) -> Cow<'_, [u8]> {
    if is_exact(s) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match held_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    Cow::Owned(out)
}

/// Replaces, in formatted output (`buf` holds UTF-8 made from the model's text and other text),
/// every character that holds a byte by that byte: what a writer of raw bytes (git's Trace2
/// formats) does after formatting. Nothing moves when there is none (one `memchr`).
pub fn decode_in_place(buf: &mut Vec<u8>) {
    if !has_mapped(buf) {
        return;
    }
    let (mut r, mut w) = (0, 0);
    while r < buf.len() {
        let held = buf[r] == 0xF4
            && buf.len() >= r + 4
            && buf[r + 1] == 0x8F
            && (buf[r + 2] == 0xBE || buf[r + 2] == 0xBF)
            && (0x80..=0xBF).contains(&buf[r + 3]);
        if held {
            buf[w] = 0x80 + (buf[r + 2] - 0xBE) * 64 + (buf[r + 3] - 0x80);
            r += 4;
        } else {
            buf[w] = buf[r];
            r += 1;
        }
        w += 1;
    }
    buf.truncate(w);
}

/// The standard lossy text of the bytes `s` stands for: each invalid sequence one U+FFFD, as
/// [`String::from_utf8_lossy`] makes it. What JSON readers that know nothing of the mapping see.
pub fn lossy(s: &str) -> Cow<'_, str> {
    if is_exact(s) {
        return Cow::Borrowed(s);
    }
    match decode(s) {
        Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        Cow::Borrowed(b) => String::from_utf8_lossy(b),
    }
}

/// The text an output that is not for bytes (a Chrome trace's args, OTLP attributes, the summary
/// JSON) shows: every held byte as `\xNN`, the rest as it is (those formats escape what they
/// must themselves). Borrowed when `s` is exact.
pub fn shown(s: &str) -> Cow<'_, str> {
    if is_exact(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match held_byte(c) {
            Some(b) => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\x");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// An OS string (an argument, a path) as the model's text.
pub fn from_os(s: &OsStr) -> Cow<'_, str> {
    encode(s.as_bytes())
}

/// The model's text as the OS string it stands for.
pub fn to_os(s: &str) -> OsString {
    OsString::from_vec(decode(s).into_owned())
}

/// Owned [`from_os`].
pub fn from_os_string(s: OsString) -> String {
    match encode(s.as_bytes()) {
        Cow::Borrowed(_) => String::from_utf8(s.into_vec()).unwrap_or_default(),
        Cow::Owned(t) => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(b: &[u8]) {
        let t = encode(b);
        assert_eq!(&*decode(&t), b, "{b:?} -> {t:?}");
        assert_eq!(is_exact(&t), matches!(t, Cow::Borrowed(_)), "{b:?}");
        assert_eq!(lossy(&t), String::from_utf8_lossy(b), "{b:?}");
    }

    #[test]
    fn text_is_itself() {
        for s in ["", "ls -l", "café", "日本", "\0\x1b[2J", "\u{10FF7F}", "\u{F4}"] {
            assert!(
                matches!(encode(s.as_bytes()), Cow::Borrowed(x) if x == s),
                "{s:?}"
            );
            assert!(matches!(decode(s), Cow::Borrowed(x) if x == s.as_bytes()));
            round(s.as_bytes());
        }
    }

    #[test]
    fn bad_bytes_are_held_and_given_back() {
        assert_eq!(encode(b"caf\xe9"), "caf\u{10FFE9}");
        assert_eq!(lossy("caf\u{10FFE9}"), "caf\u{FFFD}");
        for b in [
            &b"caf\xe9"[..],
            b"\xff",
            b"\x80\x80",
            b"a\xc3",
            b"\xc3(",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xf4\x8f\xbf",
            b"ok\xf4",
        ] {
            round(b);
        }
    }

    #[test]
    fn a_genuine_mapped_character_is_kept_as_its_bytes() {
        // U+10FFE9 sent by a process must not read back as the byte E9.
        let real = "x\u{10FFE9}y\u{10FF80}";
        let t = encode(real.as_bytes());
        assert_ne!(t, real);
        assert!(!is_exact(&t));
        assert_eq!(&*decode(&t), real.as_bytes());
        assert_eq!(lossy(&t), real);
    }

    #[test]
    fn every_byte_pair_round_trips() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                round(&[a, b]);
                round(&[0xF4, 0x8F, a, b]);
            }
        }
    }

    #[test]
    fn formatted_output_gets_the_bytes() {
        for b in [&b"caf\xe9"[..], b"\xff\x80", "x\u{10FFE9}".as_bytes(), b"plain"] {
            let mut buf = format!("[\"{}\"]", encode(b)).into_bytes();
            decode_in_place(&mut buf);
            let mut want = b"[\"".to_vec();
            want.extend_from_slice(b);
            want.extend_from_slice(b"\"]");
            assert_eq!(buf, want);
        }
    }

    #[test]
    fn shown_as_escapes() {
        assert_eq!(shown(&encode(b"caf\xe9")), "caf\\xe9");
        assert!(matches!(shown("plain \x1b"), Cow::Borrowed("plain \x1b")));
        assert_eq!(shown(&encode("x\u{10FFE9}".as_bytes())), "x\\xf4\\x8f\\xbf\\xa9");
    }

    #[test]
    fn os_strings() {
        let o = OsStr::from_bytes(b"/tmp/caf\xe9");
        let t = from_os(o);
        assert_eq!(to_os(&t), o);
        assert_eq!(from_os_string(o.to_owned()), t);
        assert_eq!(from_os_string("plain".into()), "plain");
    }
}
