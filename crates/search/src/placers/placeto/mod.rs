//! `placeto`: the generalizable device placer of Addanki et al. (NeurIPS
//! 2019) as a strategy. An episode visits the groups of the graph one by
//! one (contiguous spans of the pipeline order, the paper's coarsened
//! graph) and may move each to another device; the policy sees the graph
//! embedded by message passing with the current placement as a node
//! feature. Each move is made valid by the solver (FIX, then memory
//! relief) and judged (one sample), and its reward is the improvement of
//! the objective (the paper's intermediate reward `R(s_t) - R(s_{t+1})`, as
//! the log of the step's ratio so one scale serves every graph), less the
//! share of nodes FIX moved besides the group.
//!
//! The policy is trained on the training split ([`train`]) and applied
//! zero-shot to unseen graphs (`placeto`, the shipped `models/placeto.*`);
//! `placeto-tune` fine-tunes it on the graph within the run's budget with
//! REINFORCE after every episode, and `placeto-scratch` trains a fresh
//! policy on the graph alone within the budget.

mod net;
pub mod train;

pub use net::{PlacetoNet, DEVICE_FEATURES, STATE_FEATURES};

use super::reinforce::{self, Ema};
use crate::policy::features::GraphFeatures;
use crate::policy::PolicyError;
use crate::strategy::{greedy_start, settle_full, Search, Stall, Strategy};
use candle_core::{DType, Device, Tensor};
use candle_nn::AdamW;
use mcm_core::problem::Problem;
use mcm_solver::Infeasible;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the shipped checkpoint lives in the source tree (`models/placeto.*`).
pub const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/placeto");

/// Placeto's network and training settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlacetoConfig {
    /// Message-passing layers.
    pub layers: usize,
    /// Width of the node embeddings and of the policy's hidden layers.
    pub hidden: usize,
    /// Buckets the operator names are hashed into (the node features').
    pub op_buckets: usize,
    /// Groups an episode visits (at most one per node).
    pub groups: usize,
    /// Adam's learning rate.
    pub lr: f64,
    /// Discount of later rewards in an episode's returns.
    pub gamma: f64,
    pub max_grad_norm: f64,
    /// Decay of the per-step moving-average baseline.
    pub baseline_decay: f64,
    /// Weight of the share of nodes FIX moved besides the group.
    pub failure_weight: f64,
    /// Seeds the weight initialisation.
    pub seed: u64,
}

impl Default for PlacetoConfig {
    fn default() -> Self {
        PlacetoConfig {
            layers: 3,
            hidden: 32,
            op_buckets: 64,
            groups: 16,
            lr: 1e-3,
            gamma: 1.0,
            max_grad_norm: 1.0,
            baseline_decay: 0.9,
            failure_weight: 1.0,
            seed: 0,
        }
    }
}

impl PlacetoConfig {
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.hidden == 0 || self.groups == 0 || self.op_buckets == 0 || self.hidden > 4096 || self.layers > 64 {
            return Err(PolicyError::Config(format!(
                "placeto needs hidden in 1..=4096 ({}), layers at most 64 ({}), groups ({}) and op_buckets ({}) at least 1",
                self.hidden, self.layers, self.groups, self.op_buckets
            )));
        }
        Ok(())
    }
}

/// Saves a network as `STEM.safetensors` + `STEM.json`.
pub fn save(net: &PlacetoNet, stem: &Path) -> Result<(), PolicyError> {
    reinforce::save(&net.varmap, "placeto", &net.config, stem)
}

/// Loads the checkpoint at `stem`; a missing one is an error that says how to make one.
pub fn load(stem: &Path) -> Result<PlacetoNet, PolicyError> {
    let config: PlacetoConfig = reinforce::load_config("placeto", stem).map_err(|e| match e {
        PolicyError::Io { path, message } => PolicyError::Io {
            path,
            message: format!("{message} (`mcmpart train --placer placeto` makes a Placeto checkpoint)"),
        },
        e => e,
    })?;
    let mut net = PlacetoNet::new(&config)?;
    reinforce::load_weights(&mut net.varmap, stem)?;
    Ok(net)
}

/// The groups an episode visits: contiguous spans of the pipeline order,
/// about equal in flops, at most `groups` and one per node at least.
#[derive(Clone, Debug)]
pub struct Plan {
    pub members: Vec<Vec<u32>>,
    group_of: Vec<usize>,
    /// Per node, its share of all flops.
    flops: Vec<f64>,
    /// Per device, its share of the package's compute.
    rates: Vec<f64>,
    edges: Vec<(u32, u32, f64)>,
}

impl Plan {
    pub fn new(problem: &Problem, groups: usize) -> Plan {
        let g = &problem.graph;
        let n = g.num_placed();
        let flops: Vec<f64> = (0..n as u32).map(|u| g.placed_node(u).flops as f64).collect();
        let total: f64 = flops.iter().sum::<f64>().max(1.0);
        let k = groups.clamp(1, n.max(1));
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); k];
        let (mut done, mut last) = (0.0, 0usize);
        for (i, u) in g.pipeline_order().into_iter().enumerate() {
            // By flops, one group at a time (a heavy node skips none), but
            // never leaving fewer nodes than groups to fill.
            let by_flops = (((done / total) * k as f64) as usize).min(last + usize::from(i > 0));
            let by_count = k.saturating_sub(n - i);
            let grp = by_flops.max(by_count).min(k - 1);
            last = grp;
            members[grp].push(u);
            done += flops[u as usize];
        }
        members.retain(|m| !m.is_empty());
        let mut group_of = vec![0; n];
        for (i, m) in members.iter().enumerate() {
            for &u in m {
                group_of[u as usize] = i;
            }
        }
        let c = problem.package.num_chips();
        let rate: Vec<f64> = (0..c).map(|d| problem.package.compute_or_unit(d as u32)).collect();
        let rate_total: f64 = rate.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        Plan {
            members,
            group_of,
            flops: flops.iter().map(|f| f / total).collect(),
            rates: rate.iter().map(|r| r / rate_total).collect(),
            edges: g
                .placed_edges()
                .iter()
                .map(|e| (e.src, e.dst, e.bytes as f64))
                .collect(),
        }
    }

    /// The episode's state at the visit of group `t` under `chips` ([N, STATE_FEATURES]).
    fn state(&self, chips: &[u32], t: usize) -> candle_core::Result<Tensor> {
        let c = self.rates.len().max(2) - 1;
        let mut x = Vec::with_capacity(chips.len() * STATE_FEATURES);
        for (u, &d) in chips.iter().enumerate() {
            let grp = self.group_of[u];
            x.extend([d as f32 / c as f32, (grp == t) as u8 as f32, (grp < t) as u8 as f32]);
        }
        Tensor::from_vec(x, (chips.len(), STATE_FEATURES), &Device::Cpu)
    }

    /// The devices' features for the visit of group `t` under `chips` ([C, DEVICE_FEATURES]).
    fn devices(&self, chips: &[u32], t: usize) -> candle_core::Result<Tensor> {
        let c = self.rates.len();
        let mut load = vec![0.0; c];
        for (u, &d) in chips.iter().enumerate() {
            load[d as usize] += self.flops[u];
        }
        let mut traffic = vec![0.0; c];
        for &(s, d, bytes) in &self.edges {
            let (a, b) = (self.group_of[s as usize] == t, self.group_of[d as usize] == t);
            if a != b {
                let other = if a { d } else { s };
                traffic[chips[other as usize] as usize] += bytes;
            }
        }
        let traffic_total: f64 = traffic.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let mut here = vec![0usize; c];
        for &u in &self.members[t] {
            here[chips[u as usize] as usize] += 1;
        }
        let most = here.iter().copied().max().unwrap_or(0);
        let mut x = Vec::with_capacity(c * DEVICE_FEATURES);
        for d in 0..c {
            x.extend([
                d as f32 / (c.max(2) - 1) as f32,
                load[d] as f32,
                self.rates[d] as f32,
                (traffic[d] / traffic_total) as f32,
                (here[d] == most && most > 0) as u8 as f32,
            ]);
        }
        Tensor::from_vec(x, (c, DEVICE_FEATURES), &Device::Cpu)
    }
}

/// One episode: per visit, the log-probability of the move made (with its
/// gradient) and its reward.
pub struct Episode {
    pub log_probs: Vec<Tensor>,
    pub rewards: Vec<f64>,
}

/// Why an episode stopped the run.
pub enum Stop {
    Infeasible(Infeasible),
    Policy(PolicyError),
}

impl From<candle_core::Error> for Stop {
    fn from(e: candle_core::Error) -> Stop {
        Stop::Policy(e.into())
    }
}

impl From<Infeasible> for Stop {
    fn from(e: Infeasible) -> Stop {
        Stop::Infeasible(e)
    }
}

/// Runs one episode from `start` (a valid partition and its score): every
/// group visited once in pipeline order, each move judged as one sample,
/// until the budget runs out.
pub fn episode(
    net: &PlacetoNet,
    f: &GraphFeatures,
    plan: &Plan,
    search: &mut Search,
    start: (Vec<u32>, f64),
) -> Result<Episode, Stop> {
    let (mut chips, mut score) = start;
    let n = chips.len().max(1);
    let mut out = Episode {
        log_probs: Vec::new(),
        rewards: Vec::new(),
    };
    for t in 0..plan.members.len() {
        if search.done() {
            break;
        }
        let members = Tensor::from_vec(plan.members[t].clone(), plan.members[t].len(), &Device::Cpu)?;
        let lp = net.log_probs(f, &plan.state(&chips, t)?, &members, &plan.devices(&chips, t)?)?;
        let probs = lp.exp()?.to_vec1::<f32>()?;
        let (action, _) = crate::policy::ppo::sample_actions(std::slice::from_ref(&probs), &mut search.rng);
        let d = action[0];
        let mut proposal = chips.clone();
        for &u in &plan.members[t] {
            proposal[u as usize] = d;
        }
        let settled = settle_full(search, &proposal)?;
        let extra = crate::strategy::moved(&proposal, &settled);
        let verdict = search.submit_one(settled.clone());
        let reward = match verdict.and_then(|v| v.throughput()) {
            Some(s) if s > 0.0 && s.is_finite() => {
                // From a start the judge refused, any valid move is level ground.
                let r = if score > 0.0 { (s / score).ln() } else { 0.0 };
                (chips, score) = (settled, s);
                r
            }
            // A move the judge refuses leaves the state as it was.
            _ => -1.0,
        };
        out.log_probs.push(lp.get(d as usize)?);
        out.rewards
            .push(reward - net.config.failure_weight * extra as f64 / n as f64);
    }
    Ok(out)
}

/// Placeto's zero-shot placement without the judge in the loop: an
/// episode from `start` in which every visit takes the likeliest device
/// and keeps its move (the placement is the next visit's feature, as in an
/// episode). `auto` judges it among its first partitions.
pub fn likeliest_walk(net: &PlacetoNet, problem: &Problem, start: &[u32]) -> Result<Vec<u32>, PolicyError> {
    let f = features(net, problem)?;
    let plan = Plan::new(problem, net.config.groups);
    let mut chips = start.to_vec();
    for t in 0..plan.members.len() {
        let members = Tensor::from_vec(plan.members[t].clone(), plan.members[t].len(), &Device::Cpu)?;
        let lp = net.log_probs(&f, &plan.state(&chips, t)?, &members, &plan.devices(&chips, t)?)?;
        let lp = lp.to_vec1::<f32>()?;
        // The first of equally likely devices, so that a run is the same.
        let d = (0..lp.len()).fold(0, |b, d| if lp[d] > lp[b] { d } else { b }) as u32;
        for &u in &plan.members[t] {
            chips[u as usize] = d;
        }
    }
    Ok(chips)
}

/// Per-visit baselines and the REINFORCE step on one episode.
pub struct Learner {
    opt: AdamW,
    baselines: Vec<Ema>,
}

impl Learner {
    pub fn new(net: &PlacetoNet) -> Result<Learner, PolicyError> {
        Ok(Learner {
            opt: reinforce::adam(&net.varmap, net.config.lr)?,
            baselines: Vec::new(),
        })
    }

    /// One REINFORCE step on `ep`: each move's log-probability weighted by
    /// its discounted return less that visit's moving-average return.
    pub fn update(&mut self, net: &PlacetoNet, ep: &Episode) -> Result<(), PolicyError> {
        let t = ep.rewards.len();
        if t == 0 {
            return Ok(());
        }
        let mut returns = vec![0.0; t];
        let mut acc = 0.0;
        for i in (0..t).rev() {
            acc = ep.rewards[i] + net.config.gamma * acc;
            returns[i] = acc;
        }
        while self.baselines.len() < t {
            self.baselines.push(Ema::new(net.config.baseline_decay));
        }
        let adv: Vec<f32> = returns
            .iter()
            .zip(&mut self.baselines)
            .map(|(&r, b)| (r - b.advance(r)) as f32)
            .collect();
        let lp = Tensor::stack(&ep.log_probs, 0)?;
        let adv = Tensor::from_vec(adv, t, &Device::Cpu)?;
        let loss = (lp * adv)?.mean_all()?.neg()?;
        reinforce::step(&mut self.opt, &net.varmap, &loss, net.config.max_grad_norm)
    }
}

/// The graph's features as the network reads them.
pub fn features(net: &PlacetoNet, problem: &Problem) -> Result<GraphFeatures, PolicyError> {
    GraphFeatures::new(
        &problem.graph,
        &problem.package,
        net.config.op_buckets,
        &Device::Cpu,
        DType::F32,
    )
}

pub struct Placeto {
    name: String,
    net: PlacetoNet,
    /// Fine-tune on the graph after every episode.
    tune: bool,
    /// Start each run from fresh weights drawn from its seed (Placeto
    /// trained on the graph itself, the zero-shot policy's yardstick).
    scratch: bool,
    error: Option<String>,
}

impl Placeto {
    pub fn new(name: &str, net: PlacetoNet, tune: bool) -> Placeto {
        Placeto {
            name: name.to_string(),
            net,
            tune,
            scratch: false,
            error: None,
        }
    }

    /// Placeto trained on the graph alone, within the run's budget, from
    /// fresh weights seeded by the run's seed.
    pub fn scratch(name: &str) -> Result<Placeto, PolicyError> {
        let mut p = Placeto::new(name, PlacetoNet::new(&PlacetoConfig::default())?, true);
        p.scratch = true;
        Ok(p)
    }

    /// The checkpoint at `stem` (the shipped one when `None`).
    pub fn load(name: &str, stem: Option<PathBuf>, tune: bool) -> Result<Placeto, PolicyError> {
        let stem = stem.unwrap_or_else(|| PathBuf::from(SHIPPED));
        Ok(Placeto::new(name, load(&stem)?, tune))
    }

    fn episodes(&mut self, search: &mut Search, start: (Vec<u32>, f64)) -> Result<(), Stop> {
        let p = search.problem;
        let f = features(&self.net, p).map_err(Stop::Policy)?;
        let plan = Plan::new(p, self.net.config.groups);
        let mut learner = if self.tune {
            Some(Learner::new(&self.net).map_err(Stop::Policy)?)
        } else {
            None
        };
        let mut stall = Stall::new(search, start.0.clone(), start.1);
        let mut from = start;
        while !search.done() {
            let ep = episode(&self.net, &f, &plan, search, from.clone())?;
            if let (Some(l), false) = (learner.as_mut(), search.done()) {
                l.update(&self.net, &ep).map_err(Stop::Policy)?;
            }
            // Episodes that stall are followed by moves around the best.
            stall.after_round(search, ep.rewards.len())?;
            // The next episode starts from the best partition so far.
            if stall.best().1 > from.1 {
                from = stall.best().clone();
            }
        }
        Ok(())
    }
}

impl Strategy for Placeto {
    fn name(&self) -> &str {
        &self.name
    }

    fn failure(&self) -> Option<String> {
        self.error.clone()
    }

    /// Episodes start from the given start (settled, the first sample) or
    /// greedy's partition (judged outside the budget), then from the best so far.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        self.error = None;
        if self.scratch {
            let config = PlacetoConfig {
                seed: search.seed(),
                ..self.net.config.clone()
            };
            match PlacetoNet::new(&config) {
                Ok(net) => self.net = net,
                Err(e) => {
                    self.error = Some(e.to_string());
                    return Ok(());
                }
            }
        }
        let p = search.problem;
        let allowed = search.allowed();
        let g = settle_full(search, &greedy_start(p, &allowed))?;
        let start = match search.start()? {
            Some(s) => {
                let t = search.submit_one(s.clone()).and_then(|v| v.throughput()).unwrap_or(0.0);
                (s, t)
            }
            None => {
                let t = search.reference(&g).throughput().unwrap_or(0.0);
                (g, t)
            }
        };
        match self.episodes(search, start) {
            Ok(()) => Ok(()),
            Err(Stop::Infeasible(i)) => Err(i),
            Err(Stop::Policy(e)) => {
                self.error = Some(e.to_string());
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;
