//! `mcmpart train`: pretrain the policy on a split of the graph folder,
//! each graph under each given problem file's package and rules.

use super::args::{counting, non_negative, positive};
use super::search::progress_bar;
use super::Output;
use crate::cost::{Judge, JudgeOptions};
use crate::graph::load_graph_file;
use crate::graph::manifest;
use crate::lang::compile_file_with_graph;
use crate::policy::ppo::PpoConfig;
use crate::policy::rollout::{Draw, Mode};
use crate::policy::train::{self, ImitateLog, Score, Task, TrainConfig, TrainReport, UpdateLog};
use crate::policy::PolicyConfig;
use crate::strategy::Budget;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    #[arg(long)]
    pub out: PathBuf,
    /// Updates between checkpoints (each validated).
    #[arg(long, default_value_t = 25, value_parser = counting)]
    pub checkpoint_every: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Leave out graphs with more nodes than this (training time grows with size).
    #[arg(long)]
    pub max_nodes: Option<u64>,
    /// How rollouts meet the solver.
    #[arg(long, value_enum, default_value_t = Mode::Fix)]
    pub mode: Mode,
    /// PPO rollouts make at most this many moves from greedy's partition
    /// (as `solve --strategy rl` deploys); 0 (the default) draws every
    /// node, as in the paper.
    #[arg(long, default_value_t = 0, value_parser = super::args::moves)]
    pub moves: usize,
    /// Rollouts per update.
    #[arg(long, default_value_t = 20, value_parser = counting)]
    pub rollouts: usize,
    #[arg(long, default_value_t = 4, value_parser = counting)]
    pub minibatches: usize,
    #[arg(long, default_value_t = 10, value_parser = counting)]
    pub epochs: usize,
    #[arg(long, default_value_t = 3e-4, value_parser = positive)]
    pub lr: f64,
    /// Entropy bonus. When most rollouts earn nothing, the bonus alone moves
    /// the policy, towards uniform: 0 keeps a pretrained (`--init`) policy's shape.
    #[arg(long, default_value_t = 0.01, value_parser = non_negative)]
    pub entropy: f64,
    /// GraphSAGE layers.
    #[arg(long, default_value_t = 8)]
    pub layers: usize,
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
            init: self.init.as_deref().map(super::search::strip_checkpoint_ext),
        }
    }
}

/// Each graph of the split under each package file; graphs that cannot be
/// used are skipped with a warning.
fn tasks(out: &Output, args: &TrainArgs, split: &str) -> Result<Vec<Task>, i32> {
    let entries = match manifest::entries(&args.graphs, Some(split)) {
        Ok(e) => e,
        Err((m, help)) => {
            out.error(&m, help.as_deref());
            return Err(1);
        }
    };
    let mut tasks = Vec::new();
    for e in entries {
        if !e.fits(args.max_nodes) {
            continue;
        }
        let graph = match load_graph_file(&e.path) {
            Ok(g) => Arc::new(g),
            Err(err) => {
                // A broken data set is said before training, not trained around.
                out.error(
                    &format!("cannot load the graph `{}`: {}", e.name, err.message),
                    Some(&format!(
                        "mend `{}` or take it out of the manifest of `{}`",
                        e.path.display(),
                        args.graphs.display()
                    )),
                );
                return Err(1);
            }
        };
        for pkg in &args.packages {
            let compiled = compile_file_with_graph(pkg, graph.clone());
            if !compiled.ok() {
                // A package file that does not compile on its own is the user's to fix.
                if !crate::lang::compile_file(pkg).ok() {
                    out.diagnostics(&compiled, &compiled.diags);
                    return Err(1);
                }
                let why = compiled
                    .diags
                    .iter()
                    .find(|d| !d.warning)
                    .map_or(String::new(), |d| format!(": {}", d.message));
                eprintln!(
                    "warning: skipping `{}`: `{}` does not apply to it{why}",
                    e.name,
                    pkg.display()
                );
                continue;
            }
            let Ok(p) = compiled.problem(None) else {
                out.error(&format!("`{}` must declare exactly one problem", pkg.display()), None);
                return Err(1);
            };
            let label = if args.packages.len() > 1 {
                format!(
                    "{}@{}",
                    e.name,
                    pkg.file_stem().and_then(|s| s.to_str()).unwrap_or("package")
                )
            } else {
                e.name.clone()
            };
            let judge = match Judge::new(p, &JudgeOptions::default()) {
                Ok(j) => j,
                Err(err) => {
                    out.error(&err.message, err.help.as_deref());
                    return Err(1);
                }
            };
            match Task::new(&label, p.clone(), judge) {
                Ok(t) => tasks.push(t),
                Err(why) => eprintln!("warning: skipping `{label}`: {why}"),
            }
        }
    }
    Ok(tasks)
}

/// What of an earlier training run `dir` holds (its record or its
/// checkpoints), if anything: a new run there would overwrite some of its
/// files and leave the others mixed in with its own.
fn earlier_run(dir: &Path) -> Option<String> {
    if dir.join("train.json").exists() {
        return Some("train.json".into());
    }
    let entries = std::fs::read_dir(dir).ok()?;
    let ckpts = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("ckpt-") || name.starts_with("best.")
        })
        .count();
    (ckpts > 0).then(|| format!("{ckpts} checkpoint file(s)"))
}

pub fn run(out: &Output, args: &TrainArgs) -> i32 {
    if args.samples == 0 && args.imitate == 0 {
        out.error("nothing to do: --samples and --imitate are both 0", None);
        return 2;
    }
    if args.out.exists() && !args.out.is_dir() {
        out.error(&format!("--out `{}` is a file, not a folder", args.out.display()), None);
        return 1;
    }
    if let Some(what) = earlier_run(&args.out) {
        out.error(
            &format!("`{}` holds an earlier training run ({what})", args.out.display()),
            Some("name a new folder with --out (or remove the old one): a run there would overwrite it"),
        );
        return 1;
    }
    let mut train_tasks = match tasks(out, args, &args.split) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if args.imitate_best && args.imitate > 0 {
        if !out.json {
            eprintln!(
                "demonstrations: anneal, {} samples on each of {} graphs",
                args.demo_samples,
                train_tasks.len()
            );
        }
        let found: Vec<(usize, f64)> = train_tasks
            .par_iter_mut()
            .map(|t| t.demonstrate(args.demo_samples, args.seed))
            .collect();
        if !out.json {
            for (t, (moved, gain)) in train_tasks.iter().zip(&found) {
                eprintln!(
                    "  {}: {gain:.3}x over greedy, {moved} of {} nodes moved",
                    t.name,
                    t.fallback.len()
                );
            }
        }
    }
    if train_tasks.is_empty() {
        out.error(&format!("no usable graph in the split `{}`", args.split), None);
        return 1;
    }
    let val_tasks = if args.val_split == "none" {
        Vec::new()
    } else {
        match tasks(out, args, &args.val_split) {
            Ok(t) => t,
            Err(code) => return code,
        }
    };
    let cfg = args.config();
    if !out.json {
        eprintln!(
            "training on {} problems (validation: {}), {} samples, {} rollouts per update",
            train_tasks.len(),
            val_tasks.len(),
            cfg.samples,
            cfg.ppo.rollouts
        );
    }
    let bar = progress_bar(out, Budget::Samples(cfg.samples));
    // The logs grow as training goes, so a run cut short keeps them.
    let (log_path, val_path) = (args.out.join("log.csv"), args.out.join("validation.csv"));
    let mut write_error: Option<String> = None;
    let mut scored = false;
    let imitate_path = args.out.join("imitate.csv");
    let mut imitate_error: Option<String> = None;
    let on_imitate = |log: &ImitateLog| {
        let line = format!(
            "{},{},{:.6},{:.4},{:.3}\n",
            log.step, log.task, log.loss, log.accuracy, log.elapsed_s
        );
        if let Err(e) = append(
            &imitate_path,
            "step,graph,loss,accuracy,elapsed_s\n",
            &line,
            log.step == 1,
        ) {
            imitate_error.get_or_insert(format!("cannot write `{}`: {e}", imitate_path.display()));
        }
        if !out.json && (log.step.is_multiple_of(50) || log.step == cfg.imitate) {
            eprintln!(
                "imitation step {}: loss {:.3}, accuracy {:.3} on {}",
                log.step, log.loss, log.accuracy, log.task
            );
        }
    };
    let result = train::train(&train_tasks, &val_tasks, &cfg, &args.out, on_imitate, |log, score| {
        let fresh = log.update == 1;
        if let Err(e) = append(&log_path, LOG_HEADER, &log_line(log), fresh) {
            write_error.get_or_insert(format!("cannot write `{}`: {e}", log_path.display()));
        }
        if let Some(s) = score {
            if let Err(e) = append(&val_path, VALIDATION_HEADER, &score_line(s), !scored) {
                write_error.get_or_insert(format!("cannot write `{}`: {e}", val_path.display()));
            }
            scored = true;
        }
        if bar.is_none() && !out.json && (log.update % 10 == 0 || score.is_some()) {
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
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            out.error(&format!("training failed: {e}"), None);
            return 1;
        }
    };
    if let Some(e) = write_error.or(imitate_error) {
        out.error(&e, None);
        return 1;
    }
    if let Err(e) = write_run(&args.out, args, &cfg, &report) {
        out.error(&e, None);
        return 1;
    }
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
    0
}

const LOG_HEADER: &str =
    "update,samples,graph,mean_reward,best_reward,valid,policy_loss,value_loss,entropy,approx_kl,elapsed_s\n";
const VALIDATION_HEADER: &str = "update,samples,checkpoint,zero_shot,fine_tuned\n";

fn log_line(u: &UpdateLog) -> String {
    format!(
        "{},{},{},{:.6},{:.6},{:.3},{:.6},{:.6},{:.6},{:.6},{:.3}\n",
        u.update,
        u.samples,
        u.task,
        u.mean_reward,
        u.best_reward,
        u.valid,
        u.policy_loss,
        u.value_loss,
        u.entropy,
        u.approx_kl,
        u.elapsed_s
    )
}

fn score_line(s: &Score) -> String {
    format!(
        "{},{},{},{:.6},{:.6}\n",
        s.update,
        s.samples,
        s.stem.display(),
        s.zero_shot,
        s.fine_tuned
    )
}

/// Appends to a file, created with `header` when `fresh`.
fn append(path: &Path, header: &str, line: &str, fresh: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(!fresh)
        .write(true)
        .truncate(fresh)
        .open(path)?;
    if fresh {
        f.write_all(header.as_bytes())?;
    }
    f.write_all(line.as_bytes())
}

fn write_run(dir: &Path, args: &TrainArgs, cfg: &TrainConfig, r: &TrainReport) -> Result<(), String> {
    let w = |name: &str, text: String| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("cannot write `{}`: {e}", dir.join(name).display()))
    };
    // Complete now (the imitated policy's score, update 0, is not reported per update).
    w(
        "validation.csv",
        std::iter::once(VALIDATION_HEADER.to_string())
            .chain(r.scores.iter().map(score_line))
            .collect(),
    )?;
    let command: Vec<String> = std::env::args().collect();
    let summary = serde_json::json!({
        "command": command.join(" "),
        "config": cfg,
        "graphs": args.graphs.display().to_string(),
        "split": args.split,
        "val_split": args.val_split,
        "packages": args.packages.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "elapsed_s": r.elapsed_s,
        "best": r.best,
        "scores": r.scores,
    });
    w("train.json", serde_json::to_string_pretty(&summary).unwrap_or_default())?;
    w("curve.svg", curve(r)?)
}

/// The training curve: mean reward per update (and its running mean) and
/// each checkpoint's validation scores, against samples.
fn curve(r: &TrainReport) -> Result<String, String> {
    use plotters::prelude::*;
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    let pts: Vec<(f64, f64)> = r.updates.iter().map(|u| (u.samples as f64, u.mean_reward)).collect();
    let window = 20;
    let smooth: Vec<(f64, f64)> = (0..pts.len())
        .map(|i| {
            let lo = i.saturating_sub(window - 1);
            let m = pts[lo..=i].iter().map(|p| p.1).sum::<f64>() / (i + 1 - lo) as f64;
            (pts[i].0, m)
        })
        .collect();
    let zero: Vec<(f64, f64)> = r.scores.iter().map(|s| (s.samples as f64, s.zero_shot)).collect();
    let tuned: Vec<(f64, f64)> = r.scores.iter().map(|s| (s.samples as f64, s.fine_tuned)).collect();
    let x_max = pts.last().map_or(1.0, |p| p.0).max(1.0);
    let y_max = pts
        .iter()
        .chain(&zero)
        .chain(&tuned)
        .map(|p| p.1)
        .fold(1.0f64, f64::max)
        * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("training: reward (throughput over greedy)", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("samples")
            .y_desc("reward")
            .draw()
            .map_err(e)?;
        let grey = RGBColor(0xbb, 0xbb, 0xbb);
        chart
            .draw_series(LineSeries::new(pts, grey))
            .map_err(e)?
            .label("mean reward per update")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], grey));
        let blue = RGBColor(0x1f, 0x77, 0xb4);
        chart
            .draw_series(LineSeries::new(smooth, blue.stroke_width(2)))
            .map_err(e)?
            .label(format!("running mean of {window}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], blue));
        let orange = RGBColor(0xff, 0x7f, 0x0e);
        chart
            .draw_series(LineSeries::new(zero.clone(), orange).point_size(4))
            .map_err(e)?
            .label("validation, zero-shot")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], orange));
        let green = RGBColor(0x2c, 0xa0, 0x2c);
        chart
            .draw_series(LineSeries::new(tuned.clone(), green).point_size(4))
            .map_err(e)?
            .label("validation, fine-tuned")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], green));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}
