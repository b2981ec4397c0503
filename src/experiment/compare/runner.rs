//! A comparison as jobs: [`Compare::prepare`] compiles the problems, runs
//! greedy's baseline on each and lists the jobs (problem × strategy ×
//! seed); each job runs alone ([`Compare::run_job`], or [`run_job`] from a
//! [`JobSpec`] in another process), is kept in the journal as it finishes
//! ([`Compare::save`]), and [`Compare::finish`] writes the tables and
//! figures. The command line runs the jobs on threads ([`Compare::run_local`]);
//! `python -m mcmpart.distributed compare` runs them as Ray tasks.

use super::journal::{self, Journal, Stale};
use super::summary::{ProblemRuns, Summary};
use super::{render, skip, sources, write_files, Config, Log, Prepared, Report, Skipped};
use crate::baseline::baseline;
use crate::cost::Judge;
use crate::error::{conflicting, Error, Result};
use crate::problem::Problem;
use crate::quantity::{format_quantity, Dim};
use crate::solver::Infeasible;
use crate::strategy::{self, Budget, Outcome};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Greedy's run on a problem, the baseline of its figures.
struct Greedy {
    /// What judged it.
    judge: String,
    /// Its throughput; `None` when its partition is invalid at evaluation.
    throughput: Option<f64>,
    bound: Option<f64>,
    run: Outcome,
}

/// One run of a comparison: a strategy with a seed on a problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The problem's index among the prepared ones.
    pub problem: usize,
    pub strategy: String,
    pub seed: u64,
}

/// What another process needs to make a job's run: where its problem comes
/// from, the job, and the fingerprint the run must carry (a worker that
/// compiles another problem from the same path, say from other files,
/// refuses the job instead of returning a run of something else).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobSpec {
    pub file: PathBuf,
    /// The graph of the manifest the file's problem is applied to.
    pub graph: Option<(String, PathBuf)>,
    pub strategy: String,
    pub seed: u64,
    pub fingerprint: String,
}

/// A comparison ready to run: its problems with their greedy baselines,
/// and its jobs. Holds the output folder's lock until dropped.
pub struct Compare {
    config: Config,
    prepared: Vec<Prepared>,
    baselines: Vec<Option<Greedy>>,
    skipped: Vec<Skipped>,
    jobs: Vec<Job>,
    journal: Journal,
    /// Progress lines given (`[done/total]`).
    done: Mutex<usize>,
    total: usize,
    _lock: std::fs::File,
}

impl Compare {
    /// Reads and compiles the problems of `config`, takes its output
    /// folder, runs greedy on each problem (a problem without a valid
    /// partition is skipped, with a warning in `log`) and lists the jobs.
    pub fn prepare(config: &Config, log: Log) -> Result<Compare> {
        for f in &config.files {
            if let Err(e) = std::fs::read(f) {
                return Err(Error::input(format!("cannot read `{}`: {e}", f.display())));
            }
        }
        let sources = sources(config).map_err(|(m, help)| Error::input(m).with_help_opt(help))?;
        std::fs::create_dir_all(&config.out)
            .map_err(|e| Error::output(format!("cannot create `{}`: {e}", config.out.display())))?;
        // Held until this compare ends (the OS lets go of it if it is killed).
        let lock = journal::lock(&config.out).map_err(|(m, help)| Error::input(m).with_help(help))?;
        let mut skipped: Vec<Skipped> = Vec::new();
        let prepared = super::prepare(config, &sources, &mut skipped, log)?;
        // Greedy first, the baseline of the progress lines.
        let mut baselines: Vec<Option<Greedy>> = Vec::with_capacity(prepared.len());
        for q in &prepared {
            match run_greedy(&q.problem, config) {
                Ok(b) => baselines.push(Some(b)),
                Err(why) => {
                    skip(&mut skipped, &q.label, why, log);
                    baselines.push(None);
                }
            }
        }
        let jobs: Vec<Job> = (0..prepared.len())
            .filter(|&i| baselines[i].is_some())
            .flat_map(|i| {
                config.strategies.iter().filter(|n| *n != "greedy").flat_map(move |n| {
                    (0..config.repeats).map(move |r| Job {
                        problem: i,
                        strategy: n.clone(),
                        seed: config.seed.wrapping_add(r as u64),
                    })
                })
            })
            .collect();
        let total = baselines.iter().flatten().count() + jobs.len();
        let c = Compare {
            journal: Journal::new(&config.out, config.resume),
            config: config.clone(),
            prepared,
            baselines,
            skipped,
            jobs,
            done: Mutex::new(0),
            total,
            _lock: lock,
        };
        for (q, b) in c.prepared.iter().zip(&c.baselines) {
            if let Some(g) = b {
                c.report_run(&q.label, &g.run, g.throughput, log);
            }
        }
        Ok(c)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The jobs, in the order of the summaries.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// The label of a job's problem (its folder in the journal).
    pub fn label(&self, k: usize) -> &str {
        &self.prepared[self.jobs[k].problem].label
    }

    /// The jobs, largest graphs first, so that the last runs to finish are
    /// short ones and no worker idles long at the end.
    pub fn schedule(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.jobs.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(self.prepared[self.jobs[k].problem].problem.graph.num_placed()));
        order
    }

    /// What decides job `k`'s run ([`Journal::fingerprint`]).
    pub fn fingerprint(&self, k: usize) -> String {
        let j = &self.jobs[k];
        Journal::fingerprint(&self.prepared[j.problem].basis, &j.strategy, j.seed, &self.config)
    }

    /// What another process needs to make job `k`'s run.
    pub fn spec(&self, k: usize) -> JobSpec {
        let j = &self.jobs[k];
        let q = &self.prepared[j.problem];
        JobSpec {
            file: q.file.clone(),
            graph: q.source_graph.clone(),
            strategy: j.strategy.clone(),
            seed: j.seed,
            fingerprint: self.fingerprint(k),
        }
    }

    /// Job `k`'s run from the journal, when resuming and a run made with
    /// the same settings is there; a file that cannot be read as one is
    /// said in `log` (the job runs again).
    pub fn resumed(&self, k: usize, log: Log) -> Option<Outcome> {
        let j = &self.jobs[k];
        let q = &self.prepared[j.problem];
        match self.journal.load(
            &q.label,
            (&j.strategy, j.seed),
            &self.fingerprint(k),
            &q.problem,
            self.config.budget,
        ) {
            Ok(o) => Some(o),
            Err(Stale::Unreadable(why)) => {
                log(&format!(
                    "warning: running `{}` {} seed {} again: {why}",
                    q.label, j.strategy, j.seed
                ));
                None
            }
            Err(Stale::Missing | Stale::Other) => None,
        }
    }

    /// Makes job `k`'s run here, on a judge of its own.
    pub fn run_job(&self, k: usize) -> std::result::Result<Outcome, String> {
        let j = &self.jobs[k];
        run_one(&self.prepared[j.problem].problem, &self.config, &j.strategy, j.seed)
    }

    /// Whether `o`, made elsewhere, is a run of job `k`: its strategy and
    /// seed, within the budget, its best partition valid on the problem.
    pub fn check(&self, k: usize, o: &Outcome) -> std::result::Result<(), String> {
        let j = &self.jobs[k];
        if o.strategy != j.strategy || o.seed != j.seed {
            return Err(format!(
                "a run of {} seed {} came back for {} seed {}",
                o.strategy, o.seed, j.strategy, j.seed
            ));
        }
        match o.inconsistency(&self.prepared[j.problem].problem, self.config.budget) {
            Some(why) => Err(format!("the run of {} seed {} is not sound: {why}", j.strategy, j.seed)),
            None => Ok(()),
        }
    }

    /// Keeps job `k`'s finished run in the journal (written to a temporary
    /// file and renamed into place, so a process killed while writing
    /// leaves no torn run file); a run that cannot be kept is said in `log`.
    pub fn save(&self, k: usize, o: &Outcome, log: Log) {
        let q = &self.prepared[self.jobs[k].problem];
        if let Err(why) = self
            .journal
            .save(&q.label, &q.problem.name, &self.fingerprint(k), o, log)
        {
            log(&format!("warning: the run is not kept for --resume: {why}"));
        }
    }

    /// The progress line of job `k`'s finished run (or its failure).
    pub fn report(&self, k: usize, r: &std::result::Result<Outcome, String>, log: Log) {
        let j = &self.jobs[k];
        let label = &self.prepared[j.problem].label;
        match r {
            Ok(o) => {
                let greedy = self.baselines[j.problem].as_ref().and_then(|b| b.throughput);
                self.report_run(label, o, greedy, log);
            }
            Err(why) => self.report_line(label, &j.strategy, j.seed, format!("failed: {why}"), log),
        }
    }

    fn report_line(&self, label: &str, strategy: &str, seed: u64, what: String, log: Log) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        // On stderr, terminal or not (`--json` too, its answer is on stdout):
        // a compare of hours runs in the background, and this log is how
        // one follows it.
        log(&format!(
            "[{done}/{}] {label} {strategy} seed {seed}: {what}",
            self.total
        ));
    }

    fn report_run(&self, label: &str, o: &Outcome, greedy: Option<f64>, log: Log) {
        let best = match (o.best.as_ref(), greedy) {
            (Some(b), Some(g)) => format!("{:.3}x over greedy", b.throughput / g),
            (Some(b), None) => format!("best {:.4} /s", b.throughput),
            (None, _) => "no valid partition".into(),
        };
        let what = format!(
            "{best}, {} samples in {}",
            o.records.len(),
            format_quantity(o.elapsed_s, Dim::TIME)
        );
        self.report_line(label, &o.strategy, o.seed, what, log);
    }

    /// Runs every job on this machine: each taken from the journal when
    /// resuming, else made and kept there. Gives each job's result, in
    /// job order, and how many were taken from the journal.
    pub fn run_local(&self, log: Log) -> (Vec<std::result::Result<Outcome, String>>, usize) {
        let schedule = self.schedule();
        let reused = AtomicUsize::new(0);
        // Plain threads, not rayon's: a rayon worker waiting for the judge's
        // evaluations would start other runs meanwhile, nesting them, so that
        // each run's clock would count the others'.
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<std::result::Result<Outcome, String>>>> =
            self.jobs.iter().map(|_| Mutex::new(None)).collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(self.jobs.len());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let worker = std::thread::Builder::new().stack_size(crate::WORKER_STACK);
                let spawned = worker.spawn_scoped(scope, || {
                    while let Some(&k) = schedule.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let r = match self.resumed(k, log) {
                            Some(o) => {
                                reused.fetch_add(1, Ordering::Relaxed);
                                Ok(o)
                            }
                            None => self.run_job(k).inspect(|o| self.save(k, o, log)),
                        };
                        self.report(k, &r, log);
                        *slots[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                    }
                });
                // The runs it would have taken are reported as not finished.
                if let Err(e) = spawned {
                    log(&format!("warning: a worker thread did not start: {e}"));
                }
            }
        });
        let results = slots
            .into_iter()
            .map(|s| {
                s.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| Err("the run did not finish".into()))
            })
            .collect();
        (results, reused.into_inner())
    }

    /// Gathers the jobs' results (`results[k]` is job `k`'s) into the
    /// summaries, and writes the tables, curves and figures into the
    /// output folder. A problem with a failed run is skipped, with a
    /// warning in `log`; `reused` counts the runs taken from the journal.
    pub fn finish(self, results: Vec<std::result::Result<Outcome, String>>, reused: usize, log: Log) -> Result<Report> {
        let Compare {
            config,
            prepared,
            baselines,
            mut skipped,
            jobs,
            ..
        } = self;
        if results.len() != jobs.len() {
            return Err(Error::input(format!(
                "{} results for {} jobs",
                results.len(),
                jobs.len()
            )));
        }
        let mut problems: Vec<ProblemRuns> = Vec::new();
        let mut results = jobs.iter().map(|j| j.problem).zip(results).peekable();
        for (i, (q, base)) in prepared.into_iter().zip(baselines).enumerate() {
            let Some(base) = base else { continue };
            let mut runs = vec![base.run];
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
                skip(&mut skipped, &q.label, why, log);
                continue;
            }
            problems.push(ProblemRuns {
                // An infinite bound (a graph without flops) would make every
                // fraction of it 0.
                bound: base.bound.filter(|b| b.is_finite()),
                nodes: q.problem.graph.num_placed(),
                chips: q.problem.package.num_chips(),
                problem: q.problem.name.clone(),
                label: q.label,
                file: q.file,
                graph: q.graph,
                judge: base.judge,
                objective: q.problem.objective.metric,
                greedy: base.throughput,
                runs,
            });
        }
        if problems.is_empty() {
            return Err(
                Error::input("no problem could be compared").with_help(match skipped.len() {
                    0 => "no graph to run on".to_string(),
                    n => format!("all {n} were skipped (see the warnings above)"),
                }),
            );
        }
        let budgets = config.table_budgets();
        let summary = Summary::new(&problems, &config.strategies, &budgets, &config.levels, config.budget);
        let markdown = render::markdown(&summary, &problems, &skipped, &config);
        let figures = render::figures_json(&problems, &skipped, &summary, &config, &budgets);
        let written = write_files(&config, &problems, &summary, &markdown, &figures)?;
        Ok(Report {
            problems,
            skipped,
            summary,
            markdown,
            figures,
            written,
            reused,
            runs: jobs.len(),
        })
    }
}

/// Makes a job's run from its spec alone (in a worker process): compiles
/// its problem, checks that it is the problem the job was planned on (the
/// fingerprint), and runs the strategy on a judge of its own. The same
/// result as the command line's for the same seed.
pub fn run_job(config: &Config, spec: &JobSpec) -> std::result::Result<Outcome, String> {
    let source = super::Source {
        file: spec.file.clone(),
        graph: spec.graph.clone(),
    };
    let mut skipped = Vec::new();
    let quiet: Log = &|_| {};
    let prepared =
        super::prepare(config, std::slice::from_ref(&source), &mut skipped, quiet).map_err(|e| e.to_string())?;
    let Some(q) = prepared.first() else {
        return Err(skipped
            .first()
            .map_or_else(|| "the problem did not compile".into(), |s| s.1.clone()));
    };
    let print = Journal::fingerprint(&q.basis, &spec.strategy, spec.seed, config);
    if print != spec.fingerprint {
        return Err(format!(
            "`{}` here is not the problem the job was planned on (its files differ, or the settings)",
            spec.file.display()
        ));
    }
    run_one(&q.problem, config, &spec.strategy, spec.seed)
}

/// Why a problem with no valid partition is skipped.
fn infeasible(p: &Problem, inf: &Infeasible) -> String {
    match conflicting(p, inf).as_slice() {
        [] => "the problem has no valid partition".into(),
        [one] => match crate::error::memory_over_total(p, inf) {
            Some(why) => format!("the problem has no valid partition: nothing satisfies `{one}` ({why})"),
            None => format!("the problem has no valid partition: nothing satisfies `{one}`"),
        },
        many => format!("the problem has no valid partition: {} conflict", many.join(", ")),
    }
}

/// Greedy's run on a judge of its own; `Err` says why the problem is skipped.
fn run_greedy(p: &Problem, config: &Config) -> std::result::Result<Greedy, String> {
    let j = Judge::new(p, &config.judge).map_err(|e| e.message)?;
    let b = baseline(p, &j, config.seed);
    let throughput = b.throughput();
    Ok(Greedy {
        judge: j.describe.clone(),
        throughput,
        bound: b.bound_throughput(),
        run: b.greedy.map_err(|i| infeasible(p, &i))?,
    })
}

/// One run of a strategy, on a judge of its own: its cache must not carry
/// one run's work to another.
fn run_one(p: &Problem, config: &Config, name: &str, seed: u64) -> std::result::Result<Outcome, String> {
    let mut s = strategy::by_name(name, &config.rl)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("unknown strategy `{name}`"))?;
    let j = Judge::new(p, &config.judge).map_err(|e| e.message)?;
    let o =
        strategy::run(p, &j, s.as_mut(), Budget::Samples(config.budget), seed, None).map_err(|i| infeasible(p, &i))?;
    match &o.failure {
        // Its curve would end early and read as a plateau.
        Some(why) => Err(format!("stopped after {} sample(s): {why}", o.records.len())),
        None if o.interrupted => Err(format!("interrupted after {} sample(s)", o.records.len())),
        None => Ok(o),
    }
}
