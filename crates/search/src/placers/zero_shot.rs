//! The learned placers' zero-shot placements, which `auto` judges among its
//! first partitions: the likeliest placement of the shipped GDP network,
//! of Mars (its pretrained encoder, the placer drawn from the run's seed as
//! `mars` draws it) and of the shipped Placeto policy walking the graph
//! once from greedy's fill ([`placeto::likeliest_walk`]). Each network runs
//! on a thread of its own while the search thread settles the heuristics'
//! proposals; a placer whose checkpoint is missing or whose network fails
//! offers nothing.

use super::{agent, gdp, mars, placeto};
use crate::policy::PolicyError;
use crate::strategy::{greedy_start, Allowed};
use mcm_core::problem::Problem;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

/// The placers whose zero-shot placements `auto` judges, in its order.
pub const PLACERS: [&str; 3] = ["gdp", "mars", "placeto"];

/// Per node, each chip's probability under placer `name`'s network on
/// `problem` (Placeto's walk as one chip per node). `seed` draws what a
/// checkpoint does not hold (Mars's placer).
pub fn distributions(
    name: &str,
    problem: &Problem,
    allowed: &Allowed,
    seed: u64,
) -> Result<Vec<Vec<f32>>, PolicyError> {
    match name {
        "gdp" => agent::distributions(&gdp::load(Path::new(gdp::SHIPPED))?, problem),
        "mars" => agent::distributions(&mars::load(Path::new(mars::SHIPPED), seed)?, problem),
        "placeto" => {
            let net = placeto::load(Path::new(placeto::SHIPPED))?;
            let chips = placeto::likeliest_walk(&net, problem, &greedy_start(problem, allowed))?;
            let c = problem.package.num_chips();
            Ok(chips
                .iter()
                .map(|&d| (0..c).map(|k| f32::from(k == d as usize)).collect())
                .collect())
        }
        _ => Err(PolicyError::Input(format!("no zero-shot placer `{name}`"))),
    }
}

/// The placers' distributions being computed, one thread each.
pub struct Pending {
    made: Vec<Receiver<Option<Vec<Vec<f32>>>>>,
}

/// Starts every placer of [`PLACERS`] on a thread of its own.
pub fn spawn(problem: &Problem, allowed: Allowed, seed: u64) -> Pending {
    let problem = Arc::new(problem.clone());
    let allowed = Arc::new(allowed);
    let made = PLACERS
        .iter()
        .map(|&name| {
            let (to, made) = channel();
            let (problem, allowed) = (problem.clone(), allowed.clone());
            let work = move || {
                let probs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    distributions(name, &problem, &allowed, seed).ok()
                }));
                // The search may have ended and gone: nobody to tell.
                let _ = to.send(probs.ok().flatten());
            };
            let _ = std::thread::Builder::new()
                .name(format!("mcmpart-{name}"))
                .stack_size(mcm_core::WORKER_STACK)
                .spawn(work);
            made
        })
        .collect();
    Pending { made }
}

impl Pending {
    pub fn len(&self) -> usize {
        self.made.len()
    }

    /// The distributions of the `i`th placer of [`PLACERS`], waiting for
    /// them at most `within` when given: `None` for one that failed or did
    /// not end in time.
    pub fn receive(&self, i: usize, within: Option<Duration>) -> Option<Vec<Vec<f32>>> {
        let r = self.made.get(i)?;
        match within {
            // Timed out or disconnected (the thread failed): nothing.
            Some(w) => r.recv_timeout(w).ok().flatten(),
            None => r.recv().ok().flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placers::testing::{problem, OBJECTIVES};

    #[test]
    fn every_placer_gives_each_node_a_distribution_over_the_chips() {
        for objective in OBJECTIVES {
            let p = problem(objective);
            let allowed = Allowed::all(p.graph.num_placed(), p.package.num_chips());
            for name in PLACERS {
                let probs = distributions(name, &p, &allowed, 3).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(probs.len(), p.graph.num_placed(), "{name}");
                for row in &probs {
                    assert_eq!(row.len(), p.package.num_chips(), "{name}");
                    assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-4, "{name}: {row:?}");
                }
                // The same seed, the same distributions.
                assert_eq!(probs, distributions(name, &p, &allowed, 3).unwrap(), "{name}");
            }
        }
        let p = problem(OBJECTIVES[0]);
        let allowed = Allowed::all(p.graph.num_placed(), p.package.num_chips());
        assert!(distributions("nope", &p, &allowed, 0).is_err());
    }

    #[test]
    fn the_threads_answer_in_the_placers_order() {
        let p = problem(OBJECTIVES[1]);
        let allowed = Allowed::all(p.graph.num_placed(), p.package.num_chips());
        let pending = spawn(&p, allowed.clone(), 5);
        assert_eq!(pending.len(), PLACERS.len());
        let got: Vec<_> = (0..PLACERS.len()).map(|i| pending.receive(i, None)).collect();
        for (name, probs) in PLACERS.iter().zip(got) {
            assert_eq!(probs, Some(distributions(name, &p, &allowed, 5).unwrap()), "{name}");
        }
    }
}
