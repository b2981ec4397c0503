//! SAMPLE and FIX, the paper's two ways to ask the solver for a valid
//! partition (Algorithms 1 and 2), over a node order that is random
//! (seeded) by default or topological.

use super::engine::{Infeasible, Solver};
use super::pace::Pace;
use mcm_core::problem::Placement;
use rand::seq::SliceRandom;
use rand::Rng;

/// Which of the two ways: FIX repairs a proposal, SAMPLE draws from
/// distributions. (How a learned policy's proposal meets the solver, one of
/// these or neither, is the policy's `Correction`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Mode {
    Fix,
    Sample,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Order {
    /// A random topological order (seeded): a node is decided after its
    /// inputs, and close to them.
    Random,
    /// The graph's own topological order.
    Topological,
    /// A uniformly random permutation, ignoring dependencies. On large
    /// graphs under the stdlib rules uniform SAMPLE in this order runs into
    /// dead ends propagation cannot see; a pass that fails too often is
    /// restarted in topological order.
    Shuffled,
}

/// Per node, a weight for each chip (the policy's distribution); `None`
/// means uniform.
pub type Probs<'a> = Option<&'a [Vec<f32>]>;

/// The order in which nodes are decided.
pub fn node_order(solver: &Solver, order: Order, rng: &mut impl Rng) -> Vec<u32> {
    let g = &solver.problem.graph;
    match order {
        Order::Topological => g.topological_order().iter().filter_map(|&i| g.decision_of(i)).collect(),
        Order::Shuffled => {
            let mut v: Vec<u32> = (0..solver.num_nodes() as u32).collect();
            v.shuffle(rng);
            v
        }
        Order::Random => {
            // Reverse postorder of a depth-first search that visits roots and
            // successors in random order: a random topological order that,
            // like the deterministic one, decides a node close to its inputs.
            let n = solver.num_nodes();
            let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
            for e in g.placed_edges() {
                succ[e.src as usize].push(e.dst);
            }
            for s in &mut succ {
                s.shuffle(rng);
            }
            let mut roots: Vec<u32> = (0..n as u32).collect();
            roots.shuffle(rng);
            let mut seen = vec![false; n];
            let mut post = Vec::with_capacity(n);
            for r in roots {
                if seen[r as usize] {
                    continue;
                }
                seen[r as usize] = true;
                let mut stack = vec![(r, 0usize)];
                while let Some((u, i)) = stack.last_mut() {
                    let u = *u;
                    if let Some(&v) = succ[u as usize].get(*i) {
                        *i += 1;
                        if !seen[v as usize] {
                            seen[v as usize] = true;
                            stack.push((v, 0));
                        }
                    } else {
                        post.push(u);
                        stack.pop();
                    }
                }
            }
            post.reverse();
            post
        }
    }
}

/// Draws a chip of `u`'s current domain, weighted by `probs` (uniform when
/// absent or when every allowed chip has weight zero).
pub fn draw(solver: &Solver, u: u32, probs: Probs, rng: &mut impl Rng) -> u32 {
    let dom = solver.dom(u);
    if let Some(p) = probs.and_then(|p| p.get(u as usize)) {
        let total: f64 = dom
            .iter()
            .map(|c| p.get(c as usize).copied().unwrap_or(0.0).max(0.0) as f64)
            .sum();
        if total > 0.0 {
            let mut t = rng.random::<f64>() * total;
            for c in dom.iter() {
                t -= p.get(c as usize).copied().unwrap_or(0.0).max(0.0) as f64;
                if t <= 0.0 {
                    return c;
                }
            }
            return dom.max;
        }
    }
    let k = rng.random_range(0..dom.size);
    let c = dom.iter().nth(k as usize).unwrap_or(dom.min);
    c
}

/// Draws among the chips of `u`'s domain nearest (in chip id) to `y`, its
/// proposal, weighted by `probs`: the repair moves a node as little as the
/// rules allow. Drawn from the whole remaining domain instead, a node pushed
/// past its proposal (under `acyclic_flow`, by one node proposed too late)
/// lands anywhere later, its successors after it, and along a chain the
/// drift compounds until the last chip holds most of the graph.
pub fn draw_near(solver: &Solver, u: u32, y: u32, probs: Probs, rng: &mut impl Rng) -> u32 {
    let dom = solver.dom(u);
    let gap = |c: u32| c.abs_diff(y);
    let best = dom.iter().map(gap).min().unwrap_or(0);
    let near: Vec<u32> = dom.iter().filter(|&c| gap(c) == best).collect();
    let weight = |c: u32| {
        probs
            .and_then(|p| p.get(u as usize))
            .map_or(1.0, |p| p.get(c as usize).copied().unwrap_or(0.0).max(0.0) as f64)
    };
    let total: f64 = near.iter().map(|&c| weight(c)).sum();
    if total > 0.0 {
        let mut t = rng.random::<f64>() * total;
        for &c in &near {
            t -= weight(c);
            if t <= 0.0 {
                return c;
            }
        }
    }
    near.get(rng.random_range(0..near.len().max(1)))
        .copied()
        .unwrap_or(dom.min)
}

/// Decides every unfixed node of `order` by drawing from its domain;
/// resumes where backtracking leaves off.
/// Returns false when more than `budget` failures happened or the solver is
/// stopping ([`Solver::set_stop`]): the pass gave up.
/// With `near` (FIX's second pass), a node with a proposal draws among the
/// chips of its domain nearest to it (see [`draw_near`]).
/// `weights` says how a node without inputs whose consumer is placed is
/// drawn: from its domain, or nearest to its consumer's chip
/// ([`consumer_chip`]: its own chip when the rules let it, else the nearest
/// that may feed it), always (every pass of uniform SAMPLE after its first,
/// and the projections) or but for a stray few (uniform SAMPLE's first pass
/// under a per-chip user rule, [`Weights::Mostly`]). Drawn
/// uniformly, weights took the chips the chain skipped (below their
/// consumers) at random, each such chip then feeding only its first
/// weight's consumer, and the weights that had to fill the last skipped
/// chips or find room beside a full chip had none left under a tight
/// per-chip count. Following,
/// the weights stay with their consumers, and the chips the chain skipped
/// are filled by the weights `no_skip`'s Hall step ([`crate::rules`]) forces
/// there once as many are left as chips to fill.
/// Where weights follow (not [`Weights::Drawn`]), the draws are uniform and
/// a user rule bounds each chip and binds ([`Pace::binds`]), the nodes with
/// inputs are paced instead
/// ([`Pace`]: the lowest chip allowed until it holds its share, then the
/// next), in the first pass of uniform SAMPLE but for a stray few.
fn sample_rest(
    solver: &mut Solver,
    order: &[u32],
    probs: Probs,
    near: Option<&[Option<u32>]>,
    weights: Weights,
    rng: &mut impl Rng,
    budget: Option<u64>,
) -> Result<bool, Infeasible> {
    // The limit is absolute, fixed once: a rescan must not extend it.
    let limit = budget.map(|b| solver.stats.failures + b);
    let mut pace = (probs.is_none() && weights != Weights::Drawn && solver.bounds_per_chip() && Pace::binds(solver))
        .then(|| Pace::new(solver, order, weights == Weights::Follow));
    'rescan: loop {
        if let Some(p) = &mut pace {
            p.recount(solver);
        }
        let base = solver.num_decisions();
        let mut at: Vec<usize> = Vec::new();
        let mut pos = 0;
        while pos < order.len() {
            if limit.is_some_and(|l| solver.stats.failures > l) || solver.stopping() {
                return Ok(false);
            }
            let u = order[pos];
            if solver.is_fixed(u) {
                pos += 1;
                continue;
            }
            let follow = match weights {
                Weights::Drawn => None,
                Weights::Follow => consumer_chip(solver, u),
                Weights::Mostly(stray) => consumer_chip(solver, u).filter(|_| !rng.random_bool(stray)),
            };
            let paced = match (&mut pace, weights) {
                (Some(p), Weights::Mostly(_)) => p.chip(solver, u, pos).map(|c| {
                    if rng.random_bool(p.stray_odds()) {
                        p.stray(solver, u, rng)
                    } else {
                        c
                    }
                }),
                (Some(p), _) => p.chip(solver, u, pos),
                (None, _) => None,
            };
            let c = match (paced, follow) {
                (Some(c), _) => c,
                (None, Some(y)) if solver.dom(u).contains(y) => y,
                (None, Some(y)) => draw_near(solver, u, y, probs, rng),
                (None, None) => match near.and_then(|p| p.get(u as usize).copied().flatten()) {
                    Some(y) => draw_near(solver, u, y, probs, rng),
                    None => draw(solver, u, probs, rng),
                },
            };
            let before = solver.num_decisions();
            at.push(pos);
            let after = solver.set_domain(u, &[c]);
            if let Some(inf) = solver.infeasible() {
                return Err(inf.clone());
            }
            if let Some(p) = &mut pace {
                if after > before {
                    p.placed(solver, u);
                } else {
                    p.failed(solver);
                    p.recount(solver);
                }
            }
            if after > before {
                pos += 1;
            } else if after >= base {
                // Resume at the first node whose decision was undone.
                pos = at[after - base];
                at.truncate(after - base);
            } else {
                // Decisions from before this pass were undone: rescan.
                continue 'rescan;
            }
        }
        return Ok(true);
    }
}

/// How [`sample_rest`] draws a node without inputs whose consumer is placed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Weights {
    /// From its domain, as every other node.
    Drawn,
    /// Nearest to its consumer's chip.
    Follow,
    /// Nearest to its consumer's chip, except with the given odds, when it
    /// is drawn from its domain: every valid partition stays reachable.
    ///
    /// Uniform SAMPLE's first pass under a per-chip user rule strays so
    /// about once a pass ([`stray_odds`]). Drawn from their domains every
    /// time, weights took the chips the chain skipped at random, and under
    /// a binding op count the pass spent its whole failure budget on the
    /// weights left without room; each weight that strays may still do so.
    /// Following every time, a weight could never sit off its consumer's
    /// chip where that chip is allowed, and SAMPLE would miss those
    /// partitions. The paced nodes with inputs stray likewise
    /// ([`Pace::stray_odds`]), each near its pace ([`Pace::stray`]).
    Mostly(f64),
}

/// One over the nodes without inputs in `order`: the odds that each strays
/// from its consumer ([`Weights::Mostly`]), about one a pass.
fn stray_odds(solver: &Solver, order: &[u32]) -> f64 {
    let sources = order
        .iter()
        .filter(|&&u| solver.net.pred[u as usize].is_empty())
        .count();
    1.0 / sources.max(1) as f64
}

/// The lowest chip of a fixed output of `u` when `u` has no inputs (a
/// weight whose consumer is placed): where a pass that lets weights follow
/// their consumers ([`sample_rest`]'s `weights`) draws it nearest to.
fn consumer_chip(solver: &Solver, u: u32) -> Option<u32> {
    let net = &solver.net;
    if !net.pred[u as usize].is_empty() {
        return None;
    }
    net.succ[u as usize]
        .iter()
        .filter(|&&v| solver.is_fixed(v))
        .map(|&v| solver.dom(v).min)
        .min()
}

/// Passes in fresh random orders after a budgeted pass gives up, before the
/// fallbacks (whose last resort, a SAT witness, can take seconds on a large
/// graph under tight rules).
const RETRIES: usize = 4;

/// How many failures a pass may take before it gives up and the mode
/// falls back: to FIX from a proposal drawn from the same distribution, and
/// then to an unbudgeted pass in the graph's topological order, which is
/// complete. Propagation cannot see every dead end; backtracking alone can
/// take exponential time.
fn pass_budget(order: &[u32]) -> Option<u64> {
    Some((order.len() as u64 / 2).max(64))
}

/// `order` with the nodes without inputs moved after the others: those
/// with one output (weights) to the end, each group in its order; one with
/// several outputs (the graph's input feeding a block and its residual join)
/// right after the first of its outputs in the order.
///
/// Uniform SAMPLE decides them so, each weight then drawn where its
/// consumer already is or where the rules let it feed that chip. Drawn
/// first, weights scatter over the chips and tie the chain to them (a chip
/// whose weights feed two chain chips is a triangle): only the whole chain
/// on one chip survives that, and a rule that spreads the chain (at most
/// 600 nodes a chip on BERT-large) met dead ends in almost every pass. A
/// distribution keeps the order it is given: drawn first, a weight takes
/// its likeliest chip, and its consumer follows.
/// An input shared by a block and its join, decided last, leaves the join
/// free to be drawn anywhere its other inputs allow, and `triangle_dependency`
/// finds the block drawn across chips only when that input is placed
/// (hundreds of failures a pass on an encoder whose graph input feeds the
/// first residual add); decided right after its first output (and, where
/// weights follow, on that output's chip, [`consumer_chip`]), the join
/// sees it.
fn sources_last(solver: &Solver, order: &[u32]) -> Vec<u32> {
    let net = &solver.net;
    let is_source = |u: u32| net.pred[u as usize].is_empty();
    let mut shared: Vec<(u32, u32)> = Vec::new();
    let mut pos: Vec<u32> = Vec::new();
    for &u in order {
        if is_source(u) && net.succ[u as usize].len() > 1 {
            if pos.is_empty() {
                pos = vec![u32::MAX; solver.num_nodes()];
                for (i, &v) in order.iter().enumerate() {
                    pos[v as usize] = i as u32;
                }
            }
            let first = net.succ[u as usize]
                .iter()
                .map(|&v| pos[v as usize])
                .min()
                .unwrap_or(u32::MAX);
            shared.push((first, u));
        }
    }
    shared.sort_unstable();
    let mut out = Vec::with_capacity(order.len());
    let mut next = shared.iter().peekable();
    for (i, &u) in order.iter().enumerate() {
        if is_source(u) {
            continue;
        }
        out.push(u);
        while let Some(&(_, s)) = next.next_if(|(first, _)| *first == i as u32) {
            out.push(s);
        }
    }
    // A shared source whose outputs are not in the order goes last too.
    out.extend(next.map(|&(_, s)| s));
    out.extend(
        order
            .iter()
            .copied()
            .filter(|&u| is_source(u) && net.succ[u as usize].len() <= 1),
    );
    out
}

/// SAMPLE: each node in order gets a chip drawn from its distribution
/// restricted to its current domain (uniform SAMPLE decides the nodes
/// without inputs last, [`sources_last`]).
pub fn sample(solver: &mut Solver, order: &[u32], probs: Probs, rng: &mut impl Rng) -> Result<Placement, Infeasible> {
    sample_or(solver, order, probs, rng, None)
}

/// [`sample`] with a known valid partition near the distribution (a
/// search's current state): when both passes give up, the last resort
/// merges the second pass's proposal into it. Without one the last resort
/// is the SAT oracle's kept witness, one partition whatever was drawn.
pub fn sample_or(
    solver: &mut Solver,
    order: &[u32],
    probs: Probs,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<Placement, Infeasible> {
    solver.reset();
    let budget = pass_budget(order);
    solver.set_backjump(budget.is_none());
    let uniform = probs.is_none();
    let first = if uniform {
        sources_last(solver, order)
    } else {
        order.to_vec()
    };
    // The first pass draws every node from its domain, weights too, so that
    // uniform SAMPLE reaches every valid partition; the passes after it, and
    // the projections, let weights follow their consumers. Under a per-chip
    // user rule the first pass lets them follow too, but for a stray few;
    // such a pass completes with few failures, as a projection does, and
    // one that does not is left after a projection's share of the budget
    // (on an encoder under an op count, a few passes backtracked through
    // their whole budget where the projection after them completes).
    let (first_weights, first_budget) = if uniform && solver.bounds_per_chip() {
        let share = budget.map(|b| (b / PROJECT_SHARE).max(64));
        (Weights::Mostly(stray_odds(solver, &first)), share)
    } else {
        (Weights::Drawn, budget)
    };
    let mut done = sample_rest(solver, &first, probs, None, first_weights, rng, first_budget);
    // A pass that gave up meets the same dead ends in other orders when a
    // rule binds along the pipeline (the draws climb the chips too fast for
    // a per-chip count); the in-order projection of a proposal drawn from
    // the same distribution seldom does. It is also what the fallbacks
    // below repair.
    let mut proposal: Vec<Option<u32>> = Vec::new();
    if matches!(done, Ok(false)) && !solver.stopping() {
        solver.stats.restarts += 1;
        proposal = draw_proposal(solver, probs, rng);
        done = project_pass(solver, order, &proposal, probs, rng, budget);
    }
    // A pass that meets a dead end in one order seldom does in another: a
    // few fresh random orders cost less than the fallbacks below.
    for _ in 0..retries(solver) {
        if !matches!(done, Ok(false)) || solver.stopping() {
            break;
        }
        solver.stats.restarts += 1;
        solver.reset();
        let mut again = node_order(solver, Order::Random, rng);
        if uniform {
            again = sources_last(solver, &again);
        }
        let weights = if uniform { Weights::Follow } else { Weights::Drawn };
        done = sample_rest(solver, &again, probs, None, weights, rng, budget);
        if matches!(done, Ok(false)) && !solver.stopping() {
            proposal = draw_proposal(solver, probs, rng);
            done = project_pass(solver, &again, &proposal, probs, rng, budget);
        }
    }
    solver.set_backjump(true);
    if !done? {
        stopped(solver)?;
        solver.stats.restarts += 1;
        // A proposal drawn from the same distribution, repaired by FIX:
        // nodes whose draw is no longer allowed wait for the second pass
        // instead of taking whatever is left, which avoids most dead ends.
        if proposal.is_empty() {
            proposal = draw_proposal(solver, probs, rng);
        }
        let topo = node_order(solver, Order::Topological, rng);
        solver.set_backjump(false);
        let fixed = fix_pass(solver, &topo, &proposal, probs, rng, Some((order.len() as u64).max(64)));
        solver.set_backjump(true);
        if !fixed? {
            stopped(solver)?;
            solver.stats.restarts += 1;
            last_resort(solver, &proposal, probs, rng, fallback)?;
        }
    }
    finish(solver)
}

/// `Err` when the solver is stopping: a pass that gave up then ends its
/// mode, before any fallback (the last of which may ask SAT for minutes).
/// The error names no rule, and [`Solver::cut_short`] says it is no proof.
fn stopped(solver: &mut Solver) -> Result<(), Infeasible> {
    if solver.stopping() {
        return Err(Infeasible {
            constraints: Vec::new(),
        });
    }
    Ok(())
}

/// The pass that always ends: FIX towards a valid target, which meets no
/// dead end, since propagation never removes a value of a solution that
/// agrees with the decisions so far. The target is, when `fallback` is
/// given, the proposal merged into it as far as it goes ([`merge_towards`];
/// counted in `fallbacks` when none of it could be kept), else a
/// partition projected from a fresh proposal ([`project_pass`]) or a SAT
/// witness searched from the proposal;
/// without SAT, the complete (unbudgeted) FIX pass in topological order.
fn last_resort(
    solver: &mut Solver,
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<(), Infeasible> {
    let topo = node_order(solver, Order::Topological, rng);
    solver.set_backjump(true);
    if let Some(valid) = fallback.filter(|v| v.len() == solver.num_nodes()) {
        let merged = merge_towards(solver, &topo, valid, proposal, probs, rng)?;
        if merged == valid {
            solver.stats.fallbacks += 1;
        }
        let target: Vec<Option<u32>> = merged.into_iter().map(Some).collect();
        fix_pass(solver, &topo, &target, probs, rng, None)?;
        return Ok(());
    }
    let chips = solver.num_chips() as u32;
    let hint: Vec<u32> = (0..solver.num_nodes())
        .map(|u| match proposal.get(u).copied().flatten() {
            Some(y) if y < chips => y,
            _ => draw_any(probs.and_then(|p| p.get(u)), chips, rng),
        })
        .collect();
    if let Some(w) = witness_on_fewer_chips(solver, rng) {
        let target: Vec<Option<u32>> = w.into_iter().map(Some).collect();
        fix_pass(solver, &topo, &target, probs, rng, None)?;
        return Ok(());
    }
    // Projections of fresh proposals before the SAT witness (seconds on
    // BERT-large under a binding count): either is one partition whatever
    // was proposed, and a projection that completes costs milliseconds.
    for _ in 0..RETRIES {
        stopped(solver)?;
        solver.stats.restarts += 1;
        let fresh = draw_proposal(solver, probs, rng);
        let order = node_order(solver, Order::Random, rng);
        solver.set_backjump(false);
        let done = project_pass(solver, &order, &fresh, probs, rng, pass_budget(&order));
        solver.set_backjump(true);
        if done? {
            return Ok(());
        }
    }
    match solver.witness_near(&hint) {
        Some(w) => {
            let target: Vec<Option<u32>> = w.chips.into_iter().map(Some).collect();
            fix_pass(solver, &topo, &target, probs, rng, None)?;
        }
        None => {
            // SAT proved that no valid partition exists.
            if let Some(inf) = solver.infeasible() {
                return Err(inf.clone());
            }
            stopped(solver)?;
            fix_pass(solver, &topo, proposal, probs, rng, None)?;
        }
    }
    Ok(())
}

/// Chips of the package a witness is first searched on: as many as the
/// package of the paper's figures, or twice what the weights need.
const WITNESS_CHIPS: usize = 36;

/// A valid partition found by SAMPLE on the first few chips of a package of
/// alike chips under order-only rules ([`crate::reduce::first_chips`]: valid
/// there means valid on the whole package). Searching on a 1,024-chip
/// package, SAT alone takes minutes where this takes milliseconds. `None`
/// when the package is not much larger, the reduction does not apply, or
/// the few chips cannot hold a valid partition (then SAT decides).
fn witness_on_fewer_chips(solver: &Solver, rng: &mut impl Rng) -> Option<Vec<u32>> {
    let k = witness_chips(solver)?;
    let small = crate::reduce::first_chips(solver.problem, k)?;
    let mut sub = Solver::new(&small, solver.options()).ok()?;
    sub.set_stop(solver.stop());
    let order = node_order(&sub, Order::Random, rng);
    sample(&mut sub, &order, None, rng).ok().map(|p| p.chips)
}

/// The chips [`witness_on_fewer_chips`] searches on, when it applies.
fn witness_chips(solver: &Solver) -> Option<usize> {
    let problem = solver.problem;
    let options = solver.options();
    let mem = problem.package.memory_or_unlimited(0);
    let weights: f64 = (0..solver.num_nodes() as u32)
        .map(|u| problem.graph.placed_node(u).params as f64)
        .sum();
    let need = if mem > 0.0 {
        (2.0 * weights / mem).ceil()
    } else {
        f64::INFINITY
    };
    let k = WITNESS_CHIPS.max(need.min(usize::MAX as f64) as usize);
    (options.sat && 2 * k <= solver.num_chips() && solver.reducible()).then_some(k)
}

/// Passes in fresh orders to try after a budgeted pass gives up: none when
/// the last resort's witness comes cheap from fewer chips (a pass over a
/// large package costs more than that witness).
fn retries(solver: &Solver) -> usize {
    if witness_chips(solver).is_some() {
        0
    } else {
        RETRIES
    }
}

/// Failures a trial of [`merge_towards`] may take.
const MERGE_TRIAL_BUDGET: u64 = 16;

/// Trials a merge may make: enough to keep the working part of a proposal
/// near the valid partition; one far from it (a fresh policy's draw) would
/// otherwise cost two trials per node, each a pass over the graph.
const MERGE_TRIALS: usize = 64;

/// A valid partition as close to `proposal` as one found by applying the
/// proposal's changes to the valid partition `valid` a group at a time: a
/// group that FIX cannot keep (a quick pass with a small failure budget)
/// is split in two and each half tried again, down to single nodes, which
/// are dropped (delta debugging). Every kept group leaves a valid partition,
/// the start of the next trial. FIX gives up on a proposal when a few of
/// its choices lead into dead ends found only much later (a shortcut under
/// `triangle_dependency` from one node moved across a residual connection);
/// this keeps all the others. At most [`MERGE_TRIALS`] trials, each cheap
/// when it succeeds; the groups not tried by then are dropped. No trial
/// asks the SAT oracle anything.
fn merge_towards(
    solver: &mut Solver,
    order: &[u32],
    valid: &[u32],
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
) -> Result<Vec<u32>, Infeasible> {
    let chips = solver.num_chips() as u32;
    let changed: Vec<u32> = order
        .iter()
        .copied()
        .filter(
            |&u| matches!(proposal.get(u as usize).copied().flatten(), Some(y) if y < chips && y != valid[u as usize]),
        )
        .collect();
    let mut base = valid.to_vec();
    let mut todo = vec![changed];
    let mut trials = 0;
    while let Some(group) = todo.pop() {
        if group.is_empty() {
            continue;
        }
        trials += 1;
        if trials > MERGE_TRIALS || solver.stopping() {
            break;
        }
        let mut target: Vec<Option<u32>> = base.iter().copied().map(Some).collect();
        for &u in &group {
            target[u as usize] = proposal[u as usize];
        }
        // A trial gives up after a few failures anyway, as SAMPLE's budgeted
        // passes do: without SAT backjumps, which cost a SAT call per failure
        // (anneal took 1.4 s a sample on RegNetY-8GF with them, 0.14 s without).
        solver.set_backjump(false);
        let kept = fix_pass(solver, order, &target, probs, rng, Some(MERGE_TRIAL_BUDGET));
        solver.set_backjump(true);
        if kept? {
            if let Some(p) = solver.placement() {
                base = p.chips;
            }
        } else if group.len() > 1 {
            let (a, b) = group.split_at(group.len() / 2);
            todo.push(b.to_vec());
            todo.push(a.to_vec());
        }
    }
    Ok(base)
}

/// A chip for every node, each drawn from its weights over all chips.
fn draw_proposal(solver: &Solver, probs: Probs, rng: &mut impl Rng) -> Vec<Option<u32>> {
    let chips = solver.num_chips() as u32;
    (0..solver.num_nodes())
        .map(|u| Some(draw_any(probs.and_then(|p| p.get(u)), chips, rng)))
        .collect()
}

/// A chip drawn from a node's weights over all chips (uniform without them).
fn draw_any(p: Option<&Vec<f32>>, chips: u32, rng: &mut impl Rng) -> u32 {
    if let Some(p) = p {
        let total: f64 = p.iter().take(chips as usize).map(|w| w.max(0.0) as f64).sum();
        if total > 0.0 {
            let mut t = rng.random::<f64>() * total;
            for (c, w) in p.iter().take(chips as usize).enumerate() {
                t -= w.max(0.0) as f64;
                if t <= 0.0 {
                    return c as u32;
                }
            }
        }
    }
    rng.random_range(0..chips.max(1))
}

/// FIX: keep each node's proposed chip while it is still allowed, then
/// assign the rest by drawing from their domains, near their proposals.
/// Returns the placement and how many nodes moved away from the proposal.
pub fn fix(
    solver: &mut Solver,
    order: &[u32],
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
) -> Result<(Placement, usize), Infeasible> {
    fix_or(solver, order, proposal, probs, rng, None)
}

/// [`fix`] with a known valid partition: when the budgeted pass gives up on
/// a proposal near it (at most an eighth of the nodes changed), the
/// proposal is merged into it (`merge_towards`) instead of a second pass
/// and a SAT witness (which can take minutes on a large graph); a proposal
/// far from it takes the second pass. Callers that draw many proposals (the
/// policy's rollouts) pass the partition they refine.
pub fn fix_or(
    solver: &mut Solver,
    order: &[u32],
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
    fallback: Option<&[u32]>,
) -> Result<(Placement, usize), Infeasible> {
    let budget = pass_budget(order);
    let fallback = fallback.filter(|v| near_enough(v, proposal));
    solver.set_backjump(false);
    let mut done = fix_pass(solver, order, proposal, probs, rng, budget)?;
    if !done && fallback.is_none() && !solver.stopping() {
        solver.stats.restarts += 1;
        done = project_pass(solver, order, proposal, probs, rng, budget)?;
    }
    // With a valid partition at hand, merging into it (the last resort)
    // keeps more of the proposal than a second pass from scratch.
    // A proposal that leads the given order into dead ends often does not
    // in another random topological order, which decides each node close to
    // its inputs; a few such passes cost less than the last resort.
    for _ in 0..retries(solver) {
        if done || fallback.is_some() || solver.stopping() {
            break;
        }
        solver.stats.restarts += 1;
        let again = node_order(solver, Order::Random, rng);
        done = fix_pass(solver, &again, proposal, probs, rng, Some((order.len() as u64).max(64)))?;
        if !done && !solver.stopping() {
            done = project_pass(solver, &again, proposal, probs, rng, budget)?;
        }
    }
    solver.set_backjump(true);
    if !done {
        stopped(solver)?;
        solver.stats.restarts += 1;
        last_resort(solver, proposal, probs, rng, fallback)?;
    }
    let p = finish(solver)?;
    let moved = p
        .chips
        .iter()
        .enumerate()
        .filter(|(u, c)| proposal.get(*u).copied().flatten() != Some(**c))
        .count();
    Ok((p, moved))
}

/// Whether a merge into `valid` is worth its trials: a proposal that
/// changes more than an eighth of the nodes (a fresh policy's draw) would
/// spend them all and keep little; the second pass serves it better.
fn near_enough(valid: &[u32], proposal: &[Option<u32>]) -> bool {
    let changed = valid
        .iter()
        .zip(proposal)
        .filter(|(v, p)| p.is_some_and(|p| p != **v))
        .count();
    changed <= merge_limit(valid.len())
}

/// The most nodes a proposal may change and still be worth merging into a
/// valid partition of `nodes` nodes (an eighth, at least 8): a larger change
/// (a fresh policy's draw) would spend every trial and keep little.
pub fn merge_limit(nodes: usize) -> usize {
    (nodes / 8).max(8)
}

/// Failures the keep phase of a budgeted FIX pass may take before the pass
/// gives up. Each kept proposal is checked alone; when the rules refuse
/// many (a uniformly random proposal under a per-chip count or budget
/// that binds: hundreds on BERT-large, none under the stdlib rules) the
/// ones kept add up to a set that no valid partition extends, found only
/// deep in the second phase. [`project_pass`] serves such proposals.
///
/// A refusal by a user rule that bounds each chip (an op count, a compute
/// budget) ends the keep phase at once: such a rule refuses a proposal
/// once the chips it names are full, and the proposals after it meet the
/// same full chips (the projection followed every such pass anyway, after
/// spending the other refusals on the same dead end). A proposal the rules
/// allow is kept whole as before, and the stdlib rules never stop it early.
const KEEP_FAILURES: u64 = 8;

/// FIX without the keep phase: each node in order, the nodes without inputs
/// last ([`sources_last`]), takes the chip of its domain nearest to its
/// proposal ([`draw_near`]); under a user rule that bounds each chip and
/// without a distribution, the nodes with inputs are paced instead
/// ([`Pace`]), since a uniformly random proposal lifts the chain to the
/// highest chips the run bounds allow (FIX's keep phase, before it, still
/// returns a valid proposal whole). Unpaced, a valid proposal comes back
/// whole; of another, each node keeps its chip while the nodes decided
/// before it allow. Under
/// rules that bind along the pipeline, a node whose proposal is taken
/// stays on its inputs' chip or the next one allowed, so a chain fills the
/// chips in turn instead of jumping ahead and leaving them to weights alone;
/// the weights then go where their consumers are.
/// A projection that works takes few failures (a hundred at most on
/// BERT-large under a binding count, most none): one that does not is
/// left after this share of a pass's budget, for a fresh order.
const PROJECT_SHARE: u64 = 4;

fn project_pass(
    solver: &mut Solver,
    order: &[u32],
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
    budget: Option<u64>,
) -> Result<bool, Infeasible> {
    solver.reset();
    let order = sources_last(solver, order);
    let budget = budget.map(|b| (b / PROJECT_SHARE).max(64));
    sample_rest(solver, &order, probs, Some(proposal), Weights::Follow, rng, budget)
}

fn fix_pass(
    solver: &mut Solver,
    order: &[u32],
    proposal: &[Option<u32>],
    probs: Probs,
    rng: &mut impl Rng,
    budget: Option<u64>,
) -> Result<bool, Infeasible> {
    solver.reset();
    let limit = budget.map(|b| solver.stats.failures + b);
    let keep_limit = budget.map(|b| solver.stats.failures + b.min(KEEP_FAILURES));
    // Under a user rule that bounds each chip, the first proposal it
    // refuses ends the keep phase ([`KEEP_FAILURES`]).
    let refused = (budget.is_some() && solver.bounds_per_chip()).then(|| solver.per_chip_failures());
    for &u in order {
        if keep_limit.is_some_and(|l| solver.stats.failures > l) || solver.stopping() {
            return Ok(false);
        }
        if refused.is_some_and(|r| solver.per_chip_failures() > r) {
            return Ok(false);
        }
        if solver.is_fixed(u) {
            continue;
        }
        if let Some(y) = proposal.get(u as usize).copied().flatten() {
            if solver.dom(u).contains(y) {
                solver.set_domain(u, &[y]);
                if let Some(inf) = solver.infeasible() {
                    return Err(inf.clone());
                }
            }
        }
    }
    let left = limit.map(|l| l.saturating_sub(solver.stats.failures));
    sample_rest(solver, order, probs, Some(proposal), Weights::Drawn, rng, left)
}

fn finish(solver: &Solver) -> Result<Placement, Infeasible> {
    solver.placement().ok_or_else(|| Infeasible {
        constraints: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Options;

    /// The order uniform SAMPLE and the projection decide in: a source with
    /// several outputs (`x`, feeding a block and its join) right after its
    /// first output, the weights (one output each) last.
    #[test]
    fn a_shared_source_follows_its_first_output_and_weights_go_last() {
        let text = "use std::placement::{acyclic_flow, no_skip, triangle_dependency, memory_capacity}\n\
                    use std::topologies::ring\n\
                    let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { x -> a -> b -> j  x -> j  w1 -> a  w2 -> b }\n\
                    partition g onto t { require acyclic_flow, no_skip, triangle_dependency, memory_capacity }\n";
        let c = mcm_lang::compile_str("order.mcm", text, std::path::Path::new("."));
        let p = c.problem(None).unwrap();
        let s = Solver::new(p, Options::default()).unwrap();
        let g = &p.graph;
        let id = |name: &str| g.decision_of(g.node_index(name).unwrap()).unwrap();
        let names = |order: &[u32]| -> Vec<String> { order.iter().map(|&u| g.placed_node(u).id.clone()).collect() };
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        let topo = node_order(&s, Order::Topological, &mut rng);
        assert_eq!(names(&sources_last(&s, &topo))[..4], ["a", "x", "b", "j"]);
        // Any order of the others: `x` comes right after the first of its outputs.
        let order = vec![id("w2"), id("x"), id("w1"), id("a"), id("b"), id("j")];
        assert_eq!(names(&sources_last(&s, &order)), ["a", "x", "b", "j", "w2", "w1"]);
    }
}
