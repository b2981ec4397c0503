//! The policy network: a GraphSAGE encoder over the decision nodes, a query
//! per node scored against a key per chip (any chip count works) plus a
//! per-node weighting of how far the chip is from the node's place in the
//! pipeline and from its chip in the given placement (the one the policy
//! refines, greedy's or the best so far), of which neighbouring chip it can
//! slide to there and how much lighter that chip is, a value head, and T refinement iterations that each see
//! the previous placement.

use super::features::{GraphFeatures, CHIP_FEATURES, NODE_FEATURES};
use super::sage::{Init, Linear, Mlp, SageLayer};
use super::{PolicyConfig, PolicyError};
use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::VarMap;
use mcm_core::graph::Graph;
use mcm_core::package::Package;

/// The pairwise terms the head weighs per node: d, d², and with a given
/// placement e, e², slide and relief (see [`Policy::forward`]).
const PIPELINE_TERMS: usize = 6;

/// What one forward pass gives for training.
#[derive(Clone, Debug)]
pub struct PolicyOutput {
    /// Per iteration, log-probabilities of each chip for each node, [N, C].
    /// The last iteration is the policy; earlier ones are for inspection.
    pub log_probs: Vec<Tensor>,
    /// The predicted reward, a scalar tensor.
    pub value: Tensor,
}

impl PolicyOutput {
    /// The last iteration's log-probabilities, the ones actions are drawn from.
    pub fn last(&self) -> &Tensor {
        self.log_probs.last().expect("at least one iteration")
    }
}

/// The network and its weights (held in a [`VarMap`] for the optimiser and
/// checkpoints).
pub struct Policy {
    config: PolicyConfig,
    varmap: VarMap,
    device: Device,
    dtype: DType,
    op_embedding: Tensor,
    input: Linear,
    previous: Linear,
    layers: Vec<SageLayer>,
    chip: Mlp,
    query: Mlp,
    value: Mlp,
    /// Per node, the weights in its chip scores of the pipeline distance d,
    /// of d², of the distance e from the node's chip in the given placement
    /// (`prev`, the same for every iteration; no term without one) and of
    /// e² (a peak at d = -w1 / (2 w2), as sharp as w2 is negative, so a node
    /// can prefer a chip before or after its place, or near where it was),
    /// and of the given placement's slide and relief terms
    /// ([`GraphFeatures::anchor_terms`]: which nodes can move to a
    /// neighbouring chip, and how much lighter it is).
    pipeline: Linear,
    /// Divides the last iteration's logits (1 in training); below 1 it
    /// sharpens the policy, which keeps a rollout's moves to the few the
    /// policy is surest of (see [`Policy::set_temperature`]).
    temperature: f64,
}

impl Policy {
    /// A fresh policy whose weights are fixed by `config.seed`.
    pub fn new(config: &PolicyConfig, device: &Device, dtype: DType) -> Result<Policy, PolicyError> {
        config.validate()?;
        let varmap = VarMap::new();
        let h = config.hidden;
        let mut init = Init::new(&varmap, config.seed, device, dtype);
        let op_embedding = init.uniform("op_embedding", &[config.op_buckets, h], 1.0)?;
        let input = Linear::new(&mut init, "input", NODE_FEATURES, h)?;
        let previous = Linear::new(&mut init, "previous", h + 1, h)?;
        let layers = (0..config.layers)
            .map(|i| SageLayer::new(&mut init, &format!("sage.{i}"), h))
            .collect::<Result<Vec<_>, _>>()?;
        let chip = Mlp::new(&mut init, "chip", CHIP_FEATURES, h, h)?;
        let query = Mlp::new(&mut init, "query", h, h, h)?;
        let value = Mlp::new(&mut init, "value", 2 * h, h, 1)?;
        // Zero at first: a fresh policy is as uniform as without it.
        let pipeline = Linear::zeros(&mut init, "pipeline", h, PIPELINE_TERMS)?;
        Ok(Policy {
            config: config.clone(),
            varmap,
            device: device.clone(),
            dtype,
            op_embedding,
            input,
            previous,
            layers,
            chip,
            query,
            value,
            pipeline,
            temperature: 1.0,
        })
    }

    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The weights, for checkpoints.
    pub fn varmap(&self) -> &VarMap {
        &self.varmap
    }

    /// All trainable variables, sorted by name (a stable order).
    pub fn vars(&self) -> Vec<(String, Var)> {
        let data = self.varmap.data().lock().expect("varmap lock");
        let mut vars: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        vars
    }

    /// One variable by name (`sage.0.linear.weight`, ...).
    pub fn var(&self, name: &str) -> Option<Var> {
        self.varmap.data().lock().expect("varmap lock").get(name).cloned()
    }

    /// Sets the temperature of the distribution the policy gives (its
    /// last iteration's, which rollouts draw from and PPO updates), a
    /// setting of its use, not a weight: checkpoints do not keep it.
    pub fn set_temperature(&mut self, t: f64) -> Result<(), PolicyError> {
        if !(t.is_finite() && t > 0.0) {
            return Err(PolicyError::Input(format!("a temperature must be positive, not {t}")));
        }
        self.temperature = t;
        Ok(())
    }

    pub fn num_parameters(&self) -> usize {
        self.vars().iter().map(|(_, v)| v.elem_count()).sum()
    }

    /// The parameter count a configuration implies, without building it
    /// (lets checkpoint loading refuse a nonsense sidecar before allocating).
    pub fn parameters_for(config: &PolicyConfig) -> u128 {
        let h = config.hidden as u128;
        let linear = |i: u128, o: u128| i * o + o;
        config.op_buckets as u128 * h
            + linear(NODE_FEATURES as u128, h)
            + linear(h + 1, h)
            + config.layers as u128 * (linear(3 * h, h) + 2 * h)
            + linear(CHIP_FEATURES as u128, h)
            + linear(h, h)
            + 2 * linear(h, h)
            + linear(2 * h, h)
            + linear(h, 1)
            + linear(h, PIPELINE_TERMS as u128)
    }

    /// Features of a graph on a package, on this policy's device and dtype.
    pub fn features(&self, graph: &Graph, package: &Package) -> Result<GraphFeatures, PolicyError> {
        GraphFeatures::new(graph, package, self.config.op_buckets, &self.device, self.dtype)
    }

    /// Runs the network. `prev`, when given, is a placement (a chip per
    /// node) the first iteration refines; each later iteration refines the
    /// previous iteration's most likely placement.
    pub fn forward(&self, f: &GraphFeatures, prev: Option<&[u32]>) -> Result<PolicyOutput, PolicyError> {
        let (n, c) = (f.num_nodes, f.num_chips);
        if f.op_buckets != self.config.op_buckets {
            return Err(PolicyError::Input(format!(
                "features hash operators into {} buckets but the policy has {}",
                f.op_buckets, self.config.op_buckets
            )));
        }
        let mut placement = match prev {
            None => None,
            Some(p) => {
                if p.len() != n || p.iter().any(|&x| x as usize >= c) {
                    return Err(PolicyError::Input(format!(
                        "the previous placement must give one chip below {c} for each of the {n} nodes"
                    )));
                }
                Some(Tensor::from_slice(p, n, &self.device)?)
            }
        };
        // Distances in chip ids from the given placement (the anchor every
        // iteration's scores are measured from), and their squares.
        let anchor = match (&placement, prev) {
            (Some(p), Some(prev)) => {
                let at = p.to_dtype(self.dtype)?.reshape((n, 1))?;
                let e = f.chip_index.broadcast_sub(&at)?;
                let (slide, relief) = f.anchor_terms(prev)?;
                Some([e.clone(), e.sqr()?, slide, relief])
            }
            _ => None,
        };
        let keys = self.chip.forward(&f.chips)?;
        // What a node is told of its previous chip (its key and normalised id),
        // projected once per chip and then selected per node: C rows, not N.
        let seen = self.previous.forward(&Tensor::cat(&[&keys, &f.chip_ids], 1)?)?;
        let base = (self.op_embedding.index_select(&f.ops, 0)? + self.input.forward(&f.nodes)?)?;
        let scale = 1.0 / (self.config.hidden as f64).sqrt();
        let mut log_probs = Vec::with_capacity(self.config.iterations);
        let mut h = base.clone();
        for _ in 0..self.config.iterations {
            h = base.clone();
            if let Some(p) = &placement {
                h = (h + seen.index_select(p, 0)?)?;
            }
            for layer in &self.layers {
                h = layer.forward(&h, f)?;
            }
            let logits = (self.query.forward(&h)?.matmul(&keys.t()?)? * scale)?;
            let w = self.pipeline.forward(&h)?;
            let mut logits = (logits
                + w.narrow(1, 0, 1)?.broadcast_mul(&f.pipeline)?
                + w.narrow(1, 1, 1)?.broadcast_mul(&f.pipeline_sq)?)?;
            if let Some(terms) = &anchor {
                for (i, t) in terms.iter().enumerate() {
                    logits = (logits + w.narrow(1, 2 + i, 1)?.broadcast_mul(t)?)?;
                }
            }
            let last = log_probs.len() + 1 == self.config.iterations;
            if last && self.temperature != 1.0 {
                logits = (logits / self.temperature)?;
            }
            let lp = log_softmax(&logits)?;
            // Non-autoregressive: every node sees the whole previous placement.
            placement = Some(lp.argmax(1)?);
            log_probs.push(lp);
        }
        let pooled = Tensor::cat(&[h.mean_keepdim(0)?, h.max_keepdim(0)?], 1)?;
        let value = self.value.forward(&pooled)?.reshape(())?;
        Ok(PolicyOutput { log_probs, value })
    }

    /// The last iteration's probabilities as the solver takes them
    /// (`search::Probs`): per node, a weight per chip summing to 1.
    pub fn probs(&self, f: &GraphFeatures, prev: Option<&[u32]>) -> Result<Vec<Vec<f32>>, PolicyError> {
        Ok(self.act(f, prev)?.0)
    }

    /// What a rollout needs from one forward pass: [`Policy::probs`] and the
    /// value the policy predicts.
    pub fn act(&self, f: &GraphFeatures, prev: Option<&[u32]>) -> Result<(Vec<Vec<f32>>, f32), PolicyError> {
        act_of(&self.forward(f, prev)?)
    }
}

/// [`Policy::act`]'s numbers from a forward pass's output.
pub fn act_of(out: &PolicyOutput) -> Result<(Vec<Vec<f32>>, f32), PolicyError> {
    let probs = out.last().detach().exp()?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    let value = out.value.to_dtype(DType::F32)?.to_scalar::<f32>()?;
    Ok((probs, value))
}

/// Row-wise log-softmax from plain ops (all of which have a backward pass).
fn log_softmax(x: &Tensor) -> candle_core::Result<Tensor> {
    let shifted = x.broadcast_sub(&x.max_keepdim(D::Minus1)?.detach())?;
    let lse = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    shifted.broadcast_sub(&lse)
}
