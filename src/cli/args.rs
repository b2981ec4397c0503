//! Checked command-line values: each flag's value parser says what is wrong
//! with a bad value before anything runs (clap names the flag), instead of
//! a panic, a hang or a silent fix-up later.

/// An objective that replaces the problem's (`--objective`): a metric some
/// cost model judges ([`crate::cost::objective::MODELS`]).
pub fn objective(s: &str) -> Result<crate::problem::Metric, String> {
    crate::cost::objective::metric_named(s)
}

/// A count of at least 1.
pub fn counting(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{s}` is not a whole number of at least 1")),
    }
}

/// A finite number above 0.
pub fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 => Ok(t),
        _ => Err(format!("`{s}` is not a positive number")),
    }
}

/// A finite number of at least 0.
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("`{s}` is not a number of at least 0")),
    }
}

/// The most seconds a duration flag takes (about 115 days): more is a typo,
/// and would overflow a timer.
pub const MAX_SECONDS: f64 = 1e7;

/// Seconds: above 0, at most [`MAX_SECONDS`].
pub fn seconds(s: &str) -> Result<f64, String> {
    match positive(s) {
        Ok(t) if t <= MAX_SECONDS => Ok(t),
        Ok(_) => Err(format!("`{s}` seconds is more than {MAX_SECONDS:e}")),
        Err(_) => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// The most evaluations at once: each is a thread (and, with an evaluator,
/// a process); far more than any machine has cores only exhausts it.
pub const MAX_JOBS: usize = 1024;

/// A count of 1 to `max`; past it, "`s` is more than MAX WHAT".
fn counting_at_most(s: &str, max: usize, what: &str) -> Result<usize, String> {
    match counting(s)? {
        n if n <= max => Ok(n),
        _ => Err(format!("`{s}` is more than {max} {what}")),
    }
}

/// Evaluations at once: 1 to [`MAX_JOBS`].
pub fn jobs(s: &str) -> Result<usize, String> {
    counting_at_most(s, MAX_JOBS, "evaluations at once")
}

/// The most moves a rollout may make: far more than any useful number, and
/// few enough that a typo (`--moves 1000000000000`) cannot hang a rollout.
pub const MAX_MOVES: usize = 100_000;

/// A rollout's moves: 0 (every node drawn) to [`MAX_MOVES`].
pub fn moves(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_MOVES => Ok(n),
        Ok(_) => Err(format!("`{s}` is more than {MAX_MOVES} moves")),
        Err(_) => Err(format!("`{s}` is not a whole number of moves")),
    }
}

/// The most samples a `compare` run takes: its curves and tables hold a
/// point per sample (and ten million samples is weeks of any strategy).
pub const MAX_COMPARE_SAMPLES: usize = 10_000_000;

/// A compare run's budget: 1 to [`MAX_COMPARE_SAMPLES`].
pub fn compare_budget(s: &str) -> Result<usize, String> {
    counting_at_most(s, MAX_COMPARE_SAMPLES, "samples")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_refused_with_the_value_named() {
        assert_eq!(counting("3"), Ok(3));
        assert!(counting("0").unwrap_err().contains("`0`"));
        assert!(positive("NaN").is_err() && positive("inf").is_err() && positive("-1").is_err());
        assert_eq!(non_negative("0"), Ok(0.0));
        assert!(non_negative("-0.5").is_err() && non_negative("NaN").is_err());
        assert_eq!(seconds("2.5"), Ok(2.5));
        for bad in ["0", "NaN", "-1", "1e300", "inf"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(jobs("8"), Ok(8));
        assert!(jobs("0").is_err() && jobs("100000").unwrap_err().contains("1024"));
        assert_eq!(moves("0"), Ok(0));
        assert!(moves("1000000000000").unwrap_err().contains("100000 moves"));
        assert_eq!(compare_budget("2000"), Ok(2000));
        assert!(compare_budget("18446744073709551615")
            .unwrap_err()
            .contains("10000000 samples"));
    }
}
