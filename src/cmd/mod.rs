//! One module per command, each a body from its parsed arguments ([`crate::cli`]) to proctrace's
//! exit status: it checks and opens its outputs ([`crate::output::Outputs::plan`]) before
//! anything runs or any file is touched, wires a backend (or a saved trace) to the engine, and
//! ends with the one report step ([`crate::output::Outputs::finish`]). [`dispatch`] picks the
//! body; `main` only parses and prints the error a body returns.

use crate::ProctraceError;
use crate::cli::{Cli, Cmd};

pub mod analyze;
pub mod diff;
pub mod generate;
pub mod replay;
pub mod run;
pub mod watch;

/// Runs the command `cli` names; returns proctrace's exit status.
pub fn dispatch(cli: Cli) -> Result<i32, ProctraceError> {
    match cli.cmd {
        Cmd::Run(a) => run::command(a),
        Cmd::Watch(a) => watch::command(a),
        Cmd::Replay(a) => replay::command(a),
        Cmd::Analyze(a) => analyze::command(a),
        Cmd::Diff(a) => diff::command(a),
        Cmd::Completions(a) => generate::completions(a),
        Cmd::Man(a) => generate::man(a),
    }
}
