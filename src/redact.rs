//! Credentials in command lines never reach an output unless the user says so — and
//! proctrace's own never at all.
//!
//! Every output that shows an argv (the traced processes', and proctrace's own in a capture
//! header and its Trace2 `start` line) passes it through here. What is redacted, each secret
//! replaced by [`MARK`] (`<REDACTED>`, git's spelling), is listed in docs/outputs.md
//! ("Redaction"); in short:
//!
//! - **URL userinfo of any scheme**, anywhere in a word: `scheme://user:secret@` keeps the user
//!   (git's Trace2 rule, which git applies to `http(s)://` at the start of a word only), and
//!   `scheme://token@` (no colon: a token, as in `https://TOKEN@github.com`) becomes
//!   `scheme://<REDACTED>@` — except a login name under `ssh`, `git+ssh`, `ssh+git`, `sftp`,
//!   `scp`, `rsync`, and the name `git` under any scheme, which are not secrets.
//! - **`Authorization:`, `Proxy-Authorization:`** (any case, anywhere in a word): the scheme
//!   word (`Bearer`, `Basic`) stays, the rest goes, as git's `GIT_TRACE_CURL` does;
//!   **`Cookie:`/`Set-Cookie:`**: the whole value.
//! - **Secret-named options and assignments**: `--NAME=VALUE`, `-NAME=VALUE`, `-DNAME=VALUE`,
//!   `NAME=VALUE` (an environment assignment) and URL query `?NAME=VALUE`/`&NAME=VALUE`, when NAME
//!   ends with `password`, `passwd`, `passphrase`, `token`, `secret`, `apikey`, `api-key` or
//!   `secret-key` (any case, `_` as `-`); and the two-word form `--NAME VALUE` (the next word),
//!   unless NAME starts with `no-`, `ask-`, `skip-` or `prompt-` (switches without a value).
//!   `--password-file=PATH`, `--token-file`, `--password-stdin` name no secret and stay.
//! - **openssl's `pass:SECRET`** word.
//! - **Per program** (a word naming it, so `sudo curl …` counts): curl's `-u`/`--user`/`-U`/
//!   `--proxy-user` `user:secret`; mysql's and mariadb's attached `-pSECRET`; sshpass's `-p`.
//!
//! It must never allocate or copy a word in which nothing is redacted: it runs on every argv
//! word an output writes. A quick byte scan turns most words away before any rule looks.

use std::borrow::Cow;

/// What a secret becomes: git's spelling.
pub const MARK: &str = "<REDACTED>";

/// Redacts one word without context (a single argument, a URL, a message): every rule but the
/// two-word and per-program ones, which need the argv ([`Argv`]). Borrowed when nothing changes.
pub fn redact_arg(arg: &str) -> Cow<'_, str> {
    redact_word(arg).0
}

/// A whole argv, redacted ([`Argv`]).
pub fn redact_argv<'a, S: AsRef<str> + ?Sized + 'a>(
    argv: impl IntoIterator<Item = &'a S>,
) -> Vec<Cow<'a, str>> {
    let mut r = Argv::default();
    argv.into_iter().map(|a| r.word(a.as_ref())).collect()
}

/// proctrace's own command line as outputs show it: always redacted, whatever `--no-redact`
/// says (that switch is about the traced processes), with every rule — `--otlp=URL`,
/// `--otlp URL`, and the words of the command it runs.
pub fn own_argv<'a, S: AsRef<str> + ?Sized + 'a>(argv: impl IntoIterator<Item = &'a S>) -> Vec<String> {
    redact_argv(argv).into_iter().map(Cow::into_owned).collect()
}

/// An argv redaction in progress: feed it the words in order ([`Argv::word`]); it remembers
/// what the two-word and per-program rules need (the last word was `--password`; the program
/// is curl).
#[derive(Debug, Default)]
pub struct Argv {
    next: Next,
    program: Program,
}

/// What the previous word says about this one.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Next {
    #[default]
    Plain,
    /// The value of a secret option: redacted whole.
    Secret,
    /// curl's `user:password`: the password goes.
    UserPass,
}

/// Programs with rules of their own.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Program {
    #[default]
    Other,
    Curl,
    Mysql,
    Sshpass,
}

impl Argv {
    /// A fresh argv.
    pub fn new() -> Argv {
        Argv::default()
    }

    /// Redacts the next word; borrowed exactly when nothing changes.
    pub fn word<'a>(&mut self, w: &'a str) -> Cow<'a, str> {
        match std::mem::take(&mut self.next) {
            Next::Plain => {}
            // Owned: callers read Borrowed as "unchanged".
            Next::Secret if w != MARK => return Cow::Owned(MARK.to_string()),
            Next::Secret => return Cow::Borrowed(w),
            Next::UserPass => return then(user_pass(w, 0), redact_arg),
        }
        if let Some(p) = program_named(w) {
            self.program = p;
        }
        match self.program {
            Program::Other => {}
            Program::Curl => {
                if matches!(w, "-u" | "--user" | "-U" | "--proxy-user") {
                    self.next = Next::UserPass;
                    return Cow::Borrowed(w);
                }
                for flag in ["--user=", "--proxy-user="] {
                    if w.starts_with(flag) {
                        return user_pass(w, flag.len());
                    }
                }
                if (w.starts_with("-u") || w.starts_with("-U")) && w.len() > 2 {
                    return user_pass(w, 2);
                }
            }
            Program::Mysql => {
                if w.starts_with("-p") && w.len() > 2 {
                    return mark_from(w, 2);
                }
            }
            Program::Sshpass => {
                if w == "-p" {
                    self.next = Next::Secret;
                    return Cow::Borrowed(w);
                }
                if w.starts_with("-p") {
                    return mark_from(w, 2);
                }
            }
        }
        let (r, pending) = redact_word(w);
        if pending {
            self.next = Next::Secret;
        }
        r
    }
}

/// The program a word names, by its base name.
fn program_named(w: &str) -> Option<Program> {
    let base = w.rsplit('/').next().unwrap_or(w);
    match base {
        "curl" => Some(Program::Curl),
        "sshpass" => Some(Program::Sshpass),
        _ if (base.starts_with("mysql") || base.starts_with("mariadb"))
            && base
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') =>
        {
            Some(Program::Mysql)
        }
        _ => None,
    }
}

/// `w` with everything from `from` on replaced by the mark.
fn mark_from(w: &str, from: usize) -> Cow<'_, str> {
    let mut e = Edits::new(w);
    e.mark(from, w.len());
    e.finish()
}

/// `w` with the password of the `user:password` starting at `from` redacted.
fn user_pass(w: &str, from: usize) -> Cow<'_, str> {
    match w.as_bytes()[from..].iter().position(|&c| c == b':') {
        Some(i) => mark_from(w, from + i + 1),
        None => Cow::Borrowed(w),
    }
}

const AT: u8 = 1;
const COLON: u8 = 2;
const EQ: u8 = 4;
const BLANK: u8 = 8;

/// Which bytes a rule looks for, by class: a branch-free scan ORs them over a word.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'@' as usize] = AT;
    t[b':' as usize] = COLON;
    t[b'=' as usize] = EQ;
    let mut i = 0;
    while i < 6 {
        t[[b' ', b'\t', b'\n', b'\r', 0x0b, 0x0c][i] as usize] = BLANK;
        i += 1;
    }
    t
};

/// The context-free rules; also whether the word ends in a secret option awaiting its value.
fn redact_word(w: &str) -> (Cow<'_, str>, bool) {
    let b = w.as_bytes();
    // The quick scan: one pass over the bytes says which rules can match at all; most words
    // (`-O2`, `foo.c`, `/usr/bin/cc`) are turned away here.
    let m = b.iter().fold(0u8, |m, &c| m | CLASS[usize::from(c)]);
    if m == 0 && b.first() != Some(&b'-') {
        return (Cow::Borrowed(w), false);
    }
    let (at, colon, eq, blank) = (m & AT != 0, m & COLON != 0, m & EQ != 0, m & BLANK != 0);
    let dash = b.first() == Some(&b'-');
    let mut r = Cow::Borrowed(w);
    if at && colon {
        r = then(r, |s| pass(s, url_userinfo));
    }
    if colon {
        r = then(r, |s| pass(s, headers));
    }
    if dash && !(eq || blank || colon) {
        // An option alone (`-O2`, `--password`): only the two-word rule can apply.
        return (r, secret_option(b));
    }
    let mut pending = false;
    // `pass:` alone needs the names rule with a colon but no `=`, blank or dash.
    if dash || eq || blank || (colon && b.starts_with(b"pass:")) {
        r = then(r, |s| {
            let mut e = Edits::new(s);
            pending = names(s, eq, &mut e);
            e.finish()
        });
    }
    (r, pending)
}

/// One rule over `s`.
fn pass<'a>(s: &'a str, rule: fn(&str, &mut Edits<'_>)) -> Cow<'a, str> {
    let mut e = Edits::new(s);
    rule(s, &mut e);
    e.finish()
}

/// The next rule over what the last one left, copying only when something changes.
fn then<'a>(c: Cow<'a, str>, f: impl FnOnce(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    match c {
        Cow::Borrowed(b) => match f(b) {
            Cow::Borrowed(_) => Cow::Borrowed(b),
            Cow::Owned(o) => Cow::Owned(o),
        },
        Cow::Owned(o) => match f(&o) {
            Cow::Borrowed(_) => Cow::Owned(o),
            Cow::Owned(n) => Cow::Owned(n),
        },
    }
}

/// Replacements of byte ranges of one string by the mark, in order; the copy is made at the
/// first.
struct Edits<'a> {
    src: &'a str,
    out: Option<String>,
    /// Where the source has been copied up to.
    at: usize,
}

impl<'a> Edits<'a> {
    fn new(src: &'a str) -> Self {
        Edits {
            src,
            out: None,
            at: 0,
        }
    }

    /// `src[start..end]` becomes the mark (left as it is when it is the mark already). Bounds
    /// are at ASCII bytes, so on character boundaries. A range reaching into one already
    /// replaced is cut to what is left of it.
    fn mark(&mut self, start: usize, end: usize) {
        let start = start.max(self.at);
        if end <= start || self.src.get(start..end) == Some(MARK) {
            return;
        }
        let (Some(before), true) = (self.src.get(self.at..start), self.src.is_char_boundary(end)) else {
            return;
        };
        let out = self
            .out
            .get_or_insert_with(|| String::with_capacity(self.src.len() + MARK.len()));
        out.push_str(before);
        out.push_str(MARK);
        self.at = end;
    }

    fn finish(self) -> Cow<'a, str> {
        match self.out {
            None => Cow::Borrowed(self.src),
            Some(mut o) => {
                o.push_str(&self.src[self.at..]);
                Cow::Owned(o)
            }
        }
    }
}

/// Schemes whose colon-less userinfo is a login name, not a secret.
const LOGIN_SCHEMES: [&[u8]; 6] = [b"ssh", b"git+ssh", b"ssh+git", b"sftp", b"scp", b"rsync"];

fn is_scheme_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')
}

/// `scheme://user:secret@` and `scheme://token@`, every URL of the word.
fn url_userinfo(s: &str, e: &mut Edits<'_>) {
    let b = s.as_bytes();
    // `://` found from its colon: cheaper than a substring searcher on words this short.
    for p in memchr::memchr_iter(b':', b).filter(|&p| b[p + 1..].starts_with(b"//")) {
        let mut st = p;
        while st > 0 && is_scheme_byte(b[st - 1]) {
            st -= 1;
        }
        while st < p && !b[st].is_ascii_alphabetic() {
            st += 1;
        }
        if st == p {
            continue;
        }
        let scheme = &b[st..p];
        // The authority ends at the path, query or fragment (RFC 3986), or the word's end.
        let a0 = p + 3;
        let a1 = b[a0..]
            .iter()
            .position(|&c| matches!(c, b'/' | b'?' | b'#') || c.is_ascii_whitespace())
            .map_or(b.len(), |i| a0 + i);
        // The last `@`: a password holding a raw `@` is cut there, never shown in part.
        let Some(at) = memchr::memrchr(b'@', &b[a0..a1]).map(|i| a0 + i) else {
            continue;
        };
        let user = &b[a0..at];
        if user.is_empty() {
            continue;
        }
        match memchr::memchr(b':', user) {
            Some(i) => e.mark(a0 + i + 1, at),
            None => {
                let login = user == b"git" || LOGIN_SCHEMES.iter().any(|l| l.eq_ignore_ascii_case(scheme));
                if !login {
                    e.mark(a0, at);
                }
            }
        }
    }
}

/// Whether `b` ends with `suffix`, ignoring ASCII case.
fn ends_ci(b: &[u8], suffix: &[u8]) -> bool {
    b.len() >= suffix.len() && b[b.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// `Authorization:`, `Proxy-Authorization:` (the scheme word stays) and `Cookie:` values.
fn headers(s: &str, e: &mut Edits<'_>) {
    let b = s.as_bytes();
    // The end of the last header's value: a name inside a value is part of that value.
    let mut covered = 0;
    for q in memchr::memchr_iter(b':', b) {
        if q < covered {
            continue;
        }
        let head = &b[..q];
        let (auth, name_start) = if ends_ci(head, b"authorization") {
            let n = q - b"authorization".len();
            (true, if ends_ci(&b[..n], b"proxy-") { n - 6 } else { n })
        } else if ends_ci(head, b"cookie") {
            (false, q - b"cookie".len())
        } else {
            continue;
        };
        if name_start > 0 && b[name_start - 1].is_ascii_alphanumeric() {
            continue;
        }
        // Inside a quoted string (a shell script), the value ends at its closing quote.
        let quote = name_start
            .checked_sub(1)
            .map(|i| b[i])
            .filter(|&c| c == b'\'' || c == b'"');
        let blank = |c: u8| c == b' ' || c == b'\t';
        let mut v0 = q + 1;
        while v0 < b.len() && blank(b[v0]) {
            v0 += 1;
        }
        let v1 = match quote {
            Some(qc) => memchr::memchr(qc, &b[v0..]).map_or(b.len(), |i| v0 + i),
            None => b.len(),
        };
        if v0 >= v1 {
            continue;
        }
        covered = v1;
        if auth && let Some(sp) = b[v0..v1].iter().position(|&c| blank(c)) {
            let mut t = v0 + sp;
            while t < v1 && blank(b[t]) {
                t += 1;
            }
            if t < v1 {
                v0 = t;
            }
        }
        e.mark(v0, v1);
    }
}

/// Names whose value is a secret, by how they end (`_` read as `-`).
const SECRET_SUFFIXES: [&[u8]; 8] = [
    b"password",
    b"passwd",
    b"passphrase",
    b"token",
    b"secret",
    b"apikey",
    b"api-key",
    b"secret-key",
];

/// Option names that start so are switches: `--no-password`, `--ask-password`.
const SWITCH_PREFIXES: [&[u8]; 4] = [b"no-", b"ask-", b"skip-", b"prompt-"];

fn norm(c: u8) -> u8 {
    if c == b'_' { b'-' } else { c.to_ascii_lowercase() }
}

fn ends_norm(name: &[u8], suffix: &[u8]) -> bool {
    name.len() >= suffix.len()
        && name[name.len() - suffix.len()..]
            .iter()
            .zip(suffix)
            .all(|(&a, &b)| norm(a) == b)
}

fn starts_norm(name: &[u8], prefix: &[u8]) -> bool {
    name.len() >= prefix.len()
        && name[..prefix.len()]
            .iter()
            .zip(prefix)
            .all(|(&a, &b)| norm(a) == b)
}

fn secret_name(name: &[u8]) -> bool {
    SECRET_SUFFIXES.iter().any(|s| ends_norm(name, s))
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

/// Whether a whole word is a secret option that takes the next word as its value
/// (`--password`, `-token`; not `--no-password`).
fn secret_option(b: &[u8]) -> bool {
    let dashes = b.iter().take(2).take_while(|&&c| c == b'-').count();
    let name = &b[dashes..];
    dashes > 0
        && !name.is_empty()
        && name.iter().all(|&c| is_name_byte(c))
        && secret_name(name)
        && !SWITCH_PREFIXES.iter().any(|p| starts_norm(name, p))
}

/// `NAME=VALUE`, `--NAME=VALUE`, `--NAME VALUE` at the start of each blank-separated token (a
/// word may be a whole script), `pass:SECRET`, and `NAME=VALUE` in a URL query. Returns whether
/// the last token is a secret option whose value is the next word.
fn names(s: &str, eq: bool, e: &mut Edits<'_>) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let mut pending = false;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let t0 = i;
        let t1 = b[t0..]
            .iter()
            .position(u8::is_ascii_whitespace)
            .map_or(b.len(), |n| t0 + n);
        i = t1;
        if pending {
            e.mark(t0, t1);
            pending = false;
            continue;
        }
        // A quoted token in a script: its closing quote stays.
        let (mut n0, mut v_end) = (t0, t1);
        if matches!(b[t0], b'\'' | b'"') {
            n0 += 1;
            if t1 > n0 && b[t1 - 1] == b[t0] {
                v_end -= 1;
            }
        }
        if b[n0..v_end].starts_with(b"pass:") {
            e.mark(n0 + 5, v_end);
            continue;
        }
        let mut dashes = 0;
        while dashes < 2 && n0 < v_end && b[n0] == b'-' {
            n0 += 1;
            dashes += 1;
        }
        let n1 = b[n0..v_end]
            .iter()
            .position(|&c| !is_name_byte(c))
            .map_or(v_end, |n| n0 + n);
        let name = &b[n0..n1];
        if !name.is_empty() && secret_name(name) {
            if n1 < v_end && b[n1] == b'=' {
                e.mark(n1 + 1, v_end);
                continue;
            }
            if n1 == v_end && dashes > 0 && !SWITCH_PREFIXES.iter().any(|p| starts_norm(name, p)) {
                pending = true;
                continue;
            }
        }
        if !eq {
            continue;
        }
        // A URL query: `?NAME=VALUE&…`.
        let mut k = t0;
        while let Some(off) = memchr::memchr2(b'?', b'&', &b[k..v_end]) {
            let q0 = k + off + 1;
            let q1 = b[q0..v_end]
                .iter()
                .position(|&c| !is_name_byte(c))
                .map_or(v_end, |n| q0 + n);
            if q1 < v_end && b[q1] == b'=' && secret_name(&b[q0..q1]) {
                let v0 = q1 + 1;
                let v1 = memchr::memchr2(b'&', b'#', &b[v0..v_end]).map_or(v_end, |n| v0 + n);
                e.mark(v0, v1);
            }
            k = q0;
        }
    }
    pending
}

#[cfg(test)]
mod tests;
