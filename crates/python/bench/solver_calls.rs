//! The Rust side of crates/python/bench/solver_calls.py: the same
//! `get_domain` and `set_domain` calls on the same problem, timed without
//! Python, so that the difference is the Python binding's overhead.
//!
//!     cargo run --release -p mcmpart-python --example solver_calls -- examples/bert_ring36.mcm 20

use mcmpart::lang::compile_file;
use mcmpart::solver::{Options, Solver};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args.next().unwrap_or_else(|| "examples/bert_ring36.mcm".into());
    let reps: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(20);
    let c = compile_file(std::path::Path::new(&file));
    let p = match c.problem(None) {
        Ok(p) if c.ok() => p,
        _ => {
            eprintln!("{file} does not compile to one problem (see `mcmpart check {file}`)");
            std::process::exit(1);
        }
    };
    let mut s = Solver::new(p, Options::default()).unwrap_or_else(|_| {
        eprintln!("{file} has no valid partition");
        std::process::exit(1);
    });
    let n = s.num_nodes() as u32;
    // The walk both sides replay: each node in index order on the first
    // chip of its domain.
    let mut choice = Vec::with_capacity(n as usize);
    for u in 0..n {
        let c = s.get_domain(u)[0];
        choice.push(c);
        s.set_domain(u, &[c]);
    }
    s.reset();
    let t = Instant::now();
    for _ in 0..reps {
        for u in 0..n {
            black_box(s.get_domain(u));
        }
    }
    let get_ns = t.elapsed().as_nanos() as f64 / (reps as f64 * n as f64);
    let t = Instant::now();
    for _ in 0..reps {
        for u in 0..n {
            s.set_domain(u, &[choice[u as usize]]);
        }
        s.reset();
    }
    let set_ns = t.elapsed().as_nanos() as f64 / (reps as f64 * n as f64);
    println!(
        "{}",
        serde_json::json!({"file": file, "nodes": n, "reps": reps, "get_domain_ns": get_ns, "set_domain_ns": set_ns})
    );
}
