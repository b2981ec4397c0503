//! The node sequence cut into segments, as GDP's Transformer-XL placer and
//! Mars's segment-level sequence-to-sequence placer read it: nodes in
//! topological order (by depth, ties by index), `S` to a segment, the last
//! one padded. Each segment attends to itself and to the previous
//! segment's states, which are held fixed (no gradient through them): the
//! segment-level recurrence of Transformer-XL. All segments run as one
//! batch.

use crate::policy::PolicyError;
use candle_core::{DType, Device, Tensor};

/// What is added to the attention logit of a key that is not there (the
/// padding, the first segment's missing memory): its weight underflows to 0.
const ABSENT: f64 = -1e9;

pub(crate) struct Segments {
    /// Nodes in sequence order (indices into the graph's nodes) [N].
    order: Tensor,
    /// Where each node sits in the sequence [N].
    inverse: Tensor,
    nodes: usize,
    /// Segment length S and count B.
    len: usize,
    count: usize,
    /// Added to the attention logits [B, S, 2S]: 0 where the key (memory
    /// then current segment) is a node, [`ABSENT`] where it is not.
    mask: Tensor,
}

impl Segments {
    /// The sequence of nodes at these depths, in segments of `len`.
    pub fn new(depth: &[f32], len: usize, device: &Device, dtype: DType) -> Result<Segments, PolicyError> {
        let n = depth.len();
        if n == 0 || len == 0 {
            return Err(PolicyError::Input(format!(
                "segments need nodes ({n}) and a positive segment length ({len})"
            )));
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|&a, &b| depth[a as usize].total_cmp(&depth[b as usize]).then(a.cmp(&b)));
        let mut inverse = vec![0u32; n];
        for (i, &u) in order.iter().enumerate() {
            inverse[u as usize] = i as u32;
        }
        let count = n.div_ceil(len);
        let mut mask = vec![0.0f64; count * len * 2 * len];
        for b in 0..count {
            for q in 0..len {
                for k in 0..2 * len {
                    let present = if k < len { b > 0 } else { b * len + (k - len) < n };
                    if !present {
                        mask[(b * len + q) * 2 * len + k] = ABSENT;
                    }
                }
            }
        }
        Ok(Segments {
            order: Tensor::from_vec(order, n, device)?,
            inverse: Tensor::from_vec(inverse, n, device)?,
            nodes: n,
            len,
            count,
            mask: Tensor::from_vec(mask, (count, len, 2 * len), device)?.to_dtype(dtype)?,
        })
    }

    /// Node rows [N, H] as segments [B, S, H], padded with zeros.
    pub fn split(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        let width = h.dim(1)?;
        let seq = h.index_select(&self.order, 0)?;
        let pad = self.count * self.len - self.nodes;
        let seq = if pad > 0 {
            Tensor::cat(&[&seq, &Tensor::zeros((pad, width), h.dtype(), h.device())?], 0)?
        } else {
            seq
        };
        seq.reshape((self.count, self.len, width))
    }

    /// Segments [B, S, H] back to node rows [N, H] in the graph's order.
    pub fn merge(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let width = x.dim(2)?;
        x.reshape((self.count * self.len, width))?
            .narrow(0, 0, self.nodes)?
            .index_select(&self.inverse, 0)
    }

    /// Each segment behind the previous one's states [B, 2S, H]; the memory
    /// is detached (Transformer-XL's cached states), the first one zeros.
    pub fn with_memory(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (b, s, h) = x.dims3()?;
        let zero = Tensor::zeros((1, s, h), x.dtype(), x.device())?;
        let memory = if b > 1 {
            Tensor::cat(&[&zero, &x.narrow(0, 0, b - 1)?.detach()], 0)?
        } else {
            zero
        };
        Tensor::cat(&[&memory, x], 1)
    }

    /// Scaled dot-product attention of queries [B, S, H] over keys and
    /// values [B, 2S, H] (from [`Segments::with_memory`]), absent keys masked.
    pub fn attend(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> candle_core::Result<Tensor> {
        let scale = 1.0 / (q.dim(2)? as f64).sqrt();
        let logits = (q.matmul(&k.transpose(1, 2)?.contiguous()?)? * scale)?.broadcast_add(&self.mask)?;
        candle_nn::ops::softmax(&logits, 2)?.matmul(&v.contiguous()?)
    }

    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.count
    }

    #[cfg(test)]
    pub fn segment_len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::Segments;
    use candle_core::{DType, Device, Tensor};

    #[test]
    fn split_then_merge_is_the_identity_and_orders_by_depth() {
        let depth = [0.5, 0.0, 1.0, 0.25, 0.75];
        let s = Segments::new(&depth, 2, &Device::Cpu, DType::F32).unwrap();
        assert_eq!((s.count(), s.segment_len()), (3, 2));
        let h = Tensor::arange(0f32, 10.0, &Device::Cpu)
            .unwrap()
            .reshape((5, 2))
            .unwrap();
        let x = s.split(&h).unwrap();
        // Sequence: nodes 1, 3, 0, 4, 2 (by depth), then one padding row.
        let first: Vec<f32> = x.get(0).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(first, vec![2.0, 3.0, 6.0, 7.0]);
        let back: Vec<f32> = s.merge(&x).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(back, (0..10).map(|i| i as f32).collect::<Vec<_>>());
    }

    #[test]
    fn attention_never_reads_padding_or_a_missing_memory() {
        // Three nodes in segments of two: the first segment has no memory,
        // the second one padding. Values at absent keys are huge; a read of
        // one would show.
        let s = Segments::new(&[0.0, 0.5, 1.0], 2, &Device::Cpu, DType::F32).unwrap();
        let h = Tensor::ones((3, 1), DType::F32, &Device::Cpu).unwrap();
        let x = s.split(&h).unwrap();
        let kv = s.with_memory(&x).unwrap();
        // Padding and the zero memory become 1e6 in the values.
        let absent = kv.ones_like().unwrap().sub(&kv).unwrap().affine(1e6, 0.0).unwrap();
        let v = (&kv + absent).unwrap();
        let out: Vec<f32> = s.attend(&x, &kv, &v).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        for o in out {
            assert!((o - 1.0).abs() < 1e-4, "{o}");
        }
    }
}
