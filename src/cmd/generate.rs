//! `proctrace completions SHELL` and `proctrace man [COMMAND]`: made from the same definitions
//! as the parser ([`crate::cli::Cli`]), so they never drift from it.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::output::is_closed_pipe;
use crate::{ProctraceError, exit_codes};

/// A completion script for `shell`, on stdout.
pub fn completions(a: CompletionsArgs) -> Result<i32, ProctraceError> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "proctrace", &mut out);
    to_stdout(&out)
}

/// A man page, the overview or a command's, on stdout.
pub fn man(a: ManArgs) -> Result<i32, ProctraceError> {
    let mut cmd = Cli::command();
    let page = match a.command {
        None => cmd,
        Some(name) => {
            cmd.build();
            // Built, a subcommand is named `proctrace-run` (title) and `proctrace run`
            // (synopsis).
            cmd.find_subcommand(&name)
                .cloned()
                .ok_or_else(|| {
                    ProctraceError::Usage(format!("no command '{name}' (try: run, watch, replay)"))
                })?
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| ProctraceError::Io("rendering the man page".into(), e))?;
    to_stdout(&out)
}

fn to_stdout(bytes: &[u8]) -> Result<i32, ProctraceError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(exit_codes::OK),
        Err(e) if is_closed_pipe(&e) => Ok(exit_codes::OK),
        Err(e) => {
            crate::say!("proctrace: cannot write to stdout: {e}");
            Ok(exit_codes::OUTPUT)
        }
    }
}
