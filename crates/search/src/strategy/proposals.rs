//! `auto`'s first partitions under an objective the SAT backing cannot
//! encode (step time): greedy's fill, every heuristic of the
//! device-placement literature ([`heuristics`]) and every one of dp's cuts,
//! each made valid exactly as that strategy makes it (FIX in topological
//! order and memory relief, from a generator seeded as that strategy's run
//! is) and judged, so that with the same seed `auto` ends no worse than any
//! of them: its incumbent is the best of their partitions.
//!
//! The heuristics compute their proposals on threads of their own while the
//! search thread settles what is ready, and one that panics is left out
//! rather than ending the run. Under a time budget each settlement first
//! gets a share of the time left (what is left over the proposals still to
//! settle), so that one slow to make valid (FIX falling back to SAT on a
//! large graph) cannot starve the others; those cut short are settled again
//! afterwards with whatever time remains.

use super::dp::candidates;
use super::heuristics::{self, Kind};
use super::incumbent::Incumbent;
use super::{greedy_start, settle_full, Search};
use crate::placers::zero_shot::Pending;
use crate::policy::rollout::{propose_likeliest, Correction};
use mcm_core::latency::LatencyModel;
use mcm_solver::Infeasible;
use mcm_solver::Order;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a proposal is settled: on a generator of its own seeded by the run's
/// seed (each heuristic and greedy, as their own runs start), or on the one
/// generator dp's cuts share in turn (as dp settles them).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rng {
    Own,
    Cuts,
}

/// One proposal to settle: ready, still being computed by heuristic `k`,
/// or given up (its heuristic failed, or it was settled).
enum Slot {
    Ready(Vec<u32>, Rng),
    Pending,
    Gone,
}

/// Judges every proposal (see the module's comment) into `best`, while the
/// budget lasts. `Err` only when the problem has no valid partition.
pub(super) fn judge_all(search: &mut Search, model: &LatencyModel, best: &mut Incumbent) -> Result<(), Infeasible> {
    let problem = search.problem;
    let allowed = search.allowed();
    let made = spawn_heuristics(search);
    let mut slots: Vec<Slot> = vec![Slot::Ready(greedy_start(problem, &allowed), Rng::Own)];
    let first_heuristic = slots.len();
    slots.extend(Kind::ALL.iter().map(|_| Slot::Pending));
    slots.extend(
        candidates(problem, &allowed)
            .into_iter()
            .map(|(_, cut)| Slot::Ready(cut, Rng::Cuts)),
    );
    let mut cuts_rng = ChaCha8Rng::seed_from_u64(search.seed());
    let mut again: Vec<(Vec<u32>, Rng)> = Vec::new();
    while !search.done() {
        let Some(i) = next(search, &mut slots, &made, first_heuristic) else {
            break;
        };
        let Slot::Ready(proposal, rng) = std::mem::replace(&mut slots[i], Slot::Gone) else {
            continue;
        };
        let left = slots.iter().filter(|s| !matches!(s, Slot::Gone)).count() + 1;
        let share = search.time_left().map(|t| t / left as f64);
        match settle_on(search, &proposal, rng, &mut cuts_rng, share)? {
            Settled::Done(chips) => {
                best.offer(search, model, chips);
            }
            Settled::Partly(chips) => {
                best.offer(search, model, chips);
                again.push((proposal, rng));
            }
            Settled::NotYet => again.push((proposal, rng)),
        }
    }
    // Those cut short at their share, with the time that is left.
    for (proposal, rng) in again {
        if search.done() {
            break;
        }
        if let Settled::Done(chips) | Settled::Partly(chips) = settle_on(search, &proposal, rng, &mut cuts_rng, None)? {
            best.offer(search, model, chips);
        }
    }
    Ok(())
}

/// Each heuristic's proposal, computed on a thread of its own: on the
/// receiver, the heuristic's index in [`Kind::ALL`] and its proposal, or
/// `None` when it failed (panicked, or no thread could be made).
fn spawn_heuristics(search: &mut Search) -> Receiver<(usize, Option<Vec<u32>>)> {
    let (send, made) = channel();
    let problem = Arc::new(search.problem.clone());
    let allowed = Arc::new(search.allowed());
    let seed = search.seed();
    for (i, kind) in Kind::ALL.into_iter().enumerate() {
        let (to, problem, allowed) = (send.clone(), problem.clone(), allowed.clone());
        let work = move || {
            let proposal = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                heuristics::propose(kind, &problem, &allowed, seed)
            }));
            // The search may have ended and gone: nobody to tell.
            let _ = to.send((i, proposal.ok()));
        };
        let spawned = std::thread::Builder::new()
            .name(format!("mcmpart-{}", kind.name()))
            .stack_size(mcm_core::WORKER_STACK)
            .spawn(work);
        if spawned.is_err() {
            let _ = send.send((i, None));
        }
    }
    made
}

/// The next slot to settle: in order under a sample budget (the same run for
/// a seed), waiting for a heuristic still at work; under a time budget the
/// first that is ready, waiting only when none is. `None` when every slot is
/// done, or the budget ran out while waiting.
fn next(
    search: &Search,
    slots: &mut [Slot],
    made: &Receiver<(usize, Option<Vec<u32>>)>,
    first_heuristic: usize,
) -> Option<usize> {
    loop {
        let open = slots.iter().position(|s| !matches!(s, Slot::Gone))?;
        let pick = match search.timed() {
            true => slots.iter().position(|s| matches!(s, Slot::Ready(..))),
            false => matches!(slots[open], Slot::Ready(..)).then_some(open),
        };
        if pick.is_some() {
            return pick;
        }
        if search.done() {
            return None;
        }
        match made.recv_timeout(Duration::from_millis(20)) {
            Ok((k, proposal)) => {
                slots[first_heuristic + k] = match proposal {
                    Some(p) => Slot::Ready(p, Rng::Own),
                    None => Slot::Gone,
                };
            }
            Err(RecvTimeoutError::Timeout) => {}
            // Every heuristic has answered: none is pending any more.
            Err(RecvTimeoutError::Disconnected) => {
                for s in slots.iter_mut().filter(|s| matches!(s, Slot::Pending)) {
                    *s = Slot::Gone;
                }
            }
        }
    }
}

/// What settling a proposal within a share of the time gave.
enum Settled {
    /// A partition valid under the rules, relieved as far as relief goes.
    Done(Vec<u32>),
    /// FIX's partition, whose memory relief the share cut short.
    Partly(Vec<u32>),
    /// FIX did not end within the share.
    NotYet,
}

/// Settles `proposal` ([`settle_full`]) on its generator, within `share`
/// seconds when given (besides the search's own stop).
fn settle_on(
    search: &mut Search,
    proposal: &[u32],
    rng: Rng,
    cuts_rng: &mut ChaCha8Rng,
    share: Option<f64>,
) -> Result<Settled, Infeasible> {
    let fresh = match rng {
        Rng::Own => ChaCha8Rng::seed_from_u64(search.seed()),
        Rng::Cuts => cuts_rng.clone(),
    };
    let kept = std::mem::replace(&mut search.rng, fresh);
    let outer = search.solver.stop();
    if let Some(until) = share.and_then(|s| Instant::now().checked_add(Duration::try_from_secs_f64(s).ok()?)) {
        let outer = outer.clone();
        search.solver.set_stop(Some(Arc::new(move || {
            outer.as_ref().is_some_and(|s| s()) || Instant::now() >= until
        })));
    }
    let settled = settle_full(search, proposal);
    // Cut short by the share alone, not by the search's own stop: the
    // solver goes on for the next proposal.
    let cut = search.solver.cut_short() && !outer.as_ref().is_some_and(|s| s());
    search.solver.set_stop(outer);
    if cut {
        search.solver.resume();
    }
    let used = std::mem::replace(&mut search.rng, kept);
    if rng == Rng::Cuts {
        *cuts_rng = used;
    }
    match settled {
        Ok(chips) if cut => Ok(Settled::Partly(chips)),
        Ok(chips) => Ok(Settled::Done(chips)),
        Err(_) if cut || search.solver.cut_short() => Ok(Settled::NotYet),
        Err(inf) => Err(inf),
    }
}

/// Judges the learned placers' zero-shot placements ([`Pending`]) into
/// `best`, each made valid as that placer's first sample is: greedy's fill
/// settled in a random node order on a generator seeded by the run's seed,
/// then FIX of the likeliest placement around it. So with the same seed
/// `auto` ends no worse than `gdp`'s or `mars`'s first sample. Under a time
/// budget a network still at work when the budget ends is not waited for.
pub(super) fn judge_learned(
    search: &mut Search,
    model: &LatencyModel,
    best: &mut Incumbent,
    pending: Pending,
) -> Result<(), Infeasible> {
    let problem = search.problem;
    let allowed = search.allowed();
    let fresh = ChaCha8Rng::seed_from_u64(search.seed());
    let kept_rng = std::mem::replace(&mut search.rng, fresh);
    let kept_order = std::mem::replace(&mut search.order, Order::Random);
    // Every placer starts from the same settled fill, on the generator as
    // it is after settling it.
    let anchor = settle_full(search, &greedy_start(problem, &allowed));
    let after = search.rng.clone();
    let mut made = Vec::new();
    if let Ok(anchor) = &anchor {
        for i in 0..pending.len() {
            if search.done() {
                break;
            }
            let within = search.time_left().map(Duration::from_secs_f64);
            let Some(probs) = pending.receive(i, within) else {
                continue;
            };
            search.rng = after.clone();
            let prop = propose_likeliest(
                &probs,
                Correction::Fix,
                &mut search.solver,
                &mut search.rng,
                Some(anchor),
            );
            // FIX gave up: the anchor merged, nothing new to judge.
            match prop {
                Ok(p) if !p.fell_back => made.push(p.chips),
                _ => {}
            }
        }
    }
    search.rng = kept_rng;
    search.order = kept_order;
    for chips in made {
        best.offer(search, model, chips);
    }
    Ok(())
}
