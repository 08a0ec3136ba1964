//! `proctrace run --record` captures: bytes → CaptureInput read strictly (to the first bad
//! line), then leniently → analyze → every sink and report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proctrace_fuzz::harness;

fuzz_target!(|data: &[u8]| {
    let _ = harness::capture_strict(data);
    let _ = harness::capture(data);
});
