//! The one escaping for people: what a traced process put in its argv, its name, its paths or
//! its Trace2 lines, made safe to show on a terminal, in a log or in a CI summary.
//!
//! Everything a traced process says is untrusted: an argv word can hold ESC (a terminal's
//! control sequences: clearing the screen, setting the title, writing the clipboard with OSC
//! 52), a newline (a forged line of output), a right-to-left override (text that reads other
//! than it is), or bytes that are not UTF-8. Every output for people shows such text through
//! here, so none of it reaches a terminal as anything but visible characters.
//!
//! # The style
//!
//! GNU coreutils' `shell-escape` quoting, as `ls --quoting-style=shell-escape` and bash's
//! `printf %q` write it, on top of git's quoting of argv (`sq_quote_buf_pretty`, what git's
//! Trace2 `normal` target prints):
//!
//! - An argv word ([`word`]) with nothing to escape stays as git quotes it: bare when every
//!   byte is safe (`ls`, `-l`, `a=b`), else in single quotes (`'two words'`, `'it'\''s'`), `''`
//!   when empty.
//! - A word holding a character to escape (below) is written whole as a bash ANSI-C word,
//!   `$'…'`, in which `\` is `\\`, `'` is `\'` and each escaped character is its escape. Pasted
//!   into bash (or zsh, ksh93, mksh, busybox sh), the word is exactly the original (`\u` needs
//!   a UTF-8 locale: in the C locale bash leaves `\uXXXX` as it is; NUL, which no argv word can
//!   hold, ends a bash word).
//! - Bare text that is not an argv word ([`text`]: a `comm`, an executable's or working
//!   directory's path, a Trace2 thread, category, label or message, a path in a message) gets
//!   the same escapes without quotes, and its `\` is doubled (`\\`), so that what is shown reads
//!   back one way only: `\x1b` shown is the byte ESC, `\\x1b` the four characters.
//!
//! The escapes:
//!
//! | what | shown as |
//! |---|---|
//! | BEL BS TAB LF VT FF CR ESC | `\a` `\b` `\t` `\n` `\v` `\f` `\r` `\e` |
//! | any other C0 control (U+0000–U+001F), DEL (U+007F) | `\xNN` (`\x00`, `\x7f`) |
//! | a byte that is not UTF-8 (held by [`crate::model::bytes`]) | `\xNN` (`\xe9`) |
//! | a C1 control (U+0080–U+009F) | `\u0085` |
//! | a character that reorders text, breaks a line or is invisible: bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), line and paragraph separators (U+2028, U+2029), the other format characters (Unicode category Cf, e.g. U+00AD, U+200B, U+2060, U+FEFF, the tags U+E0000–U+E007F) except the joiners U+200C and U+200D (Persian, Indic scripts and emoji need them), and the noncharacters (U+FDD0–U+FDEF, U+FFFE, U+FFFF and the last two of every plane) | `\uXXXX`, `\UXXXXXXXX` above U+FFFF |
//!
//! Every other character, printable Unicode included (`café`, `日本`), is itself. Hex digits are
//! lowercase; `\u` always has 4 digits and `\U` 8, so the next character is never read as part
//! of the escape.
//!
//! # Where it is used
//!
//! [`crate::model::naming`] makes every name of a process (argv through [`words`], the kernel's
//! names and region names through [`text`]), so the tree, the status line, the `watch` lines,
//! the summaries, `diff`, and the labels of the Chrome trace, SVG and OTLP spans are all
//! escaped at one place. docs/outputs.md lists what each output escapes. The machine formats
//! keep their own rules on top: JSON escaping, XML escaping, Markdown code spans.
//!
//! Must never: allocate when nothing needs escaping (a [`Cow::Borrowed`] comes back), change
//! text that is safe, or be used for git's Trace2 formats (git writes the bytes as they are,
//! and so does [`crate::sink::trace2`]).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::model::bytes::held_byte;

/// How one character is shown, when it is escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    /// `\` and a letter (`\n`, `\e`).
    Letter(u8),
    /// `\xNN`: a control byte or a byte that is not UTF-8.
    Byte(u8),
    /// `\uXXXX` or `\UXXXXXXXX`: a character that reorders, breaks or hides text.
    Unicode(u32),
}

/// Whether `c` is a Unicode format character (category Cf), a line or paragraph separator, a
/// C1 control or a noncharacter: the characters shown as `\u` (see the module docs).
fn is_hidden(c: char) -> bool {
    matches!(
        u32::from(c),
        0x80..=0x9F
            | 0xAD
            | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B
            | 0x200E..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE007F
            // Noncharacters: not text (XML cannot carry them).
            | 0xFDD0..=0xFDEF
    ) || u32::from(c) & 0xFFFE == 0xFFFE
}

/// How `c` is shown, when it is escaped (`\` and `'` aside: they depend on where).
fn escape_of(c: char) -> Option<Esc> {
    let e = match c {
        '\x07' => Esc::Letter(b'a'),
        '\x08' => Esc::Letter(b'b'),
        '\t' => Esc::Letter(b't'),
        '\n' => Esc::Letter(b'n'),
        '\x0b' => Esc::Letter(b'v'),
        '\x0c' => Esc::Letter(b'f'),
        '\r' => Esc::Letter(b'r'),
        '\x1b' => Esc::Letter(b'e'),
        '\0'..='\x1f' | '\x7f' => Esc::Byte(c as u8),
        c if c.is_ascii() => return None,
        c => match held_byte(c) {
            Some(b) => Esc::Byte(b),
            None if is_hidden(c) => Esc::Unicode(u32::from(c)),
            None => return None,
        },
    };
    Some(e)
}

/// Whether some character of `s` is escaped (`\` and `'` aside). Fast on ASCII: a byte test.
fn has_escape(s: &str) -> bool {
    let b = s.as_bytes();
    if b.iter().all(|&x| (0x20..0x7f).contains(&x)) {
        return false;
    }
    s.chars().any(|c| escape_of(c).is_some())
}

/// Appends the escape `e`.
fn push_escape(out: &mut String, e: Esc) {
    match e {
        Esc::Letter(l) => {
            out.push('\\');
            out.push(char::from(l));
        }
        Esc::Byte(b) => {
            let _ = write!(out, "\\x{b:02x}");
        }
        Esc::Unicode(u) if u <= 0xFFFF => {
            let _ = write!(out, "\\u{u:04x}");
        }
        Esc::Unicode(u) => {
            let _ = write!(out, "\\U{u:08x}");
        }
    }
}

/// `s` as bare text for people: escaped (see the module docs), `\` doubled; borrowed when it
/// holds nothing to escape.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') && !has_escape(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_text_escaped(&mut out, s);
    Cow::Owned(out)
}

/// [`text`], appended to `out`.
pub fn push_text(out: &mut String, s: &str) {
    if !s.contains('\\') && !has_escape(s) {
        out.push_str(s);
    } else {
        push_text_escaped(out, s);
    }
}

fn push_text_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match escape_of(c) {
            Some(e) => push_escape(out, e),
            None if c == '\\' => out.push_str("\\\\"),
            None => out.push(c),
        }
    }
}

/// One argv word for people, as a shell takes it back (see the module docs): git's quoting
/// when it holds nothing to escape (borrowed when that is the word itself), else `$'…'`.
pub fn word(s: &str) -> Cow<'_, str> {
    if !has_escape(s) && !s.is_empty() && s.bytes().all(is_bare_safe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_word(&mut out, s);
    Cow::Owned(out)
}

/// A byte git leaves bare in a word (`sq_quote_buf_pretty`'s list).
fn is_bare_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+,-./:=@_^".contains(&b)
}

/// [`word`], appended to `out`.
pub fn push_word(out: &mut String, s: &str) {
    if has_escape(s) {
        push_ansi_c(out, s);
        return;
    }
    // git's sq_quote_buf_pretty: `''`, bare, or '…' with `'` as `'\''` and `!` as `'\!'`.
    if s.is_empty() {
        out.push_str("''");
    } else if s.bytes().all(is_bare_safe) {
        out.push_str(s);
    } else {
        out.push('\'');
        for c in s.chars() {
            match c {
                '\'' => out.push_str("'\\''"),
                '!' => out.push_str("'\\!'"),
                c => out.push(c),
            }
        }
        out.push('\'');
    }
}

/// `$'…'`: every character escaped that needs it, `\` and `'` with a backslash.
fn push_ansi_c(out: &mut String, s: &str) {
    out.push_str("$'");
    for c in s.chars() {
        match (escape_of(c), c) {
            (Some(e), _) => push_escape(out, e),
            (None, '\\') => out.push_str("\\\\"),
            (None, '\'') => out.push_str("\\'"),
            (None, c) => out.push(c),
        }
    }
    out.push('\'');
}

/// An argv for people: each word as [`word`] makes it, joined by one space.
pub fn words<S: AsRef<str>>(argv: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    for (i, a) in argv.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        push_word(&mut out, a.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::model::bytes::{decode, encode};

    fn sq(s: &str) -> String {
        let mut v = Vec::new();
        trace2::quote::sq_pretty(&mut v, s);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn safe_text_is_itself_and_not_copied() {
        for s in [
            "",
            "ls",
            "-l",
            "a=b",
            "two words",
            "it's",
            "a!b",
            "café",
            "日本",
            "x\u{200d}y",
        ] {
            assert!(matches!(text(s), Cow::Borrowed(x) if x == s), "{s:?}");
            assert_eq!(word(s), sq(s), "{s:?}");
        }
        // Bare words are git's bare words, borrowed.
        for s in ["ls", "-l", "a=b", "/usr/bin/cc", "x=@:^,+_"] {
            assert!(matches!(word(s), Cow::Borrowed(x) if x == s), "{s:?}");
        }
        // Every word with nothing to escape is exactly what git's quoting makes of it.
        for s in [
            "",
            "'",
            "!",
            "a b",
            "x'!y",
            "$HOME",
            "`id`",
            "tab\u{a0}",
            "é!",
            "a\\b",
            "\"q\"",
        ] {
            assert_eq!(word(s), sq(s), "{s:?}");
        }
        assert_eq!(word(""), "''");
        assert_eq!(word("it's"), r"'it'\''s'");
    }

    #[test]
    fn controls_are_escaped_in_words_and_text() {
        assert_eq!(word("\x1b]0;PWNED\x07\x1b[31mRED"), r"$'\e]0;PWNED\a\e[31mRED'");
        assert_eq!(
            word("x\nproctrace: fake verdict\r"),
            r"$'x\nproctrace: fake verdict\r'"
        );
        assert_eq!(word("a\tb'c\\d"), r"$'a\tb\'c\\d'");
        assert_eq!(word("\x00\x01\x08\x0b\x0c\x1f\x7f"), r"$'\x00\x01\b\v\f\x1f\x7f'");
        assert_eq!(
            word("\u{85}\u{202e}txt.exe\u{2028}\u{feff}\u{e0041}\u{fffe}\u{1ffff}"),
            r"$'\u0085\u202etxt.exe\u2028\ufeff\U000e0041\ufffe\U0001ffff'"
        );
        assert_eq!(text("a\\b\x1b[2J"), r"a\\b\e[2J");
        assert_eq!(text("it's\n"), r"it's\n");
        // A word that needs only git's quotes keeps them; `\` inside '…' is itself.
        assert_eq!(word(r"a\b"), r"'a\b'");
        assert_eq!(words(["/bin/echo", "x y", "\x1b"]), r"/bin/echo 'x y' $'\e'");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_as_hex() {
        let t = encode(b"caf\xe9");
        assert_eq!(word(&t), r"$'caf\xe9'");
        assert_eq!(text(&t), r"caf\xe9");
        // A genuine U+10FFE9 is held as its four bytes, and shown so.
        let g = encode("\u{10ffe9}".as_bytes());
        assert_eq!(text(&g), r"\xf4\x8f\xbf\xa9");
    }

    #[test]
    fn escaped_text_holds_no_control_character() {
        let mut all = String::new();
        for c in (0..=0x2100u32)
            .chain(0xE0000..=0xE0080)
            .chain(0x10FF00..=0x10FFFF)
            .filter_map(char::from_u32)
        {
            all.push(c);
        }
        for shown in [text(&all).into_owned(), word(&all).into_owned()] {
            for c in shown.chars() {
                assert!(escape_of(c).is_none(), "{c:?} left in the escaped text");
            }
        }
    }

    /// What bash makes of `shown` as one word: `printf '%s\0'` of it, under a UTF-8 locale.
    fn bash_words(shown: &[String]) -> Vec<Vec<u8>> {
        let script = format!("printf '%s\\0' {}", shown.join(" "));
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        assert!(out.status.success(), "{script:?}: {out:?}");
        let mut v: Vec<Vec<u8>> = out.stdout.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
        assert_eq!(v.pop().as_deref(), Some(&b""[..]));
        v
    }

    #[test]
    fn bash_reads_every_escaped_word_back_exactly() {
        let mut words_in: Vec<Vec<u8>> = Vec::new();
        // Every byte value alone (NUL aside: no argv word holds it), and amid text.
        for b in 1..=255u8 {
            words_in.push(vec![b]);
            words_in.push(vec![b'a', b, b'f', b'\'', b'\\']);
        }
        // Invalid sequences, a genuine held-range character, the escaped Unicode, quotes.
        for w in [
            &b"caf\xe9"[..],
            b"\xc3(",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xf4\x8f\xbf",
            "\u{10ffe9}".as_bytes(),
            "\u{85}\u{202e}\u{2066}\u{2028}\u{feff}\u{200b}\u{e0041}\u{fffe}\u{1ffff}z".as_bytes(),
            b"\x1b]52;c;ZXZpbA==\x07\x1b[2J",
            b"it's \"$HOME\" `id` !x",
            b"",
            b"\xe9a\xe9F",
            b"\\x41",
        ] {
            words_in.push(w.to_vec());
        }
        let shown: Vec<String> = words_in.iter().map(|w| word(&encode(w)).into_owned()).collect();
        for s in &shown {
            assert!(s.bytes().all(|b| (0x20..0x7f).contains(&b) || b >= 0x80), "{s:?}");
        }
        let back = bash_words(&shown);
        assert_eq!(back.len(), words_in.len());
        for ((w, s), b) in words_in.iter().zip(&shown).zip(&back) {
            assert_eq!(b, w, "{s}");
            assert_eq!(&*decode(&encode(w)), &w[..]);
        }
        // The whole argv at once, as the outputs show it.
        let argv: Vec<String> = words_in.iter().map(|w| encode(w).into_owned()).collect();
        assert_eq!(bash_words(&[words(&argv)]), words_in);
    }
}
