//! proctrace's own `-o` JSON Lines (seeded with real ones; any format `analyze` reads is
//! taken, as `proctrace analyze FILE` does): bytes → a file → input::open (format by content)
//! strictly, then leniently → analyze → every sink and report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proctrace_fuzz::harness;

fuzz_target!(|data: &[u8]| {
    let _ = harness::any_file(data);
});
