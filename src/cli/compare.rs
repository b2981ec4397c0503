//! `mcmpart compare`: the flags, the checks made before anything runs, and
//! what is printed; the comparison itself is [`crate::experiment::compare`].

use super::judge_args::EvalArgs;
use super::output::Output;
use super::strategy_args::{self, RlArgs};
use crate::error::{Error, Result, Status};
use crate::experiment::compare::{self, Config, Report, Settings};
use std::path::{Path, PathBuf};

/// The strategies compared when none are named.
pub const DEFAULT_STRATEGIES: &str = "random,anneal,dp";

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Strategies to compare, comma-separated; greedy, the baseline, always
    /// runs (once per problem).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_STRATEGIES)]
    pub strategies: Vec<String>,
    /// Samples (evaluated partitions) per run.
    #[arg(long, default_value_t = 1000, value_parser = super::args::compare_budget)]
    pub budget: usize,
    /// Runs per strategy and problem, with seeds S, S+1, ...
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The folder to write the curves, tables and figures to (created).
    #[arg(short, long)]
    pub out: PathBuf,
    /// The budgets of the summary table, comma-separated, each at most
    /// `--budget` (default: 10, 100, 1000, ... below it, and the budget).
    #[arg(long, value_delimiter = ',')]
    pub budgets: Vec<usize>,
    /// The improvement levels of the samples-to-reach table.
    #[arg(long, value_delimiter = ',', default_value = "1.0,1.05,1.1,1.2")]
    pub levels: Vec<f64>,
    /// A graph folder with a `manifest.json`: apply each file's problem
    /// (package, rules, objective) to its graphs instead of the file's graph.
    #[arg(long)]
    pub graphs: Option<PathBuf>,
    /// Only the graphs of this split of the manifest (train, validation,
    /// test); every split when not given.
    #[arg(long, requires = "graphs")]
    pub split: Option<String>,
    /// Only the graphs of the manifest with at most this many nodes; no
    /// limit when not given.
    #[arg(long, requires = "graphs")]
    pub max_nodes: Option<u64>,
    /// The problem, when a file declares several.
    #[arg(long)]
    pub problem: Option<String>,
    /// Take the runs a previous compare into the same `--out` finished
    /// (kept in `OUT/runs/`) when they were made with the same problem,
    /// budget, judge and policy; run only the others.
    #[arg(long)]
    pub resume: bool,
    /// Compare under this objective instead of each problem's:
    /// `throughput`, `step_time` (or `latency`).
    #[arg(long, value_parser = super::args::objective)]
    pub objective: Option<crate::problem::Metric>,
    #[command(flatten)]
    pub eval: EvalArgs,
    #[command(flatten)]
    pub rl: RlArgs,
}

impl CompareArgs {
    fn config(&self, files: &[PathBuf], strategies: Vec<String>) -> Config {
        Config {
            files: files.to_vec(),
            strategies,
            budget: self.budget,
            repeats: self.repeats,
            seed: self.seed,
            out: self.out.clone(),
            budgets: self.budgets.clone(),
            levels: self.levels.clone(),
            graphs: self.graphs.clone(),
            split: self.split.clone(),
            max_nodes: self.max_nodes,
            problem: self.problem.clone(),
            resume: self.resume,
            objective: self.objective,
            judge: self.eval.options(),
            rl: self.rl.options(),
            settings: Settings {
                judge: self.eval.settings(),
                rl: self.rl.settings(),
            },
        }
    }
}

/// `mcmpart compare`'s words after `compare`: the files and the flags.
#[derive(clap::Parser, Debug)]
#[command(name = "compare", about = "Compare strategies over problems and seeds")]
struct CompareCommand {
    /// The .mcm files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    args: CompareArgs,
}

/// Words that are not a comparison `mcmpart compare` would run.
#[derive(Debug)]
pub enum ArgsError {
    /// `--help` was asked for: the text to print.
    Help(String),
    /// Flags clap cannot read (its text, usage included), or a comparison
    /// the checks refuse.
    Invalid(Error),
}

/// The comparison `mcmpart compare WORDS...` runs, from the same flags and
/// with the same checks (for drivers of other runners, such as the Python
/// package's Ray compare, which must take the same options).
pub fn config_from_words<I, T>(words: I) -> std::result::Result<Config, ArgsError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let argv = std::iter::once(std::ffi::OsString::from("compare")).chain(words.into_iter().map(Into::into));
    let cmd = CompareCommand::try_parse_from(argv).map_err(|e| match e.kind() {
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
            ArgsError::Help(e.render().to_string())
        }
        _ => ArgsError::Invalid(Error::usage(e.render().to_string().trim_end().to_string())),
    })?;
    checked_config(&cmd.files, &cmd.args).map_err(ArgsError::Invalid)
}

/// The comparison `args` asks for, checked before anything runs.
fn checked_config(files: &[PathBuf], args: &CompareArgs) -> Result<Config> {
    let names = compare::strategies(&args.strategies)?;
    let named: Vec<&str> = names.iter().map(String::as_str).collect();
    strategy_args::check(&named, &args.rl)?;
    let config = args.config(files, names.clone());
    config.check()?;
    // The names and flags are right: what fails now is a checkpoint, an input.
    for name in &named {
        strategy_args::build(name, &args.rl)?;
    }
    Ok(config)
}

pub fn run(out: &Output, files: &[PathBuf], args: &CompareArgs) -> Result {
    let config = checked_config(files, args)?;
    // On stderr, terminal or not (`--json` too, its answer is on stdout).
    let report = compare::run(&config, &|line| eprintln!("{line}"))?;
    if out.json {
        out.print_json(&report.figures);
        return Ok(Status::Success);
    }
    print!("{}", report_text(&report, &args.out));
    Ok(Status::Success)
}

/// What `compare` prints on stdout when it is done (without `--json`):
/// the summary, the runs taken from the journal, the files written.
pub fn report_text(report: &Report, out: &Path) -> String {
    let mut text = format!("{}\n", report.markdown);
    if report.reused > 0 {
        text += &format!(
            "{} of {} runs taken from {} (--resume)\n",
            report.reused,
            report.runs,
            out.join("runs").display()
        );
    }
    let written = &report.written;
    text += &format!(
        "written to {}: {}\n",
        out.display(),
        if written.len() > 8 {
            format!(
                "{} and {} per-problem curves.svg",
                written[..5].join(", "),
                written.len() - 5
            )
        } else {
            written.join(", ")
        }
    );
    text
}
