//! git's `wildmatch()` (`wildmatch.c`), ported line for line: the matcher
//! behind `trace2.configParams` patterns (with `WM_CASEFOLD`) and
//! `includeIf.gitdir:` conditions (with `WM_PATHNAME`).
//!
//! Hand-ported rather than taken from a crate: the `wildmatch` crate
//! implements only `?`/`*`, `glob`/`globset` have different rules for `**`,
//! classes and escapes, and `gix-glob` would bring part of gitoxide (see
//! `gitconfig.rs` for the measured cost). Byte strings are treated as NUL
//! terminated like the C code; config keys and paths contain no NUL.

/// `*` and `?` do not match `/`; `**` does (git's `WM_PATHNAME`).
pub const WM_PATHNAME: u32 = 2;
/// ASCII case-insensitive (git's `WM_CASEFOLD`).
pub const WM_CASEFOLD: u32 = 1;

const NOMATCH: i32 = 1;
const MATCH: i32 = 0;
const ABORT_ALL: i32 = -1;
const ABORT_TO_STARSTAR: i32 = -2;

/// Whether `text` matches `pattern` under `flags` ([`WM_PATHNAME`],
/// [`WM_CASEFOLD`]), exactly as git's `wildmatch(pattern, text, flags) == 0`.
pub fn wildmatch(pattern: &[u8], text: &[u8], flags: u32) -> bool {
    dowild(pattern, 0, text, 0, flags) == MATCH
}

fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

fn is_glob_special(c: u8) -> bool {
    matches!(c, b'*' | b'?' | b'[' | b'\\')
}

fn fold(c: u8, flags: u32) -> u8 {
    if flags & WM_CASEFOLD != 0 {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

fn text_has_slash(t: &[u8], from: usize) -> Option<usize> {
    t.get(from..)
        .and_then(|r| r.iter().position(|&c| c == b'/'))
        .map(|i| i + from)
}

fn class_matches(class: &[u8], t: u8, flags: u32) -> Option<bool> {
    let ok = match class {
        b"alnum" => t.is_ascii_alphanumeric(),
        b"alpha" => t.is_ascii_alphabetic(),
        b"blank" => t == b' ' || t == b'\t',
        b"cntrl" => t.is_ascii_control(),
        b"digit" => t.is_ascii_digit(),
        b"graph" => t.is_ascii_graphic(),
        b"lower" => t.is_ascii_lowercase(),
        b"print" => t.is_ascii_graphic() || t == b' ',
        b"punct" => t.is_ascii_punctuation(),
        b"space" => matches!(t, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c),
        b"upper" => t.is_ascii_uppercase() || (flags & WM_CASEFOLD != 0 && t.is_ascii_lowercase()),
        b"xdigit" => t.is_ascii_hexdigit(),
        _ => return None,
    };
    Some(ok)
}

#[allow(clippy::too_many_lines)]
fn dowild(pat: &[u8], mut p: usize, text: &[u8], mut t: usize, flags: u32) -> i32 {
    let start = p;
    while at(pat, p) != 0 {
        let mut p_ch = at(pat, p);
        let mut t_ch = at(text, t);
        if t_ch == 0 && p_ch != b'*' {
            return ABORT_ALL;
        }
        t_ch = fold(t_ch, flags);
        p_ch = fold(p_ch, flags);
        match p_ch {
            b'?' => {
                if flags & WM_PATHNAME != 0 && t_ch == b'/' {
                    return NOMATCH;
                }
            }
            b'*' => {
                let match_slash;
                p += 1;
                if at(pat, p) == b'*' {
                    let prev_p = p;
                    p += 1;
                    while at(pat, p) == b'*' {
                        p += 1;
                    }
                    if flags & WM_PATHNAME == 0 {
                        match_slash = true;
                    } else if (prev_p - start < 2 || at(pat, prev_p - 2) == b'/')
                        && (at(pat, p) == 0
                            || at(pat, p) == b'/'
                            || (at(pat, p) == b'\\' && at(pat, p + 1) == b'/'))
                    {
                        if at(pat, p) == b'/' && dowild(pat, p + 1, text, t, flags) == MATCH {
                            return MATCH;
                        }
                        match_slash = true;
                    } else {
                        match_slash = false;
                    }
                } else {
                    match_slash = flags & WM_PATHNAME == 0;
                }
                if at(pat, p) == 0 {
                    if !match_slash && text_has_slash(text, t).is_some() {
                        return ABORT_TO_STARSTAR;
                    }
                    return MATCH;
                } else if !match_slash && at(pat, p) == b'/' {
                    match text_has_slash(text, t) {
                        None => return ABORT_ALL,
                        Some(s) => {
                            // The slash is consumed by the loop's increment.
                            t = s + 1;
                            p += 1;
                            continue;
                        }
                    }
                }
                loop {
                    if t_ch == 0 {
                        break;
                    }
                    if !is_glob_special(at(pat, p)) {
                        let pc = fold(at(pat, p), flags);
                        loop {
                            t_ch = at(text, t);
                            if t_ch == 0 || !(match_slash || t_ch != b'/') {
                                break;
                            }
                            t_ch = fold(t_ch, flags);
                            if t_ch == pc {
                                break;
                            }
                            t += 1;
                        }
                        if t_ch != pc {
                            return if match_slash { ABORT_ALL } else { ABORT_TO_STARSTAR };
                        }
                    }
                    let matched = dowild(pat, p, text, t, flags);
                    if matched != NOMATCH {
                        if !match_slash || matched != ABORT_TO_STARSTAR {
                            return matched;
                        }
                    } else if !match_slash && t_ch == b'/' {
                        return ABORT_TO_STARSTAR;
                    }
                    t += 1;
                    t_ch = at(text, t);
                }
                return ABORT_ALL;
            }
            b'[' => {
                p += 1;
                p_ch = at(pat, p);
                if p_ch == b'^' {
                    p_ch = b'!';
                }
                let negated = p_ch == b'!';
                if negated {
                    p += 1;
                    p_ch = at(pat, p);
                }
                let mut prev_ch: u8 = 0;
                let mut matched = false;
                loop {
                    if p_ch == 0 {
                        return ABORT_ALL;
                    }
                    if p_ch == b'\\' {
                        p += 1;
                        p_ch = at(pat, p);
                        if p_ch == 0 {
                            return ABORT_ALL;
                        }
                        if t_ch == p_ch {
                            matched = true;
                        }
                    } else if p_ch == b'-' && prev_ch != 0 && at(pat, p + 1) != 0 && at(pat, p + 1) != b']' {
                        p += 1;
                        p_ch = at(pat, p);
                        if p_ch == b'\\' {
                            p += 1;
                            p_ch = at(pat, p);
                            if p_ch == 0 {
                                return ABORT_ALL;
                            }
                        }
                        if t_ch <= p_ch && t_ch >= prev_ch {
                            matched = true;
                        } else if flags & WM_CASEFOLD != 0 && t_ch.is_ascii_lowercase() {
                            let up = t_ch.to_ascii_uppercase();
                            if up <= p_ch && up >= prev_ch {
                                matched = true;
                            }
                        }
                        p_ch = 0;
                    } else if p_ch == b'[' && at(pat, p + 1) == b':' {
                        p += 2;
                        let s = p;
                        while at(pat, p) != 0 && at(pat, p) != b']' {
                            p += 1;
                        }
                        if at(pat, p) == 0 {
                            return ABORT_ALL;
                        }
                        if p < s + 1 || at(pat, p - 1) != b':' {
                            // No ":]": a plain '[' in the set.
                            p = s - 2;
                            p_ch = b'[';
                            if t_ch == p_ch {
                                matched = true;
                            }
                            prev_ch = p_ch;
                            p += 1;
                            p_ch = at(pat, p);
                            if p_ch == b']' {
                                break;
                            }
                            continue;
                        }
                        match class_matches(&pat[s..p - 1], t_ch, flags) {
                            None => return ABORT_ALL,
                            Some(true) => matched = true,
                            Some(false) => {}
                        }
                        p_ch = 0;
                    } else if t_ch == p_ch {
                        matched = true;
                    }
                    prev_ch = p_ch;
                    p += 1;
                    p_ch = at(pat, p);
                    if p_ch == b']' {
                        break;
                    }
                }
                if matched == negated || (flags & WM_PATHNAME != 0 && t_ch == b'/') {
                    return NOMATCH;
                }
            }
            _ => {
                if p_ch == b'\\' {
                    p += 1;
                    p_ch = fold(at(pat, p), 0);
                }
                if t_ch != p_ch {
                    return NOMATCH;
                }
            }
        }
        p += 1;
        t += 1;
    }
    if at(text, t) != 0 { NOMATCH } else { MATCH }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_from_gits_t3070() {
        let m = |p: &str, t: &str, f: u32| wildmatch(p.as_bytes(), t.as_bytes(), f);
        assert!(m("foo", "foo", 0));
        assert!(!m("foo", "bar", 0));
        assert!(m("???", "foo", 0));
        assert!(m("*", "foo", 0));
        assert!(m("f*", "foo", 0));
        assert!(!m("*f", "foo", 0));
        assert!(m("*foo*", "foo", 0));
        assert!(m("*ob*a*r*", "foobar", 0));
        assert!(m("*ab", "aaaaaaabababab", 0));
        assert!(m("foo\\*", "foo*", 0));
        assert!(!m("foo\\*bar", "foobar", 0));
        assert!(m("f\\\\oo", "f\\oo", 0));
        assert!(m("*[al]?", "ball", 0));
        assert!(!m("[ten]", "ten", 0));
        assert!(m("**[!te]", "ten", 0));
        assert!(!m("**[!ten]", "ten", 0));
        assert!(m("t[a-g]n", "ten", 0));
        assert!(!m("t[!a-g]n", "ten", 0));
        assert!(m("t[!a-g]n", "ton", 0));
        assert!(m("t[^a-g]n", "ton", 0));
        assert!(m("a[]]b", "a]b", 0));
        assert!(m("a[]-]b", "a-b", 0));
        assert!(m("a[]a-]b", "aab", 0));
        assert!(m("]", "]", 0));
        assert!(!m("foo*bar", "foo/baz/bar", WM_PATHNAME));
        assert!(m("foo**bar", "foo/baz/bar", 0));
        assert!(!m("foo**bar", "foo/baz/bar", WM_PATHNAME));
        assert!(m("foo/**/bar", "foo/baz/bar", WM_PATHNAME));
        assert!(m("foo/**/bar", "foo/bar", WM_PATHNAME));
        assert!(m("foo/**/**/bar", "foo/b/a/z/bar", WM_PATHNAME));
        assert!(m("**/foo", "XXX/foo", WM_PATHNAME));
        assert!(m("**/foo", "foo", WM_PATHNAME));
        assert!(m("*/foo", "bar/foo", WM_PATHNAME));
        assert!(!m("*/foo", "bar/baz/foo", WM_PATHNAME));
        assert!(m("**/bar*", "deep/foo/bar/baz", 0));
        assert!(!m("**/bar/*", "deep/foo/bar/baz/", WM_PATHNAME));
        assert!(m("**/bar/**", "deep/foo/bar/baz/", WM_PATHNAME));
        assert!(m("[[:alpha:]][[:digit:]][[:upper:]]", "a1B", 0));
        assert!(!m("[[:digit:][:upper:][:space:]]", "a", 0));
        assert!(m("[[:digit:][:upper:][:space:]]", "A", 0));
        assert!(m("[[:digit:][:upper:][:space:]]", "1", 0));
        assert!(!m("[[:digit:][:upper:][:spaci:]]", "1", 0));
        assert!(m("[[:xdigit:]]", "f", 0));
        assert!(m("[a-c[:digit:]x-z]", "5", 0));
        assert!(m("[a-c[:digit:]x-z]", "y", 0));
        assert!(!m("[a-c[:digit:]x-z]", "q", 0));
        assert!(m("[[]", "[", 0));
        assert!(m("[[:]", "[", 0));
        assert!(m(
            "-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
            "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1",
            0
        ));
        assert!(!m(
            "-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
            "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1",
            0
        ));
        assert!(m(
            "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*",
            "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1",
            WM_PATHNAME
        ));
        assert!(!m("a[c-c]st", "acrt", 0));
        assert!(m("[A-Z]", "a", WM_CASEFOLD));
        assert!(m("[a-z]", "A", WM_CASEFOLD));
        assert!(m("[[:upper:]]", "a", WM_CASEFOLD));
        assert!(m("Core.*", "core.editor", WM_CASEFOLD));
        assert!(m("remote.*.url", "remote.origin.url", WM_CASEFOLD));
        assert!(!m("remote.*.url", "remote.origin.pushurl", WM_CASEFOLD));
    }
}
