//! `mcmpart bench memory`: the peak memory and time of `stats`, `check`,
//! `sample`, `solve` (the default strategy, `auto`) and `solve --strategy
//! greedy` on a generated chain and tree of N nodes, each command run as a
//! child of this one.

use super::output::Output;
use crate::error::{Error, Result, Status};
use crate::experiment::scale::{measure, write_problem, Shape};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args, Debug, Clone)]
pub struct MemoryArgs {
    /// Nodes of each generated graph (the book's figures: 1000000). No
    /// default: a run takes minutes and gigabytes.
    #[arg(long, value_parser = super::args::counting)]
    pub nodes: usize,
    /// The shapes to generate (default: both).
    #[arg(long, value_enum)]
    pub shape: Vec<Shape>,
    /// Seed of the generated graphs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the graphs, problems and partitions go (default: a fresh
    /// folder under the system's temporary folder, removed at the end).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Write the figures here as JSON.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

/// The commands measured, as arguments after the program; `{mcm}` and
/// `{out}` stand for the problem and a partition to write.
const COMMANDS: [(&str, &[&str]); 5] = [
    ("stats", &["stats", "{graph}"]),
    ("check", &["check", "{mcm}"]),
    ("sample", &["sample", "{mcm}", "--out", "{out}"]),
    ("solve", &["solve", "{mcm}", "--out", "{out}"]),
    (
        "solve greedy",
        &["solve", "{mcm}", "--strategy", "greedy", "--out", "{out}"],
    ),
];

pub fn run(out: &Output, args: &MemoryArgs) -> Result {
    let exe = std::env::current_exe().map_err(|e| Error::internal(format!("cannot find this program: {e}")))?;
    let (dir, scratch) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("mcmpart-bench-memory-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::output(format!("cannot create `{}`: {e}", dir.display())))?;
    let shapes = if args.shape.is_empty() {
        vec![Shape::Chain, Shape::Tree]
    } else {
        args.shape.clone()
    };
    let result = measure_all(out, &exe, &dir, &shapes, args);
    if scratch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let rows = result?;
    let report = serde_json::json!({"nodes": args.nodes, "seed": args.seed, "runs": rows});
    let printed = super::bench::save(args.out.as_deref(), &report)?;
    if out.json {
        out.print_json(&printed);
    }
    let failed = rows.iter().any(|r| r["exit"] != 0);
    Ok(if failed { Status::Failure } else { Status::Success })
}

fn measure_all(
    out: &Output,
    exe: &Path,
    dir: &Path,
    shapes: &[Shape],
    args: &MemoryArgs,
) -> Result<Vec<serde_json::Value>> {
    let mut rows = Vec::new();
    for &shape in shapes {
        let mcm = write_problem(dir, shape, args.nodes, args.seed).map_err(|e| {
            Error::output(format!(
                "cannot write the generated problem in `{}`: {e}",
                dir.display()
            ))
        })?;
        let graph = mcm.with_extension("json");
        let part = mcm.with_extension("partition.json");
        for (name, argv) in COMMANDS {
            let argv: Vec<String> = argv
                .iter()
                .map(|a| match *a {
                    "{graph}" => graph.display().to_string(),
                    "{mcm}" => mcm.display().to_string(),
                    "{out}" => part.display().to_string(),
                    a => a.to_string(),
                })
                .collect();
            let quiet = || std::process::Stdio::null();
            let u = measure(Command::new(exe).args(&argv).stdout(quiet()).stderr(quiet()))
                .map_err(|e| Error::internal(format!("cannot run `{}`: {e}", exe.display())))?;
            let per_node = u.peak_rss as f64 / args.nodes as f64;
            if !out.json {
                println!(
                    "{:<6} {:>9} nodes  {:<14} peak {:>8.1} MiB  {:>7.0} B/node  {:>7.2} s ({:.2} s of CPU){}",
                    shape.name(),
                    args.nodes,
                    name,
                    u.peak_rss as f64 / (1 << 20) as f64,
                    per_node,
                    u.seconds,
                    u.cpu_seconds,
                    match u.code {
                        Some(0) => String::new(),
                        Some(c) => format!("  (exit {c})"),
                        None => "  (killed)".to_string(),
                    }
                );
            }
            rows.push(serde_json::json!({
                "shape": shape.name(), "command": name, "peak_rss": u.peak_rss,
                "bytes_per_node": per_node, "seconds": u.seconds, "cpu_seconds": u.cpu_seconds, "exit": u.code,
            }));
        }
    }
    Ok(rows)
}
