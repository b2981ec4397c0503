//! Pretraining Placeto on a set of graphs (the training split), as the
//! paper does before applying the policy to unseen graphs: episodes go
//! round the graphs in a seeded order, each followed by a REINFORCE step.
//! Each episode starts, as the paper's MDP does, from an arbitrary
//! placement: every group on a device drawn at random, made valid by the
//! solver and judged outside the budget. (Started from the best partition
//! so far, as in deployment, most moves only lose, and the policy learned
//! to leave every group where it was.)

use super::{episode, save, Learner, PlacetoConfig, PlacetoNet, Stop};
use crate::policy::PolicyError;
use crate::pretrain::Task;
use crate::strategy::{Budget, Search};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// How long and from what seed.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Samples (judged moves) in all.
    pub samples: usize,
    pub seed: u64,
    pub config: PlacetoConfig,
}

/// One episode, as `log.csv` records it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EpisodeLog {
    pub episode: usize,
    pub task: String,
    /// Samples so far, this episode's included.
    pub samples: usize,
    /// The episode's summed reward.
    pub reward: f64,
    /// The graph's best so far over greedy's score.
    pub gain: f64,
    pub elapsed_s: f64,
}

/// What a training run leaves besides its checkpoint.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub episodes: usize,
    pub samples: usize,
    pub seconds: f64,
    /// Per graph, its best over greedy's score at the end.
    pub gains: Vec<(String, f64)>,
}

/// Trains a fresh network (seeded by `settings.seed`) on `tasks`, writes
/// `OUT/placeto.safetensors`, `OUT/placeto.json` and `OUT/log.csv`.
pub fn run(
    tasks: &[Task],
    settings: &Settings,
    out: &Path,
    on: &mut dyn FnMut(&EpisodeLog),
) -> Result<(PlacetoNet, Report), PolicyError> {
    let io = |e: std::io::Error| PolicyError::Io {
        path: out.display().to_string(),
        message: e.to_string(),
    };
    if tasks.is_empty() {
        return Err(PolicyError::Input("no graph to train Placeto on".into()));
    }
    std::fs::create_dir_all(out).map_err(io)?;
    let mut log = std::fs::File::create(out.join("log.csv")).map_err(io)?;
    writeln!(log, "episode,task,samples,reward,gain,elapsed_s").map_err(io)?;
    let config = PlacetoConfig {
        seed: settings.seed,
        ..settings.config.clone()
    };
    let net = PlacetoNet::new(&config)?;
    let mut learner = Learner::new(&net)?;
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let mut best: Vec<(Vec<u32>, f64)> = tasks.iter().map(|t| (t.fallback.clone(), t.greedy)).collect();
    let features = tasks
        .iter()
        .map(|t| super::features(&net, &t.problem))
        .collect::<Result<Vec<_>, _>>()?;
    let plans: Vec<_> = tasks
        .iter()
        .map(|t| super::Plan::new(&t.problem, config.groups))
        .collect();
    let clock = Instant::now();
    let (mut samples, mut episodes) = (0usize, 0usize);
    let mut order: Vec<usize> = Vec::new();
    // Episodes skipped in a row: a set the solver cannot place at all ends the run.
    let mut stalled = 0usize;
    while samples < settings.samples {
        if stalled > tasks.len() {
            return Err(PolicyError::Input("the solver could place none of the graphs".into()));
        }
        if order.is_empty() {
            order = (0..tasks.len()).collect();
            order.shuffle(&mut rng);
        }
        let i = order.pop().unwrap_or(0);
        let task = &tasks[i];
        let budget = plans[i].members.len().min(settings.samples - samples);
        let seed = settings.seed.wrapping_add(episodes as u64 + 1);
        let Ok(mut search) = Search::new(&task.problem, &task.judge, Budget::Samples(budget), seed) else {
            stalled += 1;
            continue;
        };
        let start = match random_start(&mut search, &plans[i]) {
            Ok(s) => s,
            Err(_) => {
                stalled += 1;
                continue;
            }
        };
        let ep = match episode(&net, &features[i], &plans[i], &mut search, start) {
            Ok(ep) => ep,
            Err(Stop::Policy(e)) => return Err(e),
            // A graph the solver cannot place is skipped.
            Err(Stop::Infeasible(_)) => {
                stalled += 1;
                continue;
            }
        };
        stalled = 0;
        learner.update(&net, &ep)?;
        if let Some(b) = search.best() {
            if b.throughput > best[i].1 {
                best[i] = (b.chips.clone(), b.throughput);
            }
        }
        samples += search.samples().max(1);
        episodes += 1;
        let entry = EpisodeLog {
            episode: episodes,
            task: task.name.clone(),
            samples,
            reward: ep.rewards.iter().sum(),
            gain: best[i].1 / task.greedy,
            elapsed_s: clock.elapsed().as_secs_f64(),
        };
        writeln!(
            log,
            "{},{},{},{},{},{}",
            entry.episode, entry.task, entry.samples, entry.reward, entry.gain, entry.elapsed_s
        )
        .map_err(io)?;
        on(&entry);
    }
    save(&net, &out.join("placeto"))?;
    let report = Report {
        episodes,
        samples,
        seconds: clock.elapsed().as_secs_f64(),
        gains: tasks
            .iter()
            .zip(&best)
            .map(|(t, b)| (t.name.clone(), b.1 / t.greedy))
            .collect(),
    };
    Ok((net, report))
}

/// Every group of `plan` on a device drawn from the search's generator,
/// made valid, and its score (judged outside the budget; 0 when refused).
fn random_start(search: &mut Search, plan: &super::Plan) -> Result<(Vec<u32>, f64), mcm_solver::Infeasible> {
    use rand::Rng;
    let c = search.problem.package.num_chips().max(1) as u32;
    let mut chips = vec![0u32; search.problem.graph.num_placed()];
    for group in &plan.members {
        let d = search.rng.random_range(0..c);
        for &u in group {
            chips[u as usize] = d;
        }
    }
    let chips = crate::strategy::settle_full(search, &chips)?;
    let score = search.reference(&chips).throughput().unwrap_or(0.0);
    Ok((chips, score))
}
