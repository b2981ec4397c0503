//! `mcmpart bench`: `bench load DIR`, how long graph files take to load, and
//! `bench solver FILE`, how fast the solver makes valid partitions.

use super::output::{refuse_overwriting, Output};
use super::problem::{with_problem, SolverArgs};
use crate::error::{Error, Result, Status};
use crate::graph::load_graph_file;
use crate::solver::Mode;
use std::path::Path;
use std::time::Instant;

/// Writes a benchmark's figures as JSON when asked; gives what `--json`
/// prints: the figures, and `out`, the file written, as every command that
/// writes names it.
pub(super) fn save(dest: Option<&Path>, report: &serde_json::Value) -> Result<serde_json::Value> {
    let Some(d) = dest else { return Ok(report.clone()) };
    std::fs::write(d, serde_json::to_string_pretty(report).unwrap_or_default())
        .map_err(|e| Error::output(format!("cannot write `{}`: {e}", d.display())))?;
    let mut printed = report.clone();
    printed["out"] = serde_json::json!(d.display().to_string());
    Ok(printed)
}

pub fn load(out: &Output, dir: &Path, repeats: usize, dest: Option<&Path>) -> Result {
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.to_string_lossy();
                n.ends_with(".json.gz") || (n.ends_with(".json") && !n.ends_with("manifest.json"))
            })
            .collect(),
        Err(e) => return Err(Error::input(format!("cannot read `{}`: {e}", dir.display()))),
    };
    files.sort();
    if let Some(d) = dest {
        refuse_overwriting(d, &files, "is a graph it loads")?;
    }
    let repeats = repeats.max(1);
    let mut rows = Vec::new();
    for f in &files {
        let mut best = f64::INFINITY;
        let mut nodes = 0;
        for _ in 0..repeats {
            let t = Instant::now();
            nodes = load_graph_file(f)?.nodes.len();
            best = best.min(t.elapsed().as_secs_f64());
        }
        rows.push((
            f.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            nodes,
            best,
        ));
    }
    // From 0.0: a float sum of nothing is -0.0.
    let total = rows.iter().fold(0.0, |t, r| t + r.2);
    let largest = rows.iter().max_by_key(|r| r.1).cloned();
    let slowest = rows
        .iter()
        .cloned()
        .fold(None, |a: Option<(String, usize, f64)>, r| match a {
            Some(x) if x.2 >= r.2 => Some(x),
            _ => Some(r),
        });
    let report = serde_json::json!({
        "graphs": rows.len(),
        "repeats": repeats,
        "total_seconds": total,
        "largest": largest.as_ref().map(|r| serde_json::json!({"file": r.0, "nodes": r.1, "seconds": r.2})),
        "slowest": slowest.as_ref().map(|r| serde_json::json!({"file": r.0, "nodes": r.1, "seconds": r.2})),
        "per_graph": rows.iter().map(|r| serde_json::json!({"file": r.0, "nodes": r.1, "seconds": r.2})).collect::<Vec<_>>(),
    });
    let printed = save(dest, &report)?;
    if out.json {
        out.print_json(&printed);
    } else {
        println!("loaded {} graphs in {:.3} s (best of {repeats})", rows.len(), total);
        if let Some(r) = largest {
            println!("largest: {} ({} nodes) in {:.2} ms", r.0, r.1, r.2 * 1e3);
        }
        if let Some(r) = slowest {
            println!("slowest: {} ({} nodes) in {:.2} ms", r.0, r.1, r.2 * 1e3);
        }
    }
    Ok(Status::Success)
}

/// `mcmpart bench solver FILE --mode fix|sample --samples N`: valid
/// partitions per second, failures, backtracks and SAT calls per partition;
/// every partition is checked by the checker (outside the timed part).
pub fn solver(out: &Output, file: &Path, args: &SolverArgs, mode: Mode, samples: usize, dest: Option<&Path>) -> Result {
    use crate::solver::{check, fix, node_order, sample};
    use rand::{Rng, SeedableRng};
    with_problem(file, args.problem.as_deref(), dest, |p, sources| {
        let t0 = Instant::now();
        let mut solver = args.solver(p, sources)?;
        let setup = t0.elapsed().as_secs_f64();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
        let chips = p.package.num_chips() as u32;
        let mut timed = 0.0;
        let mut invalid = 0usize;
        let mut moved = 0usize;
        let mut used = 0u64;
        for _ in 0..samples {
            let order = node_order(&solver, args.order, &mut rng);
            // FIX gets a uniformly random proposal, the hardest kind to repair.
            let proposal: Vec<Option<u32>> = (0..p.graph.num_placed())
                .map(|_| Some(rng.random_range(0..chips)))
                .collect();
            let t = Instant::now();
            let r = match mode {
                Mode::Sample => sample(&mut solver, &order, None, &mut rng).map(|pl| (pl, 0)),
                Mode::Fix => fix(&mut solver, &order, &proposal, None, &mut rng),
            };
            timed += t.elapsed().as_secs_f64();
            match r {
                Ok((pl, m)) => {
                    moved += m;
                    used += pl.chips_used() as u64;
                    if !check(&p.graph, &p.package, &p.constraints, &pl).is_empty() {
                        invalid += 1;
                    }
                }
                Err(inf) => return Err(Error::infeasible(p, &inf, sources)),
            }
        }
        let n = samples.max(1) as f64;
        let st = &solver.stats;
        // Which rule's propagation failed, the first thing to look at when a
        // rule slows the search down.
        let by_rule: Vec<(String, u64)> = p
            .constraints
            .iter()
            .zip(st.failures_by_constraint.iter().copied())
            .filter(|(_, f)| *f > 0)
            .map(|(c, f)| (c.display_name(), f))
            .collect();
        let report = serde_json::json!({
            "problem": p.name,
            "graph": p.graph.name,
            "nodes": p.graph.num_placed(),
            "chips": p.package.num_chips(),
            "mode": format!("{mode:?}").to_lowercase(),
            "order": format!("{:?}", args.order).to_lowercase(),
            "native": !args.generic,
            "samples": samples,
            "setup_seconds": setup,
            "seconds": timed,
            "partitions_per_second": samples as f64 / timed.max(1e-12),
            "invalid": invalid,
            "mean_failures": st.failures as f64 / n,
            "mean_backtracks": st.backtracks as f64 / n,
            "mean_sat_calls": st.sat_calls as f64 / n,
            "mean_restarts": st.restarts as f64 / n,
            "restarts": st.restarts,
            "mean_moved": moved as f64 / n,
            "failures_by_rule": by_rule.iter().map(|(r, f)| serde_json::json!({"rule": r, "failures": f})).collect::<Vec<_>>(),
            "mean_chips_used": used as f64 / n,
            "seed": args.seed,
        });
        let printed = save(dest, &report)?;
        if out.json {
            out.print_json(&printed);
        } else {
            println!(
                "{} on {} chips, {:?} mode, {:?} order: {samples} partitions in {timed:.3} s = {:.1} partitions/s (setup {setup:.3} s)",
                p.graph.name,
                p.package.num_chips(),
                mode,
                args.order,
                samples as f64 / timed.max(1e-12)
            );
            println!(
                "  per partition: {:.2} failures, {:.2} backtracks, {:.2} SAT calls, {:.2} restarts, {:.1} chips used{}; invalid: {invalid}",
                st.failures as f64 / n,
                st.backtracks as f64 / n,
                st.sat_calls as f64 / n,
                st.restarts as f64 / n,
                used as f64 / n,
                if mode == Mode::Fix { format!(", {:.1} nodes moved", moved as f64 / n) } else { String::new() }
            );
            if !by_rule.is_empty() {
                let parts: Vec<String> = by_rule.iter().map(|(r, f)| format!("{r} {f}")).collect();
                println!("  failures by rule: {}", parts.join(", "));
            }
        }
        Ok(Status::of(invalid == 0))
    })
}
