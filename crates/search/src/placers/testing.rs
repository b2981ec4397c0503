//! What the placers' tests share: a small problem under either objective
//! and its optimum by exhaustive search.

use crate::cost::{Judge, JudgeOptions};
use crate::strategy::{run, Budget, Outcome, Strategy};
use mcm_core::problem::{Placement, Problem};

/// Six nodes (a fork and a join) on a bidirectional ring of four dies
/// under the memory rule, so small that exhaustive search knows its optimum.
pub fn problem(objective: &str) -> Problem {
    let text = format!(
        "use std::placement::{{memory_capacity}}\nuse std::topologies::bidirectional_ring\n\
         let t = bidirectional_ring(n = 4, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
         let g = graph {{\n\
             a {{ flops = 1 GFLOP, output_bytes = 1 MB }}\n\
             b {{ flops = 4 GFLOP, output_bytes = 2 MB }}\n\
             c {{ flops = 3 GFLOP, output_bytes = 1 MB }}\n\
             d {{ flops = 2 GFLOP, output_bytes = 1 MB }}\n\
             e {{ flops = 2 GFLOP, output_bytes = 1 MB }}\n\
             f {{ flops = 1 GFLOP }}\n\
             a -> b\n a -> c\n a -> d\n b -> e\n c -> e\n d -> f\n e -> f\n\
         }}\n\
         partition g onto t {{\n    require memory_capacity\n    {objective}\n}}\n"
    );
    let c = mcm_lang::compile_str("t.mcm", &text, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    c.problem(None).expect("one problem").clone()
}

pub const OBJECTIVES: [&str; 2] = ["maximize throughput", "minimize step_time"];

pub fn judge(p: &Problem) -> Judge {
    Judge::new(p, &JudgeOptions::default()).expect("a judge")
}

/// The best score of any valid partition, by exhaustive search.
pub fn optimum(p: &Problem) -> f64 {
    let j = judge(p);
    let mut best = 0.0f64;
    mcm_solver::exhaustive::for_each_valid(&p.graph, &p.package, &p.constraints, |pl| {
        if let Some(t) = j.evaluate(&pl.chips).throughput() {
            best = best.max(t);
        }
        true
    })
    .expect("small enough to enumerate");
    best
}

/// Runs `s` and checks what every strategy's run must be: no failure, a
/// best partition, and the best partition valid.
pub fn run_valid(p: &Problem, s: &mut dyn Strategy, samples: usize, seed: u64) -> Outcome {
    let o = run(p, &judge(p), s, Budget::Samples(samples), seed, None).expect("feasible");
    assert_eq!(o.failure, None, "{}", s.name());
    assert_eq!(o.records.len(), samples, "{}", s.name());
    let b = o.best.as_ref().expect("a valid partition");
    let broken = mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(b.chips.clone()));
    assert!(broken.is_empty(), "{}: {}", s.name(), broken[0].describe());
    o
}

/// The mean score of samples `from..to` (0-based, invalid ones as 0).
pub fn mean_score(o: &Outcome, from: usize, to: usize) -> f64 {
    let r = &o.records[from..to];
    r.iter().map(|r| r.throughput.unwrap_or(0.0)).sum::<f64>() / r.len() as f64
}
