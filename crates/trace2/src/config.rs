//! Settings for the instrumentation API, read from `<PREFIX>_TRACE2*`
//! environment variables (git's names with the application's prefix) or set
//! in code. Reading settings never opens anything.

use crate::format::{FormatOptions, TargetKind};
/// git's boolean syntax lives with git's configuration reader; settings read from the
/// environment use the same (this module depends on `gitconfig`, never the other way).
pub use crate::gitconfig::parse_maybe_bool;

/// Everything [`crate::init()`] needs. Build it with [`Config::from_env`] or
/// [`Config::new`] and the setters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Variable prefix: `GIT` gives `GIT_TRACE2_EVENT`, `MYAPP` gives `MYAPP_TRACE2_EVENT`.
    pub prefix: String,
    /// Target values (see [`crate::dst::DestinationSpec::parse`]) for normal, perf, event.
    pub targets: [Option<String>; 3],
    /// Brief mode per target (normal, perf, event).
    pub brief: [bool; 3],
    /// `_TRACE2_EVENT_NESTING` (default 2).
    pub event_nesting: u32,
    /// `_TRACE2_MAX_FILES` (0: no limit).
    pub max_files: usize,
    /// `_TRACE2_DST_DEBUG`: print why a destination did not open.
    pub dst_debug: bool,
    /// `_TRACE2_REDACT` (default on): redact URL passwords.
    pub redact: bool,
    /// `_TRACE2_PARENT_SID`: the SID to nest under (falls back to
    /// `GIT_TRACE2_PARENT_SID` for other prefixes).
    pub parent_sid: Option<String>,
    /// `_TRACE2_PARENT_NAME`: the parent's command hierarchy.
    pub parent_name: Option<String>,
    /// `_TRACE2_ENV_VARS`: variables reported as `def_param` at the first `cmd_name`.
    pub env_vars: Vec<String>,
    /// `_TRACE2_CONFIG_PARAMS`: wildmatch patterns (case-insensitive) over
    /// git config keys; at the first `cmd_name` every matching entry of
    /// git's configuration (system, global, the current repository's local
    /// and worktree files, the command line) is reported as `def_param`.
    pub config_params: Vec<String>,
    /// Version string written in `version.exe`.
    pub app_version: String,
    /// Emit `version`, `start` and `cmd_ancestry` at init (default on).
    pub emit_start: bool,
    /// The argv for `start`; `None` uses the process's arguments.
    pub argv: Option<Vec<String>>,
}

fn env(name: &str) -> Option<String> {
    std::env::var_os(name)
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|v| !v.is_empty())
}

/// C `atoi`: leading whitespace, optional sign, digits; 0 if none.
pub fn atoi(v: &str) -> i64 {
    let t = v.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            break;
        }
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg { -n } else { n }
}

impl Config {
    /// All targets off, defaults as git's.
    pub fn new(prefix: &str) -> Config {
        Config {
            prefix: prefix.to_string(),
            targets: [None, None, None],
            brief: [false; 3],
            event_nesting: 2,
            max_files: 0,
            dst_debug: false,
            redact: true,
            parent_sid: None,
            parent_name: None,
            env_vars: Vec::new(),
            config_params: Vec::new(),
            app_version: env!("CARGO_PKG_VERSION").to_string(),
            emit_start: true,
            argv: None,
        }
    }

    /// Reads `<prefix>_TRACE2`, `_TRACE2_PERF`, `_TRACE2_EVENT`, `_TRACE2_BRIEF`,
    /// `_TRACE2_PERF_BRIEF`, `_TRACE2_EVENT_BRIEF`, `_TRACE2_EVENT_NESTING`,
    /// `_TRACE2_MAX_FILES`, `_TRACE2_DST_DEBUG`, `_TRACE2_REDACT`,
    /// `_TRACE2_PARENT_SID`, `_TRACE2_PARENT_NAME`, `_TRACE2_ENV_VARS`,
    /// `_TRACE2_CONFIG_PARAMS`. Add git's config files with
    /// [`Config::with_git_config`].
    pub fn from_env(prefix: &str) -> Config {
        let mut c = Config::new(prefix);
        let p = |s: &str| format!("{prefix}{s}");
        for (i, k) in TargetKind::ALL.iter().enumerate() {
            c.targets[i] = env(&p(k.env_suffix()));
        }
        for (i, s) in ["_TRACE2_BRIEF", "_TRACE2_PERF_BRIEF", "_TRACE2_EVENT_BRIEF"]
            .iter()
            .enumerate()
        {
            if let Some(b) = env(&p(s)).and_then(|v| parse_maybe_bool(&v)) {
                c.brief[i] = b;
            }
        }
        if let Some(n) = env(&p("_TRACE2_EVENT_NESTING")).map(|v| atoi(&v))
            && n > 0
        {
            c.event_nesting = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(n) = env(&p("_TRACE2_MAX_FILES")).map(|v| atoi(&v))
            && n >= 0
        {
            c.max_files = usize::try_from(n).unwrap_or(usize::MAX);
        }
        c.dst_debug = env(&p("_TRACE2_DST_DEBUG")).is_some_and(|v| atoi(&v) > 0);
        if let Some(v) = env(&p("_TRACE2_REDACT")) {
            c.redact = parse_maybe_bool(&v).unwrap_or(true);
        }
        c.parent_sid = env(&p("_TRACE2_PARENT_SID")).or_else(|| env("GIT_TRACE2_PARENT_SID"));
        c.parent_name = env(&p("_TRACE2_PARENT_NAME")).or_else(|| env("GIT_TRACE2_PARENT_NAME"));
        if let Some(v) = env(&p("_TRACE2_ENV_VARS")) {
            c.env_vars = crate::gitconfig::split_list(&v);
        }
        if let Some(v) = env(&p("_TRACE2_CONFIG_PARAMS")) {
            c.config_params = crate::gitconfig::split_list(&v);
        }
        c
    }

    /// Adds the `trace2.*` settings of git's system and global config files
    /// (with `include.path`/`includeIf`), read as git reads them when its
    /// tracing starts (see [`crate::gitconfig`]): `trace2.normalTarget`,
    /// `normalBrief`, `perfTarget`, `perfBrief`, `eventTarget`,
    /// `eventBrief`, `eventNesting`, `configParams`, `envVars`, `maxFiles`,
    /// `destinationDebug`.
    ///
    /// As in git, a non-empty environment variable wins over the config
    /// key: each setting whose `<prefix>_TRACE2…` variable is set and
    /// non-empty keeps the value this `Config` already has; the others take
    /// the config's value when there is one. The config keys are git's
    /// (`trace2.*`) whatever the prefix, so a program with prefix `MYAPP`
    /// that calls this traces whenever git does. Call it on
    /// [`Config::from_env`]; values set in code for settings without an
    /// environment variable are replaced by the config's.
    ///
    /// Errors are git's fatal ones (a syntax error, a `trace2.*` key
    /// without a value, includes nested too deep), naming the file and the
    /// line; [`crate::GitConfigError::die`] reports one and exits as git does.
    pub fn with_git_config(self) -> Result<Config, crate::gitconfig::GitConfigError> {
        let sources = crate::gitconfig::Sources::very_early()?;
        self.with_git_config_from(&sources, &|name| env(name))
    }

    /// [`Config::with_git_config`] from the files of `sources`, with `getenv`
    /// deciding which settings the environment already holds (it should
    /// return only non-empty values).
    pub fn with_git_config_from(
        mut self,
        sources: &crate::gitconfig::Sources,
        getenv: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, crate::gitconfig::GitConfigError> {
        // git's tr2_sysenv_settings, in its order.
        const KEYS: [(&str, &str); 11] = [
            ("trace2.configparams", "_TRACE2_CONFIG_PARAMS"),
            ("trace2.envvars", "_TRACE2_ENV_VARS"),
            ("trace2.destinationdebug", "_TRACE2_DST_DEBUG"),
            ("trace2.normaltarget", "_TRACE2"),
            ("trace2.normalbrief", "_TRACE2_BRIEF"),
            ("trace2.eventtarget", "_TRACE2_EVENT"),
            ("trace2.eventbrief", "_TRACE2_EVENT_BRIEF"),
            ("trace2.eventnesting", "_TRACE2_EVENT_NESTING"),
            ("trace2.perftarget", "_TRACE2_PERF"),
            ("trace2.perfbrief", "_TRACE2_PERF_BRIEF"),
            ("trace2.maxfiles", "_TRACE2_MAX_FILES"),
        ];
        let mut values: [Option<String>; 11] = Default::default();
        crate::gitconfig::read_with(sources, &mut |e| {
            if let Some(i) = KEYS.iter().position(|(k, _)| *k == e.key) {
                match &e.value {
                    None => return Err(format!("missing value for '{}'", e.key)),
                    Some(v) => values[i] = Some(v.clone()),
                }
            }
            Ok(())
        })?;
        let prefix = self.prefix.clone();
        for (i, (_, suffix)) in KEYS.iter().enumerate() {
            if getenv(&format!("{prefix}{suffix}")).is_some() {
                continue;
            }
            let Some(v) = values[i].take() else { continue };
            match i {
                0 => self.config_params = crate::gitconfig::split_list(&v),
                1 => self.env_vars = crate::gitconfig::split_list(&v),
                2 => self.dst_debug = atoi(&v) > 0,
                3 | 5 | 8 => {
                    let t = match i {
                        3 => 0,
                        8 => 1,
                        _ => 2,
                    };
                    self.targets[t] = Some(v).filter(|v| !v.is_empty());
                }
                4 | 6 | 9 => {
                    let t = match i {
                        4 => 0,
                        9 => 1,
                        _ => 2,
                    };
                    if let Some(b) = parse_maybe_bool(&v) {
                        self.brief[t] = b;
                    }
                }
                7 => {
                    let n = atoi(&v);
                    if n > 0 {
                        self.event_nesting = u32::try_from(n).unwrap_or(u32::MAX);
                    }
                }
                _ => {
                    let n = atoi(&v);
                    if n >= 0 {
                        self.max_files = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                }
            }
        }
        Ok(self)
    }

    /// Sets the `configParams` patterns (git config keys reported as
    /// `def_param` at the first `cmd_name`).
    pub fn config_params<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Config {
        self.config_params = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Sets a target's value (`"/tmp/x"`, `"1"`, `"af_unix:/s"`, …).
    pub fn target(mut self, kind: TargetKind, value: impl Into<String>) -> Config {
        self.targets[Self::index(kind)] = Some(value.into());
        self
    }

    /// Sets brief mode for a target.
    pub fn brief(mut self, kind: TargetKind, on: bool) -> Config {
        self.brief[Self::index(kind)] = on;
        self
    }

    /// Sets the event target's nesting limit.
    pub fn event_nesting(mut self, n: u32) -> Config {
        self.event_nesting = n.max(1);
        self
    }

    /// Turns URL-password redaction on or off.
    pub fn redact(mut self, on: bool) -> Config {
        self.redact = on;
        self
    }

    /// Sets the version string written in `version.exe`.
    pub fn app_version(mut self, v: impl Into<String>) -> Config {
        self.app_version = v.into();
        self
    }

    /// Sets the argv written in `start`.
    pub fn argv<S: Into<String>>(mut self, argv: impl IntoIterator<Item = S>) -> Config {
        self.argv = Some(argv.into_iter().map(Into::into).collect());
        self
    }

    /// Whether to emit `version`/`start`/`cmd_ancestry` at init.
    pub fn emit_start(mut self, on: bool) -> Config {
        self.emit_start = on;
        self
    }

    /// The format options for one target.
    pub fn format_options(&self, kind: TargetKind) -> FormatOptions {
        FormatOptions {
            brief: self.brief[Self::index(kind)],
            event_nesting: self.event_nesting,
            utc_offset: None,
        }
    }

    fn index(kind: TargetKind) -> usize {
        match kind {
            TargetKind::Normal => 0,
            TargetKind::Perf => 1,
            TargetKind::Event => 2,
        }
    }

    /// The variable name of a target under this prefix.
    pub fn var_name(&self, kind: TargetKind) -> String {
        format!("{}{}", self.prefix, kind.env_suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_config_keys_under_another_prefix() {
        let dir = std::env::temp_dir().join(format!("trace2-cfg-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("global");
        std::fs::write(
            &file,
            "[trace2]\n\teventTarget = /tmp/from-config\n\tperfTarget = 2\n\tperfBrief = on\n\
             \teventNesting = 5\n\tmaxFiles = 7\n\tconfigParams = core.*, app.*\n\tenvVars = A,B\n\
             \tdestinationDebug = 1\n\tnormalBrief = bogus\n",
        )
        .unwrap();
        let sources = crate::gitconfig::Sources {
            global: vec![file.clone()],
            ..Default::default()
        };
        // MYAPP_TRACE2_EVENT is set: it wins over trace2.eventTarget; GIT_
        // variables mean nothing to a MYAPP program.
        let getenv = |name: &str| match name {
            "MYAPP_TRACE2_EVENT" | "GIT_TRACE2_PERF" => Some("/tmp/from-env".to_string()),
            _ => None,
        };
        let c = Config::new("MYAPP")
            .target(TargetKind::Event, "/tmp/from-env")
            .with_git_config_from(&sources, &getenv)
            .unwrap();
        assert_eq!(c.targets[2].as_deref(), Some("/tmp/from-env"));
        assert_eq!(c.targets[1].as_deref(), Some("2"));
        assert_eq!(c.targets[0], None);
        assert_eq!(c.brief, [false, true, false], "an invalid brief value is ignored");
        assert_eq!((c.event_nesting, c.max_files, c.dst_debug), (5, 7, true));
        assert_eq!(c.config_params, ["core.*", "app.*"]);
        assert_eq!(c.env_vars, ["A", "B"]);

        std::fs::write(&file, "[trace2]\n\tperfTarget\n").unwrap();
        let err = Config::new("MYAPP")
            .with_git_config_from(&sources, &getenv)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "bad config line 2 in file {} (missing value for 'trace2.perftarget')",
                file.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn c_like_parsing() {
        assert_eq!(atoi(" 12x"), 12);
        assert_eq!(atoi("-3"), -3);
        assert_eq!(atoi("true"), 0);
        assert_eq!(parse_maybe_bool("On"), Some(true));
        assert_eq!(parse_maybe_bool("0"), Some(false));
        assert_eq!(parse_maybe_bool("maybe"), None);
    }
}
