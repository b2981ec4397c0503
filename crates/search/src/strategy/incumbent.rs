//! The incumbent of the searches that work under a latency target (`exact`,
//! `lns`, `auto`): the best partition judged valid so far, and the
//! heuristics' partitions it starts from.
//!
//! The target is the pipeline model's "latency ≤ T", which the SAT backing
//! encodes. Under an objective whose cost is that latency (`maximize
//! throughput`), the incumbent is ranked by it and an unreachable target is
//! a proof. Under one without a target encoding (`minimize step_time`) the
//! target is a proxy: SAT keeps the partitions valid and proposes ones with
//! shorter pipeline stages, the judge ranks them by the objective's own cost
//! (one over its score), and an unreachable target proves nothing of that
//! cost ([`Search::prove`] records nothing).

use super::dp::candidates;
use super::encdec;
use super::{greedy_start, proposals, settle_full, Search};
use crate::cost::{CostModel, Verdict};
use mcm_core::latency::LatencyModel;
use mcm_core::problem::Problem;
use mcm_solver::Infeasible;
use std::sync::Arc;

/// The relative rounding the structural bounds may carry.
const ROUNDING: f64 = 1e-9;

/// The proven structural bound, a hair low: the structural bounds sum flops
/// in other orders than the model, so they are proven up to rounding.
fn structural(cost: &CostModel) -> f64 {
    cost.bound_latency() * (1.0 - ROUNDING)
}

/// The structural bound of `problem` ([`Start::lb`]) without a search's
/// first steps; `None` without the analytical model.
pub(super) fn structural_bound(problem: &Problem) -> Option<f64> {
    CostModel::new(problem).ok().map(|c| structural(&c))
}

/// dp's cuts judged for the first incumbent, best estimate first.
pub(super) const DP_CUTS: usize = 4;

/// The best valid partition so far (`chips` empty and `latency` infinite
/// before the first).
pub(super) struct Incumbent {
    pub chips: Vec<u32>,
    /// Its pipeline latency, which the targets are asked below.
    pub latency: f64,
    /// What ranks it, lower is better: its latency, or under a proxy target
    /// the objective's cost.
    rank: f64,
    /// The target is a proxy: rank by the judge's score.
    proxy: bool,
}

impl Incumbent {
    pub fn none(proxy: bool) -> Incumbent {
        Incumbent {
            chips: Vec::new(),
            latency: f64::INFINITY,
            rank: f64::INFINITY,
            proxy,
        }
    }

    pub fn found(&self) -> bool {
        self.latency.is_finite()
    }

    /// Judges `chips` as one sample and keeps it when it is valid and
    /// better. Says whether SAT may hand it out again: whether the judge
    /// found it valid (`false` also when the budget had no sample left) and,
    /// under a proxy target, kept it (a partition under the target but no
    /// better by the objective would otherwise be answered again and again).
    pub fn offer(&mut self, search: &mut Search, model: &LatencyModel, chips: Vec<u32>) -> bool {
        self.judge(search, model, chips).1
    }

    /// [`Incumbent::offer`], also returning the judge's verdict (`None`
    /// when the budget had no sample left), which the learned worker's
    /// rewards are made of.
    pub fn judge(&mut self, search: &mut Search, model: &LatencyModel, chips: Vec<u32>) -> (Option<Verdict>, bool) {
        let lat = model.latency(&chips).unwrap_or(f64::INFINITY);
        let verdict = search.submit_one(chips.clone());
        let score = verdict.as_ref().and_then(|v| v.throughput());
        let rank = match self.proxy {
            true => score.map_or(f64::INFINITY, |s| 1.0 / s),
            false => lat,
        };
        let kept = score.is_some() && lat.is_finite() && rank < self.rank;
        if kept {
            self.latency = lat;
            self.rank = rank;
            self.chips = chips;
        }
        (verdict, score.is_some() && (kept || !self.proxy))
    }

    /// A partition the judge already found valid with `score` (its
    /// throughput, or the objective's score under a proxy target), as an
    /// incumbent, without judging it again.
    pub fn judged(model: &LatencyModel, chips: &[u32], score: f64, proxy: bool) -> Incumbent {
        let latency = model.latency(chips).unwrap_or(f64::INFINITY);
        let rank = match proxy {
            true => 1.0 / score,
            false => latency,
        };
        match latency.is_finite() && rank.is_finite() {
            true => Incumbent {
                chips: chips.to_vec(),
                latency,
                rank,
                proxy,
            },
            false => Incumbent::none(proxy),
        }
    }

    /// Takes `other` (already judged valid) when it ranks better: a search
    /// that keeps a second incumbent (the stricter twin's) shares its gains
    /// without judging them twice. Says whether it did.
    pub fn adopt(&mut self, other: &Incumbent) -> bool {
        let better = other.found() && other.rank < self.rank;
        if better {
            self.chips.clone_from(&other.chips);
            self.latency = other.latency;
            self.rank = other.rank;
        }
        better
    }
}

/// What the target-driven searches start from: the analytical model, after
/// setting FIX's order to topological (their partitions are the solver's
/// answers, not draws). Without the model there is no target to ask for:
/// greedy's partition, judged, is all there is, and `None` says so.
fn model_or_greedy(search: &mut Search) -> Result<Option<CostModel>, Infeasible> {
    search.order = mcm_solver::Order::Topological;
    let problem = search.problem;
    match CostModel::new(problem) {
        Ok(cost) => Ok(Some(cost)),
        Err(_) => {
            let allowed = search.allowed();
            let chips = settle_full(search, &greedy_start(problem, &allowed))?;
            search.submit_one(chips);
            Ok(None)
        }
    }
}

/// Where the target-driven searches begin: the analytical model, the first
/// incumbent ([`first`], with dp's `cuts` best cuts) and the proven
/// structural bound; `None` when there is no model ([`model_or_greedy`]).
pub(super) struct Start {
    pub model: Arc<LatencyModel>,
    pub best: Incumbent,
    pub lb: f64,
}

pub(super) fn start(search: &mut Search, cuts: usize) -> Result<Option<Start>, Infeasible> {
    let Some(cost) = model_or_greedy(search)? else {
        return Ok(None);
    };
    let model = cost.core().clone();
    let mut best = Incumbent::none(search.proxy_target());
    first(search, &model, &mut best, cuts)?;
    Ok(Some(Start {
        lb: structural(&cost),
        model,
        best,
    }))
}

/// The first incumbent: the given start, greedy's fill, dp's `cuts` best
/// cuts (and the next ones until one is valid), each settled under every
/// rule and judged (one sample each) while the budget lasts; under a proxy
/// target (an objective the SAT backing cannot encode, such as step time)
/// instead greedy's fill, every heuristic of the device-placement
/// literature, which aim at that objective where the pipeline's target does
/// not, and every dp cut, each settled as its own strategy settles it
/// ([`proposals`]). `Err` only when the problem has no valid partition.
pub(super) fn first(
    search: &mut Search,
    model: &LatencyModel,
    best: &mut Incumbent,
    cuts: usize,
) -> Result<(), Infeasible> {
    let problem = search.problem;
    if let Some(start) = search.start()? {
        best.offer(search, model, start);
    }
    if search.proxy_target() {
        return proposals::judge_all(search, model, best);
    }
    let allowed = search.allowed();
    if !search.done() {
        let chips = settle_full(search, &greedy_start(problem, &allowed))?;
        best.offer(search, model, chips);
    }
    // dp's table is quadratic in the nodes where memory does not cut
    // stages short: none asked, none made.
    let made = if cuts == 0 {
        Vec::new()
    } else {
        candidates(problem, &allowed)
    };
    // Past the `cuts` best, the others while none is valid yet: a cut that
    // FIX settles is a first partition in a fraction of the time a SAT
    // question for any valid one takes, where the best estimates overflow a
    // chip with activations the estimates do not see.
    for (i, (_, cut)) in made.into_iter().enumerate() {
        if search.done() || (i >= cuts && best.found()) {
            break;
        }
        let chips = settle_full(search, &cut)?;
        best.offer(search, model, chips);
    }
    // An encoder-decoder's layouts, which dp's pipelines cannot make: more
    // candidates, judged like the cuts, where the graph has the structure
    // (and dp's cuts were asked for).
    if cuts > 0 {
        for layout in encdec::layouts(problem) {
            if search.done() {
                break;
            }
            let chips = settle_full(search, &layout)?;
            best.offer(search, model, chips);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{Judge, JudgeOptions};
    use crate::strategy::Budget;

    /// GoogLeNet on a 3 x 4 mesh of 6 MiB tiles (one of 24 MiB, one of 12)
    /// under the four pipeline rules: greedy's fill and dp's best estimated
    /// cuts, settled by FIX, overflow a tile with activations that the
    /// estimates do not see; a later cut fits. The first incumbent goes on
    /// through the cuts until one is valid, and no further.
    #[test]
    fn past_the_best_cuts_the_next_until_one_is_valid() {
        let graph = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/graphs/googlenet.json.gz");
        let text = format!(
            "use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
             use std::topologies::mesh\n\
             topology small_tiles(s: bytes) {{\n\
                 include mesh(rows = 3, cols = 4, memory = s, compute = 3 TFLOP/s, bandwidth = 40 GB/s)\n\
                 set tile[5] {{ memory = 24 MiB, compute = 10 TFLOP/s }}\n\
                 set tile[10] {{ memory = 12 MiB, compute = 6 TFLOP/s }}\n\
             }}\n\
             let package = small_tiles(s = 6 MiB)\n\
             let net = graph(\"{graph}\")\n\
             partition net onto package {{\n\
                 require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n\
                 maximize throughput\n\
             }}\n"
        );
        let c = mcm_testkit::compile_in(&mcm_testkit::scratch("incumbent-cuts"), &text);
        let p = c.problem(None).expect("a problem").clone();
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let mut search = Search::new(&p, &judge, Budget::Samples(1_000), 1).unwrap();
        let Start { best, .. } = start(&mut search, DP_CUTS).unwrap().expect("the analytical model");
        assert!(best.found(), "a cut past the best {DP_CUTS} is valid");
        let judged = &search.records;
        assert!(
            judged.len() > 1 + DP_CUTS,
            "greedy's fill and the best cuts are invalid"
        );
        assert!(judged[..judged.len() - 1].iter().all(|r| r.throughput.is_none()));
        assert!(
            judged.last().unwrap().throughput.is_some(),
            "the first valid cut is the last judged"
        );
    }
}
