//! `mcmpart train --placer gdp` and `--placer mars`: pretraining of the
//! learned placers that pretrain, on the split's graphs under the
//! `--package` files; the checkpoint is `OUT/gdp.*` or `OUT/mars.*`, the
//! log `OUT/log.csv` (what `models/` ships is such a checkpoint, copied).

use super::output::Output;
use super::train::TrainArgs;
use crate::error::{Error, Result, Status};
use crate::experiment::train::{tasks, Config, Event};
use crate::placers::{gdp, mars};
use crate::pretrain::{Task, TrainConfig};
use std::io::Write;
use std::path::PathBuf;

/// The split's problems, and the run folder made (refusing one that holds
/// a checkpoint of this placer already).
fn problems(args: &TrainArgs, placer: &str) -> Result<(Vec<Task>, PathBuf)> {
    let config = Config {
        graphs: args.graphs.clone(),
        split: args.split.clone(),
        val_split: "none".into(),
        packages: args.packages.clone(),
        out: args.out.clone(),
        max_nodes: args.max_nodes,
        train: TrainConfig::default(),
        command: String::new(),
    };
    let stem = args.out.join(placer);
    if stem.with_extension("json").exists() {
        return Err(
            Error::input(format!("`{}` holds a {placer} checkpoint already", args.out.display()))
                .with_help("name a new folder with --out (or remove the old one)"),
        );
    }
    let found = tasks(&config, &config.split, &mut |e| {
        if let Event::Warning(w) = e {
            eprintln!("{w}")
        }
    })?;
    if found.is_empty() {
        return Err(Error::input(format!("no usable graph in the split `{}`", args.split)));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Error::input(format!("cannot make `{}`: {e}", args.out.display())))?;
    Ok((found, stem))
}

fn command() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// A CSV log in the run folder, written as training goes.
fn log_file(args: &TrainArgs, header: &str) -> Result<std::fs::File> {
    let path = args.out.join("log.csv");
    let mut f =
        std::fs::File::create(&path).map_err(|e| Error::input(format!("cannot write `{}`: {e}", path.display())))?;
    writeln!(f, "{header}").map_err(|e| Error::input(format!("cannot write `{}`: {e}", path.display())))?;
    Ok(f)
}

fn finish(out: &Output, stem: &std::path::Path, what: String, elapsed_s: f64) -> Result {
    if out.json {
        out.print_json(&serde_json::json!({
            "ok": true,
            "out": stem.parent().map(|d| d.display().to_string()),
            "checkpoint": stem.display().to_string(),
            "elapsed_s": elapsed_s,
            "trained": what,
        }));
    } else {
        println!("{what} in {elapsed_s:.1} s; checkpoint {}.*", stem.display());
    }
    Ok(Status::Success)
}

/// GDP: PPO on all the split's problems at once for `--samples` samples.
pub fn gdp(out: &Output, args: &TrainArgs) -> Result {
    let (tasks, stem) = problems(args, "gdp")?;
    let mut log = log_file(args, "update,samples,elapsed_s,task,mean_reward,best_reward")?;
    let opts = gdp::TrainOptions {
        samples: args.samples,
        seed: args.seed,
        ..gdp::TrainOptions::default()
    };
    if !out.json {
        eprintln!(
            "gdp: PPO on {} problems of `{}`, {} samples",
            tasks.len(),
            args.split,
            args.samples
        );
    }
    let quiet = out.json;
    let logs = gdp::train(&tasks, &opts, &stem, &command(), &mut |l| {
        let _ = writeln!(
            log,
            "{},{},{:.3},{},{:.5},{:.5}",
            l.update, l.samples, l.elapsed_s, l.task, l.mean_reward, l.best_reward
        );
        if !quiet && l.update % 10 == 0 {
            eprintln!(
                "update {} ({} samples, {:.0} s): reward {:.3} on {}",
                l.update, l.samples, l.elapsed_s, l.mean_reward, l.task
            );
        }
    })
    .map_err(|e| Error::input(e.to_string()))?;
    let elapsed = logs.last().map_or(0.0, |l| l.elapsed_s);
    finish(
        out,
        &stem,
        format!("{} updates, {} samples", logs.len(), args.samples),
        elapsed,
    )
}

/// Mars: its encoder by Deep Graph Infomax for `--dgi-steps` steps.
pub fn mars(out: &Output, args: &TrainArgs) -> Result {
    let (tasks, stem) = problems(args, "mars")?;
    let mut log = log_file(args, "step,elapsed_s,graph,loss,accuracy")?;
    let opts = mars::TrainOptions {
        steps: args.dgi_steps,
        seed: args.seed,
        ..mars::TrainOptions::default()
    };
    if !out.json {
        eprintln!(
            "mars: DGI on {} graphs of `{}`, {} steps",
            tasks.len(),
            args.split,
            args.dgi_steps
        );
    }
    let quiet = out.json;
    let logs = mars::train(&tasks, &opts, &stem, &command(), &mut |l| {
        let _ = writeln!(
            log,
            "{},{:.3},{},{:.5},{:.4}",
            l.step, l.elapsed_s, l.graph, l.loss, l.accuracy
        );
        if !quiet && l.step % 50 == 0 {
            eprintln!(
                "step {} ({:.0} s): loss {:.4}, accuracy {:.3} on {}",
                l.step, l.elapsed_s, l.loss, l.accuracy, l.graph
            );
        }
    })
    .map_err(|e| Error::input(e.to_string()))?;
    let elapsed = logs.last().map_or(0.0, |l| l.elapsed_s);
    finish(out, &stem, format!("{} DGI steps", logs.len()), elapsed)
}
