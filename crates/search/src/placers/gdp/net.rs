//! GDP's network (Zhou et al., 2019): a GraphSAGE encoder (the layers of
//! `rl`'s policy, [`crate::policy::sage`]) over the operator embedding and
//! node features, then a placer of Transformer-XL layers over segments of
//! the node sequence (each segment attends to itself and to the previous
//! segment's cached states), and the chip head every node's distribution
//! comes from. One forward pass places the whole graph.

use crate::placers::agent::{sorted_vars, Head, Net};
use crate::placers::seq::Segments;
use crate::policy::features::NODE_FEATURES;
use crate::policy::sage::{Init, LayerNorm, Linear, Mlp, SageLayer};
use crate::policy::{GraphFeatures, PolicyError};
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::VarMap;
use serde::{Deserialize, Serialize};

/// The shape of a GDP network; saved beside its weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GdpConfig {
    pub sage_layers: usize,
    pub hidden: usize,
    /// Nodes per segment of the placer.
    pub segment: usize,
    pub attention_layers: usize,
    pub op_buckets: usize,
    /// Seeds the weight initialisation.
    pub seed: u64,
}

impl Default for GdpConfig {
    fn default() -> Self {
        GdpConfig {
            sage_layers: 3,
            hidden: 64,
            segment: 32,
            attention_layers: 2,
            op_buckets: 64,
            seed: 0,
        }
    }
}

impl GdpConfig {
    /// Rejects shapes the network cannot be built with, or that no sane
    /// checkpoint has (a typo must not allocate without end).
    pub fn validate(&self) -> Result<(), PolicyError> {
        let fields = [
            ("sage_layers", self.sage_layers, 0, 64),
            ("hidden", self.hidden, 1, 4096),
            ("segment", self.segment, 1, 4096),
            ("attention_layers", self.attention_layers, 0, 64),
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

/// One Transformer-XL layer: attention over the segment and its memory,
/// then a feed-forward block, each with a residual and layer norm.
struct XlLayer {
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
    norm1: LayerNorm,
    ff: Mlp,
    norm2: LayerNorm,
}

impl XlLayer {
    fn new(init: &mut Init, name: &str, h: usize) -> Result<XlLayer, PolicyError> {
        Ok(XlLayer {
            q: Linear::new(init, &format!("{name}.q"), h, h)?,
            k: Linear::new(init, &format!("{name}.k"), h, h)?,
            v: Linear::new(init, &format!("{name}.v"), h, h)?,
            out: Linear::new(init, &format!("{name}.out"), h, h)?,
            norm1: LayerNorm::new(init, &format!("{name}.norm1"), h)?,
            ff: Mlp::new(init, &format!("{name}.ff"), h, 2 * h, h)?,
            norm2: LayerNorm::new(init, &format!("{name}.norm2"), h)?,
        })
    }

    /// Segments [B, S, H] to segments [B, S, H].
    fn forward(&self, x: &Tensor, seg: &Segments) -> candle_core::Result<Tensor> {
        let (b, s, h) = x.dims3()?;
        let flat = |t: &Tensor| t.reshape((t.dim(0)? * t.dim(1)?, h));
        let mem = seg.with_memory(x)?;
        let q = self.q.forward(&flat(x)?)?.reshape((b, s, h))?;
        let k = self.k.forward(&flat(&mem)?)?.reshape((b, 2 * s, h))?;
        let v = self.v.forward(&flat(&mem)?)?.reshape((b, 2 * s, h))?;
        let a = self.out.forward(&flat(&seg.attend(&q, &k, &v)?)?)?;
        let x1 = self.norm1.forward(&(flat(x)? + a)?)?;
        let x2 = self.norm2.forward(&(&x1 + self.ff.forward(&x1)?)?)?;
        x2.reshape((b, s, h))
    }
}

pub struct GdpNet {
    config: GdpConfig,
    varmap: VarMap,
    op_embedding: Tensor,
    input: Linear,
    sage: Vec<SageLayer>,
    placer: Vec<XlLayer>,
    head: Head,
}

impl GdpNet {
    /// A fresh network whose weights `config.seed` fixes.
    pub fn new(config: &GdpConfig) -> Result<GdpNet, PolicyError> {
        config.validate()?;
        let varmap = VarMap::new();
        let h = config.hidden;
        let mut init = Init::new(&varmap, config.seed, &Device::Cpu, DType::F32);
        let op_embedding = init.uniform("encoder.op_embedding", &[config.op_buckets, h], 1.0)?;
        let input = Linear::new(&mut init, "encoder.input", NODE_FEATURES, h)?;
        let sage = (0..config.sage_layers)
            .map(|i| SageLayer::new(&mut init, &format!("encoder.sage.{i}"), h))
            .collect::<Result<Vec<_>, _>>()?;
        let placer = (0..config.attention_layers)
            .map(|i| XlLayer::new(&mut init, &format!("placer.xl.{i}"), h))
            .collect::<Result<Vec<_>, _>>()?;
        let head = Head::new(&mut init, "head", h)?;
        Ok(GdpNet {
            config: config.clone(),
            varmap,
            op_embedding,
            input,
            sage,
            placer,
            head,
        })
    }

    pub fn config(&self) -> &GdpConfig {
        &self.config
    }
}

impl Net for GdpNet {
    fn forward(&self, f: &GraphFeatures) -> Result<(Tensor, Tensor), PolicyError> {
        let mut h = (self.op_embedding.index_select(&f.ops, 0)? + self.input.forward(&f.nodes)?)?;
        for layer in &self.sage {
            h = layer.forward(&h, f)?;
        }
        let seg = Segments::new(&f.depth, self.config.segment, &Device::Cpu, DType::F32)?;
        let mut x = seg.split(&h)?;
        for layer in &self.placer {
            x = layer.forward(&x, &seg)?;
        }
        let h = seg.merge(&x)?;
        Ok(self.head.forward(&h, f)?)
    }

    fn vars(&self) -> Vec<(String, Var)> {
        sorted_vars(&self.varmap)
    }

    fn op_buckets(&self) -> usize {
        self.config.op_buckets
    }
}
