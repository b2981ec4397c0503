//! `mcmpart bench eval FILE`: how many partitions per second the step-time
//! simulator and the throughput model evaluate, one thread, on valid random
//! partitions of the file's problem (the inner loop of every search).

use super::bench::save;
use super::output::Output;
use super::problem::{with_problem, SolverArgs};
use crate::error::{Error, Result, Status};
use mcm_core::latency::LatencyModel;
use mcm_core::step_time::StepTimeModel;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// The .mcm file.
    pub file: PathBuf,
    /// How many valid partitions to draw (the solver's `sample`) and
    /// evaluate in turn.
    #[arg(long, default_value_t = 64, value_parser = super::args::counting)]
    pub partitions: usize,
    /// Seconds each model is timed for (whole rounds over the partitions).
    #[arg(long, default_value_t = 2.0, value_parser = super::args::positive)]
    pub seconds: f64,
    #[command(flatten)]
    pub solver: SolverArgs,
    /// Write the figures here as JSON.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

/// Seconds of CPU this thread has used: on a machine shared with other
/// work, the wall clock counts the time the thread waited for a core.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec it is given.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    if ok {
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    } else {
        f64::NAN
    }
}

/// One model's figures.
struct Rate {
    evaluations: usize,
    /// Per wall-clock second and per second of this thread's CPU time.
    per_second: f64,
    per_cpu_second: f64,
    /// The mean value, which also keeps the work from being optimized away.
    mean: f64,
}

/// Evaluates `parts` in whole rounds until `seconds` have passed.
fn rate(parts: &[Vec<u32>], seconds: f64, eval: impl Fn(&[u32]) -> f64) -> Rate {
    let (t, c) = (Instant::now(), thread_cpu_seconds());
    let (mut n, mut sum) = (0usize, 0.0);
    loop {
        for p in parts {
            sum += eval(p);
        }
        n += parts.len();
        let el = t.elapsed().as_secs_f64();
        if el >= seconds {
            let cpu = thread_cpu_seconds() - c;
            return Rate {
                evaluations: n,
                per_second: n as f64 / el,
                per_cpu_second: n as f64 / cpu.max(1e-12),
                mean: sum / n as f64,
            };
        }
    }
}

impl Rate {
    fn json(&self, mean: &str) -> serde_json::Value {
        serde_json::json!({
            "evaluations": self.evaluations,
            "per_second": self.per_second,
            "per_cpu_second": self.per_cpu_second,
            mean: self.mean,
        })
    }
}

pub fn run(out: &Output, args: &EvalArgs) -> Result {
    use crate::solver::{node_order, sample};
    use rand::SeedableRng;
    with_problem(
        &args.file,
        args.solver.problem.as_deref(),
        args.out.as_deref(),
        |p, sources| {
            let model_error = |e: mcm_core::latency::LatencyError| Error::input(e.message).with_help(e.help);
            let step = StepTimeModel::new(p.graph.clone(), p.package.clone()).map_err(model_error)?;
            let pipe = LatencyModel::new(p.graph.clone(), p.package.clone()).map_err(model_error)?;
            let mut solver = args.solver.solver(p, sources)?;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.solver.seed);
            let mut parts = Vec::with_capacity(args.partitions);
            for _ in 0..args.partitions {
                let order = node_order(&solver, args.solver.order, &mut rng);
                let pl =
                    sample(&mut solver, &order, None, &mut rng).map_err(|inf| Error::infeasible(p, &inf, sources))?;
                parts.push(pl.chips);
            }
            // A partition either model refuses (no route) would time an error.
            for ch in &parts {
                step.step_time(ch).map_err(Error::input)?;
                pipe.latency(ch).map_err(Error::input)?;
            }
            let step_rate = rate(&parts, args.seconds, |c| step.step_time(c).unwrap_or(f64::NAN));
            let pipe_rate = rate(&parts, args.seconds, |c| pipe.latency(c).unwrap_or(f64::NAN));
            let report = serde_json::json!({
                "problem": p.name,
                "graph": p.graph.name,
                "nodes": p.graph.num_placed(),
                "chips": p.package.num_chips(),
                "links": p.package.links.len(),
                "partitions": parts.len(),
                "seed": args.solver.seed,
                "step_time": step_rate.json("mean_step_time_s"),
                "throughput": pipe_rate.json("mean_latency_s"),
            });
            let printed = save(args.out.as_deref(), &report)?;
            if out.json {
                out.print_json(&printed);
            } else {
                println!(
                    "{} ({} nodes) on {} chips, {} random valid partitions, one thread:",
                    p.graph.name,
                    p.graph.num_placed(),
                    p.package.num_chips(),
                    parts.len()
                );
                for (name, r, what) in [("step time", &step_rate, "step"), ("throughput", &pipe_rate, "latency")] {
                    println!(
                        "  {name:<11} {:>8.0} evaluations/s ({:.0} per CPU second), mean {what} {}",
                        r.per_second,
                        r.per_cpu_second,
                        super::eval::secs(r.mean)
                    );
                }
            }
            Ok(Status::Success)
        },
    )
}
