//! The compare journal: each run, once finished, is written to
//! `OUT/runs/PROBLEM/STRATEGY.seedK.json` with a fingerprint of everything
//! that decides its result, so that a compare stopped part-way keeps the
//! runs it finished and `--resume` takes them instead of running them again.

use super::super::search::RlArgs;
use super::{problem_folder, safe_name};
use crate::digest::Fnv1a;
use crate::problem::Problem;
use crate::strategy::{Outcome, SHIPPED};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the run file layout; a file of another version is run again.
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct RunFile {
    format: u32,
    /// What the run was made of ([`Journal::fingerprint`]).
    fingerprint: String,
    problem: String,
    outcome: Outcome,
}

/// Where runs are kept, and whether runs on disk are taken.
pub struct Journal {
    dir: PathBuf,
    resume: bool,
}

/// A finished run found on disk that does not stand for the run asked for.
pub enum Stale {
    /// No file: the run has not been made.
    Missing,
    /// A file that cannot be read as a run (a write cut short, a hand edit).
    Unreadable(String),
    /// A run made with other settings (problem, budget, judge, policy).
    Other,
}

impl Journal {
    pub fn new(out: &Path, resume: bool) -> Journal {
        Journal {
            dir: out.join("runs"),
            resume,
        }
    }

    pub fn path(&self, label: &str, strategy: &str, seed: u64) -> PathBuf {
        self.dir
            .join(problem_folder(label))
            .join(format!("{}.seed{seed}.json", safe_name(strategy)))
    }

    /// The run on disk, when resuming and it was made from `fingerprint`
    /// (for a problem of `nodes` nodes and a budget of `budget` samples).
    pub fn load(
        &self,
        label: &str,
        key: (&str, u64),
        fingerprint: &str,
        nodes: usize,
        budget: usize,
    ) -> Result<Outcome, Stale> {
        let (strategy, seed) = key;
        if !self.resume {
            return Err(Stale::Missing);
        }
        let path = self.path(label, strategy, seed);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Stale::Missing),
            Err(e) => return Err(Stale::Unreadable(format!("`{}`: {e}", path.display()))),
        };
        let run: RunFile = serde_json::from_str(&text)
            .map_err(|e| Stale::Unreadable(format!("`{}` is not a run file: {e}", path.display())))?;
        if run.format != FORMAT || run.fingerprint != fingerprint {
            return Err(Stale::Other);
        }
        let o = run.outcome;
        let sane = o.strategy == strategy
            && o.seed == seed
            && o.records.len() <= budget
            && o.best
                .as_ref()
                .is_none_or(|b| b.chips.len() == nodes && b.sample <= o.records.len());
        if !sane {
            return Err(Stale::Unreadable(format!(
                "`{}` does not hold a run of {strategy} seed {seed} on {nodes} nodes within {budget} samples",
                path.display()
            )));
        }
        Ok(o)
    }

    /// Writes a finished run, atomically (a temporary renamed into place).
    pub fn save(&self, label: &str, problem: &str, fingerprint: &str, outcome: &Outcome) -> Result<(), String> {
        // JSON has no infinity: such a run (a partition of zero latency) is
        // not kept rather than kept wrong.
        let finite = |t: Option<f64>| t.is_none_or(f64::is_finite);
        if !finite(outcome.best.as_ref().map(|b| b.throughput))
            || !outcome.records.iter().all(|r| finite(r.throughput) && finite(r.best))
        {
            return Err("its throughput is not finite".into());
        }
        let path = self.path(label, &outcome.strategy, outcome.seed);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        let file = RunFile {
            format: FORMAT,
            fingerprint: fingerprint.to_string(),
            problem: problem.to_string(),
            outcome: outcome.clone(),
        };
        let text = serde_json::to_string(&file).map_err(|e| e.to_string())? + "\n";
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(|e| format!("cannot write `{}`: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
    }

    /// What decides a problem's runs: its name, graph, package, rules
    /// (by their source text) and objective. Computed once per problem.
    /// Not the program: a run kept by an older `mcmpart` is taken as it is.
    pub fn problem_basis(problem: &Problem, sources: &[&str]) -> Fnv1a {
        let mut h = Fnv1a::new();
        h.field(problem.name.as_bytes());
        h.field(format!("{:?}{:?}", problem.graph.nodes, problem.graph.edges).as_bytes());
        h.field(format!("{:?}{:?}", problem.package.chips, problem.package.links).as_bytes());
        for c in &problem.constraints {
            h.field(format!("{}{:?}{:?}", c.name, c.args, c.native).as_bytes());
        }
        h.field(format!("{:?}{:?}", problem.objective, problem.evaluator).as_bytes());
        for s in sources {
            h.field(s.as_bytes());
        }
        h
    }

    /// What decides one run: its problem's basis, the strategy, the seed,
    /// the budget, the judge's settings, and for the learned strategies
    /// their settings and the checkpoint's sidecar (which holds the
    /// weights' checksum).
    pub fn fingerprint(basis: &Fnv1a, strategy: &str, seed: u64, budget: usize, judge: &str, rl: &RlArgs) -> String {
        let mut h = *basis;
        h.field(strategy.as_bytes())
            .field(&seed.to_le_bytes())
            .field(&(budget as u64).to_le_bytes())
            .field(judge.as_bytes());
        if strategy.starts_with("rl") {
            h.field(rl.settings().as_bytes());
            let stem = rl.options().policy.unwrap_or_else(|| PathBuf::from(SHIPPED));
            let (_, sidecar) = crate::policy::checkpoint::paths(&stem);
            h.field(&std::fs::read(sidecar).unwrap_or_default());
        }
        h.hex()
    }
}
