//! `mcmpart repair`: make a proposal valid by FIX, keeping what can stay.

use super::output::Output;
use super::problem::{emit, with_problem, SolverArgs};
use crate::error::{Error, Result};
use crate::problem::read_proposal;
use crate::solver::{fix, node_order};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::Path;

pub fn run(out: &Output, file: &Path, args: &SolverArgs, proposal: &Path, dest: &Path) -> Result {
    with_problem(file, args.problem.as_deref(), Some(dest), |p, sources| {
        let prop = read_proposal(proposal, &p.graph, p.package.num_chips())
            .map_err(|e| Error::input(e.message).with_help_opt(e.help))?;
        let mut solver = args.solver(p, sources)?;
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let order = node_order(&solver, args.order, &mut rng);
        let (pl, moved) =
            fix(&mut solver, &order, &prop, None, &mut rng).map_err(|inf| Error::infeasible(p, &inf, sources))?;
        emit(out, p, &pl, dest, &solver, Some(moved))
    })
}
