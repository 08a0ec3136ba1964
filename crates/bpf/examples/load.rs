//! Loads an object's programs and prints how long each step took:
//! `cargo run -p proctrace-bpf --example load -- bpf/proctrace.bpf.o`.
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: load OBJECT")?;
    let object = std::fs::read(&path)?;
    let t0 = Instant::now();
    let kernel = bpf::Btf::kernel()?;
    let t1 = Instant::now();
    let cpus = bpf::possible_cpus()?.1;
    let prepared = bpf::Loader::new(&object)
        .global("whole_system", &1u32.to_ne_bytes())
        .max_entries("scratch", cpus)
        .prepare(&kernel)?;
    let t2 = Instant::now();
    let mut links = Vec::new();
    let names: Vec<String> = prepared.programs().map(|(n, _)| n.to_string()).collect();
    for name in &names {
        let p = prepared.load(name)?;
        links.push(p.attach()?);
    }
    let t3 = Instant::now();
    println!(
        "kernel BTF {:?} ({} types), prepare {:?}, load+attach {:?}",
        t1 - t0,
        kernel.len(),
        t2 - t1,
        t3 - t2
    );
    Ok(())
}
