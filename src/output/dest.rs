//! Where an output goes, checked and opened before anything is destroyed.
//!
//! Opening is split in two so that a usage error never costs the user a file: [`Opened::open`]
//! opens (or creates) every destination *without truncating it*, so a bad flag found later — a
//! Trace2 value git would not take, two outputs on one file, an output that is an input — stops
//! proctrace with every existing file as it was (files it created are removed again when
//! [`super::Outputs`] is dropped unstarted). Only once every output is known good does
//! [`super::Outputs::start`] empty the files that are replaced.
//!
//! This module must never write a byte of output: it only opens, identifies and truncates.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How an output's value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestKind {
    /// A file (created, or replaced), or `-` for stdout.
    File,
    /// A file appended to (`--summary-md "$GITHUB_STEP_SUMMARY"`: steps share it), or `-`.
    Append,
    /// A git Trace2 destination (`/abs/file` appended to, `/abs/dir/`, `af_unix:…`, `1`–`9`),
    /// opened by the Trace2 output itself as git would.
    Trace2,
    /// A collector's URL (`--otlp`): nothing on the file system.
    Endpoint,
}

/// Which file a path names, to tell when two outputs (or an output and an input) are the same
/// file: the device and inode of a file that exists, else its absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// An existing file.
    Inode(u64, u64),
    /// A file that does not exist yet, by its absolute path (its directory resolved).
    Path(PathBuf),
}

impl Identity {
    /// The identity of `path` (`None` for `-`: stdout is not a file to compare).
    pub fn of(path: &Path) -> Option<Identity> {
        if path == Path::new("-") {
            return None;
        }
        if let Ok(m) = std::fs::metadata(path) {
            return Some(Identity::Inode(m.dev(), m.ino()));
        }
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let resolved = match (abs.parent(), abs.file_name()) {
            (Some(dir), Some(name)) => std::fs::canonicalize(dir)
                .map(|d| d.join(name))
                .unwrap_or(abs.clone()),
            _ => abs,
        };
        Some(Identity::Path(resolved))
    }
}

/// A destination opened and not yet truncated.
#[derive(Debug)]
pub enum Opened {
    /// stdout (`-`).
    Stdout,
    /// A file: `created` when proctrace made it (removed again if the command never starts).
    File {
        /// The open file (write, or append).
        file: File,
        /// Its path, for messages and removal.
        path: PathBuf,
        /// It did not exist before.
        created: bool,
    },
    /// Nothing to open here (Trace2 destinations, endpoints).
    Value,
}

/// The file an output's value names: the value is the model's text for the bytes given on the
/// command line ([`crate::model::bytes`]), so a path that is not UTF-8 names its file.
pub fn path_of(value: &str) -> PathBuf {
    PathBuf::from(crate::model::bytes::to_os(value))
}

impl Opened {
    /// Opens `value` as `kind` says, truncating nothing. `what` names the output in errors.
    pub fn open(kind: DestKind, value: &str) -> io::Result<Opened> {
        match kind {
            DestKind::Trace2 | DestKind::Endpoint => Ok(Opened::Value),
            _ if value == "-" => Ok(Opened::Stdout),
            DestKind::File | DestKind::Append => {
                let path = path_of(value);
                let existed = std::fs::symlink_metadata(&path).is_ok();
                let mut o = std::fs::OpenOptions::new();
                if kind == DestKind::Append {
                    o.append(true);
                } else {
                    o.write(true);
                }
                let file = o.create(true).open(&path)?;
                Ok(Opened::File {
                    file,
                    path,
                    created: !existed,
                })
            }
        }
    }
}
