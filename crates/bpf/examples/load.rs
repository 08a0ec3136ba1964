//! Loads an object's programs (all of them: for proctrace's, both variants of each), attaches
//! them, and says how long each step took (per program: `examples/verify`):
//! `cargo run --release -p proctrace-bpf --example load -- bpf/proctrace.bpf.o [--btf]`
//! (`--btf`: with the object's BTF loaded, for function and line info).
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: load OBJECT [--btf]")?;
    let with_btf = args.next().as_deref() == Some("--btf");
    let object = std::fs::read(&path)?;
    let t0 = Instant::now();
    let kernel = bpf::Btf::kernel()?;
    let t1 = Instant::now();
    let report = bpf::core_report(&object, &kernel)?;
    let t2 = Instant::now();
    let cpus = bpf::possible_cpus()?.1;
    let prepared = bpf::Loader::new(&object)
        .global("whole_system", &1u32.to_ne_bytes())
        .max_entries("scratch", cpus)
        .object_btf(with_btf)
        .prepare(&kernel)?;
    let t3 = Instant::now();
    let mut links = Vec::new();
    let names: Vec<String> = prepared.programs().map(|(n, _)| n.to_string()).collect();
    for name in &names {
        let p = prepared.load(name)?;
        links.push(p.attach()?);
    }
    let t4 = Instant::now();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "kernel BTF indexed {:.2} ms ({} types); CO-RE alone {:.2} ms ({} relocations); \
         prepare (CO-RE, maps{}) {:.2} ms; load and attach {} programs {:.2} ms",
        ms(t1 - t0),
        kernel.len(),
        ms(t2 - t1),
        report.len(),
        if with_btf { ", object BTF" } else { "" },
        ms(t3 - t2),
        names.len(),
        ms(t4 - t3)
    );
    Ok(())
}
