//! `mcmpart import MODEL.onnx OUT.json[.gz]`: an ONNX model as a graph file.

use super::output::{refuse_overwriting, Output};
use crate::error::{Error, Result, Status};
use crate::graph::onnx::import_onnx;
use crate::graph::{to_json, Graph};
use std::io::Write;
use std::path::{Path, PathBuf};

pub fn run(out: &Output, model: &Path, dest: &Path) -> Result {
    refuse_overwriting(dest, &[model.to_path_buf()], "is the model imported")?;
    let g = import_onnx(model)?;
    write_graph(&g, dest)
        .map_err(|m| Error::output(m).with_help("check that the destination's folder exists and is writable"))?;
    let inputs = g.nodes.iter().filter(|n| n.op == "placeholder").count();
    let weights = g.nodes.iter().filter(|n| n.op == "get_attr").count();
    let replicable = g.nodes.len() - g.num_placed();
    if out.json {
        out.print_json(&serde_json::json!({
            "ok": true,
            "model": model.display().to_string(),
            "out": dest.display().to_string(),
            "name": g.name,
            "nodes": g.nodes.len(),
            "edges": g.edges.len(),
            "flops": number(g.total_flops()),
            "weight_bytes": number(g.total_params()),
            "input_nodes": inputs,
            "initializer_nodes": weights,
            "op_nodes": g.nodes.len() - inputs - weights,
            "replicable": replicable,
        }));
    } else {
        println!(
            "imported `{}` -> {}: {} nodes, {} edges, {} flops, {} weight bytes",
            g.name,
            dest.display(),
            g.nodes.len(),
            g.edges.len(),
            g.total_flops(),
            g.total_params()
        );
    }
    Ok(Status::Success)
}

/// A JSON number; totals beyond u64 (never in practice) are clamped.
fn number(x: u128) -> serde_json::Value {
    u64::try_from(x).unwrap_or(u64::MAX).into()
}

/// Writes the graph file: gzip-compressed compact JSON when `dest` ends in
/// `.gz`, pretty JSON otherwise. The file is written beside its destination
/// under a temporary name and renamed, so a reader never sees half a file.
fn write_graph(g: &Graph, dest: &Path) -> std::result::Result<(), String> {
    let shown = dest.display();
    let gz = dest
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".gz"));
    let json = to_json(g);
    let body = if gz {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        serde_json::to_writer(&mut enc, &json).map_err(|e| format!("cannot encode the graph for `{shown}`: {e}"))?;
        enc.finish()
            .map_err(|e| format!("cannot compress the graph for `{shown}`: {e}"))?
    } else {
        let mut s =
            serde_json::to_vec_pretty(&json).map_err(|e| format!("cannot encode the graph for `{shown}`: {e}"))?;
        s.push(b'\n');
        s
    };
    let Some(file_name) = dest.file_name() else {
        return Err(format!("cannot write `{shown}`: it does not name a file"));
    };
    // The new file is renamed into place: it would replace a device, a
    // folder or a link rather than write into it (`-o /dev/full` replaced
    // the device with a file).
    if let Ok(m) = std::fs::symlink_metadata(dest) {
        if !m.is_file() {
            return Err(format!("cannot write `{shown}`: it exists and is not a regular file"));
        }
    }
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, dest)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write `{shown}`: {e}")
    })
}
