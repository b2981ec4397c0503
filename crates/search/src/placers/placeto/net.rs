//! Placeto's network (Addanki et al., NeurIPS 2019): node embeddings by
//! message passing over the graph, the current placement among each node's
//! features, pooled over the group being visited and over the whole graph;
//! a three-layer fully connected policy scores each device for that group
//! from the embeddings and the device's own features, so one set of
//! weights serves any graph and any device count.

use super::PlacetoConfig;
use crate::policy::features::{GraphFeatures, NODE_FEATURES};
use crate::policy::sage::{Init, Linear, Mlp, SageLayer};
use crate::policy::PolicyError;
use candle_core::{DType, Device, Tensor, D};
use candle_nn::VarMap;

/// Per-node features that change along an episode: the node's device (as
/// a share of the device ids), whether it is in the group being visited,
/// whether its group was visited already.
pub const STATE_FEATURES: usize = 3;
/// Per-device features: id share, share of the graph's flops placed there,
/// share of the package's compute, share of the visited group's boundary
/// traffic whose other end is there, and whether the group is there now.
pub const DEVICE_FEATURES: usize = 5;

pub struct PlacetoNet {
    pub varmap: VarMap,
    pub config: PlacetoConfig,
    input: Linear,
    layers: Vec<SageLayer>,
    policy: Mlp,
    head: Linear,
}

impl PlacetoNet {
    pub fn new(config: &PlacetoConfig) -> Result<PlacetoNet, PolicyError> {
        config.validate()?;
        let varmap = VarMap::new();
        let mut init = Init::new(&varmap, config.seed, &Device::Cpu, DType::F32);
        let h = config.hidden;
        let input = Linear::new(&mut init, "embed.input", NODE_FEATURES + STATE_FEATURES, h)?;
        let layers = (0..config.layers)
            .map(|i| SageLayer::new(&mut init, &format!("embed.sage{i}"), h))
            .collect::<Result<Vec<_>, _>>()?;
        let policy = Mlp::new(&mut init, "policy.mlp", 2 * h + DEVICE_FEATURES, h, h)?;
        let head = Linear::new(&mut init, "policy.head", h, 1)?;
        Ok(PlacetoNet {
            varmap,
            config: config.clone(),
            input,
            layers,
            policy,
            head,
        })
    }

    /// Log-probabilities over the devices for the group whose nodes are
    /// `members` (u32 [M]), given the episode's state ([N, STATE_FEATURES])
    /// and the devices' features ([C, DEVICE_FEATURES]): [C].
    pub fn log_probs(
        &self,
        f: &GraphFeatures,
        state: &Tensor,
        members: &Tensor,
        devices: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let mut h = self.input.forward(&Tensor::cat(&[&f.nodes, state], 1)?)?.relu()?;
        for layer in &self.layers {
            h = layer.forward(&h, f)?;
        }
        let group = h.index_select(members, 0)?.mean_keepdim(0)?;
        let graph = h.mean_keepdim(0)?;
        let c = devices.dim(0)?;
        let pooled = Tensor::cat(&[&group, &graph], 1)?.broadcast_as((c, 2 * self.config.hidden))?;
        let x = Tensor::cat(&[&pooled, devices], 1)?;
        let logits = self.head.forward(&self.policy.forward(&x)?.relu()?)?.squeeze(1)?;
        candle_nn::ops::log_softmax(&logits, D::Minus1)
    }
}
