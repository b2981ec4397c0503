//! `mcmpart solve`: run a strategy within a budget, write the best valid
//! partition, and say how it compares with greedy and with the bound.

use super::args::{counting, seconds};
use super::deadline::{Clock, Worker, MARGIN};
use super::eval::secs;
use super::judge_args::EvalArgs;
use super::output::{compile, progress_bar, refuse_overwriting, Output};
use super::problem::chosen;
use super::strategy_args::{self, RlArgs};
use crate::baseline::{baseline_within, Baseline};
use crate::cost::objective::set_metric;
use crate::cost::Judge;
use crate::error::{Error, Kind, Result, Status};
use crate::lang::Compiled;
use crate::problem::{partition_json, read_partition, write_partition, Placement, Problem};
use crate::strategy::{self, Best, Budget, Outcome, Progress, SampleRecord};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The strategy `solve` runs when none is named under a sample budget: the
/// best the project has at a few samples (see the book's comparison table).
pub const DEFAULT_STRATEGY: &str = "dp";

/// The strategy `solve` runs when none is named under `--time`: the
/// portfolio. Not under a sample budget: a SAT question that finds nothing
/// costs no sample, so samples do not bound its time.
pub const DEFAULT_TIMED_STRATEGY: &str = "auto";

#[derive(clap::Args, Debug, Clone)]
pub struct SolveArgs {
    /// The problem, when the file declares several.
    #[arg(long)]
    pub problem: Option<String>,
    /// greedy, random, anneal, dp, rl, rl-zero-shot, rl-scratch, rl-nosolver,
    /// exact, lns, auto, a heuristic of the literature: hash,
    /// critical-path, m-topo, m-etf, m-sct, metis, parmesan, or a learned
    /// placer of the literature: hdp, placeto, placeto-tune,
    /// placeto-scratch, gdp, gdp-scratch, mars, mars-nopretrain (default:
    /// auto with `--time`, dp otherwise).
    #[arg(long)]
    pub strategy: Option<String>,
    /// Budget in samples (evaluated partitions); 1000 when neither
    /// `--budget` nor `--time` is given.
    #[arg(long, conflicts_with = "time", value_parser = counting)]
    pub budget: Option<usize>,
    /// A deadline in seconds for the whole command (loading, search,
    /// baseline): it answers within about T + 0.2 s with the best valid
    /// partition found, or exits 3 when none was found in time.
    #[arg(long, value_parser = seconds)]
    pub time: Option<f64>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the best partition (default: `<stem of FILE>.partition.json`, in the working folder).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Start from this partition file, repaired under every rule if needed:
    /// greedy returns it, dp and random judge it first, anneal starts its
    /// state there, rl refines it.
    #[arg(long, value_name = "P.json")]
    pub init: Option<PathBuf>,
    /// Search under this objective instead of the problem's: `throughput`,
    /// `step_time` (or `latency`).
    #[arg(long, value_parser = super::args::objective)]
    pub objective: Option<crate::problem::Metric>,
    #[command(flatten)]
    pub eval: EvalArgs,
    #[command(flatten)]
    pub rl: RlArgs,
}

impl SolveArgs {
    /// The strategy named, else the default for the budget.
    pub fn strategy(&self) -> &str {
        match (&self.strategy, self.time) {
            (Some(s), _) => s,
            (None, Some(_)) => DEFAULT_TIMED_STRATEGY,
            (None, None) => DEFAULT_STRATEGY,
        }
    }

    pub fn budget(&self) -> Budget {
        match (self.budget, self.time) {
            (_, Some(t)) => Budget::Seconds(t.max(0.0)),
            (Some(n), None) => Budget::Samples(n),
            (None, None) => Budget::Samples(1000),
        }
    }
}

pub fn run(out: &Output, file: &Path, args: &SolveArgs) -> Result {
    // `--time` counts from here: loading, the search and the baseline.
    let clock = Clock::start(args.time);
    watch_ctrl_c();
    strategy_args::check(&[args.strategy()], &args.rl)?;
    // The name is known: what fails now is its checkpoint, an input.
    let mut strat = strategy_args::build(args.strategy(), &args.rl)?;
    let dest = args.out.clone().unwrap_or_else(|| default_out(file));
    let loaded = load(file, args, &dest, &clock)?;
    let p = loaded.problem();
    let bar = progress_bar(out, args.budget());
    let live = Arc::new(Mutex::new(Live::default()));
    let searching = Instant::now();
    let worker = Worker::spawn({
        let (loaded, live, bar, seed) = (loaded.clone(), live.clone(), bar.clone(), args.seed);
        // The search gets what is left of `--time`.
        let budget = match clock.work_left() {
            Some(t) => Budget::Seconds(t),
            None => args.budget(),
        };
        move |send: &dyn Fn(Searched)| {
            let p = loaded.problem();
            let mut tick = |r: &Progress| {
                if let Some(b) = &bar {
                    match budget {
                        Budget::Samples(_) => b.set_position(r.record.sample as u64),
                        Budget::Seconds(_) => b.set_position((r.record.elapsed_s * 10.0) as u64),
                    }
                    if let Some(t) = r.record.best {
                        b.set_message(format!("best {t:.2}/s"));
                    }
                }
                if let Ok(mut l) = live.lock() {
                    l.note(r);
                }
            };
            let start = loaded.init.as_ref().map(|pl| pl.chips.as_slice());
            let result = strategy::run_from(p, &loaded.judge, strat.as_mut(), budget, seed, Some(&mut tick), start);
            send(result);
        }
    })
    .map_err(|e| Error::internal(format!("cannot start the search: {e}")))?;
    // Greedy's one partition, on the search's judge, not counted in the
    // budget. Under `--time` it runs beside the search, within the same
    // deadline; without, after it (so the search has the machine to itself).
    // On a graph too large for auto's whole portfolio, after it under
    // `--time` too: two solvers over a million nodes at once would take
    // twice the memory.
    let large = !strategy::whole_portfolio(p.graph.num_placed());
    let greedy = |loaded: Arc<Loaded>, seed: u64, budget: Budget| {
        Worker::spawn(move |send: &dyn Fn(Baseline)| {
            send(baseline_within(loaded.problem(), &loaded.judge, seed, budget))
        })
        .map_err(|e| Error::internal(format!("cannot start the baseline: {e}")))
    };
    let beside = match clock.work_left() {
        Some(t) if !large => Some(greedy(loaded.clone(), args.seed, Budget::Seconds(t))?),
        _ => None,
    };
    // After Ctrl-C the search is waited for a moment only: a SAT call
    // cannot be interrupted.
    let stopped = std::cell::Cell::new(None::<Instant>);
    let searched = worker.next_unless(clock.hard(), || {
        strategy::stop_requested() && {
            let asked = stopped.get().unwrap_or_else(Instant::now);
            stopped.set(Some(asked));
            asked.elapsed() >= AFTER_CTRL_C
        }
    });
    let deadline_passed = clock.hard().is_some_and(|h| Instant::now() >= h);
    let ctrl_c = strategy::stop_requested();
    // The baseline runs even after Ctrl-C.
    strategy::clear_stop();
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let sources = &loaded.compiled.program.sources;
    let how = How {
        limit: clock.limit(),
        late: searched.is_none(),
        moved: None,
    };
    let (outcome, how) = match searched {
        Some(r) => {
            let (o, moved) = r.map_err(|inf| Error::infeasible(p, &inf, sources))?;
            (o, How { moved, ..how })
        }
        // A step that cannot be interrupted outlived the deadline or Ctrl-C:
        // what the search had found by then is the answer.
        None if !(deadline_passed || ctrl_c) => {
            return Err(
                Error::internal("internal error: the search ended without an answer (its panic is above)")
                    .with_help("please report this with the .mcm file"),
            );
        }
        None => {
            strategy::request_stop();
            let mut o = match live.lock() {
                Ok(l) => l.outcome(args.strategy(), args.seed, searching.elapsed().as_secs_f64()),
                Err(e) => e
                    .into_inner()
                    .outcome(args.strategy(), args.seed, searching.elapsed().as_secs_f64()),
            };
            o.interrupted = ctrl_c && !deadline_passed;
            (o, how)
        }
    };
    let base = match beside {
        // Past the deadline, a baseline not ready is not waited for; after
        // Ctrl-C, a moment only.
        Some(w) if how.late => w.next(Some(Instant::now())),
        Some(w) if outcome.interrupted => w.next(Some(Instant::now() + AFTER_CTRL_C)),
        Some(w) => w.next(clock.hard()),
        // After Ctrl-C, greedy gets a moment, not as long as it takes (on
        // tight rules its first valid partition can take minutes).
        None if outcome.interrupted => {
            let budget = Budget::Seconds(AFTER_CTRL_C.as_secs_f64());
            greedy(loaded.clone(), args.seed, budget)?.next(Some(Instant::now() + AFTER_CTRL_C + MARGIN))
        }
        None => match clock.work_left() {
            Some(t) => greedy(loaded.clone(), args.seed, Budget::Seconds(t))?.next(clock.hard()),
            None => greedy(loaded.clone(), args.seed, Budget::Samples(1))?.next(None),
        },
    };
    let done = report(out, p, &loaded.judge, &outcome, base.as_ref(), &dest, &how);
    // The process ends with the command: freeing a large problem would
    // only add to the time `--time` bounds.
    std::mem::forget(loaded);
    done
}

/// How long the search is waited for after Ctrl-C, and how long greedy's
/// baseline may take then.
const AFTER_CTRL_C: Duration = Duration::from_secs(1);

/// What the search hands over.
type Searched = std::result::Result<(Outcome, Option<usize>), crate::solver::Infeasible>;

/// The problem, its judge and the starting partition, loaded under the clock.
struct Loaded {
    compiled: Compiled,
    /// Which of `compiled.problems`.
    index: usize,
    judge: Judge,
    init: Option<Placement>,
}

impl Loaded {
    fn problem(&self) -> &Problem {
        &self.compiled.problems[self.index]
    }
}

/// Compiles the file, picks the problem, makes its judge and reads `--init`,
/// on a thread of its own: on a huge graph this alone can outlast `--time`,
/// and then `solve` says so at the deadline.
fn load(file: &Path, args: &SolveArgs, dest: &Path, clock: &Clock) -> Result<Arc<Loaded>> {
    let (file, dest, args) = (file.to_path_buf(), dest.to_path_buf(), args.clone());
    let worker = Worker::spawn(move |send: &dyn Fn(Result<Loaded>)| {
        send((|| -> Result<Loaded> {
            let mut compiled = compile(&file)?;
            refuse_overwriting(&dest, &compiled.inputs(), "the problem is read from")?;
            let index = chosen(&compiled, args.problem.as_deref())?;
            if let Some(m) = args.objective {
                set_metric(&mut compiled.problems[index], m);
            }
            let p = &compiled.problems[index];
            let judge = Judge::new(p, &args.eval.options())?;
            // The reader refuses another graph's file, unknown nodes and chips
            // past the package, with the place.
            let init = match &args.init {
                Some(f) => Some(read_partition(f, &p.graph, p.package.num_chips())?),
                None => None,
            };
            Ok(Loaded {
                compiled,
                index,
                judge,
                init,
            })
        })())
    })
    .map_err(|e| Error::internal(format!("cannot start loading: {e}")))?;
    match worker.next(clock.hard()) {
        Some(loaded) => loaded.map(Arc::new),
        None => Err(Error::new(
            Kind::Timeout,
            format!(
                "no valid partition within {}: loading the problem took longer",
                secs(clock.limit().unwrap_or(0.0))
            ),
        )
        .with_help("give `--time` more seconds; `mcmpart check` shows how long loading takes")),
    }
}

/// What the search left so far, kept as it runs: the answer when a step
/// that cannot be interrupted outlives the deadline.
#[derive(Default)]
struct Live {
    best: Option<Best>,
    records: Vec<SampleRecord>,
    invalid: BTreeMap<String, usize>,
}

impl Live {
    fn note(&mut self, r: &Progress) {
        self.records.push(r.record.clone());
        if let Some(why) = r.invalid {
            *self.invalid.entry(why.to_string()).or_default() += 1;
        }
        if r.best.map(|b| b.sample) != self.best.as_ref().map(|b| b.sample) {
            self.best = r.best.cloned();
        }
    }

    fn outcome(&self, strategy: &str, seed: u64, elapsed_s: f64) -> Outcome {
        Outcome {
            strategy: strategy.to_string(),
            seed,
            best: self.best.clone(),
            records: self.records.clone(),
            invalid: self.invalid.clone(),
            solver: Default::default(),
            elapsed_s,
            failure: None,
            interrupted: false,
            proven_bound_s: None,
        }
    }
}

/// How a search ended, besides its outcome.
#[derive(Clone, Copy, Debug, Default)]
struct How {
    /// The `--time` given.
    limit: Option<f64>,
    /// The search had not returned at the deadline (plus the margin).
    late: bool,
    /// With `--init`, how many of its nodes the repair moved.
    moved: Option<usize>,
}

/// Ctrl-C stops the search at its next sample, and `solve` writes the best
/// so far and exits 130; a second Ctrl-C exits at once.
fn watch_ctrl_c() {
    // Its own flag, not the searches' (cleared for the baseline after the
    // search): a second Ctrl-C at any point quits.
    static PRESSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let set = ctrlc::set_handler(|| {
        if PRESSED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping at the next sample (Ctrl-C again to quit at once)");
        strategy::request_stop();
    });
    if let Err(e) = set {
        eprintln!("warning: Ctrl-C will not keep the best partition: {e}");
    }
}

fn default_out(file: &Path) -> PathBuf {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("best");
    PathBuf::from(format!("{stem}.partition.json"))
}

/// A reason for invalid samples, with the wordings that differ from it only
/// in their numbers (a chip out of memory by 127.25 MiB or by 127.26 MiB).
#[derive(Clone, Debug, PartialEq)]
pub struct Reason {
    /// The most frequent wording.
    pub text: String,
    /// Samples, over every wording.
    pub count: usize,
    pub wordings: usize,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.wordings {
            1 => write!(f, "{}", self.text),
            k => write!(f, "{} (one of {k} wordings that differ only in numbers)", self.text),
        }
    }
}

/// The wording with every number (digits, possibly with a point) as `#`.
fn numbers_out(r: &str) -> String {
    let mut out = String::with_capacity(r.len());
    let mut in_number = false;
    for ch in r.chars() {
        let part = ch.is_ascii_digit() || (in_number && ch == '.');
        if part && !in_number {
            out.push('#');
        } else if !part {
            out.push(ch);
        }
        in_number = part;
    }
    out
}

/// The most common reasons for invalid samples, most samples first.
pub fn top_reasons(o: &Outcome, n: usize) -> Vec<Reason> {
    let mut groups: std::collections::BTreeMap<String, Reason> = std::collections::BTreeMap::new();
    for (text, &count) in &o.invalid {
        let g = groups.entry(numbers_out(text)).or_insert_with(|| Reason {
            text: text.clone(),
            count: 0,
            wordings: 0,
        });
        // The map is ordered by text, so ties keep the first wording.
        if count > o.invalid.get(&g.text).copied().unwrap_or(0) {
            g.text = text.clone();
        }
        g.count += count;
        g.wordings += 1;
    }
    let mut v: Vec<Reason> = groups.into_values().collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.text.cmp(&b.text)));
    v.truncate(n);
    v
}

/// `base`: `None` when the baseline was not ready by the deadline.
fn report(
    out: &Output,
    p: &Problem,
    judge: &Judge,
    o: &Outcome,
    base: Option<&Baseline>,
    dest: &Path,
    how: &How,
) -> Result {
    let greedy = base.and_then(|b| b.throughput());
    let moved = how.moved;
    if let Some(why) = &o.failure {
        // A failed run still keeps what it found (checked like any other).
        let kept = match &o.best {
            Some(b) => match write_partition(dest, &Placement::new(b.chips.clone()), &p.graph, p.package.num_chips()) {
                Ok(()) => format!("the best partition found before it is written to `{}`", dest.display()),
                Err(e) => format!("its best partition could not be written to `{}`: {e}", dest.display()),
            },
            None => "no valid partition was found before it".to_string(),
        };
        return Err(Error::search(format!(
            "strategy `{}` failed after {} sample(s): {why}",
            o.strategy,
            o.records.len()
        ))
        .with_help(kept));
    }
    let Some(best) = &o.best else {
        if o.interrupted {
            return Err(Error::new(
                Kind::Interrupted,
                format!(
                    "interrupted after {} sample(s), before any valid partition of `{}`",
                    o.records.len(),
                    p.name
                ),
            ));
        }
        let reasons = top_reasons(o, 3);
        let why = reasons.first().map(|r| r.to_string());
        if let Some(t) = how.limit {
            return Err(out_of_time(p, o, t, why));
        }
        let Some(why) = why else {
            return Err(Error::search(format!(
                "no valid partition of `{}`: strategy `{}` ended without a sample",
                p.name, o.strategy
            )));
        };
        return Err(Error::search(format!(
            "no valid partition of `{}` in {} sample(s): all {} were invalid at evaluation",
            p.name,
            o.records.len(),
            o.invalid_count()
        ))
        .with_help(format!("the most common reason: {why}")));
    };
    let pl = Placement::new(best.chips.clone());
    write_partition(dest, &pl, &p.graph, p.package.num_chips())
        .map_err(|e| Error::output(format!("cannot write `{}`: {e}", dest.display())))?;
    // Interrupted: what was found is written and reported as usual, and
    // the exit status says the budget was not spent.
    let done = if o.interrupted {
        Status::Interrupted
    } else {
        Status::Success
    };
    if o.interrupted {
        eprintln!(
            "interrupted after {} sample(s): the best so far is written",
            o.records.len()
        );
    }
    if how.late && !out.json {
        eprintln!("note: a step of the search did not stop in time: the best partition found by then is written");
    }
    // The bound is the analytical model's: proven of its latency, not of
    // an external evaluator's figure.
    let proven = base
        .and_then(|b| b.bound.as_ref())
        .filter(|_| judge.describe == "analytical")
        .map(|b| crate::cost::bounds::with_proved(b, o.proven_bound_s));
    let proven = proven.as_ref();
    let bound = base.and_then(|b| b.bound_throughput());
    let latency = 1.0 / best.throughput;
    let gap = proven.map(|b| latency / b.latency_s);
    let improvement = greedy.map(|g| best.throughput / g);
    let metric = p.objective.metric;
    if metric == crate::problem::Metric::StepTime {
        // The step as the simulator computes it (one over the score may
        // differ in the last bit); an evaluator's figure is its score's inverse.
        let step = judge
            .objective()
            .filter(|_| judge.describe == "analytical")
            .and_then(|m| m.cost(&best.chips).ok())
            .unwrap_or(latency);
        return report_step(out, p, judge, o, best, base, dest, how, step, proven).map(|()| done);
    }
    if out.json {
        let reasons: Vec<serde_json::Value> = top_reasons(o, 10)
            .into_iter()
            .map(|r| serde_json::json!({"reason": r.text, "count": r.count, "wordings": r.wordings}))
            .collect();
        out.print_json(&serde_json::json!({
            "ok": true, "problem": p.name, "strategy": o.strategy, "seed": o.seed, "judge": judge.describe,
            "objective": metric.name(),
            "out": dest.display().to_string(), "samples": o.records.len(), "elapsed_s": o.elapsed_s,
            "throughput": best.throughput, "latency_s": latency, "found_at_sample": best.sample,
            "greedy_throughput": greedy, "improvement_over_greedy": improvement,
            "bound_throughput": bound, "fraction_of_bound": bound.map(|b| best.throughput / b),
            "proven_bound_latency_s": proven.map(|b| b.latency_s), "proven_bound": proven,
            "gap": gap, "proven_optimal": gap.is_some_and(proven_optimal),
            "invalid": o.invalid_count(), "invalid_reasons": reasons, "solver": o.solver,
            "curve": o.records, "partition": partition_json(&pl, &p.graph, p.package.num_chips()),
            "interrupted": o.interrupted, "init_moved": moved, "stopped_at_deadline": how.late,
        }));
        return Ok(done);
    }
    print_found(o, best, dest);
    println!("throughput  {:.4} /s (latency {})", best.throughput, secs(latency));
    match (greedy, improvement) {
        (Some(g), Some(x)) => println!("vs greedy   {x:.3}x (greedy: {g:.4} /s)"),
        _ if base.is_none_or(|b| b.greedy.as_ref().is_ok_and(|g| g.records.is_empty())) => {
            println!("vs greedy   greedy's partition was not ready in time")
        }
        _ => println!("vs greedy   greedy found no valid partition"),
    }
    match (proven, base.and_then(|b| b.bound.as_ref())) {
        (Some(b), _) => println!("{}", bound_line(b, latency)),
        // Only an external evaluator can report more than the model's bound.
        (None, Some(b)) if latency < b.latency_s => println!(
            "vs bound    {:.3e} times the analytical bound {:.4} /s: the evaluator's figure exceeds the model's bound",
            b.latency_s / latency,
            1.0 / b.latency_s
        ),
        (None, Some(b)) => println!(
            "vs bound    the analytical model's bound {} ({}), not proven of the evaluator's figures",
            secs(b.latency_s),
            b.because
        ),
        (None, None) => {}
    }
    if let Some(m) = moved {
        println!("start       the given partition, {m} node(s) moved by the repair");
    }
    let bad = o.invalid_count();
    println!("invalid     {bad} of {} samples", o.records.len());
    for r in top_reasons(o, 5) {
        println!("  {:>6}  {r}", r.count);
    }
    Ok(done)
}

/// The report under `minimize step_time`: the same as throughput's, in
/// the step's own terms (seconds of one step; greedy's step over the best).
#[allow(clippy::too_many_arguments)]
fn report_step(
    out: &Output,
    p: &Problem,
    judge: &Judge,
    o: &Outcome,
    best: &Best,
    base: Option<&Baseline>,
    dest: &Path,
    how: &How,
    step: f64,
    proven: Option<&crate::cost::Bound>,
) -> Result<()> {
    let greedy = base.and_then(|b| b.latency());
    let improvement = greedy.map(|g| g / step);
    let gap = proven.map(|b| step / b.latency_s);
    if out.json {
        let reasons: Vec<serde_json::Value> = top_reasons(o, 10)
            .into_iter()
            .map(|r| serde_json::json!({"reason": r.text, "count": r.count, "wordings": r.wordings}))
            .collect();
        let pl = Placement::new(best.chips.clone());
        out.print_json(&serde_json::json!({
            "ok": true, "problem": p.name, "strategy": o.strategy, "seed": o.seed, "judge": judge.describe,
            "objective": p.objective.metric.name(),
            "out": dest.display().to_string(), "samples": o.records.len(), "elapsed_s": o.elapsed_s,
            "step_time_s": step, "found_at_sample": best.sample,
            "greedy_step_time_s": greedy, "improvement_over_greedy": improvement,
            "bound_step_time_s": proven.map(|b| b.latency_s), "proven_bound": proven,
            "gap": gap, "proven_optimal": gap.is_some_and(proven_optimal),
            "invalid": o.invalid_count(), "invalid_reasons": reasons, "solver": o.solver,
            "curve": o.records, "partition": partition_json(&pl, &p.graph, p.package.num_chips()),
            "interrupted": o.interrupted, "init_moved": how.moved, "stopped_at_deadline": how.late,
        }));
        return Ok(());
    }
    print_found(o, best, dest);
    println!("step time   {}", secs(step));
    match (greedy, improvement) {
        (Some(g), Some(x)) => println!("vs greedy   {x:.3}x faster (greedy: {})", secs(g)),
        _ if base.is_none_or(|b| b.greedy.as_ref().is_ok_and(|g| g.records.is_empty())) => {
            println!("vs greedy   greedy's partition was not ready in time")
        }
        _ => println!("vs greedy   greedy found no valid partition"),
    }
    match (proven, base.and_then(|b| b.bound.as_ref())) {
        (Some(b), _) => println!("{}", bound_line(b, step)),
        (None, Some(b)) => println!(
            "vs bound    the step-time model's bound {} ({}), not proven of the evaluator's figures",
            secs(b.latency_s),
            b.because
        ),
        (None, None) => {}
    }
    if let Some(m) = how.moved {
        println!("start       the given partition, {m} node(s) moved by the repair");
    }
    println!("invalid     {} of {} samples", o.invalid_count(), o.records.len());
    for r in top_reasons(o, 5) {
        println!("  {:>6}  {r}", r.count);
    }
    Ok(())
}

/// No valid partition was found within `--time` (`t` seconds): exit 3,
/// which is neither "infeasible" nor a failed search. `why`: the most
/// common reason samples were invalid, when some were taken.
/// The first line of a text report, whatever the objective: the strategy,
/// its samples and time, and where the best partition went.
fn print_found(o: &Outcome, best: &Best, dest: &Path) {
    println!(
        "{}: best of {} samples in {} (found at sample {}), written to {}",
        o.strategy,
        o.records.len(),
        secs(o.elapsed_s),
        best.sample,
        dest.display()
    );
}

fn out_of_time(p: &Problem, o: &Outcome, t: f64, why: Option<String>) -> Error {
    let help = match why {
        None => format!(
            "the search for a first valid partition was cut short after {}: give it more time (`--time`)",
            secs(o.elapsed_s)
        ),
        Some(why) => format!(
            "{} sample(s), all invalid at evaluation; the most common reason: {why}",
            o.records.len()
        ),
    };
    Error::new(
        Kind::Timeout,
        format!("no valid partition of `{}` found within {}", p.name, secs(t)),
    )
    .with_help(help)
}

/// Whether a latency equals the proven bound up to rounding: the bound and
/// the model sum the same flops in other orders.
pub fn proven_optimal(gap: f64) -> bool {
    (gap - 1.0).abs() <= 1e-9
}

/// `vs bound    L proven by WHY: gap G` (`proven optimal` at gap 1).
pub fn bound_line(b: &crate::cost::Bound, latency: f64) -> String {
    let gap = latency / b.latency_s;
    let verdict = if proven_optimal(gap) {
        "proven optimal".to_string()
    } else {
        format!("gap {gap:.2}x")
    };
    format!("vs bound    {} proven ({}): {verdict}", secs(b.latency_s), b.because)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that failed exits 1, saying why, and still writes the best
    /// partition it found before (no data is lost).
    #[test]
    fn a_failed_run_exits_1_and_keeps_its_best_partition() {
        use crate::cost::{Judge, JudgeOptions};
        let text = "use std::placement::{acyclic_flow}\nuse std::topologies::ring\n\
                    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { a { flops = 1 GFLOP } -> b -> c }\npartition g onto t { require acyclic_flow }\n";
        let dir = std::env::temp_dir().join(format!("mcmpart-failed-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = crate::lang::compile_str("t.mcm", text, &dir);
        let p = c.problem(None).unwrap();
        let judge = Judge::new(p, &JudgeOptions::default()).unwrap();
        let base = crate::baseline::baseline(p, &judge, 0);
        let mut o = base.greedy.clone().unwrap();
        let dest = dir.join("best.partition.json");
        let out = Output { json: false };
        assert_eq!(
            report(&out, p, &judge, &o, Some(&base), &dest, &How::default()).unwrap(),
            Status::Success
        );
        std::fs::remove_file(&dest).unwrap();
        o.failure = Some("a tensor went missing".into());
        let e = report(&out, p, &judge, &o, Some(&base), &dest, &How::default()).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(e.message.contains("a tensor went missing"), "{e}");
        assert!(dest.exists(), "the best partition is kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Reasons that differ only in numbers are counted as one, shown by
    /// their most frequent wording.
    #[test]
    fn reasons_group_wordings_that_differ_in_numbers() {
        let mut o = crate::strategy::Outcome {
            strategy: "t".into(),
            seed: 0,
            best: None,
            records: Vec::new(),
            invalid: Default::default(),
            solver: Default::default(),
            elapsed_s: 0.0,
            failure: None,
            interrupted: false,
            proven_bound_s: None,
        };
        for (r, c) in [
            ("chip `die[0]` runs out of memory: 127.25 MiB exceed 128 MiB", 2),
            ("chip `die[0]` runs out of memory: 127.3 MiB exceed 128 MiB", 5),
            ("chip `die[12]` runs out of memory: 99 MiB exceed 128 MiB", 1),
            ("breaks `acyclic_flow`", 6),
        ] {
            o.invalid.insert(r.into(), c);
        }
        assert_eq!(numbers_out("die[12] at 1.5 MiB."), "die[#] at # MiB.");
        let top = top_reasons(&o, 2);
        assert_eq!(
            top,
            vec![
                Reason {
                    text: "chip `die[0]` runs out of memory: 127.3 MiB exceed 128 MiB".into(),
                    count: 8,
                    wordings: 3
                },
                Reason {
                    text: "breaks `acyclic_flow`".into(),
                    count: 6,
                    wordings: 1
                },
            ]
        );
        assert!(top[0]
            .to_string()
            .ends_with("(one of 3 wordings that differ only in numbers)"));
        assert_eq!(top[1].to_string(), "breaks `acyclic_flow`");
    }
}
