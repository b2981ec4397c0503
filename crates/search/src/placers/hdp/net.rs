//! HDP's two networks (Mirhoseini et al., ICLR 2018): a feed-forward
//! Grouper that gives every operation a group, and a sequence-to-sequence
//! Placer (a bidirectional LSTM encoder over the group embeddings, an LSTM
//! decoder with content-based attention) that gives every group a device.

use super::HdpConfig;
use crate::placers::reinforce::{draw, squash};
use crate::policy::features::{GraphFeatures, NODE_FEATURES};
use crate::policy::sage::{neighbour_means, Init, Linear, Mlp};
use crate::policy::PolicyError;
use candle_core::{DType, Device, Tensor, D};
use candle_nn::rnn::{LSTMConfig, LSTMState, LSTM, RNN};
use candle_nn::{VarBuilder, VarMap};
use mcm_core::graph::Graph;
use rand::Rng;

/// Width of the learned operation-type embedding the Grouper reads.
const OP_EMBED: usize = 16;
/// Per-group size features: shares of the graph's flops, output bytes and parameters.
const SIZE_FEATURES: usize = 3;

/// What the networks read of one graph, computed once.
pub struct Inputs {
    /// Operation features for the Grouper: each node's own numeric features
    /// and the means of its in- and out-neighbours' ([N, 3 * NODE_FEATURES]).
    context: Tensor,
    ops: Tensor,
    buckets: Vec<u32>,
    /// Per node: its share of the graph's flops, output bytes, parameters.
    sizes: Vec<[f64; SIZE_FEATURES]>,
    edges: Vec<(u32, u32)>,
    nodes: usize,
}

impl Inputs {
    pub fn new(graph: &Graph, f: &GraphFeatures, op_buckets: usize) -> Result<Inputs, PolicyError> {
        let (agg_in, agg_out) = neighbour_means(&f.nodes, f)?;
        let context = Tensor::cat(&[&f.nodes, &agg_in, &agg_out], 1)?;
        let n = graph.num_placed();
        let total = |x: &dyn Fn(u32) -> u64| (0..n as u32).map(x).sum::<u64>().max(1) as f64;
        let flops = total(&|u| graph.placed_node(u).flops);
        let bytes = total(&|u| graph.placed_node(u).output_bytes);
        let params = total(&|u| graph.placed_node(u).params);
        let sizes = (0..n as u32)
            .map(|u| {
                let node = graph.placed_node(u);
                [
                    node.flops as f64 / flops,
                    node.output_bytes as f64 / bytes,
                    node.params as f64 / params,
                ]
            })
            .collect();
        Ok(Inputs {
            context,
            ops: f.ops.clone(),
            buckets: f
                .ops
                .to_vec1::<u32>()?
                .into_iter()
                .map(|b| b % op_buckets as u32)
                .collect(),
            sizes,
            edges: graph.placed_edges().iter().map(|e| (e.src, e.dst)).collect(),
            nodes: n,
        })
    }
}

/// One Grouper sample and `k` Placer samples on it (HDP's m = 1, k).
pub struct Draws {
    /// The group of each operation.
    pub groups: Vec<u32>,
    /// Per Placer sample, the device of each group.
    pub devices: Vec<Vec<u32>>,
    /// Per Placer sample, the log-probability of its devices and of the grouping [k].
    pub log_probs: Tensor,
}

impl Draws {
    /// The placement of Placer sample `s`: every operation on its group's device.
    pub fn placement(&self, s: usize) -> Vec<u32> {
        self.groups.iter().map(|&g| self.devices[s][g as usize]).collect()
    }
}

pub struct HdpNet {
    pub varmap: VarMap,
    groups: usize,
    hidden: usize,
    devices: usize,
    tanh_c: f64,
    temperature: f64,
    op_embed: Tensor,
    grouper: Mlp,
    group_in: Linear,
    enc_fw: LSTM,
    enc_bw: LSTM,
    dec: LSTM,
    /// One embedding per device and a start token (the last row).
    dev_embed: Tensor,
    att_keys: Linear,
    att_query: Linear,
    att_v: Linear,
    out: Linear,
}

/// An LSTM whose weights are drawn by `init` (so the seed fixes them) and
/// then taken up by candle-nn's LSTM under the same names.
fn lstm(init: &mut Init, name: &str, inputs: usize, hidden: usize) -> Result<LSTM, PolicyError> {
    let bound = 1.0 / (hidden as f64).sqrt();
    init.uniform(&format!("{name}.weight_ih_l0"), &[4 * hidden, inputs], bound)?;
    init.uniform(&format!("{name}.weight_hh_l0"), &[4 * hidden, hidden], bound)?;
    init.uniform(&format!("{name}.bias_ih_l0"), &[4 * hidden], bound)?;
    init.uniform(&format!("{name}.bias_hh_l0"), &[4 * hidden], bound)?;
    let vb = VarBuilder::from_varmap(init.varmap, init.dtype, &init.device).pp(name);
    Ok(candle_nn::rnn::lstm(inputs, hidden, LSTMConfig::default(), vb)?)
}

impl HdpNet {
    /// Fresh weights from `seed` for `groups` groups on `devices` devices.
    pub fn new(cfg: &HdpConfig, groups: usize, devices: usize, seed: u64) -> Result<HdpNet, PolicyError> {
        if groups == 0 || devices == 0 || cfg.hidden == 0 || cfg.grouper_hidden == 0 {
            return Err(PolicyError::Config(
                "hdp needs at least one group, one device and hidden widths of at least 1".into(),
            ));
        }
        let varmap = VarMap::new();
        let device = Device::Cpu;
        let mut init = Init::new(&varmap, seed, &device, DType::F32);
        let h = cfg.hidden;
        let group_features = cfg.op_buckets + SIZE_FEATURES + groups;
        let op_embed = init.uniform("grouper.op_embed", &[cfg.op_buckets, OP_EMBED], 1.0)?;
        let grouper = Mlp::new(
            &mut init,
            "grouper.mlp",
            3 * NODE_FEATURES + OP_EMBED,
            cfg.grouper_hidden,
            groups,
        )?;
        let group_in = Linear::new(&mut init, "placer.group_in", group_features, h)?;
        let enc_fw = lstm(&mut init, "placer.enc_fw", h, h)?;
        let enc_bw = lstm(&mut init, "placer.enc_bw", h, h)?;
        let dec = lstm(&mut init, "placer.dec", h, h)?;
        let dev_embed = init.uniform("placer.dev_embed", &[devices + 1, h], 1.0)?;
        let att_keys = Linear::new(&mut init, "placer.att_keys", 2 * h, h)?;
        let att_query = Linear::new(&mut init, "placer.att_query", h, h)?;
        let att_v = Linear::new(&mut init, "placer.att_v", h, 1)?;
        let out = Linear::new(&mut init, "placer.out", 3 * h, devices)?;
        Ok(HdpNet {
            varmap,
            groups,
            hidden: h,
            devices,
            tanh_c: cfg.tanh_c,
            temperature: cfg.temperature,
            op_embed,
            grouper,
            group_in,
            enc_fw,
            enc_bw,
            dec,
            dev_embed,
            att_keys,
            att_query,
            att_v,
            out,
        })
    }

    /// The paper's group embedding, per group: the count of each operation
    /// type (as a share of the group), its shares of the graph's sizes, and
    /// which groups it has edges to ([G, buckets + 3 + G]).
    fn group_embeddings(&self, x: &Inputs, groups: &[u32], buckets: usize) -> Result<Tensor, PolicyError> {
        let g = self.groups;
        let width = buckets + SIZE_FEATURES + g;
        let mut e = vec![0f32; g * width];
        let mut members = vec![0usize; g];
        for (u, &grp) in groups.iter().enumerate() {
            let row = grp as usize * width;
            members[grp as usize] += 1;
            e[row + x.buckets[u] as usize] += 1.0;
            for (i, s) in x.sizes[u].iter().enumerate() {
                e[row + buckets + i] += *s as f32;
            }
        }
        for (grp, &m) in members.iter().enumerate() {
            for b in 0..buckets {
                e[grp * width + b] /= m.max(1) as f32;
            }
        }
        for &(s, d) in &x.edges {
            let (a, b) = (groups[s as usize] as usize, groups[d as usize] as usize);
            if a != b {
                e[a * width + buckets + SIZE_FEATURES + b] = 1.0;
            }
        }
        Ok(Tensor::from_vec(e, (g, width), &Device::Cpu)?)
    }

    /// Samples a grouping and `k` placements of its groups.
    pub fn sample(&self, x: &Inputs, k: usize, buckets: usize, rng: &mut impl Rng) -> Result<Draws, PolicyError> {
        if x.nodes == 0 || k == 0 {
            return Err(PolicyError::Input("nothing to place".into()));
        }
        // Grouper: one group per operation, sampled independently.
        let ops = self.op_embed.index_select(&x.ops, 0)?;
        let logits = self.grouper.forward(&Tensor::cat(&[&x.context, &ops], 1)?)?;
        let lp = candle_nn::ops::log_softmax(&squash(&logits, self.tanh_c, self.temperature)?, D::Minus1)?;
        let (groups, group_lp) = draw(&lp, rng)?;
        let group_lp = group_lp.sum_all()?;
        // Placer: encode the group embeddings both ways.
        let emb = self
            .group_in
            .forward(&self.group_embeddings(x, &groups, buckets)?)?
            .relu()?
            .unsqueeze(0)?;
        let fw = self.enc_fw.seq(&emb)?;
        let rev: Vec<u32> = (0..self.groups as u32).rev().collect();
        let rev = Tensor::from_vec(rev, self.groups, &Device::Cpu)?;
        let bw = self.enc_bw.seq(&emb.index_select(&rev, 1)?)?;
        let fw_h = self.enc_fw.states_to_tensor(&fw)?.squeeze(0)?;
        let bw_h = self.enc_bw.states_to_tensor(&bw)?.squeeze(0)?.index_select(&rev, 0)?;
        let enc = Tensor::cat(&[&fw_h, &bw_h], 1)?; // [G, 2H]
        let keys = self.att_keys.forward(&enc)?.unsqueeze(0)?; // [1, G, H]
        let last = fw.last().ok_or_else(|| PolicyError::Input("no groups".into()))?;
        let mut state = LSTMState::new(
            last.h.broadcast_as((k, self.hidden))?.contiguous()?,
            last.c.broadcast_as((k, self.hidden))?.contiguous()?,
        );
        let start = Tensor::from_vec(vec![self.devices as u32; k], k, &Device::Cpu)?;
        let mut input = self.dev_embed.index_select(&start, 0)?;
        let mut devices = vec![Vec::with_capacity(self.groups); k];
        let mut place_lp = Tensor::zeros(k, DType::F32, &Device::Cpu)?;
        for _ in 0..self.groups {
            state = self.dec.step(&input, &state)?;
            let q = self.att_query.forward(&state.h)?.unsqueeze(1)?; // [k, 1, H]
            let e = keys.broadcast_add(&q)?.tanh()?; // [k, G, H]
            let scores = self
                .att_v
                .forward(&e.reshape((k * self.groups, self.hidden))?)?
                .reshape((k, self.groups))?;
            let attn = candle_nn::ops::softmax(&scores, D::Minus1)?;
            let ctx = attn.matmul(&enc)?; // [k, 2H]
            let logits = self.out.forward(&Tensor::cat(&[&state.h, &ctx], 1)?)?;
            let lp = candle_nn::ops::log_softmax(&squash(&logits, self.tanh_c, self.temperature)?, D::Minus1)?;
            let (chosen, chosen_lp) = draw(&lp, rng)?;
            place_lp = (place_lp + chosen_lp)?;
            for (s, &d) in chosen.iter().enumerate() {
                devices[s].push(d);
            }
            let idx = Tensor::from_vec(chosen, k, &Device::Cpu)?;
            input = self.dev_embed.index_select(&idx, 0)?;
        }
        Ok(Draws {
            groups,
            devices,
            log_probs: place_lp.broadcast_add(&group_lp)?,
        })
    }
}
