//! The perf target: `|`-separated columns (git ≥ 2.24 widths) and dots
//! showing the thread's region depth.

use std::io::Write;

use super::{FormatOptions, Target, push_int, push_padded, push_time};
use crate::event::{Event, EventKind};
use crate::quote::{sq_argv, sq_pretty};

/// git's `GIT_TRACE2_PERF` layout.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfTarget;

const FL_WIDTH: usize = 28;
const THREAD_WIDTH: usize = 24;
const EVENT_WIDTH: usize = 12;
const REPO_WIDTH: usize = 3;
const CATEGORY_WIDTH: usize = 12;
/// Most nesting levels drawn as dots. git's depth is that of its real regions (a handful); a
/// file read back can claim four billion (found by fuzzing: gigabytes of dots on one line, and
/// `2 * (nesting - 1)` overflowed).
const MAX_INDENT_LEVELS: u32 = 100;

struct Columns<'c> {
    t_abs: bool,
    t_rel: Option<f64>,
    category: Option<&'c str>,
}

fn prefix(ev: &Event<'_>, opts: &FormatOptions, cols: &Columns<'_>, out: &mut Vec<u8>) {
    if !opts.brief {
        push_time(ev, opts, out);
        out.push(b' ');
        let end = out.len() + FL_WIDTH;
        if let Some(f) = ev.file.as_deref().filter(|f| !f.is_empty()) {
            let fl = format!("{f}:{}", ev.line);
            let b = fl.as_bytes();
            if b.len() <= FL_WIDTH {
                out.extend_from_slice(b);
            } else {
                out.extend_from_slice(b"...");
                out.extend_from_slice(&b[b.len() - (FL_WIDTH - 3)..]);
            }
        }
        while out.len() < end {
            out.push(b' ');
        }
        out.extend_from_slice(b" | ");
    }
    out.push(b'd');
    push_int(out, crate::sid::depth(&ev.sid));
    out.extend_from_slice(b" | ");
    push_padded(out, ev.thread.as_bytes(), THREAD_WIDTH);
    out.extend_from_slice(b" | ");
    push_padded(out, ev.kind.name().as_bytes(), EVENT_WIDTH);
    out.extend_from_slice(b" | ");
    let repo_start = out.len();
    if let Some(r) = ev.repo {
        let _ = write!(out, "r{r} ");
    }
    while out.len() < repo_start + REPO_WIDTH {
        out.push(b' ');
    }
    out.extend_from_slice(b" | ");
    if cols.t_abs {
        let _ = write!(out, "{:9.6} | ", ev.t_abs.unwrap_or(0.0));
    } else {
        out.extend_from_slice(b"          | ");
    }
    match cols.t_rel {
        Some(t) => {
            let _ = write!(out, "{t:9.6} | ");
        }
        None => out.extend_from_slice(b"          | "),
    }
    let cat = cols.category.unwrap_or("").as_bytes();
    // `%-12.12s`: truncated to 12 bytes, then padded.
    push_padded(out, &cat[..cat.len().min(CATEGORY_WIDTH)], CATEGORY_WIDTH);
    out.extend_from_slice(b" | ");
    let levels = ev.nesting.clamp(1, MAX_INDENT_LEVELS) - 1;
    out.resize(out.len() + 2 * levels as usize, b'.');
}

impl Target for PerfTarget {
    fn format(&self, ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) -> bool {
        use EventKind as K;
        let none = Columns {
            t_abs: false,
            t_rel: None,
            category: None,
        };
        let abs = Columns {
            t_abs: true,
            t_rel: None,
            category: None,
        };
        let cols = match &ev.kind {
            K::TooManyFiles | K::Other { .. } => return false,
            K::Version { .. } | K::Error { .. } | K::CmdPath { .. } | K::CmdAncestry { .. } => none,
            K::CmdName { .. } | K::CmdMode { .. } | K::Alias { .. } | K::DefRepo { .. } => none,
            K::Start { .. } | K::Exit { .. } | K::Atexit { .. } | K::Signal { .. } => abs,
            K::ChildStart { .. }
            | K::ThreadStart
            | K::Exec { .. }
            | K::ExecResult { .. }
            | K::Printf { .. } => abs,
            K::ChildExit { t_rel, .. } | K::ChildReady { t_rel, .. } | K::ThreadExit { t_rel } => Columns {
                t_abs: true,
                t_rel: Some(*t_rel),
                category: None,
            },
            K::DefParam { .. } => none,
            K::RegionEnter { category, .. } => Columns {
                t_abs: true,
                t_rel: None,
                category: category.as_deref(),
            },
            K::RegionLeave { t_rel, category, .. } => Columns {
                t_abs: true,
                t_rel: Some(*t_rel),
                category: category.as_deref(),
            },
            K::Data { t_rel, category, .. } | K::DataJson { t_rel, category, .. } => Columns {
                t_abs: true,
                t_rel: Some(*t_rel),
                category: Some(category),
            },
            K::Timer { category, .. } | K::Counter { category, .. } => Columns {
                t_abs: false,
                t_rel: None,
                category: Some(category),
            },
        };
        if let K::DefParam { scope, .. } = &ev.kind {
            let cat = format!("scope:{}", scope.as_deref().unwrap_or("unknown"));
            let c = Columns {
                t_abs: false,
                t_rel: None,
                category: Some(&cat),
            };
            prefix(ev, opts, &c, out);
        } else {
            prefix(ev, opts, &cols, out);
        }
        match &ev.kind {
            K::Version { exe, .. } => out.extend_from_slice(exe.as_bytes()),
            K::Start { argv } => sq_argv(out, argv),
            K::Exit { code } | K::Atexit { code } => {
                let _ = write!(out, "code:{code}");
            }
            K::Signal { signo } => {
                let _ = write!(out, "signo:{signo}");
            }
            K::Error { msg, fmt } => {
                if let Some(m) = msg.as_deref().or(fmt.as_deref()) {
                    out.extend_from_slice(m.as_bytes());
                }
            }
            K::CmdPath { path } => out.extend_from_slice(path.as_bytes()),
            K::CmdAncestry { ancestry } => {
                out.extend_from_slice(b"ancestry:[");
                sq_argv(out, ancestry);
                out.push(b']');
            }
            K::CmdName { name, hierarchy } => {
                out.extend_from_slice(name.as_bytes());
                if let Some(h) = hierarchy.as_deref().filter(|h| !h.is_empty()) {
                    let _ = write!(out, " ({h})");
                }
            }
            K::CmdMode { name } => out.extend_from_slice(name.as_bytes()),
            K::Alias { alias, argv } => {
                let _ = write!(out, "alias:{alias} argv:[");
                sq_argv(out, argv);
                out.push(b']');
            }
            K::ChildStart {
                child_id,
                child_class,
                hook_name,
                cd,
                git_cmd,
                argv,
                ..
            } => {
                match hook_name {
                    Some(h) => {
                        let _ = write!(out, "[ch{child_id}] class:hook hook:{h}");
                    }
                    None => {
                        let class: &str = if child_class.is_empty() { "?" } else { child_class };
                        let _ = write!(out, "[ch{child_id}] class:{class}");
                    }
                }
                if let Some(cd) = cd {
                    out.extend_from_slice(b" cd:");
                    sq_pretty(out, cd);
                }
                out.extend_from_slice(b" argv:[");
                if *git_cmd {
                    out.extend_from_slice(b"git");
                    if !argv.is_empty() {
                        out.push(b' ');
                    }
                }
                sq_argv(out, argv);
                out.push(b']');
            }
            K::ChildExit {
                child_id, pid, code, ..
            } => {
                let _ = write!(out, "[ch{child_id}] pid:{pid} code:{code}");
            }
            K::ChildReady {
                child_id, pid, ready, ..
            } => {
                let _ = write!(out, "[ch{child_id}] pid:{pid} ready:{}", ready.as_str());
            }
            K::ThreadStart | K::ThreadExit { .. } => {}
            K::Exec { exec_id, exe, argv } => {
                let _ = write!(out, "id:{exec_id} argv:[");
                if let Some(exe) = exe {
                    out.extend_from_slice(exe.as_bytes());
                    if !argv.is_empty() {
                        out.push(b' ');
                    }
                }
                sq_argv(out, argv);
                out.push(b']');
            }
            K::ExecResult { exec_id, code } => {
                let _ = write!(out, "id:{exec_id} code:{code}");
                if *code > 0 {
                    let _ = write!(out, " err:{}", crate::sys::strerror(*code));
                }
            }
            K::DefParam { param, value, .. } => {
                out.extend_from_slice(param.as_bytes());
                if let Some(v) = value {
                    out.push(b':');
                    out.extend_from_slice(v.as_bytes());
                }
            }
            K::DefRepo { worktree } => {
                out.extend_from_slice(b"worktree:");
                sq_pretty(out, worktree);
            }
            K::RegionEnter { label, msg, .. } | K::RegionLeave { label, msg, .. } => {
                if let Some(l) = label {
                    let _ = write!(out, "label:{l}");
                }
                if let Some(m) = msg.as_deref().filter(|m| !m.is_empty()) {
                    out.push(b' ');
                    out.extend_from_slice(m.as_bytes());
                }
            }
            K::Data { key, value, .. } | K::DataJson { key, value, .. } => {
                let _ = write!(out, "{key}:{value}");
            }
            K::Printf { msg } => {
                if let Some(m) = msg {
                    out.extend_from_slice(m.as_bytes());
                }
            }
            K::Timer {
                name,
                intervals,
                t_total,
                t_min,
                t_max,
                ..
            } => {
                let _ = write!(
                    out,
                    "name:{name} intervals:{intervals} total:{t_total:8.6} min:{t_min:8.6} max:{t_max:8.6}"
                );
            }
            K::Counter { name, count, .. } => {
                let _ = write!(out, "name:{name} value:{count}");
            }
            K::TooManyFiles | K::Other { .. } => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, EventKind};

    /// Found by fuzzing the reader and writing what it read (`cargo fuzz run trace2_reader`).
    #[test]
    fn a_huge_nesting_is_drawn_capped() {
        let ev = Event::new(
            "sid",
            "main",
            EventKind::RegionEnter {
                category: Some("c".into()),
                label: Some("l".into()),
                msg: None,
            },
        );
        let opts = FormatOptions {
            brief: true,
            ..FormatOptions::default()
        };
        let dots = |nesting: u32| {
            let mut ev = ev.clone();
            ev.nesting = nesting;
            let mut out = Vec::new();
            assert!(PerfTarget.format(&ev, &opts, &mut out));
            out.iter()
                .rev()
                .take_while(|&&b| b != b'|')
                .filter(|&&b| b == b'.')
                .count()
        };
        assert_eq!(dots(3), 4);
        assert_eq!(dots(1_473_663_709), 2 * 99);
        assert_eq!(dots(u32::MAX), 2 * 99);
        assert_eq!(dots(0), 0);
    }
}
