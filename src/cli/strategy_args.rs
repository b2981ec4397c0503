//! The learned strategies' flags (`rl` and its variants), shared by
//! `solve` and `compare`, and the checks of strategy names and flags made
//! before any strategy is built.

use super::args::{counting, positive};
use crate::error::{Error, Result};
use crate::policy::rollout::Correction;
use crate::strategy;
use std::path::{Path, PathBuf};

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
    #[arg(long, value_enum, default_value_t = Correction::Fix)]
    pub rl_mode: Correction,
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
    /// Fine-tuning: PPO epochs over each round's rollouts (default 1).
    #[arg(long, value_name = "N", value_parser = counting)]
    pub epochs: Option<usize>,
    /// Fine-tuning: minibatches per epoch, each an optimiser step (default 1).
    #[arg(long, value_name = "N", value_parser = counting)]
    pub minibatches: Option<usize>,
    /// Fine-tuning: AdamW's learning rate (default 3e-4).
    #[arg(long, value_parser = positive)]
    pub lr: Option<f64>,
    /// The anchor's starting temperature (falling fiftyfold over the
    /// budget, as anneal's): a rollout scoring x lower than the anchor
    /// (log throughput) becomes the anchor with probability exp(-x / T).
    /// By default (or 0) only a rollout at least as good moves it: on
    /// BERT-large, anneal's 0.01 and 0.001 ended worse (see the book).
    #[arg(long, value_name = "T", value_parser = super::args::non_negative)]
    pub anchor_temperature: Option<f64>,
    /// Do not carry a rollout's moves through the pipeline (by default a
    /// chip the moves load beyond the slowest stage passes its excess on,
    /// chip to chip, to where there is room).
    #[arg(long)]
    pub no_carry: bool,
    /// Draw every rollout (by default the first for each new anchor is
    /// the policy's likeliest change to it: as many moves as it expects,
    /// the nodes likeliest to leave).
    #[arg(long)]
    pub no_likeliest: bool,
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
            ("anchor_temperature", self.anchor_temperature.map(|t| format!("{t:?}"))),
            ("no_carry", self.no_carry.then(|| "true".to_string())),
            ("no_likeliest", self.no_likeliest.then(|| "true".to_string())),
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
            ("--rl-mode", self.rl_mode != Correction::Fix),
            ("--moves", self.moves.is_some()),
            ("--temperature", self.temperature != 1.0),
            ("--epochs", self.epochs.is_some()),
            ("--minibatches", self.minibatches.is_some()),
            ("--lr", self.lr.is_some()),
            ("--anchor-temperature", self.anchor_temperature.is_some()),
            ("--no-carry", self.no_carry),
            ("--no-likeliest", self.no_likeliest),
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
            ("rl-nosolver", _) if !matches!(self.rl_mode, Correction::Fix | Correction::NoSolver) => {
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
            carry: !self.no_carry,
            likeliest: !self.no_likeliest,
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
        if let Some(t) = self.anchor_temperature {
            let a = strategy::Anneal::default();
            o.anchor_temperature = (t > 0.0).then(|| (t, t * a.t_end / a.t_start));
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

/// A strategy by name: an unknown name is a usage error, a checkpoint that
/// does not load an input error.
pub fn build(name: &str, rl: &RlArgs) -> Result<Box<dyn strategy::Strategy>> {
    match strategy::by_name(name, &rl.options()) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(unknown(name)),
        Err(e) => Err(Error::input(format!("strategy `{name}`: {e}"))),
    }
}

fn unknown(name: &str) -> Error {
    let known = strategy::NAMES.join(", ");
    let help = crate::diag::suggest(name, strategy::NAMES.iter().copied())
        .map(|s| format!("did you mean `{s}`? The strategies are {known}"))
        .unwrap_or_else(|| format!("the strategies are {known}"));
    Error::usage(format!("unknown strategy `{name}`")).with_help(help)
}

/// Checks the names and the learned-strategy flags before any strategy is
/// built: building rl loads its checkpoint, whose error would hide a
/// contradiction in the flags.
pub fn check(names: &[&str], rl: &RlArgs) -> Result<()> {
    if let Some(bad) = names.iter().find(|n| !strategy::NAMES.contains(n)) {
        return Err(unknown(bad));
    }
    match rl.conflict(names) {
        Some(why) => Err(Error::usage(why)),
        None => Ok(()),
    }
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

    /// The fine-tuning flags reach the update; left out, the deployment's
    /// defaults stand (a journal's fingerprints depend on them).
    #[test]
    fn fine_tuning_flags_reach_the_update() {
        let o = options(&["--epochs", "2", "--minibatches", "1", "--lr", "0.001"]).unwrap();
        assert_eq!((o.ppo.epochs, o.ppo.minibatches, o.ppo.lr), (2, 1, 0.001));
        assert_eq!(
            o.anchor_temperature,
            crate::strategy::RlOptions::default().anchor_temperature
        );
        let o = options(&["--anchor-temperature", "0"]).unwrap();
        assert_eq!(o.anchor_temperature, None);
        assert_eq!(o.anchor_temperature, None);
        let o = options(&["--anchor-temperature", "0.02"]).unwrap();
        assert_eq!(o.anchor_temperature.map(|t| t.0), Some(0.02));
        assert!(options(&["--anchor-temperature", "-1"]).is_err());
        assert!(options(&[]).unwrap().carry);
        assert!(!options(&["--no-carry"]).unwrap().carry);
        assert!(options(&[]).unwrap().likeliest);
        assert!(!options(&["--no-likeliest"]).unwrap().likeliest);
        assert_eq!(options(&[]).unwrap(), crate::strategy::RlOptions::default());
        for bad in [["--epochs", "0"], ["--minibatches", "x"], ["--lr", "0"]] {
            let e = options(&bad).unwrap_err().to_string();
            assert!(e.contains(bad[0]) && e.contains(bad[1]), "{e}");
        }
    }
}
