//! The SAT oracle under a latency target, on a thread of its own. One
//! varisat call cannot be interrupted, so a search hands its questions to
//! the worker and waits for the answer only while its budget lasts; at the
//! end of a time budget an unfinished call is abandoned (its thread ends
//! when the call does, or with the process). `exact` asks of the whole
//! problem, `lns` of a window of it (the other nodes fixed by decisions).
//!
//! Under a sample budget the search waits for every answer, so a call must
//! end: a bounded worker ([`Calls::Bounded`]) gives each call a fixed
//! amount of the solver's work ([`CALL_WORK`], counted in its own steps, so
//! a seed still gives the same run), and a call that spends it answers
//! [`Answer::Unknown`].
//!
//! A worker dropped while a call runs stops that call when its oracle is
//! metered (bounded, or [`Calls::Stoppable`]): the stricter twin's run in
//! the first part of a time budget abandons its `exact` call where its part
//! ends (its `lns` worker goes on in the twin's search beside the
//! problem's), and it would otherwise spin through the problem's own part.
//!
//! A yielding worker ([`Worker::yielding`]) runs its thread at a lower
//! scheduling priority than the search's: beside the stricter twin's search
//! (see `auto`), the problem's own SAT workers take only the cores the
//! twin's threads leave, so that on a busy machine the twin's search keeps
//! the pace a run under every rule has, and on one with cores to spare they
//! lose nothing.

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

/// How many nice levels below the search's threads a yielding worker's
/// thread runs ([`Worker::yielding`]): CFS then gives it about a tenth of
/// the share of a thread of the search when they compete for a core.
const YIELD_NICE: i32 = 10;

/// The name of a yielding worker's thread (at most 15 bytes, Linux's limit).
const YIELDING_THREAD: &str = "mcmpart-sat-low";

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
        Worker::spawn(problem, model, Calls::Free, false)
    }

    /// The worker a search's budget wants: bounded under a sample budget,
    /// whose every answer is waited for; under a time budget stoppable in
    /// a part of it that ends before the budget does (the twin's part, see
    /// [`Search::replay_on`]), whose calls would outlive it.
    pub(super) fn for_search(search: &Search, problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        Worker::spawn(problem, model, Worker::calls(search), false)
    }

    /// [`Worker::for_search`], its thread run at a lower scheduling
    /// priority ([`YIELD_NICE`] levels below the caller's; on Linux, where
    /// a thread's nice value is its own): it takes only the cores the
    /// search's other threads leave it.
    pub(super) fn yielding(search: &Search, problem: &Problem, model: Arc<LatencyModel>) -> Worker {
        Worker::spawn(problem, model, Worker::calls(search), true)
    }

    fn calls(search: &Search) -> Calls {
        match (search.timed(), search.cap.is_some()) {
            (true, false) => Calls::Free,
            (true, true) => Calls::Stoppable,
            (false, _) => Calls::Bounded(CALL_WORK),
        }
    }

    fn spawn(problem: &Problem, model: Arc<LatencyModel>, calls: Calls, yielding: bool) -> Worker {
        let (asks, inbox) = channel::<Ask>();
        let (outbox, answers) = channel::<Answer>();
        let stop = Arc::new(AtomicBool::new(false));
        let problem = problem.clone();
        let flag = stop.clone();
        std::thread::Builder::new()
            .name(if yielding { YIELDING_THREAD } else { "mcmpart-sat" }.into())
            .stack_size(mcm_core::WORKER_STACK)
            .spawn(move || {
                if yielding {
                    lower_priority();
                }
                serve(&problem, model, calls, flag, inbox, outbox)
            })
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

/// Lowers the calling thread's scheduling priority by [`YIELD_NICE`]
/// levels. Only on Linux, whose nice values are per thread; elsewhere a
/// nice value is the process's, and lowering it would slow the whole run.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: getpriority(2) and setpriority(2) on the calling thread (`who`
    // 0); they touch no memory of ours. A failure leaves the priority as it
    // was, which only costs the twin's search some pace.
    unsafe {
        let now = libc::getpriority(libc::PRIO_PROCESS, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, now.saturating_add(YIELD_NICE));
    }
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

    /// The nice value in a `/proc` task's `stat` line: field 19, the 17th
    /// after the name's closing parenthesis.
    #[cfg(target_os = "linux")]
    fn nice_in(stat: &str) -> Option<i64> {
        stat.rsplit_once(')')?.1.split_whitespace().nth(16)?.parse().ok()
    }

    /// The nice values of this process's threads named `name`.
    #[cfg(target_os = "linux")]
    fn nice_of_threads(name: &str) -> Vec<i64> {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
        let named =
            tasks.filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name));
        named
            .filter_map(|t| nice_in(&std::fs::read_to_string(t.path().join("stat")).ok()?))
            .collect()
    }

    /// A yielding worker's thread runs at a lower priority than the thread
    /// that made it (a higher nice value, up to the ceiling of 19), so that
    /// on a busy machine the search's other threads keep the cores.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_yielding_worker_runs_below_the_search() {
        let p = pigeons();
        let model = Arc::new(LatencyModel::new(p.graph.clone(), p.package.clone()).unwrap());
        let ours = nice_in(&std::fs::read_to_string("/proc/thread-self/stat").unwrap()).unwrap();
        let want = (ours + i64::from(YIELD_NICE)).min(19);
        let w = Worker::spawn(&p, model, Calls::Free, true);
        let since = Instant::now();
        // Other tests' yielding workers may run too (one just made may not
        // have lowered itself yet): one as low is this one.
        let mut seen = nice_of_threads(YIELDING_THREAD);
        while !seen.iter().any(|&n| n >= want) && since.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
            seen = nice_of_threads(YIELDING_THREAD);
        }
        assert!(
            seen.iter().any(|&n| n >= want),
            "yielding threads at {seen:?}, the search at {ours}"
        );
        drop(w);
    }
}
