//! Prints every process event until `--count N` events or interrupted. `--raw FILE` also records
//! every kernel datagram, length-prefixed: how the fixtures in `tests/fixtures` were made.
use cnproc::{Connector, Options, Received};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let raw_file = flag("--raw");
    let limit: usize = flag("--count").and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);
    let mut conn = Connector::open(&Options::default())?;
    conn.tap_raw(raw_file.is_some());
    eprintln!(
        "listening (buffer {} bytes, kernel filter: {})",
        conn.receive_buffer(),
        conn.has_kernel_filter()
    );
    let mut items = Vec::new();
    let mut raw = Vec::new();
    let mut n = 0usize;
    while n < limit {
        items.clear();
        conn.recv(&mut items, 1000)?;
        raw.extend(conn.take_raw());
        for it in &items {
            match it {
                Received::Event(ev) => {
                    println!("{ev:?}");
                    n += 1;
                }
                Received::Loss(l) => println!("LOSS {l:?}"),
            }
        }
        if let Some(f) = &raw_file {
            std::fs::write(f, &raw)?;
        }
    }
    Ok(())
}
