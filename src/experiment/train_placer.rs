//! `train --placer NAME`: pretraining one of the learned placers of the
//! literature on a split of the graph folder, each graph under each given
//! problem file, one function per placer that pretrains (HDP trains per
//! graph within a run's budget and has none).

use super::train::{tasks, Config, Event};
use crate::error::{Error, Kind, Result};
use crate::placers::placeto;

/// The placers `train --placer` knows.
pub const PLACERS: &[&str] = &["placeto", "gdp", "mars"];

/// What a placer's training run left.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlacerReport {
    pub placer: String,
    pub episodes: usize,
    pub samples: usize,
    pub seconds: f64,
    /// The checkpoint stem written.
    pub checkpoint: String,
    /// Per graph, its best partition's score over greedy's.
    pub gains: Vec<(String, f64)>,
}

/// Trains `placer` on `config.split` for `config.train.samples` samples from
/// `config.train.seed`; `progress` hears of every episode.
pub fn run(
    config: &Config,
    placer: &str,
    on: &mut dyn FnMut(Event),
    progress: &mut dyn FnMut(&placeto::train::EpisodeLog),
) -> Result<PlacerReport> {
    if config.train.samples == 0 {
        return Err(Error::usage("nothing to do: --samples is 0"));
    }
    match placer {
        "placeto" => train_placeto(config, on, progress),
        other => Err(Error::usage(format!("no placer `{other}` to train")).with_help(format!(
            "the placers that pretrain are {} (hdp trains on each graph within `solve`'s budget)",
            PLACERS.join(", ")
        ))),
    }
}

fn train_placeto(
    config: &Config,
    on: &mut dyn FnMut(Event),
    progress: &mut dyn FnMut(&placeto::train::EpisodeLog),
) -> Result<PlacerReport> {
    let tasks = tasks(config, &config.split, on)?;
    if tasks.is_empty() {
        return Err(Error::input(format!(
            "no graph of the `{}` split to train on",
            config.split
        )));
    }
    let settings = placeto::train::Settings {
        samples: config.train.samples,
        seed: config.train.seed,
        config: placeto::PlacetoConfig::default(),
    };
    let (_, report) = placeto::train::run(&tasks, &settings, &config.out, progress)
        .map_err(|e| Error::new(Kind::Search, format!("training failed: {e}")))?;
    Ok(PlacerReport {
        placer: "placeto".into(),
        episodes: report.episodes,
        samples: report.samples,
        seconds: report.seconds,
        checkpoint: config.out.join("placeto").display().to_string(),
        gains: report.gains,
    })
}
