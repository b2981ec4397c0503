//! Deep Graph Infomax (Veličković et al., 2019), Mars's contrastive
//! self-supervision of its encoder: the encoder's states of a graph
//! (positives) and of the graph with its node features shuffled among the
//! nodes (the corruption; negatives), a summary of the positives
//! (`sigmoid(mean h)`), and a bilinear discriminator `h W s` trained with
//! binary cross-entropy to tell them apart. No placement, no solver, no
//! cost model: only the graphs.

use super::net::{is_encoder, MarsNet};
use crate::policy::sage::Init;
use crate::policy::{GraphFeatures, PolicyError};
use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarMap};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One step of DGI, as the log records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DgiLog {
    pub step: usize,
    pub graph: String,
    pub loss: f64,
    /// Share of positives and negatives the discriminator tells right.
    pub accuracy: f64,
    pub elapsed_s: f64,
}

/// `log(1 + exp(x))`, stable for large |x|.
fn softplus(x: &Tensor) -> candle_core::Result<Tensor> {
    x.relu()? + (x.abs()?.neg()?.exp()? + 1.0)?.log()?
}

/// The discriminator's logits of positives and negatives [N, 1] each.
fn logits(net: &MarsNet, w: &Tensor, f: &GraphFeatures, perm: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    let x = net.encoder.embed(f)?;
    let h = net.encoder.encode(&x, f)?;
    let corrupt = net.encoder.encode(&x.index_select(perm, 0)?, f)?;
    // sigmoid(mean h) as a column [H, 1].
    let s = (h.mean_keepdim(0)?.neg()?.exp()? + 1.0)?.recip()?.t()?;
    let ws = w.matmul(&s)?;
    Ok((h.matmul(&ws)?, corrupt.matmul(&ws)?))
}

/// The DGI loss of one graph under a corruption `perm` (a permutation of
/// its nodes), and the discriminator's accuracy.
pub fn loss(net: &MarsNet, w: &Tensor, f: &GraphFeatures, perm: &[u32]) -> Result<(Tensor, f64), PolicyError> {
    let perm = Tensor::from_slice(perm, perm.len(), &Device::Cpu)?;
    let (pos, neg) = logits(net, w, f, &perm)?;
    let l = ((softplus(&pos.neg()?)?.mean_all()? + softplus(&neg)?.mean_all()?)? * 0.5)?;
    let right = pos.gt(0.0)?.to_dtype(DType::F32)?.sum_all()?.to_scalar::<f32>()?
        + neg.le(0.0)?.to_dtype(DType::F32)?.sum_all()?.to_scalar::<f32>()?;
    Ok((l, right as f64 / (2 * f.num_nodes).max(1) as f64))
}

/// A discriminator's weight, seeded.
pub fn discriminator(varmap: &VarMap, hidden: usize, seed: u64) -> Result<Tensor, PolicyError> {
    let mut init = Init::new(varmap, seed ^ 0xd61, &Device::Cpu, DType::F32);
    let bound = 1.0 / (hidden as f64).sqrt();
    init.uniform("dgi.bilinear", &[hidden, hidden], bound)
}

/// Trains `net`'s encoder by DGI for `steps` steps, a graph per step in a
/// seeded shuffled order, each with a fresh corruption.
pub fn pretrain(
    net: &MarsNet,
    graphs: &[(String, GraphFeatures)],
    steps: usize,
    lr: f64,
    seed: u64,
    on: &mut dyn FnMut(&DgiLog),
) -> Result<Vec<DgiLog>, PolicyError> {
    if graphs.is_empty() {
        return Err(PolicyError::Input("DGI needs at least one graph".into()));
    }
    let disc = VarMap::new();
    let w = discriminator(&disc, net.config().hidden, seed)?;
    let mut vars: Vec<_> = net
        .varmap()
        .data()
        .lock()
        .expect("varmap lock")
        .iter()
        .filter(|(k, _)| is_encoder(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    vars.extend(
        disc.data()
            .lock()
            .expect("varmap lock")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    // A stable order: the optimiser's state must not depend on a hash map's.
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    let mut opt = AdamW::new(
        vars.into_iter().map(|(_, v)| v).collect(),
        ParamsAdamW {
            lr,
            ..ParamsAdamW::default()
        },
    )?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let start = std::time::Instant::now();
    let mut order: Vec<usize> = Vec::new();
    let mut logs = Vec::with_capacity(steps);
    for step in 1..=steps {
        if order.is_empty() {
            order = (0..graphs.len()).collect();
            order.shuffle(&mut rng);
        }
        let (name, f) = &graphs[order.pop().unwrap_or(0)];
        let mut perm: Vec<u32> = (0..f.num_nodes as u32).collect();
        perm.shuffle(&mut rng);
        let (l, accuracy) = loss(net, &w, f, &perm)?;
        let value = l.to_scalar::<f32>()? as f64;
        if !value.is_finite() {
            return Err(PolicyError::Diverged(format!("the DGI loss is {value} on `{name}`")));
        }
        opt.backward_step(&l)?;
        let log = DgiLog {
            step,
            graph: name.clone(),
            loss: value,
            accuracy,
            elapsed_s: start.elapsed().as_secs_f64(),
        };
        on(&log);
        logs.push(log);
    }
    Ok(logs)
}
