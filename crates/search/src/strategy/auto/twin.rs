//! The stricter twin's side of `auto`'s race under a time budget (see
//! [`Twin`]).

use super::super::incumbent::Incumbent;
use super::super::lns::{Learned, Neighbourhood, Question};
use super::super::rl::Tuner;
use super::super::sat_worker::{below, Answer, Ask, Poll, Worker};
use super::super::{settle_full, Search};
use super::Bisection;
use mcm_core::latency::LatencyModel;
use mcm_core::problem::{Placement, Problem};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The search on the problem's stricter twin ([`Problem::stricter`]) beside
/// the problem's own: what `auto` does on a problem that requires every
/// pipeline rule (`lns`'s windows on a SAT worker, the learned policy's
/// rounds made valid under those rules), from the best partition those
/// rules allow, so that a problem with fewer rules is never searched worse
/// than one with more. The twin keeps its own incumbent: the problem's may
/// break the twin's rules, and a window or a rollout around it would then
/// start where the twin's search never is (FIX repairs it into a partition
/// far from both). Each partition the twin finds is valid under the
/// problem too and is offered to the shared incumbent; a window's refusal
/// bounds only the twin.
pub(super) struct Twin<'p> {
    pub problem: &'p Problem,
    worker: Worker,
    hood: Neighbourhood,
    /// The window the worker is working on, and since when.
    asked: Option<(Question, Instant)>,
    /// No partition of the twin is faster (a window covering all of it
    /// was refused).
    lb: f64,
    /// The best judged partition valid under the twin's rules.
    pub best: Incumbent,
    /// The shared incumbent's latency when it was last considered.
    seen: f64,
    /// The learned policy's rounds on the twin, made on the first one.
    tuner: Option<Tuner>,
    /// The policy failed on the twin (or found no start there): no more rounds.
    untunable: bool,
    /// The twin can offer nothing faster than the shared incumbent.
    over: bool,
    /// The `exact` bisection its part ran, when it left one: it goes on as
    /// `auto` under all four rules goes on (its finds can come late).
    exact: Option<Bisection>,
    /// The random stream its part's race drew from, where it left it: the
    /// twin's windows and rounds go on drawing the choices a run under all
    /// four rules would draw next (the problem's own search draws from the
    /// search's). None without a part: the search's.
    rng: Option<ChaCha8Rng>,
}

/// Where the twin's search goes on from (see [`super::Carried`]): what the
/// race of the twin's part left.
pub(in super::super) struct Resume {
    pub hood: Neighbourhood,
    /// The window its `lns` worker is working on, and since when.
    pub asked: Option<(Question, Instant)>,
    /// No partition of the twin is faster.
    pub lb: f64,
    /// The learned policy as its rounds left it.
    pub tuner: Option<Tuner>,
    /// Its `exact` worker and question.
    pub exact: Option<Bisection>,
    /// The search's random stream when the race ended.
    pub rng: ChaCha8Rng,
}

impl<'p> Twin<'p> {
    /// The twin's side from `best`, the best partition judged valid under
    /// the twin's rules so far (none: see [`Twin::round`]); `lb` a bound
    /// on the problem, so on the twin too.
    pub fn new(problem: &'p Problem, worker: Worker, model: Arc<LatencyModel>, lb: f64, best: Incumbent) -> Twin<'p> {
        if best.found() {
            worker.ask(Ask::Hint(best.chips.clone()));
        }
        Twin {
            problem,
            worker,
            hood: Neighbourhood::new(model, true),
            asked: None,
            lb,
            best,
            seen: f64::NAN,
            tuner: None,
            untunable: false,
            over: false,
            exact: None,
            rng: None,
        }
    }

    /// Goes on from what the twin's part left: its neighbourhood and the
    /// window its worker (this twin's, see [`super::Carried`]) is working
    /// on, its proven bound, its fine-tuned policy and its `exact`
    /// bisection.
    pub fn resume(&mut self, r: Resume) {
        self.hood = r.hood;
        self.asked = r.asked;
        self.lb = self.lb.max(r.lb);
        self.tuner = r.tuner;
        self.exact = r.exact;
        self.rng = Some(r.rng);
    }

    /// Takes the shared incumbent as the twin's best when it is faster and
    /// the twin's rules allow it (checked once per new incumbent).
    pub fn consider(&mut self, shared: &Incumbent) {
        if shared.latency == self.seen || shared.latency >= self.best.latency {
            return;
        }
        self.seen = shared.latency;
        let p = self.problem;
        let allowed = mcm_solver::check(
            &p.graph,
            &p.package,
            &p.constraints,
            &Placement::new(shared.chips.clone()),
        )
        .is_empty();
        if allowed && self.best.adopt(shared) {
            self.worker.ask(Ask::Hint(self.best.chips.clone()));
        }
    }

    /// Asks the worker its next window around the twin's best, when it has
    /// none pending and the twin may still beat `shared`, and the `exact`
    /// worker (when carried) its next target.
    pub fn ask(&mut self, shared: &Incumbent, rng: &mut impl rand::Rng) {
        self.ask_exact();
        if self.over || self.asked.is_some() || !self.best.found() {
            return;
        }
        if self.lb >= shared.latency {
            self.over = true;
            return;
        }
        let q = match self.rng.as_mut() {
            Some(own) => self.hood.question(&self.best, self.lb, own),
            None => self.hood.question(&self.best, self.lb, rng),
        };
        match q {
            Some(q) => {
                self.worker.ask(q.ask());
                self.asked = Some((q, Instant::now()));
            }
            // The twin's best is optimal there.
            None => self.over = true,
        }
    }

    /// The twin's `exact` bisection's next target, while the twin's best may
    /// not be optimal.
    fn ask_exact(&mut self) {
        let Some(e) = self.exact.as_mut() else { return };
        if e.asked.is_some() || !self.best.found() || self.lb >= self.best.latency {
            return;
        }
        e.ask(self.lb, self.best.latency);
    }

    /// Takes the `exact` worker's answer if it has come: a partition is
    /// judged as a window's is, a refusal raises the twin's bound, an
    /// unknown answer (or a worker gone) ends the bisection. Says whether
    /// there was one.
    fn poll_exact(&mut self, search: &mut Search, model: &LatencyModel, shared: &mut Incumbent) -> bool {
        let Some(e) = self.exact.as_mut() else { return false };
        if e.asked.is_none() {
            return false;
        }
        let answer = match e.worker.poll(Duration::ZERO) {
            Poll::Ready(a) => a,
            Poll::Waiting => return false,
            Poll::Gone => {
                self.exact = None;
                return false;
            }
        };
        let Some((t, ub)) = e.asked.take() else { return false };
        match answer {
            Answer::Found(chips) => {
                if !self.best.offer(search, model, chips.clone()) {
                    e.worker.ask(Ask::Exclude(chips));
                }
                shared.adopt(&self.best);
            }
            Answer::None => {
                self.lb = self.lb.max(t);
                if t == below(ub) {
                    self.lb = self.lb.max(ub);
                }
            }
            Answer::Unknown => self.exact = None,
        }
        true
    }

    /// Takes an answer of the twin's workers if one comes within `wait`
    /// (the `exact` worker's first, without waiting): judged (one sample),
    /// kept as the twin's best when valid, and offered to `shared`. Says
    /// whether there was one.
    pub fn poll(&mut self, search: &mut Search, model: &LatencyModel, shared: &mut Incumbent, wait: Duration) -> bool {
        if self.poll_exact(search, model, shared) {
            return true;
        }
        if self.asked.is_none() {
            return false;
        }
        let answer = match self.worker.poll(wait) {
            Poll::Ready(a) => a,
            Poll::Waiting => return false,
            Poll::Gone => {
                self.asked = None;
                self.over = true;
                return false;
            }
        };
        let Some((q, asked)) = self.asked.take() else {
            return false;
        };
        if let Learned::Proved(t) = self.hood.learn(&q, &answer, asked.elapsed()) {
            self.lb = self.lb.max(t);
            if q.least {
                self.lb = self.lb.max(self.best.latency);
            }
        }
        if let Answer::Found(chips) = answer {
            // Refused at evaluation (activations the rules do not see).
            if !self.best.offer(search, model, chips.clone()) {
                self.worker.ask(Ask::Exclude(chips));
            }
            shared.adopt(&self.best);
        }
        true
    }

    /// Whether the learned policy's rounds may go on on the twin.
    pub fn tunes(&self) -> bool {
        !self.untunable
    }

    /// One round of the learned policy on the twin, its rollouts made valid
    /// under the twin's rules around the twin's best (the first round starts
    /// from `shared` settled under them when the twin has none), the twin's
    /// best then offered to `shared`. Says whether a round ran.
    pub fn round(&mut self, search: &mut Search<'p>, model: &LatencyModel, shared: &mut Incumbent) -> bool {
        let (best, tuner, own) = (&mut self.best, &mut self.tuner, &mut self.rng);
        let ran = search.on_twin(self.problem, |s| {
            // The round draws from the twin's stream, the search's kept aside.
            if let Some(r) = own.as_mut() {
                std::mem::swap(&mut s.rng, r);
            }
            let ran = (|| {
                if !best.found() && shared.found() {
                    let chips = settle_full(s, &shared.chips).ok()?;
                    best.offer(s, model, chips);
                }
                if !best.found() {
                    return None;
                }
                if tuner.is_none() {
                    *tuner = Some(Tuner::new(s, best)?);
                }
                // A tensor error, or a pass cut short at the deadline.
                tuner.as_mut()?.round(s, model, best).ok().filter(|&r| r)
            })();
            if let Some(r) = own.as_mut() {
                std::mem::swap(&mut s.rng, r);
            }
            ran
        });
        let ran = matches!(ran, Ok(Some(true)));
        if !ran {
            self.untunable = true;
            self.tuner = None;
        }
        shared.adopt(&self.best);
        ran
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{Judge, JudgeOptions};
    use crate::strategy::Budget;

    /// Under a time budget the twin's part hands what its race left to the
    /// twin's search beside the problem's: the twin's best, a bound proven
    /// on the twin, the policy its rounds fine-tuned and its `lns` worker,
    /// whose window (when one is open) the twin's search then takes the
    /// answer of.
    #[test]
    fn the_twins_search_goes_on_from_what_its_part_left() {
        let p = super::super::tests::chain("auto-twin-carried", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let mut search = Search::new(&p, &judge, Budget::Seconds(2.0), 1).unwrap();
        let (best, carried) = super::super::replay(&mut search, twin);
        let best = best.expect("the twin's part found a partition");
        let c = carried.expect("its race ran and left its state");
        let latency = model.latency(&best.chips).unwrap();
        let lb = c.resume.lb;
        assert!(lb > 0.0 && lb <= latency, "{lb} proven, {latency} found");
        assert!(c.resume.tuner.is_some(), "the policy its rounds fine-tuned");
        let open = c.resume.asked.is_some();
        let first = Incumbent::judged(&model, &best.chips, best.throughput, false);
        let mut t = Twin::new(twin, c.lns, model.clone(), 0.0, first);
        t.resume(c.resume);
        assert_eq!(t.lb, lb);
        assert!(t.tuner.is_some());
        assert_eq!(t.asked.is_some(), open);
        if open {
            let mut shared = Incumbent::judged(&model, &best.chips, best.throughput, false);
            let mut more = Search::new(&p, &judge, Budget::Samples(10), 1).unwrap();
            assert!(t.poll(&mut more, &model, &mut shared, Duration::from_secs(60)));
        }
    }

    /// The `exact` bisection of the twin's part goes on beside the
    /// problem's search: with `lns`'s windows off, the carried worker alone
    /// proves the twin's best optimal on the chain (each answer it gives is
    /// judged or raises the twin's bound, up to the best).
    #[test]
    fn the_twins_bisection_goes_on_from_its_part() {
        let p = super::super::tests::chain("auto-twin-bisection", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let mut search = Search::new(&p, &judge, Budget::Seconds(1.0), 1).unwrap();
        let (best, carried) = super::super::replay(&mut search, twin);
        let best = best.expect("the twin's part found a partition");
        let mut c = carried.expect("its race ran and left its state");
        assert!(c.resume.exact.is_some(), "the part's exact worker");
        // Its part may have proven its best optimal: the bound starts from
        // nothing here, so that the bisection has to prove it again.
        c.resume.lb = 0.0;
        let first = Incumbent::judged(&model, &best.chips, best.throughput, false);
        let mut t = Twin::new(twin, c.lns, model.clone(), 0.0, first);
        t.resume(c.resume);
        // No windows (the open one dropped): what moves the twin's bound is
        // the bisection.
        t.over = true;
        t.asked = None;
        let (lb, mut shared) = (t.lb, Incumbent::judged(&model, &best.chips, best.throughput, false));
        let mut more = Search::new(&p, &judge, Budget::Samples(1_000), 1).unwrap();
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        let until = Instant::now() + Duration::from_secs(60);
        while t.lb < t.best.latency && Instant::now() < until {
            t.ask(&shared, &mut rng);
            if !t.poll(&mut more, &model, &mut shared, Duration::from_millis(20)) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        assert!(
            t.lb >= t.best.latency,
            "{} proven of {} (from {lb})",
            t.lb,
            t.best.latency
        );
        assert!(t.best.latency <= model.latency(&best.chips).unwrap());
        assert!(shared.latency <= t.best.latency);
    }

    /// After its part the twin's windows draw from the random stream the
    /// part's race left (what a run under all four rules would draw next),
    /// not from the search's, which the problem's own search draws from.
    #[test]
    fn the_twins_windows_draw_from_its_parts_stream() {
        use rand::{RngCore, SeedableRng};
        let p = super::super::tests::chain("auto-twin-stream", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let mut search = Search::new(&p, &judge, Budget::Seconds(1.0), 1).unwrap();
        let (best, carried) = super::super::replay(&mut search, twin);
        let best = best.expect("the twin's part found a partition");
        let mut c = carried.expect("its race ran and left its state");
        assert!(c.resume.rng == search.rng, "the stream where the part's race left it");
        // A bound of nothing, so that a window is asked.
        c.resume.lb = 0.0;
        let first = Incumbent::judged(&model, &best.chips, best.throughput, false);
        let mut t = Twin::new(twin, c.lns, model.clone(), 0.0, first);
        t.resume(c.resume);
        t.asked = None;
        let own = t.rng.clone();
        let shared = Incumbent::judged(&model, &best.chips, best.throughput, false);
        let mut searchs = ChaCha8Rng::seed_from_u64(9);
        t.ask(&shared, &mut searchs);
        assert!(t.asked.is_some(), "a window was asked");
        assert!(t.rng != own, "drawn from the twin's stream");
        assert_eq!(
            searchs.next_u64(),
            ChaCha8Rng::seed_from_u64(9).next_u64(),
            "the search's stream untouched"
        );
    }

    /// On a chain under `memory_capacity` alone, the twin keeps as its best
    /// only a partition its pipeline rules allow, asks its windows around
    /// that one (not around a faster shared incumbent its rules refuse),
    /// and what a window finds is valid under both and never slower than
    /// where it started.
    #[test]
    fn the_twins_windows_start_from_its_own_best_and_never_lose_it() {
        let p = super::super::tests::chain("auto-twin-windows", "memory_capacity");
        let twin = p.stricter().expect("memory_capacity alone has a twin");
        let judge = Judge::new(&p, &JudgeOptions::default()).unwrap_or_else(|e| panic!("{}", e.message));
        let mut search = Search::new(&p, &judge, Budget::Samples(1_000), 1).unwrap();
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let valid_under = |q: &Problem, chips: &[u32]| {
            mcm_solver::check(&q.graph, &q.package, &q.constraints, &Placement::new(chips.to_vec())).is_empty()
        };
        // Valid under the problem's rule, not under the twin's: the chain
        // skips chip 1.
        let back: Vec<u32> = vec![0, 0, 0, 0, 0, 2, 2, 2, 2, 3, 3, 3, 3];
        // The twin allows this one.
        let ahead: Vec<u32> = vec![0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3];
        assert!(valid_under(&p, &back) && !valid_under(twin, &back));
        assert!(valid_under(twin, &ahead));
        let mut shared = Incumbent::none(false);
        assert!(shared.offer(&mut search, &model, back.clone()));
        let mut t = Twin::new(
            twin,
            Worker::start(twin, model.clone()),
            model.clone(),
            0.0,
            Incumbent::none(false),
        );
        t.consider(&shared);
        assert!(!t.best.found(), "the twin's rules refuse the shared incumbent");
        let mut start = Incumbent::none(false);
        assert!(start.offer(&mut search, &model, ahead.clone()));
        let from = start.latency;
        let mut t = Twin::new(twin, Worker::start(twin, model.clone()), model.clone(), 0.0, start);
        t.consider(&shared);
        assert_eq!(
            t.best.chips, ahead,
            "a slower or refused incumbent is not the twin's best"
        );
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(3);
        for _ in 0..6 {
            t.ask(&shared, &mut rng);
            let Some((q, _)) = t.asked.as_ref() else { break };
            // Every node a window fixes stays where the twin's best has it.
            let best = t.best.chips.clone();
            for (u, dom) in &q.decisions {
                assert!(dom.contains(&best[*u as usize]));
            }
            assert!(t.poll(&mut search, &model, &mut shared, Duration::from_secs(60)));
            assert!(t.best.latency <= from);
            assert!(valid_under(twin, &t.best.chips));
            assert!(valid_under(&p, &shared.chips));
            assert!(shared.latency <= t.best.latency);
        }
    }
}
