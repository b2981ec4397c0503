//! `mcmpart bench load DIR`: how long graph files take to load.

use super::Output;
use crate::graph::load_graph_file;
use std::path::Path;
use std::time::Instant;

pub fn load(out: &Output, dir: &Path, repeats: usize, dest: Option<&Path>) -> i32 {
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.to_string_lossy();
                n.ends_with(".json.gz") || (n.ends_with(".json") && !n.ends_with("manifest.json"))
            })
            .collect(),
        Err(e) => {
            out.error(&format!("cannot read `{}`: {e}", dir.display()), None);
            return 1;
        }
    };
    files.sort();
    let repeats = repeats.max(1);
    let mut rows = Vec::new();
    for f in &files {
        let mut best = f64::INFINITY;
        let mut nodes = 0;
        for _ in 0..repeats {
            let t = Instant::now();
            match load_graph_file(f) {
                Ok(g) => nodes = g.nodes.len(),
                Err(e) => {
                    out.error(&e.message, e.help.as_deref());
                    return 1;
                }
            }
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
    let total: f64 = rows.iter().map(|r| r.2).sum();
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
    if let Some(d) = dest {
        if let Err(e) = std::fs::write(d, serde_json::to_string_pretty(&report).unwrap_or_default()) {
            out.error(&format!("cannot write `{}`: {e}", d.display()), None);
            return 1;
        }
    }
    if out.json {
        out.print_json(&report);
    } else {
        println!("loaded {} graphs in {:.3} s (best of {repeats})", rows.len(), total);
        if let Some(r) = largest {
            println!("largest: {} ({} nodes) in {:.2} ms", r.0, r.1, r.2 * 1e3);
        }
        if let Some(r) = slowest {
            println!("slowest: {} ({} nodes) in {:.2} ms", r.0, r.1, r.2 * 1e3);
        }
    }
    0
}
