//! `proctrace diff OLD NEW` as a command: both sides loaded (anything `analyze` reads), compared,
//! the comparison written to stdout. Exit status: 0; 1 with `--fail-if-slower` when the wall
//! time grew beyond it; 65 when a side has a bad line; 74 when stdout could not be written (a
//! closed stdout, `| head`, is a quiet end).

use std::io::Write;

use super::{DiffOptions, EXIT_SLOWER, compare, load, render_json, render_text};
use crate::cli::DiffArgs;
use crate::input::InputOptions;
use crate::model::session::Tool;
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
    let old = load(a.old, &input)?;
    let new = load(a.new, &input)?;
    let opts = DiffOptions {
        threshold_pct: a.threshold,
        min_ms: a.min_ms,
        min_rss_mib: a.min_rss_mib,
        redact: !a.no_redact,
    };
    let r = compare((&old).into(), (&new).into(), opts);
    let text = if a.json {
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
    Ok(match a.fail_if_slower {
        Some(p) if r.slower_than(p) => EXIT_SLOWER,
        _ => exit_codes::OK,
    })
}
