//! Loads each program of an object the number of times asked and says what its verification
//! cost: the kernel's statistics (instructions processed, states, its own µs) and the wall time
//! of `BPF_PROG_LOAD`, median and minimum; with `--run N`, then attaches them all (tracing this
//! process's children), runs `/bin/true` N times and says each program's run time per run as
//! the kernel counts it (`BPF_ENABLE_STATS`):
//! `sudo target/release/examples/verify bpf/proctrace.bpf.o [LOADS] [--run N] [NAME=VALUE...]`
//! (NAME=VALUE: a 4-byte global set before loading, e.g. `whole_system=1`; a program named
//! `-NAME` is left out).
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: verify OBJECT [LOADS] [--run N] [NAME=VALUE...]")?;
    let loads: usize = args.next().map_or(Ok(5), |n| n.parse())?;
    let object = std::fs::read(&path)?;
    let kernel = bpf::Btf::kernel()?;
    let me = std::process::id();
    let mut loader = bpf::Loader::new(&object)
        .max_entries("scratch", bpf::possible_cpus()?.1)
        .global("self_tgid", &me.to_ne_bytes());
    let mut run = 0usize;
    let mut skip = Vec::new();
    while let Some(a) = args.next() {
        if a == "--run" {
            run = args.next().ok_or("--run N")?.parse()?;
        } else if let Some(name) = a.strip_prefix('-') {
            skip.push(name.to_string());
        } else {
            let (name, value) = a.split_once('=').ok_or("NAME=VALUE")?;
            loader = loader.global(name, &value.parse::<u32>()?.to_ne_bytes());
        }
    }
    let mut prepared = loader.prepare(&kernel)?;
    let names: Vec<String> = prepared
        .programs()
        .map(|(n, _)| n.to_string())
        .filter(|n| !skip.contains(n))
        .collect();
    let mut progs = Vec::new();
    for name in &names {
        let (prog, stats) = prepared.load_with_stats(name)?;
        let info = prog.info()?;
        let mut ms = Vec::with_capacity(loads);
        for _ in 0..loads {
            let t = Instant::now();
            let p = prepared.load(name)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            drop(p);
        }
        ms.sort_by(f64::total_cmp);
        let stats: Vec<&str> = stats.lines().collect();
        println!(
            "{name}: load {:.2} ms median, {:.2} min ({loads} loads); verified_insns {}; {}",
            ms.get(ms.len() / 2).copied().unwrap_or(0.0),
            ms.first().copied().unwrap_or(0.0),
            info.verified_insns,
            stats.join("; ")
        );
        progs.push(prog);
    }
    if run == 0 {
        return Ok(());
    }
    let _stats = bpf::sys::enable_stats()?;
    let links = progs.iter().map(|p| p.attach()).collect::<Result<Vec<_>, _>>()?;
    let traced = prepared.take_map("traced").ok_or("no traced map")?;
    traced.update(&me.to_ne_bytes(), &1u32.to_ne_bytes(), 0)?;
    let mut ring = bpf::RingBuf::new(prepared.take_map("events").ok_or("no events map")?)?;
    let mut records = 0usize;
    for i in 0..run {
        std::process::Command::new("/bin/true").status()?;
        if i % 256 == 0 {
            ring.read(|_| records += 1);
        }
    }
    ring.read(|_| records += 1);
    drop(links);
    for (name, p) in names.iter().zip(&progs) {
        let i = p.info()?;
        println!(
            "{name}: {:.0} ns per run ({} runs)",
            i.run_time_ns as f64 / i.run_cnt.max(1) as f64,
            i.run_cnt
        );
    }
    println!("{records} records read");
    Ok(())
}
