//! The PPO agent `gdp` and `mars` share: a network gives every node a
//! distribution over chips and a value; a round draws rollouts from it,
//! FIX makes each valid (as `rl`'s are), the judge scores them and a PPO
//! update follows. The reward is the judged score over greedy's on the same
//! problem, so it is the same under either objective. Also the pretraining
//! over a set of problems, and checkpoints (safetensors + a JSON sidecar)
//! that hold any subset of a network's weights (Mars ships its encoder
//! alone).
//!
//! Rollouts are [`Draw::Moves`] from the best partition so far (greedy's at
//! first), as `rl` deploys, plus each round the network's likeliest whole
//! placement made valid (the one-shot placement both papers decode): dense
//! draws from a young network are hash-like placements that FIX repairs
//! into little better, and 500 samples do not teach a network enough to
//! beat that.

use crate::policy::checkpoint::paths;
use crate::policy::ppo::{advantages, Rollout};
use crate::policy::rollout::{propose, propose_likeliest, reward, Correction, Draw, Proposal, Style, FELL_BACK};
use crate::policy::sage::{Init, Linear, Mlp};
use crate::policy::{GraphFeatures, PolicyError, FEATURE_SCHEMA};
use crate::pretrain::Task;
use crate::strategy::{greedy_start, settle_full, Search, Stall};
use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use mcm_core::digest::fnv1a;
use mcm_solver::{Infeasible, Options, Solver};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

/// A placer network: log-probabilities of each chip for each node [N, C]
/// and the value it predicts (a scalar).
pub(crate) trait Net: Send {
    fn forward(&self, f: &GraphFeatures) -> Result<(Tensor, Tensor), PolicyError>;
    /// Every trainable variable, sorted by name.
    fn vars(&self) -> Vec<(String, Var)>;
    /// Buckets the operator names are hashed into (the features must agree).
    fn op_buckets(&self) -> usize;
}

/// The variables of a [`candle_nn::VarMap`], sorted by name.
pub(crate) fn sorted_vars(varmap: &candle_nn::VarMap) -> Vec<(String, Var)> {
    let data = varmap.data().lock().expect("varmap lock");
    let mut vars: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    vars
}

/// The output both placers end in: a node's query scored against a key per
/// chip (so one network serves any chip count, as `rl`'s head does) plus a
/// per-node weight of the node's distance from its place in the pipeline
/// and its square, and a value from the mean- and max-pooled states.
pub(crate) struct Head {
    chip: Mlp,
    query: Mlp,
    pipeline: Linear,
    value: Mlp,
    scale: f64,
}

impl Head {
    pub fn new(init: &mut Init, name: &str, hidden: usize) -> Result<Head, PolicyError> {
        use crate::policy::features::CHIP_FEATURES;
        Ok(Head {
            chip: Mlp::new(init, &format!("{name}.chip"), CHIP_FEATURES, hidden, hidden)?,
            query: Mlp::new(init, &format!("{name}.query"), hidden, hidden, hidden)?,
            pipeline: Linear::zeros(init, &format!("{name}.pipeline"), hidden, 2)?,
            value: Mlp::new(init, &format!("{name}.value"), 2 * hidden, hidden, 1)?,
            scale: 1.0 / (hidden as f64).sqrt(),
        })
    }

    /// Log-probabilities [N, C] and the value of node states `h` [N, H].
    pub fn forward(&self, h: &Tensor, f: &GraphFeatures) -> candle_core::Result<(Tensor, Tensor)> {
        let keys = self.chip.forward(&f.chips)?;
        let w = self.pipeline.forward(h)?;
        let logits = ((self.query.forward(h)?.matmul(&keys.t()?)? * self.scale)?
            + w.narrow(1, 0, 1)?.broadcast_mul(&f.pipeline)?
            + w.narrow(1, 1, 1)?.broadcast_mul(&f.pipeline_sq)?)?;
        let lp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let pooled = Tensor::cat(&[h.mean_keepdim(0)?, h.max_keepdim(0)?], 1)?;
        Ok((lp, self.value.forward(&pooled)?.reshape(())?))
    }
}

/// How the agent draws and learns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    /// Rollouts per round (each one sample), then one PPO update.
    pub rollouts: usize,
    /// PPO epochs over a round's rollouts (one optimiser step each).
    pub epochs: usize,
    pub clip: f64,
    pub lr: f64,
    pub entropy: f64,
    pub value_coef: f64,
    /// Global gradient-norm clip.
    pub max_grad_norm: f64,
    /// At most this many moves per rollout from the partition refined; 0
    /// draws every node (the papers' rollout).
    pub moves: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            rollouts: 16,
            epochs: 4,
            clip: 0.2,
            lr: 1e-3,
            entropy: 0.01,
            value_coef: 0.5,
            max_grad_norm: 1.0,
            moves: 3,
        }
    }
}

impl AgentConfig {
    fn style(&self) -> Style {
        Style {
            mode: Correction::Fix,
            draw: match self.moves {
                0 => Draw::Dense,
                k => Draw::Moves(k),
            },
        }
    }
}

/// The features a network reads of a problem.
pub(crate) fn features(net: &dyn Net, p: &mcm_core::problem::Problem) -> Result<GraphFeatures, PolicyError> {
    GraphFeatures::new(&p.graph, &p.package, net.op_buckets(), &Device::Cpu, DType::F32)
}

/// The network's distributions over chips on problem `p`, as the solver
/// takes them: what its likeliest placement is decoded from.
pub(crate) fn distributions(net: &dyn Net, p: &mcm_core::problem::Problem) -> Result<Vec<Vec<f32>>, PolicyError> {
    Ok(act(net, &features(net, p)?)?.0)
}

/// The network's distributions as the solver takes them, and its value.
fn act(net: &dyn Net, f: &GraphFeatures) -> Result<(Vec<Vec<f32>>, f32), PolicyError> {
    let (lp, value) = net.forward(f)?;
    Ok((lp.exp()?.to_vec2::<f32>()?, value.to_scalar::<f32>()?))
}

/// Rollout `i` of a round: the likeliest placement first, then draws.
fn rollout(
    i: usize,
    probs: &[Vec<f32>],
    style: Style,
    solver: &mut Solver,
    rng: &mut ChaCha8Rng,
    anchor: &[u32],
) -> Result<Proposal, Infeasible> {
    if i == 0 {
        propose_likeliest(probs, style.mode, solver, rng, Some(anchor))
    } else {
        propose(probs, style, solver, rng, Some(anchor))
    }
}

fn as_rollout(p: Proposal, reward: f32, value: f32) -> Rollout {
    Rollout {
        graph: 0,
        prev: None,
        actions: p.actions,
        old_log_probs: p.log_probs,
        credit: p.credit,
        reward,
        value,
    }
}

pub(crate) fn optimizer(net: &dyn Net, cfg: &AgentConfig) -> Result<AdamW, PolicyError> {
    let vars = net.vars().into_iter().map(|(_, v)| v).collect();
    Ok(AdamW::new(
        vars,
        ParamsAdamW {
            lr: cfg.lr,
            ..ParamsAdamW::default()
        },
    )?)
}

fn diverged(what: String) -> PolicyError {
    PolicyError::Diverged(format!("{what} (a learning rate or entropy bonus too large?)"))
}

/// A PPO update on one graph's rollouts: per-node probability ratios (a
/// moves rollout credits its moved nodes only), clipped, with normalised
/// advantages against the value, a value loss and an entropy bonus.
pub(crate) fn update(
    net: &dyn Net,
    opt: &mut AdamW,
    f: &GraphFeatures,
    rollouts: &[Rollout],
    cfg: &AgentConfig,
) -> Result<(), PolicyError> {
    if rollouts.is_empty() {
        return Ok(());
    }
    let dev = Device::Cpu;
    let adv = advantages(rollouts);
    let vars = net.vars();
    for _ in 0..cfg.epochs {
        let (lp, value) = net.forward(f)?;
        let entropy = lp.exp()?.mul(&lp)?.sum(1)?.mean(0)?.neg()?;
        let mut terms = Vec::with_capacity(rollouts.len());
        for (r, &a) in rollouts.iter().zip(&adv) {
            if r.actions.len() != f.num_nodes || r.old_log_probs.len() != f.num_nodes {
                return Err(PolicyError::Input(format!(
                    "a rollout of {} actions for a graph of {} nodes",
                    r.actions.len(),
                    f.num_nodes
                )));
            }
            let actions = Tensor::from_slice(&r.actions, (f.num_nodes, 1), &dev)?;
            let mut new = lp.gather(&actions, 1)?.squeeze(1)?;
            let mut old = r.old_log_probs.clone();
            if let Some(credit) = &r.credit {
                if credit.is_empty() {
                    continue;
                }
                new = new.index_select(&Tensor::from_slice(credit, credit.len(), &dev)?, 0)?;
                old = credit.iter().map(|&u| old[u as usize]).collect();
            }
            let old = Tensor::from_vec(old, new.dims1()?, &dev)?;
            let ratio = (new - old)?.clamp(-20.0, 20.0)?.exp()?;
            let clipped = (ratio.clamp(1.0 - cfg.clip, 1.0 + cfg.clip)? * a)?;
            terms.push((ratio * a)?.minimum(&clipped)?.mean(0)?.neg()?);
        }
        let rewards: Vec<f32> = rollouts.iter().map(|r| r.reward).collect();
        let rewards = Tensor::from_vec(rewards, rollouts.len(), &dev)?;
        let value_loss = rewards.broadcast_sub(&value)?.sqr()?.mean(0)?;
        let mut total = ((value_loss * cfg.value_coef)? - (entropy * cfg.entropy)?)?;
        if !terms.is_empty() {
            total = (total + Tensor::stack(&terms, 0)?.mean(0)?)?;
        }
        let t = total.to_scalar::<f32>()?;
        if !t.is_finite() {
            return Err(diverged(format!("the PPO loss is {t}")));
        }
        let mut grads = total.backward()?;
        let mut sq = 0.0f64;
        for (_, v) in &vars {
            if let Some(g) = grads.get(v.as_tensor()) {
                sq += g.sqr()?.sum_all()?.to_dtype(DType::F64)?.to_scalar::<f64>()?;
            }
        }
        let norm = sq.sqrt();
        if !norm.is_finite() {
            return Err(diverged(format!("the gradient's norm is {norm}")));
        }
        if norm > cfg.max_grad_norm {
            let scale = cfg.max_grad_norm / norm;
            for (_, v) in &vars {
                if let Some(g) = grads.remove(v.as_tensor()) {
                    grads.insert(v.as_tensor(), (g * scale)?);
                }
            }
        }
        opt.step(&grads)?;
    }
    Ok(())
}

/// Why a search with a network ended early.
pub(crate) enum Stop {
    Infeasible(Infeasible),
    Net(PolicyError),
}

impl From<PolicyError> for Stop {
    fn from(e: PolicyError) -> Stop {
        Stop::Net(e)
    }
}

impl From<candle_core::Error> for Stop {
    fn from(e: candle_core::Error) -> Stop {
        Stop::Net(e.into())
    }
}

impl From<Infeasible> for Stop {
    fn from(e: Infeasible) -> Stop {
        Stop::Infeasible(e)
    }
}

/// A learned placer's run: `search_with` the network `net` made, learning;
/// a network that could not be made or failed mid-run leaves `error` (the
/// strategy's failure, its samples standing) rather than ending the run
/// with an error.
pub(crate) fn run_learning<N: Net>(
    net: Result<N, PolicyError>,
    cfg: &AgentConfig,
    search: &mut Search,
    error: &mut Option<String>,
) -> Result<(), Infeasible> {
    *error = None;
    match net
        .map_err(Stop::Net)
        .and_then(|net| search_with(&net, cfg, true, search))
    {
        Ok(()) => Ok(()),
        Err(Stop::Infeasible(i)) => Err(i),
        Err(Stop::Net(e)) => {
            *error = Some(e.to_string());
            Ok(())
        }
    }
}

/// Spends a search's budget with `net`: rounds of rollouts around the best
/// partition so far, each followed by a PPO update (none with `learn`
/// false) and, once the rounds stall, moves around the best ([`Stall`]).
/// Greedy's partition (judged outside the budget) is the reward's
/// unit and the first anchor; a given start (`--init`) is the first sample
/// and anchor instead.
pub(crate) fn search_with(net: &dyn Net, cfg: &AgentConfig, learn: bool, search: &mut Search) -> Result<(), Stop> {
    let p = search.problem;
    let allowed = search.allowed();
    let g = settle_full(search, &greedy_start(p, &allowed))?;
    let mut unit = search.reference(&g).throughput().unwrap_or(0.0);
    let mut anchor = match search.start()? {
        Some(s) => {
            let t = search.submit_one(s.clone()).and_then(|v| v.throughput()).unwrap_or(0.0);
            (s, t)
        }
        None => (g, unit),
    };
    let mut stall = Stall::new(search, anchor.0.clone(), anchor.1);
    let f = features(net, p)?;
    let mut opt = optimizer(net, cfg)?;
    let style = cfg.style();
    while !search.done() {
        let (probs, value) = act(net, &f)?;
        let k = cfg.rollouts.max(1).min(search.remaining());
        let mut props: Vec<Proposal> = Vec::with_capacity(k);
        let mut verdicts = Vec::with_capacity(k);
        // Judged as made, as many at once as the judge runs, so that a time
        // budget ends the round where it runs out.
        while props.len() < k && !search.done() {
            let n = search.batch().min(k - props.len());
            let mut chunk = Vec::with_capacity(n);
            for i in props.len()..props.len() + n {
                chunk.push(rollout(
                    i,
                    &probs,
                    style,
                    &mut search.solver,
                    &mut search.rng,
                    &anchor.0,
                )?);
            }
            let chips = chunk.iter().map(|p| p.chips.clone()).collect();
            let refused = chunk
                .iter()
                .map(|p| p.fell_back.then(|| FELL_BACK.to_string()))
                .collect();
            verdicts.extend(search.submit_except(chips, refused));
            props.extend(chunk);
        }
        let scores: Vec<Option<f64>> = verdicts
            .iter()
            .map(|v| v.as_ref().and_then(|v| v.throughput()))
            .collect();
        if unit <= 0.0 {
            unit = scores.iter().flatten().copied().fold(0.0, f64::max);
        }
        for (p, s) in props.iter().zip(&scores) {
            if let Some(s) = *s {
                if s > anchor.1 {
                    anchor = (p.chips.clone(), s);
                }
            }
        }
        if learn && !search.done() {
            let rollouts: Vec<Rollout> = props
                .into_iter()
                .zip(verdicts)
                .zip(scores)
                .filter(|((_, v), _)| v.is_some())
                .map(|((p, _), s)| as_rollout(p, reward(s, unit), value))
                .collect();
            update(net, &mut opt, &f, &rollouts, cfg)?;
        }
        // A policy that has stopped finding better placements: moves
        // around the best, which the next round's rollouts start from.
        stall.after_round(search, k)?;
        if stall.best().1 > anchor.1 {
            anchor = stall.best().clone();
        }
    }
    Ok(())
}

/// One update of pretraining, as the log records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainLog {
    pub update: usize,
    /// Samples (judged rollouts) so far.
    pub samples: usize,
    pub elapsed_s: f64,
    pub task: String,
    /// Mean and best reward (score over greedy's) of the update's rollouts.
    pub mean_reward: f64,
    pub best_reward: f64,
}

/// Pretraining on a set of problems (the training split): updates cycle
/// through the problems in a seeded shuffled order, each drawing
/// `cfg.rollouts` rollouts around greedy's partition, until `samples`
/// samples. GDP's batch objective: the expected reward over the graphs.
pub(crate) fn pretrain(
    net: &dyn Net,
    tasks: &[Task],
    cfg: &AgentConfig,
    samples: usize,
    seed: u64,
    on: &mut dyn FnMut(&TrainLog),
) -> Result<Vec<TrainLog>, PolicyError> {
    if tasks.is_empty() {
        return Err(PolicyError::Input("pretraining needs at least one problem".into()));
    }
    let feats = tasks
        .iter()
        .map(|t| features(net, &t.problem))
        .collect::<Result<Vec<_>, _>>()?;
    let mut solvers = Vec::with_capacity(tasks.len());
    for t in tasks {
        let s = Solver::new(&t.problem, Options::default())
            .map_err(|_| PolicyError::Input(format!("`{}` has no valid partition", t.name)))?;
        solvers.push(s);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut opt = optimizer(net, cfg)?;
    let style = cfg.style();
    let start = Instant::now();
    let mut order: Vec<usize> = Vec::new();
    let mut logs = Vec::new();
    let mut done = 0usize;
    while done < samples {
        if order.is_empty() {
            order = (0..tasks.len()).collect();
            order.shuffle(&mut rng);
        }
        let i = order.pop().unwrap_or(0);
        let (task, f) = (&tasks[i], &feats[i]);
        let (probs, value) = act(net, f)?;
        let k = cfg.rollouts.max(1).min(samples - done);
        let mut props = Vec::with_capacity(k);
        for j in 0..k {
            let p = rollout(j, &probs, style, &mut solvers[i], &mut rng, &task.fallback)
                .map_err(|_| PolicyError::Input(format!("`{}` has no valid partition", task.name)))?;
            if !p.fell_back {
                props.push(p);
            }
        }
        let chips: Vec<Vec<u32>> = props.iter().map(|p| p.chips.clone()).collect();
        let verdicts = task.judge.evaluate_all(&chips);
        done += k;
        let rewards: Vec<f32> = verdicts.iter().map(|v| reward(v.throughput(), task.greedy)).collect();
        let rollouts: Vec<Rollout> = props
            .into_iter()
            .zip(&rewards)
            .map(|(p, &r)| as_rollout(p, r, value))
            .collect();
        update(net, &mut opt, f, &rollouts, cfg)?;
        let n = rewards.len().max(1) as f64;
        let log = TrainLog {
            update: logs.len() + 1,
            samples: done,
            elapsed_s: start.elapsed().as_secs_f64(),
            task: task.name.clone(),
            mean_reward: rewards.iter().map(|&r| r as f64).sum::<f64>() / n,
            best_reward: rewards.iter().map(|&r| r as f64).fold(0.0, f64::max),
        };
        on(&log);
        logs.push(log);
    }
    Ok(logs)
}

/// Version of the placers' checkpoint layout; loading refuses any other.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct Sidecar {
    format_version: u32,
    /// Which placer's weights (`gdp`, `mars`): another's are refused.
    placer: String,
    feature_schema: u32,
    config: serde_json::Value,
    tensors: BTreeMap<String, Vec<usize>>,
    /// FNV-1a 64 of the weights file, in hex.
    checksum: String,
    /// How the weights were trained (command, samples, seconds).
    #[serde(default)]
    training: serde_json::Value,
}

fn io(path: &Path, e: impl std::fmt::Display) -> PolicyError {
    PolicyError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn corrupt(path: &Path, message: impl Into<String>) -> PolicyError {
    PolicyError::Corrupt {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Saves `vars` (all of a network's or a part) as `STEM.safetensors` and
/// `STEM.json` with the network's configuration; temporaries renamed into
/// place, weights first (the checksum catches a crash between the renames).
pub(crate) fn save(
    placer: &str,
    config: &impl Serialize,
    vars: &[(String, Var)],
    stem: &Path,
    training: serde_json::Value,
) -> Result<(), PolicyError> {
    let (weights, sidecar) = paths(stem);
    let tmp_weights = weights.with_extension("safetensors.tmp");
    let tmp_sidecar = sidecar.with_extension("json.tmp");
    let tensors: HashMap<String, Tensor> = vars.iter().map(|(k, v)| (k.clone(), v.as_tensor().clone())).collect();
    candle_core::safetensors::save(&tensors, &tmp_weights).map_err(|e| io(&tmp_weights, e))?;
    let bytes = std::fs::read(&tmp_weights).map_err(|e| io(&tmp_weights, e))?;
    let meta = Sidecar {
        format_version: FORMAT_VERSION,
        placer: placer.to_string(),
        feature_schema: FEATURE_SCHEMA,
        config: serde_json::to_value(config).map_err(|e| io(&sidecar, e))?,
        tensors: vars.iter().map(|(k, v)| (k.clone(), v.dims().to_vec())).collect(),
        checksum: fnv1a(&bytes),
        training,
    };
    let json = serde_json::to_string_pretty(&meta).map_err(|e| io(&tmp_sidecar, e))?;
    std::fs::write(&tmp_sidecar, json).map_err(|e| io(&tmp_sidecar, e))?;
    std::fs::rename(&tmp_weights, &weights).map_err(|e| io(&weights, e))?;
    std::fs::rename(&tmp_sidecar, &sidecar).map_err(|e| io(&sidecar, e))?;
    Ok(())
}

/// A checkpoint read and verified: the configuration it was saved with and
/// its tensors by name.
pub(crate) struct Stored<C> {
    pub config: C,
    tensors: HashMap<String, Tensor>,
    weights: std::path::PathBuf,
}

/// Reads the checkpoint at `stem`: refuses another placer's, another
/// layout or feature schema, a weights file whose checksum or tensor list
/// differs from the sidecar's, and non-finite weights.
pub(crate) fn load<C: DeserializeOwned>(placer: &str, stem: &Path) -> Result<Stored<C>, PolicyError> {
    let (weights, sidecar) = paths(stem);
    let text = std::fs::read_to_string(&sidecar).map_err(|e| io(&sidecar, e))?;
    let meta: Sidecar =
        serde_json::from_str(&text).map_err(|e| corrupt(&sidecar, format!("not a placer checkpoint sidecar: {e}")))?;
    if meta.format_version != FORMAT_VERSION {
        return Err(PolicyError::Mismatch(format!(
            "checkpoint format version {} but this build reads version {FORMAT_VERSION}",
            meta.format_version
        )));
    }
    if meta.placer != placer {
        return Err(PolicyError::Mismatch(format!(
            "`{}` holds `{}` weights, not `{placer}`'s",
            sidecar.display(),
            meta.placer
        )));
    }
    if meta.feature_schema != FEATURE_SCHEMA {
        return Err(PolicyError::Mismatch(format!(
            "checkpoint was trained on feature schema {} but this build computes schema {FEATURE_SCHEMA}",
            meta.feature_schema
        )));
    }
    let config: C = serde_json::from_value(meta.config)
        .map_err(|e| corrupt(&sidecar, format!("its configuration cannot be read: {e}")))?;
    let bytes = std::fs::read(&weights).map_err(|e| io(&weights, e))?;
    let sum = fnv1a(&bytes);
    if sum != meta.checksum {
        return Err(corrupt(
            &weights,
            format!(
                "checksum {sum} differs from {} recorded in the sidecar (truncated, altered, or from another save)",
                meta.checksum
            ),
        ));
    }
    let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
        .map_err(|e| corrupt(&weights, format!("not a valid safetensors file: {e}")))?;
    let shapes: BTreeMap<String, Vec<usize>> = tensors.iter().map(|(k, t)| (k.clone(), t.dims().to_vec())).collect();
    if shapes != meta.tensors {
        return Err(corrupt(
            &sidecar,
            "the tensors it lists differ from those in the weights file",
        ));
    }
    for (name, t) in &tensors {
        let values = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
        if !values.iter().all(|v| v.is_finite()) {
            return Err(corrupt(
                &weights,
                format!("tensor `{name}` holds NaN or infinite weights (saved from a diverged training run?)"),
            ));
        }
    }
    Ok(Stored {
        config,
        tensors,
        weights,
    })
}

impl<C> Stored<C> {
    /// Sets `vars` from the stored tensors: every stored tensor must be one
    /// of `vars` with its shape, and every variable `wanted` names must be
    /// stored.
    pub fn restore(&self, vars: &[(String, Var)], wanted: impl Fn(&str) -> bool) -> Result<(), PolicyError> {
        if let Some(extra) = self.tensors.keys().find(|k| !vars.iter().any(|(n, _)| n == *k)) {
            return Err(PolicyError::Mismatch(format!(
                "checkpoint `{}` has tensor `{extra}`, which this network does not",
                self.weights.display()
            )));
        }
        for (name, var) in vars {
            match self.tensors.get(name) {
                Some(t) if t.dims() == var.dims() => var.set(&t.to_dtype(var.dtype())?)?,
                Some(t) => {
                    return Err(PolicyError::Mismatch(format!(
                        "tensor `{name}` has shape {:?} in the checkpoint but the network needs {:?}",
                        t.dims(),
                        var.dims()
                    )))
                }
                None if wanted(name) => {
                    return Err(PolicyError::Mismatch(format!("checkpoint lacks tensor `{name}`")));
                }
                None => {}
            }
        }
        Ok(())
    }
}
