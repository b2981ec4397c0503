//! `mcmpart train`: the flags, and what is printed as training goes; the
//! training run itself is [`crate::experiment::train`].

use super::args::{counting, non_negative, positive};
use super::output::{progress_bar, Output};
use super::strategy_args::strip_checkpoint_ext;
use crate::error::{Result, Status};
use crate::experiment::train::{self, Config, Event};
use crate::policy::ppo::PpoConfig;
use crate::policy::rollout::{Correction, Draw};
use crate::policy::PolicyConfig;
use crate::pretrain::TrainConfig;
use crate::strategy::Budget;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct TrainArgs {
    /// The graph folder (with its manifest.json).
    #[arg(long, default_value = "data/graphs")]
    pub graphs: PathBuf,
    /// The split to train on.
    #[arg(long, default_value = "train")]
    pub split: String,
    /// The split that scores checkpoints; `none` skips validation.
    #[arg(long, default_value = "validation")]
    pub val_split: String,
    /// A problem file whose package, rules and objective each graph is
    /// placed under (repeat for several packages).
    #[arg(long = "package", required = true)]
    pub packages: Vec<PathBuf>,
    /// Samples (evaluated rollouts) to train for.
    #[arg(long, default_value_t = 20_000)]
    pub samples: usize,
    /// The run folder: checkpoints, logs, the curve.
    #[arg(short, long)]
    pub out: PathBuf,
    /// Updates between checkpoints (each validated).
    #[arg(long, default_value_t = 25, value_parser = counting)]
    pub checkpoint_every: usize,
    /// Seed of every random choice (weights, rollouts, the order of graphs):
    /// the same seed gives the same run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Leave out graphs with more nodes than this (training time grows with
    /// size); every graph of the split when not given.
    #[arg(long)]
    pub max_nodes: Option<u64>,
    /// How rollouts meet the solver.
    #[arg(long, value_enum, default_value_t = Correction::Fix)]
    pub mode: Correction,
    /// PPO rollouts make at most this many moves from greedy's partition
    /// (as `solve --strategy rl` deploys); 0 (the default) draws every
    /// node, as in the paper.
    #[arg(long, default_value_t = 0, value_parser = super::args::moves)]
    pub moves: usize,
    /// Train through `rl`'s own rounds, as `solve --strategy rl`
    /// fine-tunes: each visit to a graph is an `rl` run of N samples from
    /// greedy's partition (3 moves unless --moves says otherwise, carrying,
    /// one PPO step per round of --rollouts; --epochs, --minibatches and
    /// --entropy do not apply), the policy carried to the next visit.
    /// 0 (the default): PPO on rollouts around greedy's partition.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub episode: usize,
    /// Rollouts per update.
    #[arg(long, default_value_t = 20, value_parser = counting)]
    pub rollouts: usize,
    /// Minibatches per PPO epoch, each an optimiser step.
    #[arg(long, default_value_t = 4, value_parser = counting)]
    pub minibatches: usize,
    /// PPO epochs over each update's rollouts.
    #[arg(long, default_value_t = 10, value_parser = counting)]
    pub epochs: usize,
    /// AdamW's learning rate for the PPO updates.
    #[arg(long, default_value_t = 3e-4, value_parser = positive)]
    pub lr: f64,
    /// Entropy bonus. When most rollouts earn nothing, the bonus alone moves
    /// the policy, towards uniform: 0 keeps a pretrained (`--init`) policy's shape.
    #[arg(long, default_value_t = 0.01, value_parser = non_negative)]
    pub entropy: f64,
    /// GraphSAGE layers.
    #[arg(long, default_value_t = 8)]
    pub layers: usize,
    /// Width of the network's hidden layers.
    #[arg(long, default_value_t = 128, value_parser = counting)]
    pub hidden: usize,
    /// Refinement iterations.
    #[arg(long, default_value_t = 3, value_parser = counting)]
    pub iterations: usize,
    /// Rollouts per validation graph and round.
    #[arg(long, default_value_t = 20, value_parser = counting)]
    pub val_samples: usize,
    /// Fine-tuning updates per validation graph.
    #[arg(long, default_value_t = 2)]
    pub val_updates: usize,
    /// Imitation steps before PPO: each teaches one graph greedy's partition,
    /// the one the policy refines (0: PPO from random weights).
    #[arg(long, default_value_t = 0)]
    pub imitate: usize,
    /// Learning rate of the imitation steps.
    #[arg(long, default_value_t = 1e-3, value_parser = positive)]
    pub imitate_lr: f64,
    /// Imitate, instead, the best partition a short anneal finds from
    /// greedy's on each training graph (a refinement of the partition the
    /// policy is given).
    #[arg(long)]
    pub imitate_best: bool,
    /// Samples of each demonstration's anneal (with `--imitate-best`).
    #[arg(long, default_value_t = 200, value_parser = counting)]
    pub demo_samples: usize,
    /// Start from this checkpoint (stem or file) instead of fresh weights;
    /// its network shape is kept (`--layers`, `--hidden`, `--iterations` are ignored).
    #[arg(long, value_name = "PATH")]
    pub init: Option<PathBuf>,
    /// Pretrain a learned placer instead of `rl`'s policy: `placeto` (on
    /// the split's graphs for --samples), `gdp` (PPO on the split's graphs
    /// for --samples) or `mars` (its encoder by Deep Graph Infomax for
    /// --dgi-steps); the checkpoint is `OUT/NAME.safetensors` and
    /// `OUT/NAME.json`.
    #[arg(long, value_name = "NAME")]
    pub placer: Option<String>,
    /// Deep Graph Infomax steps, a graph each (`--placer mars`).
    #[arg(long, default_value_t = 1000, value_parser = counting)]
    pub dgi_steps: usize,
}

impl TrainArgs {
    fn config(&self) -> TrainConfig {
        TrainConfig {
            policy: PolicyConfig {
                layers: self.layers,
                hidden: self.hidden,
                iterations: self.iterations,
                ..PolicyConfig::default()
            },
            ppo: PpoConfig {
                rollouts: self.rollouts,
                minibatches: self.minibatches,
                epochs: self.epochs,
                lr: self.lr,
                entropy: self.entropy,
                ..PpoConfig::default()
            },
            mode: self.mode,
            draw: match self.moves {
                0 => Draw::Dense,
                k => Draw::Moves(k),
            },
            samples: self.samples,
            checkpoint_every: self.checkpoint_every,
            seed: self.seed,
            val_samples: self.val_samples,
            val_updates: self.val_updates,
            imitate: self.imitate,
            imitate_lr: self.imitate_lr,
            imitate_best: self.imitate_best,
            demo_samples: self.demo_samples,
            init: self.init.as_deref().map(strip_checkpoint_ext),
            episode: self.episode,
        }
    }
}

pub fn run(out: &Output, args: &TrainArgs) -> Result {
    if let Some(placer) = &args.placer {
        return match placer.as_str() {
            "gdp" => super::train_gdp_mars::gdp(out, args),
            "mars" => super::train_gdp_mars::mars(out, args),
            "placeto" => run_placer(out, args, "placeto"),
            other => Err(crate::error::Error::usage(format!(
                "--placer `{other}` is not a placer that pretrains ({})",
                crate::experiment::train_placer::PLACERS.join(", ")
            ))
            .with_help("hdp trains on each graph within `solve`'s budget")),
        };
    }
    let cfg = args.config();
    let config = Config {
        graphs: args.graphs.clone(),
        split: args.split.clone(),
        val_split: args.val_split.clone(),
        packages: args.packages.clone(),
        out: args.out.clone(),
        max_nodes: args.max_nodes,
        train: cfg.clone(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let quiet = out.json;
    let mut bar = None;
    let report = train::run(&config, &mut |event| match event {
        Event::Warning(w) => eprintln!("{w}"),
        Event::Demonstrating { samples, graphs } if !quiet => {
            eprintln!("demonstrations: anneal, {samples} samples on each of {graphs} graphs")
        }
        Event::Demonstrated {
            task,
            gain,
            moved,
            nodes,
        } if !quiet => eprintln!("  {task}: {gain:.3}x over greedy, {moved} of {nodes} nodes moved"),
        Event::Starting { train, validation } => {
            if !quiet {
                eprint!("{}", starting(args, &train, &validation));
            }
            bar = progress_bar(out, Budget::Samples(cfg.samples));
        }
        Event::Imitated(log) if !quiet && (log.step.is_multiple_of(50) || log.step == cfg.imitate) => eprintln!(
            "imitation step {}: loss {:.3}, accuracy {:.3} on {}",
            log.step, log.loss, log.accuracy, log.task
        ),
        Event::Updated(log, score) => {
            if bar.is_none() && !quiet && (log.update % 10 == 0 || score.is_some()) {
                eprintln!(
                    "update {} ({} samples, {:.0} s): reward {:.3} on {}",
                    log.update, log.samples, log.elapsed_s, log.mean_reward, log.task
                );
            }
            if let Some(b) = &bar {
                b.set_position(log.samples as u64);
                b.set_message(format!("reward {:.3} on {}", log.mean_reward, log.task));
                if let Some(s) = score {
                    b.println(format!(
                        "checkpoint {}: zero-shot {:.3}, fine-tuned {:.3}",
                        s.update, s.zero_shot, s.fine_tuned
                    ));
                }
            }
        }
        _ => {}
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report?;
    let best = report.best.as_ref();
    if out.json {
        out.print_json(&serde_json::json!({
            "ok": true,
            "out": args.out.display().to_string(),
            "updates": report.updates.len(),
            "samples": report.updates.last().map(|u| u.samples),
            "elapsed_s": report.elapsed_s,
            "best": best,
            "scores": report.scores,
        }));
    } else {
        println!(
            "{} updates, {} samples in {:.1} s",
            report.updates.len(),
            report.updates.last().map_or(0, |u| u.samples),
            report.elapsed_s
        );
        if let Some(b) = best {
            println!(
                "best checkpoint: update {} (zero-shot {:.3}, fine-tuned {:.3}), copied to {}",
                b.update,
                b.zero_shot,
                b.fine_tuned,
                args.out.join("best").display()
            );
        }
    }
    Ok(Status::Success)
}

/// `train --placer NAME`: the placer's own training, one line per ten episodes.
fn run_placer(out: &Output, args: &TrainArgs, name: &str) -> Result {
    let config = Config {
        graphs: args.graphs.clone(),
        split: args.split.clone(),
        val_split: "none".into(),
        packages: args.packages.clone(),
        out: args.out.clone(),
        max_nodes: args.max_nodes,
        train: args.config(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let quiet = out.json;
    let report = crate::experiment::train_placer::run(
        &config,
        name,
        &mut |event| {
            if let Event::Warning(w) = event {
                eprintln!("{w}")
            }
        },
        &mut |log| {
            if !quiet && log.episode % 10 == 0 {
                eprintln!(
                    "episode {} ({} samples, {:.0} s): reward {:.3} on {}, best {:.3}x greedy",
                    log.episode, log.samples, log.elapsed_s, log.reward, log.task, log.gain
                );
            }
        },
    )?;
    if out.json {
        out.print_json(&serde_json::json!({ "ok": true, "report": report }));
    } else {
        println!(
            "{} episodes, {} samples in {:.1} s; checkpoint {}",
            report.episodes, report.samples, report.seconds, report.checkpoint
        );
    }
    Ok(Status::Success)
}

/// What training is about to do, said plainly: the graphs (the split of the
/// data set, not the graph of the `--package` file), the packages, the
/// validation graphs and the budget.
fn starting(args: &TrainArgs, train: &[&str], validation: &[&str]) -> String {
    let graphs = |n: usize| if n == 1 { "graph" } else { "graphs" };
    let limit = args
        .max_nodes
        .map_or(String::new(), |m| format!(" with at most {m} nodes"));
    let packages: Vec<String> = args.packages.iter().map(|p| p.display().to_string()).collect();
    let under = match packages.as_slice() {
        [one] => format!("each under the package and rules of {one}"),
        many => format!("each graph under each of {}", many.join(", ")),
    };
    let val = if validation.is_empty() {
        "no validation\n".to_string()
    } else {
        format!(
            "validating on {} {} of the `{}` split: {}\n",
            validation.len(),
            graphs(validation.len()),
            args.val_split,
            validation.join(", ")
        )
    };
    format!(
        "training on {} {} of the `{}` split of {}{limit}, {under}: {}\n{val}{} samples, {} rollouts per update\n",
        train.len(),
        if packages.len() > 1 {
            "problems"
        } else {
            graphs(train.len())
        },
        args.split,
        args.graphs.display(),
        train.join(", "),
        args.samples,
        args.rollouts
    )
}
