//! The command line: `mcmpart check | verify | test`.

mod args;
mod bench;
mod check;
mod compare;
pub mod eval;
pub mod import;
mod search;
mod show;
pub mod solve;
mod stats;
mod test;
mod train;
mod verify;

use crate::diag::{render_text, to_json, Diag};
use crate::lang::{compile_file, Compiled};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "mcmpart",
    version,
    about = "Places machine-learning graphs on multi-chip packages"
)]
pub struct Cli {
    /// Machine-readable output (JSON on stdout).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse, check and ground a file; summarise its problems.
    Check {
        /// The .mcm file.
        file: PathBuf,
    },
    /// Judge a partition of a problem: exit 0 when valid.
    Verify {
        /// The .mcm file.
        file: PathBuf,
        /// The partition file (`*.partition.json`).
        #[arg(long)]
        partition: PathBuf,
        /// The problem, when the file declares several.
        #[arg(long)]
        problem: Option<String>,
    },
    /// The cost of a partition: latency, throughput, the bound, per chip
    /// compute, links, weights and peak memory; exit 0 when valid.
    Eval {
        /// The .mcm file.
        file: PathBuf,
        /// The partition file (`*.partition.json`).
        #[arg(long)]
        partition: PathBuf,
        /// The problem, when the file declares several.
        #[arg(long)]
        problem: Option<String>,
        #[command(flatten)]
        eval: eval::EvalArgs,
    },
    /// Run every `test` block of the files.
    Test {
        /// The .mcm files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// One valid partition, by SAMPLE with uniform probabilities.
    Sample {
        /// The .mcm file.
        file: PathBuf,
        #[command(flatten)]
        solver: solve::SolverArgs,
        /// Where to write the partition.
        #[arg(long)]
        out: PathBuf,
    },
    /// Search for a good valid partition within a budget and write the best.
    Solve {
        /// The .mcm file.
        file: PathBuf,
        #[command(flatten)]
        args: search::SolveArgs,
    },
    /// Pretrain the placement policy with PPO on a split of the graph
    /// folder; checkpoints, logs and a training curve go to `--out`.
    Train {
        #[command(flatten)]
        args: train::TrainArgs,
    },
    /// Compare strategies over problems and seeds, against greedy and the
    /// lower bound: curves, summary tables and figures.
    Compare {
        /// The .mcm files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        args: compare::CompareArgs,
    },
    /// Make a proposal valid, by FIX: keep what can stay, move the rest.
    Repair {
        /// The .mcm file.
        file: PathBuf,
        /// The proposal: a partition file that may break rules or miss nodes.
        #[arg(long)]
        proposal: PathBuf,
        #[command(flatten)]
        solver: solve::SolverArgs,
        /// Where to write the repaired partition.
        #[arg(long)]
        out: PathBuf,
    },
    /// Import an ONNX model (with shapes from ONNX shape inference) as a graph file.
    Import {
        /// The `.onnx` file.
        model: PathBuf,
        /// The graph file to write (`.json`, or `.json.gz` to compress).
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Draw a graph, coloured by chip when a partition is given.
    Show {
        /// A graph file (`.json` or `.json.gz`).
        graph: PathBuf,
        /// A partition file to colour the nodes by.
        #[arg(long)]
        partition: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "dot")]
        format: show::Format,
        /// Write here instead of standard output.
        #[arg(short, long)]
        out: Option<PathBuf>,
    },
    /// Sizes, totals, depth and the largest nodes of a graph.
    Stats {
        /// A graph file (`.json` or `.json.gz`).
        graph: PathBuf,
        /// How many of the largest nodes to list.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// Measure: print figures and write them to a file.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Valid partitions per second, failures, backtracks and SAT calls.
    Solver {
        /// The .mcm file.
        file: PathBuf,
        #[arg(long, value_enum)]
        mode: bench::Mode,
        /// How many partitions to make.
        #[arg(long, default_value_t = 200, value_parser = args::counting)]
        samples: usize,
        #[command(flatten)]
        solver: solve::SolverArgs,
        /// Write the figures here as JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Time loading every graph file of a folder.
    Load {
        /// The folder of graph files.
        #[arg(default_value = "data/graphs")]
        dir: PathBuf,
        /// Loads per file; the best time is kept.
        #[arg(long, default_value_t = 5, value_parser = args::counting)]
        repeats: usize,
        /// Write the figures here as JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Output piped into a reader that stops (`| head`) ends quietly with 141,
/// as a shell reports a tool killed by SIGPIPE, and a full disk with one
/// line; both were panics at the next print. SIGPIPE itself stays ignored:
/// an evaluator that exits without reading its input would kill us.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(why) = msg.strip_prefix("failed printing to stdout: ") {
            if why.contains("Broken pipe") {
                std::process::exit(141);
            }
            eprintln!("error: cannot write the output: {why}");
            std::process::exit(1);
        }
        default(info);
    }));
}

/// Runs the command line; returns the exit code.
pub fn main() -> i32 {
    quiet_on_closed_stdout();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    // Deep but legal inputs recurse deeply in the front end: give it room,
    // and the threads that search, train and judge.
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .stack_size(crate::WORKER_STACK)
        .build_global()
    {
        eprintln!("warning: the worker threads keep the default stack: {e}");
    }
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || run(cli))
        .ok()
        .and_then(|h| h.join().ok())
        .unwrap_or(1)
}

pub fn run(cli: Cli) -> i32 {
    let out = Output { json: cli.json };
    match cli.command {
        Command::Check { file } => check::run(&out, &file),
        Command::Verify {
            file,
            partition,
            problem,
        } => verify::run(&out, &file, &partition, problem.as_deref()),
        Command::Eval {
            file,
            partition,
            problem,
            eval: args,
        } => eval::run(&out, &file, &partition, problem.as_deref(), &args),
        Command::Test { files } => test::run(&out, &files),
        Command::Show {
            graph,
            partition,
            format,
            out: dest,
        } => show::run(&out, &graph, partition.as_deref(), format, dest.as_deref()),
        Command::Sample {
            file,
            solver,
            out: dest,
        } => solve::run_sample(&out, &file, &solver, &dest),
        Command::Solve { file, args } => search::run(&out, &file, &args),
        Command::Compare { files, args } => compare::run(&out, &files, &args),
        Command::Train { args } => train::run(&out, &args),
        Command::Repair {
            file,
            proposal,
            solver,
            out: dest,
        } => solve::run_repair(&out, &file, &solver, &proposal, &dest),
        Command::Bench(BenchCommand::Solver {
            file,
            mode,
            samples,
            solver,
            out: dest,
        }) => bench::solver(&out, &file, &solver, mode, samples, dest.as_deref()),
        Command::Import { model, out: dest } => import::run(&out, &model, &dest),
        Command::Stats { graph, top } => stats::run(&out, &graph, top),
        Command::Bench(BenchCommand::Load {
            dir,
            repeats,
            out: dest,
        }) => bench::load(&out, &dir, repeats, dest.as_deref()),
    }
}

/// Where results go: text for people, JSON for tools.
pub struct Output {
    pub json: bool,
}

impl Output {
    pub fn print_json(&self, v: &serde_json::Value) {
        println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
    }

    /// Compiles a file; on errors prints them and returns `None`.
    pub fn compile(&self, file: &std::path::Path) -> Option<Compiled> {
        let c = compile_file(file);
        if c.ok() {
            return Some(c);
        }
        self.diagnostics(&c, &c.diags);
        None
    }

    pub fn diagnostics(&self, c: &Compiled, diags: &[Diag]) {
        if self.json {
            self.print_json(&serde_json::json!({"ok": false, "diagnostics": to_json(&c.program.sources, diags)}));
        } else {
            eprint!("{}", render_text(&c.program.sources, diags));
            let n = diags.iter().filter(|d| !d.warning).count();
            eprintln!("error: {n} error(s)");
        }
    }

    /// An error without a source span.
    pub fn error(&self, message: &str, help: Option<&str>) {
        if self.json {
            self.print_json(&serde_json::json!({"ok": false, "error": message, "help": help}));
        } else {
            eprintln!("error: {message}");
            if let Some(h) = help {
                eprintln!("  help: {h}");
            }
        }
    }
}

/// Whether `dest`, a file the command is about to write, is one of the
/// files it read (however spelled): then it says so, and the caller stops
/// before writing. `what` finishes "which ...".
pub fn overwrites_input(out: &Output, dest: &Path, inputs: &[PathBuf], what: &str) -> bool {
    let Ok(d) = std::fs::canonicalize(dest) else {
        return false;
    };
    let Some(input) = inputs.iter().find(|i| std::fs::canonicalize(i).is_ok_and(|i| i == d)) else {
        return false;
    };
    out.error(
        &format!(
            "`{}` is `{}`, which {what}: writing there would replace it",
            dest.display(),
            input.display()
        ),
        Some("name another output file"),
    );
    true
}
