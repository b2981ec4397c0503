//! Runs a comparison: greedy's baseline on each problem, then every
//! strategy and seed on every problem at once, each run taken from the
//! journal when `--resume` finds it there, else made and kept there.

use super::journal::{Journal, Stale};
use super::summary::ProblemRuns;
use super::{skip, Config, Log, Prepared, Skipped};
use crate::baseline::baseline;
use crate::cost::Judge;
use crate::error::conflicting;
use crate::problem::Problem;
use crate::quantity::{format_quantity, Dim};
use crate::solver::Infeasible;
use crate::strategy::{self, Budget, Outcome};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The runs of every problem that could be compared.
pub struct Runs {
    pub problems: Vec<ProblemRuns>,
    /// Runs taken from the journal, of `jobs` (greedy's not counted).
    pub reused: usize,
    pub jobs: usize,
}

/// Greedy's run on a problem, the baseline of its figures.
struct Greedy {
    /// What judged it.
    judge: String,
    /// Its throughput; `None` when its partition is invalid at evaluation.
    throughput: Option<f64>,
    bound: Option<f64>,
    run: Outcome,
}

/// Runs every strategy of `config` on every prepared problem; the problems
/// that cannot be compared are added to `skipped`, with a warning in `log`.
pub fn run_all(prepared: Vec<Prepared>, config: &Config, skipped: &mut Vec<Skipped>, log: Log) -> Runs {
    // Greedy first, the baseline of the progress lines; then every run of
    // every problem at once, each on its own judge and seed, so the results
    // do not depend on how many run together.
    let mut baselines: Vec<Option<Greedy>> = Vec::with_capacity(prepared.len());
    for q in &prepared {
        match run_greedy(&q.problem, config) {
            Ok(b) => baselines.push(Some(b)),
            Err(why) => {
                skip(skipped, &q.label, why, log);
                baselines.push(None);
            }
        }
    }
    let jobs: Vec<(usize, &str, u64)> = (0..prepared.len())
        .filter(|&i| baselines[i].is_some())
        .flat_map(|i| {
            config.strategies.iter().filter(|n| *n != "greedy").flat_map(move |n| {
                (0..config.repeats).map(move |r| (i, n.as_str(), config.seed.wrapping_add(r as u64)))
            })
        })
        .collect();
    // The largest graphs first, so that the last runs to finish are short
    // ones and no core idles long at the end.
    let mut schedule: Vec<usize> = (0..jobs.len()).collect();
    schedule.sort_by_key(|&k| std::cmp::Reverse(prepared[jobs[k].0].problem.graph.num_placed()));
    let journal = Journal::new(&config.out, config.resume);
    let reused = AtomicUsize::new(0);
    let total_runs = baselines.iter().flatten().count() + jobs.len();
    let done_runs = std::sync::Mutex::new(0usize);
    let report = |label: &str, strategy: &str, seed: u64, what: String| {
        let mut done = done_runs.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        // On stderr, terminal or not (`--json` too, its answer is on stdout):
        // a compare of hours runs in the background, and this log is how
        // one follows it.
        log(&format!("[{done}/{total_runs}] {label} {strategy} seed {seed}: {what}"));
    };
    let report_run = |label: &str, o: &Outcome, greedy: Option<f64>| {
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
        report(label, &o.strategy, o.seed, what);
    };
    for (q, b) in prepared.iter().zip(&baselines) {
        if let Some(g) = b {
            report_run(&q.label, &g.run, g.throughput);
        }
    }
    // A job's run: taken from the journal when resuming and it matches,
    // else made, and kept there.
    let run_or_resume = |k: usize| -> Result<Outcome, String> {
        let (i, name, seed) = jobs[k];
        let q = &prepared[i];
        let print = Journal::fingerprint(&q.basis, name, seed, config);
        match journal.load(&q.label, (name, seed), &print, &q.problem, config.budget) {
            Ok(o) => {
                reused.fetch_add(1, Ordering::Relaxed);
                return Ok(o);
            }
            Err(Stale::Unreadable(why)) => log(&format!(
                "warning: running `{}` {name} seed {seed} again: {why}",
                q.label
            )),
            Err(Stale::Missing | Stale::Other) => {}
        }
        let r = run_one(&q.problem, config, name, seed)?;
        if let Err(why) = journal.save(&q.label, &q.problem.name, &print, &r, log) {
            log(&format!("warning: the run is not kept for --resume: {why}"));
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
                        Ok(o) => report_run(&prepared[i].label, o, baselines[i].as_ref().and_then(|b| b.throughput)),
                        Err(why) => report(&prepared[i].label, name, seed, format!("failed: {why}")),
                    }
                    *slots[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
            // The runs it would have taken are reported as not finished.
            if let Err(e) = spawned {
                log(&format!("warning: a worker thread did not start: {e}"));
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
            skip(skipped, &q.label, why, log);
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
    Runs {
        problems,
        reused,
        jobs: jobs.len(),
    }
}

/// Why a problem with no valid partition is skipped.
fn infeasible(p: &Problem, inf: &Infeasible) -> String {
    match conflicting(p, inf).as_slice() {
        [] => "the problem has no valid partition".into(),
        [one] => format!("the problem has no valid partition: nothing satisfies `{one}`"),
        many => format!("the problem has no valid partition: {} conflict", many.join(", ")),
    }
}

/// Greedy's run on a judge of its own; `Err` says why the problem is skipped.
fn run_greedy(p: &Problem, config: &Config) -> Result<Greedy, String> {
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
fn run_one(p: &Problem, config: &Config, name: &str, seed: u64) -> Result<Outcome, String> {
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
