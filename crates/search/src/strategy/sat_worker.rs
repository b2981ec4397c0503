//! The SAT oracle under a latency target, on a thread of its own. One
//! varisat call cannot be interrupted, so a search hands its questions to
//! the worker and waits for the answer only while its budget lasts; at the
//! end of a time budget an unfinished call is abandoned (its thread ends
//! when the call does, or with the process). `exact` asks of the whole
//! problem, `lns` of a window of it (the other nodes fixed by decisions).

use super::Search;
use mcm_core::latency::LatencyModel;
use mcm_core::problem::{Placement, Problem};
use mcm_solver::sat::{SatAnswer, SatOracle};
use mcm_solver::Target;
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

/// A valid partition under the target and decisions, or `None`: there is none.
pub(super) type Answer = Option<Vec<u32>>;

/// The largest float below `x` (for `x > 0`): "faster than `x`".
pub(super) fn below(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

pub(super) struct Worker {
    asks: Sender<Ask>,
    answers: Receiver<Answer>,
}

impl Worker {
    pub(super) fn start(problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        let (asks, inbox) = channel::<Ask>();
        let (outbox, answers) = channel::<Answer>();
        let problem = problem.clone();
        std::thread::Builder::new()
            .name("mcmpart-sat".into())
            .stack_size(mcm_core::WORKER_STACK)
            .spawn(move || serve(&problem, model, inbox, outbox))
            .expect("a thread for the SAT worker");
        Worker { asks, answers }
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

/// What [`Worker::poll`] saw.
pub(super) enum Poll {
    Ready(Answer),
    Waiting,
    /// The worker ended (it panicked): no answer will come.
    Gone,
}

fn serve(problem: &Problem, model: Arc<LatencyModel>, inbox: Receiver<Ask>, outbox: Sender<Answer>) {
    let mut oracle = SatOracle::new(problem, true);
    for ask in inbox {
        match ask {
            Ask::Hint(chips) => oracle.suggest(problem, &Placement::new(chips)),
            Ask::Exclude(chips) => oracle.exclude(&Placement::new(chips)),
            Ask::Solve { target, decisions } => {
                oracle.set_target(Some(Target {
                    model: model.clone(),
                    latency_s: target,
                }));
                let a = match oracle.solve(problem, &decisions) {
                    SatAnswer::Sat(p) => Some(p.chips),
                    SatAnswer::Unsat(_) => None,
                };
                if outbox.send(a).is_err() {
                    return;
                }
            }
        }
    }
}
