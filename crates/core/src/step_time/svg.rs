//! The step as a timeline: a row per chip and per link that carries
//! something, ops and transfers as bars with their times in a tooltip, the
//! critical path outlined in red, a time axis below.

use super::{OpOf, PathStep, Schedule};
use crate::graph::Graph;
use crate::package::Package;
use crate::quantity::{format_quantity, Dim};
use std::fmt::Write;

/// Above this many chips, rows only for chips that run something.
const ALL_CHIPS: usize = 64;
const LEFT: f64 = 150.0;
const WIDTH: f64 = 1000.0;
const ROW: f64 = 20.0;
const BAR: f64 = 14.0;
const TOP: f64 = 36.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn secs(t: f64) -> String {
    format_quantity(t, Dim::TIME)
}

/// A tick spacing of 1, 2 or 5 times a power of ten giving about 8 ticks.
fn tick_step(span: f64) -> f64 {
    let raw = span / 8.0;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|k| k * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

pub fn timeline_svg(schedule: &Schedule, graph: &Graph, package: &Package) -> String {
    let span = if schedule.step_time_s > 0.0 {
        schedule.step_time_s
    } else {
        1.0
    };
    let x = |t: f64| LEFT + t / span * WIDTH;
    let nc = package.num_chips();
    let mut chip_row = vec![None; nc];
    let mut rows: Vec<String> = Vec::new();
    for (c, (row, chip)) in chip_row.iter_mut().zip(&package.chips).enumerate() {
        if nc <= ALL_CHIPS || schedule.ops.iter().any(|o| o.chip as usize == c) {
            *row = Some(rows.len());
            rows.push(chip.name.clone());
        }
    }
    let mut link_row = vec![None; package.links.len()];
    for t in &schedule.transfers {
        let l = t.link as usize;
        if link_row[l].is_none() && l < package.links.len() {
            link_row[l] = Some(rows.len());
            let k = &package.links[l];
            rows.push(format!(
                "{} -> {}",
                package.chips[k.src as usize].name, package.chips[k.dst as usize].name
            ));
        }
    }
    let mut on_path_op = vec![false; schedule.ops.len()];
    let mut on_path_tx = vec![false; schedule.transfers.len()];
    for p in &schedule.critical_path {
        match *p {
            PathStep::Op(i) if i < on_path_op.len() => on_path_op[i] = true,
            PathStep::Transfer(i) if i < on_path_tx.len() => on_path_tx[i] = true,
            _ => {}
        }
    }
    let h = TOP + rows.len() as f64 * ROW + 50.0;
    let w = LEFT + WIDTH + 40.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="8" y="18" font-size="13">{} on {}: step time {}; red outline: the critical path</text>"##,
        esc(&graph.name),
        esc(&package.name),
        secs(schedule.step_time_s)
    );
    for (i, name) in rows.iter().enumerate() {
        let y = TOP + i as f64 * ROW;
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            LEFT - 6.0,
            y + BAR - 3.0,
            esc(name),
            y + ROW - 2.0,
            LEFT + WIDTH,
            y + ROW - 2.0
        );
    }
    let bar = |s: &mut String, class: &str, row: usize, a: f64, b: f64, fill: &str, critical: bool, title: String| {
        let y = TOP + row as f64 * ROW;
        let (x0, x1) = (x(a), x(b));
        let stroke = if critical {
            r##" stroke="#d00000" stroke-width="1.5""##
        } else {
            r##" stroke="#333" stroke-width="0.3""##
        };
        let class = if critical {
            format!("{class} critical")
        } else {
            class.to_string()
        };
        let _ = writeln!(
            s,
            r#"<rect class="{class}" x="{x0:.2}" y="{y:.1}" width="{:.2}" height="{BAR}" fill="{fill}"{stroke}><title>{}</title></rect>"#,
            (x1 - x0).max(0.5),
            esc(&title)
        );
    };
    for (i, o) in schedule.ops.iter().enumerate() {
        let Some(row) = chip_row.get(o.chip as usize).copied().flatten() else {
            continue;
        };
        let id = graph.nodes.get(o.node as usize).map_or("?", |n| n.id.as_str());
        let (fill, what) = match o.of {
            OpOf::Placed(_) => ("#8fb8e8", ""),
            OpOf::Replica(_) => ("#c6dcf2", " (copy)"),
        };
        let title = format!(
            "{id}{what} on {}: {} to {} ({})",
            package.chips[o.chip as usize].name,
            secs(o.start_s),
            secs(o.end_s),
            secs(o.end_s - o.start_s)
        );
        bar(&mut s, "op", row, o.start_s, o.end_s, fill, on_path_op[i], title);
    }
    for (i, t) in schedule.transfers.iter().enumerate() {
        let Some(row) = link_row.get(t.link as usize).copied().flatten() else {
            continue;
        };
        let id = graph
            .placed_nodes()
            .get(t.node as usize)
            .map_or("?", |&v| graph.nodes[v].id.as_str());
        let title = format!(
            "{id}: {} over {}, {} to {} ({})",
            format_quantity(t.bytes as f64, Dim::BYTES),
            rows[row],
            secs(t.start_s),
            secs(t.end_s),
            secs(t.end_s - t.start_s)
        );
        bar(
            &mut s,
            "transfer",
            row,
            t.start_s,
            t.end_s,
            "#f2b866",
            on_path_tx[i],
            title,
        );
    }
    // The time axis.
    let ya = TOP + rows.len() as f64 * ROW + 6.0;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{ya:.1}" x2="{:.1}" y2="{ya:.1}" stroke="#333"/>"##,
        LEFT + WIDTH
    );
    let step = tick_step(span);
    let mut k = 0u32;
    loop {
        let t = step * k as f64;
        if t > span * (1.0 + 1e-9) || k > 100 {
            break;
        }
        let _ = writeln!(
            s,
            r##"<line x1="{0:.2}" y1="{ya:.1}" x2="{0:.2}" y2="{1:.1}" stroke="#333"/><text x="{0:.2}" y="{2:.1}" text-anchor="middle">{3}</text>"##,
            x(t),
            ya + 5.0,
            ya + 18.0,
            secs(t)
        );
        k += 1;
    }
    s.push_str("</svg>\n");
    s
}
