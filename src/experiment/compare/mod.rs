//! `compare` as library code: run strategies on problems with several
//! seeds, against greedy and the lower bound, and write the curves, the
//! summary tables (the MCM paper's Tables 2 and 3) and the figures (its
//! Figures 5 and 6). [`run`] does all of it; [`Summary::new`] gives the
//! tables as values from runs.

pub mod journal;
pub mod plot;
pub mod render;
pub mod runner;
pub mod summary;

pub use runner::{run_job, Compare, Job, JobSpec};
pub use summary::{Cell, ProblemRuns, Summary};

use crate::cost::JudgeOptions;
use crate::diag::render_text;
use crate::digest::Fnv1a;
use crate::error::{Error, Result};
use crate::graph::load_graph_file;
use crate::lang::{compile_file, compile_file_with_graph};
use crate::problem::{Metric, Problem};
use crate::strategy::{self, RlOptions};
use journal::Journal;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a comparison's progress lines and warnings go (stderr, for the
/// command line: a compare of hours is followed in its log).
pub type Log<'a> = &'a (dyn Fn(&str) + Sync);

/// A problem left out of a comparison: its label and why.
pub type Skipped = (String, String);

/// What a comparison runs and where it writes.
#[derive(Clone, Debug)]
pub struct Config {
    /// The problem files.
    pub files: Vec<PathBuf>,
    /// The strategies, greedy first, each once ([`strategies`]).
    pub strategies: Vec<String>,
    /// Samples per run.
    pub budget: usize,
    /// Runs per strategy and problem, with seeds `seed`, `seed + 1`, ...
    pub repeats: usize,
    pub seed: u64,
    /// The folder of the curves, tables, figures and kept runs.
    pub out: PathBuf,
    /// The budgets of the tables (empty: 10, 100, ... and the budget).
    pub budgets: Vec<usize>,
    /// The improvement levels of the samples-to-reach table.
    pub levels: Vec<f64>,
    /// A graph folder with a manifest: each file's problem on its graphs.
    pub graphs: Option<PathBuf>,
    pub split: Option<String>,
    pub max_nodes: Option<u64>,
    /// The problem, when a file declares several.
    pub problem: Option<String>,
    /// Take the kept runs made with the same settings.
    pub resume: bool,
    /// The objective that replaces each problem's (`--objective`); a
    /// problem's runs are fingerprinted under the objective they ran under.
    pub objective: Option<Metric>,
    pub judge: JudgeOptions,
    pub rl: RlOptions,
    pub settings: Settings,
}

/// The judge's and the learned strategies' settings as the run files'
/// fingerprints spell them (the command line's flags, as text): a run kept
/// under other settings is not taken.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub judge: String,
    pub rl: String,
}

/// The strategies a comparison runs: greedy, the baseline, first, then
/// those named, each once. Naming none is a usage error.
pub fn strategies(named: &[String]) -> Result<Vec<String>> {
    let mut names: Vec<String> = vec!["greedy".into()];
    for s in named {
        let s = s.trim();
        if s.is_empty() {
            continue;
        }
        if !names.iter().any(|n| n == s) {
            names.push(s.to_string());
        }
    }
    if names.len() == 1 && !named.iter().any(|s| s.trim() == "greedy") {
        return Err(Error::usage("--strategies names no strategy")
            .with_help(format!("the strategies are {}", strategy::NAMES.join(", "))));
    }
    Ok(names)
}

impl Config {
    /// The numbers no comparison can take: usage errors, before anything runs.
    pub fn check(&self) -> Result<()> {
        if self.repeats == 0 {
            return Err(Error::usage("--repeats must be at least 1"));
        }
        if let Some(b) = self.budgets.iter().find(|&&b| b == 0 || b > self.budget) {
            return Err(Error::usage(format!(
                "--budgets: {b} is not between 1 and --budget ({})",
                self.budget
            )));
        }
        if let Some(l) = self.levels.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
            return Err(Error::usage(format!("--levels: {l} is not a positive improvement")));
        }
        Ok(())
    }

    /// The table's budgets: those asked for, or 10, 100, ... below the
    /// budget and the budget itself.
    pub fn table_budgets(&self) -> Vec<usize> {
        let mut b: BTreeSet<usize> = self.budgets.iter().copied().collect();
        if b.is_empty() {
            let mut n: usize = 10;
            while n < self.budget {
                b.insert(n);
                n = n.saturating_mul(10);
            }
            b.insert(self.budget);
        }
        b.into_iter().collect()
    }
}

/// A finished comparison: its runs, its summary, and what it wrote.
pub struct Report {
    pub problems: Vec<ProblemRuns>,
    pub skipped: Vec<Skipped>,
    pub summary: Summary,
    /// `summary.md`'s text.
    pub markdown: String,
    /// `figures.json`'s content.
    pub figures: serde_json::Value,
    /// The files written, relative to the output folder.
    pub written: Vec<String>,
    /// Runs taken from the journal (`--resume`), of `runs` (greedy's not counted).
    pub reused: usize,
    pub runs: usize,
}

/// A problem ready to run.
pub struct Prepared {
    label: String,
    file: PathBuf,
    problem: Problem,
    graph: String,
    /// The graph of the manifest its file's problem is applied to.
    source_graph: Option<(String, PathBuf)>,
    /// What decides its runs' results ([`Journal::problem_basis`]).
    basis: Fnv1a,
}

/// Where a problem comes from: a file, and a graph of the manifest.
struct Source {
    file: PathBuf,
    graph: Option<(String, PathBuf)>,
}

/// Runs the comparison `config` describes and writes its files into
/// `config.out`. Its strategies must be known (the command line checks
/// their names and flags first). Progress lines and warnings go to `log`.
pub fn run(config: &Config, log: Log) -> Result<Report> {
    // Greedy first, the baseline of the progress lines; then every run of
    // every problem at once, each on its own judge and seed, so the results
    // do not depend on how many run together.
    let compare = Compare::prepare(config, log)?;
    let (results, reused) = compare.run_local(log);
    compare.finish(results, reused, log)
}

/// Compiles each source into a problem ready to run, with its label and
/// the basis of its runs' fingerprints; a graph the file does not compile
/// with is skipped.
fn prepare(config: &Config, sources: &[Source], skipped: &mut Vec<Skipped>, log: Log) -> Result<Vec<Prepared>> {
    let mut prepared: Vec<Prepared> = Vec::new();
    let multi_file = config.files.len() > 1;
    for src in sources {
        let stem = src.file.file_stem().and_then(|s| s.to_str()).unwrap_or("problem");
        let compiled = match &src.graph {
            None => compile_file(&src.file),
            Some((name, path)) => match load_graph_file(path) {
                Ok(g) => compile_file_with_graph(&src.file, Arc::new(g)),
                Err(e) => {
                    // A file of the data set that does not load is a broken
                    // data set: said before any run, not left out quietly.
                    return Err(
                        Error::input(format!("cannot load the graph `{name}`: {}", e.message)).with_help(format!(
                            "mend `{}` or take it out of the manifest of `{}`",
                            path.display(),
                            config.graphs.as_deref().unwrap_or(Path::new(".")).display()
                        )),
                    );
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
                None => return Err(Error::diagnostics(&compiled)),
                Some((g, _)) => {
                    let label = graph_label(multi_file, stem, g);
                    let text = render_text(&compiled.program.sources, &compiled.diags);
                    skip(
                        skipped,
                        &label,
                        format!(
                            "`{}` does not compile with this graph:\n{}",
                            src.file.display(),
                            text.trim_end()
                        ),
                        log,
                    );
                    continue;
                }
            }
        }
        let p = compiled
            .problem(config.problem.as_deref())
            .map_err(|m| Error::input(format!("{}: {m}", src.file.display())))?;
        let taken: Vec<&str> = prepared.iter().map(|q| q.label.as_str()).collect();
        let label = unique(&taken, skipped, label_for(p));
        let graph = match &src.graph {
            Some((g, _)) => g.clone(),
            None => p.graph.name.clone(),
        };
        let texts: Vec<&str> = compiled.program.sources.files().iter().map(|f| &*f.text).collect();
        let mut problem = p.clone();
        if let Some(m) = config.objective {
            crate::cost::objective::set_metric(&mut problem, m);
        }
        prepared.push(Prepared {
            label,
            file: src.file.clone(),
            basis: Journal::problem_basis(&problem, &texts),
            problem,
            graph,
            source_graph: src.graph.clone(),
        });
    }
    Ok(prepared)
}

/// Writes the tables, curves and figures into `config.out`; gives the
/// names written. Everything is drawn before anything is written.
fn write_files(
    config: &Config,
    problems: &[ProblemRuns],
    summary: &Summary,
    markdown: &str,
    figures: &serde_json::Value,
) -> Result<Vec<String>> {
    let mut written = vec!["curves.csv", "summary.csv", "summary.md", "figures.json", "overall.svg"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let mut writes: Vec<(PathBuf, String)> = vec![
        (config.out.join("curves.csv"), render::curves_csv(problems)),
        (config.out.join("summary.csv"), render::summary_csv(summary)),
        (config.out.join("summary.md"), markdown.to_string()),
        (
            config.out.join("figures.json"),
            serde_json::to_string_pretty(figures).unwrap_or_default() + "\n",
        ),
    ];
    let svg = plot::plot(
        "Improvement over greedy, geometric mean over problems",
        "best-so-far improvement over greedy",
        config.budget,
        &summary.overall_lines(),
    )
    .map_err(|e| Error::output(format!("cannot draw overall.svg: {e}")))?;
    writes.push((config.out.join("overall.svg"), svg));
    for pr in problems {
        let (y, lines) = plot::problem_lines(pr, &config.strategies, config.budget);
        let svg = plot::plot(&pr.label, y, config.budget, &lines)
            .map_err(|e| Error::output(format!("cannot draw the curves of `{}`: {e}", pr.label)))?;
        let dir = problem_folder(&pr.label);
        std::fs::create_dir_all(config.out.join(&dir))
            .map_err(|e| Error::output(format!("cannot create `{}`: {e}", config.out.join(&dir).display())))?;
        written.push(format!("{dir}/curves.svg"));
        writes.push((config.out.join(&dir).join("curves.svg"), svg));
    }
    for (path, text) in &writes {
        std::fs::write(path, text).map_err(|e| Error::output(format!("cannot write `{}`: {e}", path.display())))?;
    }
    Ok(written)
}

/// The problems to run: each file, or each file on each graph of the split.
fn sources(config: &Config) -> std::result::Result<Vec<Source>, (String, Option<String>)> {
    let files = &config.files;
    let Some(dir) = &config.graphs else {
        return Ok(files
            .iter()
            .map(|f| Source {
                file: f.clone(),
                graph: None,
            })
            .collect());
    };
    let picked: Vec<(String, PathBuf)> = crate::graph::manifest::entries(dir, config.split.as_deref())?
        .into_iter()
        .filter(|e| e.fits(config.max_nodes))
        .map(|e| (e.name, e.path))
        .collect();
    if picked.is_empty() {
        return Err((
            format!(
                "no graph of `{}` has at most {} nodes",
                dir.display(),
                config.max_nodes.unwrap_or(0)
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
fn unique(labels: &[&str], skipped: &[Skipped], label: String) -> String {
    let taken = |l: &str| labels.contains(&l) || skipped.iter().any(|s| s.0 == l);
    if !taken(&label) {
        return label;
    }
    (2..)
        .map(|i| format!("{label}-{i}"))
        .find(|l| !taken(l))
        .unwrap_or(label)
}

fn skip(skipped: &mut Vec<Skipped>, label: &str, why: String, log: Log) {
    log(&format!("warning: skipping `{label}`: {why}"));
    skipped.push((label.to_string(), why));
}

/// A problem's folder (its curves, its kept runs): its label when that is a
/// safe name, else the safe name and a hash of the label, since labels are
/// unique and their safe names need not be (`a:b`, `a_b`).
pub fn problem_folder(label: &str) -> String {
    match safe_name(label) {
        s if s == label => s,
        s => format!("{s}-{}", &crate::digest::fnv1a(label.as_bytes())[..8]),
    }
}

/// A file or folder name for a label.
pub fn safe_name(label: &str) -> String {
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
    fn folder_names_are_safe() {
        assert_eq!(safe_name("a:b/c d"), "a_b_c_d");
        assert_eq!(safe_name(".."), "p..");
        // Two labels with one safe name get two folders; a safe label is its own.
        assert_eq!(problem_folder("bert-base"), "bert-base");
        assert!(problem_folder("a:b").starts_with("a_b-"));
        assert_ne!(problem_folder("a:b"), problem_folder("a/b"));
    }
}
