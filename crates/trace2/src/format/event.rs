//! The event target: one compact JSON object per line, keys in git's order.

use super::{FormatOptions, Target, push_f6, push_int};
use crate::event::{Event, EventKind, Str};
use crate::quote::json_string;
use crate::time::Timestamp;

/// git's `GIT_TRACE2_EVENT` layout (format version "4").
#[derive(Debug, Clone, Copy, Default)]
pub struct EventTarget;

struct Obj<'o> {
    out: &'o mut Vec<u8>,
}

impl Obj<'_> {
    fn key(&mut self, k: &str) {
        self.out.extend_from_slice(b",\"");
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
    }
    fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        json_string(self.out, v);
    }
    fn opt_str(&mut self, k: &str, v: &Option<Str<'_>>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }
    fn int(&mut self, k: &str, v: impl std::fmt::Display) {
        self.key(k);
        push_int(self.out, v);
    }
    fn f6(&mut self, k: &str, v: f64) {
        self.key(k);
        push_f6(self.out, v);
    }
    fn bool(&mut self, k: &str, v: bool) {
        self.key(k);
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
    }
    fn argv(&mut self, k: &str, prefix: Option<&str>, argv: &[Str<'_>]) {
        self.key(k);
        self.out.push(b'[');
        let mut first = true;
        for a in prefix.into_iter().chain(argv.iter().map(|a| a.as_ref())) {
            if !first {
                self.out.push(b',');
            }
            first = false;
            json_string(self.out, a);
        }
        self.out.push(b']');
    }
}

fn filtered_by_nesting(kind: &EventKind<'_>) -> bool {
    matches!(
        kind,
        EventKind::RegionEnter { .. }
            | EventKind::RegionLeave { .. }
            | EventKind::Data { .. }
            | EventKind::DataJson { .. }
    )
}

impl Target for EventTarget {
    fn format(&self, ev: &Event<'_>, opts: &FormatOptions, out: &mut Vec<u8>) -> bool {
        use EventKind as K;
        if matches!(ev.kind, K::Other { .. }) {
            return false;
        }
        if filtered_by_nesting(&ev.kind) && ev.nesting > opts.event_nesting {
            return false;
        }
        let name = ev.kind.name();
        out.extend_from_slice(b"{\"event\":");
        json_string(out, name);
        let mut o = Obj { out };
        o.str("sid", &ev.sid);
        o.str("thread", &ev.thread);
        if !opts.brief || matches!(ev.kind, K::Version { .. } | K::Atexit { .. }) {
            o.key("time");
            o.out.push(b'"');
            ev.time.unwrap_or_else(Timestamp::now).write_utc_extended(o.out);
            o.out.push(b'"');
        }
        if !opts.brief
            && let Some(f) = ev.file.as_deref().filter(|f| !f.is_empty())
        {
            o.str("file", f);
            o.int("line", ev.line);
        }
        if let Some(r) = ev.repo {
            o.int("repo", r);
        }
        let t_abs = ev.t_abs.unwrap_or(0.0);
        match &ev.kind {
            K::Version { evt, exe } => {
                o.str("evt", evt);
                o.str("exe", exe);
            }
            K::TooManyFiles | K::ThreadStart | K::Other { .. } => {}
            K::Start { argv } => {
                o.f6("t_abs", t_abs);
                o.argv("argv", None, argv);
            }
            K::Exit { code } | K::Atexit { code } => {
                o.f6("t_abs", t_abs);
                o.int("code", code);
            }
            K::Signal { signo } => {
                o.f6("t_abs", t_abs);
                o.int("signo", signo);
            }
            K::Error { msg, fmt } => {
                o.opt_str("msg", msg);
                o.opt_str("fmt", fmt);
            }
            K::CmdPath { path } => o.str("path", path),
            K::CmdAncestry { ancestry } => o.argv("ancestry", None, ancestry),
            K::CmdName { name, hierarchy } => {
                o.str("name", name);
                if let Some(h) = hierarchy.as_deref().filter(|h| !h.is_empty()) {
                    o.str("hierarchy", h);
                }
            }
            K::CmdMode { name } => o.str("name", name),
            K::Alias { alias, argv } => {
                o.str("alias", alias);
                o.argv("argv", None, argv);
            }
            K::ChildStart {
                child_id,
                child_class,
                hook_name,
                cd,
                use_shell,
                git_cmd,
                argv,
            } => {
                o.int("child_id", child_id);
                match hook_name {
                    Some(h) => {
                        o.str("child_class", "hook");
                        o.str("hook_name", h);
                    }
                    None => o.str(
                        "child_class",
                        if child_class.is_empty() { "?" } else { child_class },
                    ),
                }
                o.opt_str("cd", cd);
                o.bool("use_shell", *use_shell);
                o.argv("argv", git_cmd.then_some("git"), argv);
            }
            K::ChildExit {
                child_id,
                pid,
                code,
                t_rel,
            } => {
                o.int("child_id", child_id);
                o.int("pid", pid);
                o.int("code", code);
                o.f6("t_rel", *t_rel);
            }
            K::ChildReady {
                child_id,
                pid,
                ready,
                t_rel,
            } => {
                o.int("child_id", child_id);
                o.int("pid", pid);
                o.str("ready", ready.as_str());
                o.f6("t_rel", *t_rel);
            }
            K::Exec { exec_id, exe, argv } => {
                o.int("exec_id", exec_id);
                o.opt_str("exe", exe);
                o.argv("argv", None, argv);
            }
            K::ExecResult { exec_id, code } => {
                o.int("exec_id", exec_id);
                o.int("code", code);
            }
            K::ThreadExit { t_rel } => o.f6("t_rel", *t_rel),
            K::DefParam { scope, param, value } => {
                o.opt_str("scope", scope);
                o.str("param", param);
                o.opt_str("value", value);
            }
            K::DefRepo { worktree } => o.str("worktree", worktree),
            K::RegionEnter { category, label, msg } => {
                o.int("nesting", ev.nesting);
                o.opt_str("category", category);
                o.opt_str("label", label);
                o.opt_str("msg", msg);
            }
            K::RegionLeave {
                t_rel,
                category,
                label,
                msg,
            } => {
                o.f6("t_rel", *t_rel);
                o.int("nesting", ev.nesting);
                o.opt_str("category", category);
                o.opt_str("label", label);
                o.opt_str("msg", msg);
            }
            K::Data {
                t_rel,
                category,
                key,
                value,
            } => {
                o.f6("t_abs", t_abs);
                o.f6("t_rel", *t_rel);
                o.int("nesting", ev.nesting);
                o.str("category", category);
                o.str("key", key);
                o.str("value", value);
            }
            K::DataJson {
                t_rel,
                category,
                key,
                value,
            } => {
                o.f6("t_abs", t_abs);
                o.f6("t_rel", *t_rel);
                o.int("nesting", ev.nesting);
                o.str("category", category);
                o.str("key", key);
                o.key("value");
                o.out.extend_from_slice(value.as_bytes());
            }
            K::Printf { msg } => {
                o.f6("t_abs", t_abs);
                o.opt_str("msg", msg);
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
                o.str("category", category);
                o.str("name", name);
                o.int("intervals", intervals);
                o.f6("t_total", *t_total);
                o.f6("t_min", *t_min);
                o.f6("t_max", *t_max);
            }
            K::Counter {
                category,
                name,
                count,
                ..
            } => {
                o.str("category", category);
                o.str("name", name);
                o.int("count", count);
            }
        }
        o.out.push(b'}');
        true
    }
}
