//! `auto`: the portfolio. A first incumbent from the heuristics (the given
//! start, greedy's fill, dp's best cuts: all of them under a sample
//! budget) and the shipped learned policy (zero-shot proposals around it,
//! [`super::rl::policy_offers`]) and the learned placers' zero-shot
//! placements (GDP's, Mars's and Placeto's, [`crate::placers::zero_shot`],
//! their networks run on threads of their own meanwhile), then `lns` (windows around the
//! bottleneck under a target below the incumbent) and `exact` (bisection of
//! the whole problem between the proven bound and the incumbent) share the
//! budget, each on its own SAT worker ([`super::sat_worker`]): every
//! partition either finds is judged and, valid and faster, the shared
//! incumbent that both work from next; every target the whole problem
//! refuses raises the shared proven bound (the structural bounds at first).
//! It ends when the bound meets the incumbent (proven optimal) or the budget
//! is spent. When the problem does not require all of the standard
//! library's pipeline rules, its stricter twin (the same problem with them
//! added) is searched too. The first part of the budget is the run `auto`
//! makes on the twin alone with the same seed ([`replay`]): under a sample
//! budget its first half, sample for sample; under a time budget at least
//! the first half and on while that run still gains, until halfway from
//! its last gain to the deadline, its `exact` calls stopped there. The
//! problem's own search then goes on from its best. So a problem with fewer
//! rules never ends worse than the twin's run does at half its budget, nor,
//! under a time budget, than the twin's whole run when that one gains
//! nothing after its part ends. Under a time budget (throughput) the twin's
//! search goes on beside the problem's after its part ([`Twin`]), from
//! where the part left it ([`Carried`]: its `lns` worker and window, its
//! `exact` bisection, its fine-tuned policy): what `auto` does on a
//! problem with every rule, around the best partition those rules allow:
//! `lns`'s windows and `exact`'s bisection on SAT workers of their own,
//! and the learned policy's rounds, all of them while the problem's own
//! search has found nothing faster than the twin's best, a share once it
//! has ([`Split`]). The problem's own SAT workers then run at a lower
//! scheduling priority ([`Worker::yielding`]), so that on a busy machine
//! the twin's side keeps the pace of a run under every rule.
//!
//! Under a time budget both workers run at once and the search waits for
//! them only until the deadline (a SAT call cannot be interrupted; an
//! unfinished one is abandoned), and a third joins them: the learned
//! policy fine-tuned in rounds as `rl` is ([`super::rl::Tuner`]), its
//! rollouts drawn around the shared incumbent and offered to it, on the
//! search's own thread while the SAT workers think; with a stricter twin,
//! rounds go to the twin too (to the side that last climbed, [`Split`]),
//! their rollouts drawn around the twin's best and made valid under the
//! twin's rules (under the problem's alone, FIX keeps what the pipeline
//! rules would have spread apart). Under a sample budget
//! the SAT workers take turns (the policy's part is its zero-shot
//! proposals before them), so
//! a seed gives the same run: `lns` until it finds nothing in a few sweeps,
//! then `exact`, each call waited for to its end. A question that finds
//! nothing costs no sample, so there no question freer than `lns`'s cap is
//! asked: `exact` only on problems that small (the whole problem within
//! the cap), as `lns` grows no window past it.
//!
//! Under an objective the SAT backing cannot encode (`minimize step_time`)
//! the portfolio is another: every heuristic's proposal, greedy's and every
//! dp cut, each settled as its own strategy settles it
//! ([`super::proposals`]), then the learned policy's proposals and the
//! learned placers' placements, then
//! annealing from the best of them for the rest of the budget, samples or
//! seconds ([`refine`]): each draw one it has not judged that passes the
//! memory check, a quarter of its moves shifting a stage boundary by many
//! nodes at once. It is never behind any of those strategies on the same
//! seed.

use super::incumbent::{self, Incumbent, Start, DP_CUTS};
use super::lns::{seek_any, Learned, Neighbourhood, Question, FREE_CAP, STALE_SWEEPS};
use super::rl::Tuner;
use super::sat_worker::{below, Answer, Ask, Poll, Worker};
use super::{Anneal, Best, Search, Strategy};
use mcm_core::latency::LatencyModel;
use mcm_core::problem::Problem;
use mcm_solver::{Infeasible, Order};
use std::sync::Arc;
use std::time::{Duration, Instant};
use twin::Twin;

mod twin;

/// Bisect while the incumbent is more than this factor above the bound
/// (as `exact` does); past it, ask for any improvement.
const BISECT_ABOVE: f64 = 1.02;

pub struct Auto;

/// Above this many placed nodes `auto` keeps to its first incumbent (the
/// heuristics' proposals, each settled under the rules and judged): the
/// learned policy's tensors and each SAT worker's encoding of the whole
/// problem take kilobytes a node, past the memory a graph of a million
/// nodes may use, and a SAT question about such a graph does not end
/// within any budget worth waiting for. The largest model graphs of the
/// data set have a few thousand nodes.
pub const PORTFOLIO_NODES: usize = 50_000;

/// Whether `auto` runs its whole portfolio on a graph of `placed` nodes
/// (see [`PORTFOLIO_NODES`]).
pub fn whole_portfolio(placed: usize) -> bool {
    placed <= PORTFOLIO_NODES
}

/// The learned policy's proposals around the first incumbent (its likeliest
/// placement, then draws of moves), before `lns` and `exact` take over.
const POLICY_DRAWS: usize = 8;

/// Draws per sample of `auto`'s annealing before one that repeats a
/// partition or fails the memory check is judged anyway ([`Anneal::fresh`]).
const FRESH_DRAWS: usize = 8;

/// Share of the moves of `auto`'s annealing that shift a stage boundary by
/// many nodes at once ([`Anneal::shift`]).
const SHIFT_SHARE: f64 = 0.25;

/// The shared incumbent and bound, and what each worker was asked.
struct Portfolio<'p> {
    model: Arc<LatencyModel>,
    best: Incumbent,
    /// The proven bound: no valid partition is faster.
    lb: f64,
    hood: Neighbourhood,
    lns: Worker,
    /// `exact`'s worker and the target it is working on.
    exact: Bisection,
    /// The question `lns` is working on, and since when.
    lns_asked: Option<(Question, Instant)>,
    /// `lns` has nothing more to ask.
    lns_over: bool,
    /// `exact` may ask of the whole problem (see the module's comment).
    exact_on: bool,
    /// The search on the problem's stricter twin, under a time budget.
    twin: Option<Twin<'p>>,
}

/// While the problem does not lead its twin, one round of the learned policy
/// in this many is the problem's ([`Split`]): enough for its own rounds to
/// find what the freedom allows, few enough that the twin's keep most of
/// the pace a run under all four rules has.
const OWN_EVERY: usize = 4;

/// How the learned policy's rounds are shared between the problem and its
/// stricter twin. While the problem's own search has found nothing faster
/// than the twin's best (the freedom has not paid yet), the twin takes all
/// but one round in [`OWN_EVERY`]: the rounds of a run under all four
/// rules, which can gain after a long stall (a policy fine-tuned for many
/// rounds), go on near that run's pace, while the problem's own search goes
/// on on its SAT workers and in the rounds left to it (where only its
/// rounds find what the freedom allows, as on BERT-base). Once the
/// problem leads, each side's rounds since one last improved its own
/// incumbent (the shared one, the twin's) are counted and the next round
/// goes to the side with fewer, alternating on a tie: a side that is
/// climbing keeps the rounds (the twin's, when the pipeline rules lead to
/// the better partitions; the problem's, where the freedom pays) until it
/// stalls as long as the other.
#[derive(Default)]
struct Split {
    twin_stale: usize,
    own_stale: usize,
}

impl Split {
    /// Whether round `round` goes to the twin (`own`: the problem's rounds
    /// may still run; `leads`: the shared incumbent is faster than the
    /// twin's best).
    fn twins_turn(&self, round: usize, own: bool, leads: bool) -> bool {
        if !own {
            return true;
        }
        if !leads {
            return !round.is_multiple_of(OWN_EVERY);
        }
        self.twin_stale < self.own_stale || (self.twin_stale == self.own_stale && round.is_multiple_of(2))
    }

    /// A round on the twin (`twin`) or on the problem ended, `gained` or not.
    fn learn(&mut self, twin: bool, gained: bool) {
        let stale = if twin {
            &mut self.twin_stale
        } else {
            &mut self.own_stale
        };
        *stale = if gained { 0 } else { *stale + 1 };
    }
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

/// `exact`'s worker, bisecting the whole problem between its proven bound
/// and its best, and the target it is working on with the best latency
/// when it was asked. The twin's part hands its own to the twin's search
/// (see [`Carried`]).
pub(super) struct Bisection {
    pub worker: Worker,
    pub asked: Option<(f64, f64)>,
}

impl Bisection {
    /// Asks the worker its next target between `lb` and the best `ub`.
    fn ask(&mut self, lb: f64, ub: f64) {
        let t = bisect(lb, ub);
        self.worker.ask(Ask::Solve {
            target: t,
            decisions: Vec::new(),
        });
        self.asked = Some((t, ub));
    }
}

impl<'p> Portfolio<'p> {
    fn optimal(&self) -> bool {
        self.best.found() && self.lb >= self.best.latency
    }

    /// Judges a partition a worker found; a refused one is excluded from
    /// that worker's answers.
    fn offer(&mut self, search: &mut Search, chips: Vec<u32>, from_lns: bool) {
        if !self.best.offer(search, &self.model, chips.clone()) {
            let w = if from_lns { &self.lns } else { &self.exact.worker };
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
                self.lns.ask(q.ask());
                self.lns_asked = Some((q, Instant::now()));
            }
            None => self.lns_over = true,
        }
    }

    fn ask_exact(&mut self) {
        if !self.exact_on || self.exact.asked.is_some() || self.optimal() {
            return;
        }
        self.exact.ask(self.lb, self.best.latency);
    }

    fn lns_answered(&mut self, search: &mut Search, answer: Answer) {
        let Some((q, asked)) = self.lns_asked.take() else {
            return;
        };
        if let Answer::Found(chips) = &answer {
            self.offer(search, chips.clone(), true);
        }
        if let Learned::Proved(t) = self.hood.learn(&q, &answer, asked.elapsed()) {
            self.raise(search, t, q.least);
        }
    }

    fn exact_answered(&mut self, search: &mut Search, answer: Answer) {
        let Some((t, ub)) = self.exact.asked.take() else { return };
        match answer {
            Answer::Found(chips) => self.offer(search, chips, false),
            Answer::None => self.raise(search, t, t == below(ub)),
            // Too hard for a call's work (a sample budget): no more of
            // the whole problem.
            Answer::Unknown => self.exact_on = false,
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

    /// Every worker at once, until the deadline (time budgets): the
    /// SAT workers on their threads, the learned policy's rounds on this
    /// one, in the time it would otherwise wait for their answers.
    fn race(&mut self, search: &mut Search<'p>, mut tuner: Option<Tuner>) -> Option<Tuner> {
        let mut rounds = 0usize;
        let mut split = Split::default();
        while !search.done() && !self.optimal() {
            self.ask_lns(search);
            self.ask_exact();
            if let Some(t) = self.twin.as_mut() {
                t.consider(&self.best);
                t.ask(&self.best, &mut search.rng);
                if t.poll(search, &self.model, &mut self.best, Duration::ZERO) {
                    continue;
                }
            }
            if let Poll::Ready(a) = self.exact.worker.poll(Duration::ZERO) {
                self.exact_answered(search, a);
                continue;
            }
            rounds += 1;
            let on_twin = self.twin.as_ref().is_some_and(|t| {
                t.tunes() && split.twins_turn(rounds, tuner.is_some(), self.best.latency < t.best.latency)
            });
            let twin = self.twin.as_mut().filter(|_| on_twin);
            let tuned = match (twin, tuner.as_mut()) {
                (Some(t), _) => {
                    let from = t.best.latency;
                    let ran = t.round(search, &self.model, &mut self.best);
                    split.learn(true, t.best.latency < from);
                    ran
                }
                (None, Some(t)) => {
                    let from = self.best.latency;
                    match t.round(search, &self.model, &mut self.best) {
                        Ok(true) => {
                            split.learn(false, self.best.latency < from);
                            true
                        }
                        // A tensor error, or a pass cut short at the deadline: the
                        // SAT workers go on without it.
                        Ok(false) | Err(_) => {
                            tuner = None;
                            false
                        }
                    }
                }
                (None, None) => false,
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
        tuner
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
            if self.exact.asked.is_none() {
                return;
            }
            let Some(a) = self.exact.worker.answer(search) else {
                return;
            };
            self.exact_answered(search, a);
        }
    }
}

/// Asks `sat` for a partition the judge accepts, each answer it refuses
/// followed by a question for one faster than it (bisecting down from it to
/// the bound `lb`): the judge refuses for what the rules do not see, such as
/// activations that overflow a chip's memory, and a faster partition spreads
/// the work, and with it the activations, over more chips.
fn seek_balanced(search: &mut Search, sat: &Worker, model: &LatencyModel, best: &mut Incumbent, mut lb: f64) {
    let mut ub = f64::INFINITY;
    while !search.done() && !best.found() {
        let target = if ub.is_finite() { bisect(lb, ub) } else { ub };
        if target <= lb {
            return;
        }
        sat.ask(Ask::Solve {
            target,
            decisions: Vec::new(),
        });
        match sat.answer(search) {
            Some(Answer::Found(chips)) => {
                let lat = model.latency(&chips).unwrap_or(f64::INFINITY);
                if !best.offer(search, model, chips.clone()) {
                    sat.ask(Ask::Exclude(chips));
                    ub = ub.min(lat);
                }
            }
            Some(Answer::None) if ub.is_finite() => lb = target,
            _ => return,
        }
    }
}

/// The first part of the budget spent as `auto` would spend it on `twin`,
/// the problem's stricter twin ([`Problem::stricter`]), on its own with this
/// budget and seed ([`Search::replay_on`]): the same samples in the same
/// order, each valid here too (the twin has every rule of the problem). The
/// part is the first half of a sample budget; of a time budget, the first
/// half and on while the twin's run gains, until it has gone as long
/// without a gain as the time it would leave. So the problem's run ends at
/// least as good as the twin's run would at half of its budget, and as good
/// as the twin's whole run when that one finds its best in its part or
/// proves it optimal there (it then stops); under a time budget a twin's
/// run that gains late keeps the time it gains in.
/// Called before the first sample; returns the best the twin's run found.
fn replay<'p>(search: &mut Search<'p>, twin: &'p Problem) -> (Option<Best>, Option<Carried>) {
    // A twin with no valid partition offers none; the problem may still
    // have some, and a twin's pass cut short at the deadline ends its part.
    let carried = search
        .replay_on(twin, |s| portfolio(s, replay))
        .ok()
        .and_then(Result::ok)
        .flatten();
    (search.best().cloned(), carried)
}

/// What the race of a time budget leaves when it ends: its `lns` worker
/// with the window it is working on, `lns`'s neighbourhood, the proven
/// bound, the learned policy fine-tuned in its rounds, its `exact` worker
/// with the target it is working on, and the random stream where its
/// windows and rounds left it. The twin's part ([`replay`])
/// hands them to the twin's search beside the problem's
/// ([`Twin::resume`]), which so goes on where the part stopped (its
/// window's and its bisection's answers, its caps, its policy) instead of
/// starting over.
pub(super) struct Carried {
    lns: Worker,
    resume: twin::Resume,
}

/// The rest of the budget under a proxy target (an objective the SAT
/// backing cannot encode, such as step time): annealing from the best of
/// the first partitions, judged by the objective itself. The SAT workers
/// search by the pipeline's latency there, which says little of the
/// objective and proves nothing of it, and a question that finds nothing
/// costs no sample, so under a sample budget one could run for minutes
/// (Swin-T) without spending any; they are asked only for a first valid
/// partition when no proposal gave one.
fn refine(search: &mut Search, model: &Arc<LatencyModel>, best: &mut Incumbent) -> Result<(), Infeasible> {
    if !best.found() {
        let sat = Worker::for_search(search, search.problem, model.clone());
        seek_any(search, &sat, model, best);
    }
    let Some(from) = search.best().map(|b| (b.chips.clone(), b.throughput)) else {
        return Ok(());
    };
    // Annealing draws in random topological orders, as `anneal` does; a
    // draw that repeats a partition or overflows a chip's memory is drawn
    // again, so that each sample judges something new that may be valid,
    // and some moves shift a boundary far, to cuts the slides do not reach.
    search.order = Order::Random;
    let anneal = Anneal {
        fresh: FRESH_DRAWS,
        shift: SHIFT_SHARE,
        ..Anneal::default()
    };
    anneal.refine(search, from.0, from.1)
}

impl Strategy for Auto {
    fn name(&self) -> &str {
        "auto"
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        portfolio(search, replay).map(|_| ())
    }
}

/// `auto`'s run, its first part on the stricter twin made by `twin_part`
/// ([`replay`]; a stand-in of known result in tests) when the problem has
/// one. Returns what its race left under a time budget ([`Carried`]).
fn portfolio<'p>(
    search: &mut Search<'p>,
    twin_part: impl FnOnce(&mut Search<'p>, &'p Problem) -> (Option<Best>, Option<Carried>),
) -> Result<Option<Carried>, Infeasible> {
    // Under a sample budget every dp cut (at most one per chip), so the
    // portfolio holds dp's whole run; under a time budget the best few,
    // as settling a cut can take seconds on large graphs; none past
    // [`PORTFOLIO_NODES`], where dp's table (quadratic in the nodes when
    // memory does not cut stages short) would take hours.
    let whole = whole_portfolio(search.problem.graph.num_placed());
    let problem = search.problem;
    let proxy = search.proxy_target();
    let twin = problem.stricter();
    // The stricter twin's run first ([`replay`]): under a sample budget
    // the same path as the twin's run alone, for half of it; under a time
    // budget a run of at least half the time, on while it gains, whose
    // best the problem's search starts from.
    let (replayed, carried) = match twin {
        Some(t) => twin_part(search, t),
        None => (None, None),
    };
    if search.done() {
        // The twin's part ran to the end of the budget (gaining late, or a
        // step it could not cut short): the structural bound still holds
        // of the problem.
        if let Some(lb) = incumbent::structural_bound(problem) {
            search.prove(lb);
        }
        return Ok(None);
    }
    let cuts = match (whole, search.timed()) {
        (false, _) => 0,
        (true, true) => DP_CUTS,
        (true, false) => usize::MAX,
    };
    // The learned placers' networks think while the heuristics' proposals
    // are settled; none past the deadline, where nothing more is judged.
    let learned = (whole && !search.done()).then(|| {
        let allowed = search.allowed();
        crate::placers::zero_shot::spawn(search.problem, allowed, search.seed())
    });
    let Some(Start { model, mut best, lb }) = incumbent::start(search, cuts)? else {
        return Ok(None);
    };
    // The twin's best is where the problem's own search goes on from,
    // and under a time budget where the twin's search starts (see
    // [`Twin`]) even when the problem's proposals gave a faster one its
    // rules refuse: the best of its replayed run, or else the same first
    // proposals settled under its rules, where pipeline order keeps
    // activations and weights apart.
    let mut twin_first = match &replayed {
        Some(b) => Incumbent::judged(&model, &b.chips, b.throughput, proxy),
        None => Incumbent::none(proxy),
    };
    if let Some(t) = twin.filter(|_| replayed.is_none() && search.timed() && !proxy) {
        // A twin with no valid partition offers none; the problem may
        // still have some.
        let _ = search.on_twin(t, |s| incumbent::first(s, &model, &mut twin_first, cuts));
    }
    best.adopt(&twin_first);
    if !whole {
        search.prove(lb);
        return Ok(None);
    }
    if best.found() {
        super::rl::policy_offers(search, &model, &mut best, POLICY_DRAWS)?;
        if let Some(pending) = learned {
            super::proposals::judge_learned(search, &model, &mut best, pending)?;
        }
    }
    if proxy {
        return refine(search, &model, &mut best).map(|_| None);
    }
    search.prove(lb);
    // Under a time budget the stricter twin is searched too (see
    // [`Twin`]), and asked first when nothing valid is found yet. Not
    // under a sample budget, whose SAT calls are waited for to their end:
    // a question below a refused answer can take long. Its search goes on
    // from what its part left (which found a valid partition, so none is
    // asked for here) or starts.
    let twin = match search.timed() {
        true => twin.map(|t| match carried {
            Some(c) => (t, c.lns, Some(c.resume)),
            None => (t, Worker::start(t, model.clone()), None),
        }),
        false => None,
    };
    if let (false, Some((_, w, _))) = (best.found(), &twin) {
        seek_balanced(search, w, &model, &mut best, lb);
    }
    // Beside the twin's search the problem's own SAT workers yield: on a
    // busy machine the twin's threads (its `lns` and `exact` workers, the
    // policy's rounds on this one) keep the cores a run under every rule
    // would have, so that the late gains such a run makes after a long
    // stall come at its pace here too; on a machine with cores to spare the
    // problem's workers lose nothing.
    let own_worker = |search: &Search, model: &Arc<LatencyModel>| match &twin {
        Some(_) => Worker::yielding(search, problem, model.clone()),
        None => Worker::for_search(search, problem, model.clone()),
    };
    let exact = own_worker(search, &model);
    if !best.found() {
        seek_any(search, &exact, &model, &mut best);
    }
    if !best.found() {
        return Ok(None);
    }
    let lns = own_worker(search, &model);
    let twin = twin.map(|(t, worker, resume)| {
        let mut twin = Twin::new(t, worker, model.clone(), lb, twin_first);
        if let Some(r) = resume {
            twin.resume(r);
        }
        twin.consider(&best);
        twin
    });
    for w in [&lns, &exact] {
        w.ask(Ask::Hint(best.chips.clone()));
    }
    let mut p = Portfolio {
        hood: Neighbourhood::new(model.clone(), search.timed()),
        model,
        best,
        lb,
        lns,
        exact: Bisection {
            worker: exact,
            asked: None,
        },
        lns_asked: None,
        lns_over: false,
        exact_on: search.timed()
            || problem.graph.num_placed() * problem.package.num_chips().saturating_sub(1) <= FREE_CAP,
        twin,
    };
    if search.timed() {
        let tuner = Tuner::new(search, &p.best);
        let tuner = p.race(search, tuner);
        return Ok(Some(Carried {
            resume: twin::Resume {
                hood: p.hood,
                asked: p.lns_asked,
                lb: p.lb,
                tuner,
                exact: p.exact_on.then_some(p.exact),
                rng: search.rng.clone(),
            },
            lns: p.lns,
        }));
    }
    p.turns(search);
    // The workers stop asking before a sample budget is spent when lns
    // finds nothing in its sweeps and exact is off (a large problem):
    // the samples left anneal from the best, as under a proxy target,
    // so that auto is not behind a strategy that spends them.
    if !search.done() && !p.optimal() {
        refine(search, &p.model, &mut p.best)?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_portfolio_runs_up_to_its_node_count() {
        assert!(whole_portfolio(1) && whole_portfolio(PORTFOLIO_NODES));
        assert!(!whole_portfolio(PORTFOLIO_NODES + 1));
        assert!(!whole_portfolio(1_000_000));
    }

    #[test]
    fn the_rounds_go_to_the_side_that_climbs() {
        let mut s = Split::default();
        // The problem leads throughout here. Alternate while neither has gained.
        assert!(!s.twins_turn(1, true, true) && s.twins_turn(2, true, true));
        // The twin's rounds gain, the problem's do not: the twin keeps them.
        s.learn(false, false);
        s.learn(true, true);
        for r in 3..9 {
            assert!(s.twins_turn(r, true, true));
            s.learn(true, true);
        }
        // Once it stalls as long as the problem did, they alternate again.
        s.learn(true, false);
        assert!(!s.twins_turn(11, true, true) && s.twins_turn(12, true, true));
        s.learn(false, true);
        assert!(!s.twins_turn(12, true, true), "the problem gained: its turn");
        // Without the problem's own rounds, every round is the twin's.
        assert!(s.twins_turn(13, false, true));
    }

    /// Until the problem's own search beats the twin's best, the rounds are
    /// the twin's but one in [`OWN_EVERY`], however long they go without a
    /// gain: a run under all four rules may gain after a long stall, and
    /// alternating would halve its pace.
    #[test]
    fn the_twin_keeps_the_rounds_until_the_problem_leads() {
        let mut s = Split::default();
        let mut twins = 0;
        for r in 1..=200 {
            let twin = s.twins_turn(r, true, false);
            twins += usize::from(twin);
            s.learn(twin, false);
        }
        assert_eq!(twins, 200 - 200 / OWN_EVERY, "the problem does not lead");
        // The problem leads (its search found a faster partition the twin's
        // rules refuse): the twin has stalled longer (150 rounds against
        // 50), the rounds are the problem's until it stalls as long.
        assert!(!s.twins_turn(201, true, true) && !s.twins_turn(202, true, true));
        for _ in 0..100 {
            s.learn(false, false);
        }
        assert!(!s.twins_turn(203, true, true) && s.twins_turn(204, true, true));
    }

    /// A chain of twelve nodes on a ring of four chips under `rules`, its
    /// files in the scratch folder `dir` (one per test: they run at once).
    pub(super) fn chain(dir: &str, rules: &str) -> mcm_core::problem::Problem {
        let dir = mcm_testkit::scratch(dir);
        std::fs::write(dir.join("chain.json"), mcm_testkit::chain_graph("chain", 12, 0)).unwrap();
        let text = format!(
            "{}let package = ring(n = 4, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
             let g = graph(\"chain.json\")\n\
             partition g onto package {{\n    require {rules}\n    maximize throughput\n}}\n",
            mcm_testkit::HEADER
        );
        let c = mcm_testkit::compile_in(&dir, &text);
        c.problem(None).expect("a problem").clone()
    }

    /// A chain of `n` layers, each with a weight of 1 MB, on two machines
    /// of two GPUs of `memory` each, under the memory rule and step time.
    fn weighted_chain(dir: &str, n: usize, memory: &str) -> mcm_core::problem::Problem {
        let dir = mcm_testkit::scratch(dir);
        let mut nodes = vec![r#"{"id": "x", "op": "placeholder", "output_bytes": 65536}"#.to_string()];
        let mut edges = Vec::new();
        let mut prev = "x".to_string();
        for i in 0..n {
            let flops = 50_000_000 * (1 + (i * 7) % 5);
            nodes.push(format!(
                r#"{{"id": "w{i}", "op": "get_attr", "params": 1000000, "output_bytes": 1000000}}"#
            ));
            nodes.push(format!(
                r#"{{"id": "l{i}", "op": "linear", "flops": {flops}, "output_bytes": {}}}"#,
                65536 * (1 + i % 3)
            ));
            edges.push(format!(r#"{{"from": "w{i}", "to": "l{i}"}}"#));
            edges.push(format!(r#"{{"from": "{prev}", "to": "l{i}"}}"#));
            prev = format!("l{i}");
        }
        let graph = format!(
            r#"{{"name": "wchain", "nodes": [{}], "edges": [{}]}}"#,
            nodes.join(", "),
            edges.join(", ")
        );
        std::fs::write(dir.join("wchain.json"), graph).unwrap();
        let text = format!(
            "use std::placement::{{memory_capacity}}\nuse std::topologies::gpu_cluster\n\
             let package = gpu_cluster(machines = 2, gpus = 2, memory = {memory}, compute = 10 TFLOP/s, nvlink = 50 GB/s, network = 5 GB/s)\n\
             let g = graph(\"wchain.json\")\n\
             partition g onto package {{\n    require memory_capacity\n    minimize step_time\n}}\n"
        );
        let c = mcm_testkit::compile_in(&dir, &text);
        c.problem(None).expect("a problem").clone()
    }

    /// Under step time `auto` anneals for most of its budget; near a sharp
    /// state most draws are repaired back to a partition judged before or
    /// overflow a nearly full chip. Its samples go to partitions it has not
    /// judged and that fit: on a chain that fills most of the memory, few
    /// are repeats (the judge's cache answers them) or invalid.
    #[test]
    fn auto_under_step_time_spends_its_samples_on_new_partitions_that_fit() {
        use crate::cost::{Judge, JudgeOptions};
        let p = weighted_chain("auto-fresh", 24, "7 MiB");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let o =
            super::super::run(&p, &judge, &mut Auto, super::super::Budget::Samples(200), 1, None).expect("feasible");
        assert!(o.best.is_some());
        let repeats = judge.stats.lock().unwrap().cache_hits as usize;
        let invalid = o.invalid_count();
        // Judging every draw, as `anneal` does, spent about 160 of the 200
        // samples so; the heuristics' proposals, judged on the stricter
        // twin and again on the problem, are most of the repeats left.
        assert!(
            repeats + invalid <= 100,
            "{repeats} repeated and {invalid} invalid of 200 samples"
        );
    }

    /// Near a sharp state most of the annealing's moves lead to a partition
    /// its walk has drawn before, and SAMPLE, drawing from sharp
    /// distributions, mostly returns the moved mode: such a move is drawn
    /// again before SAMPLE runs. On the chain of the test above, the
    /// solver's calls (each SAMPLE or FIX decides every node once) per
    /// sample stay few.
    #[test]
    fn auto_under_step_time_redraws_a_drawn_move_before_sample_runs() {
        use crate::cost::{Judge, JudgeOptions};
        let p = weighted_chain("auto-redraw", 24, "7 MiB");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let o =
            super::super::run(&p, &judge, &mut Auto, super::super::Budget::Samples(200), 1, None).expect("feasible");
        assert!(o.best.is_some());
        let calls = o.solver.decisions as f64 / p.graph.num_placed() as f64;
        assert!(calls <= 400.0, "{calls:.0} solver calls for 200 samples");
    }

    /// A shift moves the nodes nearest a boundary (in pipeline order) to
    /// the used chip across it, each with its tied weight, from one node to
    /// the whole chip; a used chip that holds only weights (which move with
    /// their consumers) has nothing to shift.
    #[test]
    fn a_shift_moves_a_block_across_a_boundary() {
        use rand::SeedableRng;
        let p = weighted_chain("auto-shift", 12, "64 MiB");
        let nb = super::super::anneal::Neighbours::new(&p);
        let rank = p.graph.pipeline_rank();
        let n = rank.len();
        let edges = p.graph.placed_edges();
        let preds = |u: usize| {
            edges
                .iter()
                .filter(|e| e.dst as usize == u)
                .map(|e| e.src as usize)
                .collect::<Vec<_>>()
        };
        let succs = |u: usize| edges.iter().filter(|e| e.src as usize == u).count();
        // Inputs of no input and one consumer: they move with it.
        let tied = |u: usize| preds(u).is_empty() && succs(u) == 1;
        // The first half of the pipeline on chip 0, the rest on chip 2 (chip
        // 1 unused), and the last layer's weight alone on chip 3.
        let mut at: Vec<u32> = rank.iter().map(|&r| if (r as usize) < n / 2 { 0 } else { 2 }).collect();
        let last_weight = (0..n).filter(|&u| tied(u)).max_by_key(|&u| rank[u]).unwrap();
        at[last_weight] = 3;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let (mut sizes, mut none) = (std::collections::BTreeSet::new(), 0);
        for _ in 0..400 {
            let Some((group, to)) = nb.shift(&at, 4, &mut rng) else {
                none += 1;
                continue;
            };
            let layers: Vec<usize> = group.iter().map(|&u| u as usize).filter(|&u| !tied(u)).collect();
            let from = at[layers[0]];
            assert!(layers.iter().all(|&u| at[u] == from), "one chip's nodes");
            let across = if from == 0 { vec![2] } else { vec![0, 3] };
            assert!(across.contains(&to), "{to}: the used chip across a boundary of {from}");
            // Contiguous at the boundary: the highest ranks going up, the
            // lowest going down.
            let on_from: Vec<usize> = (0..n).filter(|&u| at[u] == from && !tied(u)).collect();
            for &u in &on_from {
                let nearer = if to > from {
                    rank[u] > layers.iter().map(|&v| rank[v]).min().unwrap()
                } else {
                    rank[u] < layers.iter().map(|&v| rank[v]).max().unwrap()
                };
                assert!(
                    !nearer || layers.contains(&u),
                    "{u} is nearer the boundary than the block"
                );
            }
            // Each layer's weights go along, and nothing else.
            let weights: Vec<usize> = layers.iter().flat_map(|&u| preds(u)).filter(|&w| tied(w)).collect();
            assert_eq!(group.len(), layers.len() + weights.len());
            assert!(weights.iter().all(|&w| group.contains(&(w as u32))));
            sizes.insert(layers.len());
        }
        assert!(none > 0, "chip 3 holds only a weight: nothing to shift");
        assert!(sizes.contains(&1) && sizes.iter().any(|&k| k > 3), "{sizes:?}");
    }

    #[test]
    fn the_twins_replay_keeps_to_half_the_budget_and_proves_nothing_here() {
        use crate::cost::{Judge, JudgeOptions};
        let p = chain("auto-twin-half", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let mut search = Search::new(&p, &judge, super::super::Budget::Samples(41), 1).unwrap();
        let seen = search
            .replay_on(twin, |s| {
                s.prove(1.0);
                s.order = Order::Topological;
                (s.remaining(), std::ptr::eq(s.problem, twin))
            })
            .unwrap();
        assert_eq!(seen, (21, true), "half of 41 samples, on the twin");
        assert_eq!(search.remaining(), 41);
        assert!(std::ptr::eq(search.problem, &p));
        assert_eq!(search.proven, None, "a bound on the twin is none on the problem");
        assert_eq!(search.order, Order::Random);
        let mut search = Search::new(&p, &judge, super::super::Budget::Seconds(1_000.0), 1).unwrap();
        let left = search.replay_on(twin, |s| s.time_left()).unwrap().unwrap();
        assert!(left <= 500.0 && left > 400.0, "{left}");
        assert!(search.time_left().unwrap() > 900.0);
    }

    /// Under a time budget the twin's part goes on past the half while the
    /// twin's run gains: it ends halfway from its last better sample to the
    /// deadline. The samples' times are set here, as if found then: the
    /// rule follows what the records say, not the clock of a test.
    #[test]
    fn under_a_time_budget_the_twins_part_goes_on_while_it_gains() {
        use crate::cost::{Judge, JudgeOptions};
        let p = chain("auto-twin-gains", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let model = LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap();
        // Valid under the twin's rules: the chain in order over the ring,
        // then the same with a faster last stage.
        let slower: Vec<u32> = vec![0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3];
        let faster: Vec<u32> = vec![0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3];
        let mut search = Search::new(&p, &judge, super::super::Budget::Seconds(1_000.0), 1).unwrap();
        let end = |s: &Search| s.elapsed() + s.time_left().unwrap();
        let ends = search
            .replay_on(twin, |s| {
                let mut b = Incumbent::none(false);
                let stalled = end(s);
                assert!(b.offer(s, &model, slower.clone()), "the twin allows it");
                s.records.last_mut().unwrap().elapsed_s = 600.0;
                let first = end(s);
                assert!(b.offer(s, &model, faster.clone()) && b.chips == faster);
                s.records.last_mut().unwrap().elapsed_s = 900.0;
                let gained = end(s);
                // A sample no better than the best moves nothing.
                b.offer(s, &model, slower.clone());
                assert_eq!(b.chips, faster);
                s.records.last_mut().unwrap().elapsed_s = 990.0;
                (stalled, first, gained, end(s), s.done())
            })
            .unwrap();
        let (stalled, first, gained, after, done) = ends;
        assert!(
            (500.0..501.0).contains(&stalled),
            "{stalled}: halfway from the part's start"
        );
        let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(near(first, 800.0), "{first}: halfway from the gain at 600 s to 1,000 s");
        assert!(
            near(gained, 950.0) && near(after, 950.0),
            "{gained}, {after}: from the last gain, at 900 s"
        );
        assert!(!done, "the twin's part goes on past the half");
        assert!(search.time_left().unwrap() > 900.0, "the problem's own part: the rest");
    }

    #[test]
    fn a_parts_end_is_halfway_from_its_last_gain_to_the_budgets() {
        assert_eq!(super::super::part_end(30.0, 0.0, None), 15.0);
        assert_eq!(super::super::part_end(30.0, 2.0, None), 16.0);
        assert_eq!(super::super::part_end(30.0, 2.0, Some(20.0)), 25.0);
        // A gain before the part started (the caller's) is no gain of the part.
        assert_eq!(super::super::part_end(30.0, 2.0, Some(1.0)), 16.0);
        assert_eq!(super::super::part_end(30.0, 0.0, Some(40.0)), 30.0);
    }

    #[test]
    fn the_policys_rounds_on_the_twin_keep_its_rules() {
        use crate::cost::{Judge, JudgeOptions};
        let p = chain("auto-twin-rounds", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        // A judge that holds the twin's rules: a rollout breaking them is invalid.
        let judge = Judge::new(twin, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let invalid = |on_twin: bool| {
            let mut search = Search::new(&p, &judge, super::super::Budget::Samples(400), 1).unwrap();
            let Start { model, mut best, .. } = incumbent::start(&mut search, DP_CUTS).unwrap().unwrap();
            let mut tuner = Tuner::new(&mut search, &best).expect("the shipped policy");
            let before = search.records.len();
            for _ in 0..4 {
                let r = match on_twin {
                    true => search
                        .on_twin(twin, |s| tuner.round(s, &model, &mut best))
                        .and_then(|r| r),
                    false => tuner.round(&mut search, &model, &mut best),
                };
                assert!(r.expect("feasible"), "the policy failed");
            }
            let judged = &search.records[before..];
            assert!(!judged.is_empty());
            judged.iter().filter(|r| r.throughput.is_none()).count()
        };
        // Made valid under the problem's rule alone, some rollouts break the
        // pipeline rules; under the twin's, none does.
        assert!(invalid(false) > 0);
        assert_eq!(invalid(true), 0);
    }

    /// Under a time budget the problem's run starts with the twin's half
    /// and goes on from its best: with a stand-in for the twin's run that
    /// judges one known partition the twin's rules allow, that partition is
    /// the run's first sample, judged on the twin within the half, and the
    /// run ends no worse than it.
    #[test]
    fn under_a_time_budget_the_problem_goes_on_from_the_twins_half() {
        use crate::cost::{Judge, JudgeOptions};
        let p = chain("auto-twin-timed", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let model = LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap();
        // Valid under the twin's rules: the chain in order over the ring.
        let ahead: Vec<u32> = vec![0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3];
        let mut search = Search::new(&p, &judge, super::super::Budget::Seconds(2.0), 1).unwrap();
        let mut half = None;
        portfolio(&mut search, |s, t| {
            assert!(std::ptr::eq(t, twin));
            let _ = s.replay_on(t, |s| {
                half = s.time_left();
                let mut b = Incumbent::none(false);
                assert!(b.offer(s, &model, ahead.clone()), "the twin allows it");
            });
            (s.best().cloned(), None)
        })
        .unwrap();
        let half = half.expect("the twin's half ran");
        assert!(half <= 1.0, "{half} s: at most half the time");
        let first = &search.records[0];
        let judged = first.throughput.expect("valid");
        assert_eq!(
            search.best().unwrap().throughput,
            search.records.iter().filter_map(|r| r.throughput).fold(0.0, f64::max)
        );
        assert!(
            search.best().unwrap().throughput >= judged,
            "never worse than the twin's half"
        );
        assert!(search.records.len() > 1, "the problem's own search went on");
    }
}
