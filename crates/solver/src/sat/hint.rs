//! A starting placement for the first search: the nodes in a topological
//! order that keeps every source next to its first consumer, filled onto the
//! chips in id order up to their memory. Only a hint: the search starts from
//! its values, and the constraints decide.

use mcm_core::problem::{Placement, Problem};

pub(crate) fn greedy(problem: &Problem) -> Option<Placement> {
    let graph = &problem.graph;
    let package = &problem.package;
    let n = graph.num_placed();
    let c = package.num_chips();
    if c == 0 {
        return None;
    }
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for e in graph.placed_edges() {
        preds[e.dst as usize].push(e.src);
    }
    let topo: Vec<u32> = graph
        .topological_order()
        .iter()
        .filter_map(|&i| graph.decision_of(i))
        .collect();
    // Emit each node after its predecessors, sources as late as possible.
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for &w in topo
        .iter()
        .filter(|&&w| !preds[w as usize].is_empty())
        .chain(topo.iter())
    {
        if done[w as usize] {
            continue;
        }
        stack.push((w, 0));
        while let Some(&mut (x, ref mut i)) = stack.last_mut() {
            if let Some(&p) = preds[x as usize].get(*i) {
                *i += 1;
                if !done[p as usize] {
                    stack.push((p, 0));
                }
            } else {
                stack.pop();
                if !done[x as usize] {
                    done[x as usize] = true;
                    order.push(x);
                }
            }
        }
    }
    let cap: Vec<f64> = (0..c as u32).map(|d| package.memory_or_unlimited(d)).collect();
    let mut chips = vec![0u32; n];
    let (mut k, mut load) = (0usize, 0.0f64);
    for &u in &order {
        let w = graph.placed_node(u).params as f64;
        while load > 0.0 && load + w > cap[k] && k + 1 < c {
            k += 1;
            load = 0.0;
        }
        chips[u as usize] = k as u32;
        load += w;
    }
    Some(Placement::new(chips))
}
