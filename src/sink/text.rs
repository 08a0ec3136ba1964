//! Text for people, shared by the human lines and the tree: durations, exit statuses, signal
//! names, and the styles that mark them (a process's name, argv quoted the way git's trace2
//! quotes it included, is [`crate::model::naming`]'s).
//!
//! Pure functions of their arguments. Whether colour is wanted is decided by the wiring
//! ([`crate::output`]) and comes in as [`Paint::on`]; nothing here looks at a terminal or the
//! environment, and nothing here writes.

use anstyle::{AnsiColor, Style};

use crate::model::event::ExitStatus;

/// Styles by meaning, as ANSI escapes (via `anstyle`) or not at all.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    /// Emit escape codes.
    pub on: bool,
}

const FAILURE: Style = AnsiColor::Red.on_default();
const SUCCESS: Style = AnsiColor::Green.on_default();
const BACKGROUND: Style = AnsiColor::Yellow.on_default();
const LOSS: Style = AnsiColor::Magenta.on_default().bold();
const SECONDARY: Style = Style::new().dimmed();
/// A handled non-zero exit (a probe, `test`, `grep -q`): muted, never the failure's red.
const HANDLED: Style = AnsiColor::BrightBlack.on_default();
const EMPHASIS: Style = Style::new().bold();

impl Paint {
    fn paint(&self, style: Style, s: &str) -> String {
        if self.on {
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }
    /// A failure (non-zero exit, killed).
    pub fn failure(&self, s: &str) -> String {
        self.paint(FAILURE, s)
    }
    /// A handled non-zero exit: not part of the command's failure
    /// ([`crate::report::summary::failures`]).
    pub fn handled(&self, s: &str) -> String {
        self.paint(HANDLED, s)
    }
    /// Success.
    pub fn success(&self, s: &str) -> String {
        self.paint(SUCCESS, s)
    }
    /// A process left running.
    pub fn background(&self, s: &str) -> String {
        self.paint(BACKGROUND, s)
    }
    /// Lost events, rejected datagrams: the output may be incomplete.
    pub fn loss(&self, s: &str) -> String {
        self.paint(LOSS, s)
    }
    /// Secondary text (tree lines, durations).
    pub fn secondary(&self, s: &str) -> String {
        self.paint(SECONDARY, s)
    }
    /// Emphasis (pids, the summary's name).
    pub fn emphasis(&self, s: &str) -> String {
        self.paint(EMPHASIS, s)
    }
}

/// Quoting argv is part of naming a process: [`crate::model::naming`] does it, for every output.
pub use crate::model::naming::quote_argv;

/// `1.23s`, `45.6ms`, `789µs`, `2m05s`.
pub fn fmt_duration(ns: u64) -> String {
    if ns >= 60_000_000_000 {
        format!("{}m{:02}s", ns / 60_000_000_000, (ns / 1_000_000_000) % 60)
    } else if ns >= 1_000_000_000 {
        format!("{:.2}s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.1}ms", ns as f64 / 1e6)
    } else {
        format!("{}µs", ns / 1000)
    }
}

/// A memory size given in KiB, in the largest binary unit that keeps it ≥ 1: `812 KiB`,
/// `45.6 MiB`, `1.23 GiB` (three significant figures from MiB up).
pub fn fmt_kib(kib: u64) -> String {
    let sig3 = |v: f64, unit: &str| {
        if v >= 100.0 {
            format!("{v:.0} {unit}")
        } else if v >= 10.0 {
            format!("{v:.1} {unit}")
        } else {
            format!("{v:.2} {unit}")
        }
    };
    if kib >= 1 << 20 {
        sig3(kib as f64 / (1u64 << 20) as f64, "GiB")
    } else if kib >= 1 << 10 {
        sig3(kib as f64 / 1024.0, "MiB")
    } else {
        format!("{kib} KiB")
    }
}

/// A byte count, as [`fmt_kib`] (below a KiB: `512 B`).
pub fn fmt_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        fmt_kib(bytes / 1024)
    }
}

/// `exit 0` (success), `exit 3` / `killed by SIGTERM (core dumped)` (failure), `exit lost` (loss).
pub fn exit_text(status: Option<ExitStatus>, p: Paint) -> String {
    match status {
        Some(ExitStatus::Code(0)) => p.success("exit 0"),
        Some(ExitStatus::Code(c)) => p.failure(&format!("exit {c}")),
        Some(ExitStatus::Signal { signal, core }) => p.failure(&format!(
            "killed by {}{}",
            signal_name(signal),
            if core { " (core dumped)" } else { "" }
        )),
        None => p.loss("exit lost"),
    }
}

/// [`exit_text`] for a process whose non-zero exit was handled (`handled`): the same words,
/// muted instead of red.
pub fn exit_text_handled(status: Option<ExitStatus>, handled: bool, p: Paint) -> String {
    match status {
        Some(s) if handled && !s.success() => p.handled(&exit_text(status, Paint { on: false })),
        _ => exit_text(status, p),
    }
}

/// `SIGTERM` for 15, `signal 64` when unnamed.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match NAMES.get(sig as usize) {
        Some(n) if sig > 0 => (*n).to_string(),
        _ => format!("signal {sig}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_quoted_like_git_and_redacted() {
        let argv: Vec<String> = ["sh", "-c", "echo it's", "", "a!b", "50%", "https://u:pw@h/x"]
            .map(String::from)
            .into();
        assert_eq!(
            quote_argv(&argv, true),
            r"sh -c 'echo it'\''s' '' 'a'\!'b' '50%' 'https://u:<REDACTED>@h/x'"
        );
        assert!(quote_argv(&argv, false).ends_with(" https://u:pw@h/x"));
    }

    #[test]
    fn memory_sizes_in_binary_units() {
        assert_eq!(fmt_kib(0), "0 KiB");
        assert_eq!(fmt_kib(1023), "1023 KiB");
        assert_eq!(fmt_kib(1024), "1.00 MiB");
        assert_eq!(fmt_kib(46_694), "45.6 MiB");
        assert_eq!(fmt_kib(192_712), "188 MiB");
        assert_eq!(fmt_kib(1_289_748), "1.23 GiB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(3 << 20), "3.00 MiB");
    }

    #[test]
    fn durations_and_statuses() {
        assert_eq!(fmt_duration(789_000), "789µs");
        assert_eq!(fmt_duration(45_600_000), "45.6ms");
        assert_eq!(fmt_duration(1_234_000_000), "1.23s");
        assert_eq!(fmt_duration(125_000_000_000), "2m05s");
        let plain = Paint { on: false };
        assert_eq!(exit_text(Some(ExitStatus::Code(3)), plain), "exit 3");
        assert_eq!(
            exit_text(
                Some(ExitStatus::Signal {
                    signal: 11,
                    core: true
                }),
                plain
            ),
            "killed by SIGSEGV (core dumped)"
        );
        assert_eq!(exit_text(None, plain), "exit lost");
        assert_eq!(signal_name(64), "signal 64");
        assert_eq!(signal_name(0), "signal 0");
    }

    #[test]
    fn styles_are_ansi_escapes_only_when_on() {
        let on = Paint { on: true };
        assert_eq!(on.failure("x"), "\x1b[31mx\x1b[0m");
        assert_eq!(on.handled("x"), "\x1b[90mx\x1b[0m");
        let code1 = Some(ExitStatus::Code(1));
        assert_eq!(exit_text_handled(code1, true, on), "\x1b[90mexit 1\x1b[0m");
        assert_eq!(exit_text_handled(code1, false, on), "\x1b[31mexit 1\x1b[0m");
        let ok = Some(ExitStatus::Code(0));
        assert_eq!(exit_text_handled(ok, true, on), exit_text(ok, on));
        assert_eq!(on.loss("x"), "\x1b[1m\x1b[35mx\x1b[0m");
        assert_eq!(on.secondary("x"), "\x1b[2mx\x1b[0m");
        assert_eq!(Paint { on: false }.loss("x"), "x");
    }
}
