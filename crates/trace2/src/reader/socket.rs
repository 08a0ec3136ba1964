//! Collecting event lines from a listening `af_unix` socket, the other end
//! of an `af_unix:[stream:|dgram:]PATH` target.
//!
//! Every traced process connects once; a stream connection carries whole
//! lines, a datagram carries exactly one line. EOF may never come while a
//! descendant holds an inherited descriptor, so collection stops on a
//! caller-supplied condition or a deadline, not on EOF.

use std::io::{self, BufReader};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{EventReader, ReadOptions, Record, parse_line};

/// A bound, listening stream socket.
#[derive(Debug)]
pub struct StreamListener {
    listener: UnixListener,
    path: PathBuf,
}

impl StreamListener {
    /// Binds and listens at `path` (which must not exist).
    pub fn bind(path: &Path) -> io::Result<StreamListener> {
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(StreamListener {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Accepts connections and reads their lines until `done(records so
    /// far)` returns true or `timeout` passes. Malformed lines are skipped
    /// (lenient); records of one connection keep their order.
    pub fn collect(&self, timeout: Duration, mut done: impl FnMut(&[Record]) -> bool) -> Vec<Record> {
        let deadline = Instant::now() + timeout;
        let (tx, rx) = mpsc::channel::<Record>();
        let mut out = Vec::new();
        let mut conn = 0usize;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    conn += 1;
                    let tx = tx.clone();
                    let name = format!("{}#{conn}", self.path.display());
                    let _ = stream.set_nonblocking(false);
                    std::thread::spawn(move || {
                        let r = EventReader::new(
                            BufReader::new(stream),
                            name,
                            ReadOptions {
                                lenient: true,
                                ..Default::default()
                            },
                        );
                        for rec in r.flatten() {
                            if tx.send(rec).is_err() {
                                break;
                            }
                        }
                    });
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
            while let Ok(r) = rx.try_recv() {
                out.push(r);
            }
            if done(&out) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        out
    }
}

impl Drop for StreamListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A bound datagram socket.
#[derive(Debug)]
pub struct DgramListener {
    sock: UnixDatagram,
    path: PathBuf,
}

impl DgramListener {
    /// Binds at `path` (which must not exist).
    pub fn bind(path: &Path) -> io::Result<DgramListener> {
        let sock = UnixDatagram::bind(path)?;
        Ok(DgramListener {
            sock,
            path: path.to_path_buf(),
        })
    }

    /// Receives datagrams (one line each) until `done` or `timeout`.
    pub fn collect(&self, timeout: Duration, mut done: impl FnMut(&[Record]) -> bool) -> Vec<Record> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut n_lines = 0usize;
        while !done(&out) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero()
                || self
                    .sock
                    .set_read_timeout(Some(left.min(Duration::from_millis(50))))
                    .is_err()
            {
                break;
            }
            match self.sock.recv(&mut buf) {
                Ok(n) => {
                    n_lines += 1;
                    let line = super::trim_line(&buf[..n]);
                    if let Ok((event, extra)) = parse_line(line) {
                        out.push(Record {
                            event,
                            extra,
                            source: self.path.display().to_string(),
                            line_no: n_lines,
                        });
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        out
    }
}

impl Drop for DgramListener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
