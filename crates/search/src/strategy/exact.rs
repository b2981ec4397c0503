//! `exact`: the optimum of the analytical model, with a proof. From the
//! best incumbent (the given start, greedy, dp's best cuts) and the proven
//! structural bound, it asks the SAT backing for a valid partition under a
//! latency target `T` ([`mcm_solver::target`]): the midpoint of bound and
//! incumbent while they are far apart, then "faster than the incumbent"
//! (the float just below it). Each partition SAT finds is a sample and,
//! judged valid, the new incumbent; an unsatisfiable `T` is the new bound
//! (no valid partition is that fast). It ends when the bound meets the
//! incumbent (proven optimal, to the last bit of the latency) or when the
//! budget runs out, with the best bound proved.
//!
//! A partition that SAT finds and the judge refuses (the dynamic memory
//! check) is excluded and the question asked again, so the bound covers
//! the partitions valid under the rules and at evaluation.
//!
//! SAT cannot be interrupted inside one call, so calls run on a worker
//! thread that the search waits for while its budget lasts; at the end of a
//! time budget an unfinished call is abandoned (its thread ends when the
//! call does, or with the process).

use super::dp::candidates;
use super::{greedy_start, settle_full, Search, Strategy};
use crate::cost::CostModel;
use mcm_core::latency::LatencyModel;
use mcm_core::problem::{Placement, Problem};
use mcm_solver::sat::{SatAnswer, SatOracle};
use mcm_solver::{Infeasible, Order, Target};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// Bisect while the incumbent is more than this factor above the bound;
/// past it, ask for any improvement.
const BISECT_ABOVE: f64 = 1.02;

/// The relative rounding the structural bounds may carry.
const ROUNDING: f64 = 1e-9;

/// dp's cuts judged for the first incumbent, best estimate first.
const DP_CUTS: usize = 4;

pub struct Exact;

/// What the search asks the SAT worker.
enum Ask {
    /// Start the search from this partition.
    Hint(Vec<u32>),
    /// Never hand this partition out again (the judge refused it).
    Exclude(Vec<u32>),
    /// A valid partition of latency at most this, if any.
    Solve(f64),
}

/// A valid partition under the target, or `None`: there is none.
type Answer = Option<Vec<u32>>;

/// The largest float below `x` (for `x > 0`): "faster than `x`".
fn below(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

/// The next target: the midpoint while the gap is wide, else just below
/// the incumbent.
fn next_target(lb: f64, ub: f64) -> f64 {
    if !ub.is_finite() {
        f64::INFINITY
    } else if ub > lb * BISECT_ABOVE {
        0.5 * (lb + ub)
    } else {
        below(ub)
    }
}

impl Strategy for Exact {
    fn name(&self) -> &str {
        "exact"
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        search.order = Order::Topological;
        let problem = search.problem;
        let Ok(cost) = CostModel::new(problem) else {
            // Without the analytical model there is no target to ask for:
            // what greedy finds is all there is.
            let allowed = search.allowed();
            let chips = settle_full(search, &greedy_start(problem, &allowed))?;
            search.submit_one(chips);
            return Ok(());
        };
        let model = cost.core().clone();
        let mut ub = f64::INFINITY;
        let mut best: Option<Vec<u32>> = None;
        let judge = |search: &mut Search, chips: Vec<u32>, ub: &mut f64, best: &mut Option<Vec<u32>>| -> bool {
            let lat = model.latency(&chips).unwrap_or(f64::INFINITY);
            let valid = search.submit_one(chips.clone()).and_then(|v| v.throughput()).is_some();
            if valid && lat < *ub {
                *ub = lat;
                *best = Some(chips);
            }
            valid
        };
        // Incumbents: the start, greedy, dp's best cuts.
        if let Some(start) = search.start()? {
            judge(search, start, &mut ub, &mut best);
        }
        let allowed = search.allowed();
        if !search.done() {
            let chips = settle_full(search, &greedy_start(problem, &allowed))?;
            judge(search, chips, &mut ub, &mut best);
        }
        for (_, cut) in candidates(problem, &allowed).into_iter().take(DP_CUTS) {
            if search.done() {
                return Ok(());
            }
            let chips = settle_full(search, &cut)?;
            judge(search, chips, &mut ub, &mut best);
        }
        // The structural bounds sum flops in other orders than the model:
        // proven up to rounding, so they start the search a hair lower.
        let mut lb = cost.bound_latency() * (1.0 - ROUNDING);
        // Each question and its answer (`MCMPART_SAT_TRACE` set, as for the oracle's rounds).
        let trace = std::env::var_os("MCMPART_SAT_TRACE").is_some();
        let sat = Worker::start(problem, model.clone());
        if let Some(b) = &best {
            sat.ask(Ask::Hint(b.clone()));
        }
        while !search.done() && ub > lb && ub > 0.0 {
            let t = next_target(lb, ub);
            sat.ask(Ask::Solve(t));
            let asked = std::time::Instant::now();
            let Some(answer) = sat.answer(search) else { break };
            if trace {
                let found = answer.as_ref().map(|c| model.latency(c).unwrap_or(f64::NAN));
                eprintln!(
                    "exact: target {t:.6e}: {found:?} in {:?} (bound {lb:.6e}, best {ub:.6e})",
                    asked.elapsed()
                );
            }
            match answer {
                Some(chips) => {
                    if !judge(search, chips.clone(), &mut ub, &mut best) {
                        sat.ask(Ask::Exclude(chips));
                    }
                }
                // No valid partition the model can cost: nothing to prove.
                None if t.is_infinite() => break,
                // Nothing at or below t: every valid partition is slower.
                None if t == below(ub) => lb = ub,
                None => lb = lb.max(t),
            }
            search.prove(lb);
        }
        search.prove(lb);
        Ok(())
    }
}

/// The SAT oracle on its own thread (see the module's comment).
struct Worker {
    asks: Sender<Ask>,
    answers: Receiver<Answer>,
}

impl Worker {
    fn start(problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        let (asks, inbox) = channel::<Ask>();
        let (outbox, answers) = channel::<Answer>();
        let problem = problem.clone();
        std::thread::Builder::new()
            .name("mcmpart-exact".into())
            .stack_size(mcm_core::WORKER_STACK)
            .spawn(move || serve(&problem, model, inbox, outbox))
            .expect("a thread for the SAT worker");
        Worker { asks, answers }
    }

    fn ask(&self, a: Ask) {
        // A worker that is gone answers nothing; `answer` says so.
        let _ = self.asks.send(a);
    }

    /// The answer to the last `Solve`, waiting while the search's budget
    /// lasts; `None` when it ran out (or a stop was requested) first.
    fn answer(&self, search: &Search) -> Option<Answer> {
        loop {
            match self.answers.recv_timeout(Duration::from_millis(50)) {
                Ok(a) => return Some(a),
                Err(RecvTimeoutError::Timeout) if !search.done() => {}
                Err(_) => return None,
            }
        }
    }
}

fn serve(problem: &Problem, model: Arc<LatencyModel>, inbox: Receiver<Ask>, outbox: Sender<Answer>) {
    let mut oracle = SatOracle::new(problem, true);
    for ask in inbox {
        match ask {
            Ask::Hint(chips) => oracle.suggest(problem, &Placement::new(chips)),
            Ask::Exclude(chips) => oracle.exclude(&Placement::new(chips)),
            Ask::Solve(t) => {
                oracle.set_target(Some(Target {
                    model: model.clone(),
                    latency_s: t,
                }));
                let a = match oracle.solve(problem, &[]) {
                    SatAnswer::Sat(p) => Some(p.chips),
                    SatAnswer::Unsat(_) => None,
                };
                if outbox.send(a).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_bisect_then_ask_for_any_improvement() {
        assert_eq!(next_target(1.0, 3.0), 2.0);
        assert_eq!(next_target(1.0, 1.01), below(1.01));
        assert!(below(1.01) < 1.01 && below(1.01) > 1.0099999);
        assert_eq!(next_target(1.0, f64::INFINITY), f64::INFINITY);
    }
}
