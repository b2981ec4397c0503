//! `mcmpart bench bounds FILE --graphs DIR`: the structural bounds of the
//! file's problem on every graph of a data set, against a strategy's best
//! partition; exits 1 if any bound exceeds a partition's latency.

use super::eval::secs;
use super::output::{refuse_overwriting, Output};
use crate::error::{Error, Result, Status};
use crate::experiment::bounds::{measure, Row};
use crate::graph::{load_graph_file, manifest};
use crate::lang::compile_file_with_graph;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args, Debug, Clone)]
pub struct BoundsArgs {
    /// The .mcm file whose problem (package, rules) is applied to each graph.
    pub file: PathBuf,
    /// The graph folder, with its manifest.json.
    #[arg(long, default_value = "data/graphs")]
    pub graphs: PathBuf,
    /// Only the graphs of this split of the manifest; every split when not given.
    #[arg(long)]
    pub split: Option<String>,
    /// Only the graphs of the manifest with at most this many nodes; no
    /// limit when not given.
    #[arg(long)]
    pub max_nodes: Option<u64>,
    /// The strategy whose best partition each bound is checked against.
    #[arg(long, default_value = "greedy")]
    pub strategy: String,
    /// Its budget in samples.
    #[arg(long, default_value_t = 1, value_parser = super::args::counting)]
    pub budget: usize,
    /// Seed of the strategy's random choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the figures here as JSON.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

pub fn run(out: &Output, args: &BoundsArgs) -> Result {
    let entries = manifest::entries(&args.graphs, args.split.as_deref())
        .map_err(|(m, help)| Error::input(m).with_help_opt(help))?;
    if let Some(d) = &args.out {
        refuse_overwriting(d, std::slice::from_ref(&args.file), "is the problem it reads")?;
    }
    let (mut rows, mut skipped): (Vec<Row>, Vec<serde_json::Value>) = (Vec::new(), Vec::new());
    for e in entries.iter().filter(|e| e.fits(args.max_nodes)) {
        let g = load_graph_file(&e.path)?;
        let c = compile_file_with_graph(&args.file, Arc::new(g));
        if !c.ok() {
            return Err(Error::diagnostics(&c));
        }
        let p = c.problem(None).map_err(Error::input)?;
        // A graph the package cannot hold is no evidence either way.
        match measure(p, &args.strategy, args.budget, args.seed) {
            Ok(row) => {
                if !out.json {
                    print_row(&e.name, &row);
                }
                rows.push(row);
            }
            Err(why) => {
                if !out.json {
                    println!("{:<24} skipped: {why}", e.name);
                }
                skipped.push(serde_json::json!({"graph": e.name, "reason": why}));
            }
        }
    }
    let unsound: Vec<&Row> = rows.iter().filter(|r| !r.sound()).collect();
    let report = serde_json::json!({
        "file": args.file.display().to_string(), "strategy": args.strategy, "budget": args.budget,
        "graphs": rows.len(), "unsound": unsound.len(), "skipped": skipped,
        "per_graph": rows.iter().map(|r| serde_json::json!({
            "graph": r.graph, "nodes": r.nodes, "total_compute_s": r.total_compute_s,
            "proven_bound_latency_s": r.proven.latency_s, "binds": r.proven.kind, "because": r.proven.because,
            "bounds_seconds": r.bounds_seconds, "best_latency_s": r.best_latency_s, "gap": r.gap(),
        })).collect::<Vec<_>>(),
    });
    let printed = super::bench::save(args.out.as_deref(), &report)?;
    if out.json {
        out.print_json(&printed);
    } else {
        let tighter = rows
            .iter()
            .filter(|r| r.proven.latency_s > r.total_compute_s * (1.0 + 1e-9))
            .count();
        let slowest = rows.iter().map(|r| r.bounds_seconds).fold(0.0, f64::max);
        println!(
            "{} graphs ({} skipped): the proven bound is tighter than total / total on {tighter}; slowest bounds {}; {} unsound",
            rows.len(),
            skipped.len(),
            secs(slowest),
            unsound.len()
        );
    }
    Ok(Status::of(unsound.is_empty()))
}

fn print_row(name: &str, r: &Row) {
    let best = r.best_latency_s.map_or("-".to_string(), secs);
    let gap = r.gap().map_or("-".to_string(), |g| format!("{g:.2}x"));
    println!(
        "{name:<24} {:>5} nodes  total/total {:>10}  proven {:>10} ({})  {} {best:>10}  gap {gap}{}",
        r.nodes,
        secs(r.total_compute_s),
        secs(r.proven.latency_s),
        r.proven.kind.name(),
        r.strategy,
        if r.sound() { "" } else { "  UNSOUND" }
    );
}
