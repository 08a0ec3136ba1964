//! The terminal, read once for every output: whether a stream is a terminal, colour
//! (`NO_COLOR`, `TERM=dumb`, `--no-color`), the width (`COLUMNS`), and writing a person's text to
//! stderr. Sinks and reports never look at these themselves: they are given the decisions.

use std::io::{IsTerminal, Write};

/// A standard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
}

/// Can a status line be redrawn in place on stderr?
pub fn stderr_is_live_terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Colour for text on `stream`: allowed, the stream a terminal, `NO_COLOR` unset or empty, `TERM`
/// not `dumb`.
pub fn color_for(stream: Stream, allowed: bool) -> bool {
    let tty = match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    };
    allowed
        && tty
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// The width text is laid out for: `COLUMNS` when it is a number, else 120.
pub fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&w: &usize| w > 0)
        .unwrap_or(120)
}

/// Colour and width for text on stderr.
pub fn stderr_style(allowed: bool) -> (bool, usize) {
    (color_for(Stream::Stderr, allowed), width())
}

/// Writes a person's text (the tree, the summary) to stderr. A closed or full stderr loses the
/// text and nothing else: there is nowhere left to report it.
pub fn to_stderr(text: &[u8]) {
    if std::io::stderr().lock().write_all(text).is_err() {}
}

/// Whether stdout is a pipe whose reader has gone away (`watch | head` after `head` exits):
/// asked without writing, so an idle `watch` notices too. False when it cannot tell.
pub fn stdout_reader_gone() -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let out = std::io::stdout();
    let mut fds = [PollFd::new(out.as_fd(), PollFlags::empty())];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(n) if n > 0 => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP)),
        _ => false,
    }
}
