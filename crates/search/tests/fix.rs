//! FIX with a partition to fall back on: handed greedy's valid pipeline as
//! well as a proposal near it, it keeps the proposal's harmless moves.

use crate::common;
use mcm_core::problem::{Placement, Problem};
use mcm_search::strategy::greedy_proposal;
use mcm_solver::{check, fix, fix_or, node_order, Options, Order, Solver};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn valid(p: &Problem, pl: &Placement) -> bool {
    check(&p.graph, &p.package, &p.constraints, pl).is_empty()
}

/// A proposal five nodes away from a valid pipeline that FIX alone gives
/// up on: in BERT-large, moving `matmul_10` (attention scores) one chip on
/// drags the residual add after it, and the residual's source is then two
/// chips back, a shortcut under `triangle_dependency` that shows only when
/// the add is decided. With greedy's partition at hand, FIX merges the
/// proposal into it as far as it goes instead of returning something far
/// from both.
#[test]
fn fix_with_a_valid_partition_keeps_what_it_can() {
    let text = std::fs::read_to_string(common::root().join("examples/bert_ring36.mcm")).unwrap();
    let compiled = common::compile_in(&common::root().join("examples"), &text);
    let p = compiled.problem(None).expect("compiles").clone();
    let mut s = Solver::new(&p, Options::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let order = node_order(&s, Order::Topological, &mut rng);
    let greedy: Vec<Option<u32>> = greedy_proposal(&p).into_iter().map(Some).collect();
    let (valid_pl, _) = fix(&mut s, &order, &greedy, None, &mut rng).unwrap();
    assert!(valid(&p, &valid_pl));
    let mut proposal: Vec<Option<u32>> = valid_pl.chips.iter().copied().map(Some).collect();
    // Four harmless moves and the one that dooms FIX.
    for name in ["add_21", "gelu_13", "transpose_35", "view_30", "matmul_10"] {
        let u = p.graph.decision_of(p.graph.node_index(name).unwrap()).unwrap() as usize;
        proposal[u] = Some(valid_pl.chips[u] + 1);
    }
    let before = s.stats.fallbacks;
    let (fixed, moved) = fix_or(&mut s, &order, &proposal, None, &mut rng, Some(&valid_pl.chips)).unwrap();
    assert!(valid(&p, &fixed));
    assert!(moved <= 100, "{moved} nodes moved");
    // Not greedy's partition as it was: the harmless moves stay.
    assert_eq!(s.stats.fallbacks, before, "none of the proposal was kept");
    assert_ne!(fixed.chips, valid_pl.chips);
}
