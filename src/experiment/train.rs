//! `train` as library code: pretrain the policy on a split of the graph
//! folder, each graph under each given problem file's package and rules,
//! and keep the run in its folder: checkpoints, `log.csv`,
//! `validation.csv`, `imitate.csv`, `train.json` and the curve.

use crate::cost::{Judge, JudgeOptions};
use crate::error::{Error, Kind, Result};
use crate::graph::load_graph_file;
use crate::graph::manifest;
use crate::lang::compile_file_with_graph;
use crate::pretrain::{self, ImitateLog, Score, Task, TrainConfig, TrainReport, UpdateLog};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A training run: the graphs, the packages, the folder and the settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The graph folder (with its manifest.json).
    pub graphs: PathBuf,
    /// The split trained on.
    pub split: String,
    /// The split that scores checkpoints; `none` skips validation.
    pub val_split: String,
    /// Problem files whose package, rules and objective each graph is placed under.
    pub packages: Vec<PathBuf>,
    /// The run folder.
    pub out: PathBuf,
    /// Leave out graphs with more nodes than this.
    pub max_nodes: Option<u64>,
    pub train: TrainConfig,
    /// The command that asked for the run, as `train.json` records it.
    pub command: String,
}

/// What a training run says as it goes.
pub enum Event<'a> {
    /// A graph skipped, say: worth a line on stderr whatever the output mode.
    Warning(String),
    /// Demonstrations (`imitate_best`): a short anneal of `samples` on each of `graphs`.
    Demonstrating {
        samples: usize,
        graphs: usize,
    },
    /// One demonstration: its gain over greedy and the nodes it moved.
    Demonstrated {
        task: &'a str,
        gain: f64,
        moved: usize,
        nodes: usize,
    },
    /// Training starts on these problems (a graph's name, `@package` when
    /// there are several), validated on those.
    Starting {
        train: Vec<&'a str>,
        validation: Vec<&'a str>,
    },
    Imitated(&'a ImitateLog),
    /// A PPO update, with its checkpoint's scores when it made one.
    Updated(&'a UpdateLog, Option<&'a Score>),
}

/// Each graph of the split under each package file; graphs that cannot be
/// used are skipped with a warning.
pub(crate) fn tasks(config: &Config, split: &str, on: &mut dyn FnMut(Event)) -> Result<Vec<Task>> {
    let entries =
        manifest::entries(&config.graphs, Some(split)).map_err(|(m, help)| Error::input(m).with_help_opt(help))?;
    let mut tasks = Vec::new();
    for e in entries {
        if !e.fits(config.max_nodes) {
            continue;
        }
        let graph = match load_graph_file(&e.path) {
            Ok(g) => Arc::new(g),
            Err(err) => {
                // A broken data set is said before training, not trained around.
                return Err(
                    Error::input(format!("cannot load the graph `{}`: {}", e.name, err.message)).with_help(format!(
                        "mend `{}` or take it out of the manifest of `{}`",
                        e.path.display(),
                        config.graphs.display()
                    )),
                );
            }
        };
        for pkg in &config.packages {
            let compiled = compile_file_with_graph(pkg, graph.clone());
            if !compiled.ok() {
                // A package file that does not compile on its own is the user's to fix.
                if !crate::lang::compile_file(pkg).ok() {
                    return Err(Error::diagnostics(&compiled));
                }
                let why = compiled
                    .diags
                    .iter()
                    .find(|d| !d.warning)
                    .map_or(String::new(), |d| format!(": {}", d.message));
                on(Event::Warning(format!(
                    "warning: skipping `{}`: `{}` does not apply to it{why}",
                    e.name,
                    pkg.display()
                )));
                continue;
            }
            let Ok(p) = compiled.problem(None) else {
                return Err(Error::input(format!(
                    "`{}` must declare exactly one problem",
                    pkg.display()
                )));
            };
            let label = if config.packages.len() > 1 {
                format!(
                    "{}@{}",
                    e.name,
                    pkg.file_stem().and_then(|s| s.to_str()).unwrap_or("package")
                )
            } else {
                e.name.clone()
            };
            let judge = Judge::new(p, &JudgeOptions::default())?;
            match Task::new(&label, p.clone(), judge) {
                Ok(t) => tasks.push(t),
                Err(why) => on(Event::Warning(format!("warning: skipping `{label}`: {why}"))),
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

/// Trains as `config` says, telling `on` how it goes; the run's files go
/// to `config.out`, which must not hold an earlier run.
pub fn run(config: &Config, on: &mut dyn FnMut(Event)) -> Result<TrainReport> {
    let cfg = &config.train;
    if cfg.samples == 0 && cfg.imitate == 0 {
        return Err(Error::usage("nothing to do: --samples and --imitate are both 0"));
    }
    if config.out.exists() && !config.out.is_dir() {
        return Err(Error::input(format!(
            "--out `{}` is a file, not a folder",
            config.out.display()
        )));
    }
    if let Some(what) = earlier_run(&config.out) {
        return Err(Error::input(format!(
            "`{}` holds an earlier training run ({what})",
            config.out.display()
        ))
        .with_help("name a new folder with --out (or remove the old one): a run there would overwrite it"));
    }
    let mut train_tasks = tasks(config, &config.split, on)?;
    if cfg.imitate_best && cfg.imitate > 0 {
        on(Event::Demonstrating {
            samples: cfg.demo_samples,
            graphs: train_tasks.len(),
        });
        let found: Vec<(usize, f64)> = train_tasks
            .par_iter_mut()
            .map(|t| t.demonstrate(cfg.demo_samples, cfg.seed))
            .collect();
        for (t, &(moved, gain)) in train_tasks.iter().zip(&found) {
            on(Event::Demonstrated {
                task: &t.name,
                gain,
                moved,
                nodes: t.fallback.len(),
            });
        }
    }
    if train_tasks.is_empty() {
        return Err(Error::input(format!("no usable graph in the split `{}`", config.split)));
    }
    let val_tasks = if config.val_split == "none" {
        Vec::new()
    } else {
        tasks(config, &config.val_split, on)?
    };
    on(Event::Starting {
        train: train_tasks.iter().map(|t| t.name.as_str()).collect(),
        validation: val_tasks.iter().map(|t| t.name.as_str()).collect(),
    });
    // The logs grow as training goes, so a run cut short keeps them.
    let (log_path, val_path) = (config.out.join("log.csv"), config.out.join("validation.csv"));
    let mut write_error: Option<String> = None;
    let mut scored = false;
    let imitate_path = config.out.join("imitate.csv");
    let mut imitate_error: Option<String> = None;
    // Both callbacks tell `on`; they never run at once.
    let on = std::cell::RefCell::new(on);
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
        (*on.borrow_mut())(Event::Imitated(log));
    };
    let result = pretrain::train(&train_tasks, &val_tasks, cfg, &config.out, on_imitate, |log, score| {
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
        (*on.borrow_mut())(Event::Updated(log, score));
    });
    let report = result.map_err(|e| Error::new(Kind::Search, format!("training failed: {e}")))?;
    if let Some(e) = write_error.or(imitate_error) {
        return Err(Error::output(e));
    }
    write_run(config, &report).map_err(Error::output)?;
    Ok(report)
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

fn write_run(config: &Config, r: &TrainReport) -> std::result::Result<(), String> {
    let dir = &config.out;
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
    let summary = serde_json::json!({
        "command": config.command,
        "config": config.train,
        "graphs": config.graphs.display().to_string(),
        "split": config.split,
        "val_split": config.val_split,
        "packages": config.packages.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "elapsed_s": r.elapsed_s,
        "best": r.best,
        "scores": r.scores,
    });
    w("train.json", serde_json::to_string_pretty(&summary).unwrap_or_default())?;
    w("curve.svg", curve(r)?)
}

/// The training curve: mean reward per update (and its running mean) and
/// each checkpoint's validation scores, against samples.
fn curve(r: &TrainReport) -> std::result::Result<String, String> {
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
