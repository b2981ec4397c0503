//! `mcmpart sample`: one valid partition by SAMPLE with uniform probabilities,
//! within `--time` when given.

use super::args::seconds;
use super::deadline::{Clock, Worker};
use super::eval::secs;
use super::output::Output;
use super::problem::{emit, with_problem, SolverArgs};
use crate::error::{Error, Kind, Result};
use crate::solver::{node_order, sample};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `sample`'s own flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SampleArgs {
    /// Where to write the partition.
    #[arg(short, long)]
    pub out: PathBuf,
    /// A deadline in seconds for the whole command: without a valid
    /// partition by then it exits 3 (not a proof that none exists).
    #[arg(long, value_parser = seconds)]
    pub time: Option<f64>,
}

pub fn run(out: &Output, file: &Path, args: &SolverArgs, own: &SampleArgs) -> Result {
    let clock = Clock::start(own.time);
    let Some(limit) = clock.limit() else {
        return sample_now(out, file, args, &own.out, clock);
    };
    // On a thread of its own, so that a SAT call that outlives the deadline
    // is abandoned rather than waited for.
    let (json, path, args, dest) = (out.json, file.to_path_buf(), args.clone(), own.out.clone());
    let worker =
        Worker::spawn(move |send: &dyn Fn(Result)| send(sample_now(&Output { json }, &path, &args, &dest, clock)))
            .map_err(|e| Error::internal(format!("cannot start sampling: {e}")))?;
    let late = || out_of_time(&format!("the problem of `{}`", file.display()), limit);
    worker.next(clock.hard()).unwrap_or_else(|| Err(late()))
}

fn sample_now(out: &Output, file: &Path, args: &SolverArgs, dest: &Path, clock: Clock) -> Result {
    with_problem(file, args.problem.as_deref(), Some(dest), |p, sources| {
        let mut solver = args.solver(p, sources)?;
        if clock.limit().is_some() {
            solver.set_stop(Some(Arc::new(move || clock.work_left() == Some(0.0))));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let order = node_order(&solver, args.order, &mut rng);
        let pl = match sample(&mut solver, &order, None, &mut rng) {
            Ok(pl) => pl,
            Err(_) if solver.cut_short() => {
                return Err(out_of_time(&format!("`{}`", p.name), clock.limit().unwrap_or(0.0)));
            }
            Err(inf) => return Err(Error::infeasible(p, &inf, sources)),
        };
        emit(out, p, &pl, dest, &solver, None)
    })
}

/// No valid partition of `what` within `t` seconds: exit 3.
fn out_of_time(what: &str, t: f64) -> Error {
    Error::new(
        Kind::Timeout,
        format!("no valid partition of {what} found within {}", secs(t)),
    )
    .with_help("not a proof that none exists: give it more time (`--time`)")
}
