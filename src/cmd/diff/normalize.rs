//! Matching processes between two runs: argv with its volatile parts (temp paths, pids, hashes,
//! timestamps) replaced, by the rules in [`super`]'s documentation ("Normalisation rules").

const TEMP_DIRS: [&str; 3] = ["/tmp/", "/var/tmp/", "/dev/shm/"];

/// `argv` with its volatile parts replaced (see the module docs).
pub fn normalize_argv<S: AsRef<str>>(argv: impl IntoIterator<Item = S>) -> Vec<String> {
    argv.into_iter().map(|w| normalize_word(w.as_ref())).collect()
}

/// One word of argv with its volatile parts replaced (see the module docs).
pub fn normalize_word(w: &str) -> String {
    let b = w.as_bytes();
    let mut out = String::with_capacity(w.len());
    let mut i = 0;
    let mut in_tmp = false;
    // The last token was autoconf's `conf$$` (`conf<N>`): a `-` and digits after it are
    // `$RANDOM`.
    let mut after_conf_pid = false;
    // Where the last copied stretch of ordinary text started.
    let mut copy_from = 0;
    while i < b.len() {
        let c = b[i];
        let prev = if i == 0 { None } else { Some(b[i - 1]) };
        let path_start =
            c == b'/' && (!w[..i].contains('/') || matches!(prev, Some(b'=' | b':' | b',' | b'@')));
        if path_start && !in_tmp {
            let rest = &w[i..];
            if let Some(d) = TEMP_DIRS.iter().copied().find(|d| rest.starts_with(d)) {
                out.push_str(&w[copy_from..i]);
                out.push_str(d);
                i += d.len();
                copy_from = i;
                in_tmp = true;
                continue;
            }
        }
        if in_tmp && matches!(c, b':' | b',' | b'=' | b';' | b' ') {
            in_tmp = false;
        }
        if !prev.is_some_and(|p| p.is_ascii_alphanumeric())
            && let Some(len) = timestamp_at(&b[i..])
        {
            out.push_str(&w[copy_from..i]);
            out.push_str("<TIME>");
            i += len;
            copy_from = i;
            continue;
        }
        if c.is_ascii_alphanumeric() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_alphanumeric() {
                j += 1;
            }
            let tmp = match in_tmp {
                false => Tmp::No,
                true if w[..i].ends_with("tmp.") => Tmp::AfterTmpDot,
                true => Tmp::Yes,
            };
            let tok = &w[i..j];
            let before = &w[..i];
            let marker = if let Some((from, to, m)) = autoconf_scratch(tok, b.get(j).copied()) {
                // Only the volatile part: `conf<TMP>`, `conf<N>subs`.
                out.push_str(&w[copy_from..i + from]);
                out.push_str(m);
                copy_from = i + to;
                after_conf_pid = m == "<N>";
                i = j;
                continue;
            } else if after_conf_pid && before.ends_with('-') && tok.bytes().all(|c| c.is_ascii_digit()) {
                // `conf$$-$RANDOM`: the random part, however short.
                Some("<N>")
            } else if before.ends_with("tmp.") && tok.len() == 10 {
                // mktemp's default template `tmp.XXXXXXXXXX`, wherever it made the name
                // (`mktemp -p .`, `mktemp --tmpdir=build`).
                Some("<TMP>")
            } else if before.ends_with('-') && tok.len() == 16 && tok.bytes().all(|c| c.is_ascii_hexdigit()) {
                // cargo's metadata hash (`build/foo-0123456789abcdef/`, `libfoo-….rlib`),
                // whatever digits and letters it happens to have.
                Some("<HEX>")
            } else {
                token_marker(tok, tmp)
            };
            after_conf_pid = false;
            if let Some(marker) = marker {
                out.push_str(&w[copy_from..i]);
                out.push_str(marker);
                copy_from = j;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out.push_str(&w[copy_from..]);
    out
}

/// Autoconf's scratch names in a token, as `(from, to, marker)`: the part of `tok` to replace.
///
/// - `conf` and six random letters and digits: `mktemp -d ./confXXXXXX` of configure and
///   config.status (`./confOXGWvh/subs.awk`). A lowercase-only six (1 in 200 of them) only
///   as a directory (`next` is `/`): `configured` stays a word.
/// - `conf` and the shell's pid (`conf$$`), then an optional lowercase rest: `conf12345.sh`,
///   `conf12345subs.awk`, `conf12345-6789` (the fallback scratch directory `conf$$-$RANDOM`).
fn autoconf_scratch(tok: &str, next: Option<u8>) -> Option<(usize, usize, &'static str)> {
    let rest = tok.strip_prefix("conf")?.as_bytes();
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits >= 2 && rest[digits..].iter().all(u8::is_ascii_lowercase) {
        return Some((4, 4 + digits, "<N>"));
    }
    if rest.len() == 6 {
        let mixed = rest.iter().any(|c| c.is_ascii_digit() || c.is_ascii_uppercase());
        if mixed || next == Some(b'/') {
            return Some((4, 10, "<TMP>"));
        }
    }
    None
}

/// Where a token is, for the temp-path rule.
#[derive(Clone, Copy, PartialEq)]
enum Tmp {
    /// Not in a temp path.
    No,
    /// In a temp path.
    Yes,
    /// In a temp path, right after `tmp.` (mktemp's template).
    AfterTmpDot,
}

/// The marker replacing a token, if it is volatile.
fn token_marker(tok: &str, tmp: Tmp) -> Option<&'static str> {
    let b = tok.as_bytes();
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    if digits == b.len() {
        return (b.len() >= 4).then_some("<N>");
    }
    if b.len() == 15 && b[8] == b'T' && digits == 14 {
        return Some("<TIME>");
    }
    // Before the hex rule: a random temp name may be all hex digits (`ccAbc123`).
    if tmp != Tmp::No && b.len() >= 6 {
        let upper = b.iter().any(u8::is_ascii_uppercase);
        let lower = b.iter().any(u8::is_ascii_lowercase);
        // Random names that happen to be all one case (about 1 in 200 of gcc's) are caught by
        // the templates they come from: gcc's `ccXXXXXX`, mktemp's `tmp.XXXXXXXXXX`, Python's
        // `tmpXXXXXXXX`.
        let template = tmp == Tmp::AfterTmpDot
            || (b.len() == 8 && b.starts_with(b"cc"))
            || (b.len() >= 9 && b.starts_with(b"tmp"));
        if template || (digits > 0 && (upper || lower)) || (upper && lower) {
            return Some("<TMP>");
        }
    }
    let hex_letters = b
        .iter()
        .filter(|c| matches!(c, b'a'..=b'f' | b'A'..=b'F'))
        .count();
    if b.len() >= 7 && digits > 0 && hex_letters > 0 && digits + hex_letters == b.len() {
        return Some("<HEX>");
    }
    if b.len() >= 6
        && (b.starts_with(b"0x") || b.starts_with(b"0X"))
        && b[2..].iter().all(u8::is_ascii_hexdigit)
    {
        return Some("<HEX>");
    }
    None
}

/// The length of a timestamp starting at `b[0]`, if one does (see the module docs).
fn timestamp_at(b: &[u8]) -> Option<usize> {
    let digits = |at: usize, n: usize| b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit);
    let byte = |at: usize| b.get(at).copied();
    // Optional fractional seconds at `k`.
    let frac = |mut k: usize| {
        if matches!(byte(k), Some(b'.' | b',')) && digits(k + 1, 1) {
            k += 1;
            while byte(k).is_some_and(|c| c.is_ascii_digit()) {
                k += 1;
            }
        }
        k
    };
    if digits(0, 4) && byte(4) == Some(b'-') && digits(5, 2) && byte(7) == Some(b'-') && digits(8, 2) {
        let mut k = 10;
        if matches!(byte(k), Some(b'T' | b' ' | b'_'))
            && digits(k + 1, 2)
            && byte(k + 3) == Some(b':')
            && digits(k + 4, 2)
        {
            k += 6;
            if byte(k) == Some(b':') && digits(k + 1, 2) {
                k = frac(k + 3);
            }
            if byte(k) == Some(b'Z') {
                k += 1;
            } else if matches!(byte(k), Some(b'+' | b'-')) && digits(k + 1, 2) {
                k += 3;
                if byte(k) == Some(b':') && digits(k + 1, 2) {
                    k += 3;
                } else if digits(k, 2) {
                    k += 2;
                }
            }
        }
        if !byte(k).is_some_and(|c| c.is_ascii_digit()) {
            return Some(k);
        }
        return None;
    }
    if digits(0, 2) && byte(2) == Some(b':') && digits(3, 2) && byte(5) == Some(b':') && digits(6, 2) {
        let k = frac(8);
        if !byte(k).is_some_and(|c| c.is_ascii_digit()) {
            return Some(k);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------------------------
