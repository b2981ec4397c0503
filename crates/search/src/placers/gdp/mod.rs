//! `gdp`: Generalized Device Placement (Zhou et al., 2019) as a strategy.
//! A GraphSAGE encoder and a Transformer-XL placer over segments of the
//! node sequence ([`net`]), trained with PPO on many graphs at once (the
//! training split, [`train`]) and fine-tuned per graph within the search's
//! budget (the strategy). `gdp` starts from the shipped checkpoint
//! (`models/gdp.*`), `gdp-scratch` from fresh weights seeded by the run.

pub mod net;

use crate::placers::agent::{self, AgentConfig, Net, TrainLog};
use crate::policy::PolicyError;
use crate::pretrain::Task;
use crate::strategy::{Search, Strategy};
use mcm_solver::Infeasible;
pub use net::{GdpConfig, GdpNet};
use std::path::{Path, PathBuf};

/// The checkpoint `gdp` starts from (`models/gdp.*`).
pub const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/gdp");

/// The placer's name in checkpoints.
const PLACER: &str = "gdp";

pub struct Gdp {
    name: String,
    /// The checkpoint to fine-tune; `None`: fresh weights (from scratch).
    stem: Option<PathBuf>,
    config: GdpConfig,
    agent: AgentConfig,
    error: Option<String>,
}

/// A GDP network from a checkpoint.
pub fn load(stem: &Path) -> Result<GdpNet, PolicyError> {
    let stored = agent::load::<GdpConfig>(PLACER, stem)?;
    let net = GdpNet::new(&stored.config)?;
    stored.restore(&net.vars(), |_| true)?;
    Ok(net)
}

/// Saves a network with how it was trained.
pub fn save(net: &GdpNet, stem: &Path, training: serde_json::Value) -> Result<(), PolicyError> {
    agent::save(PLACER, net.config(), &net.vars(), stem, training)
}

impl Gdp {
    /// `gdp` (the checkpoint at `stem`, the shipped one when `None`) or,
    /// with `scratch`, `gdp-scratch`. The checkpoint is read now, so a
    /// missing or damaged one is an error before any search.
    pub fn new(name: &str, stem: Option<PathBuf>, scratch: bool) -> Result<Gdp, PolicyError> {
        let (stem, config) = if scratch {
            (None, GdpConfig::default())
        } else {
            let stem = stem.unwrap_or_else(|| PathBuf::from(SHIPPED));
            let config = load(&stem).map_err(|e| shipped_hint(e, &stem))?.config().clone();
            (Some(stem), config)
        };
        Ok(Gdp {
            name: name.to_string(),
            stem,
            config,
            agent: AgentConfig::default(),
            error: None,
        })
    }

    /// The network a run starts from: the checkpoint (read afresh, so runs
    /// are independent) or fresh weights drawn from the run's seed.
    fn network(&self, seed: u64) -> Result<GdpNet, PolicyError> {
        match &self.stem {
            Some(stem) => load(stem),
            None => GdpNet::new(&GdpConfig {
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
        "the shipped GDP checkpoint; `mcmpart train --placer gdp` makes one, `gdp-scratch` needs none",
    )
}

impl Strategy for Gdp {
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

/// How GDP is pretrained (`mcmpart train --placer gdp`).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainOptions {
    pub config: GdpConfig,
    pub agent: AgentConfig,
    pub samples: usize,
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            config: GdpConfig::default(),
            agent: AgentConfig::default(),
            samples: 4000,
            seed: 0,
        }
    }
}

/// Pretrains a fresh network on `tasks` (GDP's batch objective: the
/// expected reward over all the graphs) and saves it at `stem`.
pub fn train(
    tasks: &[Task],
    opts: &TrainOptions,
    stem: &Path,
    command: &str,
    on: &mut dyn FnMut(&TrainLog),
) -> Result<Vec<TrainLog>, PolicyError> {
    let net = GdpNet::new(&GdpConfig {
        seed: opts.seed,
        ..opts.config.clone()
    })?;
    let logs = agent::pretrain(&net, tasks, &opts.agent, opts.samples, opts.seed, on)?;
    let training = serde_json::json!({
        "command": command,
        "problems": tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
        "samples": opts.samples,
        "seed": opts.seed,
        "agent": opts.agent,
        "elapsed_s": logs.last().map_or(0.0, |l| l.elapsed_s),
    });
    save(&net, stem, training)?;
    Ok(logs)
}

#[cfg(test)]
mod tests;
