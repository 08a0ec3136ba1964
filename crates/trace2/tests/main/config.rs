//! Configuration from git's config files, compared with real git: the same
//! HOME, system file, repository and environment are given to `git version`
//! and to `trace2-driver trace2 001return 0` (which opts in with
//! `Config::with_git_config`), and what each writes is compared after
//! scrubbing what legitimately differs (times, SIDs, file/line, argv,
//! versions, the command name).

use std::path::PathBuf;
use std::process::Command;

use trace2::gitconfig::{Scope, parse_str};
use trace2::reader::json::parse_object_line;

use crate::common::*;

/// Variables that would leak the caller's git configuration into a run.
const CONFIG_VARS: &[&str] = &[
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_CEILING_DIRECTORIES",
];

struct Setup {
    home: TempDir,
    cwd: PathBuf,
    env: Vec<(String, String)>,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        let home = TempDir::new(tag);
        let cwd = home.path().to_path_buf();
        Setup {
            home,
            cwd,
            env: vec![("GIT_CONFIG_NOSYSTEM".into(), "1".into())],
        }
    }
    fn path(&self, s: &str) -> PathBuf {
        self.home.join(s)
    }
    fn p(&self, s: &str) -> String {
        self.path(s).to_string_lossy().into_owned()
    }
    fn write(&self, name: &str, text: &str) {
        let p = self.path(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn env(&mut self, k: &str, v: &str) {
        self.env.retain(|(x, _)| x != k);
        self.env.push((k.into(), v.into()));
    }
    fn unset(&mut self, k: &str) {
        self.env.retain(|(x, _)| x != k);
    }
    fn command(&self, which: Prog) -> Command {
        let mut c = match which {
            Prog::Git => {
                let mut c = git(self.home.path());
                c.arg("version");
                c
            }
            Prog::Driver => {
                let mut c = driver(self.home.path());
                c.args(["trace2", "001return", "0"]);
                c
            }
        };
        for v in CONFIG_VARS {
            c.env_remove(v);
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.current_dir(&self.cwd);
        c
    }
    /// Runs `which`, then reads and removes each of `files`.
    fn run(&self, which: Prog, files: &[&str]) -> Run {
        for f in files {
            let _ = std::fs::remove_file(self.path(f));
        }
        let out = run(&mut self.command(which));
        let texts = files
            .iter()
            .map(|f| {
                let p = self.path(f);
                let t = p.exists().then(|| read(&p));
                let _ = std::fs::remove_file(&p);
                t
            })
            .collect();
        Run {
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            texts,
        }
    }
    /// git and the driver, same setup.
    fn both(&self, files: &[&str]) -> (Run, Run) {
        (self.run(Prog::Git, files), self.run(Prog::Driver, files))
    }
}

#[derive(Clone, Copy)]
enum Prog {
    Git,
    Driver,
}

#[derive(Debug)]
struct Run {
    code: i32,
    stderr: String,
    texts: Vec<Option<String>>,
}

/// Event lines reduced to `name key1 key2…` for the events both programs
/// write the same way (version, start, exit, atexit), plus the full
/// `scope/param/value` of each `def_param`.
fn event_shape(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let m = parse_object_line(line.as_bytes()).expect("valid JSON line");
        let name = m[0].value.as_str().unwrap_or("").to_string();
        match name.as_str() {
            "version" | "start" | "exit" | "atexit" => {
                let keys: Vec<&str> = m.iter().map(|x| x.key.as_str()).collect();
                out.push(keys.join(" "));
            }
            "def_param" => {
                let vals: Vec<String> = m
                    .iter()
                    .filter(|x| matches!(x.key.as_str(), "scope" | "param" | "value"))
                    .map(|x| format!("{}={}", x.key, String::from_utf8_lossy(&x.raw)))
                    .collect();
                out.push(format!("def_param {}", vals.join(" ")));
            }
            _ => {}
        }
    }
    out
}

/// Normal lines of the common events with times and versions masked; brief
/// lines start with the event name, others with a time and file:line.
fn normal_shape(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let brief = !l.as_bytes().first().is_some_and(u8::is_ascii_digit);
            let payload = if brief {
                l
            } else {
                // `HH:MM:SS.µµµµµµ file:line<padding>payload`
                let rest = l.split_once(' ').map_or("", |x| x.1);
                rest.split_once(' ').map_or("", |x| x.1).trim_start()
            };
            let word = payload.split(' ').next().unwrap_or("");
            match word {
                "version" | "start" | "exit" | "atexit" => {
                    Some(format!("{} {word}", if brief { "brief" } else { "full" }))
                }
                "def_param" => Some(payload.to_string()),
                _ => None,
            }
        })
        .collect()
}

/// Perf lines: brief ones start with `d<depth> |`.
fn perf_shape(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let brief = l.starts_with('d');
            let cols: Vec<&str> = l.split(" | ").map(str::trim).collect();
            let ev = *cols.get(if brief { 2 } else { 3 })?;
            match ev {
                "version" | "start" | "exit" | "atexit" => {
                    Some(format!("{} {ev}", if brief { "brief" } else { "full" }))
                }
                "def_param" => Some(format!(
                    "def_param {} {}",
                    cols[cols.len() - 2],
                    cols[cols.len() - 1]
                )),
                _ => None,
            }
        })
        .collect()
}

fn shapes(r: &Run) -> (Vec<String>, Vec<String>, Vec<String>) {
    let t = |i: usize| r.texts.get(i).cloned().flatten().unwrap_or_default();
    (normal_shape(&t(0)), perf_shape(&t(1)), event_shape(&t(2)))
}

#[test]
fn targets_and_brief_from_global_config() {
    let s = Setup::new("cfg-global");
    s.write(
        ".gitconfig",
        &format!(
            "[trace2]\n\tnormalTarget = {}\n\tnormalBrief = true\n\tperfTarget = {}\n\tperfBrief = 1\n\teventTarget = {}\n\teventBrief = yes\n",
            s.p("n"),
            s.p("p"),
            s.p("e")
        ),
    );
    let files = ["n", "p", "e"];
    let (g, d) = s.both(&files);
    assert_eq!((g.code, d.code), (0, 0), "{g:?} {d:?}");
    for r in [&g, &d] {
        assert!(r.texts.iter().all(Option::is_some), "every target written: {r:?}");
    }
    let (gs, ds) = (shapes(&g), shapes(&d));
    assert_eq!(gs, ds);
    assert_eq!(
        gs.0,
        ["brief version", "brief start", "brief exit", "brief atexit"]
    );
    assert_eq!(gs.2[1], "event sid thread t_abs argv", "brief event start");

    // Without the brief keys: file/line/time everywhere, in both.
    s.write(
        ".gitconfig",
        &format!(
            "[trace2]\n\tnormalTarget = {}\n\tperfTarget = {}\n\teventTarget = {}\n",
            s.p("n"),
            s.p("p"),
            s.p("e")
        ),
    );
    let (g, d) = s.both(&files);
    let (gs, ds) = (shapes(&g), shapes(&d));
    assert_eq!(gs, ds);
    assert_eq!(gs.0, ["full version", "full start", "full exit", "full atexit"]);
    assert_eq!(gs.1[0], "full version");
    assert_eq!(gs.2[1], "event sid thread time file line t_abs argv");
}

#[test]
fn system_file_xdg_and_global_precedence() {
    let mut s = Setup::new("cfg-system");
    s.write(
        "sys.cfg",
        &format!(
            "[trace2]\n\teventTarget = {}\n\teventBrief = true\n",
            s.p("sys.ev")
        ),
    );
    let files = ["sys.ev", "xdg.ev", "home.ev", "other.ev"];
    // GIT_CONFIG_NOSYSTEM=1: nothing.
    s.env("GIT_CONFIG_SYSTEM", &s.p("sys.cfg"));
    let (g, d) = s.both(&files);
    assert!(
        g.texts.iter().all(Option::is_none) && d.texts.iter().all(Option::is_none),
        "{g:?} {d:?}"
    );
    s.unset("GIT_CONFIG_NOSYSTEM");
    let (g, d) = s.both(&files);
    assert!(g.texts[0].is_some() && d.texts[0].is_some(), "{g:?} {d:?}");
    assert_eq!(shapes(&g), shapes(&d));

    // XDG, then ~/.gitconfig: the later file wins; brief still from system.
    s.write(
        "xdg/git/config",
        &format!("[trace2]\n\teventTarget = {}\n", s.p("xdg.ev")),
    );
    s.env("XDG_CONFIG_HOME", &s.p("xdg"));
    let (g, d) = s.both(&files);
    let present = |r: &Run| r.texts.iter().map(Option::is_some).collect::<Vec<_>>();
    assert_eq!(present(&g), [false, true, false, false]);
    assert_eq!(present(&d), present(&g));
    s.write(
        ".gitconfig",
        &format!("[Trace2]\n\tEventTarget = {}\n", s.p("home.ev")),
    );
    let (g, d) = s.both(&files);
    assert_eq!(present(&g), [false, false, true, false]);
    assert_eq!(present(&d), present(&g));
    assert_eq!(shapes(&g), shapes(&d));
    assert_eq!(
        shapes(&g).2[0],
        "event sid thread time evt exe",
        "brief (from the system file) kept"
    );

    // GIT_CONFIG_GLOBAL replaces both global files.
    s.write(
        "other.cfg",
        &format!("[trace2]\n\teventTarget = {}\n", s.p("other.ev")),
    );
    s.env("GIT_CONFIG_GLOBAL", &s.p("other.cfg"));
    let (g, d) = s.both(&files);
    assert_eq!(present(&g), [false, false, false, true]);
    assert_eq!(present(&d), present(&g));
}

#[test]
fn includes_as_git_honours_them_at_startup() {
    let mut s = Setup::new("cfg-include");
    let (src, _bare) = make_repos(s.home.path());
    s.cwd = src;
    // include.path relative to the including file and with ~/; includeIf
    // gitdir (no repository at startup: ignored), onbranch (ignored),
    // hasconfig:remote.*.url (honoured).
    s.write(
        "inc/normal.cfg",
        &format!("[trace2]\n\tnormalTarget = {}\n\tnormalBrief = 1\n", s.p("n")),
    );
    s.write(
        "inc/perf.cfg",
        &format!("[trace2]\n\tperfTarget = {}\n", s.p("p")),
    );
    s.write(
        "inc/event.cfg",
        &format!("[trace2]\n\teventTarget = {}\n", s.p("e")),
    );
    s.write(
        "inc/gitdir.cfg",
        &format!("[trace2]\n\teventTarget = {}\n", s.p("gitdir.ev")),
    );
    s.write(
        "inc/branch.cfg",
        &format!("[trace2]\n\teventTarget = {}\n", s.p("branch.ev")),
    );
    s.write(
        ".gitconfig",
        "[include]\n\tpath = inc/normal.cfg\n\tpath = ~/inc/perf.cfg\n\tpath = missing.cfg\n\
         [remote \"origin\"]\n\turl = https://example.com/repo.git\n\
         [includeIf \"hasconfig:remote.*.url:https://example.com/**\"]\n\tpath = inc/event.cfg\n\
         [includeIf \"gitdir:**\"]\n\tpath = inc/gitdir.cfg\n\
         [includeIf \"onbranch:**\"]\n\tpath = inc/branch.cfg\n",
    );
    let files = ["n", "p", "e", "gitdir.ev", "branch.ev"];
    let (g, d) = s.both(&files);
    let present = |r: &Run| r.texts.iter().map(Option::is_some).collect::<Vec<_>>();
    assert_eq!(present(&g), [true, true, true, false, false], "{g:?}");
    assert_eq!(present(&d), present(&g), "{d:?}");
    assert_eq!(shapes(&g), shapes(&d));
    assert_eq!(shapes(&g).0[0], "brief version");

    // git's t0210 case: the real file moved behind an absolute include.
    s.write(
        "real.gitconfig",
        &format!("[trace2]\n\tnormalTarget = {}\n\tnormalBrief = 1\n", s.p("n")),
    );
    s.write(
        ".gitconfig",
        &format!("[include]\n\tpath = {}\n", s.p("real.gitconfig")),
    );
    let (g, d) = s.both(&["n"]);
    assert_eq!(
        normal_shape(g.texts[0].as_deref().unwrap()),
        normal_shape(d.texts[0].as_deref().unwrap())
    );
}

#[test]
fn environment_overrides_config() {
    let mut s = Setup::new("cfg-env");
    s.write(
        ".gitconfig",
        &format!(
            "[trace2]\n\teventTarget = {}\n\teventBrief = true\n\teventNesting = 1\n",
            s.p("cfg.ev")
        ),
    );
    let files = ["cfg.ev", "env.ev"];
    s.env("GIT_TRACE2_EVENT", &s.p("env.ev"));
    s.env("GIT_TRACE2_EVENT_BRIEF", "false");
    let (g, d) = s.both(&files);
    let present = |r: &Run| r.texts.iter().map(Option::is_some).collect::<Vec<_>>();
    assert_eq!(present(&g), [false, true]);
    assert_eq!(present(&d), [false, true]);
    assert_eq!(shapes_of(&g, 1), shapes_of(&d, 1));
    assert_eq!(
        shapes_of(&g, 1)[1],
        "event sid thread time file line t_abs argv",
        "not brief"
    );

    // An empty variable does not override (git: only non-empty values do).
    s.env("GIT_TRACE2_EVENT", "");
    s.env("GIT_TRACE2_EVENT_BRIEF", "");
    let (g, d) = s.both(&files);
    assert_eq!(present(&g), [true, false]);
    assert_eq!(present(&d), [true, false]);
    assert_eq!(shapes_of(&g, 0), shapes_of(&d, 0));
    assert_eq!(
        shapes_of(&g, 0)[1],
        "event sid thread t_abs argv",
        "brief from config"
    );
}

fn shapes_of(r: &Run, i: usize) -> Vec<String> {
    event_shape(r.texts[i].as_deref().unwrap_or(""))
}

#[test]
fn config_params_as_def_param_with_scopes() {
    let mut s = Setup::new("cfg-params");
    let (src, _bare) = make_repos(s.home.path());
    s.unset("GIT_CONFIG_NOSYSTEM");
    s.write("sys.cfg", "[cfg \"prop\"]\n\tsys = from-system\n");
    s.env("GIT_CONFIG_SYSTEM", &s.p("sys.cfg"));
    s.write("xdg/git/config", "[cfg.prop]\n\txdg = from-xdg\n");
    s.env("XDG_CONFIG_HOME", &s.p("xdg"));
    s.write("inc.cfg", "[cfg \"prop\"]\n\tincluded = via-include\n");
    s.write(
        ".gitconfig",
        &format!(
            "[trace2]\n\teventTarget = {}\n\tnormalTarget = {}\n\tperfTarget = {}\n\tperfBrief = 1\n\
             \tconfigParams = \"cfg.prop.*, remote.*.url ,CFG.PROP.MULTI\"\n\tenvVars = ENV_PROP_A,ENV_PROP_MISSING,ENV_PROP_EMPTY\n\
             [cfg \"prop\"]\n\tmulti = one\n\tother = x\n\tmulti = two\n[include]\n\tpath = inc.cfg\n\
             [includeIf \"gitdir:src/.git\"]\n\tpath = inc.cfg\n",
            s.p("e"),
            s.p("n"),
            s.p("p")
        ),
    );
    // Local (with a password to redact); git does not list config.worktree
    // entries at this point (no repository object yet), so neither may we.
    let cfg = |args: &[&str]| {
        let mut c = git(s.home.path());
        c.arg("-C").arg(&src).arg("config").args(args);
        assert!(run(&mut c).status.success(), "{args:?}");
    };
    cfg(&["cfg.prop.local", "from-local"]);
    cfg(&["remote.origin.url", "https://user:secret@example.com/r.git"]);
    cfg(&["extensions.worktreeConfig", "true"]);
    cfg(&["--worktree", "cfg.prop.wt", "from-worktree"]);
    // Command scope, both ways git passes it down.
    s.env("GIT_CONFIG_COUNT", "1");
    s.env("GIT_CONFIG_KEY_0", "Cfg.Prop.Count");
    s.env("GIT_CONFIG_VALUE_0", "from-count");
    s.env(
        "GIT_CONFIG_PARAMETERS",
        "'cfg.prop.param'='from '\\''params'\\''' 'cfg.prop.old=style'",
    );
    s.env("ENV_PROP_A", "a value");
    s.env("ENV_PROP_EMPTY", "");
    s.cwd = src.join("sub");
    std::fs::create_dir_all(&s.cwd).unwrap();

    let files = ["n", "p", "e"];
    let (g, d) = s.both(&files);
    assert_eq!((g.code, d.code), (0, 0), "{g:?} {d:?}");
    let (gs, ds) = (shapes(&g), shapes(&d));
    let defs = |v: &[String]| {
        v.iter()
            .filter(|l| l.starts_with("def_param"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(defs(&gs.2), defs(&ds.2), "event");
    assert_eq!(defs(&gs.0), defs(&ds.0), "normal");
    assert_eq!(defs(&gs.1), defs(&ds.1), "perf");
    assert_eq!(
        defs(&gs.2),
        [
            r#"def_param scope="system" param="cfg.prop.sys" value="from-system""#,
            r#"def_param scope="global" param="cfg.prop.xdg" value="from-xdg""#,
            r#"def_param scope="global" param="cfg.prop.multi" value="one""#,
            r#"def_param scope="global" param="cfg.prop.other" value="x""#,
            r#"def_param scope="global" param="cfg.prop.multi" value="two""#,
            r#"def_param scope="global" param="cfg.prop.included" value="via-include""#,
            r#"def_param scope="global" param="cfg.prop.included" value="via-include""#,
            r#"def_param scope="local" param="cfg.prop.local" value="from-local""#,
            r#"def_param scope="local" param="remote.origin.url" value="https://user:<REDACTED>@example.com/r.git""#,
            r#"def_param scope="command" param="cfg.Prop.count" value="from-count""#,
            r#"def_param scope="command" param="cfg.prop.param" value="from 'params'""#,
            r#"def_param scope="command" param="cfg.prop.old" value="style""#,
            r#"def_param scope="command" param="ENV_PROP_A" value="a value""#,
        ]
    );

    // GIT_TRACE2_CONFIG_PARAMS replaces trace2.configParams.
    s.env("GIT_TRACE2_CONFIG_PARAMS", "remote.*.url");
    s.env("GIT_TRACE2_ENV_VARS", "ENV_PROP_EMPTY");
    let (g, d) = s.both(&files);
    let (gs, ds) = (shapes(&g), shapes(&d));
    assert_eq!(defs(&gs.2), defs(&ds.2));
    assert_eq!(defs(&gs.2).len(), 1, "{gs:?}");
}

#[test]
fn bad_config_is_fatal_like_git() {
    let mut s = Setup::new("cfg-bad");
    s.write("inc.cfg", "[remote \"p\"]\n\turl = y\n");
    for text in [
        "[trace2]\n\teventTarget\n",
        "[trace2]\n\teventTarget = /dev/null\n[broken\n",
        "[core]\n\tx = \"unterminated\n",
        "[include]\n\tpath = .gitconfig\n",
        "[includeIf \"hasconfig:remote.*.url:**\"]\n\tpath = inc.cfg\n[remote \"o\"]\n\turl = x\n",
    ] {
        s.write(".gitconfig", text);
        let (g, d) = s.both(&[]);
        assert_eq!(g.code, 128, "{g:?}");
        assert_eq!(d.code, g.code, "{d:?}");
        assert_eq!(d.stderr, g.stderr, "for {text:?}");
    }
    s.write(".gitconfig", "");
    s.env("GIT_CONFIG_NOSYSTEM", "maybe");
    let (g, d) = s.both(&[]);
    assert_eq!((g.code, d.code), (128, 128));
    assert_eq!(d.stderr, g.stderr);
}

/// The parser against `git config --list -z` on tricky files: every
/// entry's key and value (or its absence) must be the same, and a file git
/// rejects must be rejected on the same line.
#[test]
fn parser_matches_git_config_list() {
    let home = TempDir::new("cfg-parse");
    let cases: &[&str] = &[
        "[a]\n\tb = plain\n",
        "[A \"Sub.Sect\"]\n\tKey = v\n[a.B]\nc=d\n",
        "[a]b=1\n[a]\n c = x ; comment\n d = \"x ; y\" # c\n e = \"  spaced  \"\n",
        "[a]\n\tf = a\\\n\tb\n\tg = \\t\\n\\b\\\\\\\"\n\th\n\ti =\n\tj = trailing   \n",
        "\u{feff}[a]\r\n\tk = crlf\r\n\tl = x\ry\r\n",
        "# only comment\n; another\n[a \"q\\\"uote\\\\\"]\n\tm-1 = 1\n",
        "[a]\n\tn = 1\n\tn = 2\n\to = 3\n\tn = 4\n",
        "[a]\n\tbad = \"open\n",
        "[a]\n\tx = 1\n[b\n",
        "[a]\n\t1x = 1\n",
        "[a]\n\tx = \\q\n",
        "[a \"unterminated]\n",
        "[]\n",
        "[a]\n\tx = 1\n\tnoeq value\n",
        "[a]\n\tlast = at-eof",
        "[a]\n\tcont = x\\",
    ];
    for (i, text) in cases.iter().enumerate() {
        if let Err(e) = compare_with_git(home.path(), &format!("c{i}.cfg"), text.as_bytes()) {
            panic!("case {i} {text:?}: {e}");
        }
    }
}

/// Parses `text` with git (`git config --list -z --file`) and with
/// `parse_str`; `Err` describes the first difference.
fn compare_with_git(dir: &std::path::Path, name: &str, text: &[u8]) -> Result<(), String> {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    let out = run(git(dir).args(["config", "--list", "-z", "--file"]).arg(&f));
    let ours = parse_str(text, &f, Scope::Unknown);
    if out.status.success() {
        let want: Vec<(String, Option<String>)> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let r = String::from_utf8_lossy(r);
                match r.split_once('\n') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (r.to_string(), None),
                }
            })
            .collect();
        let got: Vec<(String, Option<String>)> = ours
            .map_err(|e| format!("git accepts, we reject: {e}"))?
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect();
        if got != want {
            return Err(format!("entries differ: git {want:?}, we {got:?}"));
        }
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let Err(err) = ours else {
            return Err(format!("git rejects ({stderr}), we accept"));
        };
        let ours = err.to_string();
        let ours = ours.split(" (").next().unwrap_or_default();
        if !stderr.contains(&format!("fatal: {ours}\n")) {
            return Err(format!("git says {stderr:?}, we say {err}"));
        }
    }
    Ok(())
}

/// Random concatenations of config syntax fragments (valid and not),
/// parsed by git and by us: same entries, or an error on the same line.
#[test]
fn parser_matches_git_on_generated_files() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config as PtConfig, TestRunner};
    const FRAGMENTS: &[&str] = &[
        "[a]\n",
        "[A.b]\n",
        "[a \"S\\\"q\"]\n",
        "[a \"x\"",
        "[",
        "]",
        "\n",
        "\n",
        "\n",
        "\r\n",
        "\r",
        "\t",
        " ",
        "k",
        "K-1",
        " = ",
        "=",
        "v",
        "\"",
        "\\",
        "\\n",
        "\\t",
        "\\\n",
        ";",
        "#",
        "x y",
        "1",
        "_",
        "\u{feff}",
        "\u{e9}",
    ];
    let home = TempDir::new("cfg-prop");
    let strategy = prop::collection::vec(prop::sample::select(FRAGMENTS), 0..24).prop_map(|v| v.concat());
    let mut runner = TestRunner::new(PtConfig {
        cases: 256,
        failure_persistence: None,
        ..PtConfig::default()
    });
    runner
        .run(&strategy, |text| {
            // Start most files inside a section so that entries occur.
            let text = format!("[s]\n{text}");
            compare_with_git(home.path(), "gen.cfg", text.as_bytes()).map_err(TestCaseError::fail)
        })
        .unwrap();
}

/// `configParams` matching (git's wildmatch with `WM_CASEFOLD`) against
/// real git: random patterns over a fixed set of keys; the keys git lists
/// as `def_param` must be exactly those `key_matches` accepts.
#[test]
fn config_param_patterns_match_like_git() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config as PtConfig, TestRunner};
    const PIECES: &[&str] = &[
        "*",
        "*",
        "**",
        "?",
        ".",
        "a",
        "A",
        "b",
        "sec",
        "Sub",
        "x-1",
        "[a-c]",
        "[!a]",
        "[^.]",
        "[[:upper:]]",
        "[[:digit:]]",
        "[]]",
        "\\*",
        "\\",
        "/",
        "[",
        "[a-",
        "]",
    ];
    let home = TempDir::new("cfg-wild");
    let cfg = "[sec]\n\ta = 1\n\tB = 2\n\tx-1 = 3\n[Sec \"Sub/dir\"]\n\ta = 4\n[sec \"a*b?\"]\n\tc = 5\n\
               [sec \"[x]\"]\n\tb9 = 6\n[a.b]\n\tc = 7\n[sec \"\"]\n\tz = 8\n[sec \".\"]\n\ta = 9\n";
    std::fs::write(home.join(".gitconfig"), cfg).unwrap();
    let entries = parse_str(cfg.as_bytes(), &home.join(".gitconfig"), Scope::Global).unwrap();
    let strategy = prop::collection::vec(prop::sample::select(PIECES), 1..6).prop_map(|v| v.concat());
    let mut runner = TestRunner::new(PtConfig {
        cases: 160,
        failure_persistence: None,
        ..PtConfig::default()
    });
    runner
        .run(&strategy, |pattern| {
            let ev = home.join("w.ev");
            let _ = std::fs::remove_file(&ev);
            let mut c = git(home.path());
            c.current_dir(home.path())
                .arg("version")
                .env("GIT_TRACE2_EVENT", &ev)
                .env("GIT_TRACE2_CONFIG_PARAMS", &pattern);
            for v in CONFIG_VARS.iter().filter(|v| **v != "GIT_CONFIG_NOSYSTEM") {
                c.env_remove(v);
            }
            assert!(run(&mut c).status.success());
            let git_keys: Vec<String> = read(&ev)
                .lines()
                .filter_map(|l| {
                    let m = parse_object_line(l.as_bytes()).unwrap();
                    (m[0].value.as_str() == Some("def_param"))
                        .then(|| {
                            m.iter()
                                .find(|x| x.key == "param")
                                .and_then(|x| x.value.as_str().map(String::from))
                        })
                        .flatten()
                })
                .collect();
            let ours: Vec<String> = entries
                .iter()
                .filter(|e| trace2::gitconfig::key_matches(std::slice::from_ref(&pattern), &e.key))
                .map(|e| e.key.clone())
                .collect();
            prop_assert_eq!(ours, git_keys, "pattern {:?}", pattern);
            Ok(())
        })
        .unwrap();
}

/// A repository owned by someone else is not read (git's "dubious
/// ownership"), unless `safe.directory` lists it or `SUDO_UID` names its
/// owner — for git and for us alike.
#[test]
fn repository_ownership_and_safe_directory() {
    use std::os::unix::fs::MetadataExt;
    let mut s = Setup::new("cfg-owner");
    let (src, _bare) = make_repos(s.home.path());
    let mut c = git(s.home.path());
    c.arg("-C").arg(&src).args(["config", "cfg.prop.local", "yes"]);
    assert!(run(&mut c).status.success());
    s.write(
        ".gitconfig",
        &format!(
            "[trace2]\n\teventTarget = {}\n\tconfigParams = cfg.prop.*\n",
            s.p("e")
        ),
    );
    s.cwd = src.clone();
    let defs = |r: &Run| {
        event_shape(r.texts[0].as_deref().unwrap_or(""))
            .into_iter()
            .filter(|l| l.starts_with("def_param"))
            .collect::<Vec<_>>()
    };
    let local = [r#"def_param scope="local" param="cfg.prop.local" value="yes""#];
    let (g, d) = s.both(&["e"]);
    assert_eq!(defs(&g), local);
    assert_eq!(defs(&d), defs(&g));

    // Another owner: git ignores the repository (and so its config).
    let me = std::fs::metadata(&src).unwrap().uid();
    let other = if me == 0 { 4242 } else { me };
    let chown = |uid: u32| {
        let st = Command::new("chown")
            .arg("-R")
            .arg(uid.to_string())
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
    };
    if std::fs::metadata(&src).unwrap().uid() == 0 && crate_is_root() {
        chown(other);
        let (g, d) = s.both(&["e"]);
        assert_eq!(defs(&g), Vec::<String>::new(), "{g:?}");
        assert_eq!(defs(&d), defs(&g));

        // SUDO_UID naming the owner makes it root's own again.
        s.env("SUDO_UID", &other.to_string());
        let (g, d) = s.both(&["e"]);
        assert_eq!(defs(&g), local);
        assert_eq!(defs(&d), defs(&g));
        s.unset("SUDO_UID");

        // Listed in safe.directory (exact, then with /*).
        for entry in [
            src.display().to_string(),
            format!("{}/*", s.home.path().display()),
        ] {
            s.write(
                ".gitconfig",
                &format!(
                    "[trace2]\n\teventTarget = {}\n\tconfigParams = cfg.prop.*\n[safe]\n\tdirectory = {entry}\n",
                    s.p("e")
                ),
            );
            let (g, d) = s.both(&["e"]);
            assert_eq!(defs(&g), local, "{entry}");
            assert_eq!(defs(&d), defs(&g), "{entry}");
        }
        // An empty value resets the list.
        s.write(
            ".gitconfig",
            &format!(
                "[trace2]\n\teventTarget = {}\n\tconfigParams = cfg.prop.*\n[safe]\n\tdirectory = *\n\tdirectory =\n",
                s.p("e")
            ),
        );
        let (g, d) = s.both(&["e"]);
        assert_eq!(defs(&g), Vec::<String>::new());
        assert_eq!(defs(&d), defs(&g));
        chown(0);
    }
}

fn crate_is_root() -> bool {
    let out = run(Command::new("id").arg("-u"));
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}
