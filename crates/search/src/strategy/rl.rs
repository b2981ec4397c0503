//! The learned policy as a strategy (the paper's deployment): each round
//! the policy gives every node a distribution over chips, a batch of
//! rollouts asks the solver for partitions (FIX by default), the judge
//! scores them, and unless zero-shot a PPO update fine-tunes the policy on
//! the rewards (throughput over greedy's, shaped by the anneal strategy's
//! plateau term) before the next round. The rollouts are drawn around an
//! anchor, greedy's partition at first (or the given start, `--init`),
//! which moves to a rollout that scores at least as well (with an anchor
//! temperature, also to a worse one by the Metropolis rule, as anneal's
//! state does). A rollout's moves are carried through the pipeline
//! ([`RlOptions::carry`]), so that one move can relieve a slowest chip.

use super::anneal::{plateau, Neighbours};
use super::stall::Stall;
use super::Anneal;
use super::{greedy_start, settle_full, Search, Strategy};
use crate::cost::{CostModel, Verdict};
use crate::policy::ppo::{self, Batch, PpoConfig, Rollout, UpdateStats};
use crate::policy::rollout::{
    fix_near, propose, propose_among, propose_likeliest, propose_likeliest_moves, rejoin_weights, Correction, Draw,
    Proposal, Style, FELL_BACK,
};
use crate::policy::{checkpoint, Policy, PolicyConfig, PolicyError};
use candle_core::{DType, Device};
use mcm_solver::Infeasible;
use std::path::{Path, PathBuf};

/// Where the shipped checkpoint lives in the source tree (`models/rl.*`).
pub const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/rl");

/// Which policy and how it is used.
#[derive(Clone, Debug, PartialEq)]
pub struct RlOptions {
    /// A checkpoint stem (`PATH.safetensors` + `PATH.json`); the shipped one when `None`.
    pub policy: Option<PathBuf>,
    /// Sample the policy without updating it.
    pub zero_shot: bool,
    /// Start from fresh weights instead of a checkpoint.
    pub from_scratch: bool,
    pub mode: Correction,
    /// Moves per rollout ([`Draw::Moves`], at most this many); 0 draws
    /// every node ([`Draw::Dense`], the paper's rollout). `None`: 3 moves,
    /// except without the solver, which samples the policy straight as the
    /// paper's ablation does.
    pub moves: Option<usize>,
    /// The policy's temperature in deployment (see `Policy::set_temperature`;
    /// 1 samples it as trained).
    pub temperature: f64,
    /// The fine-tuning update: by default one step on the whole round (one
    /// epoch, one minibatch), which reuses the forward pass the round was
    /// drawn from, so a round of 20 samples costs one forward and one
    /// backward pass (the network is nearly all of rl's time); no entropy
    /// bonus (it would flatten a pretrained policy when rewards are sparse)
    /// except from scratch.
    pub ppo: PpoConfig,
    /// The anchor's temperature at the start and the end of the budget (on
    /// the score, log throughput less the plateau term, as anneal's): a
    /// rollout that scores x lower than the anchor becomes the anchor with
    /// probability exp(-x / T). `None` (the default): only a rollout
    /// scoring at least as well moves it (a local search); on BERT-large
    /// anneal's schedule made the anchor wander off and end worse.
    pub anchor_temperature: Option<(f64, f64)>,
    /// Carry a rollout's moves through the pipeline: a chip its moves load
    /// beyond the anchor's slowest stage passes its excess on to the next
    /// chip the way the load came, and so on to where there is room (the
    /// anneal strategy's relief chain, from the chip the policy overloaded),
    /// and FIX makes the result valid. Without it a move onto a chip as
    /// slow as the slowest only slows the pipeline, and a pipeline with
    /// several equally slow chips (BERT-large on a ring) has no move of a
    /// few nodes that the score prefers.
    pub carry: bool,
    /// Under moves made valid by FIX, make the first rollout for each new
    /// anchor the policy's likeliest change to it
    /// ([`propose_likeliest_moves`]) rather than a draw: what a pretrained
    /// policy knows, proposed before it is sampled piece by piece.
    pub likeliest: bool,
    /// Once the rounds stop finding better partitions, let the learned
    /// placers' walk take its turns ([`Stall`]). Off in pretraining and its
    /// validation, which measure what the policy learnt.
    pub walk: bool,
}

impl Default for RlOptions {
    fn default() -> Self {
        RlOptions {
            policy: None,
            zero_shot: false,
            from_scratch: false,
            mode: Correction::Fix,
            moves: None,
            temperature: 1.0,
            ppo: PpoConfig {
                epochs: 1,
                minibatches: 1,
                entropy: 0.0,
                ..PpoConfig::default()
            },
            anchor_temperature: None,
            carry: true,
            likeliest: true,
            walk: true,
        }
    }
}

/// Moves per rollout unless told otherwise (anneal's move makes one to three changes too).
pub const DEFAULT_MOVES: usize = 3;

/// Repairs the likeliest change gets at most while none is as fast as its
/// anchor ([`Rl::likeliest_change`]): the same change repaired by FIX in
/// different random orders can land far apart (which weight fills a chip
/// the change emptied, which node FIX moves), and it is the one rollout
/// per anchor made from all the policy knows rather than a draw.
const LIKELIEST_REPAIRS: usize = 4;

/// The analytical model's slowest stage of a partition, seconds (infinite
/// without a model or a stage time).
fn slowest_stage(model: Option<&CostModel>, chips: &[u32]) -> f64 {
    model
        .and_then(|m| m.stage_times(chips).ok())
        .map_or(f64::INFINITY, |s| s.into_iter().fold(0.0, f64::max))
}

pub struct Rl {
    name: String,
    policy: Policy,
    style: Style,
    /// Kept across rounds: Adam's moments are part of fine-tuning.
    opt: Option<candle_nn::AdamW>,
    opts: RlOptions,
    /// Why the last run stopped early (a tensor error), for [`Strategy::failure`].
    error: Option<String>,
    /// The problem's adjacency for [`RlOptions::carry`], set when a run
    /// starts (`None`: no carrying).
    nb: Option<Neighbours>,
    /// The statistics of the last PPO step taken (what `train` logs).
    last_update: Option<UpdateStats>,
    /// The anchor the policy's likeliest change was last proposed for.
    likeliest_for: Option<Vec<u32>>,
}

impl Rl {
    /// Loads (or initialises) the policy; a missing, corrupt or mismatched
    /// checkpoint is an error that says which file and why.
    pub fn new(name: &str, opts: RlOptions) -> Result<Rl, PolicyError> {
        let device = Device::Cpu;
        let policy = if opts.from_scratch {
            Policy::new(&PolicyConfig::default(), &device, DType::F32)?
        } else {
            let stem = opts.policy.clone().unwrap_or_else(|| PathBuf::from(SHIPPED));
            load_stem(&stem, &device)?
        };
        Rl::with_policy(name, policy, opts)
    }

    /// The strategy around a policy already in memory (`opts.policy` is
    /// not read): how `train` runs the deployment's rounds on the policy
    /// it trains, the weights and the optimiser carried from one run to
    /// the next.
    pub fn with_policy(name: &str, mut policy: Policy, mut opts: RlOptions) -> Result<Rl, PolicyError> {
        if opts.from_scratch {
            opts.ppo.entropy = PpoConfig::default().entropy;
        }
        policy.set_temperature(opts.temperature)?;
        let draw = match opts.moves {
            Some(0) => Draw::Dense,
            Some(k) => Draw::Moves(k),
            None if opts.mode == Correction::NoSolver => Draw::Dense,
            None => Draw::Moves(DEFAULT_MOVES),
        };
        Ok(Rl {
            name: name.to_string(),
            policy,
            style: Style { mode: opts.mode, draw },
            opt: None,
            opts,
            error: None,
            nb: None,
            last_update: None,
            likeliest_for: None,
        })
    }

    /// The policy as the runs so far have fine-tuned it.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The statistics of the last PPO step of the runs so far.
    pub fn last_update(&self) -> Option<UpdateStats> {
        self.last_update
    }

    /// Sets up carrying for the problem when the options ask for it and the
    /// rollouts are moves made valid by the solver.
    fn prepare(&mut self, p: &mcm_core::problem::Problem) {
        let moves = matches!(self.style.draw, Draw::Moves(_)) && self.style.mode == Correction::Fix;
        self.nb = (self.opts.carry && moves).then(|| Neighbours::new(p));
    }

    /// With carrying on, which nodes sit on the slowest chips of `at` (by
    /// the analytical model's stage times, within 0.1% of the slowest).
    fn slowest_chips(&self, model: Option<&CostModel>, at: &[u32]) -> Option<Vec<bool>> {
        self.nb.as_ref()?;
        let stages = model?.stage_times(at).ok()?;
        let max = stages.iter().copied().fold(0.0, f64::max);
        Some(at.iter().map(|&c| stages[c as usize] >= 0.999 * max).collect())
    }

    /// A rollout's partition carried on ([`RlOptions::carry`]) and made
    /// valid, when one of its chips is loaded beyond the anchor's slowest
    /// stage; `None` when none is, or when FIX gave up on the result.
    fn carried(
        &self,
        search: &mut Search,
        probs: &[Vec<f32>],
        model: Option<&CostModel>,
        from: &[u32],
        chips: &[u32],
    ) -> Result<Option<Vec<u32>>, Infeasible> {
        let (Some(nb), Some(model)) = (self.nb.as_ref(), model) else {
            return Ok(None);
        };
        let Ok(before) = model.stage_times(from) else {
            return Ok(None);
        };
        let max = before.iter().copied().fold(0.0, f64::max);
        let mut at = chips.to_vec();
        let mut moved = false;
        for c in 0..before.len() as u32 {
            let Ok(stages) = model.stage_times(&at) else {
                return Ok(None);
            };
            if stages[c as usize] <= max {
                continue;
            }
            // The way the load came: nodes that joined from lower chips
            // pass it up, from higher ones down.
            let joined = |below: bool| {
                (0..at.len())
                    .filter(|&u| at[u] == c && from[u] != c && (from[u] < c) == below)
                    .count()
            };
            let (below, above) = (joined(true), joined(false));
            if below + above == 0 {
                continue;
            }
            for (group, to) in nb.carry(&at, stages, c, below >= above, max) {
                for v in group {
                    at[v as usize] = to;
                }
                moved = true;
            }
        }
        if !moved {
            return Ok(None);
        }
        // Kept only when the analytical model's slowest stage is no slower
        // than the rollout's own: FIX may have had to move much more than
        // the chain to make it valid.
        let fixed = fix_near(probs, &at, &mut search.solver, &mut search.rng, chips)?;
        Ok(fixed.filter(|c| slowest_stage(Some(model), c) <= slowest_stage(Some(model), chips)))
    }

    /// Makes `p`'s partition the best of what its repair can become, by the
    /// analytical model's slowest stage: the partition as FIX made it and,
    /// under moves made valid by FIX, the same with the weights the repair
    /// left behind rejoined ([`rejoin_weights`]), each carried on when
    /// carrying applies ([`Rl::carried`]); ties keep the first. Returns that slowest stage (infinite when FIX gave up or
    /// there is no model).
    ///
    /// Why both: a weight left a chip before its user feeds it over one
    /// link, costly when it is large (a recurrent cell's) and nearly free
    /// when it is small, and then it also fills that chip, which a later
    /// move or carry can empty without having to draw a weight from afar to
    /// keep `no_skip`. The model says which counts for the partition at hand.
    fn settle_rollout(
        &self,
        search: &mut Search,
        probs: &[Vec<f32>],
        model: Option<&CostModel>,
        from: &[u32],
        p: &mut Proposal,
    ) -> Result<f64, Infeasible> {
        if p.fell_back {
            return Ok(f64::INFINITY);
        }
        let mut candidates = vec![p.chips.clone()];
        if model.is_some() && matches!(self.style.draw, Draw::Moves(_)) && self.style.mode == Correction::Fix {
            candidates.extend(rejoin_weights(
                probs,
                &p.chips,
                &mut search.solver,
                &mut search.rng,
                from,
            )?);
        }
        let mut best: Option<(f64, Vec<u32>)> = None;
        for chips in candidates {
            let chips = self.carried(search, probs, model, from, &chips)?.unwrap_or(chips);
            let s = slowest_stage(model, &chips);
            if best.as_ref().is_none_or(|(b, _)| s < *b) {
                best = Some((s, chips));
            }
        }
        let (s, chips) = best.unwrap_or((f64::INFINITY, p.chips.clone()));
        p.chips = chips;
        Ok(s)
    }

    /// Under moves made valid by FIX, the policy's likeliest change to
    /// `anchor`, proposed once per anchor (the policy's view of an anchor
    /// changes little between rounds, and a repeat would be judged again),
    /// settled ([`Rl::settle_rollout`]): repaired again, each FIX pass in a
    /// random order of its own, until a repair's slowest stage (by the
    /// analytical model) is no slower than the anchor's, at most
    /// [`LIKELIEST_REPAIRS`] times, and the fastest repair kept.
    fn likeliest_change(
        &mut self,
        search: &mut Search,
        probs: &[Vec<f32>],
        model: Option<&CostModel>,
        anchor: &[u32],
    ) -> Result<Option<Proposal>, Infeasible> {
        if !self.opts.likeliest || !matches!(self.style.draw, Draw::Moves(_)) || self.style.mode != Correction::Fix {
            return Ok(None);
        }
        self.likeliest_for = Some(anchor.to_vec());
        let tries = if model.is_some() { LIKELIEST_REPAIRS } else { 1 };
        let at = slowest_stage(model, anchor);
        let mut best: Option<(f64, Proposal)> = None;
        for _ in 0..tries {
            let Some(mut p) = propose_likeliest_moves(probs, &mut search.solver, &mut search.rng, anchor)? else {
                return Ok(None);
            };
            let s = self.settle_rollout(search, probs, model, anchor, &mut p)?;
            if best.as_ref().is_none_or(|(b, _)| s < *b) {
                best = Some((s, p));
            }
            if s <= at {
                break;
            }
        }
        Ok(best.map(|(_, p)| p))
    }

    fn round(
        &mut self,
        search: &mut Search,
        f: &crate::policy::GraphFeatures,
        score: &mut Score,
        anchor: &mut (Vec<u32>, f64),
        submit: &mut Submit,
    ) -> Result<(), Stop> {
        // The policy sees the anchor as the round begins (its features'
        // placement); each batch of rollouts is drawn around the anchor as it
        // is then, which the batch before may have moved, so that a round
        // walks as anneal's moves do. FIX merges a draw near the anchor into
        // it when it gives up.
        let seen = anchor.0.clone();
        // One forward pass draws the round's rollouts and, reused, starts
        // the update's first step.
        let out = self.policy.forward(f, Some(&seen))?;
        let (probs, value) = crate::policy::net::act_of(&out)?;
        let k = search.batch().max(self.opts.ppo.rollouts).min(search.remaining());
        let mut props = Vec::with_capacity(k);
        let mut verdicts = Vec::with_capacity(k);
        let mut scores: Vec<Option<f64>> = Vec::with_capacity(k);
        // Judged as they are made, as many at once as the judge runs, so a
        // time budget ends the round where it runs out.
        while props.len() < k && !search.done() {
            let n = search.batch().min(k - props.len());
            let from = anchor.0.clone();
            let slowest = self.slowest_chips(score.model.as_ref(), &from);
            let mut chunk = Vec::with_capacity(n);
            for i in props.len()..props.len() + n {
                // Under moves, the first rollout for each new anchor is the
                // policy's likeliest change to it (see
                // `propose_likeliest_moves`); a dense round's first rollout
                // is its most likely placement made valid; the others are
                // draws, and without the solver the ablation only samples.
                let likeliest = match i == 0 && self.likeliest_for.as_deref() != Some(seen.as_slice()) {
                    true => self
                        .likeliest_change(search, &probs, score.model.as_ref(), &seen)
                        .map_err(Stop::Infeasible)?,
                    false => None,
                };
                let settled = likeliest.is_some();
                let p = if let Some(p) = likeliest {
                    Ok(p)
                } else if i == 0 && self.style.draw == Draw::Dense && self.style.mode != Correction::NoSolver {
                    propose_likeliest(&probs, self.opts.mode, &mut search.solver, &mut search.rng, Some(&from))
                } else if i % 2 == 1 {
                    // Every other rollout picks its moves on the slowest
                    // chips, as half of anneal's moves relieve one.
                    let among = slowest.as_deref();
                    propose_among(
                        &probs,
                        self.style,
                        &mut search.solver,
                        &mut search.rng,
                        Some(&from),
                        among,
                    )
                } else {
                    propose(&probs, self.style, &mut search.solver, &mut search.rng, Some(&from))
                };
                let mut p = p.map_err(Stop::Infeasible)?;
                if !settled {
                    self.settle_rollout(search, &probs, score.model.as_ref(), &from, &mut p)
                        .map_err(Stop::Infeasible)?;
                }
                chunk.push(p);
            }
            let chips: Vec<Vec<u32>> = chunk.iter().map(|p| p.chips.clone()).collect();
            let refused = chunk
                .iter()
                .map(|p| p.fell_back.then(|| FELL_BACK.to_string()))
                .collect();
            let judged = submit(search, chips, refused);
            let chunk_scores: Vec<Option<f64>> = chunk
                .iter()
                .zip(&judged)
                .map(|(p, v)| v.as_ref()?.throughput().and_then(|t| score.of(&p.chips, t)))
                .collect();
            // Without greedy's score (its partition invalid at evaluation)
            // the first valid partition is the reward's unit.
            if !score.greedy.is_finite() {
                if let Some(s) = chunk_scores.iter().flatten().copied().reduce(f64::max) {
                    score.greedy = s;
                }
            }
            // The batch's best-scored rollout against the anchor, by the
            // Metropolis rule (as anneal decides on its batch's best).
            let best = chunk
                .iter()
                .zip(&chunk_scores)
                .filter_map(|(p, s)| Some((p, (*s)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((p, s)) = best {
                let temp = self
                    .opts
                    .anchor_temperature
                    .map_or(0.0, |(t0, t1)| t0 * (t1 / t0).powf(search.progress()));
                if accepts(s, anchor.1, temp, &mut search.rng) {
                    *anchor = (p.chips.clone(), s);
                }
            }
            verdicts.extend(judged);
            scores.extend(chunk_scores);
            props.extend(chunk);
        }
        let fallback = seen.as_slice();
        if self.opts.zero_shot {
            return Ok(());
        }
        let rollouts: Vec<Rollout> = props
            .into_iter()
            .zip(verdicts)
            .zip(scores)
            .filter_map(|((p, v), s)| {
                v?;
                Some(Rollout {
                    credit: p.credit,
                    graph: 0,
                    prev: Some(fallback.to_vec()),
                    actions: p.actions,
                    old_log_probs: p.log_probs,
                    reward: s.map_or(0.0, |s| score.reward(s)),
                    value,
                })
            })
            .collect();
        if search.done() {
            return Ok(());
        }
        if self.opt.is_none() {
            self.opt = Some(ppo::optimizer(&self.policy, &self.opts.ppo)?);
        }
        let batch = Batch {
            features: std::slice::from_ref(f),
            rollouts,
        };
        if let Some(opt) = self.opt.as_mut() {
            let stats = ppo::update_from(&self.policy, opt, &batch, &self.opts.ppo, &mut search.rng, Some(&out))?;
            self.last_update = Some(stats);
        }
        Ok(())
    }
}

/// Whether the anchor, scoring `at`, moves to a rollout scoring `s`:
/// always when `s` is at least as good, else with probability
/// exp((s - at) / temp) (never at temperature 0), anneal's Metropolis rule
/// on the same score. Accepting worse partitions lets the rounds leave one
/// that no draw of a few moves improves (greedy's on BERT-large for some
/// seeds) instead of sampling around it for the whole budget.
fn accepts(s: f64, at: f64, temp: f64, rng: &mut impl rand::Rng) -> bool {
    s >= at || (temp > 0.0 && rng.random::<f64>() < ((s - at) / temp).exp())
}

/// How a round's partitions are judged: as the strategy's own samples, or
/// (in `auto`) as offers to the shared incumbent. Given the partitions and,
/// for each, why it is refused unjudged (FIX gave up on it), if it is.
type Submit<'a> = dyn FnMut(&mut Search, Vec<Vec<u32>>, Vec<Option<String>>) -> Vec<Option<Verdict>> + 'a;

/// What ranks partitions for the anchor and the reward: log throughput,
/// less the anneal strategy's plateau term (by the analytical model's
/// stage times), so that relieving one of several equally slow chips
/// counts, as it must for the next round to relieve the others.
struct Score {
    model: Option<CostModel>,
    /// Weight of the plateau term: as much as in the anneal strategy's energy.
    balance: f64,
    /// Greedy's score, the reward's unit (a reward is exp(score - greedy)).
    greedy: f64,
}

impl Score {
    fn of(&self, chips: &[u32], throughput: f64) -> Option<f64> {
        (throughput > 0.0 && throughput.is_finite())
            .then(|| throughput.ln() - self.model.as_ref().map_or(0.0, |m| self.balance * plateau(m, chips)))
    }

    /// A score's reward: exp(score - greedy's), 0 while there is no unit.
    fn reward(&self, s: f64) -> f32 {
        let r = (s - self.greedy).exp();
        if r.is_finite() {
            r as f32
        } else {
            0.0
        }
    }
}

/// Why a round ended the run.
enum Stop {
    Infeasible(Infeasible),
    Policy(PolicyError),
}

impl From<PolicyError> for Stop {
    fn from(e: PolicyError) -> Stop {
        Stop::Policy(e)
    }
}

impl From<candle_core::Error> for Stop {
    fn from(e: candle_core::Error) -> Stop {
        Stop::Policy(e.into())
    }
}

/// A checkpoint, with a hint when the shipped one is missing.
pub fn load_stem(stem: &Path, device: &Device) -> Result<Policy, PolicyError> {
    checkpoint::load(stem, None, device).map_err(|e| {
        checkpoint::shipped_hint(
            e,
            stem,
            SHIPPED,
            "the shipped checkpoint; `mcmpart train` makes one, `--policy` names another, `--from-scratch` needs none",
        )
    })
}

impl Strategy for Rl {
    fn name(&self) -> &str {
        &self.name
    }

    fn failure(&self) -> Option<String> {
        self.error.clone()
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        self.error = None;
        if self.opts.from_scratch {
            // Fresh weights each run, drawn from the run's seed, so that
            // repeats from scratch are independent starts.
            let config = PolicyConfig {
                seed: search.seed(),
                ..PolicyConfig::default()
            };
            let fresh = Policy::new(&config, &Device::Cpu, DType::F32)
                .and_then(|mut p| p.set_temperature(self.opts.temperature).map(|()| p));
            match fresh {
                Ok(p) => {
                    self.policy = p;
                    self.opt = None;
                }
                Err(e) => {
                    self.error = Some(e.to_string());
                    return Ok(());
                }
            }
        }
        let p = search.problem;
        self.prepare(p);
        self.likeliest_for = None;
        // Greedy's throughput (within the root domains, settled), judged
        // outside the budget, normalises rewards.
        let allowed = search.allowed();
        let g = settle_full(search, &greedy_start(p, &allowed))?;
        let greedy = search.reference(&g).throughput().unwrap_or(0.0);
        let mut score = Score {
            model: CostModel::new(p).ok(),
            balance: Anneal::default().balance,
            greedy: f64::NEG_INFINITY,
        };
        score.greedy = score.of(&g, greedy).unwrap_or(f64::NEG_INFINITY);
        // The anchor the rounds refine: the given start, else greedy's.
        let (mut anchor, anchor_t) = match search.start()? {
            Some(s) => {
                // Its first sample, so a run from it keeps it or does better.
                let t = search.submit_one(s.clone()).and_then(|v| v.throughput()).unwrap_or(0.0);
                let at = score.of(&s, t).unwrap_or(f64::NEG_INFINITY);
                ((s, at), t)
            }
            None => ((g, score.greedy), greedy),
        };
        let f = match self.policy.features(&p.graph, &p.package) {
            Ok(f) => f,
            Err(e) => {
                self.error = Some(e.to_string());
                return Ok(());
            }
        };
        let unchecked = self.opts.mode == Correction::NoSolver;
        let mut submit = |s: &mut Search, chips: Vec<Vec<u32>>, refused: Vec<Option<String>>| match unchecked {
            true => s.submit_unchecked(chips),
            false => s.submit_except(chips, refused),
        };
        // Once the rounds stop finding better partitions, the learned
        // placers' walk takes its turns (see `super::stall`), and the next
        // round refines what it finds; not in the ablations, which measure
        // the policy alone (zero-shot) or without the solver.
        let mut stall = (self.opts.walk && !self.opts.zero_shot && !unchecked)
            .then(|| Stall::new(search, anchor.0.clone(), anchor_t));
        while !search.done() {
            let before = search.samples();
            match self.round(search, &f, &mut score, &mut anchor, &mut submit) {
                Ok(()) => {}
                Err(Stop::Infeasible(i)) => return Err(i),
                Err(Stop::Policy(e)) => {
                    self.error = Some(e.to_string());
                    return Ok(());
                }
            }
            if let Some(stall) = stall.as_mut() {
                let walked = stall.best().1;
                stall.after_round(search, search.samples() - before)?;
                let (chips, t) = stall.best();
                if *t > walked {
                    if let Some(s) = score.of(chips, *t).filter(|s| *s > anchor.1) {
                        anchor = (chips.clone(), s);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The shipped policy's turn in a portfolio (`auto`): its likeliest
/// placement and `draws - 1` draws of moves around the incumbent, each made
/// valid by FIX and judged (one sample each), a faster one becoming the
/// incumbent. Zero-shot: no update. Without a loadable checkpoint (a source
/// tree without `models/`) the portfolio goes on without it.
pub(super) fn policy_offers(
    search: &mut Search,
    model: &mcm_core::latency::LatencyModel,
    best: &mut super::incumbent::Incumbent,
    draws: usize,
) -> Result<(), Infeasible> {
    let Ok(policy) = load_stem(Path::new(SHIPPED), &Device::Cpu) else {
        return Ok(());
    };
    let p = search.problem;
    let anchor = best.chips.clone();
    let Ok(probs) = policy
        .features(&p.graph, &p.package)
        .and_then(|f| policy.act(&f, Some(&anchor)))
    else {
        return Ok(());
    };
    let style = Style {
        mode: Correction::Fix,
        draw: Draw::Moves(DEFAULT_MOVES),
    };
    for i in 0..draws {
        if search.done() {
            break;
        }
        let prop = if i == 0 {
            propose_likeliest(
                &probs.0,
                Correction::Fix,
                &mut search.solver,
                &mut search.rng,
                Some(&anchor),
            )?
        } else {
            propose(&probs.0, style, &mut search.solver, &mut search.rng, Some(&anchor))?
        };
        // A draw FIX gave up on is the anchor merged: nothing new to judge.
        if !prop.fell_back {
            best.offer(search, model, prop.chips);
        }
    }
    Ok(())
}

/// `rl`'s fine-tuning rounds as `auto`'s third worker under a time budget,
/// beside `lns` and `exact`: each round draws its rollouts around the
/// shared incumbent, offers them to it (one sample each, a faster one
/// becoming the incumbent the other workers then work from) and updates
/// the shipped policy on their rewards, as `rl` does. Rewards are in units
/// of the incumbent it first refined.
pub(super) struct Tuner {
    rl: Rl,
    f: crate::policy::GraphFeatures,
    score: Score,
    /// The partition the rounds refine and its score: the incumbent, or a
    /// rollout that scored better by the plateau term at the same latency.
    anchor: (Vec<u32>, f64),
    /// The incumbent when the last round ended: when another worker has
    /// replaced it since, the rounds refine the new one.
    seen: Vec<u32>,
}

impl Tuner {
    /// The worker, or `None` without a loadable shipped policy (a source
    /// tree without `models/`), an incumbent or features for the problem.
    pub(super) fn new(search: &mut Search, best: &super::incumbent::Incumbent) -> Option<Tuner> {
        let mut rl = Rl::new("auto", RlOptions::default()).ok()?;
        let p = search.problem;
        rl.prepare(p);
        let f = rl.policy.features(&p.graph, &p.package).ok()?;
        let mut score = Score {
            model: CostModel::new(p).ok(),
            balance: Anneal::default().balance,
            greedy: f64::NEG_INFINITY,
        };
        let t = search.reference(&best.chips).throughput()?;
        score.greedy = score.of(&best.chips, t)?;
        Some(Tuner {
            anchor: (best.chips.clone(), score.greedy),
            seen: best.chips.clone(),
            rl,
            f,
            score,
        })
    }

    /// One round: its rollouts offered to the incumbent, then the update.
    /// `Ok(false)`: the policy failed (a tensor error) and the worker stops.
    pub(super) fn round(
        &mut self,
        search: &mut Search,
        model: &mcm_core::latency::LatencyModel,
        best: &mut super::incumbent::Incumbent,
    ) -> Result<bool, Infeasible> {
        if best.chips != self.seen {
            let chips = best.chips.clone();
            let s = search
                .reference(&chips)
                .throughput()
                .and_then(|t| self.score.of(&chips, t));
            self.anchor = (chips, s.unwrap_or(f64::NEG_INFINITY));
        }
        let mut submit = |s: &mut Search, chips: Vec<Vec<u32>>, refused: Vec<Option<String>>| {
            chips
                .into_iter()
                .zip(refused)
                // A draw FIX gave up on is the anchor merged: nothing new to judge.
                .map(|(c, r)| r.is_none().then(|| best.judge(s, model, c).0).flatten())
                .collect()
        };
        let done = self
            .rl
            .round(search, &self.f, &mut self.score, &mut self.anchor, &mut submit);
        self.seen = best.chips.clone();
        match done {
            Ok(()) => Ok(true),
            Err(Stop::Infeasible(i)) => Err(i),
            Err(Stop::Policy(_)) => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{accepts, Rl, RlOptions, Score};
    use crate::cost::{Judge, JudgeOptions};
    use crate::strategy::{run, Budget};
    use rand::SeedableRng;

    /// The first weight of a from-scratch policy after a one-sample run
    /// (one sample ends the run before any update) under `seed`.
    fn scratch_weight(seed: u64) -> f32 {
        let text = "use std::topologies::ring\nlet t = ring(n = 4, memory = 1 GiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)\n\
                    let g = graph { a { flops = 1 GFLOP }\n b { flops = 2 GFLOP }\n a -> b }\n\
                    partition g onto t { maximize throughput }\n";
        let c = mcm_lang::compile_str("t.mcm", text, std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(c.ok(), "{}", mcm_core::diag::render_text(&c.program.sources, &c.diags));
        let p = c.problem(None).expect("one problem");
        let j = Judge::new(p, &JudgeOptions::default()).expect("a judge");
        let mut rl = Rl::new(
            "rl-scratch",
            RlOptions {
                from_scratch: true,
                ..RlOptions::default()
            },
        )
        .expect("fresh weights");
        run(p, &j, &mut rl, Budget::Samples(1), seed, None).expect("feasible");
        let vars = rl.policy.vars();
        let (_, v) = vars.iter().min_by_key(|(name, _)| name.clone()).expect("weights");
        v.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap()[0]
    }

    /// From scratch, the run's seed draws the initial weights: repeats are
    /// independent starts, and a seed fixes them.
    #[test]
    fn scratch_weights_follow_the_runs_seed() {
        assert_eq!(scratch_weight(1), scratch_weight(1));
        assert_ne!(scratch_weight(0), scratch_weight(1));
    }

    /// Rewards are finite: 1 at greedy's score, 0 before there is a unit
    /// (greedy's partition invalid at evaluation and no valid rollout yet).
    #[test]
    fn rewards_are_finite() {
        let mut s = Score {
            model: None,
            balance: 0.05,
            greedy: f64::NEG_INFINITY,
        };
        assert_eq!(s.reward(3.0), 0.0);
        assert_eq!(s.of(&[0], 0.0), None);
        assert_eq!(s.of(&[0], f64::INFINITY), None);
        s.greedy = s.of(&[0], 100.0).unwrap();
        assert!((s.reward(s.of(&[0], 100.0).unwrap()) - 1.0).abs() < 1e-6);
        assert!((s.reward(s.of(&[0], 150.0).unwrap()) - 1.5).abs() < 1e-6);
        assert_eq!(s.reward(f64::INFINITY), 0.0);
    }

    /// The anchor's rule: a rollout at least as good always moves it; a
    /// worse one never at temperature 0 (a local search, which stays on a
    /// partition no draw improves), and otherwise about as often as
    /// exp(-loss / T) says.
    #[test]
    fn the_anchor_takes_worse_rollouts_as_the_metropolis_rule_says() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        assert!(accepts(1.0, 1.0, 0.0, &mut rng));
        assert!(accepts(1.5, 1.0, 0.0, &mut rng));
        assert!(accepts(-3.0, f64::NEG_INFINITY, 0.0, &mut rng));
        assert!((0..1000).all(|_| !accepts(0.99, 1.0, 0.0, &mut rng)));
        let taken = (0..10_000).filter(|_| accepts(0.99, 1.0, 0.01, &mut rng)).count();
        let expected = 10_000.0 * (-1.0f64).exp();
        assert!(
            (taken as f64 - expected).abs() < 200.0,
            "{taken} of 10000, expected about {expected}"
        );
        assert!((0..1000).all(|_| !accepts(0.5, 1.0, 0.001, &mut rng)));
    }
}
