//! `--files`: which files each process read, wrote, created, renamed and deleted, from the
//! kernel's fanotify, whatever the backend. A thread of its own reads the fanotify queue and
//! sends [`Event::File`]s on the session's queue; the tracker keeps the first of each path and
//! access per process ([`crate::model::tracker::files`]).
//!
//! How it watches (docs/files.md):
//! - One fanotify group in notification mode, reporting the parent directory's file handle and
//!   the entry's name (`FAN_REPORT_DFID_NAME`, Linux ≥ 5.9; rename pairs with `FAN_RENAME`,
//!   ≥ 5.17): no file descriptor is opened per event, and a deleted or renamed file is still
//!   named. A directory handle is turned into a path with `open_by_handle_at` once and cached.
//! - Filesystem marks (`FAN_MARK_FILESYSTEM`, needs CAP_SYS_ADMIN) on the filesystems of the
//!   working directory, `/`, `/tmp`, `$TMPDIR` and `$HOME` (a failure said), then on every other
//!   mounted filesystem that holds files, and on each one mounted while watching (the reader polls
//!   `/proc/self/mountinfo`, which signals mounts): every access on them by any process; the
//!   events of processes not in the trace are dropped by the tracker.
//! - Read = closed after opening for reading only (`FAN_CLOSE_NOWRITE`), write = closed after
//!   opening for writing (`FAN_CLOSE_WRITE`), create, delete, rename. Directories themselves are
//!   not reported (`mkdir`, listing a directory).
//! - fanotify has no timestamps: an event's time is when this thread read it (within
//!   milliseconds). Events go in batches at most [`HOLD`] old; one that overtook the fork of its
//!   process (on the backend's queue) waits in the session for it (`engine.rs`).
//! - A queue overflow (`FAN_Q_OVERFLOW`) is counted (`files_lost`); fanotify does not say how
//!   many events it dropped.
//!
//! Must never block the traced processes (notification mode only, never permission events) nor
//! report an event of proctrace itself.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::CaptureMsg;
use super::procfs;
use crate::model::bytes;
use crate::model::event::{Event, FileAccess};

/// How long an event is held before it is sent: events go in batches (the session also holds
/// a use whose process's fork has not reached the model yet).
const HOLD: Duration = Duration::from_millis(10);

/// How often the thread wakes when the queue is quiet (to send held events and see a stop).
const TICK: Duration = Duration::from_millis(10);

/// Most directory paths the cache keeps (cleared when full).
const DIRS_CACHED: usize = 65_536;

/// The events asked for.
const MASK: u64 =
    libc::FAN_CLOSE_WRITE | libc::FAN_CLOSE_NOWRITE | libc::FAN_CREATE | libc::FAN_DELETE | libc::FAN_RENAME;

/// What `--files` leaves out unless `--files-all`: what every process reads at start, and the
/// kernel's pseudo-files (`/proc`, `/sys`, `/dev`: fanotify does not watch them; the ptrace
/// backend would see a shell's every `> /dev/null`).
pub fn is_noise(access: FileAccess, path: &str) -> bool {
    if ["/proc/", "/sys/", "/dev/"].iter().any(|p| path.starts_with(p)) {
        return true;
    }
    if access != FileAccess::Read {
        return false;
    }
    const PREFIXES: &[&str] = &[
        "/etc/ld.so.cache",
        "/etc/localtime",
        "/etc/locale.alias",
        "/usr/lib/locale/",
        "/usr/share/locale/",
        "/usr/share/zoneinfo/",
        "/usr/lib/x86_64-linux-gnu/gconv/",
        "/usr/lib/aarch64-linux-gnu/gconv/",
    ];
    if PREFIXES.iter().any(|p| path.starts_with(p)) {
        return true;
    }
    // The dynamic loader's libraries: `*.so` and `*.so.N…` under a lib directory.
    let lib = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/local/lib/"]
        .iter()
        .any(|d| path.starts_with(d));
    let name = path.rsplit('/').next().unwrap_or(path);
    lib && (name.ends_with(".so") || name.contains(".so."))
}

/// Settings of the watcher.
#[derive(Debug, Clone, Default)]
pub struct FilesOptions {
    /// Keep what [`is_noise`] leaves out.
    pub all: bool,
    /// Leave out every use of a path under one of these (`--files-ignore`: absolute, canonical,
    /// no trailing `/`), whatever `all` says.
    pub ignore: Vec<String>,
}

impl FilesOptions {
    /// Whether a use of `path` is left out: noise (unless `all`), or under an ignored path.
    pub fn leaves_out(&self, access: FileAccess, path: &str) -> bool {
        (!self.all && is_noise(access, path)) || self.ignore.iter().any(|p| is_under(path, p))
    }
}

/// Whether `path` is `dir` or below it (`/a/b` is under `/a`, `/ab` is not; everything is
/// under `/`).
pub fn is_under(path: &str, dir: &str) -> bool {
    match path.strip_prefix(dir) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || dir.ends_with('/'),
        None => false,
    }
}

/// A `--files-ignore` value as the uses name paths: absolute (from the current directory),
/// canonical when it exists (symbolic links resolved, as the kernel names files), without a
/// trailing `/`.
pub fn ignore_path(arg: &std::ffi::OsStr) -> Result<String, String> {
    use std::os::unix::ffi::OsStrExt;
    if arg.is_empty() {
        return Err("an empty path".into());
    }
    let p = std::path::Path::new(arg);
    let abs = match std::fs::canonicalize(p) {
        Ok(c) => c,
        Err(_) if p.is_absolute() => p.to_path_buf(),
        Err(_) => std::env::current_dir()
            .map_err(|e| format!("the current directory: {e}"))?
            .join(p),
    };
    // Lexically: `.` and `//` gone (`..` stays: without the filesystem it cannot be resolved).
    let mut out = String::new();
    for c in abs.components() {
        match c {
            std::path::Component::RootDir | std::path::Component::CurDir => {}
            c => {
                out.push('/');
                out.push_str(&crate::model::bytes::encode(c.as_os_str().as_bytes()));
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// The fanotify reader thread.
pub struct FileWatcher {
    stop: Arc<AtomicBool>,
    lost: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

/// Why `--files` cannot run.
fn refused(what: &str, e: std::io::Error) -> crate::ProctraceError {
    crate::ProctraceError::Io(format!("--files: {what}"), e)
}

impl FileWatcher {
    /// Starts watching the filesystems of `cwd`, `/`, `/tmp`, `$TMPDIR` and `$HOME`; events go
    /// to `tx`. Fails when fanotify is not available or not allowed (CAP_SYS_ADMIN).
    pub fn start(tx: Sender<CaptureMsg>, opts: FilesOptions) -> Result<FileWatcher, crate::ProctraceError> {
        // SAFETY: fanotify_init takes flags only; the result is checked.
        let fd = unsafe {
            libc::fanotify_init(
                libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK | libc::FAN_REPORT_DFID_NAME,
                (libc::O_RDONLY | libc::O_LARGEFILE | libc::O_CLOEXEC) as u32,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            let why = match e.raw_os_error() {
                Some(libc::EPERM) => "fanotify needs CAP_SYS_ADMIN (run as root)",
                Some(libc::EINVAL) => {
                    "this kernel's fanotify cannot report names (Linux 5.9 or later needed)"
                }
                Some(libc::ENOSYS) => "this kernel has no fanotify",
                _ => "fanotify_init failed",
            };
            return Err(refused(why, e));
        }
        // SAFETY: fd is a new descriptor this function owns.
        let fan = unsafe { OwnedFd::from_raw_fd(fd) };
        let cwd = std::env::current_dir().ok();
        let mut candidates: Vec<std::path::PathBuf> = Vec::new();
        candidates.extend(cwd.clone());
        candidates.push("/".into());
        candidates.push("/tmp".into());
        for var in ["TMPDIR", "HOME"] {
            if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                candidates.push(v.into());
            }
        }
        let lost = Arc::new(AtomicU64::new(0));
        let mut reader = Reader {
            fan,
            mounts: HashMap::new(),
            mountinfo: std::fs::File::open("/proc/self/mountinfo").ok(),
            cwd,
            dirs: HashMap::new(),
            key: Vec::with_capacity(64),
            held: VecDeque::new(),
            tx,
            me: std::process::id() as i32,
            keep: opts,
            lost: lost.clone(),
        };
        // The paths a build is likely to use first: their failures are said.
        for p in &candidates {
            if let Err(e) = reader.mark(p) {
                if reader.mounts.is_empty() && e.raw_os_error() == Some(libc::EPERM) {
                    return Err(refused(
                        "fanotify filesystem marks need CAP_SYS_ADMIN (run as root)",
                        e,
                    ));
                }
                crate::say!(
                    "proctrace: --files: cannot watch the filesystem of {} ({e}); its files are not listed",
                    p.display()
                );
            }
        }
        if reader.mounts.is_empty() {
            return Err(refused(
                "no filesystem could be watched",
                std::io::Error::from_raw_os_error(libc::ENODEV),
            ));
        }
        // Then every other filesystem mounted (a build directory on a mount of its own, a
        // tmpfs that is not /tmp), and later the ones mounted while watching.
        reader.mark_mounted();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("proctrace-files".into())
            .spawn(move || reader.run(&stop2))
            .map_err(|e| refused("starting its thread", e))?;
        Ok(FileWatcher {
            stop,
            lost,
            thread: Some(thread),
        })
    }

    /// Reads what is queued, sends every event held and stops; returns the overflows counted.
    /// Call when the traced processes are done (their closes are queued by then) and before
    /// the backend is stopped.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.lost.load(Ordering::Acquire)
    }
}

impl Drop for FileWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Each mount's point and filesystem type, from `/proc/self/mountinfo`
/// (`36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`); the point's `\ooo`
/// escapes decoded to its bytes.
fn mount_points(text: &[u8]) -> Vec<(Vec<u8>, String)> {
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let mut words = line.split(|&b| b == b' ');
        let Some(point) = words.nth(4) else { continue };
        let Some(fstype) = words.skip_while(|w| *w != b"-").nth(1) else {
            continue;
        };
        out.push((unescape(point), String::from_utf8_lossy(fstype).into_owned()));
    }
    out
}

/// A mountinfo field with its `\ooo` octal escapes (space, tab, newline, backslash) decoded.
fn unescape(w: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(w.len());
    let mut i = 0;
    while i < w.len() {
        let oct = w
            .get(i + 1..i + 4)
            .filter(|d| w[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) => {
                out.push(
                    d.iter()
                        .fold(0u8, |v, c| v.wrapping_mul(8).wrapping_add(c - b'0')),
                );
                i += 4;
            }
            None => {
                out.push(w[i]);
                i += 1;
            }
        }
    }
    out
}

/// Whether a filesystem type holds files a build would use: not the kernel's own views
/// (`proc`, `sysfs`, `cgroup2`, `devpts`, …), whose events are noise or not reported.
fn holds_files(fstype: &str) -> bool {
    !matches!(
        fstype,
        "proc"
            | "sysfs"
            | "devtmpfs"
            | "devpts"
            | "cgroup"
            | "cgroup2"
            | "securityfs"
            | "debugfs"
            | "tracefs"
            | "bpf"
            | "pstore"
            | "mqueue"
            | "hugetlbfs"
            | "configfs"
            | "fusectl"
            | "binfmt_misc"
            | "autofs"
            | "efivarfs"
            | "nsfs"
            | "rpc_pipefs"
            | "selinuxfs"
    )
}

/// The filesystem id of the filesystem holding `path`.
fn fsid_of(path: &CString) -> Option<[i32; 2]> {
    // SAFETY: statfs fills the zeroed struct; the result is checked.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: path is a valid C string and st a valid out pointer.
    if unsafe { libc::statfs(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // SAFETY: fsid_t is two ints; read them as such.
    let v: [i32; 2] = unsafe { std::mem::transmute(st.f_fsid) };
    Some(v)
}

struct Reader {
    fan: OwnedFd,
    /// A directory on each watched filesystem, by fsid (for `open_by_handle_at`).
    mounts: HashMap<[i32; 2], OwnedFd>,
    /// `/proc/self/mountinfo`, polled: it signals a mount or unmount (`POLLPRI`).
    mountinfo: Option<std::fs::File>,
    /// The working directory: a filesystem mounted under it that cannot be watched is said.
    cwd: Option<std::path::PathBuf>,
    /// Directory paths by fsid + handle bytes (`None`: could not be resolved).
    dirs: HashMap<Vec<u8>, Option<String>>,
    /// Scratch: the key of the directory being looked up (no allocation per event).
    key: Vec<u8>,
    /// Events read, with when, waiting for [`HOLD`].
    held: VecDeque<(Instant, Event)>,
    tx: Sender<CaptureMsg>,
    me: i32,
    /// What is left out.
    keep: FilesOptions,
    lost: Arc<AtomicU64>,
}

/// The size of `struct fanotify_event_metadata`.
const META: usize = std::mem::size_of::<libc::fanotify_event_metadata>();

impl Reader {
    fn run(&mut self, stop: &AtomicBool) {
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let stopping = stop.load(Ordering::Acquire);
            // Everything queued now is read before a stop is honoured.
            loop {
                // SAFETY: buf is valid for its length; the fd is non-blocking.
                let n = unsafe { libc::read(self.fan.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                let now = procfs::mono_now();
                self.parse(&buf[..n as usize], now);
            }
            if stopping {
                let all: Vec<Event> = self.held.drain(..).map(|(_, e)| e).collect();
                if !all.is_empty() {
                    let _ = self.tx.send(CaptureMsg::Events(all));
                }
                return;
            }
            self.send_due();
            let mut pfd = [
                libc::pollfd {
                    fd: self.fan.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.mountinfo.as_ref().map_or(-1, |f| f.as_raw_fd()),
                    events: libc::POLLPRI,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds (a negative fd is ignored).
            unsafe { libc::poll(pfd.as_mut_ptr(), 2, TICK.as_millis() as i32) };
            if pfd[1].revents != 0 {
                self.mark_mounted();
            }
        }
    }

    /// Marks the filesystem holding `path`, unless one of its mounts is marked already.
    fn mark(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let fsid = fsid_of(&c).ok_or_else(std::io::Error::last_os_error)?;
        if self.mounts.contains_key(&fsid) {
            return Ok(());
        }
        // SAFETY: c is a valid C string; the result is checked.
        let r = unsafe {
            libc::fanotify_mark(
                self.fan.as_raw_fd(),
                libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
                MASK,
                libc::AT_FDCWD,
                c.as_ptr(),
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: c is a valid C string; the result is checked.
        let m = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if m < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: m is a new descriptor owned here.
        self.mounts.insert(fsid, unsafe { OwnedFd::from_raw_fd(m) });
        Ok(())
    }

    /// Marks every filesystem in `/proc/self/mountinfo` that holds files (not `proc`, `sysfs`,
    /// `cgroup2` and the like) and is not marked yet. One that cannot be marked (a FUSE or
    /// overlay filesystem without file handles) is said when it is under the working directory,
    /// where a build's files would be.
    fn mark_mounted(&mut self) {
        let Some(f) = self.mountinfo.as_mut() else { return };
        let mut text = Vec::new();
        use std::io::{Read, Seek};
        if f.seek(std::io::SeekFrom::Start(0)).is_err() || f.read_to_end(&mut text).is_err() {
            return;
        }
        for (point, fstype) in mount_points(&text) {
            if !holds_files(&fstype) {
                continue;
            }
            let path = std::path::PathBuf::from(std::ffi::OsString::from_vec(point));
            if let Err(e) = self.mark(&path)
                && self.cwd.as_ref().is_some_and(|c| path.starts_with(c))
            {
                crate::say!(
                    "proctrace: --files: cannot watch {} ({fstype}: {e}); its files are not listed",
                    path.display()
                );
            }
        }
    }

    /// Sends the events held at least [`HOLD`].
    fn send_due(&mut self) {
        let now = Instant::now();
        let n = self
            .held
            .iter()
            .take_while(|(t, _)| now.duration_since(*t) >= HOLD)
            .count();
        if n > 0 {
            let batch: Vec<Event> = self.held.drain(..n).map(|(_, e)| e).collect();
            let _ = self.tx.send(CaptureMsg::Events(batch));
        }
    }

    fn parse(&mut self, mut b: &[u8], ts: u64) {
        let read_at = Instant::now();
        while b.len() >= META {
            // SAFETY: at least META bytes; read unaligned.
            let m: libc::fanotify_event_metadata = unsafe { std::ptr::read_unaligned(b.as_ptr().cast()) };
            let len = (m.event_len as usize).min(b.len());
            if len < META || m.vers != libc::FANOTIFY_METADATA_VERSION {
                return;
            }
            let (ev, rest) = b.split_at(len);
            b = rest;
            if m.fd >= 0 {
                // SAFETY: an fd the kernel gave us (not expected with FID reporting).
                unsafe { libc::close(m.fd) };
            }
            if m.mask & libc::FAN_Q_OVERFLOW != 0 {
                self.lost.fetch_add(1, Ordering::AcqRel);
                continue;
            }
            if m.pid == self.me || m.pid <= 0 {
                continue;
            }
            let info = &ev[(m.metadata_len as usize).min(ev.len())..];
            let [name, old, new] = self.records(info);
            let mut push = |access: FileAccess, path: Option<String>, to: Option<String>| {
                let Some(path) = path else { return };
                if self.keep.leaves_out(access, &path) {
                    return;
                }
                self.held.push_back((
                    read_at,
                    Event::File {
                        ts,
                        tgid: m.pid,
                        access,
                        path,
                        to,
                    },
                ));
            };
            if m.mask & libc::FAN_RENAME != 0 {
                push(FileAccess::Rename, old, new);
            }
            for (bit, access) in [
                (libc::FAN_CREATE, FileAccess::Create),
                (libc::FAN_CLOSE_NOWRITE, FileAccess::Read),
                (libc::FAN_CLOSE_WRITE, FileAccess::Write),
                (libc::FAN_DELETE, FileAccess::Delete),
            ] {
                if m.mask & bit != 0 {
                    push(access, name.clone(), None);
                }
            }
        }
    }

    /// The full paths an event's info records name: `[entry, rename's old, rename's new]`.
    fn records(&mut self, mut b: &[u8]) -> [Option<String>; 3] {
        let mut out = [None, None, None];
        // struct fanotify_event_info_header { u8 info_type; u8 pad; u16 len; }
        while b.len() >= 4 {
            let kind = b[0];
            let len = (u16::from_ne_bytes([b[2], b[3]]) as usize).min(b.len());
            if len < 4 {
                break;
            }
            let (rec, rest) = b.split_at(len);
            b = rest;
            let slot = match kind {
                libc::FAN_EVENT_INFO_TYPE_DFID_NAME => 0,
                libc::FAN_EVENT_INFO_TYPE_OLD_DFID_NAME => 1,
                libc::FAN_EVENT_INFO_TYPE_NEW_DFID_NAME => 2,
                _ => continue,
            };
            out[slot] = self.name_record(&rec[4..]);
        }
        out
    }

    /// `fsid (8 bytes) | struct file_handle | name\0` → the entry's absolute path.
    fn name_record(&mut self, r: &[u8]) -> Option<String> {
        if r.len() < 16 {
            return None;
        }
        let fsid = [
            i32::from_ne_bytes(r[0..4].try_into().ok()?),
            i32::from_ne_bytes(r[4..8].try_into().ok()?),
        ];
        let hbytes = u32::from_ne_bytes(r[8..12].try_into().ok()?) as usize;
        let hend = 16usize.checked_add(hbytes)?;
        if hend > r.len() {
            return None;
        }
        let handle = &r[8..hend];
        let name_bytes = &r[hend..];
        let name = &name_bytes[..memchr::memchr(0, name_bytes).unwrap_or(name_bytes.len())];
        self.key.clear();
        self.key.extend_from_slice(&r[0..8]);
        self.key.extend_from_slice(handle);
        // The one allocation per event: the path, grown from a copy of the directory's.
        let dir = match self.dirs.get(self.key.as_slice()) {
            Some(d) => d.clone(),
            None => {
                let d = self.resolve(fsid, handle);
                if self.dirs.len() >= DIRS_CACHED {
                    self.dirs.clear();
                }
                self.dirs.insert(self.key.clone(), d.clone());
                d
            }
        }?;
        let mut path = dir;
        if name.is_empty() || name == b"." {
            return Some(path);
        }
        if !path.ends_with('/') {
            path.push('/');
        }
        path.push_str(&bytes::encode(name));
        Some(path)
    }

    /// A directory's path from its file handle (`open_by_handle_at` + the `/proc/self/fd` link).
    fn resolve(&self, fsid: [i32; 2], handle: &[u8]) -> Option<String> {
        let mount: RawFd = self.mounts.get(&fsid)?.as_raw_fd();
        // struct file_handle { u32 handle_bytes; i32 handle_type; u8 f_handle[]; }, aligned.
        let mut h: Vec<u64> = vec![0; handle.len().div_ceil(8) + 1];
        // SAFETY: h has at least handle.len() bytes; copying bytes into it.
        unsafe { std::ptr::copy_nonoverlapping(handle.as_ptr(), h.as_mut_ptr().cast::<u8>(), handle.len()) };
        // SAFETY: h holds a file_handle as the kernel gave it; the result is checked.
        let fd =
            unsafe { libc::open_by_handle_at(mount, h.as_mut_ptr().cast(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd is new and owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
        let p = bytes::from_os(link.as_os_str()).into_owned();
        // A directory removed since: its path is gone too.
        (!p.ends_with(" (deleted)")).then_some(p)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn under_a_path_is_itself_or_below_it() {
        assert!(is_under("/a/b", "/a"));
        assert!(is_under("/a", "/a"));
        assert!(!is_under("/ab", "/a"));
        assert!(is_under("/x", "/"));
        assert!(!is_under("/a", "/a/b"));
    }

    #[test]
    fn ignored_paths_are_absolute_and_canonical() {
        let cwd = std::env::current_dir().unwrap();
        let cwd = std::fs::canonicalize(cwd).unwrap();
        assert_eq!(
            ignore_path("no-such-dir/./x/".as_ref()).unwrap(),
            format!("{}/no-such-dir/x", cwd.display())
        );
        assert_eq!(ignore_path("/".as_ref()).unwrap(), "/");
        assert_eq!(
            ignore_path("//nonexistent//y/".as_ref()).unwrap(),
            "/nonexistent/y"
        );
        assert!(ignore_path("".as_ref()).is_err());
        // A symbolic link is named by what it points to, as the kernel names files.
        let d = std::env::temp_dir().join(format!("pt-ignore-{}", std::process::id()));
        std::fs::create_dir_all(d.join("real")).unwrap();
        let _ = std::fs::remove_file(d.join("link"));
        std::os::unix::fs::symlink("real", d.join("link")).unwrap();
        let real = std::fs::canonicalize(d.join("real")).unwrap();
        assert_eq!(
            ignore_path(d.join("link").as_os_str()).unwrap(),
            real.to_str().unwrap()
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
    use super::*;

    #[test]
    fn mountinfo_points_and_types_with_escapes() {
        let text = b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n\
            36 22 0:33 / /mnt/a\\040b\\012c rw master:1 - tmpfs none rw\n\
            37 22 0:5 / /proc rw - proc proc rw\n\
            bad line\n\
            38 22 0:40 / /x\\134y rw shared:3 opt:2 - fuse.sshfs host: rw\n";
        let m = mount_points(text);
        assert_eq!(
            m,
            vec![
                (b"/".to_vec(), "ext4".to_string()),
                (b"/mnt/a b\nc".to_vec(), "tmpfs".to_string()),
                (b"/proc".to_vec(), "proc".to_string()),
                (b"/x\\y".to_vec(), "fuse.sshfs".to_string()),
            ]
        );
        assert!(holds_files("tmpfs") && holds_files("fuse.sshfs") && !holds_files("proc"));
        // A malformed escape is kept as it is.
        assert_eq!(unescape(b"a\\09\\"), b"a\\09\\".to_vec());
    }
}
