//! `proctrace diff OLD NEW` as a command: both sides loaded (anything `analyze` reads), compared,
//! the comparison written to stdout (and with `--html FILE` as a page, `crate::report::html`).
//! Exit status: 0; 1 with `--fail-if-slower` when the wall time grew beyond it; 65 when a side
//! has a bad line; 74 when stdout or the page could not be written (a closed stdout, `| head`, is
//! a quiet end). The page's file is opened before anything is read, without truncating it (a
//! usage error or a bad input leaves it as it was), and is refused when it is one of the inputs.

use std::io::Write;

use super::{DiffOptions, EXIT_SLOWER, compare, load, render_json, render_text};
use crate::cli::DiffArgs;
use crate::input::InputOptions;
use crate::model::session::Tool;
use crate::output::dest::{DestKind, Identity, Opened, path_of};
use crate::output::{is_closed_pipe, term};
use crate::{ProctraceError, exit_codes};

/// Runs `diff`.
pub fn command(a: DiffArgs) -> Result<i32, ProctraceError> {
    if !(a.threshold >= 0.0
        && a.min_ms >= 0.0
        && a.min_rss_mib >= 0.0
        && a.fail_if_slower.is_none_or(|p| p >= 0.0))
    {
        return Err(ProctraceError::Usage(
            "--threshold, --min-ms, --min-rss-mib and --fail-if-slower take a number ≥ 0".into(),
        ));
    }
    let input = InputOptions {
        lenient: a.lenient,
        tool: Some(Tool::this_process()),
        max_line: a.max_line,
    };
    // The page's file: checked and opened before anything is read, emptied only once there is
    // a page to write.
    let page_to = match a.html.as_deref() {
        None => None,
        Some(v) if v == "-" => Some(Opened::Stdout),
        Some(v) => {
            let value = crate::model::bytes::from_os(v);
            let path = path_of(&value);
            let me = Identity::of(&path);
            if [&a.old, &a.new].iter().any(|i| Identity::of(i) == me) {
                return Err(ProctraceError::Usage(format!(
                    "--html {} is one of the traces compared",
                    path.display()
                )));
            }
            Some(Opened::open(DestKind::File, &value).map_err(|e| {
                ProctraceError::Usage(format!("cannot open {} for --html: {e}", path.display()))
            })?)
        }
    };
    // A file created here goes again when nothing is written to it (a bad input).
    let created = match &page_to {
        Some(Opened::File {
            path, created: true, ..
        }) => Some(path.clone()),
        _ => None,
    };
    let loaded = load(a.old, &input).and_then(|old| Ok((old, load(a.new, &input)?)));
    let (old, new) = match loaded {
        Ok(x) => x,
        Err(e) => {
            if let Some(p) = created {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    let opts = DiffOptions {
        threshold_pct: a.threshold,
        min_ms: a.min_ms,
        min_rss_mib: a.min_rss_mib,
        redact: !a.no_redact,
        files_dirs: a.files_dirs.0,
    };
    let r = compare((&old).into(), (&new).into(), opts);
    let mut status = exit_codes::OK;
    let page_on_stdout = matches!(page_to, Some(Opened::Stdout));
    if page_to.is_some() {
        let page =
            crate::report::html::diff_page((&old).into(), (&new).into(), &r, opts.redact, opts.files_dirs);
        match page_to {
            Some(Opened::File { mut file, path, .. }) => {
                // A regular file is replaced; a device (`/dev/null`, a terminal) written to.
                let regular = file.metadata().is_ok_and(|m| m.is_file());
                let wrote = (if regular { file.set_len(0) } else { Ok(()) }).and_then(|()| {
                    file.write_all(page.as_bytes())?;
                    file.flush()
                });
                if let Err(e) = wrote {
                    crate::say!(
                        "proctrace: cannot write the HTML report to {}: {e}",
                        path.display()
                    );
                    status = exit_codes::OUTPUT;
                }
            }
            Some(Opened::Stdout) => {
                let mut out = std::io::stdout().lock();
                match out.write_all(page.as_bytes()).and_then(|()| out.flush()) {
                    Ok(()) => {}
                    Err(e) if is_closed_pipe(&e) => return Ok(exit_codes::OK),
                    Err(e) => {
                        crate::say!("proctrace: cannot write the HTML report to stdout: {e}");
                        return Ok(exit_codes::OUTPUT);
                    }
                }
            }
            _ => {}
        }
    }
    let text = if page_on_stdout {
        String::new()
    } else if a.json {
        render_json(&r)
    } else {
        render_text(
            &r,
            term::color_for(term::Stream::Stdout, !a.no_color),
            term::width(),
        )
    };
    let skipped = old.stats.skipped_lines + new.stats.skipped_lines;
    if skipped > 0 {
        crate::say!("proctrace: {skipped} bad lines skipped (--lenient)");
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if is_closed_pipe(&e) => return Ok(exit_codes::OK),
        Err(e) => {
            crate::say!("proctrace: cannot write the comparison to stdout: {e}");
            return Ok(exit_codes::OUTPUT);
        }
    }
    if status != exit_codes::OK {
        return Ok(status);
    }
    Ok(match a.fail_if_slower {
        Some(p) if r.slower_than(p) => EXIT_SLOWER,
        _ => exit_codes::OK,
    })
}
