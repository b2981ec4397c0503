//! The command line: the arguments (parsed by clap, here), one file per
//! command (`solve.rs` is `mcmpart solve`) that calls the library and
//! prints, the flag groups several commands share (`*_args.rs`,
//! `problem.rs`), and `output.rs`, where results and errors are printed and
//! exit statuses decided.

mod args;
mod bench;
mod bench_bounds;
mod bench_eval;
mod bench_memory;
mod check;
mod compare;
mod deadline;
mod domains;
pub mod eval;
mod fmt;
pub mod import;
mod judge_args;
mod lsp;
mod output;
mod problem;
mod repair;
mod sample;
mod show;
pub mod solve;
mod stats;
mod strategy_args;
mod test;
mod train;
mod train_gdp_mars;
mod verify;

pub use compare::{
    config_from_words as compare_config, report_text as compare_report_text, ArgsError as CompareArgsError,
};
pub use judge_args::EvalArgs;
pub use output::Output;
pub use problem::SolverArgs;
pub use solve::SolveArgs;
pub use strategy_args::RlArgs;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

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
    /// The cost of a partition under the problem's objective: latency,
    /// throughput, the bound, per chip compute, links, weights and peak
    /// memory (or under `minimize step_time` the step time, each chip's and
    /// link's busy time and what ends last); exit 0 when valid.
    Eval {
        /// The .mcm file.
        file: PathBuf,
        /// The partition file (`*.partition.json`).
        #[arg(long)]
        partition: PathBuf,
        /// The problem, when the file declares several.
        #[arg(long)]
        problem: Option<String>,
        /// text (default), json (as `--json`), or svg: the step as a
        /// timeline (`minimize step_time`).
        #[arg(long, value_enum)]
        format: Option<eval::Format>,
        /// Write the svg here instead of standard output.
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Judge under this objective instead of the problem's:
        /// `throughput`, `step_time` (or `latency`).
        #[arg(long, value_parser = args::objective)]
        objective: Option<crate::problem::Metric>,
        #[command(flatten)]
        eval: EvalArgs,
    },
    /// Run every `test` block of the files.
    Test {
        /// The .mcm files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Rewrite .mcm files in the one canonical layout (comments kept).
    Fmt {
        /// The .mcm files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Change nothing: list the files not in the layout, exit 1 if any.
        #[arg(long)]
        check: bool,
    },
    /// One valid partition, by SAMPLE with uniform probabilities.
    Sample {
        /// The .mcm file.
        file: PathBuf,
        #[command(flatten)]
        solver: SolverArgs,
        #[command(flatten)]
        own: sample::SampleArgs,
    },
    /// The chips each node can still take after propagation, at the root
    /// or after decisions (`--set NODE=CHIPS`, each a `set_domain`).
    Domains {
        /// The .mcm file.
        file: PathBuf,
        /// A decision: restrict NODE to CHIPS (`fc1=2`, `fc1=0,1`), in order.
        #[arg(long = "set", value_name = "NODE=CHIPS", value_parser = domains::decision)]
        sets: Vec<domains::Decision>,
        #[command(flatten)]
        solver: SolverArgs,
    },
    /// Search for a good valid partition within a budget and write the best.
    Solve {
        /// The .mcm file.
        file: PathBuf,
        #[command(flatten)]
        args: SolveArgs,
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
        solver: SolverArgs,
        /// Where to write the repaired partition.
        #[arg(short, long)]
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
    /// Draw a graph, or the package of an .mcm file; coloured by chip or
    /// by load when a partition is given.
    Show {
        /// A graph file (`.json` or `.json.gz`), or an `.mcm` file whose package to draw.
        file: PathBuf,
        /// A partition file: colours a graph's nodes by chip, a package's chips by load.
        #[arg(long)]
        partition: Option<PathBuf>,
        /// dot or svg for a graph (default dot); text, json or svg for a package (default text).
        #[arg(long, value_enum)]
        format: Option<show::Format>,
        /// The package of an .mcm file: the `let` that names it (needed
        /// when the file names several and has no single problem).
        #[arg(long)]
        package: Option<String>,
        /// The problem whose package to draw, when the file declares several.
        #[arg(long)]
        problem: Option<String>,
        /// Write here instead of standard output.
        #[arg(short, long)]
        out: Option<PathBuf>,
    },
    /// A language server for editors, on standard input and output (see the
    /// book's chapter on editor set-up).
    Lsp,
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
        /// Which solver mode to time: fix (repair a uniformly random
        /// proposal) or sample (draw a partition from nothing).
        #[arg(long, value_enum)]
        mode: crate::solver::Mode,
        /// How many partitions to make.
        #[arg(long, default_value_t = 200, value_parser = args::counting)]
        samples: usize,
        #[command(flatten)]
        solver: SolverArgs,
        /// Write the figures here as JSON.
        #[arg(short, long)]
        out: Option<PathBuf>,
    },
    /// The structural lower bounds on every graph of a data set, checked
    /// against a strategy's best partition.
    Bounds(bench_bounds::BoundsArgs),
    /// Step-time and throughput evaluations per second, one thread, on
    /// random valid partitions of a problem.
    Eval(bench_eval::EvalArgs),
    /// Peak memory and time of stats, check, sample and solve (greedy)
    /// on a generated chain and tree of N nodes.
    Memory(bench_memory::MemoryArgs),
    /// Time loading every graph file of a folder.
    Load {
        /// The folder of graph files.
        #[arg(default_value = "data/graphs")]
        dir: PathBuf,
        /// Loads per file; the best time is kept.
        #[arg(long, default_value_t = 5, value_parser = args::counting)]
        repeats: usize,
        /// Write the figures here as JSON.
        #[arg(short, long)]
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

/// A command line clap refuses: its message, as JSON when `--json` was
/// asked for (a script reading stdout gets `ok: false`, not usage text);
/// `--help` and `--version` print as they are.
fn parse_error(e: &clap::Error) -> i32 {
    if !e.use_stderr() {
        let _ = e.print();
        return 0;
    }
    if !std::env::args_os().any(|a| a == "--json") {
        let _ = e.print();
        return 2;
    }
    // clap's text: the error (maybe over several lines), then tips, the
    // usage line and where to read more.
    let rendered = e.render().to_string();
    let lines: Vec<&str> = rendered.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let end = lines
        .iter()
        .position(|l| {
            ["tip:", "Usage:", "For more information"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .unwrap_or(lines.len());
    let message = lines[..end].join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let help = lines[end..].join("\n");
    Output { json: true }.finish(Err(crate::error::Error::usage(message).with_help(help)))
}

/// The stack of the threads a command runs on: deep but legal inputs
/// recurse deeply in the front end.
const COMMAND_STACK: usize = 256 << 20;

/// Runs the command line; returns the exit code.
/// Blocks of 128 KiB and more each get pages of their own, given back when
/// freed. glibc raises this threshold as such blocks are freed, after
/// which the next ones come from the heap and stay resident when freed: on
/// a graph of a million nodes that kept a third more resident than was in
/// use (the book's performance chapter, memory per node).
fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets one parameter of the allocator, before any other thread
    // exists; the value is within the range glibc accepts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// The heap keeps 64 MiB of headroom when it grows or shrinks, for commands
/// that run a policy network: its passes free and take back many blocks
/// below the mmap threshold each round, and without the headroom the heap
/// gave their pages back and faulted them in again, which doubled `rl`'s
/// CPU time in system time. Not for the others, whose peak on a large graph
/// the headroom would raise (memory per node).
fn heap_headroom(command: &Command) {
    let learned = |s: &str| {
        ["rl", "hdp", "placeto", "gdp", "mars"]
            .iter()
            .any(|l| s == *l || s.starts_with(&format!("{l}-")))
    };
    let runs_a_network = match command {
        Command::Train { .. } => true,
        Command::Solve { args, .. } => args.strategy.as_deref().is_some_and(learned),
        Command::Compare { args, .. } => args.strategies.iter().any(|s| learned(s)),
        _ => false,
    };
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if runs_a_network {
        // SAFETY: sets one parameter of the allocator, before any other
        // thread exists; the value is within the range glibc accepts.
        unsafe {
            libc::mallopt(libc::M_TOP_PAD, 64 << 20);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = runs_a_network;
}

pub fn main() -> i32 {
    fixed_mmap_threshold();
    quiet_on_closed_stdout();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return parse_error(&e),
    };
    heap_headroom(&cli.command);
    // Deep but legal inputs recurse deeply in the front end: give it room,
    // and the threads that search, train and judge.
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .stack_size(crate::WORKER_STACK)
        .build_global()
    {
        eprintln!("warning: the worker threads keep the default stack: {e}");
    }
    std::thread::Builder::new()
        .stack_size(COMMAND_STACK)
        .spawn(move || run(cli))
        .ok()
        .and_then(|h| h.join().ok())
        .unwrap_or(1)
}

/// Runs a parsed command line; returns the exit status.
pub fn run(cli: Cli) -> i32 {
    let out = Output { json: cli.json };
    let result = match cli.command {
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
            format,
            out: dest,
            objective,
            eval: args,
        } => eval::run(
            &out,
            &file,
            &partition,
            problem.as_deref(),
            &args,
            &eval::Dest {
                format,
                out: dest.as_deref(),
                objective,
            },
        ),
        Command::Test { files } => test::run(&out, &files),
        Command::Fmt { files, check } => fmt::run(&out, &files, check),
        Command::Show {
            file,
            partition,
            format,
            package,
            problem,
            out: dest,
        } => show::run(
            &out,
            &show::ShowArgs {
                file: &file,
                partition: partition.as_deref(),
                format,
                dest: dest.as_deref(),
                package: package.as_deref(),
                problem: problem.as_deref(),
            },
        ),
        Command::Sample { file, solver, own } => sample::run(&out, &file, &solver, &own),
        Command::Domains { file, sets, solver } => domains::run(&out, &file, &solver, &sets),
        Command::Solve { file, args } => solve::run(&out, &file, &args),
        Command::Compare { files, args } => compare::run(&out, &files, &args),
        Command::Train { args } => train::run(&out, &args),
        Command::Repair {
            file,
            proposal,
            solver,
            out: dest,
        } => repair::run(&out, &file, &solver, &proposal, &dest),
        Command::Bench(BenchCommand::Solver {
            file,
            mode,
            samples,
            solver,
            out: dest,
        }) => bench::solver(&out, &file, &solver, mode, samples, dest.as_deref()),
        Command::Import { model, out: dest } => import::run(&out, &model, &dest),
        Command::Lsp => lsp::run(&out),
        Command::Stats { graph, top } => stats::run(&out, &graph, top),
        Command::Bench(BenchCommand::Load {
            dir,
            repeats,
            out: dest,
        }) => bench::load(&out, &dir, repeats, dest.as_deref()),
        Command::Bench(BenchCommand::Bounds(args)) => bench_bounds::run(&out, &args),
        Command::Bench(BenchCommand::Eval(args)) => bench_eval::run(&out, &args),
        Command::Bench(BenchCommand::Memory(args)) => bench_memory::run(&out, &args),
    };
    out.finish(result)
}
