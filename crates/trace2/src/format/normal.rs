//! The normal target: `<local time> <file:line>` padded to column 50, then a
//! human-readable payload. No escaping (an LF in an argument splits the line,
//! as in git).

use super::{FormatOptions, Target, push_f6, push_int, push_time};
use crate::event::{Event, EventKind};
use crate::quote::{sq_argv, sq_pretty};

/// git's `GIT_TRACE2` layout.
#[derive(Debug, Clone, Copy, Default)]
pub struct NormalTarget;

const FL_WIDTH: usize = 50;

fn prefix(ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) {
    if opts.brief {
        return;
    }
    let start = out.len();
    push_time(ev, opts, out);
    out.push(b' ');
    if let Some(f) = ev.file.as_deref().filter(|f| !f.is_empty()) {
        out.extend_from_slice(f.as_bytes());
        out.push(b':');
        push_int(out, ev.line);
        out.push(b' ');
    }
    while out.len() - start < FL_WIDTH {
        out.push(b' ');
    }
}

impl Target for NormalTarget {
    fn format(&self, ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) -> bool {
        use EventKind as K;
        match &ev.kind {
            K::TooManyFiles
            | K::ThreadStart
            | K::ThreadExit { .. }
            | K::RegionEnter { .. }
            | K::RegionLeave { .. }
            | K::Data { .. }
            | K::DataJson { .. }
            | K::Other { .. } => return false,
            _ => {}
        }
        prefix(ev, opts, out);
        let t_abs = ev.t_abs.unwrap_or(0.0);
        match &ev.kind {
            K::Version { exe, .. } => {
                out.extend_from_slice(b"version ");
                out.extend_from_slice(exe.as_bytes());
            }
            K::Start { argv } => {
                out.extend_from_slice(b"start ");
                sq_argv(out, argv);
            }
            K::Exit { code } | K::Atexit { code } | K::Signal { signo: code } => {
                out.extend_from_slice(ev.kind.name().as_bytes());
                out.extend_from_slice(b" elapsed:");
                push_f6(out, t_abs);
                out.extend_from_slice(b" code:");
                push_int(out, code);
            }
            K::Error { msg, fmt } => {
                out.extend_from_slice(b"error");
                if fmt.as_deref().is_some_and(|f| !f.is_empty()) || msg.is_some() {
                    out.push(b' ');
                    out.extend_from_slice(msg.as_deref().or(fmt.as_deref()).unwrap_or("").as_bytes());
                }
            }
            K::CmdPath { path } => {
                out.extend_from_slice(b"cmd_path ");
                out.extend_from_slice(path.as_bytes());
            }
            K::CmdAncestry { ancestry } => {
                out.extend_from_slice(b"cmd_ancestry ");
                for (i, a) in ancestry.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b" <- ");
                    }
                    out.extend_from_slice(a.as_bytes());
                }
            }
            K::CmdName { name, hierarchy } => {
                out.extend_from_slice(b"cmd_name ");
                out.extend_from_slice(name.as_bytes());
                if let Some(h) = hierarchy.as_deref().filter(|h| !h.is_empty()) {
                    out.extend_from_slice(b" (");
                    out.extend_from_slice(h.as_bytes());
                    out.push(b')');
                }
            }
            K::CmdMode { name } => {
                out.extend_from_slice(b"cmd_mode ");
                out.extend_from_slice(name.as_bytes());
            }
            K::Alias { alias, argv } => {
                out.extend_from_slice(b"alias ");
                out.extend_from_slice(alias.as_bytes());
                out.extend_from_slice(b" -> ");
                sq_argv(out, argv);
            }
            K::ChildStart {
                child_id,
                cd,
                git_cmd,
                argv,
                ..
            } => {
                out.extend_from_slice(b"child_start[");
                push_int(out, child_id);
                out.push(b']');
                if let Some(cd) = cd {
                    out.extend_from_slice(b" cd ");
                    sq_pretty(out, cd);
                    out.push(b';');
                }
                out.push(b' ');
                if *git_cmd {
                    out.extend_from_slice(b"git ");
                }
                sq_argv(out, argv);
            }
            K::ChildExit {
                child_id,
                pid,
                code,
                t_rel,
            } => {
                out.extend_from_slice(b"child_exit[");
                push_int(out, child_id);
                out.extend_from_slice(b"] pid:");
                push_int(out, pid);
                out.extend_from_slice(b" code:");
                push_int(out, code);
                out.extend_from_slice(b" elapsed:");
                push_f6(out, *t_rel);
            }
            K::ChildReady {
                child_id,
                pid,
                ready,
                t_rel,
            } => {
                out.extend_from_slice(b"child_ready[");
                push_int(out, child_id);
                out.extend_from_slice(b"] pid:");
                push_int(out, pid);
                out.extend_from_slice(b" ready:");
                out.extend_from_slice(ready.as_str().as_bytes());
                out.extend_from_slice(b" elapsed:");
                push_f6(out, *t_rel);
            }
            K::Exec { exec_id, exe, argv } => {
                out.extend_from_slice(b"exec[");
                push_int(out, exec_id);
                out.extend_from_slice(b"] ");
                if let Some(exe) = exe {
                    out.extend_from_slice(exe.as_bytes());
                    out.push(b' ');
                }
                sq_argv(out, argv);
            }
            K::ExecResult { exec_id, code } => {
                out.extend_from_slice(b"exec_result[");
                push_int(out, exec_id);
                out.extend_from_slice(b"] code:");
                push_int(out, code);
                if *code > 0 {
                    out.extend_from_slice(b" err:");
                    out.extend_from_slice(crate::sys::strerror(*code).as_bytes());
                }
            }
            K::DefParam { scope, param, value } => {
                out.extend_from_slice(b"def_param scope:");
                out.extend_from_slice(scope.as_deref().unwrap_or("unknown").as_bytes());
                out.push(b' ');
                out.extend_from_slice(param.as_bytes());
                if let Some(v) = value {
                    out.push(b'=');
                    out.extend_from_slice(v.as_bytes());
                }
            }
            K::DefRepo { worktree } => {
                out.extend_from_slice(b"worktree ");
                sq_pretty(out, worktree);
            }
            K::Printf { msg } => {
                if let Some(m) = msg {
                    out.extend_from_slice(m.as_bytes());
                }
            }
            K::Timer {
                category,
                name,
                intervals,
                t_total,
                t_min,
                t_max,
                ..
            } => {
                use std::io::Write;
                let _ = write!(
                    out,
                    "{} {}/{} intervals:{} total:{:8.6} min:{:8.6} max:{:8.6}",
                    ev.kind.name(),
                    category,
                    name,
                    intervals,
                    t_total,
                    t_min,
                    t_max
                );
            }
            K::Counter {
                category,
                name,
                count,
                ..
            } => {
                use std::io::Write;
                let _ = write!(out, "{} {}/{} value:{}", ev.kind.name(), category, name, count);
            }
            K::TooManyFiles
            | K::ThreadStart
            | K::ThreadExit { .. }
            | K::RegionEnter { .. }
            | K::RegionLeave { .. }
            | K::Data { .. }
            | K::DataJson { .. }
            | K::Other { .. } => {}
        }
        true
    }
}
