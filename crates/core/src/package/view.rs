//! Looking at a package: its chips and links as a table or JSON, where to
//! draw them, how loaded a partition leaves each chip, and what looks wrong.

use super::Package;
use crate::graph::Graph;
use crate::problem::Placement;
use crate::quantity::{format_quantity, Dim, Scalar};
use std::collections::BTreeMap;

/// What a partition puts on one chip.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChipLoad {
    pub nodes: usize,
    pub flops: u64,
    pub params: u64,
    /// `flops / compute`: the chip's compute time, in seconds.
    pub compute_s: f64,
}

/// Per-chip load of a placement.
pub fn loads(p: &Package, g: &Graph, placement: &Placement) -> Vec<ChipLoad> {
    let mut out = vec![ChipLoad::default(); p.num_chips()];
    for (i, n) in g.nodes.iter().enumerate() {
        let Some(d) = g.decision_of(i) else { continue };
        let Some(l) = out.get_mut(placement.chip(d) as usize) else {
            continue;
        };
        l.nodes += 1;
        l.flops += n.flops;
        l.params += n.params;
    }
    for (c, l) in out.iter_mut().enumerate() {
        l.compute_s = l.flops as f64 / p.compute_or_unit(c as u32);
    }
    out
}

/// Things about a package that are legal but probably not meant.
/// `pipeline`: the rules move data from lower to higher chip ids
/// (`acyclic_flow`), so consecutive chips ought to be linked.
pub fn warnings(p: &Package, pipeline: bool) -> Vec<String> {
    let mut w = Vec::new();
    let c = p.num_chips();
    let name = |i: usize| format!("chip {i} (`{}`)", p.chips[i].name);
    let mut linked = vec![false; c];
    for l in &p.links {
        linked[l.src as usize] = true;
        linked[l.dst as usize] = true;
    }
    if c > 1 {
        for (i, _) in linked.iter().enumerate().filter(|(_, l)| !**l) {
            w.push(format!("{} has no links: nothing can reach it", name(i)));
        }
    }
    for i in 0..c {
        match p.chip_memory(i as u32) {
            Some(m) if m <= 0.0 => w.push(format!("{} has zero memory: no weights fit on it", name(i))),
            None => w.push(format!("{} has no `memory`: the cost model refuses it", name(i))),
            _ => {}
        }
        if p.chip_compute(i as u32).is_some_and(|x| x <= 0.0) {
            w.push(format!("{} has zero compute", name(i)));
        }
    }
    for (k, l) in p.links.iter().enumerate() {
        if p.link_bandwidth(k).is_some_and(|b| b <= 0.0) {
            w.push(format!("the link {} -> {} has zero bandwidth", l.src, l.dst));
        }
    }
    if pipeline {
        let gaps: Vec<String> = (1..c)
            .filter(|&i| p.link((i - 1) as u32, i as u32).is_none())
            .map(|i| format!("{} -> {i}", i - 1))
            .collect();
        if !gaps.is_empty() {
            let shown: Vec<&str> = gaps.iter().take(5).map(String::as_str).collect();
            let more = if gaps.len() > 5 {
                format!(" and {} more", gaps.len() - 5)
            } else {
                String::new()
            };
            w.push(format!(
                "consecutive chips not linked: {}{more}; `acyclic_flow` moves data from lower to higher ids, so data between them takes a detour",
                shown.join(", ")
            ));
        }
    }
    w
}

/// Where each chip is drawn, in a unit square: a grid when the links are
/// those of a mesh (each joins neighbours in a row or a column), else a circle.
pub fn layout(p: &Package) -> Vec<(f64, f64)> {
    let c = p.num_chips();
    if let Some(cols) = grid_cols(p) {
        let rows = c.div_ceil(cols);
        let span = |n: usize, i: usize| if n <= 1 { 0.5 } else { i as f64 / (n - 1) as f64 };
        return (0..c).map(|i| (span(cols, i % cols), span(rows, i / cols))).collect();
    }
    if c == 1 {
        return vec![(0.5, 0.5)];
    }
    (0..c)
        .map(|i| {
            let a = std::f64::consts::TAU * i as f64 / c as f64 - std::f64::consts::FRAC_PI_2;
            (0.5 + 0.5 * a.cos(), 0.5 + 0.5 * a.sin())
        })
        .collect()
}

/// The row length of a mesh-like package with at least two rows.
fn grid_cols(p: &Package) -> Option<usize> {
    let c = p.num_chips();
    (2..c).filter(|cols| c.is_multiple_of(*cols)).find(|&cols| {
        let mut vertical = false;
        let fits = p.links.iter().all(|l| {
            let (a, b) = (l.src.min(l.dst) as usize, l.src.max(l.dst) as usize);
            vertical |= b - a == cols;
            (b - a == 1 && a / cols == b / cols) || b - a == cols
        });
        fits && vertical
    })
}

fn attr_text(p: &Package, chip: u32, name: &str, d: Dim) -> String {
    p.chip_number(chip, name).map_or("-".into(), |v| format_quantity(v, d))
}

/// The package as a table: one row per chip, with the links out of it.
pub fn to_text(p: &Package, loads: Option<&[ChipLoad]>, warnings: &[String]) -> String {
    use std::fmt::Write;
    let mut s = format!("package {}: {} chips, {} links\n", p.name, p.num_chips(), p.links.len());
    let mut out: Vec<Vec<(u32, String)>> = vec![Vec::new(); p.num_chips()];
    for (k, l) in p.links.iter().enumerate() {
        let bw = p
            .link_bandwidth(k)
            .map_or("-".into(), |b| format_quantity(b, Dim::RATE));
        out[l.src as usize].push((l.dst, format!("{} ({bw})", l.dst)));
    }
    for o in &mut out {
        o.sort();
    }
    let load_head = if loads.is_some() {
        format!("  {:>8} {:>12} {:>10}", "nodes", "compute", "weights")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{:>5}  {:<14} {:>10} {:>13}{load_head}  links to",
        "chip", "name", "memory", "compute"
    );
    for (i, chip) in p.chips.iter().enumerate() {
        let load = loads.and_then(|l| l.get(i)).map_or(String::new(), |l| {
            format!(
                "  {:>8} {:>12} {:>10}",
                l.nodes,
                format_quantity(l.compute_s, Dim::TIME),
                format_quantity(l.params as f64, Dim::BYTES)
            )
        });
        let to: Vec<&str> = out[i].iter().map(|(_, t)| t.as_str()).collect();
        let row = format!(
            "{i:>5}  {:<14} {:>10} {:>13}{load}  {}",
            chip.name,
            attr_text(p, i as u32, "memory", Dim::BYTES),
            attr_text(p, i as u32, "compute", Dim::FLOP_RATE),
            to.join(", ")
        );
        let _ = writeln!(s, "{}", row.trim_end());
    }
    let others = other_attrs_text(p);
    if !others.is_empty() {
        let _ = writeln!(s, "other attributes:");
        for (whose, attrs) in others {
            let _ = writeln!(s, "  {whose:<20} {attrs}");
        }
    }
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The columns of the table: other attributes are listed below it.
const CHIP_COLUMNS: [&str; 2] = ["memory", "compute"];
const LINK_COLUMNS: [&str; 1] = ["bandwidth"];

fn others<'a>(
    attrs: &'a BTreeMap<String, Scalar>,
    shown: &'static [&'static str],
) -> impl Iterator<Item = (&'a String, &'a Scalar)> {
    attrs.iter().filter(move |(k, _)| !shown.contains(&k.as_str()))
}

/// `("tile[0]", "kind = \"hbm\", power = 3")` for each chip and link with
/// attributes the table has no column for (a link's latency, the file's own).
fn other_attrs_text(p: &Package) -> Vec<(String, String)> {
    let join = |it: &mut dyn Iterator<Item = (&String, &Scalar)>| {
        it.map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
    };
    let chips = p
        .chips
        .iter()
        .map(|c| (c.name.clone(), join(&mut others(&c.attrs, &CHIP_COLUMNS))));
    let links = p.links.iter().map(|l| {
        (
            format!("link {} -> {}", l.src, l.dst),
            join(&mut others(&l.attrs, &LINK_COLUMNS)),
        )
    });
    chips.chain(links).filter(|(_, a)| !a.is_empty()).collect()
}

/// Attributes as JSON: numbers in base units, as everywhere in this view.
fn attrs_json<'a>(attrs: impl Iterator<Item = (&'a String, &'a Scalar)>) -> serde_json::Value {
    attrs
        .map(|(k, v)| {
            let v = match v {
                Scalar::Int(i) => serde_json::json!(i),
                Scalar::Num(x, _) => serde_json::json!(x),
                Scalar::Bool(b) => serde_json::json!(b),
                Scalar::Str(s) => serde_json::json!(s),
            };
            (k.clone(), v)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The package as JSON: `{"ok", "package", "chips": [...], "links": [...], "warnings"}`,
/// quantities in base units (bytes as integers, FLOP/s, B/s). Each chip and
/// link has `attrs` with the attributes that have no field of their own
/// (a link's `latency`, the file's own attributes).
pub fn to_json(p: &Package, loads: Option<&[ChipLoad]>, warnings: &[String]) -> serde_json::Value {
    use serde_json::json;
    let chips: Vec<_> = p
        .chips
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut v = json!({
                "id": i,
                "name": c.name,
                "memory": p.chip_memory(i as u32).map(|m| m as u64),
                "compute": p.chip_compute(i as u32),
                "attrs": attrs_json(others(&c.attrs, &CHIP_COLUMNS)),
            });
            if let Some(l) = loads.and_then(|l| l.get(i)) {
                v["load"] = json!({"nodes": l.nodes, "flops": l.flops, "params": l.params, "compute_s": l.compute_s});
            }
            v
        })
        .collect();
    let links: Vec<_> = p
        .links
        .iter()
        .enumerate()
        .map(|(k, l)| {
            json!({
                "src": l.src, "dst": l.dst, "bandwidth": p.link_bandwidth(k),
                "attrs": attrs_json(others(&l.attrs, &LINK_COLUMNS)),
            })
        })
        .collect();
    json!({"ok": true, "package": p.name, "chips": chips, "links": links, "warnings": warnings})
}
