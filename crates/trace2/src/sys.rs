//! The few system calls the crate needs, each in a small safe wrapper.
//!
//! Everything `unsafe` in the crate lives here. Wrappers return `io::Result`
//! or plain values and never panic.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Offset of local time from UTC, in seconds, at `secs` since the epoch.
/// Falls back to 0 (UTC) if the C library cannot tell.
pub(crate) fn utc_offset_seconds(secs: i64) -> i64 {
    #[allow(clippy::useless_conversion)]
    let t: libc::time_t = match secs.try_into() {
        Ok(t) => t,
        Err(_) => return 0,
    };
    // SAFETY: `tm` is a plain C struct for which all-zero bytes is a valid
    // value; localtime_r writes only into it and reads only `t`.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    }
}

/// One `write(2)` of the whole buffer; no retry on a short write, like git.
pub(crate) fn write_once(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid readable slice of `buf.len()` bytes for the
    // duration of the call; write(2) does not retain the pointer.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Closes a file descriptor we own.
pub(crate) fn close(fd: RawFd) {
    // SAFETY: callers pass only descriptors they opened and own; errors are
    // irrelevant at this point.
    unsafe {
        libc::close(fd);
    }
}

/// `open(path, flags, 0666)` without `O_CLOEXEC`, so that children inherit
/// the descriptor as they do git's.
pub(crate) fn open_raw(path: &Path, flags: libc::c_int) -> io::Result<RawFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags, 0o666 as libc::c_uint) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// Clears `FD_CLOEXEC` (std opens sockets with it set; git's are inherited).
pub(crate) fn clear_cloexec(fd: RawFd) {
    // SAFETY: fcntl on a descriptor the caller owns; failure is harmless.
    unsafe {
        libc::fcntl(fd, libc::F_SETFD, 0);
    }
}

/// Whether `fd` is an open descriptor.
pub(crate) fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only queries the descriptor table.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

/// The host name (what git hashes into a SID), or `None` if `gethostname`
/// fails.
pub fn hostname() -> Option<Vec<u8>> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its full length; gethostname
    // writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(buf[..len].to_vec())
}

/// Registers a process-exit hook (C `atexit`).
pub(crate) fn register_atexit(f: extern "C" fn()) -> bool {
    // SAFETY: `f` is a plain `extern "C"` function with no arguments, valid
    // for the life of the program; atexit only stores the pointer.
    unsafe { libc::atexit(f) == 0 }
}

/// Registers a process-exit hook that receives the exit status (glibc's
/// `on_exit`, run in reverse order of registration together with `atexit`
/// hooks).
#[cfg(all(feature = "tracing", target_os = "linux", target_env = "gnu"))]
pub(crate) fn register_on_exit(f: extern "C" fn(libc::c_int, *mut libc::c_void)) -> bool {
    unsafe extern "C" {
        fn on_exit(f: extern "C" fn(libc::c_int, *mut libc::c_void), arg: *mut libc::c_void) -> libc::c_int;
    }
    // SAFETY: `f` is a plain `extern "C"` function valid for the life of the
    // program that ignores its argument; on_exit only stores both pointers.
    unsafe { on_exit(f, std::ptr::null_mut()) == 0 }
}

/// `strerror(code)` as git prints it in `exec_result`.
pub fn strerror(code: i32) -> String {
    let s = io::Error::from_raw_os_error(code).to_string();
    // std appends " (os error N)"; git prints the bare C library text.
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The home directory of user `name` (`getpwnam_r`), for `~user/` in git
/// config include paths; `None` if there is no such user.
pub(crate) fn home_of_user(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0u8; 16384];
    // SAFETY: `pwd` is a plain C struct (all-zero is valid); getpwnam_r
    // writes into `pwd` and `buf` (whose length it is given) and sets
    // `result` to `&pwd` or null. `pw_dir` points into `buf`, which outlives
    // its use below.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr(pwd.pw_dir).to_bytes().to_vec();
        Some(std::path::PathBuf::from(std::ffi::OsString::from_vec(dir)))
    }
}

/// The effective user id (`geteuid`).
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// What kind of file a descriptor is, for how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FdKind {
    /// A regular file (or anything `fstat` cannot tell).
    File,
    /// A socket.
    Socket,
    /// A pipe or FIFO.
    Pipe,
    /// A terminal or another character device.
    Device,
}

/// The kind of file `fd` is.
pub(crate) fn fd_kind(fd: RawFd) -> FdKind {
    // SAFETY: `st` is a plain C struct for which all-zero bytes is valid; fstat only writes it.
    let mode = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return FdKind::File;
        }
        st.st_mode & libc::S_IFMT
    };
    match mode {
        libc::S_IFSOCK => FdKind::Socket,
        libc::S_IFIFO => FdKind::Pipe,
        libc::S_IFCHR => FdKind::Device,
        _ => FdKind::File,
    }
}

/// One `send(2)` that never blocks and never raises SIGPIPE.
pub(crate) fn send_nowait(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid readable slice for the duration of the call.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Waits up to `timeout_ms` for `fd` to take a write; true when it will.
pub(crate) fn poll_out(fd: RawFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    // An error or hang-up counts as writable: the write then says what is wrong.
    n > 0 || n < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)
}
