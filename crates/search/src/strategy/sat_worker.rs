//! The SAT oracle under a latency target, on a thread of its own. One
//! varisat call cannot be interrupted, so a search hands its questions to
//! the worker and waits for the answer only while its budget lasts; at the
//! end of a time budget an unfinished call is abandoned (its thread ends
//! when the call does, or with the process). `exact` asks of the whole
//! problem, `lns` of a window of it (the other nodes fixed by decisions).
//!
//! Under a sample budget the search waits for every answer, so a call must
//! end: a bounded worker ([`Worker::bounded`]) gives each call a fixed
//! amount of the solver's work ([`CALL_WORK`], counted in its own steps, so
//! a seed still gives the same run), and a call that spends it answers
//! [`Answer::Unknown`].
//!
//! A worker dropped while a call runs stops that call when its oracle is
//! metered (bounded, or [`Worker::stoppable`]): the stricter twin's run in
//! the first part of a time budget abandons its `exact` call where its part
//! ends (its `lns` worker goes on in the twin's search beside the
//! problem's), and it would otherwise spin through the problem's own part.

use super::Search;
use mcm_core::latency::LatencyModel;
use mcm_core::problem::{Placement, Problem};
use mcm_solver::sat::{SatAnswer, SatOracle};
use mcm_solver::Target;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// What a search asks the worker.
pub(super) enum Ask {
    /// Start the search from this partition.
    Hint(Vec<u32>),
    /// Never hand this partition out again (the judge refused it).
    Exclude(Vec<u32>),
    /// A valid partition of latency at most `target` in which every node of
    /// `decisions` is on one of its chips, if any.
    Solve {
        target: f64,
        decisions: Vec<(u32, Vec<u32>)>,
    },
}

/// What a `Solve` found.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Answer {
    /// A valid partition under the target and decisions.
    Found(Vec<u32>),
    /// There is none.
    None,
    /// The call spent its work limit first: it tells nothing.
    Unknown,
}

/// The work a bounded worker's call may do, in bytes of the solver's proof
/// ([`SatOracle::solve_within`]).
pub(super) const CALL_WORK: u64 = 64 << 20;

/// The largest float below `x` (for `x > 0`): "faster than `x`".
pub(super) fn below(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

pub(super) struct Worker {
    asks: Sender<Ask>,
    answers: Receiver<Answer>,
    /// Set when the worker is dropped: a metered oracle stops its call.
    stop: Arc<AtomicBool>,
}

/// How a worker's oracle runs its calls.
#[derive(Clone, Copy)]
enum Calls {
    /// To their end, unmetered (a time budget abandons them).
    Free,
    /// To their end or until the worker is dropped.
    Stoppable,
    /// Each within this much work, or until the worker is dropped.
    Bounded(u64),
}

impl Worker {
    /// A worker whose calls run to their end (a time budget abandons them).
    pub(super) fn start(problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        Worker::spawn(problem, model, Calls::Free)
    }

    /// A worker whose calls each stop after [`CALL_WORK`] (sample budgets).
    pub(super) fn bounded(problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        Worker::spawn(problem, model, Calls::Bounded(CALL_WORK))
    }

    /// A worker whose calls run to their end unless it is dropped first,
    /// which stops the call (its solver writes a proof to be stoppable: a
    /// little more work a conflict).
    pub(super) fn stoppable(problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        Worker::spawn(problem, model, Calls::Stoppable)
    }

    /// The worker a search's budget wants: bounded under a sample budget,
    /// whose every answer is waited for; under a time budget stoppable in
    /// a part of it that ends before the budget does (the twin's part, see
    /// [`Search::replay_on`]), whose calls would outlive it.
    pub(super) fn for_search(search: &Search, problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        match (search.timed(), search.cap.is_some()) {
            (true, false) => Worker::start(problem, model),
            (true, true) => Worker::stoppable(problem, model),
            (false, _) => Worker::bounded(problem, model),
        }
    }

    fn spawn(problem: &Problem, model: Arc<LatencyModel>, calls: Calls) -> Worker {
        let (asks, inbox) = channel::<Ask>();
        let (outbox, answers) = channel::<Answer>();
        let stop = Arc::new(AtomicBool::new(false));
        let problem = problem.clone();
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("mcmpart-sat".into())
            .stack_size(mcm_core::WORKER_STACK)
            .spawn(move || serve(&problem, model, calls, flag, inbox, outbox))
            .expect("a thread for the SAT worker");
        Worker { asks, answers, stop }
    }

    pub(super) fn ask(&self, a: Ask) {
        // A worker that is gone answers nothing; `answer` says so.
        let _ = self.asks.send(a);
    }

    /// The answer to the last `Solve`, waiting while the search's budget
    /// lasts; `None` when it ran out (or a stop was requested) first.
    pub(super) fn answer(&self, search: &Search) -> Option<Answer> {
        loop {
            match self.poll(Duration::from_millis(50)) {
                Poll::Ready(a) => return Some(a),
                Poll::Waiting if !search.done() => {}
                Poll::Waiting | Poll::Gone => return None,
            }
        }
    }

    /// The answer to the last `Solve` if it comes within `wait`.
    pub(super) fn poll(&self, wait: Duration) -> Poll {
        match self.answers.recv_timeout(wait) {
            Ok(a) => Poll::Ready(a),
            Err(RecvTimeoutError::Timeout) => Poll::Waiting,
            Err(RecvTimeoutError::Disconnected) => Poll::Gone,
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What [`Worker::poll`] saw.
pub(super) enum Poll {
    Ready(Answer),
    Waiting,
    /// The worker ended (it panicked): no answer will come.
    Gone,
}

fn serve(
    problem: &Problem,
    model: Arc<LatencyModel>,
    calls: Calls,
    stop: Arc<AtomicBool>,
    inbox: Receiver<Ask>,
    outbox: Sender<Answer>,
) {
    let trace = std::env::var_os("MCMPART_SAT_TRACE").is_some();
    let (mut oracle, work) = match calls {
        Calls::Free => (SatOracle::new(problem, true), None),
        Calls::Stoppable => (SatOracle::stoppable(problem, true, stop), Some(u64::MAX)),
        Calls::Bounded(w) => (SatOracle::stoppable(problem, true, stop), Some(w)),
    };
    for ask in inbox {
        match ask {
            Ask::Hint(chips) => oracle.suggest(problem, &Placement::new(chips)),
            Ask::Exclude(chips) => oracle.exclude(&Placement::new(chips)),
            Ask::Solve { target, decisions } => {
                oracle.set_target(Some(Target {
                    model: model.clone(),
                    latency_s: target,
                }));
                let (from, started) = (oracle.work(), std::time::Instant::now());
                let answer = match work {
                    Some(w) => oracle.solve_within(problem, &decisions, w),
                    None => Some(oracle.solve(problem, &decisions)),
                };
                if trace {
                    // The work a call took, for choosing `CALL_WORK`.
                    let spent = from.zip(oracle.work()).map(|(a, b)| b.saturating_sub(a));
                    eprintln!(
                        "sat worker: {} in {:?}, {spent:?} bytes of proof",
                        match &answer {
                            Some(SatAnswer::Sat(_)) => "found",
                            Some(SatAnswer::Unsat(_)) => "none",
                            None => "unknown",
                        },
                        started.elapsed()
                    );
                }
                let a = match answer {
                    Some(SatAnswer::Sat(p)) => Answer::Found(p.chips),
                    Some(SatAnswer::Unsat(_)) => Answer::None,
                    None => Answer::Unknown,
                };
                if outbox.send(a).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Seventeen nodes of 1 MiB of weights in a chain, on a ring of eight
    /// chips of 2 MiB: seventeen pigeons in sixteen holes, whose proof of
    /// unsatisfiability runs far past any wait here.
    fn pigeons() -> Problem {
        let mut g = String::from("let g = graph {\n");
        for i in 0..17 {
            g += &format!("    n{i} {{ flops = 1 MFLOP, params = 1 MiB, output_bytes = 1 KiB }}\n");
        }
        for i in 1..17 {
            g += &format!("    n{} -> n{i}\n", i - 1);
        }
        g += "}\n";
        let text = format!(
            "{}let p = ring(n = 8, memory = 2 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n{g}\
             partition g onto p {{\n    require memory_capacity\n}}\n",
            mcm_testkit::HEADER
        );
        mcm_testkit::compile_ok(&text).problems[0].clone()
    }

    /// A stoppable worker's thread ends soon after the worker is dropped in
    /// the middle of a call, where a free worker's would run the call on.
    #[test]
    fn a_dropped_stoppable_worker_stops_its_call() {
        let p = pigeons();
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let (asks, inbox) = channel::<Ask>();
        let (outbox, answers) = channel::<Answer>();
        let stop = Arc::new(AtomicBool::new(false));
        let w = Worker {
            asks,
            answers,
            stop: stop.clone(),
        };
        let (q, m) = (p.clone(), model.clone());
        let thread = std::thread::spawn(move || serve(&q, m, Calls::Stoppable, stop, inbox, outbox));
        w.ask(Ask::Solve {
            target: f64::MAX,
            decisions: Vec::new(),
        });
        assert!(
            matches!(w.poll(Duration::from_millis(300)), Poll::Waiting),
            "the call runs"
        );
        drop(w);
        let since = Instant::now();
        while !thread.is_finished() && since.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(thread.is_finished(), "the dropped worker's call still runs");
    }
}
