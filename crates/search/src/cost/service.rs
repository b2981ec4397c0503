//! The evaluation service the strategies ask: one judge per problem (the
//! analytical model, or an external evaluator after the dynamic check),
//! results cached by partition, misses evaluated in parallel.

use super::{Analytical, CostError, Evaluate, External, Objective, Verdict};
use mcm_core::problem::Problem;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How to judge a problem's partitions.
#[derive(Clone, Debug)]
pub struct JudgeOptions {
    /// An external evaluator; overrides the problem's `evaluate with`.
    pub evaluator: Option<String>,
    /// Ignore the problem's `evaluate with` and use the analytical model.
    pub analytical: bool,
    pub timeout: Duration,
    /// Evaluations at once.
    pub jobs: usize,
    /// Run the built-in peak-memory check (before an external evaluator).
    pub dynamic_check: bool,
}

impl Default for JudgeOptions {
    fn default() -> JudgeOptions {
        JudgeOptions {
            evaluator: None,
            analytical: false,
            timeout: Duration::from_secs(60),
            jobs: 1,
            dynamic_check: true,
        }
    }
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct JudgeStats {
    /// Partitions actually evaluated.
    pub evaluations: u64,
    /// Partitions answered from the cache.
    pub cache_hits: u64,
}

pub struct Judge {
    inner: Box<dyn Evaluate>,
    /// What judges: `analytical` or the evaluator's command.
    pub describe: String,
    cache: Mutex<HashMap<Vec<u32>, Verdict>>,
    pool: rayon::ThreadPool,
    pub stats: Mutex<JudgeStats>,
    /// The cost model of the problem's objective, when it can cost the
    /// problem (it judges unless an external evaluator does).
    objective: Option<Arc<dyn Objective>>,
}

/// The dynamic check, then an external evaluator's verdict.
struct Checked {
    dynamic: Option<Analytical>,
    external: External,
}

impl Evaluate for Checked {
    fn evaluate(&self, chips: &[u32]) -> Verdict {
        if let Some(a) = &self.dynamic {
            if let Err(o) = a.model.peak_memory(chips) {
                return Verdict::Invalid { reason: o.to_string() };
            }
        }
        self.external.evaluate(chips)
    }
}

impl Judge {
    pub fn new(problem: &Problem, opts: &JudgeOptions) -> Result<Judge, CostError> {
        let command = match (&opts.evaluator, &problem.evaluator, opts.analytical) {
            (Some(c), _, _) => Some((c.clone(), std::env::current_dir().unwrap_or_default())),
            (None, Some(e), false) => Some((e.command.clone(), e.dir.clone())),
            _ => None,
        };
        let (inner, describe, objective): (Box<dyn Evaluate>, String, _) = match command {
            None => {
                let mut a = Analytical::new(problem)?;
                a.dynamic_check = opts.dynamic_check;
                let o = a.objective.clone();
                (Box::new(a), "analytical".into(), Some(o))
            }
            Some((cmd, dir)) => {
                let dynamic = if opts.dynamic_check {
                    Some(Analytical::new(problem)?)
                } else {
                    None
                };
                let objective = match &dynamic {
                    Some(a) => Some(a.objective.clone()),
                    None => super::objective::objective(problem).ok(),
                };
                let external = External::new(
                    &cmd,
                    dir,
                    opts.timeout,
                    problem.graph.clone(),
                    problem.package.num_chips(),
                )
                .for_metric(problem.objective.metric);
                (Box::new(Checked { dynamic, external }), cmd, objective)
            }
        };
        let mut judge = Judge::with(inner, describe, opts.jobs);
        judge.objective = objective;
        Ok(judge)
    }

    /// The cost model of the problem's objective (`None` for a judge made
    /// with [`Judge::with`], or a problem the models cannot cost).
    pub fn objective(&self) -> Option<&Arc<dyn Objective>> {
        self.objective.as_ref()
    }

    /// A judge around any evaluator (tests, the learned policy's rewards).
    pub fn with(inner: Box<dyn Evaluate>, describe: String, jobs: usize) -> Judge {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .thread_name(|i| format!("mcmpart-eval-{i}"))
            .stack_size(mcm_core::WORKER_STACK)
            .build()
            .expect("a thread pool of `jobs` threads");
        Judge {
            inner,
            describe,
            cache: Mutex::new(HashMap::new()),
            pool,
            stats: Mutex::new(JudgeStats::default()),
            objective: None,
        }
    }

    /// Evaluations run at once.
    pub fn jobs(&self) -> usize {
        self.pool.current_num_threads()
    }

    pub fn evaluate(&self, chips: &[u32]) -> Verdict {
        self.evaluate_all(&[chips.to_vec()])
            .pop()
            .expect("one verdict per partition")
    }

    /// Verdicts for a batch, in order; repeated and cached partitions are
    /// evaluated once.
    pub fn evaluate_all(&self, batch: &[Vec<u32>]) -> Vec<Verdict> {
        let mut todo: Vec<&Vec<u32>> = Vec::new();
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            for p in batch {
                if !cache.contains_key(p) && !todo.contains(&p) {
                    todo.push(p);
                }
            }
        }
        let fresh: Vec<Verdict> = self
            .pool
            .install(|| todo.par_iter().map(|p| self.inner.evaluate(p)).collect());
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        for (p, v) in todo.iter().zip(fresh) {
            cache.insert((*p).clone(), v);
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.evaluations += todo.len() as u64;
        st.cache_hits += (batch.len() - todo.len()) as u64;
        batch.iter().map(|p| cache[p].clone()).collect()
    }
}
