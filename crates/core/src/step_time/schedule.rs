//! A recorded run as a [`Schedule`]: ops and transfers in the order they
//! start, busy times, what ends last, and the critical path.

use super::sim::{cause, Record, Scratch};
use super::{OpOf, OpRun, PathStep, Schedule, StepTimeModel, TransferRun};

pub(super) fn build(m: &StepTimeModel, s: &Scratch, rec: &Record, step_time_s: f64) -> Schedule {
    let np = m.deps.placed_node.len() as u32;
    let c = m.net.chips;
    let nl = m.net.link_src.len();

    // Start order, ties by chip (link), then the order they were picked.
    let mut op_order = rec.op_order.clone();
    op_order.sort_by(|&a, &b| {
        rec.op_start[a as usize]
            .total_cmp(&rec.op_start[b as usize])
            .then(s.op_chip[a as usize].cmp(&s.op_chip[b as usize]))
    });
    let mut tx_order = rec.tx_order.clone();
    tx_order.sort_by(|&a, &b| {
        rec.tx_start[a as usize]
            .total_cmp(&rec.tx_start[b as usize])
            .then(s.tx_link[a as usize].cmp(&s.tx_link[b as usize]))
    });
    let mut op_index = vec![0usize; s.op_node.len()];
    let mut tx_index = vec![0usize; s.tx_link.len()];
    let mut chip_busy_s = vec![0.0; c];
    let mut link_busy_s = vec![0.0; nl];
    // The op (transfer) before each on its chip (link), by index.
    let mut prev_op = vec![None; op_order.len()];
    let mut prev_tx = vec![None; tx_order.len()];
    let mut last_on_chip = vec![None; c];
    let mut last_on_link = vec![None; nl];

    let ops: Vec<OpRun> = op_order
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            op_index[o as usize] = i;
            let chip = s.op_chip[o as usize];
            prev_op[i] = last_on_chip[chip as usize].replace(i);
            let (start_s, end_s) = (rec.op_start[o as usize], rec.op_end[o as usize]);
            let node = s.op_node[o as usize];
            chip_busy_s[chip as usize] += m.duration(node, chip);
            OpRun {
                of: if o < np { OpOf::Placed(o) } else { OpOf::Replica(node) },
                node,
                chip,
                start_s,
                end_s,
            }
        })
        .collect();
    let transfers: Vec<TransferRun> = tx_order
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            tx_index[x as usize] = i;
            let link = s.tx_link[x as usize];
            prev_tx[i] = last_on_link[link as usize].replace(i);
            let (start_s, end_s) = (rec.tx_start[x as usize], rec.tx_end[x as usize]);
            link_busy_s[link as usize] += m.transfer_time(link as usize, s.tx_size[x as usize]);
            TransferRun {
                node: s.tx_node[x as usize],
                link,
                bytes: s.tx_size[x as usize],
                start_s,
                end_s,
            }
        })
        .collect();

    let last = |ends: &mut dyn Iterator<Item = f64>| {
        let mut best: Option<(usize, f64)> = None;
        for (i, e) in ends.enumerate() {
            if best.is_none_or(|(_, b)| e > b) {
                best = Some((i, e));
            }
        }
        best.map(|(i, _)| i)
    };
    let last_op = last(&mut ops.iter().map(|o| o.end_s));
    let last_transfer = last(&mut transfers.iter().map(|t| t.end_s));

    // Back from the last op: an op whose inputs were there when it started
    // waited for the input that came last; one that became ready earlier
    // waited for its chip. A transfer likewise for its data and its link.
    let step = |c: u32| {
        cause(c).map(|(tx, k)| {
            if tx {
                PathStep::Transfer(tx_index[k as usize])
            } else {
                PathStep::Op(op_index[k as usize])
            }
        })
    };
    let mut critical_path = Vec::new();
    let mut at = last_op.map(PathStep::Op);
    while let Some(p) = at {
        critical_path.push(p);
        at = match p {
            PathStep::Op(i) => {
                let o = op_order[i] as usize;
                if rec.op_ready[o] == rec.op_start[o] {
                    step(rec.op_cause[o])
                } else {
                    prev_op[i].map(PathStep::Op)
                }
            }
            PathStep::Transfer(i) => {
                let x = tx_order[i] as usize;
                if rec.tx_able[x] == rec.tx_start[x] {
                    step(rec.tx_cause[x])
                } else {
                    prev_tx[i].map(PathStep::Transfer)
                }
            }
        };
    }
    critical_path.reverse();

    Schedule {
        step_time_s,
        ops,
        transfers,
        chip_busy_s,
        link_busy_s,
        last_op,
        last_transfer,
        critical_path,
    }
}
