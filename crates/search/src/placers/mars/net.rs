//! Mars's network (Lan et al., ICPP 2021): a GCN encoder (pretrained by
//! Deep Graph Infomax, [`super::dgi`]) and a segment-level
//! sequence-to-sequence placer: an LSTM decoder runs along each segment of
//! the node sequence, attending over the encoder's states of its segment
//! and of the previous one, and the chip head reads its states.

use crate::placers::agent::{sorted_vars, Head, Net};
use crate::placers::seq::Segments;
use crate::policy::features::NODE_FEATURES;
use crate::policy::sage::{neighbour_means, Init, Linear};
use crate::policy::{GraphFeatures, PolicyError};
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::rnn::{LSTMConfig, LSTM, RNN};
use candle_nn::{VarBuilder, VarMap};
use serde::{Deserialize, Serialize};

/// The shape of a Mars network; saved beside its weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MarsConfig {
    pub gcn_layers: usize,
    pub hidden: usize,
    /// Nodes per segment of the placer.
    pub segment: usize,
    pub op_buckets: usize,
    /// Seeds the weight initialisation.
    pub seed: u64,
}

impl Default for MarsConfig {
    fn default() -> Self {
        MarsConfig {
            gcn_layers: 2,
            hidden: 64,
            segment: 32,
            op_buckets: 64,
            seed: 0,
        }
    }
}

impl MarsConfig {
    /// Rejects shapes the network cannot be built with, or that no sane
    /// checkpoint has.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let fields = [
            ("gcn_layers", self.gcn_layers, 1, 64),
            ("hidden", self.hidden, 1, 4096),
            ("segment", self.segment, 1, 4096),
            ("op_buckets", self.op_buckets, 1, 1 << 16),
        ];
        for (name, v, lo, hi) in fields {
            if v < lo || v > hi {
                return Err(PolicyError::Config(format!("{name} ({v}) must be from {lo} to {hi}")));
            }
        }
        Ok(())
    }
}

/// The GCN encoder: operator embedding plus a projection of the node
/// features, then layers `h <- relu(W (h + mean of in-neighbours + mean of
/// out-neighbours) / 3)`, a residual around each.
pub(crate) struct Encoder {
    op_embedding: Tensor,
    input: Linear,
    layers: Vec<Linear>,
}

impl Encoder {
    fn new(init: &mut Init, c: &MarsConfig) -> Result<Encoder, PolicyError> {
        let h = c.hidden;
        Ok(Encoder {
            op_embedding: init.uniform("encoder.op_embedding", &[c.op_buckets, h], 1.0)?,
            input: Linear::new(init, "encoder.input", NODE_FEATURES, h)?,
            layers: (0..c.gcn_layers)
                .map(|i| Linear::new(init, &format!("encoder.gcn.{i}"), h, h))
                .collect::<Result<Vec<_>, _>>()?,
        })
    }

    /// The node features as the encoder takes them [N, H] (what DGI's
    /// corruption shuffles).
    pub fn embed(&self, f: &GraphFeatures) -> candle_core::Result<Tensor> {
        self.op_embedding.index_select(&f.ops, 0)? + self.input.forward(&f.nodes)?
    }

    /// Node states [N, H] of embedded features `x` over `f`'s edges.
    pub fn encode(&self, x: &Tensor, f: &GraphFeatures) -> candle_core::Result<Tensor> {
        let mut h = x.clone();
        for layer in &self.layers {
            let (agg_in, agg_out) = neighbour_means(&h, f)?;
            let z = layer
                .forward(&((&h + agg_in)? + agg_out)?.affine(1.0 / 3.0, 0.0)?)?
                .relu()?;
            h = (h + z)?;
        }
        Ok(h)
    }
}

/// The segment-level placer: an LSTM along each segment (all segments as
/// one batch), attention from its states over the encoder's states of the
/// segment and the previous one, and a projection of both.
struct Placer {
    lstm: LSTM,
    query: Linear,
    out: Linear,
}

impl Placer {
    fn new(init: &mut Init, varmap: &VarMap, h: usize) -> Result<Placer, PolicyError> {
        // The LSTM's weights are made here, seeded, under the names
        // candle-nn's LSTM asks its VarBuilder for (which then finds them
        // instead of drawing from an unseeded generator). PyTorch's
        // initialisation: uniform ±1/sqrt(hidden).
        let bound = 1.0 / (h as f64).sqrt();
        init.uniform("placer.lstm.weight_ih_l0", &[4 * h, h], bound)?;
        init.uniform("placer.lstm.weight_hh_l0", &[4 * h, h], bound)?;
        init.uniform("placer.lstm.bias_ih_l0", &[4 * h], bound)?;
        init.uniform("placer.lstm.bias_hh_l0", &[4 * h], bound)?;
        let vb = VarBuilder::from_varmap(varmap, DType::F32, &Device::Cpu);
        let lstm = candle_nn::rnn::lstm(h, h, LSTMConfig::default(), vb.pp("placer.lstm"))?;
        Ok(Placer {
            lstm,
            query: Linear::new(init, "placer.query", h, h)?,
            out: Linear::new(init, "placer.out", 2 * h, h)?,
        })
    }

    /// Encoder states as segments [B, S, H] to decoder outputs [B, S, H].
    fn forward(&self, enc: &Tensor, seg: &Segments) -> candle_core::Result<Tensor> {
        let (b, s, h) = enc.dims3()?;
        let states = self.lstm.seq(enc)?;
        let dec = self.lstm.states_to_tensor(&states)?;
        let q = self.query.forward(&dec.reshape((b * s, h))?)?.reshape((b, s, h))?;
        let mem = seg.with_memory(enc)?;
        let ctx = seg.attend(&q, &mem, &mem)?;
        let both = Tensor::cat(&[&dec, &ctx], 2)?.reshape((b * s, 2 * h))?;
        self.out.forward(&both)?.tanh()?.reshape((b, s, h))
    }
}

pub struct MarsNet {
    config: MarsConfig,
    varmap: VarMap,
    pub(crate) encoder: Encoder,
    placer: Placer,
    head: Head,
}

/// Whether a variable is the encoder's (what Mars's checkpoint holds).
pub fn is_encoder(name: &str) -> bool {
    name.starts_with("encoder.")
}

impl MarsNet {
    /// A fresh network whose weights `config.seed` fixes.
    pub fn new(config: &MarsConfig) -> Result<MarsNet, PolicyError> {
        config.validate()?;
        let varmap = VarMap::new();
        let mut init = Init::new(&varmap, config.seed, &Device::Cpu, DType::F32);
        let encoder = Encoder::new(&mut init, config)?;
        let placer = Placer::new(&mut init, &varmap, config.hidden)?;
        let head = Head::new(&mut init, "head", config.hidden)?;
        Ok(MarsNet {
            config: config.clone(),
            varmap,
            encoder,
            placer,
            head,
        })
    }

    pub fn config(&self) -> &MarsConfig {
        &self.config
    }

    pub(crate) fn varmap(&self) -> &VarMap {
        &self.varmap
    }
}

impl Net for MarsNet {
    fn forward(&self, f: &GraphFeatures) -> Result<(Tensor, Tensor), PolicyError> {
        let h = self.encoder.encode(&self.encoder.embed(f)?, f)?;
        let seg = Segments::new(&f.depth, self.config.segment, &Device::Cpu, DType::F32)?;
        let out = self.placer.forward(&seg.split(&h)?, &seg)?;
        Ok(self.head.forward(&seg.merge(&out)?, f)?)
    }

    fn vars(&self) -> Vec<(String, Var)> {
        sorted_vars(&self.varmap)
    }

    fn op_buckets(&self) -> usize {
        self.config.op_buckets
    }
}
