//! Physical dimensions, units and the scalar values that carry them.
//!
//! Every quantity is stored in base units (bytes, FLOP, seconds) as an `f64`
//! together with its dimension, so `flop / flop_rate` is a `time` by
//! construction and a unit mismatch is a dimension mismatch.

use std::fmt;

/// Exponents of the three base dimensions: bytes, floating-point operations, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Dim {
    pub bytes: i8,
    pub flop: i8,
    pub time: i8,
}

impl Dim {
    pub const NONE: Dim = Dim::new(0, 0, 0);
    pub const BYTES: Dim = Dim::new(1, 0, 0);
    pub const RATE: Dim = Dim::new(1, 0, -1);
    pub const FLOP: Dim = Dim::new(0, 1, 0);
    pub const FLOP_RATE: Dim = Dim::new(0, 1, -1);
    pub const TIME: Dim = Dim::new(0, 0, 1);

    pub const fn new(bytes: i8, flop: i8, time: i8) -> Dim {
        Dim { bytes, flop, time }
    }

    pub fn is_none(self) -> bool {
        self == Dim::NONE
    }

    /// The language's type name for this dimension, if it has one.
    pub fn type_name(self) -> Option<&'static str> {
        TYPE_NAMES.iter().find(|(_, d)| *d == self).map(|(n, _)| *n)
    }

    /// The base unit written after a number of this dimension (`B`, `GB/s`, ...).
    pub fn base_unit(self) -> String {
        let mut num = Vec::new();
        let mut den = Vec::new();
        for (e, name) in [(self.bytes, "B"), (self.flop, "FLOP"), (self.time, "s")] {
            let part = if e.abs() == 1 {
                name.to_string()
            } else {
                format!("{name}^{}", e.abs())
            };
            match e.cmp(&0) {
                std::cmp::Ordering::Greater => num.push(part),
                std::cmp::Ordering::Less => den.push(part),
                std::cmp::Ordering::Equal => {}
            }
        }
        let n = if num.is_empty() { "1".to_string() } else { num.join("*") };
        if den.is_empty() {
            n
        } else {
            format!("{n}/{}", den.join("/"))
        }
    }
}

impl std::ops::Mul for Dim {
    type Output = Dim;
    fn mul(self, o: Dim) -> Dim {
        Dim::new(self.bytes + o.bytes, self.flop + o.flop, self.time + o.time)
    }
}

impl std::ops::Div for Dim {
    type Output = Dim;
    fn div(self, o: Dim) -> Dim {
        Dim::new(self.bytes - o.bytes, self.flop - o.flop, self.time - o.time)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.type_name() {
            Some(n) => f.write_str(n),
            None => write!(f, "quantity in {}", self.base_unit()),
        }
    }
}

/// The quantity types of the language and their dimensions.
pub const TYPE_NAMES: &[(&str, Dim)] = &[
    ("bytes", Dim::BYTES),
    ("rate", Dim::RATE),
    ("flop", Dim::FLOP),
    ("flop_rate", Dim::FLOP_RATE),
    ("time", Dim::TIME),
    ("real", Dim::NONE),
];

/// The units a number may carry: name, factor to base units, dimension.
/// Byte and FLOP units also take `/s` (a rate); time units do not.
pub const UNITS: &[(&str, f64, Dim)] = &[
    ("B", 1.0, Dim::BYTES),
    ("KB", 1e3, Dim::BYTES),
    ("MB", 1e6, Dim::BYTES),
    ("GB", 1e9, Dim::BYTES),
    ("TB", 1e12, Dim::BYTES),
    ("KiB", 1024.0, Dim::BYTES),
    ("MiB", 1048576.0, Dim::BYTES),
    ("GiB", 1073741824.0, Dim::BYTES),
    ("TiB", 1099511627776.0, Dim::BYTES),
    ("FLOP", 1.0, Dim::FLOP),
    ("KFLOP", 1e3, Dim::FLOP),
    ("MFLOP", 1e6, Dim::FLOP),
    ("GFLOP", 1e9, Dim::FLOP),
    ("TFLOP", 1e12, Dim::FLOP),
    ("PFLOP", 1e15, Dim::FLOP),
    ("s", 1.0, Dim::TIME),
    ("ms", 1e-3, Dim::TIME),
    ("us", 1e-6, Dim::TIME),
    ("ns", 1e-9, Dim::TIME),
];

/// Every unit name accepted, rates included (`GB/s`).
pub fn unit_names() -> Vec<String> {
    let plain = UNITS.iter().map(|u| u.0.to_string());
    let rates = UNITS.iter().filter(|u| u.2 != Dim::TIME).map(|u| format!("{}/s", u.0));
    plain.chain(rates).collect()
}

/// Looks up a unit written after a number: its factor to base units and its dimension.
pub fn unit(name: &str) -> Option<(f64, Dim)> {
    let (base, per_second) = match name.strip_suffix("/s") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let &(_, factor, dim) = UNITS.iter().find(|u| u.0 == base)?;
    match (per_second, dim == Dim::TIME) {
        (true, true) => None,
        (true, false) => Some((factor, dim / Dim::TIME)),
        (false, _) => Some((factor, dim)),
    }
}

/// A constant value that a chip, link or node attribute can hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    Num(f64, Dim),
    Bool(bool),
    Str(String),
}

impl Scalar {
    /// The numeric value in base units, for ints and quantities.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            Scalar::Num(v, _) => Some(*v),
            Scalar::Bool(b) => Some(*b as i64 as f64),
            Scalar::Str(_) => None,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Num(v, d) if d.is_none() => write!(f, "{v}"),
            Scalar::Num(v, d) => f.write_str(&format_quantity(*v, *d)),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

type Units = &'static [(&'static str, f64)];

const BINARY_BYTES: Units = &[("GiB", 1073741824.0), ("MiB", 1048576.0), ("KiB", 1024.0), ("B", 1.0)];
const DECIMAL_BYTES: Units = &[("GB", 1e9), ("MB", 1e6), ("KB", 1e3), ("B", 1.0)];
const DECIMAL_RATE: Units = &[("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3), ("B/s", 1.0)];
const BINARY_RATE: Units = &[
    ("GiB/s", 1073741824.0),
    ("MiB/s", 1048576.0),
    ("KiB/s", 1024.0),
    ("B/s", 1.0),
];

/// Formats a quantity with a readable unit (`128 MiB`, `25 GB/s`, `3.2 ms`).
///
/// Bytes and rates come in a binary (`MiB`) and a decimal (`MB`) series;
/// a quantity is shown in the other series than the usual one (binary
/// for bytes, decimal for rates) when it is a round number there and not in
/// the usual one, so that it reads as it was written: `128 GB` stays
/// `128 GB` and `128 MiB` stays `128 MiB`. Round is at most four
/// significant digits, exact: a sum of weights (17412 B) stays `17.004 KiB`.
pub fn format_quantity(v: f64, d: Dim) -> String {
    let (usual, other): (Units, Units) = match d {
        x if x == Dim::BYTES => (BINARY_BYTES, DECIMAL_BYTES),
        x if x == Dim::RATE => (DECIMAL_RATE, BINARY_RATE),
        x if x == Dim::FLOP => (&[("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("FLOP", 1.0)], &[]),
        x if x == Dim::FLOP_RATE => (&[("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("FLOP/s", 1.0)], &[]),
        x if x == Dim::TIME => (&[("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)], &[]),
        _ => return format!("{} {}", trim_float(v), d.base_unit()),
    };
    let (shown, round) = in_units(v, usual);
    if other.is_empty() || round {
        return shown;
    }
    match in_units(v, other) {
        (there, true) => there,
        _ => shown,
    }
}

/// `v` in the largest of `units` it reaches, and whether that is a round
/// number: exact to the digits shown, with at most four significant ones.
fn in_units(v: f64, units: Units) -> (String, bool) {
    let (name, f) = units
        .iter()
        .find(|(_, f)| v.abs() >= *f)
        .unwrap_or(&units[units.len() - 1]);
    let x = v / f;
    let shown = trim_float(x);
    let milli = x * 1000.0;
    let exact = (milli - milli.round()).abs() <= 1e-6 * milli.abs().max(1.0);
    let digits = shown
        .trim_start_matches(['-', '0', '.'])
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    (format!("{shown} {name}"), exact && digits <= 4)
}

fn trim_float(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_have_dimensions() {
        assert_eq!(unit("MiB"), Some((1048576.0, Dim::BYTES)));
        assert_eq!(unit("GB/s"), Some((1e9, Dim::RATE)));
        assert_eq!(unit("TFLOP/s"), Some((1e12, Dim::FLOP_RATE)));
        assert_eq!(unit("ms"), Some((1e-3, Dim::TIME)));
        assert_eq!(unit("s/s"), None);
        assert_eq!(Dim::FLOP / Dim::FLOP_RATE, Dim::TIME);
        assert_eq!(Dim::BYTES / Dim::RATE, Dim::TIME);
    }

    #[test]
    fn formats_readably() {
        assert_eq!(format_quantity(128.0 * 1048576.0, Dim::BYTES), "128 MiB");
        assert_eq!(format_quantity(25e9, Dim::RATE), "25 GB/s");
        assert_eq!(format_quantity(0.0032, Dim::TIME), "3.2 ms");
        assert_eq!((Dim::BYTES / Dim::FLOP).to_string(), "quantity in B/FLOP");
    }

    #[test]
    fn quantities_read_in_the_series_they_were_written_in() {
        let written = |x: f64, u: &str| {
            let (f, d) = unit(u).unwrap();
            format_quantity(x * f, d)
        };
        for (x, u) in [
            (128.0, "GB"),
            (128.0, "GiB"),
            (100.0, "GB/s"),
            (1.5, "GiB/s"),
            (2.5, "MB"),
            (3.0, "MiB"),
            (64.0, "KiB"),
            (25.0, "GB/s"),
        ] {
            assert_eq!(written(x, u), format!("{x} {u}"));
        }
        // Neither series round: bytes binary, rates decimal, as before.
        assert_eq!(format_quantity(123_456_789.0, Dim::BYTES), "117.738 MiB");
        assert_eq!(format_quantity(123_456_789.0, Dim::RATE), "123.457 MB/s");
        assert_eq!(format_quantity(0.0, Dim::BYTES), "0 B");
        // Exact in KB but not round: the usual series.
        assert_eq!(format_quantity(17412.0, Dim::BYTES), "17.004 KiB");
    }
}
