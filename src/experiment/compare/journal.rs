//! The compare journal: each run, once finished, is written to
//! `OUT/runs/PROBLEM/STRATEGY.seedK.json` with a fingerprint of everything
//! that decides its result, so that a compare stopped part-way keeps the
//! runs it finished and `--resume` takes them instead of running them again.
//! A run file may also be kept gzipped (`STRATEGY.seedK.json.gz`), as the
//! runs behind the book's figures are committed; a plain file shadows it.

use super::{problem_folder, safe_name, Config, Log};
use crate::digest::Fnv1a;
use crate::problem::Problem;
use crate::strategy::{Outcome, SHIPPED};
use crate::textfile::{decode, TextError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the run file layout; a file of another version is run again.
const FORMAT: u32 = 1;

/// The most bytes of JSON a gzipped run file may expand to: a run of
/// 2,000 samples takes about 200 KB.
const MAX_RUN_TEXT: u64 = 256 << 20;

#[derive(Serialize, Deserialize)]
struct RunFile {
    format: u32,
    /// What the run was made of ([`Journal::fingerprint`]).
    fingerprint: String,
    problem: String,
    outcome: Outcome,
}

/// Takes `OUT/.lock` for this process: two compares writing one folder
/// would both make the runs it lacks and overwrite each other's files (and
/// one built from older code would put its runs among the other's). An OS
/// lock, so a killed compare leaves none behind. Err: message and help.
pub fn lock(out: &Path) -> Result<std::fs::File, (String, String)> {
    let path = out.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| {
            (
                format!("cannot open `{}`: {e}", path.display()),
                "check the folder's permissions".into(),
            )
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err((
            format!("`{}` is in use by another compare", out.display()),
            "wait for it to end, or give this one another --out (it would run the same missing runs)".into(),
        )),
        Err(std::fs::TryLockError::Error(e)) => Err((
            format!("cannot lock `{}`: {e}", path.display()),
            "a file system without locks? give another --out".into(),
        )),
    }
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

    /// Where a run made with other settings than the latest is kept when a
    /// run of the same strategy and seed replaces it: beside it, named by
    /// its fingerprint, so that going back to those settings finds it.
    fn aside(path: &Path, fingerprint: &str) -> PathBuf {
        let tag: String = fingerprint
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(16)
            .collect();
        path.with_extension(format!("{tag}.json"))
    }

    /// The gzipped twin of a run file's path (`X.json.gz` for `X.json`).
    fn gzipped(path: &Path) -> PathBuf {
        let mut s = path.as_os_str().to_owned();
        s.push(".gz");
        PathBuf::from(s)
    }

    /// The run file at `path`, or else at its gzipped twin, if it reads as one;
    /// with the path it was read from.
    fn read(path: &Path) -> Result<(RunFile, PathBuf), Stale> {
        match Self::read_one(path) {
            Err(Stale::Missing) => {
                let gz = Self::gzipped(path);
                Self::read_one(&gz).map(|r| (r, gz))
            }
            r => r.map(|r| (r, path.to_path_buf())),
        }
    }

    fn read_one(path: &Path) -> Result<RunFile, Stale> {
        let raw = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Stale::Missing),
            Err(e) => return Err(Stale::Unreadable(format!("`{}`: {e}", path.display()))),
        };
        let shown = path.display();
        let text = decode(raw, MAX_RUN_TEXT).map_err(|e| {
            Stale::Unreadable(match e {
                TextError::Gzip(e) => format!("`{shown}` is not gzipped text: {e}"),
                TextError::TooLarge(max) => format!("`{shown}` expands to more than {} MiB of text", max >> 20),
                TextError::NotUtf8 { .. } => format!("`{shown}` is not UTF-8 text"),
            })
        })?;
        serde_json::from_str(&text)
            .map_err(|e| Stale::Unreadable(format!("`{}` is not a run file: {e}", path.display())))
    }

    /// The run on disk, when resuming and it was made from `fingerprint`
    /// (on `problem`, within a budget of `budget` samples).
    pub fn load(
        &self,
        label: &str,
        key: (&str, u64),
        fingerprint: &str,
        problem: &Problem,
        budget: usize,
    ) -> Result<Outcome, Stale> {
        let (strategy, seed) = key;
        if !self.resume {
            return Err(Stale::Missing);
        }
        let latest = self.path(label, strategy, seed);
        let (mut run, mut path) = Self::read(&latest)?;
        if run.format != FORMAT || run.fingerprint != fingerprint {
            // Made with other settings; one made with these may be aside.
            (run, path) = match Self::read(&Self::aside(&latest, fingerprint)) {
                Ok((r, p)) if r.format == FORMAT && r.fingerprint == fingerprint => (r, p),
                Ok(_) | Err(Stale::Missing) => return Err(Stale::Other),
                Err(e) => return Err(e),
            };
        }
        let o = run.outcome;
        let why = if o.strategy != strategy || o.seed != seed {
            Some(format!("it is a run of {} seed {}", o.strategy, o.seed))
        } else {
            o.inconsistency(problem, budget)
        };
        match why {
            // A hand edit or a damaged file: run again rather than report it.
            Some(why) => Err(Stale::Unreadable(format!(
                "`{}` does not hold a run of {strategy} seed {seed} on `{}` within {budget} samples: {why}",
                path.display(),
                problem.name
            ))),
            None => Ok(o),
        }
    }

    /// Writes a finished run, atomically (a temporary renamed into place).
    pub fn save(
        &self,
        label: &str,
        problem: &str,
        fingerprint: &str,
        outcome: &Outcome,
        log: Log,
    ) -> Result<(), String> {
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
        // A finished run made with other settings (another budget, say) is
        // kept aside, not replaced: it took as long to make as this one.
        if let Some((old, at)) = Self::read(&path).ok().filter(|(old, _)| old.fingerprint != fingerprint) {
            let mut kept = Self::aside(&path, &old.fingerprint);
            if at != path {
                kept = Self::gzipped(&kept);
            }
            std::fs::rename(&at, &kept).map_err(|e| format!("cannot move `{}` aside: {e}", at.display()))?;
            log(&format!(
                "note: `{}` held a run made with other settings; it is kept as `{}`",
                at.display(),
                kept.display()
            ));
        }
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
            h.field(format!("{}{:?}{}", c.name, c.args, legacy_native_tag(c.native.as_deref())).as_bytes());
        }
        // Spelled as the objective's Debug text was while the metric was a string.
        let o = &problem.objective;
        let objective = format!("Objective {{ sense: {:?}, metric: {:?} }}", o.sense, o.metric.name());
        h.field(format!("{objective}{:?}", problem.evaluator).as_bytes());
        for s in sources {
            // `:: native` says how the solver runs a rule, not what it
            // means, and the native key is hashed above on its own.
            let s = without_later_items(s);
            h.field(legacy_layout(&s).replace(NATIVE_ANNOTATION, "").as_bytes());
        }
        h
    }

    /// What decides one run: its problem's basis, the strategy, the seed,
    /// the budget, the judge's settings, and for the learned strategies
    /// their settings and the checkpoint's sidecar (which holds the
    /// weights' checksum).
    pub fn fingerprint(basis: &Fnv1a, strategy: &str, seed: u64, config: &Config) -> String {
        let mut h = *basis;
        h.field(strategy.as_bytes())
            .field(&seed.to_le_bytes())
            .field(&(config.budget as u64).to_le_bytes())
            .field(config.settings.judge.as_bytes());
        if strategy.starts_with("rl") {
            h.field(config.settings.rl.as_bytes());
            let stem = config.rl.policy.clone().unwrap_or_else(|| PathBuf::from(SHIPPED));
            let (_, sidecar) = crate::policy::checkpoint::paths(&stem);
            h.field(&std::fs::read(sidecar).unwrap_or_default());
        }
        h.hex()
    }
}

/// Left out of the hashed source text: runs made before the standard library
/// marked its native rules in its text stay valid.
const NATIVE_ANNOTATION: &str = " :: native";

/// Source files as their text was laid out before `mcmpart fmt`, by which
/// the committed runs were fingerprinted: the layout of a file is not what
/// it means.
const LEGACY_LAYOUTS: &[&str] = &[include_str!("legacy/topologies-before-fmt.txt")];

/// Standard-library items added after the committed runs were made, each
/// as its exact text. A source is hashed without them: a package built from
/// one is hashed on its own (its chips and links), so leaving the text out
/// keeps the runs of problems that never use it. An item edited since no
/// longer matches, and is hashed.
const LATER_ITEMS: &[&str] = &[include_str!("legacy/torus-added-after-runs.txt")];

/// Text added to every standard topology after the committed runs were
/// made, each exact, all occurrences removed before hashing: the optional
/// chip `kind` (default `""`, which sets nothing, so a package made without
/// it is the package the runs were made on; one made with it is hashed by
/// its chips, kinds included).
const LATER_EDITS: &[&str] = &[
    " Each takes an\n// optional chip `kind` (`kind = \"a100\"`): a graph's measured op times for\n// that kind then replace flops / compute; the default, \"\", is no kind.",
    ", kind: str = \"\"",
    "    if kind != \"\" {\n        for i in 0..n {\n            set die[i] { kind = kind }\n        }\n    }\n",
    "    if kind != \"\" {\n        for i in 0..rows * cols {\n            set tile[i] { kind = kind }\n        }\n    }\n",
    "    if kind != \"\" {\n        for i in 0..machines * gpus {\n            set gpu[i] { kind = kind }\n        }\n    }\n",
    "    if kind != \"\" {\n        for i in 0..n {\n            set chiplet[i] { kind = kind }\n        }\n    }\n",
];

fn without_later_items(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    for edit in LATER_EDITS {
        if out.contains(edit) {
            out = std::borrow::Cow::Owned(out.replace(edit, ""));
        }
    }
    for item in LATER_ITEMS {
        if out.contains(item) {
            out = std::borrow::Cow::Owned(out.replacen(item, "", 1));
        }
    }
    out
}

/// `text` in its pre-`fmt` layout when it is one of [`LEGACY_LAYOUTS`]
/// formatted (the same tokens, so the same meaning); else `text` itself.
fn legacy_layout(text: &str) -> &str {
    LEGACY_LAYOUTS
        .iter()
        .find(|old| crate::lang::format::format_source(old).is_ok_and(|f| f == text))
        .copied()
        .unwrap_or(text)
}

/// The native tag as the run files' fingerprints spell it (`Some(NoSkip)`,
/// `None`): the Debug text of the enum that named native rules before the
/// rule registry, kept so that committed runs still load with `--resume`.
fn legacy_native_tag(key: Option<&str>) -> String {
    match key {
        None => "None".to_string(),
        Some(k) => {
            let camel: String = k
                .split('_')
                .map(|w| {
                    let mut c = w.chars();
                    c.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                })
                .collect();
            format!("Some({camel})")
        }
    }
}

#[cfg(test)]
mod legacy_tests {
    use super::*;

    #[test]
    fn a_formatted_legacy_file_is_hashed_in_its_old_layout_and_nothing_else_is() {
        let old = LEGACY_LAYOUTS[0];
        let formatted = crate::lang::format::format_source(old).unwrap();
        assert_ne!(formatted, old, "the legacy layout is not the formatter's");
        assert_eq!(legacy_layout(&formatted), old);
        let changed = formatted.replace("die[n]", "die[n + 1]");
        assert_eq!(legacy_layout(&changed), changed);
    }

    #[test]
    fn the_standard_topologies_less_later_items_are_the_legacy_file() {
        let now = crate::lang::loader::STDLIB
            .iter()
            .find(|(m, _)| *m == "topologies")
            .map(|(_, text)| *text)
            .expect("std::topologies");
        assert_eq!(legacy_layout(&without_later_items(now)), LEGACY_LAYOUTS[0]);
        // An edited later item is hashed.
        let edited = now.replace("if cols > 2", "if cols > 3");
        assert_ne!(legacy_layout(&without_later_items(&edited)), LEGACY_LAYOUTS[0]);
    }
}
