//! `mcmpart sample`: one valid partition by SAMPLE with uniform probabilities.

use super::output::Output;
use super::problem::{emit, with_problem, SolverArgs};
use crate::error::{Error, Result};
use crate::solver::{node_order, sample};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::Path;

pub fn run(out: &Output, file: &Path, args: &SolverArgs, dest: &Path) -> Result {
    with_problem(file, args.problem.as_deref(), Some(dest), |p, sources| {
        let mut solver = args.solver(p, sources)?;
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let order = node_order(&solver, args.order, &mut rng);
        let pl = sample(&mut solver, &order, None, &mut rng).map_err(|inf| Error::infeasible(p, &inf, sources))?;
        emit(out, p, &pl, dest, &solver, None)
    })
}
