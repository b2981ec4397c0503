//! The problem a command works on, and the solver settings of the commands
//! that run the solver (`sample`, `repair`, `bench solver`), and how the
//! first two write what it makes.

use super::output::{compile, refuse_overwriting, Output};
use crate::cost::objective::set_metric;
use crate::error::{Error, Result, Status};
use crate::lang::Compiled;
use crate::problem::{partition_json, write_partition, Metric, Placement, Problem};
use crate::solver::{check, Options, Order, Solver};
use crate::source::SourceMap;
use std::path::Path;

/// Solver settings shared by the commands that run it.
#[derive(clap::Args, Debug, Clone)]
pub struct SolverArgs {
    /// The problem, when the file declares several.
    #[arg(long)]
    pub problem: Option<String>,
    /// Seed of every random choice: the same seed gives the same partition.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The order in which nodes are decided.
    #[arg(long, value_enum, default_value = "random")]
    pub order: Order,
    /// Use the generic path for the stdlib rules too (slower; for comparison).
    #[arg(long)]
    pub generic: bool,
    /// Backtrack one decision at a time instead of asking SAT for the culprit.
    #[arg(long)]
    pub no_sat: bool,
}

impl SolverArgs {
    /// A solver for `p` with these settings; `Err` when `p` has no valid partition.
    pub fn solver<'p>(&self, p: &'p Problem, sources: &SourceMap) -> Result<Solver<'p>> {
        Solver::new(
            p,
            Options {
                native: !self.generic,
                sat: !self.no_sat,
            },
        )
        .map_err(|inf| Error::infeasible(p, &inf, sources))
    }
}

/// Compiles the file and runs `f` on the chosen problem and the sources.
/// `dest`, the file the command will write, must not be one it read (a
/// `--out` naming the problem's own file or its graph would replace it).
pub fn with_problem(
    file: &Path,
    name: Option<&str>,
    dest: Option<&Path>,
    f: impl FnOnce(&Problem, &SourceMap) -> Result,
) -> Result {
    with_problem_under(file, name, dest, None, f)
}

/// [`with_problem`], the problem under `objective` instead of its own when
/// one is given (`--objective`).
pub fn with_problem_under(
    file: &Path,
    name: Option<&str>,
    dest: Option<&Path>,
    objective: Option<Metric>,
    f: impl FnOnce(&Problem, &SourceMap) -> Result,
) -> Result {
    let mut c = compile(file)?;
    if let Some(d) = dest {
        refuse_overwriting(d, &c.inputs(), "the problem is read from")?;
    }
    let k = chosen(&c, name)?;
    if let Some(m) = objective {
        set_metric(&mut c.problems[k], m);
    }
    f(&c.problems[k], &c.program.sources)
}

/// Which of the file's problems `name` picks (the only one without a name).
pub fn chosen(c: &Compiled, name: Option<&str>) -> Result<usize> {
    let p = c.problem(name).map_err(Error::input)?;
    Ok(c.problems.iter().position(|q| std::ptr::eq(q, p)).unwrap_or(0))
}

/// Checks a partition the solver made, writes it to `dest` and reports it
/// (`moved`: how many nodes FIX moved, for `repair`).
pub fn emit(out: &Output, p: &Problem, pl: &Placement, dest: &Path, solver: &Solver, moved: Option<usize>) -> Result {
    // The checker is the judge: never hand out a partition it refuses.
    let vs = check(&p.graph, &p.package, &p.constraints, pl);
    if let Some(v) = vs.first() {
        return Err(Error::internal(format!(
            "internal error: the solver produced an invalid partition ({})",
            v.describe()
        ))
        .with_help("please report this with the .mcm file"));
    }
    write_partition(dest, pl, &p.graph, p.package.num_chips())
        .map_err(|e| Error::output(format!("cannot write `{}`: {e}", dest.display())))?;
    let used = pl.chips_used();
    if out.json {
        out.print_json(&serde_json::json!({
            "ok": true, "problem": p.name, "out": dest.display().to_string(), "moved": moved,
            "chips_used": used, "stats": solver.stats, "partition": partition_json(pl, &p.graph, p.package.num_chips()),
        }));
    } else {
        let s = &solver.stats;
        if let Some(m) = moved {
            println!("repaired: {m} of {} nodes moved", p.graph.num_placed());
        }
        println!(
            "valid partition of `{}` written to {}: {} nodes on {used} of {} chips ({} decisions, {} failures, {} backtracks)",
            p.name,
            dest.display(),
            p.graph.num_placed(),
            p.package.num_chips(),
            s.decisions,
            s.failures,
            s.backtracks
        );
    }
    Ok(Status::Success)
}
