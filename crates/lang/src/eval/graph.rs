//! Graphs: graph files, read once each, and inline graph literals.

use super::value::G;
use super::{rt, Interpreter, Value, R};
use crate::ast::*;
use mcm_core::diag::Diag;
use mcm_core::graph::{load_graph_file, Graph, Node};
use mcm_core::source::Span;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

impl Interpreter<'_> {
    pub(crate) fn load_graph(&mut self, path: &str, span: Span) -> R<Arc<Graph>> {
        let base = self.prog.sources.base_dir(span.file);
        let mut full = base.join(path);
        if !full.exists() {
            let gz = PathBuf::from(format!("{}.gz", full.display()));
            if gz.exists() {
                full = gz;
            }
        }
        if let Some(g) = self.graphs.get(&full) {
            return Ok(g.clone());
        }
        let g = load_graph_file(&full).map_err(|e| {
            Diag::error("mcm::graph", format!("cannot load graph: {}", e.message))
                .label(span, format!("loading {}", full.display()))
                .help_opt(e.help)
        })?;
        let g = Arc::new(g);
        self.graphs.insert(full, g.clone());
        Ok(g)
    }

    pub(super) fn graph_literal(&mut self, g: &GraphLit, span: Span) -> R<Graph> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut set: Vec<BTreeMap<String, Span>> = Vec::new();
        let mut edges = Vec::new();
        for chain in &g.chains {
            let mut prev: Option<usize> = None;
            for n in chain {
                let i = *index.entry(n.name.clone()).or_insert_with(|| {
                    nodes.push(Node::new(n.name.clone()));
                    set.push(BTreeMap::new());
                    nodes.len() - 1
                });
                for a in &n.attrs {
                    if let Some(first) = set[i].insert(a.name.name.clone(), a.name.span) {
                        return Err(Diag::error(
                            "mcm::eval",
                            format!("`{}` of node `{}` is set twice", a.name.name, n.name),
                        )
                        .label(a.name.span, "again here")
                        .label(first, "first here"));
                    }
                    let v = match self.eval(&a.value)? {
                        G::V(v) => v,
                        _ => return Err(rt(a.value.span, "expected a value")),
                    };
                    let node = &mut nodes[i];
                    let count = |v: &Value| -> R<u64> {
                        // Counts are 64-bit: say which bound a number is past.
                        match v.num() {
                            Some(x) if (0.0..1.8e19).contains(&x) => Ok(x.round() as u64),
                            Some(x) if x >= 1.8e19 => Err(rt(
                                a.value.span,
                                format!(
                                    "`{}` is too large: {x:e} is past the most a count holds (about 1.8e19)",
                                    a.name.name
                                ),
                            )),
                            Some(x) if x < 0.0 => Err(rt(
                                a.value.span,
                                format!("`{}` is negative ({x}): a count is zero or more", a.name.name),
                            )),
                            _ => Err(rt(
                                a.value.span,
                                format!("`{}` must be a non-negative number", a.name.name),
                            )),
                        }
                    };
                    match (a.name.name.as_str(), &v) {
                        ("op", Value::Str(s)) => node.op = s.clone(),
                        ("replicable", Value::Bool(b)) => node.replicable = *b,
                        ("flops", _) => node.flops = count(&v)?,
                        ("params", _) => node.params = count(&v)?,
                        ("output_bytes", _) => node.output_bytes = count(&v)?,
                        (other, _) => return Err(rt(a.name.span, format!("unknown node attribute `{other}`"))),
                    }
                }
                if let Some(p) = prev {
                    edges.push((p, i, None));
                }
                prev = Some(i);
            }
        }
        Graph::new("graph", nodes, edges).map_err(|e| {
            Diag::error("mcm::graph", format!("invalid graph: {}", e.message))
                .label(span, "this graph")
                .help_opt(e.help)
        })
    }
}

/// A `let` of a graph literal names the graph after the variable.
pub fn name_graph(v: Value, e: &Expr, name: &str) -> Value {
    match (v, &e.kind) {
        (Value::Graph(g), ExprKind::Graph(_)) => {
            let mut g = (*g).clone();
            g.name = name.to_string();
            Value::Graph(Arc::new(g))
        }
        (v, _) => v,
    }
}
