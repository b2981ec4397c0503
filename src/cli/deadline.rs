//! `--time T` as a deadline for a whole command: the clock starts when the
//! arguments are parsed, and loading the problem, the search and its
//! baseline all run under it. The work runs on threads of its own so that
//! the command can answer at `T` plus [`MARGIN`] even when one step cannot
//! be interrupted (a varisat call, the evaluation of a huge graph): what
//! is still running then is abandoned, and ends with the process.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long past `T` a command waits for work that did not stop when told
/// ([`WRAP_UP`] before `T`) before it answers without it: room for the last
/// batch of evaluations, leaving time to write the answer within `T` + 1 s.
pub const MARGIN: Duration = Duration::from_millis(200);

/// What the work leaves of `T` for the answer, at most: writing it, and the
/// end of the process, which takes a fraction of a second when it holds
/// gigabytes (BERT-large on a 1,024-chip package). A tenth of `T` when that
/// is less: a short `T` is a small problem's.
pub const WRAP_UP: Duration = Duration::from_millis(300);

/// How often [`Worker::next_unless`] asks whether to give up.
const POLL: Duration = Duration::from_millis(50);

/// The clock of a command run with `--time` (or without one: no deadline).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
    limit: Option<Duration>,
}

impl Clock {
    /// Starts now; `seconds` is the `--time` given, if any.
    pub fn start(seconds: Option<f64>) -> Clock {
        Clock {
            start: Instant::now(),
            limit: seconds.and_then(|t| Duration::try_from_secs_f64(t.max(0.0)).ok()),
        }
    }

    /// The `--time` given, in seconds.
    pub fn limit(&self) -> Option<f64> {
        self.limit.map(|l| l.as_secs_f64())
    }

    /// Seconds left for the work: before the deadline, less [`WRAP_UP`]
    /// (none past it); `None` without a deadline.
    pub fn work_left(&self) -> Option<f64> {
        self.limit.map(|l| {
            l.saturating_sub(WRAP_UP.min(l / 10))
                .saturating_sub(self.start.elapsed())
                .as_secs_f64()
        })
    }

    /// When the command stops waiting: the deadline plus [`MARGIN`].
    pub fn hard(&self) -> Option<Instant> {
        self.limit
            .and_then(|l| l.checked_add(MARGIN))
            .and_then(|l| self.start.checked_add(l))
    }
}

/// Work on a thread of its own, whose results come back one by one.
pub struct Worker<T> {
    results: Receiver<T>,
}

impl<T: Send + 'static> Worker<T> {
    /// Runs `work` on a new thread; it hands results over with `send`
    /// (say, a search's outcome and then its baseline).
    pub fn spawn(work: impl FnOnce(&dyn Fn(T)) + Send + 'static) -> std::io::Result<Worker<T>> {
        let (tx, results) = channel();
        std::thread::Builder::new()
            .name("mcmpart-work".into())
            .stack_size(super::COMMAND_STACK)
            .spawn(move || {
                // A result nobody waits for any more is dropped.
                work(&|r| {
                    let _ = tx.send(r);
                })
            })?;
        Ok(Worker { results })
    }

    /// [`Worker::next`], giving up early too once `give_up` says so
    /// (checked every [`POLL`]).
    pub fn next_unless(&self, until: Option<Instant>, give_up: impl Fn() -> bool) -> Option<T> {
        loop {
            let slice = Instant::now() + POLL;
            let wait = until.map_or(slice, |u| u.min(slice));
            match self
                .results
                .recv_timeout(wait.saturating_duration_since(Instant::now()))
            {
                Ok(r) => return Some(r),
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) if until.is_some_and(|u| Instant::now() >= u) || give_up() => {
                    return None
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// The next result, waiting until `until` (for ever with `None`);
    /// `None` when it did not come in time, or the work ended without it
    /// (it panicked: the panic message is already on stderr).
    pub fn next(&self, until: Option<Instant>) -> Option<T> {
        self.next_unless(until, || false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_counts_down_to_its_limit() {
        let c = Clock::start(Some(0.0));
        assert_eq!(c.work_left(), Some(0.0));
        assert!(c.hard().is_some_and(|h| h >= c.start + MARGIN));
        let free = Clock::start(None);
        assert_eq!((free.work_left(), free.hard(), free.limit()), (None, None, None));
        let long = Clock::start(Some(100.0));
        let work = long.work_left().unwrap();
        assert!(work <= 100.0 - WRAP_UP.as_secs_f64() && work > 99.0 - WRAP_UP.as_secs_f64());
        let short = Clock::start(Some(1.0)).work_left().unwrap();
        assert!(short <= 0.9 && short > 0.5, "{short}");
    }

    /// A worker stuck past the deadline is not waited for; one that
    /// answers in time is heard, every result in order.
    #[test]
    fn a_worker_is_waited_for_until_the_deadline_only() {
        let (release, stuck) = channel::<()>();
        let w = Worker::spawn(move |send: &dyn Fn(u32)| {
            send(1);
            let _ = stuck.recv();
            send(2);
        })
        .unwrap();
        let soon = || Some(Instant::now() + Duration::from_millis(50));
        assert_eq!(w.next(None), Some(1));
        let asked = Instant::now();
        assert_eq!(w.next(soon()), None);
        assert!(asked.elapsed() < Duration::from_secs(5));
        release.send(()).unwrap();
        assert_eq!(w.next(Some(Instant::now() + Duration::from_secs(60))), Some(2));
        assert_eq!(w.next(soon()), None, "the work ended");
        let (_hold, never) = channel::<()>();
        let w = Worker::spawn(move |send: &dyn Fn(u32)| {
            let _ = never.recv();
            send(3);
        })
        .unwrap();
        let asked = Instant::now();
        assert_eq!(
            w.next_unless(None, || asked.elapsed() > Duration::from_millis(100)),
            None
        );
        assert!(asked.elapsed() < Duration::from_secs(5));
    }
}
