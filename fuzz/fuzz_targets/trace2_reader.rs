//! git Trace2 event streams: bytes → trace2::reader strictly (to the first bad line), then
//! leniently → brief times, nesting, grouping → regions and data as model events → the three
//! writers (whose event lines must read back).
#![no_main]

use libfuzzer_sys::fuzz_target;
use proctrace_fuzz::harness;

fuzz_target!(|data: &[u8]| {
    let _ = harness::trace2_strict(data);
    let _ = harness::trace2_stream(data);
});
