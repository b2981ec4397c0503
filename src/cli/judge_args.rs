//! The judge's flags, shared by `eval`, `solve` and `compare`.

use crate::cost::JudgeOptions;
use std::time::Duration;

/// How partitions are judged. `compare` fingerprints its runs with this
/// struct's `Debug` text: its name and fields are part of the run files
/// under `results/` (renaming one makes them run again).
#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// An external evaluator command (run by `sh -c`): reads the partition
    /// JSON on stdin, prints `{"valid": true, "throughput": X}` or
    /// `{"valid": false, "reason": "..."}`. Overrides `evaluate with`.
    #[arg(long)]
    pub evaluator: Option<String>,
    /// Use the analytical model even when the problem names an evaluator.
    #[arg(long, conflicts_with = "evaluator")]
    pub analytical: bool,
    /// Seconds an evaluation may take before it counts as invalid.
    #[arg(long, default_value_t = 60.0, value_parser = super::args::seconds)]
    pub eval_timeout: f64,
    /// Evaluations run at once (at most 1024).
    #[arg(long, default_value_t = 1, value_parser = super::args::jobs)]
    pub jobs: usize,
    /// Skip the built-in peak-memory check.
    #[arg(long)]
    pub no_dynamic_check: bool,
}

impl EvalArgs {
    pub fn options(&self) -> JudgeOptions {
        JudgeOptions {
            evaluator: self.evaluator.clone(),
            analytical: self.analytical,
            timeout: Duration::from_secs_f64(self.eval_timeout.clamp(0.001, super::args::MAX_SECONDS)),
            jobs: self.jobs.max(1),
            dynamic_check: !self.no_dynamic_check,
        }
    }

    /// The settings as the run files' fingerprints spell them.
    pub fn settings(&self) -> String {
        format!("{self:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::EvalArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        eval: EvalArgs,
    }

    /// The committed runs were fingerprinted with this text.
    #[test]
    fn settings_read_as_the_committed_runs_spell_them() {
        let a = Args::try_parse_from(["t"]).unwrap().eval;
        assert_eq!(
            a.settings(),
            "EvalArgs { evaluator: None, analytical: false, eval_timeout: 60.0, jobs: 1, no_dynamic_check: false }"
        );
    }
}
