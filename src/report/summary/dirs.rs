//! Directories summarised (`--files`, `--files-dirs N`): a list of files as people read it.
//!
//! **The rule.** The files of a list (what one process read, what the whole run wrote, what a
//! command newly reads in a `diff`) are grouped by the directory that holds them. A directory
//! holding more than N of them (`--files-dirs N`, default [`DIRS_MORE_THAN`]) is one entry: the
//! directory, with a `/` at the end, how many of the list's files it holds, and its most-used
//! files ([`TOP_IN_DIR`]). The others are listed one by one. In the list of one process (or of
//! one command in a `diff`) the files under the command's working directory — the project's
//! own sources, headers and objects, what a build engineer asks about — are always listed one
//! by one; the whole run's lists summarise them too (otherwise they would be the whole list).
//! Only a directory's own files count: `bits/` and `bits/types/` are two entries, and a file is
//! never counted twice.
//!
//! The machine outputs keep every file as well (JSON Lines, and the summary JSON's per-file
//! lists); this is a view beside them.

use foldhash::{HashMap, HashMapExt as _};

/// A directory holding more than this many of a list's files is one entry, by default.
pub const DIRS_MORE_THAN: usize = 3;

/// How many of a directory's files its entry names (the most used).
pub const TOP_IN_DIR: usize = 3;

/// How lists of files are summarised: a directory holding more than `more_than` of a list's
/// files is one entry (`None`: every file listed); files under `project` (a directory ending
/// in `/`) stay listed in the lists of one process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirRule {
    /// The threshold; `None`: no directory is summarised.
    pub more_than: Option<usize>,
    /// The command's working directory, ending in `/`; `None` when unknown or `/`.
    pub project: Option<String>,
}

impl DirRule {
    /// The rule with threshold `more_than` and the project under `cwd` (the command's working
    /// directory; `/` is no project: everything would be under it).
    pub fn new(more_than: Option<usize>, cwd: Option<&str>) -> DirRule {
        let project = cwd
            .map(|c| c.trim_end_matches('/'))
            .filter(|c| !c.is_empty())
            .map(|c| format!("{c}/"));
        DirRule { more_than, project }
    }

    /// Whether `path` is under the project.
    pub fn in_project(&self, path: &str) -> bool {
        self.project.as_deref().is_some_and(|p| path.starts_with(p))
    }
}

/// `--files-dirs N`: the threshold of the rule (`None`: no directory summarised).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoreThan(pub Option<usize>);

impl Default for MoreThan {
    fn default() -> Self {
        MoreThan(Some(DIRS_MORE_THAN))
    }
}

/// One entry of a summarised list: a file, or a directory standing for the list's files it
/// holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The file's path, or the directory's, ending in `/`.
    pub path: &'a str,
    /// A directory.
    pub dir: bool,
    /// The indexes in the list of the files it stands for (one for a file), in the list's order.
    pub members: Vec<usize>,
}

/// The directory holding `path`, with its `/` (`/usr/include/` of `/usr/include/stdio.h`);
/// `None` for a name without a `/`, or one ending in it.
pub fn parent(path: &str) -> Option<&str> {
    let i = path.rfind('/')?;
    (i + 1 < path.len()).then(|| &path[..=i])
}

/// The list `paths` (distinct paths, in their order) summarised by `rule` (the module docs):
/// entries in the order of their first file. `keep_project`: the files under the rule's
/// project stay listed (the list of one process or command).
pub fn collapse<'a>(paths: &[&'a str], rule: &DirRule, keep_project: bool) -> Vec<Entry<'a>> {
    let kept = |p: &str| keep_project && rule.in_project(p);
    let mut by_dir: HashMap<&'a str, Vec<usize>> = HashMap::new();
    // A list of at most N files has no directory to summarise (most of a build's processes).
    if rule.more_than.is_some_and(|n| paths.len() > n) {
        for (i, &p) in paths.iter().enumerate() {
            if kept(p) {
                continue;
            }
            if let Some(d) = parent(p) {
                by_dir.entry(d).or_default().push(i);
            }
        }
    }
    let n = rule.more_than.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for (i, &p) in paths.iter().enumerate() {
        let dir = if kept(p) { None } else { parent(p) };
        match dir.and_then(|d| by_dir.get(d).filter(|m| m.len() > n).map(|m| (d, m))) {
            // The directory's entry, at its first file; its other files are in it.
            Some((d, members)) => {
                if members.first() == Some(&i) {
                    out.push(Entry {
                        path: d,
                        dir: true,
                        members: members.clone(),
                    });
                }
            }
            None => out.push(Entry {
                path: p,
                dir: false,
                members: vec![i],
            }),
        }
    }
    out
}

/// Sorts entries as people read them: with `project_first`, the files under the project first
/// (in the list's order), then the rest most files first; otherwise most files first. Ties
/// keep the list's order.
pub fn sort_entries(v: &mut [Entry<'_>], rule: &DirRule, project_first: bool) {
    v.sort_by_key(|e| {
        (
            !(project_first && !e.dir && rule.in_project(e.path)),
            std::cmp::Reverse(e.members.len()),
        )
    });
}

/// The most used of a directory entry's files, at most [`TOP_IN_DIR`]: the indexes of its
/// members with the highest `uses`, ties in the list's order.
pub fn top(e: &Entry<'_>, uses: impl Fn(usize) -> u64) -> Vec<usize> {
    let mut m: Vec<(u64, usize)> = e.members.iter().map(|&i| (uses(i), i)).collect();
    m.sort_by_key(|&(u, i)| (std::cmp::Reverse(u), i));
    m.into_iter().take(TOP_IN_DIR).map(|(_, i)| i).collect()
}

/// `--files-dirs`: a number, or `none`.
pub fn parse_more_than(s: &str) -> Result<MoreThan, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(MoreThan(None));
    }
    s.trim().parse::<usize>().map(|n| MoreThan(Some(n))).map_err(|_| {
        format!(
            "'{}' is not a number of files (e.g. 3), or none",
            crate::model::escape::text(s)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(paths: &[&'a str], rule: &DirRule, keep: bool) -> Vec<(&'a str, usize)> {
        collapse(paths, rule, keep)
            .into_iter()
            .map(|e| (e.path, e.members.len()))
            .collect()
    }

    #[test]
    fn a_directory_with_more_than_n_files_is_one_entry() {
        let rule = DirRule::new(Some(3), None);
        let paths = [
            "/usr/include/stdio.h",
            "/usr/include/x86_64-linux-gnu/bits/a.h",
            "/usr/include/x86_64-linux-gnu/bits/b.h",
            "/usr/include/x86_64-linux-gnu/bits/types/t.h",
            "/usr/include/x86_64-linux-gnu/bits/c.h",
            "/usr/include/x86_64-linux-gnu/bits/d.h",
            "/usr/include/stdlib.h",
        ];
        assert_eq!(
            view(&paths, &rule, true),
            [
                ("/usr/include/stdio.h", 1),
                ("/usr/include/x86_64-linux-gnu/bits/", 4),
                ("/usr/include/x86_64-linux-gnu/bits/types/t.h", 1),
                ("/usr/include/stdlib.h", 1),
            ]
        );
        // Exactly N stay listed; `None` lists everything.
        assert_eq!(view(&paths[1..4], &rule, true).len(), 3);
        assert_eq!(view(&paths, &DirRule::new(None, None), true).len(), 7);
        // 0: every file in its directory.
        assert_eq!(
            view(&paths, &DirRule::new(Some(0), None), true),
            [
                ("/usr/include/", 2),
                ("/usr/include/x86_64-linux-gnu/bits/", 4),
                ("/usr/include/x86_64-linux-gnu/bits/types/", 1),
            ]
        );
    }

    #[test]
    fn the_members_are_every_file_once() {
        let rule = DirRule::new(Some(1), Some("/p"));
        let paths = ["/p/a.c", "/u/1", "/p/b.c", "/u/2", "/v/x", "/p/c.c", "/u/3"];
        for keep in [true, false] {
            let v = collapse(&paths, &rule, keep);
            let mut all: Vec<usize> = v.iter().flat_map(|e| e.members.clone()).collect();
            all.sort_unstable();
            assert_eq!(all, (0..paths.len()).collect::<Vec<_>>(), "{v:?}");
            for e in &v {
                for &m in &e.members {
                    assert!(paths[m].starts_with(e.path), "{e:?}");
                    assert_eq!(e.dir, e.path.ends_with('/'));
                }
            }
        }
    }

    #[test]
    fn the_projects_files_stay_listed_in_a_process_list() {
        let rule = DirRule::new(Some(2), Some("/work/proj/"));
        let paths = [
            "/work/proj/a.c",
            "/work/proj/a.h",
            "/work/proj/b.h",
            "/work/proj/c.h",
            "/usr/include/1.h",
            "/usr/include/2.h",
            "/usr/include/3.h",
            // a sibling with the project's name as a prefix is not in it
            "/work/project2/x.h",
        ];
        let mut v = collapse(&paths, &rule, true);
        sort_entries(&mut v, &rule, true);
        let got: Vec<(&str, usize)> = v.iter().map(|e| (e.path, e.members.len())).collect();
        assert_eq!(
            got,
            [
                ("/work/proj/a.c", 1),
                ("/work/proj/a.h", 1),
                ("/work/proj/b.h", 1),
                ("/work/proj/c.h", 1),
                ("/usr/include/", 3),
                ("/work/project2/x.h", 1),
            ]
        );
        // The whole run's list summarises them too.
        let mut v = collapse(&paths, &rule, false);
        sort_entries(&mut v, &rule, false);
        let got: Vec<(&str, usize)> = v.iter().map(|e| (e.path, e.members.len())).collect();
        assert_eq!(
            got,
            [
                ("/work/proj/", 4),
                ("/usr/include/", 3),
                ("/work/project2/x.h", 1)
            ]
        );
        // `/` is no project.
        assert_eq!(DirRule::new(Some(2), Some("/")).project, None);
        assert_eq!(
            DirRule::new(Some(2), Some("/a/b")).project.as_deref(),
            Some("/a/b/")
        );
    }

    #[test]
    fn odd_names_are_their_own_entries() {
        let rule = DirRule::new(Some(0), None);
        // no slash, a trailing slash, the root's own files, held bytes and escapes
        let paths = ["name", "/dir/", "/a", "/b", "/x/\u{10FF80}\u{1b}[31m", "/x/\n"];
        assert_eq!(
            view(&paths, &rule, false),
            [("name", 1), ("/dir/", 1), ("/", 2), ("/x/", 2)]
        );
        assert_eq!(parent("/"), None);
        assert_eq!(parent("/a"), Some("/"));
    }

    #[test]
    fn the_top_files_are_the_most_used() {
        let e = Entry {
            path: "/d/",
            dir: true,
            members: vec![0, 1, 2, 3, 4],
        };
        let uses = [1, 5, 1, 5, 2];
        assert_eq!(top(&e, |i| uses[i]), [1, 3, 4]);
    }

    #[test]
    fn the_flag_is_a_number_or_none() {
        assert_eq!(parse_more_than("5"), Ok(MoreThan(Some(5))));
        assert_eq!(parse_more_than("none"), Ok(MoreThan(None)));
        assert_eq!(MoreThan::default(), MoreThan(Some(DIRS_MORE_THAN)));
        assert!(parse_more_than("-1").unwrap_err().contains("'-1'"));
        assert!(parse_more_than("\u{1b}[2J").unwrap_err().contains("\\e[2J"));
    }
}
