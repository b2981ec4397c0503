//! Pretraining: PPO over a set of problems (one graph per update, rollouts
//! in parallel, the solver in the loop), a checkpoint every K updates, and a
//! validation pass that scores each checkpoint zero-shot and after a short
//! fine-tune on held-out graphs, keeping the best.

use crate::cost::Judge;
use crate::policy::checkpoint;
use crate::policy::ppo::{self, Batch, PpoConfig, Rollout, UpdateStats};
use crate::policy::rollout::{propose, reward, Correction, Draw, Style};
use crate::policy::{GraphFeatures, Policy, PolicyConfig, PolicyError};
use crate::strategy::{self, Anneal, Budget, Greedy, Rl, RlOptions, Strategy};
use candle_core::{DType, Device};
use mcm_core::problem::{Placement, Problem};
use mcm_solver::{Options, Solver};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A problem to train or validate on, with its greedy baseline.
pub struct Task {
    pub name: String,
    pub problem: Problem,
    pub judge: Judge,
    /// Greedy's throughput, the reward's unit.
    pub greedy: f64,
    /// A better partition than greedy's when [`Task::demonstrate`] found
    /// one (else greedy's): what `imitate_best` teaches.
    pub demo: Vec<u32>,
    /// Greedy's valid partition: where FIX falls back (see [`mcm_solver::fix_or`]).
    pub fallback: Vec<u32>,
}

impl Task {
    /// Judges greedy's partition once; a problem greedy cannot make valid
    /// (or whose greedy partition is invalid at evaluation) is refused, since
    /// it gives no reward scale.
    pub fn new(name: &str, problem: Problem, judge: Judge) -> Result<Task, String> {
        let run = |s: &mut dyn Strategy, samples| {
            strategy::run(&problem, &judge, s, Budget::Samples(samples), 0, None)
                .map_err(|_| "no valid partition".to_string())
        };
        let greedy = run(&mut Greedy, 1)?
            .best
            .ok_or_else(|| "greedy's partition is invalid at evaluation".to_string())?;
        Ok(Task {
            name: name.to_string(),
            problem,
            judge,
            greedy: greedy.throughput,
            demo: greedy.chips.clone(),
            fallback: greedy.chips,
        })
    }

    /// Sets the demonstration to the best partition an anneal of `samples`
    /// samples finds from greedy's (kept when no better one turns up): a
    /// refinement of the partition the policy is given, made of the slides
    /// and reliefs its anchor terms describe, so it can be learned.
    /// Returns how many nodes the demonstration moves and its throughput
    /// over greedy's.
    pub fn demonstrate(&mut self, samples: usize, seed: u64) -> (usize, f64) {
        let found = strategy::run(
            &self.problem,
            &self.judge,
            &mut Anneal::default(),
            Budget::Samples(samples),
            seed,
            None,
        );
        match found.ok().and_then(|o| o.best).filter(|b| b.throughput > self.greedy) {
            Some(b) => {
                self.demo = b.chips;
                let moved = self.demo.iter().zip(&self.fallback).filter(|(a, b)| a != b).count();
                (moved, b.throughput / self.greedy)
            }
            None => (0, 1.0),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TrainConfig {
    pub policy: PolicyConfig,
    pub ppo: PpoConfig,
    pub mode: Correction,
    /// How PPO's rollouts are drawn: dense by default (every node draws,
    /// as in the paper); the `rl` strategy deploys with moves.
    pub draw: Draw,
    /// Samples (evaluated rollouts) to train for.
    pub samples: usize,
    /// Updates between checkpoints.
    pub checkpoint_every: usize,
    pub seed: u64,
    /// Rollouts per validation graph per round.
    pub val_samples: usize,
    /// Fine-tuning updates per validation graph.
    pub val_updates: usize,
    /// Imitation steps before PPO (one graph each): cross-entropy towards
    /// greedy's partition (the one the policy refines), or with
    /// `imitate_best` each task's demonstration ([`Task::demonstrate`]).
    pub imitate: usize,
    pub imitate_lr: f64,
    pub imitate_best: bool,
    /// Samples of each demonstration's anneal ([`Task::demonstrate`]), run
    /// by the caller: recorded here with the rest of the configuration.
    pub demo_samples: usize,
    /// Start from this checkpoint (its network shape wins over `policy`).
    pub init: Option<PathBuf>,
    /// PPO under the deployment's rounds when above 0: each visit to a
    /// training graph is an `rl` run of this many samples from greedy's
    /// partition, exactly as `solve --strategy rl` fine-tunes (moves,
    /// carrying, the anchor moving to better rollouts, one PPO step per
    /// round), the weights and the optimiser carried from one run to the
    /// next ([`train_in_rounds`]). 0: one-step rollouts around greedy's
    /// partition, `ppo.epochs` x `ppo.minibatches` steps per update.
    pub episode: usize,
}

impl TrainConfig {
    pub fn style(&self) -> Style {
        Style {
            mode: self.mode,
            draw: self.draw,
        }
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            policy: PolicyConfig::default(),
            ppo: PpoConfig::default(),
            mode: Correction::Fix,
            draw: Draw::Dense,
            samples: 20_000,
            checkpoint_every: 25,
            seed: 0,
            val_samples: 20,
            val_updates: 2,
            imitate: 0,
            imitate_lr: 1e-3,
            imitate_best: false,
            demo_samples: 200,
            init: None,
            episode: 0,
        }
    }
}

/// One imitation step.
#[derive(Clone, Debug, Serialize)]
pub struct ImitateLog {
    pub step: usize,
    pub task: String,
    /// Mean negative log-likelihood of the demonstration's chips.
    pub loss: f64,
    /// Fraction of nodes whose most likely chip is the demonstration's.
    pub accuracy: f64,
    pub elapsed_s: f64,
}

/// One update, as the log records it.
#[derive(Clone, Debug, Serialize)]
pub struct UpdateLog {
    pub update: usize,
    pub samples: usize,
    pub task: String,
    pub mean_reward: f64,
    pub best_reward: f64,
    /// Fraction of rollouts valid at evaluation.
    pub valid: f64,
    pub policy_loss: f64,
    pub value_loss: f64,
    pub entropy: f64,
    pub approx_kl: f64,
    pub elapsed_s: f64,
}

impl UpdateLog {
    /// The log of one update from the rewards of the samples it learned from
    /// (a reward above zero is a valid sample).
    fn new(update: usize, samples: usize, task: &str, rewards: &[f64], stats: &UpdateStats, start: Instant) -> Self {
        let n = rewards.len().max(1) as f64;
        UpdateLog {
            update,
            samples,
            task: task.to_string(),
            mean_reward: rewards.iter().sum::<f64>() / n,
            best_reward: rewards.iter().copied().fold(0.0, f64::max),
            valid: rewards.iter().filter(|&&r| r > 0.0).count() as f64 / n,
            policy_loss: stats.policy_loss,
            value_loss: stats.value_loss,
            entropy: stats.entropy,
            approx_kl: stats.approx_kl,
            elapsed_s: start.elapsed().as_secs_f64(),
        }
    }
}

/// A checkpoint's validation scores: geometric means over the validation
/// graphs of the best reward (throughput over greedy) found.
#[derive(Clone, Debug, Serialize)]
pub struct Score {
    pub update: usize,
    pub samples: usize,
    pub stem: PathBuf,
    pub zero_shot: f64,
    pub fine_tuned: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TrainReport {
    pub imitation: Vec<ImitateLog>,
    pub updates: Vec<UpdateLog>,
    pub scores: Vec<Score>,
    /// The checkpoint with the best fine-tuned score (then zero-shot), copied to `best`.
    pub best: Option<Score>,
    pub elapsed_s: f64,
}

/// Rollouts on one task, drawn in parallel: each with a solver of its own
/// (a solver keeps what its SAT oracle learnt, and rayon's split of the
/// rollouts among threads varies) and a generator seeded by (seed, i), so
/// results do not depend on threads.
pub fn collect(
    policy: &Policy,
    f: &GraphFeatures,
    graph: usize,
    task: &Task,
    style: Style,
    k: usize,
    seed: u64,
) -> Result<Vec<Rollout>, PolicyError> {
    let mode = style.mode;
    // The policy refines greedy's partition (its first iteration's `prev`).
    let (probs, value) = policy.act(f, Some(&task.fallback))?;
    let props: Vec<_> = (0..k)
        .into_par_iter()
        .map(|i| {
            let mut solver = Solver::new(&task.problem, Options::default()).ok()?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(i as u64));
            propose(&probs, style, &mut solver, &mut rng, Some(&task.fallback)).ok()
        })
        .collect();
    let props: Vec<_> = props.into_iter().flatten().collect();
    if props.is_empty() {
        return Err(PolicyError::Input(format!("`{}` has no valid partition", task.name)));
    }
    // Not judged, no reward: a fallback (greedy's partition, not the
    // policy's) and, without the solver, a partition that breaks a rule.
    let p = &task.problem;
    let refused: Vec<bool> = props
        .iter()
        .map(|r| {
            r.fell_back
                || (mode == Correction::NoSolver
                    && !mcm_solver::check(&p.graph, &p.package, &p.constraints, &Placement::new(r.chips.clone()))
                        .is_empty())
        })
        .collect();
    let judged: Vec<Vec<u32>> = props
        .iter()
        .zip(&refused)
        .filter(|(_, &no)| !no)
        .map(|(r, _)| r.chips.clone())
        .collect();
    let mut verdicts = task.judge.evaluate_all(&judged).into_iter();
    let verdicts: Vec<Option<f64>> = refused
        .iter()
        .map(|&no| {
            if no {
                None
            } else {
                verdicts.next().and_then(|v| v.throughput())
            }
        })
        .collect();
    Ok(props
        .into_iter()
        .zip(verdicts)
        .map(|(p, t)| Rollout {
            credit: p.credit,
            graph,
            prev: Some(task.fallback.clone()),
            actions: p.actions,
            old_log_probs: p.log_probs,
            reward: reward(t, task.greedy),
            value,
        })
        .collect())
}

fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    // A graph with nothing valid counts as 1e-3, not as minus infinity.
    (xs.iter().map(|x| x.max(1e-3).ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// Zero-shot and fine-tuned scores of the checkpoint `stem` on `val`.
pub fn validate(stem: &Path, val: &[Task], cfg: &TrainConfig) -> Result<(f64, f64), PolicyError> {
    let device = Device::Cpu;
    // Fine-tuned at the deployment's learning rate, not the training's, as
    // `validate_in_rounds` does: a checkpoint's score is its own, so two
    // training runs at different rates score a common checkpoint alike.
    let cfg = &TrainConfig {
        ppo: PpoConfig {
            lr: RlOptions::default().ppo.lr,
            ..cfg.ppo.clone()
        },
        ..cfg.clone()
    };
    let mut zero = Vec::new();
    let mut tuned = Vec::new();
    for (i, task) in val.iter().enumerate() {
        // A fresh copy per graph: fine-tuning on one must not leak into the next.
        let policy = checkpoint::load(stem, Some(&cfg.policy), &device)?;
        let f = policy.features(&task.problem.graph, &task.problem.package)?;
        let feats = std::slice::from_ref(&f);
        let seed = cfg.seed ^ 0x5eed ^ ((i as u64) << 20);
        let first = collect(&policy, &f, 0, task, cfg.style(), cfg.val_samples, seed)?;
        let mut best = first.iter().map(|r| r.reward as f64).fold(0.0, f64::max);
        zero.push(best);
        let mut opt = ppo::optimizer(&policy, &cfg.ppo)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rollouts = first;
        for u in 0..cfg.val_updates {
            let batch = Batch {
                features: feats,
                rollouts,
            };
            ppo::update(&policy, &mut opt, &batch, &cfg.ppo, &mut rng)?;
            rollouts = collect(&policy, &f, 0, task, cfg.style(), cfg.val_samples, seed + 1 + u as u64)?;
            best = rollouts.iter().map(|r| r.reward as f64).fold(best, f64::max);
        }
        tuned.push(best);
    }
    Ok((geomean(&zero), geomean(&tuned)))
}

/// Trains a policy on `train`, checkpointing into `out` (`ckpt-NNNNN.*`,
/// then `best.*`); `on_update` sees each update (the progress bar).
pub fn train(
    train: &[Task],
    val: &[Task],
    cfg: &TrainConfig,
    out: &Path,
    mut on_imitate: impl FnMut(&ImitateLog),
    mut on_update: impl FnMut(&UpdateLog, Option<&Score>),
) -> Result<TrainReport, PolicyError> {
    if train.is_empty() {
        return Err(PolicyError::Input("no training graph".into()));
    }
    std::fs::create_dir_all(out).map_err(|e| PolicyError::Io {
        path: out.display().to_string(),
        message: e.to_string(),
    })?;
    let start = Instant::now();
    let device = Device::Cpu;
    let policy = match &cfg.init {
        Some(stem) => checkpoint::load(stem, None, &device)?,
        None => Policy::new(
            &PolicyConfig {
                seed: cfg.seed,
                ..cfg.policy.clone()
            },
            &device,
            DType::F32,
        )?,
    };
    let policy_cfg = policy.config().clone();
    // Validation loads checkpoints of this shape.
    let cfg = &TrainConfig {
        policy: policy_cfg.clone(),
        ..cfg.clone()
    };
    let features: Vec<GraphFeatures> = train
        .iter()
        .map(|t| policy.features(&t.problem.graph, &t.problem.package))
        .collect::<Result<_, _>>()?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut queue: Vec<usize> = Vec::new();
    let mut report = TrainReport {
        imitation: Vec::new(),
        updates: Vec::new(),
        scores: Vec::new(),
        best: None,
        elapsed_s: 0.0,
    };
    let ctx = Checkpoints {
        val,
        cfg,
        out,
        policy_cfg: &policy_cfg,
        device: &device,
    };
    if cfg.imitate > 0 || cfg.init.is_some() {
        let mut opt = ppo::optimizer(
            &policy,
            &PpoConfig {
                lr: cfg.imitate_lr,
                ..cfg.ppo.clone()
            },
        )?;
        // A demonstration teaches its slides from greedy's partition.
        let targets: Vec<Vec<u32>> = if cfg.imitate_best {
            features
                .iter()
                .zip(train)
                .map(|(f, t)| f.slide_target(&t.fallback, &t.demo))
                .collect::<Result<_, _>>()?
        } else {
            train.iter().map(|t| t.fallback.clone()).collect()
        };
        for step in 1..=cfg.imitate {
            if queue.is_empty() {
                queue = (0..train.len()).collect();
                queue.shuffle(&mut rng);
            }
            let g = queue.pop().unwrap_or(0);
            let (loss, accuracy) = imitate_step(&policy, &mut opt, &features[g], &train[g].fallback, &targets[g])?;
            let log = ImitateLog {
                step,
                task: train[g].name.clone(),
                loss,
                accuracy,
                elapsed_s: start.elapsed().as_secs_f64(),
            };
            on_imitate(&log);
            report.imitation.push(log);
        }
        queue.clear();
        // The imitated (or given) policy is a checkpoint too (update 0): PPO must beat it to be kept.
        ctx.score(&mut report, &policy, 0, 0, 0.0)?;
    }
    if cfg.episode > 0 {
        train_in_rounds(policy, train, &ctx, &mut report, &mut rng, start, &mut on_update)?;
        report.elapsed_s = start.elapsed().as_secs_f64();
        return Ok(report);
    }
    let mut opt = ppo::optimizer(&policy, &cfg.ppo)?;
    let mut samples = 0;
    let mut update = 0;
    while samples < cfg.samples {
        if queue.is_empty() {
            queue = (0..train.len()).collect();
            queue.shuffle(&mut rng);
        }
        let g = queue.pop().unwrap_or(0);
        let task = &train[g];
        let k = cfg.ppo.rollouts.min(cfg.samples - samples).max(1);
        let seed = cfg.seed.wrapping_add(1 + update as u64);
        let rollouts = collect(&policy, &features[g], g, task, cfg.style(), k, seed)?;
        samples += rollouts.len();
        update += 1;
        let rewards: Vec<f64> = rollouts.iter().map(|r| r.reward as f64).collect();
        let batch = Batch {
            features: &features,
            rollouts,
        };
        let stats: UpdateStats = ppo::update(&policy, &mut opt, &batch, &cfg.ppo, &mut rng)?;
        let log = UpdateLog::new(update, samples, &task.name, &rewards, &stats, start);
        ctx.log(&mut report, &policy, log, &mut on_update)?;
    }
    report.elapsed_s = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Where checkpoints go and how they are scored.
struct Checkpoints<'a> {
    val: &'a [Task],
    cfg: &'a TrainConfig,
    out: &'a Path,
    policy_cfg: &'a PolicyConfig,
    device: &'a Device,
}

impl Checkpoints<'_> {
    /// Saves and scores `policy` as the checkpoint of `update`, kept as the
    /// best if it beats the others.
    fn score(
        &self,
        report: &mut TrainReport,
        policy: &Policy,
        update: usize,
        samples: usize,
        mean: f64,
    ) -> Result<(), PolicyError> {
        let s = checkpoint_and_score(policy, self.val, self.cfg, self.out, update, samples, mean)?;
        keep_if_best(report, &s, self.out, self.policy_cfg, self.device)?;
        report.scores.push(s);
        Ok(())
    }

    /// Records one update's log; every `checkpoint_every`-th update and the
    /// last are scored first.
    fn log(
        &self,
        report: &mut TrainReport,
        policy: &Policy,
        log: UpdateLog,
        on_update: &mut impl FnMut(&UpdateLog, Option<&Score>),
    ) -> Result<(), PolicyError> {
        let last = log.samples >= self.cfg.samples;
        let score = if log.update.is_multiple_of(self.cfg.checkpoint_every.max(1)) || last {
            self.score(report, policy, log.update, log.samples, log.mean_reward)?;
            report.scores.last()
        } else {
            None
        };
        on_update(&log, score);
        report.updates.push(log);
        Ok(())
    }
}

/// The deployment's options for a training or validation run of `rl`
/// under `cfg`: its rounds as `solve --strategy rl` runs them (one PPO
/// step per round, no entropy bonus), at `cfg`'s learning rate, rollouts
/// per round and moves (the deployment's 3 unless `cfg` draws moves).
fn deployed(cfg: &TrainConfig, zero_shot: bool) -> RlOptions {
    let base = RlOptions::default();
    RlOptions {
        zero_shot,
        mode: cfg.mode,
        moves: match cfg.draw {
            Draw::Moves(k) => Some(k),
            Draw::Dense => None,
        },
        ppo: PpoConfig {
            lr: cfg.ppo.lr,
            rollouts: cfg.ppo.rollouts,
            ..base.ppo.clone()
        },
        walk: false,
        ..base
    }
}

/// [`TrainConfig::episode`]: PPO through the `rl` strategy's own rounds.
/// Each visit (the graphs in shuffled rounds) runs `rl` on one training
/// graph for `cfg.episode` samples with the seed (seed, visit); the policy
/// it leaves is the next visit's. A visit is one line of the log (its
/// update number counts visits): mean and best throughput over greedy's of
/// its samples, the fraction valid, and the last PPO step's statistics.
fn train_in_rounds(
    policy: Policy,
    train: &[Task],
    ctx: &Checkpoints,
    report: &mut TrainReport,
    rng: &mut ChaCha8Rng,
    start: Instant,
    on_update: &mut impl FnMut(&UpdateLog, Option<&Score>),
) -> Result<(), PolicyError> {
    let cfg = ctx.cfg;
    let mut rl = Rl::with_policy("rl", policy, deployed(cfg, false))?;
    let mut queue: Vec<usize> = Vec::new();
    let (mut samples, mut visit) = (0, 0);
    while samples < cfg.samples {
        if queue.is_empty() {
            queue = (0..train.len()).collect();
            queue.shuffle(rng);
        }
        let task = &train[queue.pop().unwrap_or(0)];
        let k = cfg.episode.min(cfg.samples - samples);
        let seed = cfg.seed.wrapping_add(1 + visit as u64);
        let o = strategy::run(&task.problem, &task.judge, &mut rl, Budget::Samples(k), seed, None)
            .map_err(|_| PolicyError::Input(format!("`{}` has no valid partition", task.name)))?;
        if let Some(why) = rl.failure() {
            return Err(PolicyError::Input(why));
        }
        samples += k;
        visit += 1;
        let gains: Vec<f64> = o
            .records
            .iter()
            .map(|r| r.throughput.map_or(0.0, |t| t / task.greedy))
            .collect();
        let stats = rl.last_update().unwrap_or_default();
        let log = UpdateLog::new(visit, samples, &task.name, &gains, &stats, start);
        ctx.log(report, rl.policy(), log, on_update)?;
    }
    Ok(())
}

/// Scores of the checkpoint `stem` under the deployment's rounds
/// ([`TrainConfig::episode`]), each validation graph with a fresh copy and
/// `val_samples` x (1 + `val_updates`) samples: zero-shot, the best of an
/// `rl-zero-shot` run over greedy's throughput; fine-tuned, the mean over
/// the samples of an `rl` run's best so far over greedy's (the area under
/// its curve, so that a policy reaching a level in fewer samples scores
/// higher, as the fine-tuning comparison counts). Geometric means over the
/// graphs.
pub fn validate_in_rounds(stem: &Path, val: &[Task], cfg: &TrainConfig) -> Result<(f64, f64), PolicyError> {
    let device = Device::Cpu;
    let budget = cfg.val_samples * (1 + cfg.val_updates);
    // Fine-tuned as `solve --strategy rl` fine-tunes (its learning rate, not
    // the training's), in rounds of `val_samples`: a checkpoint's score
    // depends on the checkpoint and the validation settings alone, so runs
    // at different learning rates score the same checkpoint alike.
    let deployment = RlOptions::default().ppo;
    let cfg = &TrainConfig {
        ppo: PpoConfig {
            lr: deployment.lr,
            rollouts: cfg.val_samples.max(1),
            ..cfg.ppo.clone()
        },
        ..cfg.clone()
    };
    let mut zero = Vec::new();
    let mut tuned = Vec::new();
    for (i, task) in val.iter().enumerate() {
        let seed = cfg.seed ^ 0x5eed ^ ((i as u64) << 20);
        for (zero_shot, scores) in [(true, &mut zero), (false, &mut tuned)] {
            let policy = checkpoint::load(stem, Some(&cfg.policy), &device)?;
            let mut rl = Rl::with_policy("rl", policy, deployed(cfg, zero_shot))?;
            let o = strategy::run(&task.problem, &task.judge, &mut rl, Budget::Samples(budget), seed, None)
                .map_err(|_| PolicyError::Input(format!("`{}` has no valid partition", task.name)))?;
            let gain = |b: Option<f64>| b.map_or(0.0, |t| t / task.greedy);
            scores.push(if zero_shot {
                gain(o.best.as_ref().map(|b| b.throughput))
            } else {
                o.records.iter().map(|r| gain(r.best)).sum::<f64>() / o.records.len().max(1) as f64
            });
        }
    }
    Ok((geomean(&zero), geomean(&tuned)))
}

/// Saves `ckpt-UPDATE` and scores it on `val` (without validation graphs,
/// both scores are the update's mean training reward).
fn checkpoint_and_score(
    policy: &Policy,
    val: &[Task],
    cfg: &TrainConfig,
    out: &Path,
    update: usize,
    samples: usize,
    mean_reward: f64,
) -> Result<Score, PolicyError> {
    let stem = out.join(format!("ckpt-{update:05}"));
    checkpoint::save(policy, &stem)?;
    let (zero_shot, fine_tuned) = if val.is_empty() {
        (mean_reward, mean_reward)
    } else if cfg.episode > 0 {
        validate_in_rounds(&stem, val, cfg)?
    } else {
        validate(&stem, val, cfg)?
    };
    Ok(Score {
        update,
        samples,
        stem,
        zero_shot,
        fine_tuned,
    })
}

/// Copies the checkpoint to `best` when its fine-tuned (then zero-shot)
/// score is the best so far.
fn keep_if_best(
    report: &mut TrainReport,
    s: &Score,
    out: &Path,
    cfg: &PolicyConfig,
    device: &Device,
) -> Result<(), PolicyError> {
    let better = report
        .best
        .as_ref()
        .is_none_or(|b| (s.fine_tuned, s.zero_shot) > (b.fine_tuned, b.zero_shot));
    if better {
        let best = checkpoint::load(&s.stem, Some(cfg), device)?;
        checkpoint::save(&best, &out.join("best"))?;
        report.best = Some(s.clone());
    }
    Ok(())
}

/// One supervised step towards `demo` from `prev` (the placement the
/// policy refines, greedy's): the mean over nodes and refinement
/// iterations of -log p(demo chip). Returns the last iteration's loss and
/// how many nodes it already puts on the demonstration's chip.
pub fn imitate_step(
    policy: &Policy,
    opt: &mut candle_nn::AdamW,
    f: &GraphFeatures,
    prev: &[u32],
    demo: &[u32],
) -> Result<(f64, f64), PolicyError> {
    use candle_core::Tensor;
    use candle_nn::Optimizer;
    if demo.len() != f.num_nodes {
        return Err(PolicyError::Input(format!(
            "a demonstration of {} chips for a graph of {} nodes",
            demo.len(),
            f.num_nodes
        )));
    }
    let out = policy.forward(f, Some(prev))?;
    let target = Tensor::from_slice(demo, (f.num_nodes, 1), policy.device())?;
    let mut terms = Vec::new();
    for lp in &out.log_probs {
        terms.push(lp.gather(&target, 1)?.mean_all()?.neg()?);
    }
    let loss = Tensor::stack(&terms, 0)?.mean(0)?;
    let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
    if !value.is_finite() {
        return Err(ppo::diverged(format!("the imitation loss is {value}")));
    }
    let grads = loss.backward()?;
    opt.step(&grads)?;
    let last = out.last();
    let nll = terms
        .last()
        .map(|t| t.to_dtype(DType::F64)?.to_scalar::<f64>())
        .transpose()?
        .unwrap_or(0.0);
    let pick: Vec<u32> = last.argmax(1)?.to_vec1::<u32>()?;
    let hits = pick.iter().zip(demo).filter(|(a, b)| a == b).count();
    Ok((nll, hits as f64 / demo.len().max(1) as f64))
}
