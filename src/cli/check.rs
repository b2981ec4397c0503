//! `mcmpart check FILE`: everything compiles; what the problems are.

use super::output::{compile, Output};
use crate::error::{Result, Status};
use crate::problem::Problem;
use std::path::Path;

pub fn run(out: &Output, file: &Path) -> Result {
    let c = compile(file)?;
    if out.json {
        let problems: Vec<serde_json::Value> = c.problems.iter().map(summary_json).collect();
        out.print_json(&serde_json::json!({"ok": true, "problems": problems, "tests": c.tests.len()}));
    } else {
        for p in &c.problems {
            print!("{}", summary_text(p));
        }
        println!(
            "ok: {} problem(s), {} test(s) in {}",
            c.problems.len(),
            c.tests.len(),
            file.display()
        );
    }
    Ok(Status::Success)
}

fn summary_json(p: &Problem) -> serde_json::Value {
    let g = &p.graph;
    serde_json::json!({
        "name": p.name,
        "graph": g.name,
        "package": p.package.name,
        "chips": p.package.num_chips(),
        "links": p.package.links.len(),
        "nodes": g.nodes.len(),
        "edges": g.edges.len(),
        "placed_nodes": g.num_placed(),
        "placed_edges": g.placed_edges().len(),
        "replicable": g.nodes.len() - g.num_placed(),
        "constraints": p.constraints.iter().map(|c| serde_json::json!({
            "name": c.display_name(), "instances": c.instances.len()})).collect::<Vec<_>>(),
        "objective": format!("{:?} {}", p.objective.sense, p.objective.metric).to_lowercase(),
        "evaluator": p.evaluator.as_ref().map(|e| e.command.clone()),
    })
}

fn summary_text(p: &Problem) -> String {
    let g = &p.graph;
    let k = &p.package;
    let cs: Vec<String> = p
        .constraints
        .iter()
        .map(|c| format!("{} ({} instances)", c.display_name(), c.instances.len()))
        .collect();
    let mut s = format!("problem `{}`\n", p.name);
    s += &format!(
        "  package  {}: {} chips, {} links\n",
        k.name,
        k.num_chips(),
        k.links.len()
    );
    s += &format!(
        "  graph    {}: {} nodes, {} edges ({} nodes and {} edges to place, {} replicable)\n",
        g.name,
        g.nodes.len(),
        g.edges.len(),
        g.num_placed(),
        g.placed_edges().len(),
        g.nodes.len() - g.num_placed()
    );
    s += &format!(
        "  require  {}\n",
        if cs.is_empty() {
            "nothing".to_string()
        } else {
            cs.join(", ")
        }
    );
    s += &format!("  {:?} {}\n", p.objective.sense, p.objective.metric).to_lowercase();
    if let Some(e) = &p.evaluator {
        s += &format!("  evaluate with {:?}\n", e.command);
    }
    s
}
