//! git's configuration files, read the way git reads them when Trace2 starts.
//!
//! * [`read_very_early_config`] — what git's `tr2_sysenv_load()` reads
//!   (`read_very_early_config()` in `config.c`): the system file
//!   (`GIT_CONFIG_SYSTEM`, default `/etc/gitconfig`, skipped with
//!   `GIT_CONFIG_NOSYSTEM`), then the global files (`GIT_CONFIG_GLOBAL`, or
//!   `$XDG_CONFIG_HOME/git/config` (`~/.config/git/config`) then
//!   `~/.gitconfig`), following `include.path` and `includeIf`. No repository
//!   and no command line (`-c`, `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`)
//!   — git ignores both for the `trace2.*` settings (checked against git
//!   2.47.3: `git -c trace2.eventTarget=… version` writes nothing).
//! * [`read_early_config`] — what git's `tr2_cfg_list_config_fl()` reads for
//!   `trace2.configParams` (`read_early_config()`): the same, plus the
//!   repository found from the current directory (`local`; not
//!   `config.worktree`, which git skips there) and the command line
//!   (`command`).
//!
//! `includeIf` conditions as git evaluates them there: `gitdir:` and
//! `gitdir/i:` match the discovered repository (never true in the very early
//! read, which has none); `onbranch:` is never true (git passes no
//! repository to these reads); `hasconfig:remote.*.url:` matches the remote
//! URLs of the same sequence of files. `%(prefix)/` include paths are not
//! expanded (git expands them relative to its own installation).
//!
//! # Why a hand-written parser
//!
//! gitoxide's `gix-config` 0.62 parses git's syntax correctly in our checks,
//! but (measured on this machine, `cargo build --release` of a probe crate
//! depending on `gix-config` with the `sha1` feature its `gix-hash` needs)
//! it brings 67 crates (gix-ref, gix-object, gix-lock, gix-tempfile, jiff,
//! memmap2, parking_lot…) and 77 s of compiler CPU time into a crate whose
//! dependencies are `libc` and `thiserror`; its `File` API groups a section's
//! values by name (so `a=1 b=2 a=3` comes back as a, a, b, where git's order
//! is needed for `def_param`); and legacy `[section.Sub]` headers keep the
//! subsection's case where git lowercases it. git's own parser
//! (`git_parse_source`, `parse_value`, `get_base_var` in `config.c`) is 150
//! lines of C; the port below follows it statement by statement, including
//! its line numbering for error messages, and the tests compare it with
//! `git config --list` on the same files.

use std::path::{Path, PathBuf};

pub use crate::gitconfig_wildmatch::{WM_CASEFOLD, WM_PATHNAME, wildmatch};

/// Where a configuration entry came from (git's `enum config_scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The system file.
    System,
    /// The global (per-user) files.
    Global,
    /// The repository's `config`.
    Local,
    /// The worktree's `config.worktree`.
    Worktree,
    /// The command line (`-c`, `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`).
    Command,
    /// A submodule's `.gitmodules`.
    Submodule,
    /// Anything else.
    Unknown,
}

impl Scope {
    /// git's `config_scope_name()`: `system`, `global`, `local`,
    /// `worktree`, `command`, `submodule`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::System => "system",
            Scope::Global => "global",
            Scope::Local => "local",
            Scope::Worktree => "worktree",
            Scope::Command => "command",
            Scope::Submodule => "submodule",
            Scope::Unknown => "unknown",
        }
    }
}

/// One configuration entry, in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Canonical key: section and name lowercased, subsection as written
    /// (`remote.Origin.url`).
    pub key: String,
    /// The value; `None` for a key written without `=` (an implicit `true`).
    pub value: Option<String>,
    /// Where it came from.
    pub scope: Scope,
    /// The file (`None` for the command line).
    pub file: Option<PathBuf>,
    /// 1-based line in `file` (0 for the command line).
    pub line: usize,
}

/// Why git's configuration could not be read. git dies on each of these
/// before tracing starts (exit 128); [`GitConfigError::die`] does the same.
#[derive(Debug, thiserror::Error)]
pub enum GitConfigError {
    /// A syntax error, or a value the reader rejects (`detail` says which).
    #[error("bad config line {line} in file {}{}", file.display(), detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    BadLine {
        /// The file.
        file: PathBuf,
        /// 1-based line, numbered as git does.
        line: usize,
        /// What was wrong, as git's `error:` line says it (e.g. `missing
        /// value for 'trace2.eventtarget'`).
        detail: Option<String>,
    },
    /// A command-line entry is malformed.
    #[error("unable to parse command-line config: {0}")]
    CommandLine(String),
    /// Includes nested more than 10 deep.
    #[error("exceeded maximum include depth (10) while including {} from {}", path.display(), from.display())]
    IncludeDepth {
        /// The file that would be included.
        path: PathBuf,
        /// The file including it.
        from: PathBuf,
    },
    /// A file exists but cannot be read.
    #[error("unable to access '{}': {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file included by an `includeIf` (while git collects remote URLs
    /// for `hasconfig:remote.*.url:`) defines a remote URL.
    #[error(
        "remote URLs cannot be configured in file directly or indirectly included by includeIf.hasconfig:remote.*.url"
    )]
    ForbiddenRemoteUrl,
    /// An environment variable git parses as a boolean is not one.
    #[error("bad boolean environment value '{value}' for '{name}'")]
    BadEnvBool {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
    },
}

impl GitConfigError {
    /// Prints the error as git does (`error: …` detail, then `fatal: …`)
    /// and exits with git's code for `die()`, 128.
    pub fn die(&self) -> ! {
        match self {
            GitConfigError::BadLine { file, line, detail } => {
                if let Some(d) = detail {
                    eprintln!("error: {d}");
                }
                eprintln!("fatal: bad config line {line} in file {}", file.display());
            }
            GitConfigError::IncludeDepth { path, from } => eprintln!(
                "fatal: exceeded maximum include depth (10) while including\n\t{}\nfrom\n\t{}\nThis might be due to circular includes.",
                path.display(),
                from.display()
            ),
            other => eprintln!("fatal: {other}"),
        }
        std::process::exit(128)
    }
}

/// A callback's verdict on an entry: `Err(detail)` makes the line bad.
type Callback<'a> = dyn FnMut(&Entry) -> Result<(), String> + 'a;

// ---------------------------------------------------------------------------
// The parser (config.c: get_next_char, parse_value, get_value,
// get_extended_base_var, get_base_var, git_parse_source).

struct Source<'a> {
    buf: &'a [u8],
    pos: usize,
    linenr: usize,
    eof: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

impl Source<'_> {
    fn raw(&mut self) -> Option<u8> {
        let c = self.buf.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn next(&mut self) -> u8 {
        let mut c = self.raw();
        if c == Some(b'\r') {
            let c2 = self.raw();
            if c2 == Some(b'\n') {
                c = c2;
            } else {
                if c2.is_some() {
                    self.pos -= 1;
                }
                c = Some(b'\r');
            }
        }
        match c {
            Some(b'\n') => {
                self.linenr += 1;
                b'\n'
            }
            Some(c) => c,
            None => {
                self.eof = true;
                self.linenr += 1;
                b'\n'
            }
        }
    }

    fn parse_value(&mut self) -> Option<Vec<u8>> {
        let mut quote = false;
        let mut comment = false;
        let mut trim_len = 0usize;
        let mut value = Vec::new();
        loop {
            let mut c = self.next();
            if c == b'\n' {
                if quote {
                    self.linenr -= 1;
                    return None;
                }
                if trim_len > 0 {
                    value.truncate(trim_len);
                }
                return Some(value);
            }
            if comment {
                continue;
            }
            if is_space(c) && !quote {
                if trim_len == 0 {
                    trim_len = value.len();
                }
                if !value.is_empty() {
                    value.push(c);
                }
                continue;
            }
            if !quote && (c == b';' || c == b'#') {
                comment = true;
                continue;
            }
            trim_len = 0;
            if c == b'\\' {
                c = self.next();
                c = match c {
                    b'\n' => continue,
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'n' => b'\n',
                    b'\\' | b'"' => c,
                    _ => return None,
                };
                value.push(c);
                continue;
            }
            if c == b'"' {
                quote = !quote;
                continue;
            }
            value.push(c);
        }
    }

    fn get_extended_base_var(&mut self, name: &mut Vec<u8>, mut c: u8) -> Result<(), ()> {
        loop {
            if c == b'\n' {
                self.linenr -= 1;
                return Err(());
            }
            c = self.next();
            if !is_space(c) {
                break;
            }
        }
        if c != b'"' {
            return Err(());
        }
        name.push(b'.');
        loop {
            let mut c = self.next();
            if c == b'\n' {
                self.linenr -= 1;
                return Err(());
            }
            if c == b'"' {
                break;
            }
            if c == b'\\' {
                c = self.next();
                if c == b'\n' {
                    self.linenr -= 1;
                    return Err(());
                }
            }
            name.push(c);
        }
        if self.next() != b']' {
            return Err(());
        }
        Ok(())
    }

    fn get_base_var(&mut self, name: &mut Vec<u8>) -> Result<(), ()> {
        loop {
            let c = self.next();
            if self.eof {
                return Err(());
            }
            if c == b']' {
                return Ok(());
            }
            if is_space(c) {
                return self.get_extended_base_var(name, c);
            }
            if !is_key_char(c) && c != b'.' {
                return Err(());
            }
            name.push(c.to_ascii_lowercase());
        }
    }
}

/// Parses one file's text, calling `cb` with each entry in order (git's
/// `git_parse_source`). Errors carry git's line number.
fn parse(
    buf: &[u8],
    file: &Path,
    scope: Scope,
    cb: &mut dyn FnMut(&Entry) -> Result<(), GitConfigError>,
) -> Result<(), GitConfigError> {
    let mut s = Source {
        buf,
        pos: 0,
        linenr: 1,
        eof: false,
    };
    if buf.starts_with(b"\xef\xbb\xbf") {
        s.pos = 3;
    }
    let bad = |s: &Source<'_>, detail: Option<String>| GitConfigError::BadLine {
        file: file.to_path_buf(),
        line: s.linenr,
        detail,
    };
    let mut var: Vec<u8> = Vec::new();
    let mut baselen = 0usize;
    let mut comment = false;
    loop {
        let c = s.next();
        if c == b'\n' {
            if s.eof {
                return Ok(());
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            var.clear();
            if s.get_base_var(&mut var).is_err() || var.is_empty() {
                return Err(bad(&s, None));
            }
            var.push(b'.');
            baselen = var.len();
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(bad(&s, None));
        }
        // get_value
        var.truncate(baselen);
        var.push(c.to_ascii_lowercase());
        let mut c;
        loop {
            c = s.next();
            if s.eof || !is_key_char(c) {
                break;
            }
            var.push(c.to_ascii_lowercase());
        }
        while c == b' ' || c == b'\t' {
            c = s.next();
        }
        let mut value = None;
        if c != b'\n' {
            if c != b'=' {
                return Err(bad(&s, None));
            }
            match s.parse_value() {
                Some(v) => value = Some(v),
                None => return Err(bad(&s, None)),
            }
        }
        s.linenr -= 1;
        let entry = Entry {
            key: String::from_utf8_lossy(&var).into_owned(),
            value: value.map(|v| String::from_utf8_lossy(&v).into_owned()),
            scope,
            file: Some(file.to_path_buf()),
            line: s.linenr,
        };
        cb(&entry)?;
        s.linenr += 1;
    }
}

/// Parses `text` as one config file and returns its entries, without
/// following includes (for tests and tools; `file` names it in errors).
pub fn parse_str(text: &[u8], file: &Path, scope: Scope) -> Result<Vec<Entry>, GitConfigError> {
    let mut v = Vec::new();
    parse(text, file, scope, &mut |e| {
        v.push(e.clone());
        Ok(())
    })?;
    Ok(v)
}

// ---------------------------------------------------------------------------
// Command-line entries (GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS).

/// git's `git_config_parse_key`: canonical form of `section[.sub].name`.
fn canonical_key(key: &str) -> Result<String, String> {
    let Some(last_dot) = key.rfind('.').filter(|&i| i > 0) else {
        return Err(format!("key does not contain a section: {key}"));
    };
    if last_dot + 1 == key.len() {
        return Err(format!("key does not contain variable name: {key}"));
    }
    let first_dot = key.find('.').unwrap_or(last_dot);
    let mut out = String::with_capacity(key.len());
    for (i, c) in key.char_indices() {
        if i < first_dot || i > last_dot {
            if !(c.is_ascii_alphanumeric() || c == '-') || (i == last_dot + 1 && !c.is_ascii_alphabetic()) {
                return Err(format!("invalid key: {key}"));
            }
            out.push(c.to_ascii_lowercase());
        } else if c == '\n' {
            return Err(format!("invalid key (newline): {key}"));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// git's `sq_dequote_step`: one single-quoted word at the start of `s`;
/// returns it and the rest after its closing quote (`None` at the end).
fn sq_dequote_step(s: &str) -> Option<(String, Option<&str>)> {
    let b = s.as_bytes();
    if b.first() != Some(&b'\'') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        let c = *b.get(i)?;
        if c != b'\'' {
            out.push(c);
            i += 1;
            continue;
        }
        i += 1;
        match b.get(i) {
            None => return Some((String::from_utf8_lossy(&out).into_owned(), None)),
            Some(b'\\')
                if matches!(b.get(i + 1), Some(b'\'') | Some(b'!')) && b.get(i + 2) == Some(&b'\'') =>
            {
                out.push(b[i + 1]);
                i += 3;
            }
            Some(_) => return Some((String::from_utf8_lossy(&out).into_owned(), Some(&s[i..]))),
        }
    }
}

fn env_var(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// The command-line entries git would see (`GIT_CONFIG_COUNT` pairs, then
/// `GIT_CONFIG_PARAMETERS`), canonicalised, scope `command`.
pub fn command_line_entries() -> Result<Vec<Entry>, GitConfigError> {
    let err = GitConfigError::CommandLine;
    let mut out = Vec::new();
    let mut push = |key: &str, value: Option<String>| -> Result<(), GitConfigError> {
        if key.is_empty() {
            return Err(err("empty config key".into()));
        }
        out.push(Entry {
            key: canonical_key(key).map_err(err)?,
            value,
            scope: Scope::Command,
            file: None,
            line: 0,
        });
        Ok(())
    };
    if let Some(n) = env_var("GIT_CONFIG_COUNT") {
        let count: usize = if n.is_empty() {
            0
        } else {
            n.parse()
                .map_err(|_| err("bogus count in GIT_CONFIG_COUNT".into()))?
        };
        for i in 0..count {
            let k = env_var(&format!("GIT_CONFIG_KEY_{i}"))
                .ok_or_else(|| err(format!("missing config key GIT_CONFIG_KEY_{i}")))?;
            let v = env_var(&format!("GIT_CONFIG_VALUE_{i}"))
                .ok_or_else(|| err(format!("missing config value GIT_CONFIG_VALUE_{i}")))?;
            push(&k, Some(v))?;
        }
    }
    if let Some(env) = env_var("GIT_CONFIG_PARAMETERS") {
        let bogus = || err("bogus format in GIT_CONFIG_PARAMETERS".into());
        let mut cur: Option<&str> = Some(env.as_str());
        while let Some(c) = cur.filter(|c| !c.is_empty()) {
            let (key, rest) = sq_dequote_step(c).ok_or_else(bogus)?;
            match rest {
                None => cur = None,
                Some(r) => cur = Some(r),
            }
            match cur {
                None => old_style(&key, &mut push)?,
                Some(r) if r.starts_with(|ch: char| ch.is_ascii() && is_space(ch as u8)) => {
                    old_style(&key, &mut push)?
                }
                Some(r) if r.starts_with('=') => {
                    let r = &r[1..];
                    let value = if r.starts_with('\'') {
                        let (v, rest) = sq_dequote_step(r).ok_or_else(bogus)?;
                        if rest
                            .is_some_and(|x| !x.starts_with(|ch: char| ch.is_ascii() && is_space(ch as u8)))
                        {
                            return Err(bogus());
                        }
                        cur = rest;
                        Some(v)
                    } else if r.is_empty() || r.starts_with(|ch: char| ch.is_ascii() && is_space(ch as u8)) {
                        cur = Some(r);
                        None
                    } else {
                        return Err(bogus());
                    };
                    push(&key, value)?;
                }
                Some(_) => return Err(bogus()),
            }
            cur = cur.map(|c| c.trim_start_matches([' ', '\t', '\n', '\r']));
        }
    }
    Ok(out)
}

type PushFn<'a> = dyn FnMut(&str, Option<String>) -> Result<(), GitConfigError> + 'a;

/// Old-style `'key=value'` parameter (git's `git_config_parse_parameter`).
fn old_style(text: &str, push: &mut PushFn<'_>) -> Result<(), GitConfigError> {
    let (k, v) = match text.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (text, None),
    };
    let k = k.trim_matches([' ', '\t', '\n', '\r']);
    if k.is_empty() {
        return Err(GitConfigError::CommandLine(format!(
            "bogus config parameter: {text}"
        )));
    }
    push(k, v)
}

// ---------------------------------------------------------------------------
// Files, includes and the reading sequence.

/// git's `git_parse_maybe_bool`: true/yes/on/false/no/off (any case) or an
/// integer; `None` if invalid. The environment settings of
/// [`crate::Config`] read booleans with it too.
pub fn parse_maybe_bool(v: &str) -> Option<bool> {
    let l = v.to_ascii_lowercase();
    match l.as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        _ => l.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// git's `git_env_bool` for `GIT_CONFIG_NOSYSTEM` and friends.
fn env_bool(name: &str, default: bool) -> Result<bool, GitConfigError> {
    match env_var(name) {
        None => Ok(default),
        Some(v) => parse_maybe_bool(&v).ok_or(GitConfigError::BadEnvBool {
            name: name.to_string(),
            value: v,
        }),
    }
}

fn home() -> Option<PathBuf> {
    env_var("HOME").map(PathBuf::from)
}

/// The repository whose `local`/`worktree` config [`read_early_config`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPaths {
    /// The git directory (`.git`, a bare repository, or a worktree's
    /// `.git/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// The common directory holding `config` (the git dir unless a
    /// `commondir` file points elsewhere).
    pub common_dir: PathBuf,
}

/// The files git reads, in order, with their scopes.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The system file, if `GIT_CONFIG_NOSYSTEM` is not set.
    pub system: Option<PathBuf>,
    /// The global files in reading order: `$XDG_CONFIG_HOME/git/config`
    /// (or `~/.config/git/config`) then `~/.gitconfig`; or the one file
    /// `GIT_CONFIG_GLOBAL` names.
    pub global: Vec<PathBuf>,
    /// The repository, for [`read_early_config`].
    pub repo: Option<RepoPaths>,
    /// Whether to add the command line's entries.
    pub command_line: bool,
}

/// The default system file when `GIT_CONFIG_SYSTEM` is not set. git builds
/// it from its install prefix: `/etc/gitconfig` for distribution packages
/// (`/usr/bin/git`), `/usr/local/etc/gitconfig` for a `/usr/local` build.
/// Set `GIT_CONFIG_SYSTEM` to name another.
pub const DEFAULT_SYSTEM_CONFIG: &str = "/etc/gitconfig";

impl Sources {
    /// The very early sequence: system and global files, from the environment.
    pub fn very_early() -> Result<Sources, GitConfigError> {
        let system = if env_bool("GIT_CONFIG_NOSYSTEM", false)? {
            None
        } else {
            Some(
                env_var("GIT_CONFIG_SYSTEM")
                    .map_or_else(|| PathBuf::from(DEFAULT_SYSTEM_CONFIG), PathBuf::from),
            )
        };
        let global = match env_var("GIT_CONFIG_GLOBAL") {
            Some(g) => vec![PathBuf::from(g)],
            None => {
                let mut v = Vec::new();
                // String concatenation as git's mkpathdup("%s/…"): an empty
                // HOME gives "/.gitconfig", not a relative path.
                let xdg = env_var("XDG_CONFIG_HOME")
                    .filter(|x| !x.is_empty())
                    .map(|x| PathBuf::from(format!("{x}/git/config")))
                    .or_else(|| env_var("HOME").map(|h| PathBuf::from(format!("{h}/.config/git/config"))));
                v.extend(xdg);
                v.extend(env_var("HOME").map(|h| PathBuf::from(format!("{h}/.gitconfig"))));
                v
            }
        };
        Ok(Sources {
            system,
            global,
            repo: None,
            command_line: false,
        })
    }

    /// The early sequence: [`Sources::very_early`] plus the repository
    /// discovered from the current directory and the command line.
    pub fn early() -> Result<Sources, GitConfigError> {
        let mut s = Sources::very_early()?;
        s.repo = discover_repo();
        s.command_line = true;
        Ok(s)
    }
}

/// Reads a file; `Ok(None)` when git would skip it (missing, or not
/// readable for the system/global files).
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, GitConfigError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) => match e.kind() {
            std::io::ErrorKind::NotFound
            | std::io::ErrorKind::PermissionDenied
            | std::io::ErrorKind::NotADirectory => Ok(None),
            // fopen() of a directory succeeds and reads nothing.
            std::io::ErrorKind::IsADirectory => Ok(Some(Vec::new())),
            _ => Err(GitConfigError::Io {
                path: path.to_path_buf(),
                source: e,
            }),
        },
    }
}

/// git's `interpolate_path`: `~/…` and `~user/…`; `None` if not expandable.
fn interpolate_path(p: &str, real_home: bool) -> Option<PathBuf> {
    let Some(rest) = p.strip_prefix('~') else {
        return Some(PathBuf::from(p));
    };
    let (user, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let base = if user.is_empty() {
        let h = home()?;
        if real_home {
            std::fs::canonicalize(&h).unwrap_or(h)
        } else {
            h
        }
    } else {
        crate::sys::home_of_user(user)?
    };
    let mut s = base.into_os_string();
    s.push(tail);
    Some(PathBuf::from(s))
}

struct Reader<'a> {
    sources: &'a Sources,
    /// Every `includeIf.hasconfig:remote.*.url` counts as true (the pass
    /// that collects remote URLs).
    unconditional_remote_url: bool,
    remote_urls: Option<Vec<String>>,
    depth: usize,
}

impl Reader<'_> {
    fn read_sequence(&mut self, cb: &mut Callback<'_>) -> Result<(), GitConfigError> {
        let s = self.sources;
        if let Some(p) = &s.system {
            self.read_file(p, Scope::System, cb, false)?;
        }
        for p in &s.global {
            self.read_file(p, Scope::Global, cb, false)?;
        }
        if let Some(r) = &s.repo {
            // Not `config.worktree`: git reads it only when given a
            // repository object, and read_early_config() passes none
            // (checked: git 2.47.3 lists no `worktree` def_param).
            self.read_file(&r.common_dir.join("config"), Scope::Local, cb, false)?;
        }
        if s.command_line {
            for e in command_line_entries()? {
                cb(&e).map_err(GitConfigError::CommandLine)?;
                self.handle_includes(&e, cb, false)
                    .map_err(|e| GitConfigError::CommandLine(e.to_string()))?;
            }
        }
        Ok(())
    }

    fn read_file(
        &mut self,
        path: &Path,
        scope: Scope,
        cb: &mut Callback<'_>,
        forbid_remote_url: bool,
    ) -> Result<(), GitConfigError> {
        let Some(buf) = read_optional(path)? else {
            return Ok(());
        };
        parse(&buf, path, scope, &mut |e| {
            let bad = |detail: String| GitConfigError::BadLine {
                file: path.to_path_buf(),
                line: e.line,
                detail: Some(detail),
            };
            if forbid_remote_url {
                // git swaps the callback for forbid_remote_url(): entries of
                // the included file are checked, not collected.
                if is_remote_url(&e.key) {
                    return Err(GitConfigError::ForbiddenRemoteUrl);
                }
            } else {
                cb(e).map_err(bad)?;
            }
            self.handle_includes(e, cb, forbid_remote_url)
        })
    }

    fn handle_includes(
        &mut self,
        e: &Entry,
        cb: &mut Callback<'_>,
        forbid_remote_url: bool,
    ) -> Result<(), GitConfigError> {
        if e.key == "include.path" {
            return self.include_path(e, cb, forbid_remote_url);
        }
        let Some(rest) = e.key.strip_prefix("includeif.") else {
            return Ok(());
        };
        let Some(cond) = rest.strip_suffix(".path") else {
            return Ok(());
        };
        if self.condition_is_true(e, cond)? {
            // While collecting remote URLs, git checks every file an
            // includeIf brings in (whatever the condition).
            let forbid = forbid_remote_url || self.unconditional_remote_url;
            self.include_path(e, cb, forbid)?;
        }
        Ok(())
    }

    fn include_path(
        &mut self,
        e: &Entry,
        cb: &mut Callback<'_>,
        forbid_remote_url: bool,
    ) -> Result<(), GitConfigError> {
        let from = e
            .file
            .clone()
            .unwrap_or_else(|| PathBuf::from("the command line"));
        let bad = |detail: String| GitConfigError::BadLine {
            file: from.clone(),
            line: e.line,
            detail: Some(detail),
        };
        let Some(value) = &e.value else {
            return Err(bad(format!("missing value for '{}'", e.key)));
        };
        let Some(mut path) = interpolate_path(value, false) else {
            return Err(bad(format!("could not expand include path '{value}'")));
        };
        if !path.is_absolute() {
            let Some(dir) = e.file.as_deref().and_then(Path::parent) else {
                return Err(bad("relative config includes must come from files".into()));
            };
            path = dir.join(path);
        }
        match std::fs::metadata(&path) {
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(());
            }
            Err(err) => {
                return Err(GitConfigError::Io { path, source: err });
            }
            Ok(_) => {}
        }
        self.depth += 1;
        if self.depth > 10 {
            return Err(GitConfigError::IncludeDepth { path, from });
        }
        let r = self.read_file(&path, e.scope, cb, forbid_remote_url);
        self.depth -= 1;
        r
    }

    fn condition_is_true(&mut self, e: &Entry, cond: &str) -> Result<bool, GitConfigError> {
        if let Some(c) = cond.strip_prefix("gitdir:") {
            return Ok(self.by_gitdir(e, c, false));
        }
        if let Some(c) = cond.strip_prefix("gitdir/i:") {
            return Ok(self.by_gitdir(e, c, true));
        }
        if cond.starts_with("onbranch:") {
            // git passes no repository to the (very) early reads.
            return Ok(false);
        }
        if let Some(glob) = cond.strip_prefix("hasconfig:remote.*.url:") {
            if self.unconditional_remote_url {
                return Ok(true);
            }
            if self.remote_urls.is_none() {
                let mut urls = Vec::new();
                let mut r = Reader {
                    sources: self.sources,
                    unconditional_remote_url: true,
                    remote_urls: None,
                    depth: 0,
                };
                r.read_sequence(&mut |e: &Entry| {
                    if is_remote_url(&e.key) {
                        urls.extend(e.value.clone());
                    }
                    Ok(())
                })?;
                self.remote_urls = Some(urls);
            }
            let urls = self.remote_urls.as_deref().unwrap_or_default();
            return Ok(urls
                .iter()
                .any(|u| wildmatch(glob.as_bytes(), u.as_bytes(), WM_PATHNAME)));
        }
        Ok(false)
    }

    /// git's `include_by_gitdir`.
    fn by_gitdir(&self, e: &Entry, cond: &str, icase: bool) -> bool {
        let Some(repo) = &self.sources.repo else {
            return false;
        };
        let git_dir = &repo.git_dir;
        // prepare_include_condition_pattern
        let mut pat = interpolate_path(cond, true)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| cond.to_string());
        let mut prefix = 0usize;
        if pat.starts_with("./") {
            let Some(file) = &e.file else { return false };
            let Ok(real) = std::fs::canonicalize(file) else {
                return false;
            };
            let real = real.to_string_lossy().into_owned();
            let Some(slash) = real.rfind('/') else {
                return false;
            };
            pat.replace_range(0..1, &real[..slash]);
            prefix = slash + 1;
        } else if !pat.starts_with('/') {
            pat.insert_str(0, "**/");
        }
        if pat.ends_with('/') {
            pat.push_str("**");
        }
        let flags = WM_PATHNAME | if icase { WM_CASEFOLD } else { 0 };
        let real = std::fs::canonicalize(git_dir).unwrap_or_else(|_| git_dir.clone());
        let abs = std::path::absolute(git_dir).unwrap_or_else(|_| git_dir.clone());
        for text in [real, abs] {
            let text = text.to_string_lossy().into_owned();
            if prefix > 0 {
                if text.len() < prefix {
                    continue;
                }
                let (a, b) = (&pat.as_bytes()[..prefix], &text.as_bytes()[..prefix]);
                let same = if icase { a.eq_ignore_ascii_case(b) } else { a == b };
                if !same {
                    continue;
                }
            }
            if wildmatch(&pat.as_bytes()[prefix..], &text.as_bytes()[prefix..], flags) {
                return true;
            }
        }
        false
    }
}

fn is_remote_url(key: &str) -> bool {
    key.strip_prefix("remote.")
        .and_then(|r| r.strip_suffix(".url"))
        .is_some_and(|name| !name.is_empty())
}

/// Reads `sources` in git's order, following includes, and calls `cb` with
/// every entry (include directives too, as git does). `cb` returning
/// `Err(detail)` stops the read with a [`GitConfigError::BadLine`] naming
/// the entry's file and line, as git's config callbacks do.
pub fn read_with(sources: &Sources, cb: &mut Callback<'_>) -> Result<(), GitConfigError> {
    let mut r = Reader {
        sources,
        unconditional_remote_url: false,
        remote_urls: None,
        depth: 0,
    };
    r.read_sequence(cb)
}

/// All entries of `sources`, in git's reading order.
pub fn read_all(sources: &Sources) -> Result<Vec<Entry>, GitConfigError> {
    let mut v = Vec::new();
    read_with(sources, &mut |e| {
        v.push(e.clone());
        Ok(())
    })?;
    Ok(v)
}

/// git's `read_very_early_config`: system and global files with includes.
pub fn read_very_early_config() -> Result<Vec<Entry>, GitConfigError> {
    read_all(&Sources::very_early()?)
}

/// git's `read_early_config`: system, global, the current repository's
/// `config`, and the command line.
pub fn read_early_config() -> Result<Vec<Entry>, GitConfigError> {
    read_all(&Sources::early()?)
}

// ---------------------------------------------------------------------------
// Repository discovery (a subset of git's setup.c).

fn is_git_directory(dir: &Path) -> bool {
    let common = std::fs::read_to_string(dir.join("commondir"))
        .ok()
        .map(|c| dir.join(c.trim_end_matches('\n')))
        .unwrap_or_else(|| dir.to_path_buf());
    dir.join("HEAD").is_file() && common.join("objects").is_dir() && common.join("refs").is_dir()
}

fn repo_paths(git_dir: PathBuf) -> RepoPaths {
    let common_dir = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| git_dir.join(c.trim_end_matches('\n')))
        .unwrap_or_else(|| git_dir.clone());
    RepoPaths { git_dir, common_dir }
}

/// Reads a `.git` file (`gitdir: <path>`, relative to the file's directory).
fn read_gitfile(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let p = text.strip_prefix("gitdir: ")?.trim_end_matches(['\n', '\r']);
    let p = Path::new(p);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        file.parent()?.join(p)
    })
}

/// git's `is_path_owned_by_current_uid`: owned by the effective user, or,
/// for root, by root or by `SUDO_UID`.
fn owned_by_current_user(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let mut euid = crate::sys::euid();
    if euid == 0 {
        if m.uid() == 0 {
            return true;
        }
        if let Some(id) = env_var("SUDO_UID").and_then(|v| v.parse::<u32>().ok()) {
            euid = id;
        }
    }
    m.uid() == euid
}

/// git's `real_pathdup(p, 0)`: the real path, the last component allowed
/// to be missing.
fn real_path(p: &Path) -> Option<PathBuf> {
    if let Ok(r) = std::fs::canonicalize(p) {
        return Some(r);
    }
    let parent = std::fs::canonicalize(p.parent()?).ok()?;
    Some(parent.join(p.file_name()?))
}

/// git's `ensure_valid_ownership`: the paths are the user's own, or the
/// repository is listed in `safe.directory` (system, global and command
/// line config, as git's protected config).
fn ensure_valid_ownership(paths: &[&Path], repo_path: &Path) -> bool {
    if !env_bool("GIT_TEST_ASSUME_DIFFERENT_OWNER", false).unwrap_or(false)
        && paths.iter().all(|p| owned_by_current_user(p))
    {
        return true;
    }
    let Some(path) = real_path(repo_path) else {
        return false;
    };
    let Ok(mut sources) = Sources::very_early() else {
        return false;
    };
    sources.command_line = true;
    let mut safe = false;
    let read = read_with(&sources, &mut |e| {
        if e.key != "safe.directory" {
            return Ok(());
        }
        match e.value.as_deref() {
            None | Some("") => safe = false,
            Some("*") => safe = true,
            Some(v) => {
                let Some(allowed) = interpolate_path(v, false) else {
                    return Ok(());
                };
                if !allowed.is_absolute() && allowed != Path::new(".") {
                    return Ok(());
                }
                let Some(norm) = real_path(&allowed) else {
                    return Ok(());
                };
                let norm = norm.to_string_lossy();
                let path = path.to_string_lossy();
                if let Some(prefix) = norm.strip_suffix('*').filter(|p| p.ends_with('/')) {
                    if path.starts_with(prefix) {
                        safe = true;
                    }
                } else if path == norm {
                    safe = true;
                }
            }
        }
        Ok(())
    });
    read.is_ok() && safe
}

/// The repository git would find from the current directory: `GIT_DIR` if
/// set, else the nearest directory upwards holding a `.git` directory or
/// file, or being a bare repository itself; not above a
/// `GIT_CEILING_DIRECTORIES` entry, nor across file systems unless
/// `GIT_DISCOVERY_ACROSS_FILESYSTEM` is true; and, as git, none if it
/// belongs to another user and is not listed in `safe.directory`.
pub fn discover_repo() -> Option<RepoPaths> {
    if let Some(d) = env_var("GIT_DIR").filter(|d| !d.is_empty()) {
        let d = std::path::absolute(d).ok()?;
        let d = if d.is_file() { read_gitfile(&d)? } else { d };
        return Some(repo_paths(d));
    }
    let cwd = std::env::current_dir().ok()?;
    let ceilings: Vec<PathBuf> = env_var("GIT_CEILING_DIRECTORIES")
        .map(|c| {
            c.split(':')
                .filter(|s| s.starts_with('/'))
                .map(|s| std::fs::canonicalize(s).unwrap_or_else(|_| PathBuf::from(s)))
                .collect()
        })
        .unwrap_or_default();
    let across = env_bool("GIT_DISCOVERY_ACROSS_FILESYSTEM", false).unwrap_or(false);
    let dev = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).ok().map(|m| m.dev())
    };
    let start_dev = dev(&cwd);
    let mut dir = cwd.as_path();
    loop {
        let dotgit = dir.join(".git");
        if dotgit.is_dir() && is_git_directory(&dotgit) {
            return ensure_valid_ownership(&[dir, &dotgit], dir).then(|| repo_paths(dotgit));
        }
        if dotgit.is_file()
            && let Some(g) = read_gitfile(&dotgit).filter(|g| is_git_directory(g))
        {
            return ensure_valid_ownership(&[&dotgit, dir, &g], dir).then(|| repo_paths(g));
        }
        if is_git_directory(dir) {
            return ensure_valid_ownership(&[dir], dir).then(|| repo_paths(dir.to_path_buf()));
        }
        let parent = dir.parent()?;
        if ceilings.iter().any(|c| c == parent) {
            return None;
        }
        if !across && dev(parent) != start_dev {
            return None;
        }
        dir = parent;
    }
}

// ---------------------------------------------------------------------------
// trace2.configParams

/// git's parsing of `trace2.configParams` / `GIT_TRACE2_CONFIG_PARAMS` and
/// `trace2.envVars`: split on `,`, each item trimmed (empty items stay and
/// match nothing).
pub fn split_list(v: &str) -> Vec<String> {
    if v.is_empty() {
        return Vec::new();
    }
    // strbuf_split_buf keeps the delimiter in each piece, so a trailing
    // comma makes no empty last item.
    let v = v.strip_suffix(',').unwrap_or(v);
    v.split(',')
        .map(|s| s.trim_matches([' ', '\t', '\n', '\r']).to_string())
        .collect()
}

/// Whether a config key matches one of the `configParams` patterns
/// (`wildmatch` with `WM_CASEFOLD`, as git's `tr2_cfg_cb`).
pub fn key_matches(patterns: &[String], key: &str) -> bool {
    patterns
        .iter()
        .any(|p| wildmatch(p.as_bytes(), key.as_bytes(), WM_CASEFOLD))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, Option<String>, usize)> {
        parse_str(text.as_bytes(), Path::new("t.cfg"), Scope::Global)
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.value, e.line))
            .collect()
    }

    fn bad_line(text: &str) -> usize {
        match parse_str(text.as_bytes(), Path::new("t.cfg"), Scope::Global) {
            Err(GitConfigError::BadLine { line, .. }) => line,
            other => panic!("expected a bad line, got {other:?}"),
        }
    }

    #[test]
    fn syntax_like_git() {
        let e = entries(
            "[Trace2]\n\tNormalTarget = /tmp/a \"b c\" ; x\n\tnormalBrief\n\tx = a\\tb\\\n c\n[Sec \"Sub \\\"q\\\"\"] k = 1\n[Sec.Old]k=2\n",
        );
        assert_eq!(
            e,
            vec![
                ("trace2.normaltarget".into(), Some("/tmp/a b c".into()), 2),
                ("trace2.normalbrief".into(), None, 3),
                ("trace2.x".into(), Some("a\tb c".into()), 5),
                ("sec.Sub \"q\".k".into(), Some("1".into()), 6),
                ("sec.old.k".into(), Some("2".into()), 7),
            ]
        );
        assert_eq!(bad_line("[core]\n\tx = \"open\n"), 2);
        assert_eq!(bad_line("[core]\n\tx = a\n[bad\n"), 3);
        assert_eq!(bad_line("[core]\n\t_x = 1\n"), 2);
        assert_eq!(bad_line("[core]\n\tx = \\q\n"), 2);
    }

    #[test]
    fn command_line_keys() {
        assert_eq!(canonical_key("Remote.Origin.URL").unwrap(), "remote.Origin.url");
        assert_eq!(canonical_key("a.b").unwrap(), "a.b");
        assert!(canonical_key("ab").is_err());
        assert!(canonical_key("a.1b").is_err());
        assert_eq!(sq_dequote_step("'a'\\''b'=x"), Some(("a'b".into(), Some("=x"))));
        assert_eq!(sq_dequote_step("'abc'"), Some(("abc".into(), None)));
        assert_eq!(
            split_list(" core.* , remote.*.url,"),
            vec!["core.*", "remote.*.url"]
        );
        assert!(key_matches(&["Core.*".into()], "core.editor"));
    }
}
