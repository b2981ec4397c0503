//! `mars`: Mars (Lan et al., ICPP 2021) as a strategy. A GCN encoder
//! pretrained by contrastive self-supervision on the training split's
//! graphs ([`dgi`], `mcmpart train --placer mars`; the shipped checkpoint
//! `models/mars.*` holds the encoder alone), then a segment-level
//! sequence-to-sequence placer ([`net`]) trained with PPO on the graph
//! within the search's budget, the encoder fine-tuned with it.
//! `mars-nopretrain` is the same agent with a fresh encoder (the paper's
//! ablation); both draw the placer's weights from the run's seed.

pub mod dgi;
pub mod net;

use crate::placers::agent::{self, AgentConfig, Net};
use crate::policy::{GraphFeatures, PolicyError};
use crate::pretrain::Task;
use crate::strategy::{Search, Strategy};
use mcm_solver::Infeasible;
pub use net::{is_encoder, MarsConfig, MarsNet};
use std::path::{Path, PathBuf};

/// The checkpoint `mars` takes its encoder from (`models/mars.*`).
pub const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mars");

/// The placer's name in checkpoints.
const PLACER: &str = "mars";

/// A network with the encoder of the checkpoint at `stem` and the rest
/// fresh, drawn from `seed`.
pub fn load(stem: &Path, seed: u64) -> Result<MarsNet, PolicyError> {
    let stored = agent::load::<MarsConfig>(PLACER, stem)?;
    let net = MarsNet::new(&MarsConfig {
        seed,
        ..stored.config.clone()
    })?;
    stored.restore(&net.vars(), is_encoder)?;
    Ok(net)
}

/// Saves a network's encoder with how it was trained.
pub fn save(net: &MarsNet, stem: &Path, training: serde_json::Value) -> Result<(), PolicyError> {
    let vars: Vec<_> = net.vars().into_iter().filter(|(k, _)| is_encoder(k)).collect();
    agent::save(PLACER, net.config(), &vars, stem, training)
}

pub struct Mars {
    name: String,
    /// The checkpoint of the pretrained encoder; `None`: a fresh one.
    stem: Option<PathBuf>,
    config: MarsConfig,
    agent: AgentConfig,
    error: Option<String>,
}

impl Mars {
    /// `mars` (the encoder of the checkpoint at `stem`, the shipped one when
    /// `None`) or, with `fresh_encoder`, `mars-nopretrain`. The checkpoint
    /// is read now, so a missing or damaged one is an error before any search.
    pub fn new(name: &str, stem: Option<PathBuf>, fresh_encoder: bool) -> Result<Mars, PolicyError> {
        let (stem, config) = if fresh_encoder {
            (None, MarsConfig::default())
        } else {
            let stem = stem.unwrap_or_else(|| PathBuf::from(SHIPPED));
            let config = load(&stem, 0).map_err(|e| shipped_hint(e, &stem))?.config().clone();
            (Some(stem), config)
        };
        Ok(Mars {
            name: name.to_string(),
            stem,
            config,
            agent: AgentConfig::default(),
            error: None,
        })
    }

    fn network(&self, seed: u64) -> Result<MarsNet, PolicyError> {
        match &self.stem {
            Some(stem) => load(stem, seed),
            None => MarsNet::new(&MarsConfig {
                seed,
                ..self.config.clone()
            }),
        }
    }
}

/// A hint on the shipped checkpoint's error: how to make or avoid one.
fn shipped_hint(e: PolicyError, stem: &Path) -> PolicyError {
    crate::policy::checkpoint::shipped_hint(
        e,
        stem,
        SHIPPED,
        "the shipped Mars encoder; `mcmpart train --placer mars` makes one, `mars-nopretrain` needs none",
    )
}

impl Strategy for Mars {
    fn name(&self) -> &str {
        &self.name
    }

    fn failure(&self) -> Option<String> {
        self.error.clone()
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        let net = self.network(search.seed());
        agent::run_learning(net, &self.agent, search, &mut self.error)
    }
}

/// How Mars's encoder is pretrained (`mcmpart train --placer mars`).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainOptions {
    pub config: MarsConfig,
    /// DGI steps, one graph each.
    pub steps: usize,
    pub lr: f64,
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            config: MarsConfig::default(),
            steps: 1000,
            lr: 1e-3,
            seed: 0,
        }
    }
}

/// Pretrains a fresh encoder by DGI on the graphs of `tasks` and saves it
/// at `stem`.
pub fn train(
    tasks: &[Task],
    opts: &TrainOptions,
    stem: &Path,
    command: &str,
    on: &mut dyn FnMut(&dgi::DgiLog),
) -> Result<Vec<dgi::DgiLog>, PolicyError> {
    let net = MarsNet::new(&MarsConfig {
        seed: opts.seed,
        ..opts.config.clone()
    })?;
    let graphs = tasks
        .iter()
        .map(|t| Ok((t.name.clone(), agent::features(&net, &t.problem)?)))
        .collect::<Result<Vec<(String, GraphFeatures)>, PolicyError>>()?;
    let logs = dgi::pretrain(&net, &graphs, opts.steps, opts.lr, opts.seed, on)?;
    let training = serde_json::json!({
        "command": command,
        "graphs": tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        "steps": opts.steps,
        "lr": opts.lr,
        "seed": opts.seed,
        "elapsed_s": logs.last().map_or(0.0, |l| l.elapsed_s),
    });
    save(&net, stem, training)?;
    Ok(logs)
}

#[cfg(test)]
mod tests;
