//! Linux process ancestry for `cmd_ancestry`: the `comm` names of the parent,
//! grandparent, … up to and including pid 1, read from `/proc/<pid>/stat`.
//! A process that vanished mid-walk simply ends the list.

/// Names of this process's ancestors, parent first.
pub fn ancestry_names() -> Vec<String> {
    let mut out = Vec::new();
    let mut pid = std::os::unix::process::parent_id();
    // Bounded walk: a pid cycle cannot happen, but never loop forever.
    for _ in 0..4096 {
        if pid == 0 {
            break;
        }
        let Some((name, ppid)) = stat_name_ppid(pid) else {
            break;
        };
        out.push(name);
        pid = ppid;
    }
    out
}

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid …`. The comm may hold
/// spaces and parentheses, so the name ends at the last `)`.
pub fn stat_name_ppid(pid: u32) -> Option<(String, u32)> {
    let raw = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&raw)
}

fn parse_stat(raw: &[u8]) -> Option<(String, u32)> {
    let open = raw.iter().position(|&b| b == b'(')?;
    let close = raw.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let name = String::from_utf8_lossy(&raw[open + 1..close]).into_owned();
    let rest = std::str::from_utf8(raw.get(close + 1..)?).ok()?;
    let mut it = rest.split_ascii_whitespace();
    let _state = it.next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((name, ppid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_odd_names() {
        assert_eq!(parse_stat(b"12 (a) b) S 7 1 1"), Some(("a) b".to_string(), 7)));
        assert_eq!(parse_stat(b"garbage"), None);
        assert!(!ancestry_names().is_empty());
    }
}
