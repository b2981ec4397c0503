//! Building blocks: seeded parameter initialisation, linear layers, layer
//! norm and the GraphSAGE layer.
//!
//! Layer norm is written with plain tensor ops because candle-nn's fused
//! layer norm has no backward pass on the CPU.

use super::features::GraphFeatures;
use super::PolicyError;
use candle_core::{DType, Device, Tensor, Var, D};
use candle_nn::VarMap;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Creates named variables in a [`VarMap`], drawing values from one seeded
/// RNG in creation order, so a seed fixes every weight.
pub(crate) struct Init<'a> {
    pub varmap: &'a VarMap,
    pub rng: ChaCha8Rng,
    pub device: Device,
    pub dtype: DType,
}

impl<'a> Init<'a> {
    pub fn new(varmap: &'a VarMap, seed: u64, device: &Device, dtype: DType) -> Self {
        Init {
            varmap,
            rng: ChaCha8Rng::seed_from_u64(seed),
            device: device.clone(),
            dtype,
        }
    }

    fn insert(&mut self, name: &str, values: Vec<f64>, shape: &[usize]) -> Result<Tensor, PolicyError> {
        let t = Tensor::from_vec(values, shape, &self.device)?.to_dtype(self.dtype)?;
        let var = Var::from_tensor(&t)?;
        let tensor = var.as_tensor().clone();
        self.varmap
            .data()
            .lock()
            .expect("varmap lock")
            .insert(name.to_string(), var);
        Ok(tensor)
    }

    /// Uniform in [-bound, bound].
    pub fn uniform(&mut self, name: &str, shape: &[usize], bound: f64) -> Result<Tensor, PolicyError> {
        let len = shape.iter().product();
        let values = (0..len).map(|_| self.rng.random_range(-bound..=bound)).collect();
        self.insert(name, values, shape)
    }

    pub fn constant(&mut self, name: &str, shape: &[usize], value: f64) -> Result<Tensor, PolicyError> {
        let len = shape.iter().product();
        self.insert(name, vec![value; len], shape)
    }
}

/// `y = x W^T + b`, initialised like PyTorch (uniform ±1/sqrt(fan_in)).
#[derive(Clone, Debug)]
pub(crate) struct Linear {
    weight: Tensor,
    bias: Tensor,
}

impl Linear {
    pub fn new(init: &mut Init, name: &str, inputs: usize, outputs: usize) -> Result<Linear, PolicyError> {
        let bound = 1.0 / (inputs.max(1) as f64).sqrt();
        Ok(Linear {
            weight: init.uniform(&format!("{name}.weight"), &[outputs, inputs], bound)?,
            bias: init.uniform(&format!("{name}.bias"), &[outputs], bound)?,
        })
    }

    /// A layer that starts at zero output (its inputs still get gradients
    /// through it once its weights move).
    pub fn zeros(init: &mut Init, name: &str, inputs: usize, outputs: usize) -> Result<Linear, PolicyError> {
        Ok(Linear {
            weight: init.constant(&format!("{name}.weight"), &[outputs, inputs], 0.0)?,
            bias: init.constant(&format!("{name}.bias"), &[outputs], 0.0)?,
        })
    }

    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.matmul(&self.weight.t()?)?.broadcast_add(&self.bias)
    }
}

/// Two linear layers with a ReLU between them.
#[derive(Clone, Debug)]
pub(crate) struct Mlp {
    a: Linear,
    b: Linear,
}

impl Mlp {
    pub fn new(init: &mut Init, name: &str, inputs: usize, hidden: usize, outputs: usize) -> Result<Mlp, PolicyError> {
        Ok(Mlp {
            a: Linear::new(init, &format!("{name}.0"), inputs, hidden)?,
            b: Linear::new(init, &format!("{name}.1"), hidden, outputs)?,
        })
    }

    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        self.b.forward(&self.a.forward(x)?.relu()?)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct LayerNorm {
    gamma: Tensor,
    beta: Tensor,
}

const LN_EPS: f64 = 1e-5;

impl LayerNorm {
    pub fn new(init: &mut Init, name: &str, width: usize) -> Result<LayerNorm, PolicyError> {
        Ok(LayerNorm {
            gamma: init.constant(&format!("{name}.weight"), &[width], 1.0)?,
            beta: init.constant(&format!("{name}.bias"), &[width], 0.0)?,
        })
    }

    pub fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mean = x.mean_keepdim(D::Minus1)?;
        let centred = x.broadcast_sub(&mean)?;
        let var = centred.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = centred.broadcast_div(&(var + LN_EPS)?.sqrt()?)?;
        normed.broadcast_mul(&self.gamma)?.broadcast_add(&self.beta)
    }
}

/// One GraphSAGE layer: the node, the mean of its in-neighbours and the mean
/// of its out-neighbours (kept apart: data flows one way), a linear map, a
/// ReLU, then a residual connection and layer norm.
#[derive(Clone, Debug)]
pub(crate) struct SageLayer {
    linear: Linear,
    norm: LayerNorm,
}

impl SageLayer {
    pub fn new(init: &mut Init, name: &str, hidden: usize) -> Result<SageLayer, PolicyError> {
        Ok(SageLayer {
            linear: Linear::new(init, &format!("{name}.linear"), 3 * hidden, hidden)?,
            norm: LayerNorm::new(init, &format!("{name}.norm"), hidden)?,
        })
    }

    pub fn forward(&self, h: &Tensor, f: &GraphFeatures) -> candle_core::Result<Tensor> {
        let (agg_in, agg_out) = neighbour_means(h, f)?;
        let z = self.linear.forward(&Tensor::cat(&[h, &agg_in, &agg_out], 1)?)?.relu()?;
        self.norm.forward(&(h + z)?)
    }
}

/// Means over in- and out-neighbours by gathering along the edge lists and
/// scattering back with `index_add`: O(E * H), never a dense adjacency.
pub(crate) fn neighbour_means(h: &Tensor, f: &GraphFeatures) -> candle_core::Result<(Tensor, Tensor)> {
    let Some((src, dst)) = &f.edges else {
        return Ok((h.zeros_like()?, h.zeros_like()?));
    };
    let zeros = h.zeros_like()?;
    let sum_in = zeros.index_add(dst, &h.index_select(src, 0)?, 0)?;
    let sum_out = zeros.index_add(src, &h.index_select(dst, 0)?, 0)?;
    Ok((sum_in.broadcast_mul(&f.inv_in)?, sum_out.broadcast_mul(&f.inv_out)?))
}
