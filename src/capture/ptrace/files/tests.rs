//! The filter against the real kernel, without a tracer: what it traces fails with `ENOSYS`
//! (the kernel's answer to `SECCOMP_RET_TRACE` when nobody traces: why `--files` under ptrace
//! never leaves a process running untraced), what it allows works. The traced path is tested
//! end to end in `tests/it/files.rs`.

use super::*;

/// Runs `body` in a forked child with the filter installed (no tracer); its exit code.
fn in_filtered_child(body: fn() -> i32) -> i32 {
    let filter = Filter::new();
    let prog = libc::sock_fprog {
        len: filter.instructions().len() as u16,
        filter: filter.instructions().as_ptr().cast_mut(),
    };
    // SAFETY: fork in a test; the child only makes system calls and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: a forked child, system calls only.
        let code = match unsafe { install(&prog) } {
            Ok(()) => body(),
            Err(_) => 99,
        };
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(code) };
    }
    let mut st = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
    assert!(libc::WIFEXITED(st), "{st:#x}");
    libc::WEXITSTATUS(st)
}

/// The errno of a failed call, or 0.
fn errno_of(r: libc::c_long) -> i32 {
    if r >= 0 {
        0
    } else {
        // SAFETY: reading errno after the call.
        unsafe { *libc::__errno_location() }
    }
}

#[test]
fn the_filter_traces_file_calls_and_allows_the_rest() {
    let code = in_filtered_child(|| {
        // SAFETY: plain system calls with constant, NUL-terminated paths.
        unsafe {
            let traced = [
                libc::syscall(
                    libc::SYS_openat,
                    libc::AT_FDCWD,
                    c"/etc/hostname".as_ptr(),
                    libc::O_RDONLY,
                ),
                libc::syscall(libc::SYS_unlinkat, libc::AT_FDCWD, c"/nonexistent-x".as_ptr(), 0),
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    c"/nonexistent-a".as_ptr(),
                    libc::AT_FDCWD,
                    c"/nonexistent-b".as_ptr(),
                    0,
                ),
                libc::syscall(
                    libc::SYS_symlinkat,
                    c"t".as_ptr(),
                    libc::AT_FDCWD,
                    c"/nonexistent/l".as_ptr(),
                ),
            ];
            for (i, r) in traced.into_iter().enumerate() {
                if errno_of(r) != libc::ENOSYS {
                    return 10 + i as i32;
                }
            }
            // Allowed: a directory opened as one, a path handle, rmdir, and any other call.
            let dir = libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY,
            );
            if dir < 0 {
                return 20;
            }
            let path = libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                c"/etc/hostname".as_ptr(),
                libc::O_PATH,
            );
            if path < 0 {
                return 21;
            }
            let rmdir = libc::syscall(
                libc::SYS_unlinkat,
                libc::AT_FDCWD,
                c"/nonexistent-d".as_ptr(),
                libc::AT_REMOVEDIR,
            );
            if errno_of(rmdir) != libc::ENOENT {
                return 22;
            }
            if libc::getpid() <= 0 {
                return 23;
            }
            #[cfg(target_arch = "x86_64")]
            {
                let open = libc::syscall(libc::SYS_open, c"/etc/hostname".as_ptr(), libc::O_RDONLY);
                if errno_of(open) != libc::ENOSYS {
                    return 30;
                }
                let creat = libc::syscall(libc::SYS_creat, c"/nonexistent/c".as_ptr(), 0o644);
                if errno_of(creat) != libc::ENOSYS {
                    return 31;
                }
            }
        }
        0
    });
    assert_eq!(code, 0, "see the code's return values");
}

#[test]
fn every_jump_of_the_filter_lands_inside_it() {
    let f = Filter::new();
    let n = f.instructions().len();
    let ja = (libc::BPF_JMP | libc::BPF_JA) as u16;
    for (at, i) in f.instructions().iter().enumerate() {
        if i.code == ja {
            assert!(at + 1 + (i.k as usize) < n, "{at}");
        } else if i.code & 0x07 == libc::BPF_JMP as u16 {
            assert!(
                at + 1 + usize::from(i.jt) < n && at + 1 + usize::from(i.jf) < n,
                "{at}"
            );
        }
    }
    // It ends in its two returns, which every path reaches.
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    assert_eq!(f.instructions()[n - 1].code, ret);
    assert_eq!(f.instructions()[n - 2].code, ret);
}
