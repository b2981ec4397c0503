//! `auto`: the portfolio. A first incumbent from the heuristics (the given
//! start, greedy's fill, dp's best cuts: all of them under a sample
//! budget) and the shipped learned policy (zero-shot proposals around it,
//! [`super::rl::policy_offers`]), then `lns` (windows around the
//! bottleneck under a target below the incumbent) and `exact` (bisection of
//! the whole problem between the proven bound and the incumbent) share the
//! budget, each on its own SAT worker ([`super::sat_worker`]): every
//! partition either finds is judged and, valid and faster, the shared
//! incumbent that both work from next; every target the whole problem
//! refuses raises the shared proven bound (the structural bounds at first).
//! It ends when the bound meets the incumbent (proven optimal) or the budget
//! is spent.
//!
//! Under a time budget both workers run at once and the search waits for
//! them only until the deadline (a SAT call cannot be interrupted; an
//! unfinished one is abandoned), and a third joins them: the learned
//! policy fine-tuned in rounds as `rl` is ([`super::rl::Tuner`]), its
//! rollouts drawn around the shared incumbent and offered to it, on the
//! search's own thread while the SAT workers think. Under a sample budget
//! the SAT workers take turns (the policy's part is its zero-shot
//! proposals before them), so
//! a seed gives the same run: `lns` until it finds nothing in a few sweeps,
//! then `exact`, each call waited for to its end. A question that finds
//! nothing costs no sample, so there no question freer than `lns`'s cap is
//! asked: `exact` only on problems that small (the whole problem within
//! the cap), as `lns` grows no window past it.

use super::incumbent::{self, Incumbent, Start, DP_CUTS};
use super::lns::{seek_any, Learned, Neighbourhood, Question, FREE_CAP, STALE_SWEEPS};
use super::rl::Tuner;
use super::sat_worker::{below, Ask, Poll, Worker};
use super::{Search, Strategy};
use mcm_core::latency::LatencyModel;
use mcm_solver::Infeasible;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bisect while the incumbent is more than this factor above the bound
/// (as `exact` does); past it, ask for any improvement.
const BISECT_ABOVE: f64 = 1.02;

pub struct Auto;

/// The learned policy's proposals around the first incumbent (its likeliest
/// placement, then draws of moves), before `lns` and `exact` take over.
const POLICY_DRAWS: usize = 8;

/// The shared incumbent and bound, and what each worker was asked.
struct Portfolio {
    model: Arc<LatencyModel>,
    best: Incumbent,
    /// The proven bound: no valid partition is faster.
    lb: f64,
    hood: Neighbourhood,
    lns: Worker,
    exact: Worker,
    /// The question `lns` is working on, and since when.
    lns_asked: Option<(Question, Instant)>,
    /// The target `exact` is working on, and the incumbent's latency then.
    exact_asked: Option<(f64, f64)>,
    /// `lns` has nothing more to ask.
    lns_over: bool,
    /// `exact` may ask of the whole problem (see the module's comment).
    exact_on: bool,
}

/// Exact's next target: the midpoint while the gap is wide, else just below
/// the incumbent.
fn bisect(lb: f64, ub: f64) -> f64 {
    if ub > lb * BISECT_ABOVE {
        0.5 * (lb + ub)
    } else {
        below(ub)
    }
}

impl Portfolio {
    fn optimal(&self) -> bool {
        self.best.found() && self.lb >= self.best.latency
    }

    /// Judges a partition a worker found; a refused one is excluded from
    /// that worker's answers.
    fn offer(&mut self, search: &mut Search, chips: Vec<u32>, from_lns: bool) {
        if !self.best.offer(search, &self.model, chips.clone()) {
            let w = if from_lns { &self.lns } else { &self.exact };
            w.ask(Ask::Exclude(chips));
        }
    }

    fn ask_lns(&mut self, search: &mut Search) {
        if self.lns_over || self.lns_asked.is_some() {
            return;
        }
        if !search.timed() && self.hood.stale >= STALE_SWEEPS {
            self.lns_over = true;
            return;
        }
        match self.hood.question(&self.best, self.lb, &mut search.rng) {
            Some(q) => {
                self.lns.ask(Ask::Solve {
                    target: q.target,
                    decisions: q.decisions.clone(),
                });
                self.lns_asked = Some((q, Instant::now()));
            }
            None => self.lns_over = true,
        }
    }

    fn ask_exact(&mut self) {
        if !self.exact_on || self.exact_asked.is_some() || self.optimal() {
            return;
        }
        let ub = self.best.latency;
        let t = bisect(self.lb, ub);
        self.exact.ask(Ask::Solve {
            target: t,
            decisions: Vec::new(),
        });
        self.exact_asked = Some((t, ub));
    }

    fn lns_answered(&mut self, search: &mut Search, answer: Option<Vec<u32>>) {
        let Some((q, asked)) = self.lns_asked.take() else {
            return;
        };
        let found = answer.is_some();
        if let Some(chips) = answer {
            self.offer(search, chips, true);
        }
        if let Learned::Proved(t) = self.hood.learn(&q, found, asked.elapsed()) {
            self.raise(search, t, q.least);
        }
    }

    fn exact_answered(&mut self, search: &mut Search, answer: Option<Vec<u32>>) {
        let Some((t, ub)) = self.exact_asked.take() else { return };
        match answer {
            Some(chips) => self.offer(search, chips, false),
            None => self.raise(search, t, t == below(ub)),
        }
    }

    /// No valid partition is as fast as `t`; `least`: `t` was just below an
    /// incumbent, which is then optimal.
    fn raise(&mut self, search: &mut Search, t: f64, least: bool) {
        self.lb = self.lb.max(t);
        if least {
            self.lb = self.lb.max(self.best.latency);
        }
        search.prove(self.lb);
    }

    /// The three workers at once, until the deadline (time budgets): the
    /// SAT workers on their threads, the learned policy's rounds on this
    /// one, in the time it would otherwise wait for their answers.
    fn race(&mut self, search: &mut Search, mut tuner: Option<Tuner>) {
        while !search.done() && !self.optimal() {
            self.ask_lns(search);
            self.ask_exact();
            if let Poll::Ready(a) = self.exact.poll(Duration::ZERO) {
                self.exact_answered(search, a);
                continue;
            }
            let tuned = match tuner.as_mut().map(|t| t.round(search, &self.model, &mut self.best)) {
                Some(Ok(true)) => true,
                // A tensor error, or a pass cut short at the deadline: the
                // SAT workers go on without it.
                Some(Ok(false) | Err(_)) => {
                    tuner = None;
                    false
                }
                None => false,
            };
            let wait = if self.lns_asked.is_some() && !tuned {
                Duration::from_millis(20)
            } else {
                Duration::ZERO
            };
            match self.lns.poll(wait) {
                Poll::Ready(a) => self.lns_answered(search, a),
                Poll::Gone => self.lns_over = true,
                Poll::Waiting if self.lns_asked.is_none() && !tuned => std::thread::sleep(Duration::from_millis(20)),
                Poll::Waiting => {}
            }
        }
    }

    /// One worker at a time, each answer waited for (sample budgets).
    fn turns(&mut self, search: &mut Search) {
        while !search.done() && !self.optimal() {
            self.ask_lns(search);
            if self.lns_asked.is_some() {
                let Some(a) = self.lns.answer(search) else { return };
                self.lns_answered(search, a);
                continue;
            }
            self.ask_exact();
            if self.exact_asked.is_none() {
                return;
            }
            let Some(a) = self.exact.answer(search) else { return };
            self.exact_answered(search, a);
        }
    }
}

impl Strategy for Auto {
    fn name(&self) -> &str {
        "auto"
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        // Under a sample budget every dp cut (at most one per chip), so the
        // portfolio holds dp's whole run; under a time budget the best few,
        // as settling a cut can take seconds on large graphs.
        let cuts = if search.timed() { DP_CUTS } else { usize::MAX };
        let Some(Start { model, mut best, lb }) = incumbent::start(search, cuts)? else {
            return Ok(());
        };
        let problem = search.problem;
        if best.found() {
            super::rl::policy_offers(search, &model, &mut best, POLICY_DRAWS)?;
        }
        search.prove(lb);
        let exact = Worker::start(problem, model.clone());
        if !best.found() {
            seek_any(search, &exact, &model, &mut best);
        }
        if !best.found() {
            return Ok(());
        }
        let lns = Worker::start(problem, model.clone());
        for w in [&lns, &exact] {
            w.ask(Ask::Hint(best.chips.clone()));
        }
        let mut p = Portfolio {
            hood: Neighbourhood::new(model.clone(), search.timed()),
            model,
            best,
            lb,
            lns,
            exact,
            lns_asked: None,
            exact_asked: None,
            lns_over: false,
            exact_on: search.timed()
                || problem.graph.num_placed() * problem.package.num_chips().saturating_sub(1) <= FREE_CAP,
        };
        if search.timed() {
            let tuner = Tuner::new(search, &p.best);
            p.race(search, tuner);
        } else {
            p.turns(search);
        }
        Ok(())
    }
}
