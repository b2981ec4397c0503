//! What the placers' tests share: a small problem under either objective
//! whose optimum exhaustive search knows, and runs of a strategy on it.

pub use super::testing::{judge, optimum};
use crate::pretrain::Task;
use crate::strategy::{run, Budget, Outcome, Strategy};
use mcm_core::problem::{Placement, Problem};

/// Eight nodes (three branches that fork and join) on a bidirectional ring
/// of four dies, the memory rule only: 4^8 partitions to enumerate.
pub fn problem(objective: &str) -> Problem {
    let text = format!(
        "use std::placement::{{memory_capacity}}\nuse std::topologies::bidirectional_ring\n\
         let t = bidirectional_ring(n = 4, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
         let g = graph {{\n\
             a {{ flops = 1 GFLOP, output_bytes = 1 MB }}\n\
             b {{ flops = 4 GFLOP, output_bytes = 2 MB }}\n\
             c {{ flops = 3 GFLOP, output_bytes = 1 MB }}\n\
             d {{ flops = 2 GFLOP, output_bytes = 1 MB }}\n\
             e {{ flops = 5 GFLOP, output_bytes = 1 MB }}\n\
             f {{ flops = 2 GFLOP, output_bytes = 1 MB }}\n\
             h {{ flops = 3 GFLOP, output_bytes = 1 MB }}\n\
             k {{ flops = 1 GFLOP }}\n\
             a -> b\n a -> c\n a -> d\n b -> e\n c -> f\n d -> h\n e -> k\n f -> k\n h -> k\n\
         }}\n\
         partition g onto t {{\n    require memory_capacity\n    {objective}\n}}\n"
    );
    let c = mcm_lang::compile_str("t.mcm", &text, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
    c.problem(None).expect("one problem").clone()
}

pub fn task(p: &Problem) -> Task {
    Task::new("t", p.clone(), judge(p)).expect("greedy finds a partition")
}

/// A run of `s` on `p`; its best partition passes the checker.
pub fn run_on(p: &Problem, s: &mut dyn Strategy, samples: usize, seed: u64) -> Outcome {
    let o = run(p, &judge(p), s, Budget::Samples(samples), seed, None).expect("feasible");
    assert_eq!(o.failure, None, "{}", s.name());
    let best = o.best.as_ref().expect("a valid partition");
    let broken = mcm_solver::check(
        &p.graph,
        &p.package,
        &p.constraints,
        &Placement::new(best.chips.clone()),
    );
    assert!(broken.is_empty(), "{}: {}", s.name(), broken[0].describe());
    o
}

/// Mean of the `n` first and of the `n` last of `xs`.
pub fn ends(xs: &[f64], n: usize) -> (f64, f64) {
    let n = n.min(xs.len()).max(1);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len().max(1) as f64;
    (mean(&xs[..n]), mean(&xs[xs.len() - n..]))
}
