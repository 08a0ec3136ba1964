//! The `proctrace` command: parses the command line, runs the command it names, prints the error
//! a command returns and exits with the status it gives (ripgrep's shape). Everything else is in
//! the library: [`proctrace::cli`] (the options), [`proctrace::cmd`] (the bodies).

// mimalloc rather than glibc's malloc: `analyze` allocates the strings of every exec (argv, exe,
// cwd, comm) and every event; under glibc malloc/free were ~22% of its time (malloc_consolidate,
// _int_malloc, _int_free in `perf`). Measured on a 76 MB proctrace JSON Lines file (150k processes)
// and Trace2 streams: see the "Ingest of saved traces" section of BENCHMARKS.md. Its `no_thp`
// feature (Cargo.toml): with transparent huge pages the kernel zeroing 2 MiB pages took more
// system time than the whole model (307 MB JSON Lines: sys 2.0-3.4 s with THP, 0.7-0.9 s without).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

fn main() {
    let cli = proctrace::cli::Cli::parse();
    let code = match proctrace::cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            proctrace::say!("proctrace: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
