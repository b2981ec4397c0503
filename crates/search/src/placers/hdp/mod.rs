//! `hdp`: the hierarchical device placer of Mirhoseini et al. (ICLR 2018)
//! as a strategy, trained per graph within the run's budget as in the
//! paper. Each round the Grouper draws a grouping and the Placer `k`
//! placements of its groups; each placement is made valid by the solver
//! (FIX, then memory relief) and judged (one sample each), and one
//! REINFORCE step with an exponential-moving-average baseline trains both
//! networks jointly on the rewards.
//!
//! The reward is the paper's `-sqrt(step)`, the step (one over the judge's
//! score, so either objective's cost) over greedy's, less the share of
//! operations FIX had to move: the paper's failure signal (it penalised
//! invalid placements), which here are repaired instead of discarded.

mod net;

pub use net::{Draws, HdpNet, Inputs};

use super::reinforce::{self, Ema};
use crate::policy::features::GraphFeatures;
use crate::policy::PolicyError;
use crate::strategy::{greedy_start, moved, settle_full, Search, Stall, Strategy};
use candle_core::{DType, Device, Tensor};
use mcm_solver::Infeasible;
use serde::{Deserialize, Serialize};

/// HDP's hyperparameters. The paper's are in the comments; where these
/// differ it is for this 2-core CPU machine and a budget of hundreds of
/// samples instead of hours on 36 GPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HdpConfig {
    /// Groups (paper: 256; fewer here, since every Placer sample decodes one step per group).
    pub groups: usize,
    /// The Grouper's hidden layer (paper: 64).
    pub grouper_hidden: usize,
    /// The Placer's LSTM width (paper: 256).
    pub hidden: usize,
    /// Buckets the operation types are hashed into.
    pub op_buckets: usize,
    /// Placer samples per grouping (paper: k = 4, m = 1).
    pub placer_samples: usize,
    /// Adam's learning rate (paper: 0.1; here the Grouper collapses at 0.1
    /// within a few dozen updates to one group, all on one device).
    pub lr: f64,
    /// Bello's tanh constant C and temperature T (paper: 5 and 10).
    pub tanh_c: f64,
    pub temperature: f64,
    /// Gradient clipping by global norm (paper: 1.0).
    pub max_grad_norm: f64,
    /// Decay of the moving-average baseline (the paper gives none).
    pub baseline_decay: f64,
    /// Weight of the share of operations FIX moved in the reward.
    pub failure_weight: f64,
}

impl Default for HdpConfig {
    fn default() -> Self {
        HdpConfig {
            groups: 32,
            grouper_hidden: 64,
            hidden: 64,
            op_buckets: 64,
            placer_samples: 4,
            lr: 0.03,
            tanh_c: 5.0,
            temperature: 10.0,
            max_grad_norm: 1.0,
            baseline_decay: 0.9,
            failure_weight: 1.0,
        }
    }
}

/// The reward of a judged placement: `-sqrt(step / greedy's step)` (scores
/// are one over the step), less `failure_weight` times the share of nodes
/// FIX moved; a placement the judge refused counts as a hundred times
/// greedy's step. Valid steps are not capped: the first draws of a fresh
/// network spread a graph over every device and can be tens of times
/// slower than greedy, and a cap there would give them all one reward and
/// the policy no gradient.
pub fn reward(score: Option<f64>, unit: f64, moved: usize, nodes: usize, failure_weight: f64) -> f64 {
    const INVALID: f64 = 100.0;
    let ratio = match score {
        Some(s) if s > 0.0 && s.is_finite() && unit > 0.0 => (unit / s).min(1e12),
        _ => INVALID,
    };
    -ratio.sqrt() - failure_weight * moved as f64 / nodes.max(1) as f64
}

pub struct Hdp {
    pub config: HdpConfig,
    /// Moves around the best once the policy stalls ([`Stall`]); without
    /// them a run is the paper's REINFORCE alone, whose samples are what
    /// the training test measures.
    pub(crate) walk: bool,
    error: Option<String>,
}

impl Default for Hdp {
    fn default() -> Hdp {
        Hdp::new(HdpConfig::default())
    }
}

impl Hdp {
    pub fn new(config: HdpConfig) -> Hdp {
        Hdp {
            config,
            walk: true,
            error: None,
        }
    }

    /// Rounds until the budget is spent, each followed, once they stall, by
    /// moves around the best ([`Stall`], from `start`, a valid partition and
    /// its score); a network error ends the run with the samples so far
    /// (see [`Strategy::failure`]).
    fn train(
        &self,
        search: &mut Search,
        unit: f64,
        start: (Vec<u32>, f64),
    ) -> Result<Result<(), PolicyError>, Infeasible> {
        let p = search.problem;
        let cfg = &self.config;
        let built = GraphFeatures::new(&p.graph, &p.package, cfg.op_buckets, &Device::Cpu, DType::F32)
            .and_then(|f| Inputs::new(&p.graph, &f, cfg.op_buckets))
            .and_then(|x| {
                let groups = cfg.groups.min(p.graph.num_placed()).max(1);
                HdpNet::new(cfg, groups, p.package.num_chips(), search.seed()).map(|n| (x, n))
            })
            .and_then(|(x, net)| reinforce::adam(&net.varmap, cfg.lr).map(|o| (x, net, o)));
        let (x, net, mut opt) = match built {
            Ok(b) => b,
            Err(e) => return Ok(Err(e)),
        };
        let n = p.graph.num_placed();
        let mut unit = unit;
        let mut baseline = Ema::new(cfg.baseline_decay);
        let mut stall = Stall::new(search, start.0, start.1);
        while !search.done() {
            let k = cfg.placer_samples.max(1).min(search.remaining());
            let draws = match net.sample(&x, k, cfg.op_buckets, &mut search.rng) {
                Ok(d) => d,
                Err(e) => return Ok(Err(e)),
            };
            let mut settled = Vec::with_capacity(k);
            let mut moves = Vec::with_capacity(k);
            for s in 0..k {
                let proposal = draws.placement(s);
                let chips = settle_full(search, &proposal)?;
                moves.push(moved(&proposal, &chips));
                settled.push(chips);
            }
            let verdicts = search.submit(settled);
            let scores: Vec<Option<f64>> = verdicts
                .iter()
                .map(|v| v.as_ref().and_then(|v| v.throughput()))
                .collect();
            // Without greedy's score the first valid placement is the unit.
            if unit <= 0.0 {
                unit = scores.iter().flatten().copied().fold(0.0, f64::max);
            }
            if search.done() {
                break;
            }
            let rewards: Vec<f64> = scores
                .iter()
                .zip(&moves)
                .map(|(&s, &m)| reward(s, unit, m, n, cfg.failure_weight))
                .collect();
            let mean = rewards.iter().sum::<f64>() / rewards.len() as f64;
            let b = baseline.advance(mean);
            let adv: Vec<f32> = rewards.iter().map(|r| (r - b) as f32).collect();
            let step = Tensor::from_vec(adv, k, &Device::Cpu)
                .and_then(|a| (draws.log_probs * a)?.mean_all()?.neg())
                .map_err(PolicyError::from)
                .and_then(|loss| reinforce::step(&mut opt, &net.varmap, &loss, cfg.max_grad_norm));
            if let Err(e) = step {
                return Ok(Err(e));
            }
            if self.walk {
                stall.after_round(search, k)?;
            }
        }
        Ok(Ok(()))
    }
}

impl Strategy for Hdp {
    fn name(&self) -> &str {
        "hdp"
    }

    fn failure(&self) -> Option<String> {
        self.error.clone()
    }

    /// The given start (settled), if any, is the first sample; greedy's
    /// step, judged outside the budget, is the reward's unit.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        self.error = None;
        let p = search.problem;
        let allowed = search.allowed();
        let g = settle_full(search, &greedy_start(p, &allowed))?;
        let unit = search.reference(&g).throughput().unwrap_or(0.0);
        let start = match search.start()? {
            Some(s) => {
                let t = search.submit_one(s.clone()).and_then(|v| v.throughput()).unwrap_or(0.0);
                (s, t)
            }
            None => (g, unit),
        };
        if let Err(e) = self.train(search, unit, start)? {
            self.error = Some(e.to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
