//! Labels that identify: a name made by [`crate::model::naming`] fitted to a width so that it
//! keeps what tells it apart from its neighbours.
//!
//! A build runs hundreds of commands that share their first 60 characters (`gcc -DHAVE_CONFIG_H
//! -I. -I.. …`, `/bin/bash ../../libtool --silent --tag=CC --mode=compile gcc …`,
//! `~/.rustup/toolchains/…/bin/rustc`); what differs is the file each works on, usually near the
//! end. Cutting such a label from the right ([`super::cut`]) leaves rows that read the same.
//! [`fit`] reads the label back into its words instead (it is our own quoting: git's `'…'` words
//! and the `$'…'` words of [`crate::model::escape`], so it parses exactly, and no quoted word is
//! ever split at a space inside it), ranks them, and leaves out the least telling ones first.
//!
//! # The rules
//!
//! A label that fits is returned as it is. Otherwise:
//!
//! 1. **What is kept** (left out last, and then only cut short from their start):
//!    - the program (`argv[0]`) and every program a wrapper runs (`env`, `nice`, `ccache`,
//!      `libtool`, `time`, …: the first word after their options is a program again);
//!    - for a compiler, assembler or linker (`gcc`, `cc`, `c++`, `g++`, `clang`, `cc1`,
//!      `cc1plus`, `as`, `ld`, `collect2`, `lto1`, `rustc`, `clippy-driver`, their cross and
//!      versioned names such as `x86_64-linux-gnu-gcc-12`): its source files (by extension:
//!      `.c`, `.cc`, `.cpp`, `.s`, `.S`, `.rs`, …), `-o TARGET` (or `-oTARGET`), rustc's
//!      `--crate-name X`, and (until the files need the room) the mode flags `-c`, `-S`, `-E`. The values of options that take
//!      one (`-I DIR`, `-MF FILE`, `-dumpbase closures.c`, `-C opt`) are that option's, not
//!      sources;
//!    - for an interpreter (`sh`, `bash`, `dash`, `zsh`, `ksh`, `python…`, `perl`, `ruby`,
//!      `node`, …): `-c STRING` (or `-e`), python's `-m MODULE`, and its script, which is a
//!      program again (`/bin/bash ../../libtool --mode=compile gcc … -c src/closures.c -o
//!      src/closures.lo` keeps libtool, `--mode=compile`, gcc, the source and `-o`);
//!    - the subcommand of a tool run by subcommands (`git`, `cargo`, `make`, `pip`, `npm`, `go`,
//!      `docker`, …; `python -m pip wheel`, `python setup.py bdist_wheel`): its first word that is not an option (`cargo
//!      build`, `git commit`, `make all-am`);
//!    - libtool's `--mode=MODE` (until the files need the room);
//!    - the label's last word, when it is no option (`ar … src/x86/unix64.o`), but for a
//!      compiler's (its tail is its files, kept by name: a linker's last `crtn.o` is not);
//!    - a composite label `PROGRAM, for: LABEL` (the summary's cost lines): `PROGRAM, for:`
//!      and LABEL fitted by these rules.
//! 2. **What goes first**: the directory of each program (`/usr/lib/gcc/x86_64-linux-gnu/12/cc1`
//!    → `cc1`, `~/.rustup/toolchains/…/bin/rustc` → `rustc`; a cargo build script keeps its
//!    crate's directory: `…/target/debug/build/zstd-sys-1a2b3c/build-script-build` →
//!    `zstd-sys-1a2b3c/build-script-build`); a script keeps its path for now. Then the options (with
//!    their values), left to right; then the other arguments, right to left (so `ar cr
//!    libx.a a.o b.o … z.o` keeps its first ones), but not the label's last word when it is
//!    no option (the tail that differs: it is kept, and cut if need be); then the modes, right to left (`-c`, `-S`, `-E`, then libtool's
//!    `--mode=MODE`): they read well but tell little beside the files, so they go before a
//!    file's name is cut; and last the scripts' directories (`../../libtool` → `libtool`). A
//!    mode left out in vain (words are cut all the same) comes back when the cut still leaves
//!    every file's base name whole (`cc -c bad.c -o …objs/bad.o`). Before a file's base
//!    name is cut, the programs that only lead to the one at work go (the interpreter, a
//!    wrapper, libtool's script: `… gcc … -o …/closures.lo ../src/closures.c`), then, where a
//!    source is kept, `-o TARGET` (`… gcc … ../src/closures.c`).
//!    When leaving out an argument (or a script's directory) made room for more than it
//!    needed, the words left out before it are taken back where they fit, the last left out
//!    first.
//! 3. **How it is shown**: each run of words left out is one ` … ` (`gcc … -c ../src/closures.c
//!    -o src/closures.lo`). When even the kept words do not fit, the longest of them are cut to
//!    the same width, each keeping its quote and its end (file names differ at the end):
//!    `…zstd-sys-2.1.3/build.rs`, `$'…closures.lo'`; a script given as text (`sh -c STRING`)
//!    is fitted by these rules within its quotes (its first word, then its last, then the
//!    others: `$'depbase=`echo src/closures.lo … $depbase.Plo'`), once: a script's text within
//!    it is cut in its middle. When not even that fits (a width of a few
//!    columns), the label is cut in its middle as a whole, its first third and its end kept.
//! 4. **Notes the tree puts after a name** (`  (exec ×2)`, ` (argv unavailable)`) are kept
//!    whole after the fitted name, as long as the name keeps 4 columns beside them.
//! 5. A bracketed name (`[fork of sh]`, `[cc1]`) is one word.
//!
//! Widths are terminal columns ([`super::width`]); the label stays the escaped text it was
//! (never unescaped): a cut inside an escape (`\x1…`) stays visible text.
//!
//! Must never: return more columns than asked, split a quoted word at a space inside it, read
//! anything but the label, or take more than linear time in the label's length (an argv can
//! be megabytes: a word left out costs O(1)).

use std::borrow::Cow;

use unicode_width::UnicodeWidthChar;

use super::{base_name, width};
use crate::model::escape;

/// The notes the tree and the human lines put after a name (see the module docs).
const NOTE_UNAVAILABLE: &str = " (argv unavailable)";
/// The columns a name keeps beside a note before the note is dropped.
const NAME_MIN: usize = 4;

/// `label` (a name made by [`crate::model::naming`]) in at most `width` columns, keeping what
/// tells it apart (see the module docs).
pub fn fit(label: &str, width: usize) -> String {
    if self::width(label) <= width {
        return label.to_string();
    }
    let (name, note) = split_note(label);
    if !note.is_empty() {
        let nw = self::width(note);
        if width >= nw + NAME_MIN {
            let mut s = fit_name(name, width - nw, 0);
            s.push_str(note);
            return s;
        }
        return fit_name(name, width, 0);
    }
    fit_name(name, width, 0)
}

/// `label` as its name and the note after it (empty when there is none).
fn split_note(label: &str) -> (&str, &str) {
    if let Some(name) = label.strip_suffix(NOTE_UNAVAILABLE) {
        return (name, &label[name.len()..]);
    }
    // `  (exec ×N)`: an unquoted `(` is in no argv word we quote, so this is the note.
    if let Some(head) = label.strip_suffix(')')
        && let Some(at) = head.rfind("  (exec ×")
        && head[at + "  (exec ×".len()..].bytes().all(|b| b.is_ascii_digit())
    {
        return (&label[..at], &label[at..]);
    }
    (label, "")
}

/// How telling a word is: the higher, the later it is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// An option (and its value).
    Option,
    /// Another argument.
    Arg,
    /// The label's last word when it is no option: kept as the tail that differs.
    Last,
    /// A mode that reads well but tells little beside the files (`-c`, libtool's
    /// `--mode=compile`): left out before what is kept is cut.
    Mode,
    /// What names the work (see the module docs): never left out, only cut.
    Keep,
}

/// One word of a label.
struct Word<'a> {
    /// As written in the label (quoted).
    raw: &'a str,
    /// Its text unquoted, when it was a bare or `'…'` word.
    plain: Option<Cow<'a, str>>,
    rank: Rank,
    /// Words left out together (an option and its value): the index of the first.
    group: usize,
    /// A program: its directory may go ([`short_program`]).
    program: bool,
    /// An interpreter's script: its directory goes only before its files' names are cut.
    script: bool,
    /// A script given as text (`sh -c STRING`): cut in its middle (a command starts with its
    /// program), not from its start.
    script_text: bool,
}

impl Word<'_> {
    /// Its unquoted text, or the raw one for a `$'…'` word (never a known name).
    fn text(&self) -> &str {
        self.plain.as_deref().unwrap_or(self.raw)
    }

    fn is_option(&self) -> bool {
        self.text().starts_with('-') && self.text().len() > 1
    }
}

/// The name fitted (no note); `depth` 1 for the text of a script given as text.
fn fit_name(name: &str, width: usize, depth: u8) -> String {
    if self::width(name) <= width {
        return name.to_string();
    }
    if name.starts_with('[') {
        return cut_middle(name, width);
    }
    let mut words: Vec<Word<'_>> = split_words(name)
        .map(|raw| Word {
            raw,
            plain: unquote(raw),
            rank: Rank::Option,
            group: 0,
            program: false,
            script: false,
            script_text: false,
        })
        .collect();
    if words.is_empty() {
        return cut_middle(name, width);
    }
    for (i, w) in words.iter_mut().enumerate() {
        w.group = i;
        w.rank = if w.is_option() { Rank::Option } else { Rank::Arg };
    }
    let n = words.len();
    if !words[n - 1].is_option() {
        words[n - 1].rank = Rank::Last;
    }
    // A composite `PROGRAM, for: LABEL`.
    if n > 2 && words[0].raw.ends_with(',') && words[1].raw == "for:" {
        words[0].rank = Rank::Keep;
        words[1].rank = Rank::Keep;
        rank_command(&mut words, 2);
    } else {
        rank_command(&mut words, 0);
    }
    Fitting::new(words, depth).fit(width)
}

/// The words of a label: split at the spaces outside quotes (our own quoting, see
/// [`crate::model::escape`]); a quote left open runs to the end.
fn split_words(s: &str) -> impl Iterator<Item = &str> {
    #[derive(Clone, Copy, PartialEq)]
    enum Q {
        Bare,
        Single,
        AnsiC,
    }
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start, mut q) = (0, 0, Q::Bare);
    while i < b.len() {
        match (q, b[i]) {
            (Q::Bare, b' ') => {
                if start < i {
                    out.push(&s[start..i]);
                }
                start = i + 1;
            }
            (Q::Bare, b'\'') => q = Q::Single,
            (Q::Bare, b'$') if b.get(i + 1) == Some(&b'\'') => {
                q = Q::AnsiC;
                i += 1;
            }
            (Q::Bare | Q::AnsiC, b'\\') => i += 1,
            (Q::Single | Q::AnsiC, b'\'') => q = Q::Bare,
            _ => {}
        }
        i += 1;
    }
    if start < b.len() {
        out.push(&s[start..]);
    }
    out.into_iter()
}

/// A word's text without git's quoting (`'a b'`, `'it'\''s'`, `'\!'`); `None` for a `$'…'`
/// word or one that is not quoted as we quote.
fn unquote(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.contains(['\'', '\\']) {
        return Some(Cow::Borrowed(raw));
    }
    if raw.starts_with("$'") {
        return None;
    }
    let mut out = String::with_capacity(raw.len());
    let mut quoted = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (_, '\'') => quoted = !quoted,
            (false, '\\') => out.push(chars.next()?),
            (_, c) => out.push(c),
        }
    }
    (!quoted).then_some(Cow::Owned(out))
}

/// What a program is, for what its words mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A C-family compiler, assembler or linker.
    Cc,
    /// rustc (or clippy's driver).
    Rustc,
    /// A shell.
    Shell,
    /// Another interpreter (python, perl, …).
    Interpreter,
    /// Runs the program that follows its options.
    Wrapper,
    /// libtool: a wrapper with a mode.
    Libtool,
    /// Run by subcommands.
    Tool,
    /// Anything else.
    Other,
}

/// `name` without a version or a cross prefix (`gcc-12`, `x86_64-linux-gnu-gcc`, `python3.11`,
/// `ld.bfd`).
fn normal(name: &str) -> &str {
    let trimmed = name
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
        .trim_end_matches('-');
    let trimmed = if trimmed.is_empty() { name } else { trimmed };
    match trimmed.rsplit_once('-') {
        Some((_, tail)) if matches!(tail, "gcc" | "g++" | "cc" | "c++" | "as" | "ld" | "clang") => tail,
        _ => trimmed.split_once('.').map_or(trimmed, |(a, _)| match a {
            "ld" => a,
            _ => trimmed,
        }),
    }
}

/// What the program `name` (a base name) is.
fn kind(name: &str) -> Kind {
    let k = |n: &str| match n {
        "gcc" | "cc" | "c++" | "g++" | "clang" | "clang++" | "cc1" | "cc1plus" | "cc1obj" | "as" | "ld"
        | "collect2" | "lto1" | "lld" | "ld.lld" | "rust-lld" | "cpp" | "tcc" | "icc" | "nasm" | "yasm"
        | "nvcc" => Kind::Cc,
        "rustc" | "clippy-driver" => Kind::Rustc,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "fish" => Kind::Shell,
        "python" | "pypy" | "perl" | "ruby" | "node" | "tclsh" | "lua" | "php" | "Rscript" => {
            Kind::Interpreter
        }
        "env" | "nice" | "nohup" | "time" | "timeout" | "ccache" | "sccache" | "distcc" | "stdbuf"
        | "ionice" | "chrt" | "taskset" | "sudo" | "setpriv" | "xargs" | "exec" | "command" | "strace"
        | "valgrind" | "fakeroot" => Kind::Wrapper,
        "libtool" => Kind::Libtool,
        "git" | "cargo" | "make" | "gmake" | "pip" | "npm" | "pnpm" | "yarn" | "go" | "docker" | "podman"
        | "kubectl" | "rustup" | "apt" | "apt-get" | "dnf" | "yum" | "systemctl" | "cmake" | "ninja"
        | "meson" | "bazel" | "conda" | "poetry" | "uv" | "gh" | "npx" | "setup.py" | "manage.py"
        | "x.py" => Kind::Tool,
        _ => Kind::Other,
    };
    match k(name) {
        Kind::Other => k(normal(name)),
        found => found,
    }
}

/// Whether `opt` of a program of `kind` takes the next word as its value.
fn takes_value(kind: Kind, opt: &str) -> bool {
    match kind {
        Kind::Cc => matches!(
            opt,
            "-I" | "-D"
                | "-U"
                | "-L"
                | "-include"
                | "-imacros"
                | "-isystem"
                | "-iquote"
                | "-idirafter"
                | "-iprefix"
                | "-imultiarch"
                | "-isysroot"
                | "-MF"
                | "-MT"
                | "-MQ"
                | "-x"
                | "-dumpdir"
                | "-dumpbase"
                | "-dumpbase-ext"
                | "-auxbase"
                | "-auxbase-strip"
                | "-plugin"
                | "-m"
                | "-dynamic-linker"
                | "-T"
                | "-z"
                | "-soname"
                | "-rpath"
                | "-Xlinker"
                | "-Xassembler"
                | "-Xpreprocessor"
                | "-Xclang"
                | "-mllvm"
                | "-arch"
                | "-target"
                | "-flavor"
                | "-main-file-name"
                | "-aux-info"
                | "--sysroot"
        ),
        Kind::Rustc => matches!(
            opt,
            "--crate-type"
                | "--edition"
                | "-C"
                | "-L"
                | "-l"
                | "--extern"
                | "--cfg"
                | "--check-cfg"
                | "--out-dir"
                | "--target"
                | "--cap-lints"
                | "--emit"
                | "--error-format"
                | "--json"
                | "-A"
                | "-W"
                | "-D"
                | "-F"
                | "--print"
                | "--sysroot"
                | "-Z"
                | "--remap-path-prefix"
                | "--env-set"
        ),
        Kind::Shell => matches!(opt, "-o" | "+o"),
        Kind::Interpreter => matches!(opt, "-W" | "-X" | "-I" | "-M" | "-r"),
        Kind::Wrapper => matches!(
            opt,
            "-n" | "-u" | "-C" | "-S" | "-o" | "-e" | "-i" | "-g" | "-p" | "-c" | "-s" | "-k"
        ),
        Kind::Libtool => matches!(opt, "--tag"),
        Kind::Tool => matches!(
            opt,
            "-C" | "-c"
                | "-f"
                | "--file"
                | "--manifest-path"
                | "-p"
                | "--package"
                | "--target"
                | "--config"
                | "-Z"
                | "--git-dir"
                | "--work-tree"
                | "-I"
                | "-o"
                | "-m"
        ),
        Kind::Other => false,
    }
}

/// Whether `w` names a source file, by its extension.
fn is_source(w: &str) -> bool {
    let base = base_name(w);
    base.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && matches!(
                ext,
                "c" | "cc"
                    | "cpp"
                    | "cxx"
                    | "c++"
                    | "C"
                    | "m"
                    | "mm"
                    | "s"
                    | "S"
                    | "sx"
                    | "asm"
                    | "i"
                    | "ii"
                    | "f"
                    | "f90"
                    | "f95"
                    | "cu"
                    | "rs"
                    | "go"
                    | "java"
                    | "y"
                    | "l"
            )
    })
}

/// Ranks the words of the command whose program is `words[at]` (see the module docs).
fn rank_command(words: &mut [Word<'_>], at: usize) {
    // Wrappers nest: each program's words are ranked in turn, no recursion (a hostile argv
    // of `env env env …` is a loop, not a deep stack).
    let (mut head, mut program) = (at, true);
    while head < words.len() {
        words[head].rank = Rank::Keep;
        words[head].program = program;
        words[head].script = !program;
        let k = kind(base_name(words[head].text()));
        match rank_args(words, head, k) {
            Some(next) => (head, program) = next,
            None => break,
        }
    }
}

/// Ranks the arguments of the program `words[head]` of kind `k`; the index of the next program
/// when it runs one (a wrapper's, an interpreter's script, libtool's mode command), and whether
/// that is a program whose directory may go (a script keeps its path).
fn rank_args(words: &mut [Word<'_>], head: usize, k: Kind) -> Option<(usize, bool)> {
    let n = words.len();
    if matches!(k, Kind::Cc | Kind::Rustc) && words[n - 1].rank == Rank::Last {
        // A compiler's tail is its files, kept by name: a last word that is none (a linker's
        // `crtn.o`) is one more argument.
        words[n - 1].rank = Rank::Arg;
    }
    let mut i = head + 1;
    let mut subcommand = k == Kind::Tool;
    // `python -m MODULE`: what follows is the module's, no script.
    let mut module = false;
    while i < n {
        let t = words[i].text().to_string();
        let opt = words[i].is_option() || (k == Kind::Tool && t.starts_with('+'));
        let next_number = words
            .get(i + 1)
            .is_some_and(|w| !w.text().is_empty() && w.text().bytes().all(|b| b.is_ascii_digit()));
        // An option with its value: one group.
        let pair = opt
            && i + 1 < n
            && (takes_value(k, &t)
                || (matches!(k, Kind::Cc | Kind::Rustc) && (t == "-o" || t == "--crate-name"))
                || (matches!(k, Kind::Tool | Kind::Wrapper) && t == "-j" && next_number));
        let shell_c = k == Kind::Shell
            && t.len() > 1
            && t.starts_with('-')
            && t[1..].bytes().all(|b| b.is_ascii_alphabetic())
            && t.contains('c');
        let keep = match k {
            _ if subcommand && !opt && !t.contains('=') => {
                subcommand = false;
                true
            }
            Kind::Cc | Kind::Rustc if t == "-o" || t == "--crate-name" => true,
            Kind::Cc if matches!(t.as_str(), "-c" | "-S" | "-E") => {
                words[i].rank = Rank::Mode;
                i += 1;
                continue;
            }
            Kind::Cc | Kind::Rustc if t.starts_with("-o") && t.len() > 2 => true,
            Kind::Cc | Kind::Rustc if !opt => is_source(&t),
            Kind::Shell if shell_c => {
                keep_group(words, i, (i + 1).min(n - 1));
                words[(i + 1).min(n - 1)].script_text = true;
                // What follows the string is `$0` and the positional parameters.
                return None;
            }
            Kind::Interpreter if matches!(t.as_str(), "-c" | "-e" | "-E") => {
                keep_group(words, i, (i + 1).min(n - 1));
                words[(i + 1).min(n - 1)].script_text = true;
                return None;
            }
            Kind::Interpreter if t == "-m" && i + 1 < n => {
                // `python -m pip wheel`: the module is run by its subcommand.
                keep_group(words, i, i + 1);
                i += 2;
                subcommand = true;
                module = true;
                continue;
            }
            Kind::Shell | Kind::Interpreter if !opt && !module => {
                // The script: a program in its own right (libtool, configure), its path kept.
                return Some((i, false));
            }
            Kind::Wrapper if !opt && !t.contains('=') => {
                // `timeout 10 cmd`, `nice -n 5 cmd`: a duration before the program.
                if base_name(words[head].text()) == "timeout" && t.starts_with(|c: char| c.is_ascii_digit()) {
                    words[i].rank = Rank::Option;
                    i += 1;
                    continue;
                }
                return Some((i, true));
            }
            Kind::Libtool if t.starts_with("--mode=") => {
                words[i].rank = Rank::Mode;
                i += 1;
                continue;
            }
            Kind::Libtool if t == "--mode" && i + 1 < n => {
                keep_group(words, i, i + 1);
                words[i].rank = Rank::Mode;
                words[i + 1].rank = Rank::Mode;
                i += 2;
                continue;
            }
            Kind::Libtool if !opt => return Some((i, true)),
            _ => false,
        };
        if pair {
            let rank = if keep { Rank::Keep } else { Rank::Option };
            words[i].rank = rank;
            words[i + 1].rank = rank;
            words[i + 1].group = i;
            i += 2;
            continue;
        }
        if keep {
            words[i].rank = Rank::Keep;
        } else if opt || (t.contains('=') && matches!(k, Kind::Tool | Kind::Wrapper)) {
            words[i].rank = Rank::Option;
        }
        i += 1;
    }
    None
}

/// `words[a..=b]` kept, as one group.
fn keep_group(words: &mut [Word<'_>], a: usize, b: usize) {
    for w in &mut words[a..=b] {
        w.rank = Rank::Keep;
        w.group = a;
    }
}

/// A program word with its directory left out: the base name (a cargo build script keeps its
/// crate's directory), quoted again as [`escape::word`] quotes it.
fn short_program(w: &Word<'_>) -> Option<String> {
    match &w.plain {
        Some(p) => {
            let base = base_name(p);
            if base.len() == p.len() {
                return None;
            }
            let parts: Vec<&str> = p.rsplit('/').filter(|s| !s.is_empty()).take(3).collect();
            let short = match parts.as_slice() {
                [script, krate, "build", ..] if script.starts_with("build-script-") => {
                    format!("{krate}/{script}")
                }
                _ => base.to_string(),
            };
            Some(escape::word(&short).into_owned())
        }
        // `$'…/x'`: no escape holds a `/`, so what follows the last one is the base name's.
        None => {
            let inner = w.raw.strip_prefix("$'")?;
            let at = inner.rfind('/')?;
            let rest = &inner[at + 1..];
            (rest.len() > 1).then(|| format!("$'{rest}"))
        }
    }
}

/// The words with what is left out so far, and the columns they take.
struct Fitting<'a> {
    /// 1 inside the text of a script given as text (whose own scripts are cut in their middle:
    /// one level, so a hostile `sh -c "sh -c …"` does not recurse).
    depth: u8,
    words: Vec<Word<'a>>,
    /// Each word's text as shown (its program shortened, then cut).
    shown: Vec<Cow<'a, str>>,
    widths: Vec<usize>,
    kept: Vec<bool>,
    /// The columns of the label as it would be shown now.
    total: usize,
}

impl<'a> Fitting<'a> {
    fn new(words: Vec<Word<'a>>, depth: u8) -> Self {
        let shown: Vec<Cow<'a, str>> = words.iter().map(|w| Cow::Borrowed(w.raw)).collect();
        let widths: Vec<usize> = shown.iter().map(|s| width(s)).collect();
        let total = widths.iter().sum::<usize>() + widths.len().saturating_sub(1);
        let kept = vec![true; words.len()];
        Fitting {
            depth,
            words,
            shown,
            widths,
            kept,
            total,
        }
    }

    /// Leaves word `i` out: the columns change by what it took and how it joins the runs left
    /// out beside it (one `…` per run).
    fn drop_word(&mut self, i: usize) {
        if !self.kept[i] {
            return;
        }
        let left = i > 0 && !self.kept[i - 1];
        let right = i + 1 < self.kept.len() && !self.kept[i + 1];
        let w = self.widths[i];
        // Two runs merge (one `…` and two spaces go), one grows (a space goes), or the word
        // becomes a `…`.
        self.total = match (left, right) {
            (true, true) => self.total - w - 3,
            (true, false) | (false, true) => self.total - w - 1,
            (false, false) => self.total - w + 1,
        };
        self.kept[i] = false;
    }

    /// Takes word `i` back (the inverse of [`Self::drop_word`]).
    fn add_word(&mut self, i: usize) {
        if self.kept[i] {
            return;
        }
        let left = i > 0 && !self.kept[i - 1];
        let right = i + 1 < self.kept.len() && !self.kept[i + 1];
        let w = self.widths[i];
        self.total = match (left, right) {
            (true, true) => self.total + w + 3,
            (true, false) | (false, true) => self.total + w + 1,
            (false, false) => (self.total + w).saturating_sub(1),
        };
        self.kept[i] = true;
    }

    /// Takes back the words left out (`groups`, in the order they were) that fit in the room
    /// the last one left, the last left out first: one long word left out can leave room for
    /// shorter ones.
    fn fill_back(&mut self, groups: &[usize], width: usize) {
        let n = self.words.len();
        for &g in groups.iter().rev() {
            let before = self.total;
            let mut j = g;
            while j < n && self.words[j].group == g {
                self.add_word(j);
                j += 1;
            }
            if self.total > width {
                let mut j = g;
                while j < n && self.words[j].group == g {
                    self.drop_word(j);
                    j += 1;
                }
                debug_assert_eq!(self.total, before);
            }
        }
    }

    fn set_shown(&mut self, i: usize, s: String) {
        let w = width(&s);
        if self.kept[i] {
            self.total = self.total - self.widths[i] + w;
        }
        self.widths[i] = w;
        self.shown[i] = Cow::Owned(s);
    }

    fn fit(mut self, width: usize) -> String {
        // The programs' directories.
        for i in 0..self.words.len() {
            if self.total <= width {
                return self.render();
            }
            if self.words[i].program
                && let Some(s) = short_program(&self.words[i])
            {
                self.set_shown(i, s);
            }
        }
        // Options left to right, then other arguments right to left (the last word stays),
        // then the modes.
        let n = self.words.len();
        let order = (0..n)
            .filter(|&i| self.words[i].rank == Rank::Option)
            .chain((0..n).rev().filter(|&i| self.words[i].rank == Rank::Arg))
            .chain((0..n).rev().filter(|&i| self.words[i].rank == Rank::Mode))
            .collect::<Vec<_>>();
        // The arguments and the modes left out, in the order they were.
        let (mut args, mut modes) = (Vec::new(), Vec::new());
        for i in order {
            if self.total <= width {
                self.fill_back(&args, width);
                return self.render();
            }
            let g = self.words[i].group;
            match self.words[i].rank {
                Rank::Arg => args.push(g),
                Rank::Mode => modes.push(g),
                _ => {}
            }
            self.drop_word(i);
            // The rest of its group (an option's value goes with it, and the other way).
            let mut j = g;
            while j < n && self.words[j].group == g {
                self.drop_word(j);
                j += 1;
            }
        }
        if self.total <= width {
            self.fill_back(&args, width);
            return self.render();
        }
        // The scripts' directories: what they leave is room for what was left out before.
        for i in 0..n {
            if self.words[i].script
                && let Some(s) = short_program(&self.words[i])
            {
                self.set_shown(i, s);
                if self.total <= width {
                    self.fill_back(&modes, width);
                    self.fill_back(&args, width);
                    return self.render();
                }
            }
        }
        // The programs that only lead to the one doing the work (an interpreter, a wrapper,
        // libtool's script) go before a file's name is cut: the innermost program with its
        // files names the work (`… gcc … -o src/closures.lo ../src/closures.c`). Then, where a
        // source is kept, `-o TARGET`: the source names a compile best.
        if self.cap(width).is_none_or(|cap| !self.names_whole(cap)) {
            let progs: Vec<usize> = (0..n)
                .filter(|&i| self.kept[i] && (self.words[i].program || self.words[i].script))
                .collect();
            for &i in progs.iter().rev().skip(1) {
                if self.total <= width {
                    return self.render();
                }
                self.drop_word(i);
            }
            let source = (0..n).any(|i| self.kept[i] && is_source(self.words[i].text()));
            let out = (0..n).find(|&i| self.kept[i] && self.words[i].text() == "-o");
            if let (true, Some(o), false) = (
                source,
                out,
                self.cap(width).is_some_and(|cap| self.names_whole(cap)),
            ) {
                self.set_group(self.words[o].group, false);
                if o + 1 < n && self.kept[o + 1] {
                    self.drop_word(o + 1);
                }
            }
            if self.total <= width {
                return self.render();
            }
        }
        // Words are cut after all: a mode left out in vain comes back where the cut leaves
        // every file's name whole (`cc -c bad.c -o …objs/bad.o`).
        for &g in modes.iter().rev() {
            self.set_group(g, true);
            if !self.cap(width).is_some_and(|cap| self.names_whole(cap)) {
                self.set_group(g, false);
            }
        }
        if let Some(cap) = self.cap(width) {
            self.cut_kept(cap);
        }
        let s = self.render();
        if self::width(&s) > width {
            return cut_middle(&s, width);
        }
        s
    }

    /// Cuts the widest kept words in their middle to one width, the widest that lets the label
    /// fit.
    /// The widest each kept word may be for the label to fit in `width`; `None` when not
    /// even a column each does.
    fn cap(&self, width: usize) -> Option<usize> {
        let kept: Vec<usize> = (0..self.words.len()).filter(|&i| self.kept[i]).collect();
        let rest = self.total - kept.iter().map(|&i| self.widths[i]).sum::<usize>();
        let need = |cap: usize| rest + kept.iter().map(|&i| self.widths[i].min(cap)).sum::<usize>();
        let max = kept.iter().map(|&i| self.widths[i]).max().unwrap_or(0);
        // The widest cap that fits: `need` grows with the cap.
        let (mut lo, mut hi) = (1, max.max(1));
        if need(lo) > width {
            return None;
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if need(mid) <= width {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// Whether cutting the kept words to `cap` leaves the base name of each whole (and its `…`).
    fn names_whole(&self, cap: usize) -> bool {
        (0..self.words.len())
            .filter(|&i| self.kept[i] && self.widths[i] > cap)
            .all(|i| {
                let s = self.shown[i].trim_end_matches('\'');
                width(s.rsplit('/').next().unwrap_or(s)) + 2 <= cap
            })
    }

    /// Takes group `g` back (`true`) or leaves it out.
    fn set_group(&mut self, g: usize, keep: bool) {
        let mut j = g;
        while j < self.words.len() && self.words[j].group == g {
            if keep {
                self.add_word(j);
            } else {
                self.drop_word(j);
            }
            j += 1;
        }
    }

    /// Cuts the kept words wider than `cap` to it ([`Self::cap`]).
    fn cut_kept(&mut self, lo: usize) {
        let kept: Vec<usize> = (0..self.words.len()).filter(|&i| self.kept[i]).collect();
        for i in kept {
            if self.widths[i] > lo {
                let s = if self.words[i].script_text {
                    cut_script(&self.shown[i], lo, self.depth)
                } else {
                    cut_word(&self.shown[i], lo)
                };
                self.set_shown(i, s);
            }
        }
    }

    fn render(&self) -> String {
        let mut out = String::with_capacity(self.total + 8);
        let mut in_gap = false;
        for (i, s) in self.shown.iter().enumerate() {
            if self.kept[i] {
                in_gap = false;
            } else if in_gap {
                continue;
            } else {
                in_gap = true;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(if self.kept[i] { s } else { "…" });
        }
        out
    }
}

/// The text of a script given as a word (`sh -c STRING`) in at most `width` columns: within its
/// quotes, fitted as a label itself (its first command, the words that tell, its end:
/// `$'depbase=`echo src/closures.lo … $depbase.Plo'`); cut in its middle inside another.
fn cut_script(s: &str, width: usize, depth: u8) -> String {
    let opener = if s.starts_with("$'") {
        "$'"
    } else if s.starts_with('\'') {
        "'"
    } else {
        ""
    };
    let closer = if s.len() > opener.len() && s.ends_with('\'') {
        "'"
    } else {
        ""
    };
    let quotes = opener.len() + closer.len();
    if depth > 0 || width < quotes + NAME_MIN {
        return cut_middle(s, width);
    }
    let inner = &s[opener.len()..s.len() - closer.len()];
    format!("{opener}{}{closer}", fit_name(inner, width - quotes, depth + 1))
}

/// One word of a label in at most `width` columns: its quote (`'`, `$'`), `…`, and as much of
/// its end as fits (`…zstd-sys-2.1.3/build.rs`: a file's name and its directory differ at the
/// end). [`cut_middle`] when not even that fits.
fn cut_word(s: &str, width: usize) -> String {
    let opener = if s.starts_with("$'") {
        "$'"
    } else if s.starts_with('\'') {
        "'"
    } else {
        ""
    };
    if self::width(s) <= width || width < opener.len() + 2 {
        return cut_middle(s, width);
    }
    let room = width - opener.len() - 1;
    let mut start = s.len();
    let mut used = 0;
    for (at, c) in s[opener.len()..].char_indices().rev() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        start = opener.len() + at;
    }
    format!("{opener}…{}", &s[start..])
}

/// `s` in at most `width` columns, cut in its middle: its first third and its end around a `…`
/// (empty for a width of 0).
pub fn cut_middle(s: &str, width: usize) -> String {
    if self::width(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let room = width - 1;
    let head_room = room / 3;
    let mut head_end = 0;
    let mut used = 0;
    for (at, c) in s.char_indices() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > head_room {
            break;
        }
        used += w;
        head_end = at + c.len_utf8();
    }
    let tail_room = room - used;
    let mut tail_start = s.len();
    let mut tused = 0;
    for (at, c) in s[head_end..].char_indices().rev() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if tused + w > tail_room {
            break;
        }
        tused += w;
        tail_start = head_end + at;
    }
    let mut out = String::with_capacity(head_end + (s.len() - tail_start) + 3);
    out.push_str(&s[..head_end]);
    out.push('…');
    out.push_str(&s[tail_start..]);
    out
}

#[cfg(test)]
mod tests;
