//! Every rule of the module docs, and the words each leaves alone.

use std::borrow::Cow;

use super::{Argv, MARK, own_argv, redact_arg, redact_argv};

/// One word without context.
fn one(w: &str) -> String {
    redact_arg(w).into_owned()
}

/// A whole argv, joined by spaces for reading.
fn all(argv: &[&str]) -> String {
    redact_argv(argv).join(" ")
}

fn unchanged(w: &str) {
    assert!(
        matches!(redact_arg(w), Cow::Borrowed(_)),
        "{w:?} became {:?}",
        redact_arg(w)
    );
    let mut a = Argv::new();
    assert!(matches!(a.word("prog"), Cow::Borrowed(_)));
    assert!(matches!(a.word(w), Cow::Borrowed(_)), "{w:?} in an argv");
}

#[test]
fn only_url_passwords_change() {
    // The original assertions: git's rule for http(s).
    assert_eq!(
        redact_arg("https://user:pwd@host/x"),
        "https://user:<REDACTED>@host/x"
    );
    assert!(matches!(redact_arg("https://host:8080/a@b"), Cow::Borrowed(_)));
    // Changed (issue 22): a URL inside a word is redacted too; it used to be left as it was.
    assert_eq!(one("--url=https://u:p@h"), "--url=https://u:<REDACTED>@h");
}

#[test]
fn url_userinfo_of_any_scheme() {
    assert_eq!(one("http://u:pw@h"), "http://u:<REDACTED>@h");
    assert_eq!(one("ftp://x:SECRET2@h/f"), "ftp://x:<REDACTED>@h/f");
    assert_eq!(
        one("redis://:pw@cache:6379/0"),
        "redis://:<REDACTED>@cache:6379/0"
    );
    assert_eq!(
        one("postgresql://app:pw@db/x?sslmode=require"),
        "postgresql://app:<REDACTED>@db/x?sslmode=require"
    );
    assert_eq!(one("git+https://u:p@h/r.git"), "git+https://u:<REDACTED>@h/r.git");
    // A token alone (no colon).
    assert_eq!(one("https://SECRET3TOKEN@host/r"), "https://<REDACTED>@host/r");
    assert_eq!(one("ftp://anonymous@h"), "ftp://<REDACTED>@h");
    // A raw `@` in the password: cut at the last one, never shown in part.
    assert_eq!(one("https://u:p@ss@host/"), "https://u:<REDACTED>@host/");
    // An empty password has nothing to hide (git writes the mark anyway).
    unchanged("https://u:@h");
    // Several URLs, anywhere in a word (a script, an option value, a git config).
    assert_eq!(
        one("git clone https://a:b@h/x && curl ftp://t@g/y"),
        "git clone https://a:<REDACTED>@h/x && curl ftp://<REDACTED>@g/y"
    );
    assert_eq!(
        one("url.https://u:p@h/.insteadOf=https://h/"),
        "url.https://u:<REDACTED>@h/.insteadOf=https://h/"
    );
    assert_eq!(one("'https://u:p@h'"), "'https://u:<REDACTED>@h'");
    // Case of the scheme does not matter.
    assert_eq!(one("HTTPS://u:p@h"), "HTTPS://u:<REDACTED>@h");
}

#[test]
fn login_names_stay() {
    unchanged("ssh://git@github.com/o/r.git");
    unchanged("ssh://alice@host:22/x");
    unchanged("git+ssh://bob@host/x");
    unchanged("sftp://carol@host/x");
    unchanged("rsync://dave@host/mod");
    unchanged("https://git@example.com/r.git");
    unchanged("git@github.com:o/r.git");
    // With a colon a login name still has a password after it.
    assert_eq!(one("ssh://u:pw@h"), "ssh://u:<REDACTED>@h");
}

#[test]
fn not_urls_stay() {
    for w in [
        "a@b",
        "user@example.com",
        "mailto:user@example.com",
        "https://host/path?x=a@b",
        "https://host#frag@x",
        "https://[::1]:8080/",
        "http://",
        "://u:p@h",
        "x://@h",
        "--password-file=/run/secrets/pw",
        "--token-file=/t",
        "--password-stdin",
        "PWD=/home/u",
        "--key=2",
        "-O2",
        "-c",
        "foo.c",
        "/usr/bin/cc",
        "",
        "é@ü://",
        "--max-tokens=5",
        "a=b",
        "x: y",
    ] {
        unchanged(w);
    }
}

#[test]
fn already_redacted_stays_borrowed() {
    for w in [
        "https://u:<REDACTED>@h",
        "https://<REDACTED>@h",
        "--password=<REDACTED>",
        "Authorization: Bearer <REDACTED>",
        "pass:<REDACTED>",
    ] {
        unchanged(w);
    }
}

#[test]
fn secret_options_with_equals() {
    assert_eq!(one("--password=SECRET4"), "--password=<REDACTED>");
    assert_eq!(one("--passwd=x"), "--passwd=<REDACTED>");
    assert_eq!(one("--token=x"), "--token=<REDACTED>");
    assert_eq!(one("--api-key=x"), "--api-key=<REDACTED>");
    assert_eq!(one("--api_key=x"), "--api_key=<REDACTED>");
    assert_eq!(one("--apikey=x"), "--apikey=<REDACTED>");
    assert_eq!(one("--secret=x"), "--secret=<REDACTED>");
    assert_eq!(one("--client-secret=x"), "--client-secret=<REDACTED>");
    assert_eq!(one("--http-password=x"), "--http-password=<REDACTED>");
    assert_eq!(one("--secret-key=x"), "--secret-key=<REDACTED>");
    assert_eq!(one("--passphrase=x"), "--passphrase=<REDACTED>");
    assert_eq!(one("-password=x"), "-password=<REDACTED>");
    assert_eq!(
        one("-Djavax.net.ssl.keyStorePassword=x"),
        "-Djavax.net.ssl.keyStorePassword=<REDACTED>"
    );
    assert_eq!(one("GITHUB_TOKEN=ghp_x"), "GITHUB_TOKEN=<REDACTED>");
    assert_eq!(
        one("AWS_SECRET_ACCESS_KEY=x"),
        "AWS_SECRET_ACCESS_KEY=x",
        "not a listed suffix"
    );
    assert_eq!(one("user.password=x"), "user.password=<REDACTED>");
    assert_eq!(one("--PASSWORD=x"), "--PASSWORD=<REDACTED>");
    // An empty value has nothing to hide.
    unchanged("--password=");
}

#[test]
fn secret_options_in_scripts_and_queries() {
    assert_eq!(
        one("FOO_TOKEN=abc make && mysql --password=pw -e 'select 1'"),
        "FOO_TOKEN=<REDACTED> make && mysql --password=<REDACTED> -e 'select 1'"
    );
    assert_eq!(one("run \"--token=t\" x"), "run \"--token=<REDACTED>\" x");
    assert_eq!(one("login --password pw now"), "login --password <REDACTED> now");
    assert_eq!(
        one("https://api/x?access_token=T1&page=2&api_key=K#top"),
        "https://api/x?access_token=<REDACTED>&page=2&api_key=<REDACTED>#top"
    );
    unchanged("https://api/x?page=2&sort=asc");
}

#[test]
fn two_word_options() {
    let mut a = Argv::new();
    assert!(matches!(a.word("--token"), Cow::Borrowed(_)));
    assert!(matches!(a.word("T"), Cow::Owned(_)), "changed, so owned");
    let mut a = Argv::new();
    a.word("--token");
    assert!(matches!(a.word(MARK), Cow::Borrowed(_)), "already redacted");
    assert_eq!(
        all(&["tool", "--password", "pw", "x"]),
        "tool --password <REDACTED> x"
    );
    assert_eq!(all(&["tool", "--token", "t"]), "tool --token <REDACTED>");
    assert_eq!(
        all(&["tool", "-password", "-starts-with-dash"]),
        "tool -password <REDACTED>"
    );
    // Switches without a value, and the value-less end of an argv.
    assert_eq!(all(&["psql", "--no-password", "db"]), "psql --no-password db");
    assert_eq!(all(&["wget", "--ask-password", "u"]), "wget --ask-password u");
    assert_eq!(
        all(&["mysql", "--skip-password", "db"]),
        "mysql --skip-password db"
    );
    assert_eq!(all(&["tool", "--password"]), "tool --password");
    // Not an option: a plain word naming a secret is just a word.
    assert_eq!(all(&["echo", "password", "x"]), "echo password x");
    assert_eq!(all(&["tool", "--password-file", "/p"]), "tool --password-file /p");
}

#[test]
fn authorization_headers() {
    assert_eq!(
        all(&["curl", "-H", "Authorization: Bearer SECRET", "https://h"]),
        "curl -H Authorization: Bearer <REDACTED> https://h"
    );
    assert_eq!(
        one("authorization: Basic dXNlcjpwdw=="),
        "authorization: Basic <REDACTED>"
    );
    assert_eq!(
        one("Proxy-Authorization: Basic x"),
        "Proxy-Authorization: Basic <REDACTED>"
    );
    // A lone credential has no scheme word to keep.
    assert_eq!(one("Authorization: SECRET"), "Authorization: <REDACTED>");
    assert_eq!(one("Authorization:SECRET"), "Authorization:<REDACTED>");
    assert_eq!(
        one("--header=Authorization: token T"),
        "--header=Authorization: token <REDACTED>"
    );
    assert_eq!(
        one("http.extraHeader=Authorization: Bearer T"),
        "http.extraHeader=Authorization: Bearer <REDACTED>"
    );
    assert_eq!(one("Cookie: a=1; b=2"), "Cookie: <REDACTED>");
    // In a script: the value ends at its closing quote.
    assert_eq!(
        one("curl -H 'Authorization: Bearer T' https://h/x"),
        "curl -H 'Authorization: Bearer <REDACTED>' https://h/x"
    );
    unchanged("Authorization:");
    unchanged("X-Reauthorization-Mode: y");
    unchanged("Content-Type: text/plain");
}

#[test]
fn openssl_pass() {
    assert_eq!(
        all(&["openssl", "rsa", "-passin", "pass:pw"]),
        "openssl rsa -passin pass:<REDACTED>"
    );
    unchanged("env:PW");
    unchanged("file:/p");
}

#[test]
fn per_program() {
    assert_eq!(
        all(&["curl", "-u", "me:pw", "https://h"]),
        "curl -u me:<REDACTED> https://h"
    );
    assert_eq!(
        all(&["/usr/bin/curl", "-ume:pw"]),
        "/usr/bin/curl -ume:<REDACTED>"
    );
    assert_eq!(all(&["curl", "--user=me:pw"]), "curl --user=me:<REDACTED>");
    assert_eq!(
        all(&["curl", "--proxy-user", "p:q"]),
        "curl --proxy-user p:<REDACTED>"
    );
    assert_eq!(
        all(&["curl", "-u", "me"]),
        "curl -u me",
        "curl prompts: no secret"
    );
    assert_eq!(all(&["sudo", "curl", "-u", "a:b"]), "sudo curl -u a:<REDACTED>");
    assert_eq!(
        all(&["mysql", "-uroot", "-pSECRET", "db"]),
        "mysql -uroot -p<REDACTED> db"
    );
    assert_eq!(all(&["mysqldump", "-pS"]), "mysqldump -p<REDACTED>");
    assert_eq!(all(&["mariadb-dump", "-pS"]), "mariadb-dump -p<REDACTED>");
    assert_eq!(all(&["mysql", "-p", "db"]), "mysql -p db", "-p alone prompts");
    assert_eq!(
        all(&["sshpass", "-p", "pw", "ssh", "h"]),
        "sshpass -p <REDACTED> ssh h"
    );
    assert_eq!(
        all(&["sshpass", "-ppw", "ssh", "h"]),
        "sshpass -p<REDACTED> ssh h"
    );
    // Elsewhere -p and -u are ports, parents, patches, users: left alone.
    assert_eq!(all(&["mkdir", "-pv", "d"]), "mkdir -pv d");
    assert_eq!(all(&["ssh", "-p2222", "h"]), "ssh -p2222 h");
    assert_eq!(all(&["sort", "-u", "a:b"]), "sort -u a:b");
}

#[test]
fn own_argv_is_redacted_in_every_form() {
    let argv = [
        "proctrace",
        "run",
        "--otlp=http://u:SECRETPW@127.0.0.1:4318",
        "--otlp",
        "https://TOKEN@collector/",
        "--",
        "tool",
        "--token",
        "T",
    ];
    let out = own_argv(&argv);
    let joined = out.join(" ");
    for s in ["SECRETPW", "TOKEN@", " T"] {
        assert!(!joined.contains(s), "{s} in {joined}");
    }
    assert_eq!(out[2], "--otlp=http://u:<REDACTED>@127.0.0.1:4318");
    assert_eq!(out[4], "https://<REDACTED>@collector/");
    assert_eq!(out[8], MARK);
}

#[test]
fn non_utf8_text_is_safe() {
    // The model holds bad bytes as U+10FF80..; rules cut only at ASCII.
    let w = "https://u:p\u{10FFE9}w@h/\u{10FFE9}";
    assert_eq!(one(w), "https://u:<REDACTED>@h/\u{10FFE9}");
    let w = "--password=caf\u{10FFE9}";
    assert_eq!(one(w), "--password=<REDACTED>");
    unchanged("caf\u{10FFE9}");
}

/// Fragments the rules look for, glued in any order: pathological words.
const PIECES: [&str; 30] = [
    "https://",
    "ftp://",
    "ssh://",
    "u",
    "git",
    ":",
    "@",
    "pw",
    " ",
    "\t",
    "--password",
    "--token",
    "-",
    "=",
    "Authorization: ",
    "cookie:",
    "Bearer ",
    "'",
    "\"",
    "?",
    "&",
    "#",
    "/",
    "é",
    "\u{10FFE9}",
    "-p",
    "curl",
    "mysql",
    "pass:",
    "<REDACTED>",
];

/// Tokens of real command lines, joined by blanks into a word (a script, a header value).
const TOKENS: [&str; 31] = [
    "https://u:pw@h/x",
    "ftp://t@h",
    "ssh://git@h",
    "--password=pw",
    "--password",
    "pw",
    "--token",
    "Authorization:",
    "Bearer",
    "tok",
    "Cookie:",
    "a=1;",
    "pass:pw",
    "GITHUB_TOKEN=t",
    "x?api_key=k&y=1",
    "'x'",
    "\"y\"",
    "-p",
    "-ppw",
    "curl",
    "-u",
    "me:pw",
    "mysql",
    "sshpass",
    "user@example.com",
    "é",
    "\u{10FFE9}",
    "<REDACTED>",
    "plain",
    "-H",
    "'Authorization: Basic abc'",
];

fn argv_of(
    pieces: &'static [&'static str],
    sep: &'static str,
) -> impl proptest::strategy::Strategy<Value = Vec<String>> {
    use proptest::prelude::*;
    let word = proptest::collection::vec(0..pieces.len(), 0..10)
        .prop_map(move |ix| ix.into_iter().map(|i| pieces[i]).collect::<Vec<_>>().join(sep));
    proptest::collection::vec(word, 0..6)
}

proptest::proptest! {
    /// What redaction wrote is final for real command lines: a second pass (a replayed capture,
    /// a re-recorded one) changes nothing and copies nothing.
    #[test]
    fn redaction_is_idempotent(argv in argv_of(&TOKENS, " ")) {
        let once: Vec<String> = redact_argv(&argv).into_iter().map(Cow::into_owned).collect();
        let twice = redact_argv(&once);
        for (a, b) in once.iter().zip(&twice) {
            proptest::prop_assert!(matches!(b, Cow::Borrowed(_)), "{argv:?}: {a:?} became {b:?}");
        }
        for w in &argv {
            let one = redact_arg(w);
            proptest::prop_assert!(matches!(redact_arg(&one), Cow::Borrowed(_)), "{w:?} -> {one:?}");
        }
    }

    /// Pathological words: no panic, and a second pass may only redact more (each pass only
    /// replaces text by the mark, so nothing hidden comes back).
    #[test]
    fn pathological_words_are_safe(argv in argv_of(&PIECES, "")) {
        let once: Vec<String> = redact_argv(&argv).into_iter().map(Cow::into_owned).collect();
        let twice = redact_argv(&once);
        for (a, b) in once.iter().zip(&twice) {
            // b is a with spans replaced by the mark: its other pieces are found in a, in order.
            let mut at = 0;
            for piece in b.split(MARK) {
                let found = a[at..].find(piece);
                proptest::prop_assert!(found.is_some(), "{a:?} -> {b:?}: {piece:?} is new");
                at += found.unwrap_or(0) + piece.len();
            }
        }
        for w in &argv {
            let _ = redact_arg(w);
        }
    }

    /// Any text at all, bytes-in-text included: no panic, and a word is changed only where it
    /// holds a rule's byte.
    #[test]
    fn any_text_is_safe(s in "\\PC*") {
        let r = redact_arg(&s);
        if !s.bytes().any(|c| matches!(c, b'@' | b':' | b'=' | b'-') || c.is_ascii_whitespace()) {
            proptest::prop_assert!(matches!(r, Cow::Borrowed(_)));
        }
    }
}
