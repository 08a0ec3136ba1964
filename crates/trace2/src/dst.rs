//! Destinations: where a target's lines go, parsed and opened exactly as git
//! does (`tr2_dst.c`), and written with one `write(2)` per line.
//!
//! A destination knows nothing about formats. To a file it never retries a
//! short write (so lines from many processes appending to one file never
//! interleave inside a line) and it disables itself on the first write error.
//!
//! Unlike git, a destination never waits forever for a reader that does not
//! read (a socket, pipe, FIFO or terminal): a line waits at most
//! [`STALL_LIMIT`] for room, or until the moment set with
//! [`give_up_waiting_at`], whichever comes first; then the destination stalls:
//! that line and every later one are counted ([`Destination::undelivered`]),
//! not written. A line is written whole or not at all — except a line longer
//! than the socket's or pipe's free room, which can be cut when the wait ends
//! in the middle of it ([`Destination::cut`]).

use std::io;
use std::os::fd::{IntoRawFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sys::FdKind;

/// Longest a line waits for a reader to make room before the destination
/// stalls (git would wait forever).
pub const STALL_LIMIT: Duration = Duration::from_secs(10);

/// Longest single wait before the deadlines are looked at again.
const POLL_SLICE: Duration = Duration::from_millis(50);

/// The moment after which no destination waits for room any more.
static GIVE_UP_AT: Mutex<Option<Instant>> = Mutex::new(None);

/// From `at` on, every destination in this process stops waiting for a
/// reader: a line that cannot be written at once stalls its destination
/// (a program that was asked to exit uses this to end within a bound).
pub fn give_up_waiting_at(at: Instant) {
    let mut g = GIVE_UP_AT.lock().unwrap_or_else(|e| e.into_inner());
    *g = Some(g.map_or(at, |old| old.min(at)));
}

fn give_up_at() -> Option<Instant> {
    *GIVE_UP_AT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a destination stopped writing without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// The reader took nothing for [`STALL_LIMIT`].
    ReaderStalled,
    /// The moment set with [`give_up_waiting_at`] came.
    GaveUp,
}

/// Name of the sentinel file that marks a directory target as full.
pub const DISCARD_SENTINEL: &str = "git-trace2-discard";

/// Socket type forced by an `af_unix:` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    /// `af_unix:stream:`
    Stream,
    /// `af_unix:dgram:`
    Dgram,
}

/// A parsed target value (`GIT_TRACE2_EVENT=…`), before anything is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestinationSpec {
    /// Unset, empty, `0` or `false`.
    Off,
    /// `1`/`true` (fd 2, stderr) or a digit `2`–`9`: an already open descriptor.
    Fd(RawFd),
    /// An absolute path that is an existing directory: one file per process.
    Directory(PathBuf),
    /// Any other absolute path: opened for appending.
    File(PathBuf),
    /// `af_unix:[stream:|dgram:]<absolute path>`.
    AfUnix {
        /// Forced socket type; `None` tries stream, then datagram.
        kind: Option<SocketKind>,
        /// Socket path.
        path: PathBuf,
    },
    /// Anything else; git warns and disables the target.
    Invalid(String),
}

impl DestinationSpec {
    /// Parses a target value in git's order of tests. Checks the file system
    /// only to tell a directory from a file.
    pub fn parse(value: &str) -> DestinationSpec {
        if value.is_empty() || value == "0" || value.eq_ignore_ascii_case("false") {
            return DestinationSpec::Off;
        }
        if value == "1" || value.eq_ignore_ascii_case("true") {
            return DestinationSpec::Fd(2);
        }
        let b = value.as_bytes();
        if b.len() == 1 && (b'2'..=b'9').contains(&b[0]) {
            return DestinationSpec::Fd(RawFd::from(b[0] - b'0'));
        }
        if value.starts_with('/') {
            let p = PathBuf::from(value);
            return if p.is_dir() {
                DestinationSpec::Directory(p)
            } else {
                DestinationSpec::File(p)
            };
        }
        if let Some(rest) = value.strip_prefix("af_unix:") {
            let (kind, path) = if let Some(p) = rest.strip_prefix("stream:") {
                (Some(SocketKind::Stream), p)
            } else if let Some(p) = rest.strip_prefix("dgram:") {
                (Some(SocketKind::Dgram), p)
            } else {
                (None, rest)
            };
            // A relative path is rejected when opening (git warns about it
            // only with DST_DEBUG, unlike other unknown values).
            return DestinationSpec::AfUnix {
                kind,
                path: PathBuf::from(path),
            };
        }
        DestinationSpec::Invalid(value.to_string())
    }
}

/// Why a destination could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DstError {
    /// The value is not one git understands (git always warns about this).
    #[error("trace2: unknown value for '{var}': '{value}'")]
    Unknown {
        /// Variable name.
        var: String,
        /// Its value.
        value: String,
    },
    /// Opening or connecting failed.
    #[error("trace2: could not open '{}' for '{var}' tracing: {source}", path.display())]
    Open {
        /// Variable name.
        var: String,
        /// Path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The socket path is too long for `sun_path`.
    #[error("trace2: invalid AF_UNIX path '{}' for '{var}' tracing", path.display())]
    SocketPath {
        /// Variable name.
        var: String,
        /// Path.
        path: PathBuf,
    },
    /// The directory holds too many files; the sentinel exists (or could not
    /// be created) so this process writes nothing.
    #[error("trace2: not opening {var} trace file due to too many files in target directory {}", dir.display())]
    TooManyFiles {
        /// Variable name.
        var: String,
        /// Directory.
        dir: PathBuf,
    },
    /// The value was off.
    #[error("trace2: target '{var}' is off")]
    Off {
        /// Variable name.
        var: String,
    },
}

impl DstError {
    /// Whether git prints this warning even without `GIT_TRACE2_DST_DEBUG`.
    pub fn always_warn(&self) -> bool {
        matches!(self, DstError::Unknown { .. })
    }
}

/// How to open a [`DestinationSpec`].
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// File name for a directory target: the last SID component.
    pub file_name: String,
    /// `GIT_TRACE2_MAX_FILES`: 0 means no limit.
    pub max_files: usize,
    /// Name of the variable, for messages.
    pub var_name: String,
}

/// An open destination. Cheap to share between threads (`&Destination`).
#[derive(Debug)]
pub struct Destination {
    fd: RawFd,
    need_close: bool,
    disabled: AtomicBool,
    too_many_files: bool,
    description: String,
    kind: FdKind,
    /// The descriptor is ours and non-blocking (a FIFO or device opened here).
    nonblocking: bool,
    /// 0: writing; 1: [`Stall::ReaderStalled`]; 2: [`Stall::GaveUp`].
    stalled: std::sync::atomic::AtomicU8,
    undelivered: AtomicU64,
    cut: AtomicBool,
}

impl Destination {
    /// Opens `spec`. `Ok` means the target is on.
    pub fn open(spec: &DestinationSpec, opts: &OpenOptions) -> Result<Destination, DstError> {
        let var = opts.var_name.clone();
        match spec {
            DestinationSpec::Off => Err(DstError::Off { var }),
            DestinationSpec::Invalid(v) => Err(DstError::Unknown {
                var,
                value: v.clone(),
            }),
            DestinationSpec::Fd(fd) => {
                // git does not check the descriptor at open time; a write to a
                // closed one fails and disables the target. Checking here
                // gives the same observable result without a failed write.
                if !crate::sys::fd_is_open(*fd) {
                    return Err(DstError::Open {
                        var,
                        path: PathBuf::from(format!("fd {fd}")),
                        source: io::Error::from_raw_os_error(libc::EBADF),
                    });
                }
                Ok(Destination::from_parts(*fd, false, false, format!("fd {fd}")))
            }
            DestinationSpec::File(p) => {
                let fd = open_file(p).map_err(|source| DstError::Open {
                    var,
                    path: p.clone(),
                    source,
                })?;
                let mut d = Destination::from_parts(fd, true, false, p.display().to_string());
                d.nonblocking = true;
                Ok(d)
            }
            DestinationSpec::Directory(dir) => open_in_directory(dir, opts),
            DestinationSpec::AfUnix { kind, path } => open_af_unix(*kind, path, &var),
        }
    }

    /// Parses and opens a target value in one step.
    pub fn parse_and_open(value: &str, opts: &OpenOptions) -> Result<Destination, DstError> {
        Self::open(&DestinationSpec::parse(value), opts)
    }

    /// Wraps a descriptor. With `owned`, it is closed on drop.
    pub fn from_fd(fd: RawFd, owned: bool) -> Destination {
        Destination::from_parts(fd, owned, false, format!("fd {fd}"))
    }

    fn from_parts(fd: RawFd, need_close: bool, too_many_files: bool, description: String) -> Destination {
        Destination {
            fd,
            need_close,
            disabled: AtomicBool::new(false),
            too_many_files,
            description,
            kind: crate::sys::fd_kind(fd),
            nonblocking: false,
            stalled: std::sync::atomic::AtomicU8::new(0),
            undelivered: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        }
    }

    /// Lines not written because the destination stalled (its reader did not
    /// read in time).
    pub fn undelivered(&self) -> u64 {
        self.undelivered.load(Ordering::Relaxed)
    }

    /// Why the destination stopped writing, if it stalled.
    pub fn stall(&self) -> Option<Stall> {
        match self.stalled.load(Ordering::Relaxed) {
            1 => Some(Stall::ReaderStalled),
            2 => Some(Stall::GaveUp),
            _ => None,
        }
    }

    /// Whether the stall came in the middle of a line (written in part).
    pub fn cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }

    /// Whether this destination is the `git-trace2-discard` sentinel of a
    /// full directory (the event target then writes `too_many_files`).
    pub fn too_many_files(&self) -> bool {
        self.too_many_files
    }

    /// Whether a write has failed and the destination is now off.
    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Relaxed)
    }

    /// Where the lines go, for messages.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The raw descriptor.
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd
    }

    /// Writes `line` (LF appended if missing) with one `write(2)`. A short
    /// write is not retried; an error disables the destination.
    pub fn write_line(&self, line: &[u8]) -> io::Result<()> {
        if line.last() == Some(&b'\n') {
            self.write_raw(line)
        } else {
            let mut v = Vec::with_capacity(line.len() + 1);
            v.extend_from_slice(line);
            v.push(b'\n');
            self.write_raw(&v)
        }
    }

    /// Like [`Destination::write_line`], appending the LF to `buf` in place
    /// (no copy). `buf` keeps the LF afterwards.
    pub fn write_line_buf(&self, buf: &mut Vec<u8>) -> io::Result<()> {
        if buf.last() != Some(&b'\n') {
            buf.push(b'\n');
        }
        self.write_raw(buf)
    }

    fn write_raw(&self, bytes: &[u8]) -> io::Result<()> {
        if self.disabled.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "trace2 destination disabled",
            ));
        }
        if self.stalled.load(Ordering::Relaxed) != 0 {
            self.undelivered.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let res = match self.kind {
            FdKind::File => crate::sys::write_once(self.fd, bytes).map(|_| ()),
            _ => self.write_waiting(bytes),
        };
        if res.is_err() {
            self.disabled.store(true, Ordering::Relaxed);
        }
        res
    }

    /// Writes all of `bytes` to a socket, pipe or device, waiting for room up
    /// to [`STALL_LIMIT`] without progress (or the give-up moment); past that
    /// the destination stalls and the line is counted, not written.
    fn write_waiting(&self, bytes: &[u8]) -> io::Result<()> {
        let mut off = 0;
        let mut since = Instant::now();
        while off < bytes.len() {
            let rest = &bytes[off..];
            let r = match (self.kind, self.nonblocking) {
                (FdKind::Socket, _) => crate::sys::send_nowait(self.fd, rest),
                (_, true) => crate::sys::write_once(self.fd, rest),
                // A descriptor shared with others stays blocking: write once it
                // takes data (a line longer than its free room can still wait).
                _ if crate::sys::poll_out(self.fd, 0) => crate::sys::write_once(self.fd, rest),
                _ => Err(io::ErrorKind::WouldBlock.into()),
            };
            match r {
                Ok(n) if n > 0 => {
                    off += n;
                    since = Instant::now();
                    continue;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            let stall_at = since + STALL_LIMIT;
            let (limit, why) = match give_up_at() {
                Some(g) if g < stall_at => (g, 2),
                _ => (stall_at, 1),
            };
            if now >= limit {
                self.stalled.store(why, Ordering::Relaxed);
                self.undelivered.fetch_add(1, Ordering::Relaxed);
                if off > 0 {
                    self.cut.store(true, Ordering::Relaxed);
                }
                return Ok(());
            }
            let wait = (limit - now).min(POLL_SLICE);
            crate::sys::poll_out(self.fd, wait.as_millis().max(1) as i32);
        }
        Ok(())
    }
}

/// Opens a file destination for appending without blocking: a FIFO with no
/// reader yet is tried again until one comes, for up to [`STALL_LIMIT`] (or
/// the give-up moment).
fn open_file(p: &Path) -> io::Result<RawFd> {
    let start = Instant::now();
    loop {
        match crate::sys::open_raw(
            p,
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NONBLOCK,
        ) {
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                let now = Instant::now();
                let limit = give_up_at().map_or(start + STALL_LIMIT, |g| g.min(start + STALL_LIMIT));
                if now >= limit {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("a FIFO that no reader opened within {} s", STALL_LIMIT.as_secs()),
                    ));
                }
                std::thread::sleep(POLL_SLICE.min(limit - now));
            }
            r => return r,
        }
    }
}

impl Drop for Destination {
    fn drop(&mut self) {
        if self.need_close {
            crate::sys::close(self.fd);
        }
    }
}

fn open_in_directory(dir: &Path, opts: &OpenOptions) -> Result<Destination, DstError> {
    let var = opts.var_name.clone();
    if opts.max_files > 0 {
        let sentinel = dir.join(DISCARD_SENTINEL);
        if sentinel.exists() {
            return Err(DstError::TooManyFiles {
                var,
                dir: dir.to_path_buf(),
            });
        }
        // readdir counts `.` and `..`, which std's read_dir skips.
        let mut count = 2usize;
        if let Ok(rd) = std::fs::read_dir(dir) {
            for _ in rd {
                if count >= opts.max_files {
                    break;
                }
                count += 1;
            }
        }
        if count >= opts.max_files {
            let fd = crate::sys::open_raw(&sentinel, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL).map_err(
                |_| DstError::TooManyFiles {
                    var: var.clone(),
                    dir: dir.to_path_buf(),
                },
            )?;
            return Ok(Destination::from_parts(
                fd,
                true,
                true,
                sentinel.display().to_string(),
            ));
        }
    }
    let base = if opts.file_name.is_empty() {
        "trace2".to_string()
    } else {
        opts.file_name.clone()
    };
    let mut last_err = None;
    for attempt in 0..10 {
        let name = if attempt == 0 {
            base.clone()
        } else {
            format!("{base}.{attempt}")
        };
        let path = dir.join(&name);
        match crate::sys::open_raw(&path, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL) {
            Ok(fd) => {
                return Ok(Destination::from_parts(
                    fd,
                    true,
                    false,
                    path.display().to_string(),
                ));
            }
            Err(e) => last_err = Some(e),
        }
    }
    Err(DstError::Open {
        var,
        path: dir.join(&base),
        source: last_err.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST)),
    })
}

fn open_af_unix(kind: Option<SocketKind>, path: &Path, var: &str) -> Result<Destination, DstError> {
    // sun_path is 108 bytes including the NUL.
    if !path.is_absolute() || path.as_os_str().len() >= 108 {
        return Err(DstError::SocketPath {
            var: var.to_string(),
            path: path.to_path_buf(),
        });
    }
    let err = |source| DstError::Open {
        var: var.to_string(),
        path: path.to_path_buf(),
        source,
    };
    let desc = format!("af_unix:{}", path.display());
    let stream = || UnixStream::connect(path).map(|s| s.into_raw_fd());
    let dgram = || {
        let s = UnixDatagram::unbound()?;
        s.connect(path)?;
        Ok::<_, io::Error>(s.into_raw_fd())
    };
    let fd = match kind {
        Some(SocketKind::Stream) => stream().map_err(err)?,
        Some(SocketKind::Dgram) => dgram().map_err(err)?,
        None => match stream() {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => dgram().map_err(err)?,
            Err(e) => return Err(err(e)),
        },
    };
    crate::sys::clear_cloexec(fd);
    Ok(Destination::from_parts(fd, true, false, desc))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_reader_that_does_not_read_stalls_the_destination_with_whole_lines() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let (mine, mut theirs) = UnixStream::pair().unwrap();
        let d = Destination::from_fd(mine.as_raw_fd(), false);
        // Waits end at once from here on (this test binary writes no other socket or pipe).
        give_up_waiting_at(Instant::now());
        let line = format!("{{\"event\":\"x\",\"pad\":\"{}\"}}", "p".repeat(200));
        let mut written = 0;
        while d.stall().is_none() {
            d.write_line(line.as_bytes()).unwrap();
            written += 1;
            assert!(written < 1_000_000, "a socket buffer holds far less");
        }
        for _ in 0..10 {
            d.write_line(line.as_bytes()).unwrap();
        }
        assert_eq!(d.stall(), Some(Stall::GaveUp));
        assert_eq!(d.undelivered(), 11);
        assert!(!d.cut());
        drop(d);
        drop(mine);
        let mut got = String::new();
        theirs.read_to_string(&mut got).unwrap();
        assert_eq!(got.lines().count(), written - 1, "every line written is whole");
        assert!(got.lines().all(|l| l == line));
    }

    #[test]
    fn parse_values_like_git() {
        use DestinationSpec as D;
        assert_eq!(D::parse(""), D::Off);
        assert_eq!(D::parse("0"), D::Off);
        assert_eq!(D::parse("FaLsE"), D::Off);
        assert_eq!(D::parse("1"), D::Fd(2));
        assert_eq!(D::parse("TRUE"), D::Fd(2));
        assert_eq!(D::parse("2"), D::Fd(2));
        assert_eq!(D::parse("9"), D::Fd(9));
        assert_eq!(D::parse("10"), D::Invalid("10".into()));
        assert_eq!(D::parse("yes"), D::Invalid("yes".into()));
        assert_eq!(D::parse("rel/path"), D::Invalid("rel/path".into()));
        assert_eq!(D::parse("/"), D::Directory("/".into()));
        assert_eq!(D::parse("/nonexistent/x"), D::File("/nonexistent/x".into()));
        assert_eq!(
            D::parse("af_unix:/s"),
            D::AfUnix {
                kind: None,
                path: "/s".into()
            }
        );
        assert_eq!(
            D::parse("af_unix:stream:/s"),
            D::AfUnix {
                kind: Some(SocketKind::Stream),
                path: "/s".into()
            }
        );
        assert_eq!(
            D::parse("af_unix:dgram:/s"),
            D::AfUnix {
                kind: Some(SocketKind::Dgram),
                path: "/s".into()
            }
        );
        assert_eq!(
            D::parse("af_unix:s"),
            D::AfUnix {
                kind: None,
                path: "s".into()
            }
        );
    }
}
