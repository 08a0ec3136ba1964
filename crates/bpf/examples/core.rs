//! Prints every CO-RE relocation of an object as resolved against the running kernel:
//! `cargo run -p proctrace-bpf --example core -- bpf/proctrace.bpf.o`.
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: core OBJECT")?;
    let object = std::fs::read(&path)?;
    let kernel = bpf::Btf::kernel()?;
    let mut out = std::io::stdout().lock();
    for r in bpf::core_report(&object, &kernel)? {
        let v = r
            .value
            .map_or("poisoned (no match)".to_string(), |v| v.to_string());
        let line = writeln!(
            out,
            "{} insn {}: kind {} {} = {v}",
            r.program, r.insn, r.kind, r.field
        );
        // A closed pipe (`| head`) ends quietly.
        if line.is_err() {
            return Ok(());
        }
    }
    Ok(())
}
