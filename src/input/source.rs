//! Opening an input once, as a file: a path, `-` (stdin), `/dev/stdin`, a pipe, a FIFO or a
//! process substitution (`<(…)`) all read the same bytes the same way.
//!
//! Each input is opened exactly once and its format is told from a buffered prefix of that one
//! reader ([`LineReader::first_line`]); a stream is never opened again (the bytes would be
//! gone). Only a regular file may be opened again by path (the Trace2 merge opens its files
//! when it reaches them, to stay under the descriptor limit); a regular file's bytes are the
//! same the second time.
//!
//! Inputs that never end are refused before a byte is read (or the file is even opened, for
//! devices: opening some has effects): character and block devices except `/dev/null` (an empty
//! input), sockets, a terminal on stdin, and anything on the kernel's made-up filesystems
//! (procfs, sysfs, debugfs, tracefs, securityfs: `/proc/kmsg` is a regular file of size 0 that
//! blocks, and reading it takes messages out of the kernel log).
//!
//! Lines are bounded ([`LineReader`] with a limit): a line longer than the limit is an error
//! naming the file and line, or, lenient, dropped without being stored. Memory never holds
//! more than the limit (and the reader's buffer) whatever the input.

use std::fs::File;
use std::io::{self, BufRead, IsTerminal, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use nix::sys::statfs::{self, FsType};

use super::InputError;

/// The default line limit: far above any line proctrace or git writes (the Trace2 socket's own
/// limit is 4 MiB), low enough that a file with no newlines fails in bounded memory.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;

/// How `-` is named in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// The reader's buffer: lines are parsed where they lie in it (and the lines still waiting for
/// the reorder window are copied when it moves on: a bigger buffer copies fewer).
const BUFFER: usize = 1 << 20;

/// The buffer of a file of a many-file Trace2 merge (up to thousands open at once).
pub const MERGE_BUFFER: usize = 64 << 10;

/// `-`: stdin.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How `path` is named in messages and headers (`-` is [`STDIN_NAME`]).
pub fn display_name(path: &Path) -> PathBuf {
    if is_stdin(path) {
        PathBuf::from(STDIN_NAME)
    } else {
        path.to_path_buf()
    }
}

/// One input named on the command line, opened.
pub enum Opened {
    /// A directory (a Trace2 target directory): its files are opened as they are read.
    Dir(PathBuf),
    /// A file or a stream, open, nothing consumed yet.
    Bytes {
        /// Its name in messages ([`STDIN_NAME`] for `-`).
        name: PathBuf,
        /// The reader.
        reader: LineReader<File>,
        /// A regular file (not a pipe, FIFO or stdin): may be opened again by path.
        regular: bool,
    },
}

/// Filesystems whose files the kernel makes up as they are read: some never end (`/proc/kmsg`,
/// `trace_pipe`), some are endless by design; none is a trace.
fn made_up(fs: FsType) -> Option<&'static str> {
    [
        (statfs::PROC_SUPER_MAGIC, "procfs (/proc)"),
        (statfs::SYSFS_MAGIC, "sysfs (/sys)"),
        (statfs::DEBUGFS_MAGIC, "debugfs"),
        (statfs::TRACEFS_MAGIC, "tracefs"),
        (statfs::SECURITYFS_MAGIC, "securityfs"),
    ]
    .into_iter()
    .find(|&(m, _)| m == fs)
    .map(|(_, name)| name)
}

fn refused(name: &Path, why: String) -> InputError {
    InputError::Format {
        path: name.to_path_buf(),
        msg: why,
    }
}

/// `/dev/null` (char 1:3): an empty input, unlike every other device.
fn is_dev_null(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == libc::makedev(1, 3)
}

/// Refuses what is not a file or a stream that ends (`meta` is the input's, symlinks
/// followed); `fs` is the filesystem it is on.
fn check(name: &Path, meta: &std::fs::Metadata, fs: Option<FsType>) -> Result<(), InputError> {
    let t = meta.file_type();
    if let Some(what) = fs.and_then(made_up) {
        return Err(refused(
            name,
            format!(
                "is on {what}: refused, not read (the kernel makes its files up as they are read; \
                 some never end)"
            ),
        ));
    }
    let kind = if t.is_char_device() && !is_dev_null(meta) {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        return Ok(());
    };
    Err(refused(
        name,
        format!("is {kind}, not a trace file: refused, not read (it may never end)"),
    ))
}

/// Opens `path` (`-`: stdin) after refusing what never ends; reads nothing.
pub fn open(path: &Path, max_line: usize, lenient: bool) -> Result<Opened, InputError> {
    let name = display_name(path);
    let io = |source| InputError::Io {
        path: name.clone(),
        source,
    };
    if is_stdin(path) {
        use std::os::fd::AsFd;
        let stdin = io::stdin();
        if stdin.is_terminal() {
            return Err(refused(
                &name,
                "is a terminal: give a file, or pipe a trace in (`proctrace analyze - < trace.jsonl`)".into(),
            ));
        }
        let file = File::from(stdin.as_fd().try_clone_to_owned().map_err(io)?);
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(refused(&name, "is a directory: name it instead of `-`".into()));
        }
        check(
            &name,
            &meta,
            statfs::fstatfs(&file).ok().map(|s| s.filesystem_type()),
        )?;
        return Ok(Opened::Bytes {
            name,
            regular: meta.is_file(),
            reader: LineReader::new(file, max_line, lenient),
        });
    }
    let meta = std::fs::metadata(path).map_err(io)?;
    let fs = statfs::statfs(path).ok().map(|s| s.filesystem_type());
    if meta.is_dir() {
        check(&name, &meta, fs)?;
        return Ok(Opened::Dir(path.to_path_buf()));
    }
    check(&name, &meta, fs)?;
    let file = File::open(path).map_err(io)?;
    // What was opened (the path may have changed since it was looked at).
    let opened = file.metadata().map_err(io)?;
    check(&name, &opened, None)?;
    Ok(Opened::Bytes {
        name,
        regular: opened.is_file(),
        reader: LineReader::new(file, max_line, lenient),
    })
}

/// A line longer than the limit (inside an [`io::Error`] of kind `InvalidData`, so any line
/// reader reports it; [`super::read_error`] turns it into an error naming the line).
#[derive(Debug, thiserror::Error)]
#[error("a line longer than {max} bytes (the line limit): not a trace, or raise the limit")]
pub struct LineTooLong {
    /// 1-based line number.
    pub line: u64,
    /// The limit.
    pub max: usize,
}

/// What a lenient reader hands on for a line over the limit, in place of its end: a NUL and the
/// newline, so that every line parser refuses the line and skips it as it skips any bad line.
const DROPPED: &[u8] = b"\0\n";

/// A buffered reader over a file or stream that can show its first line before anything is
/// consumed ([`first_line`](Self::first_line): the buffer grows for a first line longer than
/// itself, up to the limit), and, with [`limit_lines`](Self::limit_lines), bounds every line:
/// `fill_buf` then ends at the first newline, and a line longer than the limit is an error
/// ([`LineTooLong`]) or, lenient, is discarded up to its newline without being stored (the
/// reader above sees `DROPPED` end it). Without the limit, it is a plain `BufRead` (the JSON
/// Lines and capture readers bound their lines themselves).
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    max_line: usize,
    lenient: bool,
    limited: bool,
    /// Where the search for the next newline resumes.
    scanned: usize,
    /// Bytes of the current line already consumed (limited mode).
    since_nl: usize,
    /// Newlines consumed (limited mode): the current line is `line + 1`.
    line: u64,
    /// Bytes consumed or discarded.
    bytes: u64,
    /// Lines over the limit dropped (lenient).
    long_lines: u64,
    /// Bytes of [`DROPPED`] still to hand on.
    dropped: usize,
}

impl<R: Read> LineReader<R> {
    /// A reader of `inner`, lines up to `max_line` bytes (enforced once
    /// [`limit_lines`](Self::limit_lines) is called).
    pub fn new(inner: R, max_line: usize, lenient: bool) -> Self {
        LineReader::with_capacity(BUFFER, inner, max_line, lenient)
    }

    /// [`new`](Self::new) with a buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize, inner: R, max_line: usize, lenient: bool) -> Self {
        LineReader {
            inner,
            buf: vec![0; capacity.max(64)],
            pos: 0,
            end: 0,
            eof: false,
            max_line: max_line.max(1),
            lenient,
            limited: false,
            scanned: 0,
            since_nl: 0,
            line: 0,
            bytes: 0,
            long_lines: 0,
            dropped: 0,
        }
    }

    /// From now on `fill_buf` ends at the first newline and bounds lines (for readers that
    /// buffer a line without a limit of their own).
    pub fn limit_lines(mut self) -> Self {
        self.limited = true;
        self
    }

    /// Bytes consumed so far (a dropped line's included).
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The input's end was reached (after [`first_line`](Self::first_line): an empty first line
    /// then means a blank input).
    pub fn ended(&self) -> bool {
        self.eof
    }

    /// Lines over the limit dropped (lenient, limited mode).
    pub fn long_lines(&self) -> u64 {
        self.long_lines
    }

    /// Reads more into the buffer (moving what is left to its front when it is full). False when
    /// the buffer is full of one line and nothing could be read.
    fn read_more(&mut self) -> io::Result<bool> {
        if self.end == self.buf.len() {
            if self.pos == 0 {
                return Ok(false);
            }
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.scanned = self.scanned.saturating_sub(self.pos);
            self.pos = 0;
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(true);
        }
    }

    /// The first non-blank line (without its newline; cut just past the limit, or at the end
    /// of the input) and its number, nothing consumed. Empty when the input is empty or blank
    /// (or its blank start is longer than the limit).
    pub fn first_line(&mut self) -> io::Result<(u64, &[u8])> {
        // Offsets from `pos` (kept by a move of the data to the buffer's front): each byte is
        // looked at once, however the input comes in.
        let mut start: Option<usize> = None;
        let mut seen = 0;
        let mut end = None;
        loop {
            let data = &self.buf[self.pos..self.end];
            if start.is_none() {
                start = data[seen..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .map(|i| seen + i);
                seen = start.unwrap_or(data.len());
            }
            if start.is_some() {
                end = memchr::memchr(b'\n', &data[seen..]).map(|i| seen + i);
                seen = data.len();
            }
            let mut over = match start {
                Some(s) => end.is_none() && data.len() - s > self.max_line,
                None => data.len() > self.max_line,
            };
            if end.is_none() && !over && !self.eof {
                if self.end == self.buf.len() && self.pos == 0 {
                    // A first line longer than the buffer: room for it, up to the limit, in one
                    // step (growing by doubling held the old buffers too: 3 times the limit).
                    let to = self.max_line.saturating_add(self.buf.len());
                    self.buf.resize(to.max(self.buf.len()), 0);
                }
                if self.read_more()? {
                    continue;
                }
                over = true;
            }
            let data = &self.buf[self.pos..self.end];
            let no = |s: usize| 1 + memchr::memchr_iter(b'\n', &data[..s]).count() as u64;
            return Ok(match (start, end) {
                (Some(s), Some(e)) => (no(s), &data[s..e]),
                (Some(s), None) if over => (no(s), &data[s..(s + self.max_line + 1).min(data.len())]),
                (Some(s), None) => (no(s), &data[s..]),
                (None, _) => (1, &[]),
            });
        }
    }

    fn overlong(&mut self) -> io::Result<&[u8]> {
        if !self.lenient {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                LineTooLong {
                    line: self.line + 1,
                    max: self.max_line,
                },
            ));
        }
        // Dropped up to and with its newline, never stored.
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..self.end]) {
                self.bytes += i as u64 + 1;
                self.pos += i + 1;
                break;
            }
            self.bytes += (self.end - self.pos) as u64;
            self.pos = self.end;
            if self.eof {
                break;
            }
            self.read_more()?;
        }
        self.scanned = self.pos;
        self.long_lines += 1;
        self.dropped = DROPPED.len();
        Ok(DROPPED)
    }
}

impl<R: Read> Read for LineReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for LineReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.dropped > 0 {
            return Ok(&DROPPED[DROPPED.len() - self.dropped..]);
        }
        if !self.limited {
            if self.pos == self.end && !self.eof {
                self.read_more()?;
            }
            return Ok(&self.buf[self.pos..self.end]);
        }
        loop {
            let from = self.scanned.max(self.pos);
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let nl = from + i;
                self.scanned = nl;
                if self.since_nl + (nl - self.pos) > self.max_line {
                    return self.overlong();
                }
                return Ok(&self.buf[self.pos..=nl]);
            }
            self.scanned = self.end;
            if self.since_nl + (self.end - self.pos) > self.max_line {
                return self.overlong();
            }
            if self.eof || !self.read_more()? {
                // The end (a last line without newline), or a line longer than the buffer:
                // handed on in parts.
                return Ok(&self.buf[self.pos..self.end]);
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        if self.dropped > 0 {
            self.dropped = self.dropped.saturating_sub(amt);
            if self.dropped == 0 {
                self.line += 1;
                self.since_nl = 0;
            }
            return;
        }
        let amt = amt.min(self.end - self.pos);
        self.pos += amt;
        self.bytes += amt as u64;
        if self.limited && amt > 0 {
            // What fill_buf gave ends at the first newline: one can only be last.
            if self.buf[self.pos - 1] == b'\n' {
                self.line += 1;
                self.since_nl = 0;
            } else {
                self.since_nl += amt;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(r: &mut impl BufRead) -> io::Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        loop {
            let mut l = Vec::new();
            if r.read_until(b'\n', &mut l)? == 0 {
                return Ok(out);
            }
            out.push(l);
        }
    }

    #[test]
    fn first_line_is_shown_and_nothing_is_consumed() {
        let text = b"\n  \n{\"a\":1}\nrest\n";
        let mut r = LineReader::new(&text[..], 100, false);
        assert_eq!(r.first_line().unwrap(), (3, &b"{\"a\":1}"[..]));
        assert_eq!(r.first_line().unwrap(), (3, &b"{\"a\":1}"[..]));
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, text);
        assert!(
            LineReader::new(&b" \n\n\t"[..], 100, false)
                .first_line()
                .unwrap()
                .1
                .is_empty()
        );
        assert!(
            LineReader::new(&b""[..], 100, false)
                .first_line()
                .unwrap()
                .1
                .is_empty()
        );
        assert_eq!(
            LineReader::new(&b"\nlast"[..], 100, false).first_line().unwrap(),
            (2, &b"last"[..])
        );
    }

    #[test]
    fn a_first_line_longer_than_the_buffer_is_shown_whole_up_to_the_limit() {
        let mut text = vec![b'x'; BUFFER * 3];
        text.push(b'\n');
        text.extend_from_slice(b"next\n");
        let mut r = LineReader::new(&text[..], BUFFER * 4, false);
        assert_eq!(r.first_line().unwrap().1.len(), BUFFER * 3);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, text);
        // Over the limit: cut just past it (the caller sees that it is longer).
        let mut r = LineReader::new(&text[..], 1000, false);
        assert_eq!(r.first_line().unwrap().1.len(), 1001);
    }

    /// Reads through `chunk`-byte reads (a pipe hands over what it has).
    struct Chunks<'a>(&'a [u8], usize);
    impl Read for Chunks<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(out.len()).min(self.1);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn first_line_through_small_reads() {
        let mut text = b"\n\n   ".to_vec();
        text.extend(std::iter::repeat_n(b'x', 3 * BUFFER));
        text.extend_from_slice(b"\nnext\n");
        for chunk in [1, 5, 4096] {
            let mut r = LineReader::new(Chunks(&text, chunk), 4 * BUFFER, false);
            let (no, line) = r.first_line().unwrap();
            assert_eq!((no, line.len()), (3, 3 * BUFFER));
            let mut all = Vec::new();
            r.read_to_end(&mut all).unwrap();
            assert_eq!(all, text);
        }
    }

    #[test]
    fn limited_lines_end_at_a_newline_and_a_longer_line_is_an_error_naming_it() {
        let mut text = b"short\n\n".to_vec();
        text.extend(std::iter::repeat_n(b'y', 5000));
        text.extend_from_slice(b"\nafter\n");
        for chunk in [1, 7, 4096, 1 << 20] {
            let mut r = LineReader::new(Chunks(&text, chunk), 4096, false).limit_lines();
            assert_eq!(r.fill_buf().unwrap(), b"short\n");
            r.consume(6);
            assert_eq!(r.fill_buf().unwrap(), b"\n");
            r.consume(1);
            let e = lines(&mut r).unwrap_err();
            let t = e.get_ref().and_then(|e| e.downcast_ref::<LineTooLong>()).unwrap();
            assert_eq!((t.line, t.max), (3, 4096));
            // Never more than the limit and the buffer in memory.
            assert_eq!(r.buf.len(), BUFFER);
        }
    }

    #[test]
    fn lenient_drops_a_long_line_without_storing_it_and_counts_it() {
        let mut text = b"a\n".to_vec();
        text.extend(std::iter::repeat_n(b'y', 3 * BUFFER));
        text.extend_from_slice(b"\nb\n");
        text.extend(std::iter::repeat_n(b'z', 200));
        let mut r = LineReader::new(Chunks(&text, 9000), 100, true).limit_lines();
        let got = lines(&mut r).unwrap();
        assert_eq!(
            got,
            vec![
                b"a\n".to_vec(),
                b"\0\n".to_vec(),
                b"b\n".to_vec(),
                b"\0\n".to_vec()
            ]
        );
        assert_eq!(r.long_lines(), 2);
        assert_eq!(r.bytes_read(), text.len() as u64);
        assert_eq!(r.buf.len(), BUFFER);
    }

    #[test]
    fn lines_up_to_the_limit_pass_whole_across_buffer_ends() {
        let line = |i: usize| format!("{}\n", "k".repeat(1 + i * 37 % 900));
        let text: String = (0..2000).map(line).collect();
        let mut r = LineReader::new(Chunks(text.as_bytes(), 5000), 900, false).limit_lines();
        let got = lines(&mut r).unwrap();
        assert_eq!(got.len(), 2000);
        assert_eq!(got.concat(), text.as_bytes());
        assert_eq!(r.bytes_read(), text.len() as u64);
    }

    #[test]
    fn devices_and_made_up_filesystems_are_refused_before_reading() {
        for p in [
            "/dev/zero",
            "/dev/urandom",
            "/proc/kmsg",
            "/proc",
            "/proc/self/status",
            "/sys",
        ] {
            let Err(e) = open(Path::new(p), 1 << 20, false) else {
                panic!("{p} opened");
            };
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("{p}: is ")) && msg.contains("refused"),
                "{msg}"
            );
        }
        // /dev/null is an empty input, not a device.
        let Ok(Opened::Bytes { mut reader, .. }) = open(Path::new("/dev/null"), 100, false) else {
            panic!("/dev/null refused");
        };
        assert!(reader.first_line().unwrap().1.is_empty());
    }
}
