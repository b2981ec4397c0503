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
//! SAT calls run on a worker thread ([`super::sat_worker`]) that the search
//! waits for while its budget lasts; under a sample budget each has a fixed
//! amount of work, and one that spends it ends the search.

use super::incumbent::{self, Start, DP_CUTS};
use super::sat_worker::{below, Answer, Ask, Worker};
use super::{Search, Strategy};
use mcm_solver::Infeasible;

/// Bisect while the incumbent is more than this factor above the bound;
/// past it, ask for any improvement.
const BISECT_ABOVE: f64 = 1.02;

pub struct Exact;

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
        let Some(Start {
            model,
            mut best,
            mut lb,
        }) = incumbent::start(search, DP_CUTS)?
        else {
            return Ok(());
        };
        let problem = search.problem;
        if search.done() {
            search.prove(lb);
            return Ok(());
        }
        // Each question and its answer (`MCMPART_SAT_TRACE` set, as for the oracle's rounds).
        let trace = std::env::var_os("MCMPART_SAT_TRACE").is_some();
        let sat = Worker::for_search(search, problem, model.clone());
        if best.found() {
            sat.ask(Ask::Hint(best.chips.clone()));
        }
        while !search.done() && best.latency > lb && best.latency > 0.0 {
            let ub = best.latency;
            let t = next_target(lb, ub);
            sat.ask(Ask::Solve {
                target: t,
                decisions: Vec::new(),
            });
            let asked = std::time::Instant::now();
            let Some(answer) = sat.answer(search) else { break };
            if trace {
                let found = match &answer {
                    Answer::Found(c) => Some(model.latency(c).unwrap_or(f64::NAN)),
                    Answer::None | Answer::Unknown => None,
                };
                eprintln!(
                    "exact: target {t:.6e}: {found:?} in {:?} (bound {lb:.6e}, best {ub:.6e})",
                    asked.elapsed()
                );
            }
            match answer {
                Answer::Found(chips) => {
                    if !best.offer(search, &model, chips.clone()) {
                        sat.ask(Ask::Exclude(chips));
                    }
                }
                // Too hard for a call's work (a sample budget, whose run
                // must end): it ends with what it has.
                Answer::Unknown => break,
                // No valid partition the model can cost: nothing to prove.
                Answer::None if t.is_infinite() => break,
                // Nothing at or below t: every valid partition is slower.
                Answer::None if t == below(ub) => lb = ub,
                Answer::None => lb = lb.max(t),
            }
            search.prove(lb);
        }
        search.prove(lb);
        Ok(())
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
