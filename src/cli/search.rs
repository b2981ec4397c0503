//! `mcmpart solve`: run a strategy within a budget, write the best valid
//! partition, and say how it compares with greedy and with the bound.

use super::args::{counting, positive, seconds};
use super::eval::{secs, EvalArgs};
use super::solve::{report_infeasible, with_problem};
use super::Output;
use crate::cost::{CostModel, Judge};
use crate::problem::{partition_json, write_partition, Placement, Problem};
use crate::strategy::{self, Budget, Greedy, Outcome};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// The strategy `solve` runs when none is named: the best the project has
/// (see the book's comparison table).
pub const DEFAULT_STRATEGY: &str = "dp";

#[derive(clap::Args, Debug, Clone)]
pub struct SolveArgs {
    /// The problem, when the file declares several.
    #[arg(long)]
    pub problem: Option<String>,
    /// greedy, random, anneal, dp, rl, rl-zero-shot, rl-scratch or rl-nosolver.
    #[arg(long, default_value = DEFAULT_STRATEGY)]
    pub strategy: String,
    /// Budget in samples (evaluated partitions).
    #[arg(long, conflicts_with = "time", value_parser = counting)]
    pub budget: Option<usize>,
    /// Budget in seconds.
    #[arg(long, value_parser = seconds)]
    pub time: Option<f64>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the best partition (default: `<stem of FILE>.partition.json`, in the working folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub eval: EvalArgs,
    #[command(flatten)]
    pub rl: RlArgs,
}

/// The learned strategies' settings (`rl` and its variants).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RlArgs {
    /// The policy checkpoint (`PATH.safetensors` + `PATH.json`) instead of
    /// the shipped one.
    #[arg(long, value_name = "PATH")]
    pub policy: Option<PathBuf>,
    /// Sample the policy without fine-tuning it (as `rl-zero-shot`).
    #[arg(long)]
    pub zero_shot: bool,
    /// Train a fresh policy within the budget (as `rl-scratch`).
    #[arg(long, conflicts_with_all = ["policy", "zero_shot"])]
    pub from_scratch: bool,
    /// How the policy's draws meet the solver: fix (default), sample, or
    /// no-solver (as `rl-nosolver`).
    #[arg(long, value_enum, default_value_t = crate::policy::rollout::Mode::Fix)]
    pub rl_mode: crate::policy::rollout::Mode,
    /// Each rollout moves at most this many nodes (and what must follow
    /// them) from the best partition so far; 0 draws every node from the
    /// policy, as in the paper. Default 3; 0 for rl-nosolver. (Under
    /// `--rl-mode sample`, SAMPLE draws every node and this is unused.)
    #[arg(long, value_name = "K", value_parser = super::args::moves)]
    pub moves: Option<usize>,
    /// The policy's temperature: below 1 each rollout makes fewer moves,
    /// those the policy is surest of; above 1, more.
    #[arg(long, default_value_t = 1.0, value_parser = positive)]
    pub temperature: f64,
    /// Fine-tuning: PPO epochs over each round's rollouts (default 4).
    #[arg(long, value_name = "N", value_parser = counting)]
    pub epochs: Option<usize>,
    /// Fine-tuning: minibatches per epoch, each an optimiser step (default 4).
    #[arg(long, value_name = "N", value_parser = counting)]
    pub minibatches: Option<usize>,
    /// Fine-tuning: AdamW's learning rate (default 3e-4).
    #[arg(long, value_parser = positive)]
    pub lr: Option<f64>,
}

impl RlArgs {
    /// The settings as text, for a journal's fingerprint: the six first
    /// fields as `Debug` prints them, then each later one only when it is
    /// set, so that adding a flag leaves the runs kept before it valid.
    pub fn settings(&self) -> String {
        let mut s = format!(
            "RlArgs {{ policy: {:?}, zero_shot: {:?}, from_scratch: {:?}, rl_mode: {:?}, moves: {:?}, temperature: {:?}",
            self.policy, self.zero_shot, self.from_scratch, self.rl_mode, self.moves, self.temperature
        );
        for (name, value) in [
            ("epochs", self.epochs.map(|e| e.to_string())),
            ("minibatches", self.minibatches.map(|m| m.to_string())),
            ("lr", self.lr.map(|l| format!("{l:?}"))),
        ] {
            if let Some(v) = value {
                s += &format!(", {name}: {v}");
            }
        }
        s + " }"
    }

    /// The flags given that change the learned strategies (those left at
    /// their defaults are not).
    fn given(&self) -> Vec<&'static str> {
        let flags = [
            ("--policy", self.policy.is_some()),
            ("--zero-shot", self.zero_shot),
            ("--from-scratch", self.from_scratch),
            ("--rl-mode", self.rl_mode != crate::policy::rollout::Mode::Fix),
            ("--moves", self.moves.is_some()),
            ("--temperature", self.temperature != 1.0),
            ("--epochs", self.epochs.is_some()),
            ("--minibatches", self.minibatches.is_some()),
            ("--lr", self.lr.is_some()),
        ];
        flags.into_iter().filter(|f| f.1).map(|f| f.0).collect()
    }

    /// Why these settings contradict the strategies they are for, if they
    /// do: a flag no named strategy uses, or one its name overrides. (They
    /// were silently ignored: `--strategy dp --policy nowhere` ran dp.)
    pub fn conflict(&self, strategies: &[&str]) -> Option<String> {
        let given = self.given();
        let learned: Vec<&str> = strategies.iter().copied().filter(|s| s.starts_with("rl")).collect();
        if learned.is_empty() {
            return given.first().map(|f| {
                format!(
                    "`{f}` sets the learned strategies (rl, rl-zero-shot, rl-scratch, rl-nosolver), and none is named"
                )
            });
        }
        // With several strategies the flags serve those that use them.
        let [one] = learned.as_slice() else { return None };
        let tuning = given
            .into_iter()
            .find(|f| ["--epochs", "--minibatches", "--lr"].contains(f));
        let clash = |flag: &str, why: &str| Some(format!("`{flag}` contradicts `{one}`, which {why}"));
        match (*one, tuning) {
            ("rl-scratch", _) if self.zero_shot => clash("--zero-shot", "trains a fresh policy"),
            ("rl-scratch", _) if self.policy.is_some() => clash("--policy", "starts from no checkpoint"),
            ("rl-zero-shot", _) if self.from_scratch => clash("--from-scratch", "samples the checkpoint untrained"),
            ("rl-zero-shot", Some(f)) => clash(f, "does not fine-tune"),
            ("rl", Some(f)) if self.zero_shot => Some(format!("`{f}` sets fine-tuning, which `--zero-shot` skips")),
            ("rl-nosolver", _)
                if !matches!(
                    self.rl_mode,
                    crate::policy::rollout::Mode::Fix | crate::policy::rollout::Mode::NoSolver
                ) =>
            {
                clash("--rl-mode", "samples without the solver")
            }
            _ => None,
        }
    }

    pub fn options(&self) -> strategy::RlOptions {
        let mut o = strategy::RlOptions {
            policy: self.policy.as_deref().map(strip_checkpoint_ext),
            zero_shot: self.zero_shot,
            from_scratch: self.from_scratch,
            mode: self.rl_mode,
            moves: self.moves,
            temperature: self.temperature,
            ..strategy::RlOptions::default()
        };
        if let Some(e) = self.epochs {
            o.ppo.epochs = e;
        }
        if let Some(m) = self.minibatches {
            o.ppo.minibatches = m;
        }
        if let Some(lr) = self.lr {
            o.ppo.lr = lr;
        }
        o
    }
}

/// `run.safetensors` or `run.json` names the checkpoint `run`.
pub fn strip_checkpoint_ext(p: &Path) -> PathBuf {
    match p.extension().and_then(|e| e.to_str()) {
        Some("safetensors") | Some("json") => p.with_extension(""),
        _ => p.to_path_buf(),
    }
}

impl SolveArgs {
    pub fn budget(&self) -> Budget {
        match (self.budget, self.time) {
            (_, Some(t)) => Budget::Seconds(t.max(0.0)),
            (Some(n), None) => Budget::Samples(n),
            (None, None) => Budget::Samples(1000),
        }
    }
}

/// A strategy by name, or an error naming the ones there are (or saying
/// why its policy could not be loaded).
pub fn strategy_named(out: &Output, name: &str, rl: &RlArgs) -> Option<Box<dyn strategy::Strategy>> {
    match strategy::by_name(name, &rl.options()) {
        Ok(Some(s)) => Some(s),
        Ok(None) => {
            unknown_strategy(out, name);
            None
        }
        Err(e) => {
            out.error(&format!("strategy `{name}`: {e}"), None);
            None
        }
    }
}

fn unknown_strategy(out: &Output, name: &str) {
    let known = strategy::NAMES.join(", ");
    let help = crate::diag::suggest(name, strategy::NAMES.iter().copied())
        .map(|s| format!("did you mean `{s}`? The strategies are {known}"))
        .unwrap_or_else(|| format!("the strategies are {known}"));
    out.error(&format!("unknown strategy `{name}`"), Some(&help));
}

/// Checks the names and the learned-strategy flags before any strategy is
/// built: building rl loads its checkpoint, whose error would hide a
/// contradiction in the flags. `false` once an error is reported.
pub fn strategies_agree(out: &Output, names: &[&str], rl: &RlArgs) -> bool {
    if let Some(bad) = names.iter().find(|n| !strategy::NAMES.contains(n)) {
        unknown_strategy(out, bad);
        return false;
    }
    if let Some(why) = rl.conflict(names) {
        out.error(&why, None);
        return false;
    }
    true
}

pub fn run(out: &Output, file: &Path, args: &SolveArgs) -> i32 {
    watch_ctrl_c();
    if !strategies_agree(out, &[args.strategy.as_str()], &args.rl) {
        return 2;
    }
    // The name is known: what fails now is its checkpoint, an input.
    let Some(mut strat) = strategy_named(out, &args.strategy, &args.rl) else {
        return 1;
    };
    let dest = args.out.clone().unwrap_or_else(|| default_out(file));
    with_problem(out, file, args.problem.as_deref(), Some(&dest), |p, sources| {
        let judge = match Judge::new(p, &args.eval.options()) {
            Ok(j) => j,
            Err(e) => {
                out.error(&e.message, e.help.as_deref());
                return 1;
            }
        };
        let budget = args.budget();
        let bar = progress_bar(out, budget);
        let mut tick = |r: &strategy::SampleRecord| {
            if let Some(b) = &bar {
                match budget {
                    Budget::Samples(_) => b.set_position(r.sample as u64),
                    Budget::Seconds(_) => b.set_position((r.elapsed_s * 10.0) as u64),
                }
                if let Some(t) = r.best {
                    b.set_message(format!("best {t:.2}/s"));
                }
            }
        };
        let result = strategy::run(p, &judge, strat.as_mut(), budget, args.seed, Some(&mut tick));
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        // The baseline below runs even after Ctrl-C.
        strategy::clear_stop();
        let outcome = match result {
            Ok(o) => o,
            Err(inf) => {
                report_infeasible(out, p, &inf, sources);
                return 1;
            }
        };
        // The baseline: greedy's one partition, not counted in the budget.
        let greedy = match strategy::run(p, &judge, &mut Greedy, Budget::Samples(1), args.seed, None) {
            Ok(g) => g.best.map(|b| b.throughput),
            Err(_) => None,
        };
        report(out, p, &judge, &outcome, greedy, &dest)
    })
}

/// Ctrl-C stops the search at its next sample, and `solve` writes the best
/// so far and exits 130; a second Ctrl-C exits at once.
fn watch_ctrl_c() {
    // Its own flag, not the searches' (cleared for the baseline after the
    // search): a second Ctrl-C at any point quits.
    static PRESSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let set = ctrlc::set_handler(|| {
        if PRESSED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping at the next sample (Ctrl-C again to quit at once)");
        strategy::request_stop();
    });
    if let Err(e) = set {
        eprintln!("warning: Ctrl-C will not keep the best partition: {e}");
    }
}

fn default_out(file: &Path) -> PathBuf {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("best");
    PathBuf::from(format!("{stem}.partition.json"))
}

pub fn progress_bar(out: &Output, budget: Budget) -> Option<indicatif::ProgressBar> {
    if out.json || !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, unit) = match budget {
        Budget::Samples(n) => (n as u64, "samples"),
        Budget::Seconds(t) => ((t * 10.0) as u64, "ds"),
    };
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template(&format!(
        "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}}"
    ))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

/// A reason for invalid samples, with the wordings that differ from it only
/// in their numbers (a chip out of memory by 127.25 MiB or by 127.26 MiB).
#[derive(Clone, Debug, PartialEq)]
pub struct Reason {
    /// The most frequent wording.
    pub text: String,
    /// Samples, over every wording.
    pub count: usize,
    pub wordings: usize,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.wordings {
            1 => write!(f, "{}", self.text),
            k => write!(f, "{} (one of {k} wordings that differ only in numbers)", self.text),
        }
    }
}

/// The wording with every number (digits, possibly with a point) as `#`.
fn numbers_out(r: &str) -> String {
    let mut out = String::with_capacity(r.len());
    let mut in_number = false;
    for ch in r.chars() {
        let part = ch.is_ascii_digit() || (in_number && ch == '.');
        if part && !in_number {
            out.push('#');
        } else if !part {
            out.push(ch);
        }
        in_number = part;
    }
    out
}

/// The most common reasons for invalid samples, most samples first.
pub fn top_reasons(o: &Outcome, n: usize) -> Vec<Reason> {
    let mut groups: std::collections::BTreeMap<String, Reason> = std::collections::BTreeMap::new();
    for (text, &count) in &o.invalid {
        let g = groups.entry(numbers_out(text)).or_insert_with(|| Reason {
            text: text.clone(),
            count: 0,
            wordings: 0,
        });
        // The map is ordered by text, so ties keep the first wording.
        if count > o.invalid.get(&g.text).copied().unwrap_or(0) {
            g.text = text.clone();
        }
        g.count += count;
        g.wordings += 1;
    }
    let mut v: Vec<Reason> = groups.into_values().collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.text.cmp(&b.text)));
    v.truncate(n);
    v
}

fn report(out: &Output, p: &Problem, judge: &Judge, o: &Outcome, greedy: Option<f64>, dest: &Path) -> i32 {
    if let Some(why) = &o.failure {
        // A failed run still keeps what it found (checked like any other).
        let kept = match &o.best {
            Some(b) => match write_partition(dest, &Placement::new(b.chips.clone()), &p.graph, p.package.num_chips()) {
                Ok(()) => format!("the best partition found before it is written to `{}`", dest.display()),
                Err(e) => format!("its best partition could not be written to `{}`: {e}", dest.display()),
            },
            None => "no valid partition was found before it".to_string(),
        };
        out.error(
            &format!(
                "strategy `{}` failed after {} sample(s): {why}",
                o.strategy,
                o.records.len()
            ),
            Some(&kept),
        );
        return 1;
    }
    let Some(best) = &o.best else {
        if o.interrupted {
            out.error(
                &format!(
                    "interrupted after {} sample(s), before any valid partition of `{}`",
                    o.records.len(),
                    p.name
                ),
                None,
            );
            return 130;
        }
        let reasons = top_reasons(o, 3);
        let why = reasons
            .first()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "no sample was taken".into());
        out.error(
            &format!(
                "no valid partition of `{}` in {} sample(s): all {} were invalid at evaluation",
                p.name,
                o.records.len(),
                o.invalid_count()
            ),
            Some(&format!("the most common reason: {why}")),
        );
        return 1;
    };
    let pl = Placement::new(best.chips.clone());
    if let Err(e) = write_partition(dest, &pl, &p.graph, p.package.num_chips()) {
        out.error(&format!("cannot write `{}`: {e}", dest.display()), None);
        return 1;
    }
    // Interrupted: what was found is written and reported as usual, and
    // the exit status says the budget was not spent.
    let done = if o.interrupted { 130 } else { 0 };
    if o.interrupted {
        eprintln!(
            "interrupted after {} sample(s): the best so far is written",
            o.records.len()
        );
    }
    let bound = CostModel::new(p).ok().map(|m| 1.0 / m.bound_latency());
    let improvement = greedy.map(|g| best.throughput / g);
    if out.json {
        let reasons: Vec<serde_json::Value> = top_reasons(o, 10)
            .into_iter()
            .map(|r| serde_json::json!({"reason": r.text, "count": r.count, "wordings": r.wordings}))
            .collect();
        out.print_json(&serde_json::json!({
            "ok": true, "problem": p.name, "strategy": o.strategy, "seed": o.seed, "judge": judge.describe,
            "out": dest.display().to_string(), "samples": o.records.len(), "elapsed_s": o.elapsed_s,
            "throughput": best.throughput, "found_at_sample": best.sample,
            "greedy_throughput": greedy, "improvement_over_greedy": improvement,
            "bound_throughput": bound, "fraction_of_bound": bound.map(|b| best.throughput / b),
            "invalid": o.invalid_count(), "invalid_reasons": reasons, "solver": o.solver,
            "curve": o.records, "partition": partition_json(&pl, &p.graph, p.package.num_chips()),
            "interrupted": o.interrupted,
        }));
        return done;
    }
    println!(
        "{}: best of {} samples in {} (found at sample {}), written to {}",
        o.strategy,
        o.records.len(),
        secs(o.elapsed_s),
        best.sample,
        dest.display()
    );
    println!(
        "throughput  {:.4} /s (latency {})",
        best.throughput,
        secs(1.0 / best.throughput)
    );
    match (greedy, improvement) {
        (Some(g), Some(x)) => println!("vs greedy   {x:.3}x (greedy: {g:.4} /s)"),
        _ => println!("vs greedy   greedy found no valid partition"),
    }
    match bound.map(|b| (b, best.throughput / b)) {
        // The bound and the model sum the same flops in another order.
        Some((b, f)) if f <= 1.0 + 1e-9 => println!("vs bound    {:.1}% of the bound {b:.4} /s (gap {:.2}x)", 100.0 * f, 1.0 / f),
        // Only an external evaluator can report more than the model's bound.
        Some((b, f)) => println!("vs bound    {f:.3e} times the analytical bound {b:.4} /s: the evaluator's figure exceeds the model's bound"),
        None => {}
    }
    let bad = o.invalid_count();
    println!("invalid     {bad} of {} samples", o.records.len());
    for r in top_reasons(o, 5) {
        println!("  {:>6}  {r}", r.count);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::RlArgs;
    use clap::Parser;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        rl: RlArgs,
    }

    fn options(args: &[&str]) -> Result<crate::strategy::RlOptions, clap::Error> {
        Args::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|a| a.rl.options())
    }

    /// A run that failed exits 1, saying why, and still writes the best
    /// partition it found before (no data is lost).
    #[test]
    fn a_failed_run_exits_1_and_keeps_its_best_partition() {
        use crate::cost::{Judge, JudgeOptions};
        use crate::strategy::{self, Budget, Greedy};
        let text = "use std::placement::{acyclic_flow}\nuse std::topologies::ring\n\
                    let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n\
                    let g = graph { a { flops = 1 GFLOP } -> b -> c }\npartition g onto t { require acyclic_flow }\n";
        let dir = std::env::temp_dir().join(format!("mcmpart-failed-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = crate::lang::compile_str("t.mcm", text, &dir);
        let p = c.problem(None).unwrap();
        let judge = Judge::new(p, &JudgeOptions::default()).unwrap();
        let mut o = strategy::run(p, &judge, &mut Greedy, Budget::Samples(1), 0, None).unwrap();
        let dest = dir.join("best.partition.json");
        let out = crate::cli::Output { json: false };
        assert_eq!(super::report(&out, p, &judge, &o, None, &dest), 0);
        std::fs::remove_file(&dest).unwrap();
        o.failure = Some("a tensor went missing".into());
        assert_eq!(super::report(&out, p, &judge, &o, None, &dest), 1);
        assert!(dest.exists(), "the best partition is kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Unset flags added after the journal keep its fingerprints: the
    /// settings read as `Debug` printed them before.
    #[test]
    fn settings_print_later_flags_only_when_set() {
        let a = Args::try_parse_from(["t"]).unwrap().rl;
        let before = "RlArgs { policy: None, zero_shot: false, from_scratch: false, rl_mode: Fix, moves: None, temperature: 1.0 }";
        assert_eq!(a.settings(), before);
        let a = Args::try_parse_from(["t", "--moves", "2", "--lr", "0.001"]).unwrap().rl;
        assert_eq!(
            a.settings(),
            "RlArgs { policy: None, zero_shot: false, from_scratch: false, rl_mode: Fix, moves: Some(2), temperature: 1.0, lr: 0.001 }"
        );
    }

    /// Reasons that differ only in numbers are counted as one, shown by
    /// their most frequent wording.
    #[test]
    fn reasons_group_wordings_that_differ_in_numbers() {
        let mut o = crate::strategy::Outcome {
            strategy: "t".into(),
            seed: 0,
            best: None,
            records: Vec::new(),
            invalid: Default::default(),
            solver: Default::default(),
            elapsed_s: 0.0,
            failure: None,
            interrupted: false,
        };
        for (r, c) in [
            ("chip `die[0]` runs out of memory: 127.25 MiB exceed 128 MiB", 2),
            ("chip `die[0]` runs out of memory: 127.3 MiB exceed 128 MiB", 5),
            ("chip `die[12]` runs out of memory: 99 MiB exceed 128 MiB", 1),
            ("breaks `acyclic_flow`", 6),
        ] {
            o.invalid.insert(r.into(), c);
        }
        assert_eq!(super::numbers_out("die[12] at 1.5 MiB."), "die[#] at # MiB.");
        let top = super::top_reasons(&o, 2);
        assert_eq!(
            top,
            vec![
                super::Reason {
                    text: "chip `die[0]` runs out of memory: 127.3 MiB exceed 128 MiB".into(),
                    count: 8,
                    wordings: 3
                },
                super::Reason {
                    text: "breaks `acyclic_flow`".into(),
                    count: 6,
                    wordings: 1
                },
            ]
        );
        assert!(top[0]
            .to_string()
            .ends_with("(one of 3 wordings that differ only in numbers)"));
        assert_eq!(top[1].to_string(), "breaks `acyclic_flow`");
    }

    /// The fine-tuning flags reach the update; left out, the deployment's
    /// defaults stand (a journal's fingerprints depend on them).
    #[test]
    fn fine_tuning_flags_reach_the_update() {
        let o = options(&["--epochs", "2", "--minibatches", "1", "--lr", "0.001"]).unwrap();
        assert_eq!((o.ppo.epochs, o.ppo.minibatches, o.ppo.lr), (2, 1, 0.001));
        assert_eq!(options(&[]).unwrap(), crate::strategy::RlOptions::default());
        for bad in [["--epochs", "0"], ["--minibatches", "x"], ["--lr", "0"]] {
            let e = options(&bad).unwrap_err().to_string();
            assert!(e.contains(bad[0]) && e.contains(bad[1]), "{e}");
        }
    }
}
