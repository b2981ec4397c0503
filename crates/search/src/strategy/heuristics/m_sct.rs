//! `m-sct` (Baechi's memory-constrained small-communication-time placement,
//! after Hanen and Munier's SCT): list scheduling as `m-etf`, except that an
//! op whose favourite parent is placed goes to that parent's chip when it has
//! room, so that the pair's transfer disappears. The favourite relation comes
//! from the LP relaxation of Hanen and Munier, solved with `good_lp` on the
//! pure-Rust microlp backend:
//!
//! ```text
//! minimise w
//!   s_j >= s_i + p_i + c_ij x_ij    for every edge i -> j
//!   sum_j x_ij >= |children(i)| - 1 for every op with two children or more
//!   sum_i x_ij >= |parents(j)| - 1  for every op with two parents or more
//!   w   >= s_i + p_i                for every sink
//!   s >= 0, 0 <= x <= 1
//! ```
//!
//! where `p_i` is the op's time on the fastest chip and `c_ij` one average
//! hop of the edge's bytes; `x_ij < 1/2` makes `j` the favourite child of `i`
//! (the constraints allow at most one per op each way). Weights and
//! constants are left out of the LP: they go with their consumer anyway.

use super::list;
use super::{Allowed, Estimates};
use good_lp::{constraint, microlp, variable, Expression, ProblemVariables, Solution, SolverModel, Variable};

/// Per node, its favourite child, from the LP's solution; `None` for every
/// node when the LP has no solution (then `m-sct` is `m-etf`).
pub fn favourite_children(est: &Estimates) -> Vec<Option<u32>> {
    let mut fav = vec![None; est.n];
    let fast = est.fastest();
    let op = |u: u32| !est.attached(u);
    let edges: Vec<(u32, u32, f64)> = (0..est.n as u32)
        .filter(|&u| op(u))
        .flat_map(|u| est.succs[u as usize].iter().map(move |&(v, b)| (u, v, b)))
        .collect();
    // Seconds are tiny numbers for a simplex: measure in the longest op or
    // transfer instead.
    let p: Vec<f64> = (0..est.n as u32).map(|u| est.time(u, fast)).collect();
    let c: Vec<f64> = edges.iter().map(|&(_, _, b)| est.hop(b)).collect();
    let unit = p
        .iter()
        .chain(&c)
        .copied()
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    if edges.is_empty() || unit <= 0.0 {
        return fav;
    }
    let mut vars = ProblemVariables::new();
    let s: Vec<Variable> = (0..est.n).map(|_| vars.add(variable().min(0.0))).collect();
    let x: Vec<Variable> = edges.iter().map(|_| vars.add(variable().min(0.0).max(1.0))).collect();
    let w = vars.add(variable().min(0.0));
    let mut model = vars.minimise(w).using(microlp);
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); est.n];
    let mut inn: Vec<Vec<usize>> = vec![Vec::new(); est.n];
    for (k, &(i, j, _)) in edges.iter().enumerate() {
        out[i as usize].push(k);
        inn[j as usize].push(k);
        let (pi, ck) = (p[i as usize] / unit, (c[k] / unit).min(1e6));
        model.add_constraint(constraint!(s[j as usize] >= s[i as usize] + pi + ck * x[k]));
    }
    for u in (0..est.n as u32).filter(|&u| op(u)) {
        let i = u as usize;
        for ks in [&out[i], &inn[i]] {
            if ks.len() >= 2 {
                let sum: Expression = ks.iter().map(|&k| x[k]).sum();
                model.add_constraint(constraint!(sum >= (ks.len() - 1) as f64));
            }
        }
        if out[i].is_empty() {
            model.add_constraint(constraint!(w >= s[i] + p[i] / unit));
        }
    }
    let Ok(solution) = model.solve() else {
        return fav;
    };
    for (k, &(i, j, _)) in edges.iter().enumerate() {
        if solution.value(x[k]) < 0.5 {
            fav[i as usize] = Some(j);
        }
    }
    fav
}

pub fn proposal(est: &Estimates, allowed: &Allowed) -> Vec<u32> {
    let children = favourite_children(est);
    let mut parent: Vec<Option<u32>> = vec![None; est.n];
    for (i, ch) in children.iter().enumerate() {
        if let Some(j) = ch {
            parent[*j as usize] = Some(i as u32);
        }
    }
    list::etf(est, allowed, |state, u| {
        parent[u as usize].and_then(|p| state.chip[p as usize])
    })
}
