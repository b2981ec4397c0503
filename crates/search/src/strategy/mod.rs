//! Search strategies: each asks the solver for valid partitions and the
//! judge for their worth, within one budget (samples or seconds) and one
//! seed, through a [`Search`]. A sample is one evaluated partition; every
//! strategy records the best score so far after each sample. The score is
//! one over the objective's cost ([`crate::cost::score`]): the throughput
//! under `maximize throughput`, steps per second under `minimize
//! step_time`; the records keep the name `throughput` for it.

mod anneal;
mod auto;
mod dp;
mod encdec;
mod exact;
mod greedy;
pub mod heuristics;
mod incumbent;
mod lns;
mod proposals;
mod random;
mod relay;
mod rl;
mod sat_worker;
mod stall;
mod start;
#[cfg(test)]
mod step_tests;

pub use anneal::Anneal;
pub use auto::{whole_portfolio, Auto, PORTFOLIO_NODES};
pub use dp::{cuts_within, pipeline_cuts, Dp};
pub use exact::Exact;
pub use greedy::{greedy_proposal, greedy_start, greedy_within, Greedy};
pub use lns::Lns;
pub use random::Random;
pub use rl::{load_stem, Rl, RlOptions, SHIPPED};
pub(crate) use stall::Stall;
pub use start::{moved, settle, settle_full, Allowed, Relief};

use crate::cost::{Judge, Verdict};
use mcm_core::problem::{Placement, Problem};
use mcm_solver::{fix, node_order, sample_or, Infeasible, Options, Order, Probs, Solver, Stats};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How much a strategy may spend.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    Samples(usize),
    Seconds(f64),
}

/// One evaluated partition, as the best-so-far curve records it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SampleRecord {
    /// 1-based sample number.
    pub sample: usize,
    pub elapsed_s: f64,
    /// `None` when the partition was invalid at evaluation.
    pub throughput: Option<f64>,
    /// The best valid throughput up to this sample.
    pub best: Option<f64>,
}

/// The best partition found.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Best {
    pub chips: Vec<u32>,
    pub throughput: f64,
    /// The sample that found it.
    pub sample: usize,
}

/// What a run of a strategy leaves.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    pub strategy: String,
    pub seed: u64,
    pub best: Option<Best>,
    pub records: Vec<SampleRecord>,
    /// Invalid samples by reason.
    pub invalid: BTreeMap<String, usize>,
    pub solver: Stats,
    pub elapsed_s: f64,
    /// Why the strategy stopped before the budget, when it failed; the
    /// samples before it stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Stopped on request ([`request_stop`]) before the budget was spent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// A lower bound on the analytical model's latency that the strategy
    /// proved of every partition valid under the rules and at evaluation
    /// (`exact`: SAT found none at or below it); `None` when it proved none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proven_bound_s: Option<f64>,
}

/// Set by [`request_stop`]: every search of the process winds down.
static STOP: AtomicBool = AtomicBool::new(false);

/// Asks every running search to stop at its next sample (as after Ctrl-C):
/// it ends as if its budget were spent, its outcome marked `interrupted`.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Whether a stop was requested and not yet cleared.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Lets searches run again after a stop (say, to take a baseline).
pub fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
}

impl Outcome {
    /// What makes this outcome impossible as a run on `problem` within
    /// `budget` samples, if anything: what [`run`] returns always passes
    /// (samples numbered from 1, valid throughputs finite and positive, the
    /// best so far their running maximum, the best partition that of its
    /// sample, on the problem's nodes and chips, and valid). A run read
    /// back from a file (`compare --resume`) is checked with it.
    pub fn inconsistency(&self, problem: &Problem, budget: usize) -> Option<String> {
        if self.records.len() > budget {
            return Some(format!(
                "{} samples, more than the budget of {budget}",
                self.records.len()
            ));
        }
        if !(self.elapsed_s.is_finite() && self.elapsed_s >= 0.0) {
            return Some(format!("its time is {}", self.elapsed_s));
        }
        let mut best: Option<f64> = None;
        let mut clock = 0.0;
        for (i, r) in self.records.iter().enumerate() {
            if r.sample != i + 1 {
                return Some(format!("record {} is numbered {}", i + 1, r.sample));
            }
            if !(r.elapsed_s.is_finite() && r.elapsed_s >= clock) {
                return Some(format!("sample {}'s time {} goes back", r.sample, r.elapsed_s));
            }
            clock = r.elapsed_s;
            if let Some(t) = r.throughput {
                if !(t.is_finite() && t > 0.0) {
                    return Some(format!("sample {} has a throughput of {t}", r.sample));
                }
                best = Some(best.map_or(t, |b: f64| b.max(t)));
            }
            if r.best != best {
                return Some(format!(
                    "sample {}'s best so far is not the best of its samples",
                    r.sample
                ));
            }
        }
        let Some(b) = &self.best else {
            return best.map(|_| "it has valid samples but no best partition".to_string());
        };
        let chips = problem.package.num_chips() as u32;
        if b.chips.len() != problem.graph.num_placed() || b.chips.iter().any(|&c| c >= chips) {
            return Some(format!(
                "its best partition is not one of {} nodes on {chips} chips",
                problem.graph.num_placed()
            ));
        }
        let found = b.sample.checked_sub(1).and_then(|i| self.records.get(i));
        if best != Some(b.throughput) || found.and_then(|r| r.throughput) != Some(b.throughput) {
            return Some("its best partition's throughput is not its best sample's".into());
        }
        let broken = mcm_solver::check(
            &problem.graph,
            &problem.package,
            &problem.constraints,
            &Placement::new(b.chips.clone()),
        );
        broken
            .first()
            .map(|v| format!("its best partition is invalid: {}", v.describe()))
    }

    pub fn invalid_count(&self) -> usize {
        self.invalid.values().sum()
    }

    /// Best throughput after `n` samples (the last record when fewer ran).
    pub fn best_at(&self, n: usize) -> Option<f64> {
        if n == 0 {
            return None;
        }
        let i = n.min(self.records.len());
        self.records.get(i.checked_sub(1)?).and_then(|r| r.best)
    }
}

/// A strategy: spends a search's budget asking for partitions. `Send`, so
/// that a command can search on a thread of its own and answer at its
/// deadline whatever the search is doing.
pub trait Strategy: Send {
    fn name(&self) -> &str;
    /// Runs until `search.done()`, or earlier when it has nothing more to
    /// try; `Err` only when the problem has no valid partition.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible>;
    /// Why the last run stopped before its budget when it failed (the
    /// learned strategies' tensor errors); `None` when it did not.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// The strategies `solve` and `compare` know by name. `rl` is the shipped
/// policy fine-tuned within the budget; `rl-zero-shot` samples it as it is;
/// `rl-scratch` trains a fresh policy within the budget; `rl-nosolver` is
/// `rl` without the solver (the paper's ablation). `hash` to `parmesan` are
/// the placement heuristics of the literature ([`heuristics`]); `hdp`,
/// `placeto` (the shipped checkpoint, zero-shot), `placeto-tune` (it,
/// fine-tuned within the budget) and `placeto-scratch` (trained on the
/// graph alone), `gdp` and `mars` the learned placers of
/// [`crate::placers`] (`gdp-scratch`: GDP without pretraining;
/// `mars-nopretrain`: Mars without its contrastive pretraining).
pub const NAMES: &[&str] = &[
    "greedy",
    "random",
    "anneal",
    "dp",
    "rl",
    "rl-zero-shot",
    "rl-scratch",
    "rl-nosolver",
    "exact",
    "lns",
    "auto",
    "hash",
    "critical-path",
    "m-topo",
    "m-etf",
    "m-sct",
    "metis",
    "parmesan",
    "hdp",
    "placeto",
    "placeto-tune",
    "placeto-scratch",
    "gdp",
    "gdp-scratch",
    "mars",
    "mars-nopretrain",
];

/// A strategy by name, with its default settings and, for the `rl`
/// family, `rl` adjusted by the name. `Ok(None)`: no such strategy.
pub fn by_name(name: &str, rl: &RlOptions) -> Result<Option<Box<dyn Strategy>>, crate::policy::PolicyError> {
    let learned = |o: RlOptions| -> Result<Option<Box<dyn Strategy>>, crate::policy::PolicyError> {
        Ok(Some(Box::new(Rl::new(name, o)?)))
    };
    Ok(Some(match name {
        "greedy" => Box::new(Greedy),
        "random" => Box::new(Random),
        "anneal" => Box::new(Anneal::default()),
        "dp" => Box::new(Dp),
        "exact" => Box::new(Exact),
        "lns" => Box::new(Lns),
        "auto" => Box::new(Auto),
        "gdp" | "gdp-scratch" => Box::new(crate::placers::gdp::Gdp::new(name, None, name == "gdp-scratch")?),
        "mars" | "mars-nopretrain" => Box::new(crate::placers::mars::Mars::new(name, None, name == "mars-nopretrain")?),
        "rl" => return learned(rl.clone()),
        "hdp" => Box::new(crate::placers::hdp::Hdp::default()),
        "placeto-scratch" => Box::new(crate::placers::placeto::Placeto::scratch(name)?),
        "placeto" | "placeto-tune" => Box::new(crate::placers::placeto::Placeto::load(
            name,
            None,
            name == "placeto-tune",
        )?),
        "rl-zero-shot" => {
            return learned(RlOptions {
                zero_shot: true,
                ..rl.clone()
            })
        }
        "rl-scratch" => {
            return learned(RlOptions {
                from_scratch: true,
                ..rl.clone()
            })
        }
        "rl-nosolver" => {
            return learned(RlOptions {
                mode: crate::policy::rollout::Correction::NoSolver,
                ..rl.clone()
            })
        }
        _ => match heuristics::Kind::from_name(name) {
            Some(kind) => Box::new(heuristics::Heuristic(kind)),
            None => return Ok(None),
        },
    }))
}

/// What the callback of [`Search::on_sample`] sees after each sample: enough
/// for a caller to keep the best so far while the search runs (`solve`
/// reports it at its deadline even when a step of the search cannot stop).
pub struct Progress<'a> {
    pub record: &'a SampleRecord,
    /// Why the partition was invalid at evaluation, when it was.
    pub invalid: Option<&'a str>,
    /// The best partition so far.
    pub best: Option<&'a Best>,
}

/// A callback run after every sample.
type OnSample<'p> = Box<dyn FnMut(&Progress) + 'p>;

/// The state one run of a strategy works through.
pub struct Search<'p> {
    pub problem: &'p Problem,
    pub solver: Solver<'p>,
    judge: &'p Judge,
    budget: Budget,
    pub rng: ChaCha8Rng,
    /// The run's seed, for what a strategy seeds besides `rng` (fresh policy weights).
    seed: u64,
    /// Order for SAMPLE and FIX passes.
    pub order: Order,
    start: Instant,
    records: Vec<SampleRecord>,
    best: Option<Best>,
    invalid: BTreeMap<String, usize>,
    progress: Option<OnSample<'p>>,
    /// A given starting partition (`--init`), not yet repaired.
    init: Option<Vec<u32>>,
    init_moved: Option<usize>,
    /// The root domains, computed on first use.
    allowed: Option<Allowed>,
    relief: Option<std::sync::Arc<start::Relief>>,
    /// The best lower bound on latency the strategy proved.
    proven: Option<f64>,
    /// The stricter twin's solver and root domains, kept between
    /// [`Search::on_twin`] calls (auto's rounds move between the problem and
    /// its twin, and grounding the twin's solver each time is repeated work).
    twin: Option<TwinState<'p>>,
    /// A share of the budget a part of the run keeps within
    /// ([`Search::replay_on`]).
    cap: Option<Cap>,
}

/// Where a part of a run ends ([`Search::replay_on`]), of the budget's own
/// kind.
#[derive(Clone, Copy, Debug)]
enum Cap {
    /// At this many samples in all.
    Samples(usize),
    /// Halfway from the part's start (`since` seconds from the run's start,
    /// after sample `from`) or its last better sample, whichever is later,
    /// to the budget's end ([`part_end`]).
    Seconds { since: f64, from: usize },
}

/// When a part of a time budget of `total` seconds that started at `since`
/// ends (see [`Search::replay_on`]): halfway from its start to the end when
/// it has not gained, else halfway from its last gain, at `gained`, to the
/// end. What comes after the part gets as long as the part has gone
/// without a gain: a part that keeps gaining keeps the time, one that
/// stalls hands on the rest, and it ends before `total`.
fn part_end(total: f64, since: f64, gained: Option<f64>) -> f64 {
    let last = gained.map_or(since, |g| g.max(since));
    0.5 * (total + last.min(total))
}

/// A twin's solver and root domains (see [`Search::on_twin`]).
struct TwinState<'p> {
    problem: &'p Problem,
    solver: Solver<'p>,
    allowed: Option<Allowed>,
}

/// When a time budget started at `start` runs out; `None` under a sample
/// budget (or past what the clock can count).
fn deadline(start: Instant, budget: Budget) -> Option<Instant> {
    match budget {
        Budget::Seconds(t) => std::time::Duration::try_from_secs_f64(t.max(0.0))
            .ok()
            .and_then(|d| start.checked_add(d)),
        Budget::Samples(_) => None,
    }
}

impl<'p> Search<'p> {
    pub fn new(problem: &'p Problem, judge: &'p Judge, budget: Budget, seed: u64) -> Result<Search<'p>, Infeasible> {
        // The budget counts the root propagation too.
        let start = Instant::now();
        let mut solver = Solver::new(problem, Options::default())?;
        // The solver's passes look at the clock too: finding a first valid
        // partition can take minutes where the rules are tight.
        let deadline = deadline(start, budget);
        solver.set_stop(Some(std::sync::Arc::new(move || {
            stop_requested() || deadline.is_some_and(|d| Instant::now() >= d)
        })));
        Ok(Search {
            problem,
            solver,
            judge,
            budget,
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
            order: Order::Random,
            start,
            records: Vec::new(),
            best: None,
            invalid: BTreeMap::new(),
            progress: None,
            init: None,
            init_moved: None,
            allowed: None,
            relief: None,
            proven: None,
            twin: None,
            cap: None,
        })
    }

    /// What every node's root domain allows (see [`Allowed`]).
    pub fn allowed(&mut self) -> Allowed {
        if self.allowed.is_none() {
            self.allowed = Some(Allowed::of(&mut self.solver));
        }
        self.allowed.clone().unwrap_or_else(|| Allowed::all(0, 0))
    }

    /// Runs `f` with this search on `twin`, a problem with the same graph
    /// and package and more rules (say, [`Problem::stricter`]): its solver
    /// and root domains are the twin's while the judge, the budget, the
    /// samples and the best so far stay this search's, so every partition
    /// `f` makes is valid here too. `Err` when the twin has no valid
    /// partition at its root.
    pub fn on_twin<R>(&mut self, twin: &'p Problem, f: impl FnOnce(&mut Search<'p>) -> R) -> Result<R, Infeasible> {
        let kept = self.twin.take().filter(|t| std::ptr::eq(t.problem, twin));
        let (solver, allowed) = match kept {
            Some(t) => (t.solver, t.allowed),
            None => {
                let mut solver = Solver::new(twin, self.solver.options())?;
                solver.set_stop(self.solver.stop());
                (solver, None)
            }
        };
        let solver = std::mem::replace(&mut self.solver, solver);
        let problem = std::mem::replace(&mut self.problem, twin);
        let allowed = std::mem::replace(&mut self.allowed, allowed);
        let r = f(self);
        let twin_solver = std::mem::replace(&mut self.solver, solver);
        self.problem = problem;
        let twin_allowed = std::mem::replace(&mut self.allowed, allowed);
        self.twin = Some(TwinState {
            problem: twin,
            solver: twin_solver,
            allowed: twin_allowed,
        });
        Ok(r)
    }

    /// Runs `f` on `twin` ([`Search::on_twin`]) as a run of its own on
    /// `twin` from here would spend the budget, for a part of it: the first
    /// half of the samples left; of a time budget, the first half of the
    /// time left and on while `f` still gains, until halfway from its last
    /// better sample to the end ([`part_end`]: `f` stops when it has gone as
    /// long without a gain as the time it would leave). The budget's
    /// fraction spent ([`Search::progress`]) still counts the whole budget,
    /// and what `f` proves or sets of FIX's order is dropped afterwards (a
    /// bound on the twin is none on this problem). Called before the first
    /// sample, `f`'s samples are those of a run on `twin` alone with this
    /// budget and seed, up to where the part ends.
    pub fn replay_on<R>(&mut self, twin: &'p Problem, f: impl FnOnce(&mut Search<'p>) -> R) -> Result<R, Infeasible> {
        let half = match self.budget {
            Budget::Samples(_) => Cap::Samples(self.records.len().saturating_add(self.remaining().div_ceil(2))),
            Budget::Seconds(_) => Cap::Seconds {
                since: self.elapsed(),
                from: self.records.len(),
            },
        };
        let outer = self.cap.replace(half);
        let (proven, order) = (self.proven.take(), self.order);
        let r = self.on_twin(twin, f);
        self.cap = outer;
        self.proven = proven;
        self.order = order;
        r
    }

    /// The budget's end as far as the running part may go: a sample count
    /// or seconds from the start (see [`Search::replay_on`]).
    fn end(&self) -> Budget {
        match (self.budget, self.cap) {
            (Budget::Samples(n), Some(Cap::Samples(c))) => Budget::Samples(n.min(c)),
            (Budget::Seconds(t), Some(Cap::Seconds { since, from })) => {
                Budget::Seconds(part_end(t, since, self.gained_after(from)))
            }
            (b, _) => b,
        }
    }

    /// When (seconds from the start) the best so far was found, if that was
    /// after sample `from`.
    fn gained_after(&self, from: usize) -> Option<f64> {
        let b = self.best.as_ref().filter(|b| b.sample > from)?;
        self.records.get(b.sample - 1).map(|r| r.elapsed_s)
    }

    /// What memory relief needs (see [`start::settle`]), made on first use.
    pub fn relief(&mut self) -> std::sync::Arc<start::Relief> {
        self.relief
            .get_or_insert_with(|| std::sync::Arc::new(start::Relief::of(self.problem)))
            .clone()
    }

    /// The given starting partition (`--init`): as it is when it passes the
    /// checker and the dynamic check, else repaired ([`settle`]); how many
    /// nodes moved is recorded for the outcome. `None` without one. Each
    /// strategy judges it as its first sample, so a run from a valid start
    /// ends with it or better.
    pub fn start(&mut self) -> Result<Option<Vec<u32>>, Infeasible> {
        let Some(init) = self.init.clone() else {
            return Ok(None);
        };
        let p = self.problem;
        let valid = mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(init.clone())).is_empty()
            && self
                .relief()
                .model
                .as_ref()
                .is_some_and(|m| m.peak_memory(&init).is_ok());
        let chips = if valid { init.clone() } else { settle_full(self, &init)? };
        self.init_moved = Some(moved(&init, &chips));
        Ok(Some(chips))
    }

    /// Records a lower bound on the model's latency the strategy proved
    /// (see [`Outcome::proven_bound_s`]); the largest one stands. Under an
    /// objective whose cost is not that latency ([`Search::proxy_target`])
    /// it proves nothing of the cost, and nothing is recorded.
    pub fn prove(&mut self, latency_s: f64) {
        if self.proxy_target() {
            return;
        }
        if latency_s.is_finite() && self.proven.is_none_or(|p| latency_s > p) {
            self.proven = Some(latency_s);
        }
    }

    /// Whether the SAT backing's latency target is only a proxy for the
    /// objective: its cost model has no target encoding (step time), so
    /// the target-driven searches rank by the judge's score instead.
    pub fn proxy_target(&self) -> bool {
        self.judge.objective().is_some_and(|o| o.target().is_none())
    }

    /// Whether a starting partition was given.
    pub fn has_start(&self) -> bool {
        self.init.is_some()
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Called after every sample (the command line's progress bar).
    pub fn on_sample(&mut self, f: impl FnMut(&Progress) + 'p) {
        self.progress = Some(Box::new(f));
    }

    pub fn samples(&self) -> usize {
        self.records.len()
    }

    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Samples left; `usize::MAX` under a time budget with time left; none
    /// once a stop is requested ([`request_stop`]).
    pub fn remaining(&self) -> usize {
        if stop_requested() {
            return 0;
        }
        match self.end() {
            Budget::Samples(n) => n.saturating_sub(self.records.len()),
            Budget::Seconds(t) if self.elapsed() < t => usize::MAX,
            Budget::Seconds(_) => 0,
        }
    }

    /// Seconds left of a time budget; `None` under a sample budget.
    pub fn time_left(&self) -> Option<f64> {
        match self.end() {
            Budget::Seconds(t) => Some((t - self.elapsed()).max(0.0)),
            Budget::Samples(_) => None,
        }
    }

    /// Whether the budget is a number of seconds (a run's path may then
    /// depend on the clock).
    pub fn timed(&self) -> bool {
        matches!(self.budget, Budget::Seconds(_))
    }

    pub fn done(&self) -> bool {
        self.remaining() == 0
    }

    /// Fraction of the budget spent, in [0, 1].
    pub fn progress(&self) -> f64 {
        match self.budget {
            Budget::Samples(n) => self.records.len() as f64 / n.max(1) as f64,
            Budget::Seconds(t) => (self.elapsed() / t.max(1e-9)).min(1.0),
        }
    }

    /// How many partitions to evaluate at once: the judge's parallelism,
    /// never past the budget.
    pub fn batch(&self) -> usize {
        self.judge.jobs().min(self.remaining()).max(1)
    }

    pub fn best(&self) -> Option<&Best> {
        self.best.as_ref()
    }

    /// SAMPLE in a fresh node order.
    pub fn sample(&mut self, probs: Probs) -> Result<Vec<u32>, Infeasible> {
        self.sample_or(probs, None)
    }

    /// SAMPLE with a valid partition near `probs` to fall back on (see
    /// [`mcm_solver::sample_or`]).
    pub fn sample_or(&mut self, probs: Probs, fallback: Option<&[u32]>) -> Result<Vec<u32>, Infeasible> {
        let order = node_order(&self.solver, self.order, &mut self.rng);
        Ok(sample_or(&mut self.solver, &order, probs, &mut self.rng, fallback)?.chips)
    }

    /// FIX a proposal, in a fresh node order.
    pub fn fix(&mut self, proposal: &[Option<u32>], probs: Probs) -> Result<Vec<u32>, Infeasible> {
        let order = node_order(&self.solver, self.order, &mut self.rng);
        Ok(fix(&mut self.solver, &order, proposal, probs, &mut self.rng)?.0.chips)
    }

    /// Evaluates partitions (in parallel), one sample each, and records
    /// them; partitions past the budget are not evaluated (`None`).
    pub fn submit(&mut self, batch: Vec<Vec<u32>>) -> Vec<Option<Verdict>> {
        let refused = vec![None; batch.len()];
        self.submit_except(batch, refused)
    }

    /// Records judged partitions as samples, one per verdict (the caller
    /// judged no more than the budget allows); the rest get `None`.
    fn record(&mut self, batch: Vec<Vec<u32>>, verdicts: Vec<Verdict>) -> Vec<Option<Verdict>> {
        let n = batch.len();
        let mut out = Vec::with_capacity(n);
        for (chips, v) in batch.into_iter().zip(verdicts) {
            let t = v.throughput();
            let invalid = match &v {
                Verdict::Invalid { reason } => Some(reason.as_str()),
                Verdict::Valid { .. } => None,
            };
            match &v {
                Verdict::Invalid { reason } => *self.invalid.entry(reason.clone()).or_default() += 1,
                Verdict::Valid { throughput } => {
                    if self.best.as_ref().is_none_or(|b| *throughput > b.throughput) {
                        self.best = Some(Best {
                            chips,
                            throughput: *throughput,
                            sample: self.records.len() + 1,
                        });
                    }
                }
            }
            let rec = SampleRecord {
                sample: self.records.len() + 1,
                elapsed_s: self.elapsed(),
                throughput: t,
                best: self.best.as_ref().map(|b| b.throughput),
            };
            if let Some(f) = self.progress.as_mut() {
                f(&Progress {
                    record: &rec,
                    invalid,
                    best: self.best.as_ref(),
                });
            }
            self.records.push(rec);
            out.push(Some(v));
        }
        out.resize(n, None);
        out
    }

    /// Like [`Search::submit`] for partitions no solver made valid (the
    /// `rl-nosolver` ablation): one that breaks a rule is an invalid sample
    /// naming the rule, and is not evaluated.
    pub fn submit_unchecked(&mut self, batch: Vec<Vec<u32>>) -> Vec<Option<Verdict>> {
        let p = self.problem;
        let refused: Vec<Option<String>> = batch
            .iter()
            .map(|chips| {
                let vs = mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(chips.clone()));
                vs.first()
                    .map(|v| format!("breaks `{}`", p.constraints[v.constraint].display_name()))
            })
            .collect();
        self.submit_except(batch, refused)
    }

    /// Like [`Search::submit`], but a partition with a reason in `refused`
    /// is an invalid sample with that reason, and is not evaluated.
    ///
    /// Under a time budget the batch is judged a chunk of the judge's
    /// parallelism at a time, the clock checked before each chunk and each
    /// chunk recorded when it is judged: a partition whose turn comes after
    /// the limit is not judged, so only the last chunk can end past it.
    /// Under a sample budget what is left is known up front, and the batch
    /// is judged at once.
    pub fn submit_except(&mut self, batch: Vec<Vec<u32>>, refused: Vec<Option<String>>) -> Vec<Option<Verdict>> {
        let n = batch.len();
        let chunk = if self.timed() {
            self.judge.jobs().max(1)
        } else {
            n.max(1)
        };
        let mut out = Vec::with_capacity(n);
        let mut todo = batch.into_iter().zip(refused);
        loop {
            let take = chunk.min(self.remaining());
            let part: Vec<(Vec<u32>, Option<String>)> = todo.by_ref().take(take).collect();
            if part.is_empty() {
                break;
            }
            let judge: Vec<Vec<u32>> = part
                .iter()
                .filter(|(_, r)| r.is_none())
                .map(|(c, _)| c.clone())
                .collect();
            let mut verdicts = self.judge.evaluate_all(&judge).into_iter();
            let (chips, judged): (Vec<Vec<u32>>, Vec<Verdict>) = part
                .into_iter()
                .map(|(c, r)| {
                    let v = match r {
                        Some(reason) => Verdict::Invalid { reason },
                        None => verdicts.next().unwrap_or(Verdict::Invalid {
                            reason: "not evaluated".into(),
                        }),
                    };
                    (c, v)
                })
                .unzip();
            out.extend(self.record(chips, judged));
        }
        out.resize(n, None);
        out
    }

    /// A partition judged outside the budget: the reference a strategy
    /// normalises by (the `rl` strategies' greedy baseline). Not a sample.
    pub fn reference(&self, chips: &[u32]) -> Verdict {
        self.judge.evaluate(chips)
    }

    /// One partition evaluated as one sample.
    pub fn submit_one(&mut self, chips: Vec<u32>) -> Option<Verdict> {
        self.submit(vec![chips]).pop().flatten()
    }

    fn finish(self, strategy: &str, seed: u64) -> Outcome {
        Outcome {
            strategy: strategy.to_string(),
            seed,
            elapsed_s: self.elapsed(),
            best: self.best,
            records: self.records,
            invalid: self.invalid,
            solver: self.solver.stats.clone(),
            failure: None,
            interrupted: false,
            proven_bound_s: self.proven,
        }
    }
}

/// Runs a strategy on a problem; the best partition is judged by the
/// checker before it is returned.
pub fn run(
    problem: &Problem,
    judge: &Judge,
    strategy: &mut dyn Strategy,
    budget: Budget,
    seed: u64,
    progress: Option<&mut dyn FnMut(&Progress)>,
) -> Result<Outcome, Infeasible> {
    run_from(problem, judge, strategy, budget, seed, progress, None).map(|(o, _)| o)
}

/// Why a starting partition does not fit a problem: it must give a chip of
/// the package to every placed node.
pub fn bad_start(problem: &Problem, init: &[u32]) -> Option<String> {
    let (n, c) = (problem.graph.num_placed(), problem.package.num_chips());
    if init.len() != n {
        return Some(format!(
            "the starting partition places {} nodes, the graph has {n}",
            init.len()
        ));
    }
    init.iter().position(|&x| x as usize >= c).map(|u| {
        format!(
            "the starting partition puts node {u} on chip {}, past the package's {c} chips",
            init[u]
        )
    })
}

/// [`run`] from a starting partition (`init`, one chip per placed node; see
/// [`bad_start`]), which the strategy repairs and starts from: greedy returns
/// it, dp judges it first, anneal starts its state there, rl refines it.
/// Also returns how many of its nodes the repair moved (`None` without one,
/// or when the strategy never used it).
/// # Panics
/// When `init` does not fit the problem ([`bad_start`]): callers check first.
pub fn run_from(
    problem: &Problem,
    judge: &Judge,
    strategy: &mut dyn Strategy,
    budget: Budget,
    seed: u64,
    progress: Option<&mut dyn FnMut(&Progress)>,
    init: Option<&[u32]>,
) -> Result<(Outcome, Option<usize>), Infeasible> {
    let mut search = Search::new(problem, judge, budget, seed)?;
    if let Some(init) = init {
        assert!(bad_start(problem, init).is_none(), "{:?}", bad_start(problem, init));
        search.init = Some(init.to_vec());
    }
    if let Some(f) = progress {
        search.on_sample(f);
    }
    match strategy.run(&mut search) {
        Ok(()) => {}
        // A pass given up at the deadline (or on a stop request) proves
        // nothing: the outcome has what was found before it.
        Err(_) if search.solver.cut_short() => {}
        Err(inf) => return Err(inf),
    }
    let moved = search.init_moved;
    let mut out = search.finish(strategy.name(), seed);
    out.failure = strategy.failure();
    out.interrupted = stop_requested();
    if let Some(b) = &out.best {
        let vs = mcm_solver::check(
            &problem.graph,
            &problem.package,
            &problem.constraints,
            &Placement::new(b.chips.clone()),
        );
        assert!(
            vs.is_empty(),
            "the solver produced an invalid partition: {}",
            vs[0].describe()
        );
    }
    Ok((out, moved))
}
