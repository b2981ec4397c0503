//! A comparison's figures: best-so-far curves as SVG, per problem and
//! overall.

use super::summary::ProblemRuns;

/// A curve: its name and its (samples, value) points.
pub type Line = (String, Vec<(f64, f64)>);

/// The samples a curve is drawn at: every one up to 100, then about 100 per
/// decade, and the last.
pub fn plot_points(n: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut i = 1;
    while i <= n {
        v.push(i);
        i = if i < 100 { i + 1 } else { (i * 102 / 100).max(i + 1) };
    }
    if v.last() != Some(&n) && n > 0 {
        v.push(n);
    }
    v
}

/// A problem's lines: mean best-so-far improvement over greedy (or, with no
/// greedy baseline, fraction of the bound) per strategy.
pub fn problem_lines(p: &ProblemRuns, names: &[String], budget: usize) -> (&'static str, Vec<Line>) {
    let (y, denom) = match (p.greedy, p.bound) {
        (Some(g), _) => ("mean best-so-far improvement over greedy", g),
        (None, Some(b)) => ("mean best-so-far fraction of the lower bound", b),
        (None, None) => ("mean best-so-far throughput (/s)", 1.0),
    };
    let pts = plot_points(budget);
    let lines = names
        .iter()
        .map(|s| {
            let line = pts
                .iter()
                .filter_map(|&n| p.mean_at(s, n, denom).map(|v| (n as f64, v)))
                .collect();
            (s.clone(), line)
        })
        .collect();
    (y, lines)
}

const COLORS: [plotters::style::RGBColor; 8] = [
    plotters::style::RGBColor(0x55, 0x55, 0x55),
    plotters::style::RGBColor(0x1f, 0x77, 0xb4),
    plotters::style::RGBColor(0xff, 0x7f, 0x0e),
    plotters::style::RGBColor(0x2c, 0xa0, 0x2c),
    plotters::style::RGBColor(0xd6, 0x27, 0x28),
    plotters::style::RGBColor(0x94, 0x67, 0xbd),
    plotters::style::RGBColor(0x8c, 0x56, 0x4b),
    plotters::style::RGBColor(0xe3, 0x77, 0xc2),
];

/// Draws best-so-far curves on a log x axis as SVG; points at 0 (no valid
/// partition yet) are left out.
pub fn plot(title: &str, y_desc: &str, budget: usize, lines: &[Line]) -> Result<String, String> {
    use plotters::prelude::*;
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    let lines: Vec<(&String, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|(s, pts)| {
            (
                s,
                pts.iter().copied().filter(|p| p.1 > 0.0 && p.1.is_finite()).collect(),
            )
        })
        .collect();
    let ys = lines.iter().flat_map(|l| l.1.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
    let (lo, hi) = if lo.is_finite() {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.02).max(1e-9);
        ((lo - pad).max(0.0), hi + pad)
    } else {
        (0.0, 1.0)
    };
    let x_max = budget.max(2) as f64;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((1f64..x_max).log_scale(), lo..hi)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("samples")
            .y_desc(y_desc)
            .x_label_formatter(&|x| {
                // 1, 2, 5, 10, 20, 50, ...: the others stay unlabelled.
                let n = x.round() as u64;
                let lead = n / 10u64.pow(n.max(1).ilog10());
                if n > 0 && [1, 2, 5].contains(&lead) && n.is_multiple_of(10u64.pow(n.ilog10())) {
                    n.to_string()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{y:.3}"))
            .draw()
            .map_err(e)?;
        for (i, (name, pts)) in lines.iter().enumerate() {
            if pts.is_empty() {
                continue;
            }
            let color = COLORS[i % COLORS.len()];
            let mut pts = pts.clone();
            // A constant line (greedy, one sample) still spans the axis.
            if pts.len() == 1 {
                pts.push((x_max, pts[0].1));
            }
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(e)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_points_are_increasing_and_end_at_the_budget() {
        for n in [1, 2, 99, 100, 101, 1000, 12345] {
            let p = plot_points(n);
            assert_eq!(p.first(), Some(&1));
            assert_eq!(p.last(), Some(&n));
            assert!(p.windows(2).all(|w| w[0] < w[1]));
        }
        assert!(plot_points(100_000).len() < 600);
    }

    #[test]
    fn plot_writes_svg_with_text() {
        let lines = vec![
            ("greedy".to_string(), vec![(1.0, 1.0)]),
            ("random".to_string(), vec![(1.0, 0.0), (2.0, 0.9), (10.0, 1.2)]),
        ];
        let svg = plot("t", "y", 10, &lines).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("random") && svg.contains("</svg>"));
    }
}
