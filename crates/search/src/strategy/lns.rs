//! `lns`: large neighbourhood search under a latency target. From an
//! incumbent (the given start, greedy's fill, dp's best cuts) it frees a
//! window of chips around every chip whose stage is over the target (the
//! bottlenecks: compute plus outgoing transfers), fixes every other node on
//! its chip, and asks the SAT backing ([`super::sat_worker`]) for a valid
//! partition of latency at most the target in which the freed nodes stay
//! within their window. A partition found is one sample and, judged valid,
//! the new incumbent; "none" leaves the incumbent as it was. So the search
//! never ends worse than its start, and every partition it hands out
//! passes the checker (the oracle's answers do) and the judge.
//!
//! What adapts ([`Neighbourhood`]): the improvement asked (a share of the
//! incumbent's latency, larger after a success, smaller after a refusal,
//! down to "any improvement"), and the window's radius in chips (grown when
//! even any improvement is refused; back to one chip after a sweep up to
//! the cap, or after a success). Each window's sides are drawn at random
//! (the search's seed), so sweeps differ. Half the questions free a band
//! instead: every node within the radius of its own chip, so a pipeline can
//! shift or stretch as a whole (onto chips dp left empty). A window that
//! covers every chip is the whole problem: "none" there proves the target,
//! as for `exact`.
//!
//! Under a sample budget the cap is a fixed freedom (see
//! [`Question::freedom`]), each call has a fixed amount of work (one that
//! spends it ends the sweep, as a window refused at the cap does), and the
//! search ends after a few sweeps without a gain, so a seed gives the same
//! run and every call ends; under a time budget a slow call (SAT
//! cannot be interrupted) lowers the cap, a sweep that finds nothing within
//! it doubles it, and the sweeps go on until the time is spent.

use super::incumbent::{self, Incumbent, Start, DP_CUTS};
use super::sat_worker::{below, Answer, Ask, Worker};
use super::{Search, Strategy};
use mcm_core::latency::LatencyModel;
use mcm_solver::Infeasible;
use rand::Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The first improvement asked, as a share of the incumbent's latency.
const FIRST_CUT: f64 = 0.02;
/// The most asked at once.
const MOST_CUT: f64 = 0.2;
/// Below this share, ask for any improvement.
const LEAST_CUT: f64 = 0.002;

/// Under a sample budget, at most this much freedom (see
/// [`Question::freedom`]; a window is not grown past it), and sweeps
/// without a gain before the search ends. A question that finds nothing
/// costs no sample and cannot be interrupted: on a 39-node LSTM over 36
/// chips, one of freedom 1,131 just below the incumbent ran for minutes
/// where one of 768 took 11 ms.
pub(super) const FREE_CAP: usize = 1000;
pub(super) const STALE_SWEEPS: usize = 3;

/// Under a time budget, a call slower than this shrinks the cap.
const SLOW: Duration = Duration::from_secs(3);

pub struct Lns;

/// One question about a window.
#[derive(Clone, Debug)]
pub(super) struct Question {
    pub target: f64,
    /// Fixed nodes on their chip, freed nodes within their window; empty
    /// when the window is the whole problem.
    pub decisions: Vec<(u32, Vec<u32>)>,
    /// The improvement asked was the least one (just below the incumbent).
    pub least: bool,
    /// The choices freed: over the nodes, their chips allowed but one.
    freedom: usize,
    radius: usize,
}

impl Question {
    /// The worker's question for this window.
    pub(super) fn ask(&self) -> Ask {
        Ask::Solve {
            target: self.target,
            decisions: self.decisions.clone(),
        }
    }
}

/// What an answer teaches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Learned {
    /// Go on.
    Continue,
    /// No valid partition is as fast as this (the whole problem refused it).
    Proved(f64),
}

/// The adaptive window (see the module's comment).
pub(super) struct Neighbourhood {
    model: Arc<LatencyModel>,
    cut: f64,
    radius: usize,
    /// The most freedom a question may have (a window is not grown past it).
    cap: usize,
    /// Sweeps in a row that found nothing.
    pub stale: usize,
    /// Questions answered.
    asked: usize,
    /// Whether a slow call lowers the cap (time budgets only: it depends on the clock).
    timed: bool,
}

impl Neighbourhood {
    pub fn new(model: Arc<LatencyModel>, timed: bool) -> Neighbourhood {
        Neighbourhood {
            model,
            cut: FIRST_CUT,
            radius: 1,
            cap: if timed { usize::MAX } else { FREE_CAP },
            stale: 0,
            asked: 0,
            timed,
        }
    }

    /// The next question about `best` (a valid partition, finite latency),
    /// its freedom within the cap; `None` when no target below it stays at
    /// or above the bound `lb`, or when not even a one-chip window fits.
    pub fn question(&mut self, best: &Incumbent, lb: f64, rng: &mut impl Rng) -> Option<Question> {
        let ub = best.latency;
        // Nothing is faster than no time (and `below` needs a positive float).
        if ub.is_nan() || ub <= 0.0 {
            return None;
        }
        let least = below(ub);
        if least < lb {
            return None;
        }
        loop {
            let mut target = (ub * (1.0 - self.cut)).max(lb);
            if self.cut < LEAST_CUT || target >= least {
                target = least;
            }
            let band = rng.random_bool(0.5);
            let mut smallest: Option<Question> = None;
            for kind in [band, !band] {
                let (decisions, freedom) = self.free(best, target, kind, rng);
                let q = Question {
                    target,
                    decisions,
                    least: target == least,
                    freedom,
                    radius: self.radius,
                };
                if freedom <= self.cap {
                    return Some(q);
                }
                if smallest.as_ref().is_none_or(|s| freedom < s.freedom) {
                    smallest = Some(q);
                }
            }
            // Neither fits the cap: a new sweep from one chip; at one chip,
            // the smaller one under a time budget (its cap only follows the
            // clock), none under a sample budget.
            if self.radius == 1 {
                return smallest.filter(|_| self.timed);
            }
            self.radius = 1;
            self.stale += 1;
            self.cut = FIRST_CUT;
        }
    }

    /// The decisions of a question under `target` (none when it is the
    /// whole problem) and their freedom: windows around the bottlenecks,
    /// or with `band` every node within the radius of its own chip (a
    /// pipeline shifted or stretched as a whole).
    fn free(&self, best: &Incumbent, target: f64, band: bool, rng: &mut impl Rng) -> (Vec<(u32, Vec<u32>)>, usize) {
        let c = self.model.num_chips();
        let r = self.radius;
        let windows = if band {
            vec![(0, c - 1)]
        } else {
            let stages = self
                .model
                .stage_times(&best.chips)
                .unwrap_or_else(|_| vec![f64::INFINITY; c]);
            let mut w = Vec::new();
            for (d, &s) in stages.iter().enumerate() {
                if s > target {
                    let left = rng.random_range(0..=r);
                    let right = rng.random_range(0..=r).max(r - left);
                    w.push((d.saturating_sub(left), (d + right).min(c - 1)));
                }
            }
            merged(w)
        };
        let mut decisions = Vec::new();
        let mut freedom = 0;
        for (u, &chip) in best.chips.iter().enumerate() {
            let d = chip as usize;
            let (lo, hi) = match windows.iter().find(|w| w.0 <= d && d <= w.1) {
                Some(&(lo, hi)) if band => (lo.max(d.saturating_sub(r)), hi.min(d + r)),
                Some(&w) => w,
                None => (d, d),
            };
            freedom += hi - lo;
            decisions.push((u as u32, (lo as u32..=hi as u32).collect::<Vec<u32>>()));
        }
        if decisions.iter().all(|(_, dom)| dom.len() == c) {
            decisions.clear();
        }
        (decisions, freedom)
    }

    /// Learns from the answer to `q` (a partition found counts whether or
    /// not the judge kept it); `took`, the call's time.
    pub fn learn(&mut self, q: &Question, answer: &Answer, took: Duration) -> Learned {
        self.asked += 1;
        let found = match answer {
            Answer::Found(_) => true,
            Answer::None => false,
            // Too hard for a call's work: a new sweep, as after a window
            // refused at the cap (the search ends after a few of them).
            Answer::Unknown => {
                self.cut = FIRST_CUT;
                self.radius = 1;
                self.stale += 1;
                return Learned::Continue;
            }
        };
        // The first call also encodes the target's counters: not a measure.
        if self.timed && took > SLOW && q.freedom > 1 && self.asked > 1 {
            // Too big for the time it leaves: smaller windows from now on.
            self.cap = (q.freedom * 3 / 4).max(1);
        }
        if found {
            self.cut = (self.cut.max(LEAST_CUT) * 1.5).min(MOST_CUT);
            self.radius = 1;
            self.stale = 0;
            return Learned::Continue;
        }
        // The whole problem has no valid partition this fast.
        let learned = match q.decisions.is_empty() {
            true => Learned::Proved(q.target),
            false => Learned::Continue,
        };
        if !q.least {
            self.cut /= 4.0;
            return learned;
        }
        // Not even any improvement in this window: a wider one, and back to
        // one chip (a new sweep) once the cap is reached.
        self.cut = FIRST_CUT;
        if q.freedom >= self.cap || q.radius >= self.model.num_chips() {
            self.radius = 1;
            self.stale += 1;
            if self.timed {
                // A sweep found nothing within the cap a slow call set:
                // the next may go wider (what is left is only there).
                self.cap = self.cap.saturating_mul(2);
            }
        } else {
            self.radius = q.radius + (q.radius / 2).max(1);
        }
        learned
    }
}

/// Overlapping or adjacent intervals joined, in order.
fn merged(mut v: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    v.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(v.len());
    for (lo, hi) in v {
        match out.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

impl Strategy for Lns {
    fn name(&self) -> &str {
        "lns"
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
        let sat = Worker::for_search(search, problem, model.clone());
        if !best.found() {
            // The heuristics' partitions all failed at evaluation: any
            // valid one the oracle finds is a start.
            seek_any(search, &sat, &model, &mut best);
        }
        if best.found() {
            sat.ask(Ask::Hint(best.chips.clone()));
        }
        let mut hood = Neighbourhood::new(model.clone(), search.timed());
        let trace = std::env::var_os("MCMPART_SAT_TRACE").is_some();
        while !search.done() && best.found() {
            if !search.timed() && hood.stale >= STALE_SWEEPS {
                break;
            }
            let Some(q) = hood.question(&best, lb, &mut search.rng) else {
                break;
            };
            sat.ask(q.ask());
            let asked = Instant::now();
            let Some(answer) = sat.answer(search) else { break };
            if trace {
                eprintln!(
                    "lns: target {:.6e} (freedom {}, radius {}): {} in {:?} (best {:.6e})",
                    q.target,
                    q.freedom,
                    q.radius,
                    match answer {
                        Answer::Found(_) => "found",
                        Answer::None => "none",
                        Answer::Unknown => "unknown",
                    },
                    asked.elapsed(),
                    best.latency
                );
            }
            if let Answer::Found(chips) = &answer {
                if !best.offer(search, &model, chips.clone()) {
                    sat.ask(Ask::Exclude(chips.clone()));
                }
            }
            if let Learned::Proved(t) = hood.learn(&q, &answer, asked.elapsed()) {
                lb = lb.max(t);
                search.prove(lb);
                if q.least {
                    // Nothing is faster than the incumbent: optimal.
                    search.prove(best.latency);
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Asks the oracle for any valid partition while the judge refuses them.
pub(super) fn seek_any(search: &mut Search, sat: &Worker, model: &LatencyModel, best: &mut Incumbent) {
    while !search.done() && !best.found() {
        sat.ask(Ask::Solve {
            target: f64::INFINITY,
            decisions: Vec::new(),
        });
        match sat.answer(search) {
            Some(Answer::Found(chips)) => {
                if !best.offer(search, model, chips.clone()) {
                    sat.ask(Ask::Exclude(chips));
                }
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that spends its work (a sample budget's bound) proves
    /// nothing, even of the whole problem, and ends the sweep as a window
    /// refused at the cap does: the search ends after a few of them.
    #[test]
    fn an_unknown_answer_proves_nothing_and_ends_the_sweep() {
        let text = format!(
            "{}let p = ring(n = 4, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
             let g = graph {{\n  a {{ flops = 1 MFLOP }}\n  b {{ flops = 2 MFLOP }}\n  a -> b\n}}\n\
             partition g onto p {{\n    require memory_capacity\n}}\n",
            mcm_testkit::HEADER
        );
        let p = mcm_testkit::compile_ok(&text).problems[0].clone();
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let whole = |least: bool| Question {
            target: 1e-3,
            decisions: Vec::new(),
            least,
            freedom: 3,
            radius: 2,
        };
        let mut hood = Neighbourhood::new(model, false);
        let took = Duration::from_millis(1);
        assert_eq!(hood.learn(&whole(false), &Answer::None, took), Learned::Proved(1e-3));
        for sweeps in 1..=STALE_SWEEPS {
            hood.radius = 3;
            assert_eq!(hood.learn(&whole(false), &Answer::Unknown, took), Learned::Continue);
            assert_eq!((hood.stale, hood.radius, hood.cut), (sweeps, 1, FIRST_CUT));
        }
        assert_eq!(
            hood.learn(&whole(true), &Answer::Found(vec![0, 1]), took),
            Learned::Continue
        );
        assert_eq!(hood.stale, 0, "a gain starts the sweeps again");
    }

    #[test]
    fn windows_merge_when_they_overlap_or_touch() {
        assert_eq!(merged(vec![(4, 6), (0, 1), (2, 3), (9, 9)]), vec![(0, 6), (9, 9)]);
        assert_eq!(merged(vec![(1, 5), (2, 3)]), vec![(1, 5)]);
        assert!(merged(Vec::new()).is_empty());
    }
}
