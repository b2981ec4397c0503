//! `mcmpart sample` and `mcmpart repair`: one valid partition from the
//! solver, by SAMPLE with uniform probabilities or by FIX from a proposal.

use super::Output;
use crate::diag::{render_text, Diag};
use crate::problem::{partition_json, read_proposal, write_partition, Problem};
use crate::solver::{check, fix, node_order, sample, Infeasible, Options, Order, Solver};
use crate::source::SourceMap;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
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

/// Compiles the file and runs `f` on the chosen problem and the sources.
/// `dest`, the file the command will write, must not be one it read (a
/// `--out` naming the problem's own file or its graph would replace it).
pub fn with_problem(
    out: &Output,
    file: &Path,
    name: Option<&str>,
    dest: Option<&Path>,
    f: impl FnOnce(&Problem, &SourceMap) -> i32,
) -> i32 {
    let Some(c) = out.compile(file) else {
        return 1;
    };
    if dest.is_some_and(|d| super::overwrites_input(out, d, &c.inputs(), "the problem is read from")) {
        return 1;
    }
    match c.problem(name) {
        Ok(p) => f(p, &c.program.sources),
        Err(m) => {
            out.error(&m, None);
            1
        }
    }
}

/// Reports that no valid partition exists, naming the conflicting rules.
pub fn report_infeasible(out: &Output, p: &Problem, inf: &Infeasible, sources: &SourceMap) {
    let names: Vec<String> = inf
        .constraints
        .iter()
        .map(|&i| p.constraints[i].display_name())
        .collect();
    let message = match names.as_slice() {
        [] => format!("problem `{}` has no valid partition", p.name),
        [one] => format!("problem `{}` has no valid partition: nothing satisfies `{one}`", p.name),
        many => format!(
            "problem `{}` has no valid partition: {} conflict",
            p.name,
            many.join(", ")
        ),
    };
    if out.json {
        out.print_json(&serde_json::json!({"ok": false, "infeasible": true, "error": message, "constraints": names}));
        return;
    }
    let mut d = Diag::error("mcm::infeasible", message).help("relax one of these rules, or give the package more room");
    for &i in &inf.constraints {
        let c = &p.constraints[i];
        d = d
            .label(c.use_span, format!("`{}` required here", c.display_name()))
            .label(c.decl_span, format!("`{}` declared here", c.name));
    }
    eprint!("{}", render_text(sources, &[d]));
}

pub fn make_solver<'p>(
    out: &Output,
    p: &'p Problem,
    args: &SolverArgs,
    sources: &SourceMap,
) -> Result<Solver<'p>, i32> {
    Solver::new(
        p,
        Options {
            native: !args.generic,
            sat: !args.no_sat,
        },
    )
    .map_err(|inf| {
        report_infeasible(out, p, &inf, sources);
        1
    })
}

pub fn run_sample(out: &Output, file: &Path, args: &SolverArgs, dest: &Path) -> i32 {
    with_problem(out, file, args.problem.as_deref(), Some(dest), |p, sources| {
        let mut solver = match make_solver(out, p, args, sources) {
            Ok(s) => s,
            Err(code) => return code,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let order = node_order(&solver, args.order, &mut rng);
        match sample(&mut solver, &order, None, &mut rng) {
            Ok(pl) => emit(out, p, &pl, dest, &solver, None),
            Err(inf) => {
                report_infeasible(out, p, &inf, sources);
                1
            }
        }
    })
}

pub fn run_repair(out: &Output, file: &Path, args: &SolverArgs, proposal: &Path, dest: &Path) -> i32 {
    with_problem(out, file, args.problem.as_deref(), Some(dest), |p, sources| {
        let prop = match read_proposal(proposal, &p.graph, p.package.num_chips()) {
            Ok(x) => x,
            Err(e) => {
                out.error(&e.message, e.help.as_deref());
                return 1;
            }
        };
        let mut solver = match make_solver(out, p, args, sources) {
            Ok(s) => s,
            Err(code) => return code,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let order = node_order(&solver, args.order, &mut rng);
        match fix(&mut solver, &order, &prop, None, &mut rng) {
            Ok((pl, moved)) => emit(out, p, &pl, dest, &solver, Some(moved)),
            Err(inf) => {
                report_infeasible(out, p, &inf, sources);
                1
            }
        }
    })
}

fn emit(
    out: &Output,
    p: &Problem,
    pl: &crate::problem::Placement,
    dest: &Path,
    solver: &Solver,
    moved: Option<usize>,
) -> i32 {
    // The checker is the judge: never hand out a partition it refuses.
    let vs = check(&p.graph, &p.package, &p.constraints, pl);
    if !vs.is_empty() {
        out.error(
            &format!(
                "internal error: the solver produced an invalid partition ({})",
                vs[0].describe()
            ),
            Some("please report this with the .mcm file"),
        );
        return 1;
    }
    if let Err(e) = write_partition(dest, pl, &p.graph, p.package.num_chips()) {
        out.error(&format!("cannot write `{}`: {e}", dest.display()), None);
        return 1;
    }
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
    0
}
