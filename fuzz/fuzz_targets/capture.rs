//! `proctrace run --record` captures: bytes → CaptureInput → analyze → every sink and report,
//! strict and lenient.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proctrace_fuzz::harness;

fuzz_target!(|data: &[u8]| {
    let _ = harness::capture(data, false);
    let _ = harness::capture(data, true);
});
