//! A bound on the work of a varisat call. varisat 0.2 has no conflict limit
//! and no interrupt; what it does offer is a proof of its search, written
//! as it goes: every learned clause with the clauses resolved to learn it,
//! every deletion, every clause added between calls, every model. A
//! [`Meter`] is that proof's sink: it keeps none of it, counts its bytes,
//! and fails the write that takes them past a limit, which stops the call
//! with an error. The count follows the solver's own steps (the proof
//! reaches the sink through a buffer of fixed size, filled in the solver's
//! order), so a limit stops a call at the same point on every run, as a
//! clock would not.
//!
//! A gauge may also hold a stop flag that another thread sets
//! ([`super::SatOracle::stoppable`]): once it is set every write fails, so
//! a call whose answer nobody will read stops at its next proof step
//! instead of running on beside the searches that follow.
//!
//! varisat marks a solver stopped this way unusable; its oracle encodes
//! the problem again (see [`super::SatOracle::solve_within`]).

use std::cell::Cell;
use std::io::{self, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The proof bytes written so far and where the current call must stop,
/// shared by the oracle and the solver's sink.
#[derive(Debug)]
pub(crate) struct Gauge {
    spent: Cell<u64>,
    limit: Cell<u64>,
    /// Set from another thread: every later call stops (see the module's
    /// comment).
    stop: Option<Arc<AtomicBool>>,
}

impl Gauge {
    pub(crate) fn new() -> Rc<Gauge> {
        Gauge::with_stop(None)
    }

    /// A gauge whose calls also stop once `stop` is set.
    pub(crate) fn with_stop(stop: Option<Arc<AtomicBool>>) -> Rc<Gauge> {
        Rc::new(Gauge {
            spent: Cell::new(0),
            limit: Cell::new(u64::MAX),
            stop,
        })
    }

    /// Whether the stop flag is set: no call may run any more.
    pub(crate) fn halted(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Lets the solver write `work` more bytes of proof (`None`: any number).
    pub(crate) fn allow(&self, work: Option<u64>) {
        let limit = work.map_or(u64::MAX, |w| self.spent.get().saturating_add(w));
        self.limit.set(limit);
    }

    /// The proof bytes written so far.
    pub(crate) fn spent(&self) -> u64 {
        self.spent.get()
    }
}

/// The sink of a solver's proof (see the module's comment).
pub(crate) struct Meter(pub(crate) Rc<Gauge>);

impl Write for Meter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let g = &self.0;
        let spent = g.spent.get().saturating_add(buf.len() as u64);
        g.spent.set(spent);
        if spent > g.limit.get() {
            return Err(io::Error::other("the call's work limit is spent"));
        }
        if g.halted() {
            return Err(io::Error::other("the call was stopped"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_fails_the_write_past_its_limit_and_counts_every_byte() {
        let g = Gauge::new();
        let mut m = Meter(g.clone());
        assert!(m.write_all(&[0; 100]).is_ok(), "no limit");
        g.allow(Some(50));
        assert!(m.write_all(&[0; 50]).is_ok(), "up to the limit");
        assert!(m.write_all(&[0; 1]).is_err(), "one byte past it");
        assert_eq!(g.spent(), 151);
        g.allow(Some(10));
        assert!(m.write_all(&[0; 10]).is_ok(), "a new limit counts from here");
        g.allow(None);
        assert!(m.write_all(&[0; 1 << 20]).is_ok());
    }

    use crate::sat::{SatAnswer, SatOracle};
    use mcm_core::problem::Problem;

    /// `n` nodes of 1 MiB of weights in a chain, on a ring of `chips` chips
    /// of 2 MiB under `memory_capacity`: two nodes a chip at most.
    fn pigeons(n: usize, chips: usize) -> Problem {
        let mut g = String::from("let g = graph {\n");
        for i in 0..n {
            g += &format!("    n{i} {{ flops = 1 MFLOP, params = 1 MiB, output_bytes = 1 KiB }}\n");
        }
        for i in 1..n {
            g += &format!("    n{} -> n{i}\n", i - 1);
        }
        g += "}\n";
        let text = format!(
            "{}let p = ring(n = {chips}, memory = 2 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n{g}\
             partition g onto p {{\n    require memory_capacity\n}}\n",
            mcm_testkit::HEADER
        );
        mcm_testkit::compile_ok(&text).problems[0].clone()
    }

    /// A call whose proof of unsatisfiability takes the solver conflicts
    /// (nine pigeons, eight holes) stops at a limit below its work, at the
    /// same count on every run, and the oracle then answers as one without
    /// a limit does.
    #[test]
    fn a_bounded_call_stops_at_its_limit_and_the_oracle_goes_on() {
        let p = pigeons(9, 4);
        let mut full = SatOracle::bounded(&p, true);
        assert!(matches!(
            full.solve_within(&p, &[], u64::MAX),
            Some(SatAnswer::Unsat(_))
        ));
        let needed = full.work().unwrap();
        // Several of the proof's buffers: a limit at half of it falls
        // between two writes.
        assert!(needed > 64 << 10, "{needed} bytes");
        let stopped = |limit: u64| {
            let mut o = SatOracle::bounded(&p, true);
            let answer = o.solve_within(&p, &[], limit);
            (answer.is_none(), o.work().unwrap(), o)
        };
        let (unknown, spent, mut o) = stopped(needed / 2);
        assert!(unknown, "the call stopped");
        // The count goes on through the new encoding: the same on every run.
        assert_eq!(stopped(needed / 2).1, spent, "the same stop on every run");
        assert!(matches!(o.solve_within(&p, &[], u64::MAX), Some(SatAnswer::Unsat(_))));
        assert!(!stopped(needed).0, "its own work is enough");
    }

    /// After a stop the oracle keeps what it was told: a placement it
    /// excluded is never an answer again.
    #[test]
    fn a_stop_keeps_the_exclusions() {
        let p = pigeons(6, 3);
        let mut o = SatOracle::bounded(&p, true);
        let Some(SatAnswer::Sat(first)) = o.solve_within(&p, &[], u64::MAX) else {
            panic!("six pigeons fit six holes");
        };
        o.exclude(&first);
        // Any write past the limit stops the call.
        assert!(o.solve_within(&p, &[], 0).is_none());
        let mut seen = vec![first];
        for _ in 0..4 {
            let Some(SatAnswer::Sat(next)) = o.solve_within(&p, &[], u64::MAX) else {
                panic!("more placements are valid");
            };
            assert!(!seen.contains(&next), "an excluded placement came back");
            assert!(crate::check(&p.graph, &p.package, &p.constraints, &next).is_empty());
            o.exclude(&next);
            seen.push(next);
        }
    }

    /// A call running on another thread stops once its stop flag is set,
    /// and the oracle's later calls answer nothing at once. Seventeen
    /// pigeons in sixteen holes: resolution proofs of the pigeonhole
    /// principle grow exponentially, so the call cannot end on its own
    /// within any wait here.
    #[test]
    fn a_flagged_meter_stops_a_running_call() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Arc};
        use std::time::Duration;
        let stop = Arc::new(AtomicBool::new(false));
        let (started, running) = mpsc::channel();
        let (sender, answers) = mpsc::channel();
        let flag = stop.clone();
        std::thread::spawn(move || {
            let p = pigeons(17, 8);
            let mut o = SatOracle::stoppable(&p, true, flag);
            started.send(()).unwrap();
            let first = o.solve_within(&p, &[], u64::MAX);
            let again = o.solve_within(&p, &[], u64::MAX);
            let _ = sender.send((first.is_none(), again.is_none()));
        });
        running.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(answers.try_recv().is_err(), "the call ended before the flag was set");
        stop.store(true, Ordering::Relaxed);
        let (first, again) = answers
            .recv_timeout(Duration::from_secs(30))
            .expect("the flagged call stops");
        assert!(first && again, "a stopped oracle answers nothing");
    }
}
