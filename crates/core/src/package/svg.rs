//! A package drawn as SVG: chips as boxes with their memory and compute,
//! links as arrows with their bandwidth (a pair of opposite links as one
//! double-headed arrow), chips coloured by load when a partition is given.

use super::view::{layout, ChipLoad};
use super::Package;
use crate::quantity::{format_quantity, Dim};
use std::fmt::Write;

/// Above this many chips, chips are dots with their id, links unlabelled.
const DETAILED: usize = 64;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// White to red as `x` goes from 0 to 1.
fn heat(x: f64) -> String {
    let x = x.clamp(0.0, 1.0);
    let g = (255.0 * (1.0 - 0.75 * x)) as u8;
    let b = (255.0 * (1.0 - x)) as u8;
    format!("#ff{g:02x}{b:02x}")
}

pub fn to_svg(p: &Package, loads: Option<&[ChipLoad]>) -> String {
    let c = p.num_chips();
    let detailed = c <= DETAILED;
    let (bw, bh) = if detailed { (124.0, 52.0) } else { (18.0, 18.0) };
    // Room for every chip along the circle or the grid.
    let side = (c as f64 * (bw + 24.0) / std::f64::consts::PI).clamp(240.0, 3000.0);
    let margin = bw;
    let pos: Vec<(f64, f64)> = layout(p)
        .into_iter()
        .map(|(x, y)| (margin + x * side, margin + y * side))
        .collect();
    let (w, h) = (side + 2.0 * margin, side + 2.0 * margin + 40.0);
    let mut s = String::new();
    // The caption: counts, and the package's name cut to the width.
    let fit = (w / 6.5) as usize;
    let mut name: String = p.name.chars().take(fit).collect();
    if name.len() < p.name.len() {
        name.push_str("...");
    }
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif" font-size="11">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>
<rect width="100%" height="100%" fill="white"/>
<text x="8" y="{:.0}" font-size="12">{}</text>
<text x="8" y="{:.0}" font-size="12">{} chips, {} links{}</text>"##,
        h - 26.0,
        esc(&name),
        h - 10.0,
        c,
        p.links.len(),
        if loads.is_some() {
            "; colour: compute time (white idle, red busiest)"
        } else {
            ""
        }
    );
    // Links: each unordered pair once.
    let mut drawn = std::collections::BTreeSet::new();
    for (k, l) in p.links.iter().enumerate() {
        let key = (l.src.min(l.dst), l.src.max(l.dst));
        if !drawn.insert(key) {
            continue;
        }
        let back = p.link(l.dst, l.src);
        let (a, b) = (pos[l.src as usize], pos[l.dst as usize]);
        let (x1, y1, x2, y2) = clip(a, b, bw, bh);
        let start = if back.is_some() {
            r#" marker-start="url(#arrow)""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#555" stroke-width="1.2" marker-end="url(#arrow)"{start}/>"##
        );
        if detailed {
            let rate = |k: usize| {
                p.link_bandwidth(k)
                    .map_or("?".into(), |v| format_quantity(v, Dim::RATE))
            };
            let label = match back {
                Some(j) if rate(j) != rate(k) => format!("{} / {}", rate(k), rate(j)),
                _ => rate(k),
            };
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#333" font-size="10">{}</text>"##,
                (x1 + x2) / 2.0,
                (y1 + y2) / 2.0 - 3.0,
                esc(&label)
            );
        }
    }
    let busiest = loads.map_or(0.0, |l| l.iter().map(|x| x.compute_s).fold(0.0, f64::max));
    for (i, chip) in p.chips.iter().enumerate() {
        let (x, y) = pos[i];
        let fill = match loads.and_then(|l| l.get(i)) {
            Some(l) if busiest > 0.0 => heat(l.compute_s / busiest),
            Some(_) => heat(0.0),
            None => "#e8f0fe".into(),
        };
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{bw}" height="{bh}" rx="6" fill="{fill}" stroke="#1a73e8"><title>{}</title></rect>"##,
            x - bw / 2.0,
            y - bh / 2.0,
            esc(&chip.name)
        );
        if detailed {
            let mem = p
                .chip_memory(i as u32)
                .map_or("-".into(), |v| format_quantity(v, Dim::BYTES));
            let cmp = p
                .chip_compute(i as u32)
                .map_or("-".into(), |v| format_quantity(v, Dim::FLOP_RATE));
            let _ = writeln!(
                s,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{i}: {}</text>
<text x="{x:.1}" y="{:.1}" text-anchor="middle">{mem}</text>
<text x="{x:.1}" y="{:.1}" text-anchor="middle">{cmp}</text>"##,
                y - 10.0,
                esc(&chip.name),
                y + 4.0,
                y + 17.0
            );
        } else {
            let _ = writeln!(
                s,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="8">{i}</text>"##,
                y + 3.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// The segment from box `a` to box `b`, cut at the boxes' edges.
fn clip(a: (f64, f64), b: (f64, f64), w: f64, h: f64) -> (f64, f64, f64, f64) {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    // The fraction of the segment inside a box of half-sizes w/2, h/2.
    let t = {
        let tx = if dx.abs() > 1e-9 {
            (w / 2.0 + 2.0) / dx.abs()
        } else {
            f64::INFINITY
        };
        let ty = if dy.abs() > 1e-9 {
            (h / 2.0 + 2.0) / dy.abs()
        } else {
            f64::INFINITY
        };
        tx.min(ty).min(0.45)
    };
    (a.0 + dx * t, a.1 + dy * t, b.0 - dx * t, b.1 - dy * t)
}
