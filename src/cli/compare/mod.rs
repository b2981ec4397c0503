//! `mcmpart compare`: run strategies on problems with several seeds, against
//! greedy and the lower bound, and write the curves, the summary tables (the
//! MCM paper's Tables 2 and 3) and the figures (its Figures 5 and 6).

mod journal;

use super::eval::{secs, EvalArgs};
use super::search::{strategies_agree, strategy_named};
use super::Output;
use crate::cost::{CostModel, Judge};
use crate::diag::render_text;
use crate::digest::Fnv1a;
use crate::graph::load_graph_file;
use crate::lang::{compile_file, compile_file_with_graph};
use crate::problem::Problem;
use crate::solver::Infeasible;
use crate::strategy::{self, Budget, Greedy, Outcome};
use journal::{Journal, Stale};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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
    #[arg(long)]
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
    /// Only the graphs of this split of the manifest (train, validation, test).
    #[arg(long, requires = "graphs")]
    pub split: Option<String>,
    /// Only the graphs of the manifest with at most this many nodes.
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
    #[command(flatten)]
    pub eval: EvalArgs,
    #[command(flatten)]
    pub rl: super::search::RlArgs,
}

/// One problem's runs: greedy's, then every strategy's.
struct ProblemRuns {
    label: String,
    file: PathBuf,
    problem: String,
    graph: String,
    nodes: usize,
    chips: usize,
    judge: String,
    /// Greedy's throughput, the baseline; `None` when its partition was
    /// invalid at evaluation.
    greedy: Option<f64>,
    /// The throughput of the lower bound on latency.
    bound: Option<f64>,
    runs: Vec<Outcome>,
}

impl ProblemRuns {
    fn of<'a>(&'a self, strategy: &'a str) -> impl Iterator<Item = &'a Outcome> + 'a {
        self.runs.iter().filter(move |o| o.strategy == strategy)
    }

    /// Mean over seeds of `best_at(n) / denom`, a run with no valid sample
    /// by then counting 0.
    fn mean_at(&self, strategy: &str, n: usize, denom: f64) -> Option<f64> {
        let (mut sum, mut k) = (0.0, 0usize);
        for o in self.of(strategy) {
            sum += o.best_at(n).map_or(0.0, |b| b / denom);
            k += 1;
        }
        (k > 0).then(|| sum / k as f64)
    }
}

/// A problem ready to run.
struct Prepared {
    label: String,
    file: PathBuf,
    problem: Problem,
    graph: String,
    /// What decides its runs' results ([`Journal::problem_basis`]).
    basis: Fnv1a,
}

/// Where a problem comes from: a file, and a graph of the manifest.
struct Source {
    file: PathBuf,
    graph: Option<(String, PathBuf)>,
}

pub fn run(out: &Output, files: &[PathBuf], args: &CompareArgs) -> i32 {
    // The strategies, greedy first, each once.
    let mut names: Vec<String> = vec!["greedy".into()];
    for s in &args.strategies {
        let s = s.trim();
        if s.is_empty() {
            continue;
        }
        if !names.iter().any(|n| n == s) {
            names.push(s.to_string());
        }
    }
    if names.len() == 1 && !args.strategies.iter().any(|s| s.trim() == "greedy") {
        out.error(
            "--strategies names no strategy",
            Some(&format!("the strategies are {}", strategy::NAMES.join(", "))),
        );
        return 2;
    }
    let named: Vec<&str> = names.iter().map(String::as_str).collect();
    if !strategies_agree(out, &named, &args.rl) {
        return 2;
    }
    if let Err(m) = check_args(args) {
        out.error(&m, None);
        return 2;
    }
    // The names and flags are right: what fails now is a checkpoint, an input.
    if named.iter().any(|s| strategy_named(out, s, &args.rl).is_none()) {
        return 1;
    }
    let budgets = budgets(args);
    for f in files {
        if let Err(e) = std::fs::read(f) {
            out.error(&format!("cannot read `{}`: {e}", f.display()), None);
            return 1;
        }
    }
    let sources = match sources(files, args) {
        Ok(s) => s,
        Err((m, help)) => {
            out.error(&m, help.as_deref());
            return 1;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        out.error(&format!("cannot create `{}`: {e}", args.out.display()), None);
        return 1;
    }
    // Held until this compare ends (the OS lets go of it if it is killed).
    let _lock = match journal::lock(&args.out) {
        Ok(l) => l,
        Err((m, help)) => {
            out.error(&m, Some(&help));
            return 1;
        }
    };

    let mut prepared: Vec<Prepared> = Vec::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    let multi_file = files.len() > 1;
    for src in &sources {
        let stem = src.file.file_stem().and_then(|s| s.to_str()).unwrap_or("problem");
        let compiled = match &src.graph {
            None => compile_file(&src.file),
            Some((name, path)) => match load_graph_file(path) {
                Ok(g) => compile_file_with_graph(&src.file, Arc::new(g)),
                Err(e) => {
                    // A file of the data set that does not load is a broken
                    // data set: said before any run, not left out quietly.
                    out.error(
                        &format!("cannot load the graph `{name}`: {}", e.message),
                        Some(&format!(
                            "mend `{}` or take it out of the manifest of `{}`",
                            path.display(),
                            args.graphs.as_deref().unwrap_or(std::path::Path::new(".")).display()
                        )),
                    );
                    return 1;
                }
            },
        };
        let label_for = |p: &Problem| match &src.graph {
            None if multi_file => format!("{stem}:{}", p.name),
            None => p.name.clone(),
            Some((g, _)) => graph_label(multi_file, stem, g),
        };
        if !compiled.ok() {
            match &src.graph {
                // A file that does not compile is the user's to fix.
                None => {
                    out.diagnostics(&compiled, &compiled.diags);
                    return 1;
                }
                Some((g, _)) => {
                    let label = graph_label(multi_file, stem, g);
                    let text = render_text(&compiled.program.sources, &compiled.diags);
                    skip(
                        &mut skipped,
                        &label,
                        format!(
                            "`{}` does not compile with this graph:\n{}",
                            src.file.display(),
                            text.trim_end()
                        ),
                    );
                    continue;
                }
            }
        }
        let p = match compiled.problem(args.problem.as_deref()) {
            Ok(p) => p,
            Err(m) => {
                out.error(&format!("{}: {m}", src.file.display()), None);
                return 1;
            }
        };
        let taken: Vec<&str> = prepared.iter().map(|q| q.label.as_str()).collect();
        let label = unique(&taken, &skipped, label_for(p));
        let graph = match &src.graph {
            Some((g, _)) => g.clone(),
            None => p.graph.name.clone(),
        };
        let texts: Vec<&str> = compiled.program.sources.files().iter().map(|f| &*f.text).collect();
        prepared.push(Prepared {
            label,
            file: src.file.clone(),
            basis: Journal::problem_basis(p, &texts),
            problem: p.clone(),
            graph,
        });
    }

    // Greedy first, the baseline of the progress lines; then every run of
    // every problem at once, each on its own judge and seed, so the results
    // do not depend on how many run together.
    let mut baselines: Vec<Option<(String, Option<f64>, Outcome)>> = Vec::with_capacity(prepared.len());
    for q in &prepared {
        match run_greedy(&q.problem, args) {
            Ok(b) => baselines.push(Some(b)),
            Err(why) => {
                skip(&mut skipped, &q.label, why);
                baselines.push(None);
            }
        }
    }
    let jobs: Vec<(usize, &str, u64)> = (0..prepared.len())
        .filter(|&i| baselines[i].is_some())
        .flat_map(|i| {
            names
                .iter()
                .filter(|n| *n != "greedy")
                .flat_map(move |n| (0..args.repeats).map(move |r| (i, n.as_str(), args.seed.wrapping_add(r as u64))))
        })
        .collect();
    // The largest graphs first, so that the last runs to finish are short
    // ones and no core idles long at the end.
    let mut schedule: Vec<usize> = (0..jobs.len()).collect();
    schedule.sort_by_key(|&k| std::cmp::Reverse(prepared[jobs[k].0].problem.graph.num_placed()));
    let journal = Journal::new(&args.out, args.resume);
    let judge_settings = format!("{:?}", args.eval);
    let reused = AtomicUsize::new(0);
    let total_runs = baselines.iter().flatten().count() + jobs.len();
    let done_runs = std::sync::Mutex::new(0usize);
    let report = |label: &str, strategy: &str, seed: u64, what: String| {
        let mut done = done_runs.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        // On stderr, terminal or not (`--json` too, its answer is on stdout):
        // a compare of hours runs in the background, and this log is how
        // one follows it.
        eprintln!("[{done}/{total_runs}] {label} {strategy} seed {seed}: {what}");
    };
    let report_run = |label: &str, o: &Outcome, greedy: Option<f64>| {
        let best = match (o.best.as_ref(), greedy) {
            (Some(b), Some(g)) => format!("{:.3}x over greedy", b.throughput / g),
            (Some(b), None) => format!("best {:.4} /s", b.throughput),
            (None, _) => "no valid partition".into(),
        };
        let what = format!("{best}, {} samples in {}", o.records.len(), secs(o.elapsed_s));
        report(label, &o.strategy, o.seed, what);
    };
    for (q, b) in prepared.iter().zip(&baselines) {
        if let Some((_, greedy, o)) = b {
            report_run(&q.label, o, *greedy);
        }
    }
    // A job's run: taken from the journal when resuming and it matches,
    // else made, and kept there.
    let run_or_resume = |k: usize| -> Result<Outcome, String> {
        let (i, name, seed) = jobs[k];
        let q = &prepared[i];
        let print = Journal::fingerprint(&q.basis, name, seed, args.budget, &judge_settings, &args.rl);
        match journal.load(&q.label, (name, seed), &print, &q.problem, args.budget) {
            Ok(o) => {
                reused.fetch_add(1, Ordering::Relaxed);
                return Ok(o);
            }
            Err(Stale::Unreadable(why)) => eprintln!("warning: running `{}` {name} seed {seed} again: {why}", q.label),
            Err(Stale::Missing | Stale::Other) => {}
        }
        let r = run_one(&q.problem, args, name, seed)?;
        if let Err(why) = journal.save(&q.label, &q.problem.name, &print, &r) {
            eprintln!("warning: the run is not kept for --resume: {why}");
        }
        Ok(r)
    };
    // Plain threads, not rayon's: a rayon worker waiting for the judge's
    // evaluations would start other runs meanwhile, nesting them, so that
    // each run's clock would count the others'.
    let next = AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<Outcome, String>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let worker = std::thread::Builder::new().stack_size(crate::WORKER_STACK);
            let spawned = worker.spawn_scoped(scope, || {
                while let Some(&k) = schedule.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (i, name, seed) = jobs[k];
                    let r = run_or_resume(k);
                    match &r {
                        Ok(o) => report_run(&prepared[i].label, o, baselines[i].as_ref().and_then(|b| b.1)),
                        Err(why) => report(&prepared[i].label, name, seed, format!("failed: {why}")),
                    }
                    *slots[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
            // The runs it would have taken are reported as not finished.
            if let Err(e) = spawned {
                eprintln!("warning: a worker thread did not start: {e}");
            }
        }
    });
    let reused = reused.into_inner();
    let results: Vec<Result<Outcome, String>> = slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err("the run did not finish".into()))
        })
        .collect();
    let mut problems: Vec<ProblemRuns> = Vec::new();
    let mut results = jobs.iter().map(|j| j.0).zip(results).peekable();
    for (i, (q, base)) in prepared.into_iter().zip(baselines).enumerate() {
        let Some((judge, greedy, g)) = base else { continue };
        let mut runs = vec![g];
        let mut failed: Option<String> = None;
        while let Some((_, r)) = results.next_if(|(j, _)| *j == i) {
            match r {
                Ok(o) => runs.push(o),
                Err(why) => {
                    failed.get_or_insert(why);
                }
            }
        }
        if let Some(why) = failed {
            skip(&mut skipped, &q.label, why);
            continue;
        }
        problems.push(ProblemRuns {
            bound: CostModel::new(&q.problem)
                .ok()
                .map(|m| 1.0 / m.bound_latency())
                .filter(|b| b.is_finite()),
            nodes: q.problem.graph.num_placed(),
            chips: q.problem.package.num_chips(),
            problem: q.problem.name.clone(),
            label: q.label,
            file: q.file,
            graph: q.graph,
            judge,
            greedy,
            runs,
        });
    }
    if problems.is_empty() {
        out.error(
            "no problem could be compared",
            Some(&match skipped.len() {
                0 => "no graph to run on".to_string(),
                n => format!("all {n} were skipped (see the warnings above)"),
            }),
        );
        return 1;
    }

    let summary = Summary::new(&problems, &names, &budgets, &args.levels, args.budget);
    let markdown = summary.markdown(&problems, &skipped, args);
    let figures = figures_json(&problems, &skipped, &summary, args, &budgets);
    let mut written = vec!["curves.csv", "summary.csv", "summary.md", "figures.json", "overall.svg"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let mut writes: Vec<(PathBuf, String)> = vec![
        (args.out.join("curves.csv"), curves_csv(&problems)),
        (args.out.join("summary.csv"), summary.csv()),
        (args.out.join("summary.md"), markdown.clone()),
        (
            args.out.join("figures.json"),
            serde_json::to_string_pretty(&figures).unwrap_or_default() + "\n",
        ),
    ];
    match plot(
        "Improvement over greedy, geometric mean over problems",
        "best-so-far improvement over greedy",
        args.budget,
        &summary.overall_lines(),
    ) {
        Ok(svg) => writes.push((args.out.join("overall.svg"), svg)),
        Err(e) => {
            out.error(&format!("cannot draw overall.svg: {e}"), None);
            return 1;
        }
    }
    for pr in &problems {
        let (y, lines) = problem_lines(pr, &names, args.budget);
        match plot(&pr.label, y, args.budget, &lines) {
            Ok(svg) => {
                let dir = problem_folder(&pr.label);
                if let Err(e) = std::fs::create_dir_all(args.out.join(&dir)) {
                    out.error(&format!("cannot create `{}`: {e}", args.out.join(&dir).display()), None);
                    return 1;
                }
                written.push(format!("{dir}/curves.svg"));
                writes.push((args.out.join(&dir).join("curves.svg"), svg));
            }
            Err(e) => {
                out.error(&format!("cannot draw the curves of `{}`: {e}", pr.label), None);
                return 1;
            }
        }
    }
    for (path, text) in &writes {
        if let Err(e) = std::fs::write(path, text) {
            out.error(&format!("cannot write `{}`: {e}", path.display()), None);
            return 1;
        }
    }
    if out.json {
        out.print_json(&figures);
    } else {
        print!("{markdown}");
        println!();
        if reused > 0 {
            println!(
                "{reused} of {} runs taken from {} (--resume)",
                jobs.len(),
                args.out.join("runs").display()
            );
        }
        println!(
            "written to {}: {}",
            args.out.display(),
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
    }
    0
}

fn check_args(args: &CompareArgs) -> Result<(), String> {
    if args.repeats == 0 {
        return Err("--repeats must be at least 1".into());
    }
    if let Some(b) = args.budgets.iter().find(|&&b| b == 0 || b > args.budget) {
        return Err(format!(
            "--budgets: {b} is not between 1 and --budget ({})",
            args.budget
        ));
    }
    if let Some(l) = args.levels.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
        return Err(format!("--levels: {l} is not a positive improvement"));
    }
    Ok(())
}

/// The table's budgets: those asked for, or 10, 100, ... below the budget
/// and the budget itself.
fn budgets(args: &CompareArgs) -> Vec<usize> {
    let mut b: BTreeSet<usize> = args.budgets.iter().copied().collect();
    if b.is_empty() {
        let mut n: usize = 10;
        while n < args.budget {
            b.insert(n);
            n = n.saturating_mul(10);
        }
        b.insert(args.budget);
    }
    b.into_iter().collect()
}

/// The problems to run: each file, or each file on each graph of the split.
fn sources(files: &[PathBuf], args: &CompareArgs) -> Result<Vec<Source>, (String, Option<String>)> {
    let Some(dir) = &args.graphs else {
        return Ok(files
            .iter()
            .map(|f| Source {
                file: f.clone(),
                graph: None,
            })
            .collect());
    };
    let picked: Vec<(String, PathBuf)> = crate::graph::manifest::entries(dir, args.split.as_deref())?
        .into_iter()
        .filter(|e| e.fits(args.max_nodes))
        .map(|e| (e.name, e.path))
        .collect();
    if picked.is_empty() {
        return Err((
            format!(
                "no graph of `{}` has at most {} nodes",
                dir.display(),
                args.max_nodes.unwrap_or(0)
            ),
            None,
        ));
    }
    Ok(files
        .iter()
        .flat_map(|f| {
            picked.iter().map(move |(n, p)| Source {
                file: f.clone(),
                graph: Some((n.clone(), p.clone())),
            })
        })
        .collect())
}

fn graph_label(multi_file: bool, stem: &str, graph: &str) -> String {
    if multi_file {
        format!("{stem}:{graph}")
    } else {
        graph.to_string()
    }
}

/// A label no other problem has.
fn unique(labels: &[&str], skipped: &[(String, String)], label: String) -> String {
    let taken = |l: &str| labels.contains(&l) || skipped.iter().any(|s| s.0 == l);
    if !taken(&label) {
        return label;
    }
    (2..)
        .map(|i| format!("{label}-{i}"))
        .find(|l| !taken(l))
        .unwrap_or(label)
}

fn skip(skipped: &mut Vec<(String, String)>, label: &str, why: String) {
    eprintln!("warning: skipping `{label}`: {why}");
    skipped.push((label.to_string(), why));
}

fn infeasible(p: &Problem, inf: &Infeasible) -> String {
    let names: Vec<String> = inf
        .constraints
        .iter()
        .map(|&i| p.constraints[i].display_name())
        .collect();
    match names.as_slice() {
        [] => "the problem has no valid partition".into(),
        [one] => format!("the problem has no valid partition: nothing satisfies `{one}`"),
        many => format!("the problem has no valid partition: {} conflict", many.join(", ")),
    }
}

/// A curve: its name and its (samples, value) points.
type Line = (String, Vec<(f64, f64)>);

/// Greedy's run: the judge's description, greedy's throughput (`None`
/// when its partition is invalid at evaluation) and the run; `Err` says why
/// the problem is skipped.
fn run_greedy(p: &Problem, args: &CompareArgs) -> Result<(String, Option<f64>, Outcome), String> {
    let j = Judge::new(p, &args.eval.options()).map_err(|e| e.message)?;
    let g = strategy::run(p, &j, &mut Greedy, Budget::Samples(1), args.seed, None).map_err(|i| infeasible(p, &i))?;
    Ok((j.describe.clone(), g.best.as_ref().map(|b| b.throughput), g))
}

/// One run of a strategy, on a judge of its own: its cache must not carry
/// one run's work to another.
fn run_one(p: &Problem, args: &CompareArgs, name: &str, seed: u64) -> Result<Outcome, String> {
    let mut s = strategy::by_name(name, &args.rl.options())
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("unknown strategy `{name}`"))?;
    let j = Judge::new(p, &args.eval.options()).map_err(|e| e.message)?;
    let o =
        strategy::run(p, &j, s.as_mut(), Budget::Samples(args.budget), seed, None).map_err(|i| infeasible(p, &i))?;
    match &o.failure {
        // Its curve would end early and read as a plateau.
        Some(why) => Err(format!("stopped after {} sample(s): {why}", o.records.len())),
        None if o.interrupted => Err(format!("interrupted after {} sample(s)", o.records.len())),
        None => Ok(o),
    }
}

fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    if xs.iter().any(|&x| x <= 0.0) {
        return Some(0.0);
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// One cell of the tables: a strategy at a budget.
struct Cell {
    strategy: String,
    budget: usize,
    /// Problems counted (those with a greedy baseline, resp. a bound).
    problems: usize,
    bound_problems: usize,
    runs: usize,
    /// Runs (on the problems with a baseline) with no valid sample by then.
    runs_without_valid: usize,
    improvement: Option<f64>,
    bound_fraction: Option<f64>,
}

struct Summary {
    names: Vec<String>,
    budgets: Vec<usize>,
    levels: Vec<f64>,
    cells: Vec<Cell>,
    /// Per strategy, the geometric-mean improvement after n samples, n = 1..=budget.
    overall: Vec<Vec<f64>>,
    /// Per strategy and level, the samples needed.
    reach: Vec<Vec<Option<usize>>>,
    /// Problems with a greedy baseline.
    baseline: usize,
}

impl Summary {
    fn new(problems: &[ProblemRuns], names: &[String], budgets: &[usize], levels: &[f64], budget: usize) -> Summary {
        let based: Vec<&ProblemRuns> = problems.iter().filter(|p| p.greedy.is_some()).collect();
        let improvement_at = |s: &str, n: usize| -> Option<f64> {
            let xs: Vec<f64> = based
                .iter()
                .filter_map(|p| p.mean_at(s, n, p.greedy.unwrap_or(1.0)))
                .collect();
            geomean(&xs)
        };
        let mut cells = Vec::new();
        for s in names {
            for &b in budgets {
                let fr: Vec<f64> = problems
                    .iter()
                    .filter_map(|p| p.bound.and_then(|bd| p.mean_at(s, b, bd)))
                    .collect();
                cells.push(Cell {
                    strategy: s.clone(),
                    budget: b,
                    problems: based.len(),
                    bound_problems: fr.len(),
                    runs: based.iter().map(|p| p.of(s).count()).sum(),
                    runs_without_valid: based
                        .iter()
                        .flat_map(|p| p.of(s))
                        .filter(|o| o.best_at(b).is_none())
                        .count(),
                    improvement: improvement_at(s, b),
                    bound_fraction: geomean(&fr),
                });
            }
        }
        let overall: Vec<Vec<f64>> = names
            .iter()
            .map(|s| (1..=budget).map(|n| improvement_at(s, n).unwrap_or(0.0)).collect())
            .collect();
        let reach = overall
            .iter()
            .map(|curve| {
                levels
                    .iter()
                    .map(|&l| curve.iter().position(|&x| x >= l * (1.0 - 1e-12)).map(|i| i + 1))
                    .collect()
            })
            .collect();
        Summary {
            names: names.to_vec(),
            budgets: budgets.to_vec(),
            levels: levels.to_vec(),
            cells,
            overall,
            reach,
            baseline: based.len(),
        }
    }

    fn cell(&self, s: &str, b: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.strategy == s && c.budget == b)
    }

    fn overall_lines(&self) -> Vec<Line> {
        let n = self.overall.first().map_or(0, Vec::len);
        self.names
            .iter()
            .zip(&self.overall)
            .map(|(s, c)| {
                (
                    s.clone(),
                    plot_points(n).into_iter().map(|i| (i as f64, c[i - 1])).collect(),
                )
            })
            .collect()
    }

    /// Long format: one row per strategy, metric and budget (or level).
    fn csv(&self) -> String {
        let mut s = String::from("strategy,metric,at,value,problems,runs,runs_without_valid\n");
        for c in &self.cells {
            let _ = writeln!(
                s,
                "{},improvement_over_greedy,{},{},{},{},{}",
                csv_field(&c.strategy),
                c.budget,
                opt(c.improvement),
                c.problems,
                c.runs,
                c.runs_without_valid
            );
            let _ = writeln!(
                s,
                "{},fraction_of_bound,{},{},{},{},",
                csv_field(&c.strategy),
                c.budget,
                opt(c.bound_fraction),
                c.bound_problems,
                c.runs,
            );
        }
        for (name, reach) in self.names.iter().zip(&self.reach) {
            for (l, r) in self.levels.iter().zip(reach) {
                let _ = writeln!(
                    s,
                    "{},samples_to_reach,{l},{},{},,",
                    csv_field(name),
                    r.map(|n| n.to_string()).unwrap_or_default(),
                    self.baseline
                );
            }
        }
        s
    }

    /// The table per problem: each strategy's mean best over greedy at each
    /// budget (of the bound when greedy has no valid partition), the
    /// invalid samples of its runs and a run's mean time.
    fn per_problem(&self, m: &mut String, problems: &[ProblemRuns]) {
        let names: Vec<&String> = self.names.iter().filter(|s| *s != "greedy").collect();
        let budgets: Vec<String> = self.budgets.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(
            m,
            "\n**Per problem**: best over greedy at {} samples, mean over seeds (`%`: of the bound, where greedy \
             has no valid partition; `none`: no run has a valid one yet), in bold the best at the last budget; in \
             parentheses the invalid samples of all runs; a run's mean time.\n",
            budgets.join(" / ")
        );
        let _ = write!(m, "| problem | nodes |");
        for s in &names {
            let _ = write!(m, " {s} |");
        }
        let _ = write!(m, "\n|---|--:|");
        for _ in &names {
            let _ = write!(m, "--:|");
        }
        m.push('\n');
        let mut order: Vec<&ProblemRuns> = problems.iter().collect();
        order.sort_by_key(|p| p.nodes);
        let last = self.budgets.last().copied().unwrap_or(1);
        for p in order {
            let (denom, unit) = match (p.greedy, p.bound) {
                (Some(g), _) => (g, ""),
                (None, Some(b)) => (b / 100.0, "%"),
                (None, None) => (f64::NAN, ""),
            };
            let top = names
                .iter()
                .filter_map(|s| p.mean_at(s, last, denom))
                .fold(f64::NEG_INFINITY, f64::max);
            let _ = write!(m, "| {} | {} |", p.label, p.nodes);
            for s in &names {
                let runs: Vec<&Outcome> = p.of(s).collect();
                if runs.is_empty() || !denom.is_finite() {
                    let _ = write!(m, " - |");
                    continue;
                }
                let at: Vec<String> = self
                    .budgets
                    .iter()
                    .map(|&b| match runs.iter().all(|o| o.best_at(b).is_none()) {
                        true => "none".to_string(),
                        false => format!("{:.3}{unit}", p.mean_at(s, b, denom).unwrap_or(0.0)),
                    })
                    .collect();
                let mut cell = at.join(" / ");
                if p.mean_at(s, last, denom).is_some_and(|v| v >= top - 1e-12 && top > 0.0) {
                    cell = format!("**{cell}**");
                }
                let invalid: usize = runs.iter().map(|o| o.invalid_count()).sum();
                if invalid > 0 {
                    cell += &format!(" ({invalid})");
                }
                let time = runs.iter().map(|o| o.elapsed_s).sum::<f64>() / runs.len() as f64;
                let _ = write!(m, " {cell}, {time:.0} s |");
            }
            m.push('\n');
        }
    }

    fn markdown(&self, problems: &[ProblemRuns], skipped: &[(String, String)], args: &CompareArgs) -> String {
        let mut m = String::new();
        let seeds = if args.repeats == 1 {
            format!("seed {}", args.seed)
        } else {
            format!(
                "seeds {}..{}",
                args.seed,
                args.seed.wrapping_add(args.repeats as u64 - 1)
            )
        };
        let _ = writeln!(
            m,
            "Strategies against greedy on {} problem(s), {} run(s) per strategy ({seeds}), up to {} samples per run; \
             greedy runs once per problem (one sample).\n",
            problems.len(),
            args.repeats,
            args.budget
        );
        let head = |m: &mut String, first: &str| {
            let _ = write!(m, "| {first} |");
            for b in &self.budgets {
                let _ = write!(m, " {b} samples |");
            }
            let _ = write!(m, "\n|---|");
            for _ in &self.budgets {
                let _ = write!(m, "--:|");
            }
            m.push('\n');
        };
        let _ = writeln!(
            m,
            "**Improvement over greedy**: throughput of the best valid partition found within the budget over \
             greedy's, mean over seeds per problem, geometric mean over the {} problem(s) with a valid greedy \
             partition. A run with no valid partition by a budget counts as 0; `(k/n none)` says how many.\n",
            self.baseline
        );
        head(&mut m, "strategy");
        for s in &self.names {
            let _ = write!(m, "| {} |", strategy_label(s));
            for &b in &self.budgets {
                let c = self.cell(s, b);
                let v = c.and_then(|c| c.improvement).map_or("-".into(), |x| format!("{x:.3}x"));
                let none = match c {
                    Some(c) if c.runs_without_valid > 0 => format!(" ({}/{} none)", c.runs_without_valid, c.runs),
                    _ => String::new(),
                };
                let _ = write!(m, " {v}{none} |");
            }
            m.push('\n');
        }
        let bound_n = self.cells.first().map_or(0, |c| c.bound_problems);
        let _ = writeln!(
            m,
            "\n**Fraction of the lower bound** (total flops / total compute, as a throughput): mean over seeds, \
             geometric mean over the {bound_n} problem(s) with a bound; no valid partition counts as 0.\n"
        );
        head(&mut m, "strategy");
        for s in &self.names {
            let _ = write!(m, "| {} |", strategy_label(s));
            for &b in &self.budgets {
                let v = self
                    .cell(s, b)
                    .and_then(|c| c.bound_fraction)
                    .map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
                let _ = write!(m, " {v} |");
            }
            m.push('\n');
        }
        let _ = writeln!(
            m,
            "\n**Samples to reach an improvement over greedy**, on the geometric-mean curve above \
             (`-`: not reached within {} samples).\n",
            args.budget
        );
        let _ = write!(m, "| strategy |");
        for l in &self.levels {
            let _ = write!(m, " {l:.2}x |");
        }
        let _ = write!(m, "\n|---|");
        for _ in &self.levels {
            let _ = write!(m, "--:|");
        }
        m.push('\n');
        for (s, reach) in self.names.iter().zip(&self.reach) {
            let _ = write!(m, "| {} |", strategy_label(s));
            for r in reach {
                let _ = write!(m, " {} |", r.map_or("-".into(), |n| n.to_string()));
            }
            m.push('\n');
        }
        self.per_problem(&mut m, problems);
        let unbased: Vec<&str> = problems
            .iter()
            .filter(|p| p.greedy.is_none())
            .map(|p| p.label.as_str())
            .collect();
        if !unbased.is_empty() {
            let _ = writeln!(
                m,
                "\nGreedy found no valid partition of {} problem(s), left out of the improvement figures: {}.",
                unbased.len(),
                unbased.join(", ")
            );
        }
        if !skipped.is_empty() {
            let _ = writeln!(
                m,
                "\nSkipped {} problem(s): {}.",
                skipped.len(),
                skipped
                    .iter()
                    .map(|(l, why)| format!("{l} ({})", why.lines().next().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        m
    }
}

fn strategy_label(s: &str) -> String {
    if s == "greedy" {
        "greedy (baseline)".into()
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn curves_csv(problems: &[ProblemRuns]) -> String {
    let mut s = String::from("problem,strategy,seed,sample,elapsed_s,throughput,best,improvement_over_greedy\n");
    for p in problems {
        let label = csv_field(&p.label);
        for o in &p.runs {
            for r in &o.records {
                let imp = match (r.best, p.greedy) {
                    (Some(b), Some(g)) => (b / g).to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "{label},{},{},{},{},{},{},{imp}",
                    csv_field(&o.strategy),
                    o.seed,
                    r.sample,
                    r.elapsed_s,
                    opt(r.throughput),
                    opt(r.best)
                );
            }
        }
    }
    s
}

fn figures_json(
    problems: &[ProblemRuns],
    skipped: &[(String, String)],
    summary: &Summary,
    args: &CompareArgs,
    budgets: &[usize],
) -> Value {
    let probs: Vec<Value> = problems
        .iter()
        .map(|p| {
            let runs: Vec<Value> = p
                .runs
                .iter()
                .map(|o| {
                    let best = o.best.as_ref().map(|b| b.throughput);
                    let at: Vec<Value> = budgets
                        .iter()
                        .map(|&b| {
                            let t = o.best_at(b);
                            json!({
                                "budget": b, "best": t,
                                "improvement_over_greedy": t.zip(p.greedy).map(|(t, g)| t / g),
                                "fraction_of_bound": t.zip(p.bound).map(|(t, bd)| t / bd),
                            })
                        })
                        .collect();
                    json!({
                        "strategy": o.strategy, "seed": o.seed, "samples": o.records.len(),
                        "elapsed_s": o.elapsed_s, "invalid": o.invalid_count(), "best_throughput": best,
                        "found_at_sample": o.best.as_ref().map(|b| b.sample),
                        "improvement_over_greedy": best.zip(p.greedy).map(|(t, g)| t / g),
                        "fraction_of_bound": best.zip(p.bound).map(|(t, bd)| t / bd),
                        "at_budgets": at,
                    })
                })
                .collect();
            json!({
                "label": p.label, "file": p.file.display().to_string(), "problem": p.problem, "graph": p.graph,
                "nodes": p.nodes, "chips": p.chips, "judge": p.judge,
                "greedy_throughput": p.greedy, "bound_throughput": p.bound, "runs": runs,
            })
        })
        .collect();
    let cells: Vec<Value> = summary
        .cells
        .iter()
        .map(|c| {
            json!({
                "strategy": c.strategy, "budget": c.budget, "problems": c.problems, "runs": c.runs,
                "runs_without_valid": c.runs_without_valid, "improvement_over_greedy": c.improvement,
                "bound_problems": c.bound_problems, "fraction_of_bound": c.bound_fraction,
            })
        })
        .collect();
    let reach: Vec<Value> = summary
        .names
        .iter()
        .zip(&summary.reach)
        .flat_map(|(s, r)| {
            summary
                .levels
                .iter()
                .zip(r)
                .map(move |(l, n)| json!({"strategy": s, "level": l, "samples": n}))
        })
        .collect();
    let overall: Vec<Value> = summary
        .overall_lines()
        .into_iter()
        .map(|(s, pts)| {
            let pts: Vec<Value> = pts.into_iter().map(|(n, v)| json!([n as usize, v])).collect();
            json!({"strategy": s, "points": pts})
        })
        .collect();
    let skipped: Vec<Value> = skipped
        .iter()
        .map(|(l, why)| json!({"label": l, "reason": why}))
        .collect();
    json!({
        "ok": true, "out": args.out.display().to_string(), "strategies": summary.names, "budget": args.budget,
        "repeats": args.repeats, "seed": args.seed, "budgets": budgets, "levels": summary.levels,
        "split": args.split, "graphs": args.graphs.as_ref().map(|g| g.display().to_string()),
        "problems": probs, "skipped": skipped, "summary": cells, "samples_to_reach": reach,
        "overall_curve": overall,
    })
}

/// The samples a curve is drawn at: every one up to 100, then about 100 per
/// decade, and the last.
fn plot_points(n: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut i = 1;
    while i <= n {
        v.push(i);
        i = if i < 100 { i + 1 } else { (i * 102 / 100).max(i + 1) };
    }
    if v.last() != Some(&n) && n > 0 {
        v.push(n);
    }
    v
}

/// A problem's lines: mean best-so-far improvement over greedy (or, with no
/// greedy baseline, fraction of the bound) per strategy.
fn problem_lines(p: &ProblemRuns, names: &[String], budget: usize) -> (&'static str, Vec<Line>) {
    let (y, denom) = match (p.greedy, p.bound) {
        (Some(g), _) => ("mean best-so-far improvement over greedy", g),
        (None, Some(b)) => ("mean best-so-far fraction of the lower bound", b),
        (None, None) => ("mean best-so-far throughput (/s)", 1.0),
    };
    let pts = plot_points(budget);
    let lines = names
        .iter()
        .map(|s| {
            let line = pts
                .iter()
                .filter_map(|&n| p.mean_at(s, n, denom).map(|v| (n as f64, v)))
                .collect();
            (s.clone(), line)
        })
        .collect();
    (y, lines)
}

const COLORS: [plotters::style::RGBColor; 8] = [
    plotters::style::RGBColor(0x55, 0x55, 0x55),
    plotters::style::RGBColor(0x1f, 0x77, 0xb4),
    plotters::style::RGBColor(0xff, 0x7f, 0x0e),
    plotters::style::RGBColor(0x2c, 0xa0, 0x2c),
    plotters::style::RGBColor(0xd6, 0x27, 0x28),
    plotters::style::RGBColor(0x94, 0x67, 0xbd),
    plotters::style::RGBColor(0x8c, 0x56, 0x4b),
    plotters::style::RGBColor(0xe3, 0x77, 0xc2),
];

/// Draws best-so-far curves on a log x axis as SVG; points at 0 (no valid
/// partition yet) are left out.
fn plot(title: &str, y_desc: &str, budget: usize, lines: &[Line]) -> Result<String, String> {
    use plotters::prelude::*;
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    let lines: Vec<(&String, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|(s, pts)| {
            (
                s,
                pts.iter().copied().filter(|p| p.1 > 0.0 && p.1.is_finite()).collect(),
            )
        })
        .collect();
    let ys = lines.iter().flat_map(|l| l.1.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
    let (lo, hi) = if lo.is_finite() {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.02).max(1e-9);
        ((lo - pad).max(0.0), hi + pad)
    } else {
        (0.0, 1.0)
    };
    let x_max = budget.max(2) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((1f64..x_max).log_scale(), lo..hi)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("samples")
            .y_desc(y_desc)
            .x_label_formatter(&|x| {
                // 1, 2, 5, 10, 20, 50, ...: the others stay unlabelled.
                let n = x.round() as u64;
                let lead = n / 10u64.pow(n.max(1).ilog10());
                if n > 0 && [1, 2, 5].contains(&lead) && n.is_multiple_of(10u64.pow(n.ilog10())) {
                    n.to_string()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{y:.3}"))
            .draw()
            .map_err(e)?;
        for (i, (name, pts)) in lines.iter().enumerate() {
            if pts.is_empty() {
                continue;
            }
            let color = COLORS[i % COLORS.len()];
            let mut pts = pts.clone();
            // A constant line (greedy, one sample) still spans the axis.
            if pts.len() == 1 {
                pts.push((x_max, pts[0].1));
            }
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(e)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// A problem's folder (its curves, its kept runs): its label when that is a
/// safe name, else the safe name and a hash of the label, since labels are
/// unique and their safe names need not be (`a:b`, `a_b`).
fn problem_folder(label: &str) -> String {
    match safe_name(label) {
        s if s == label => s,
        s => format!("{s}-{}", &crate::digest::fnv1a(label.as_bytes())[..8]),
    }
}

/// A file or folder name for a label.
fn safe_name(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("p{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_counts_zero_and_skips_nothing() {
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[2.0, 0.0]), Some(0.0));
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn plot_points_are_increasing_and_end_at_the_budget() {
        for n in [1, 2, 99, 100, 101, 1000, 12345] {
            let p = plot_points(n);
            assert_eq!(p.first(), Some(&1));
            assert_eq!(p.last(), Some(&n));
            assert!(p.windows(2).all(|w| w[0] < w[1]));
        }
        assert!(plot_points(100_000).len() < 600);
    }

    #[test]
    fn folder_names_are_safe() {
        assert_eq!(safe_name("a:b/c d"), "a_b_c_d");
        assert_eq!(safe_name(".."), "p..");
        // Two labels with one safe name get two folders; a safe label is its own.
        assert_eq!(problem_folder("bert-base"), "bert-base");
        assert!(problem_folder("a:b").starts_with("a_b-"));
        assert_ne!(problem_folder("a:b"), problem_folder("a/b"));
    }

    #[test]
    fn plot_writes_svg_with_text() {
        let lines = vec![
            ("greedy".to_string(), vec![(1.0, 1.0)]),
            ("random".to_string(), vec![(1.0, 0.0), (2.0, 0.9), (10.0, 1.2)]),
        ];
        let svg = plot("t", "y", 10, &lines).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("random") && svg.contains("</svg>"));
    }
}
