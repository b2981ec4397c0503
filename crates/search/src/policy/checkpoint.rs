//! Checkpoints: the weights as safetensors (`STEM.safetensors`) and a JSON
//! sidecar (`STEM.json`) with the configuration, the format and feature
//! schema versions, every tensor's shape and a checksum of the weights file.
//!
//! Both files are written to temporaries and renamed into place, weights
//! first; the sidecar's checksum then also catches a crash between the two
//! renames (new weights, old sidecar).

use super::features::FEATURE_SCHEMA;
use super::net::Policy;
use super::{PolicyConfig, PolicyError};
use candle_core::{DType, Device, Tensor};
use mcm_core::digest::fnv1a;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Version of the checkpoint layout; loading refuses any other.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    format_version: u32,
    feature_schema: u32,
    config: PolicyConfig,
    dtype: String,
    tensors: BTreeMap<String, Vec<usize>>,
    /// FNV-1a 64 of the weights file, in hex.
    checksum: String,
}

/// The weights file and the sidecar of a checkpoint stem.
pub fn paths(stem: &Path) -> (PathBuf, PathBuf) {
    let with = |ext: &str| {
        let mut s = stem.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    (with(".safetensors"), with(".json"))
}

fn io(path: &Path, e: impl std::fmt::Display) -> PolicyError {
    PolicyError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

fn corrupt(path: &Path, message: impl Into<String>) -> PolicyError {
    PolicyError::Corrupt {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn dtype_name(d: DType) -> &'static str {
    d.as_str()
}

fn parse_dtype(s: &str) -> Option<DType> {
    [DType::F32, DType::F64, DType::F16, DType::BF16]
        .into_iter()
        .find(|d| d.as_str() == s)
}

/// Saves `policy` as `STEM.safetensors` and `STEM.json`.
pub fn save(policy: &Policy, stem: &Path) -> Result<(), PolicyError> {
    let (weights, sidecar) = paths(stem);
    let tmp_weights = weights.with_extension("safetensors.tmp");
    let tmp_sidecar = sidecar.with_extension("json.tmp");
    let vars = policy.vars();
    let tensors: HashMap<String, Tensor> = vars.iter().map(|(k, v)| (k.clone(), v.as_tensor().clone())).collect();
    candle_core::safetensors::save(&tensors, &tmp_weights).map_err(|e| io(&tmp_weights, e))?;
    let bytes = std::fs::read(&tmp_weights).map_err(|e| io(&tmp_weights, e))?;
    let meta = Meta {
        format_version: FORMAT_VERSION,
        feature_schema: FEATURE_SCHEMA,
        config: policy.config().clone(),
        dtype: dtype_name(policy.dtype()).to_string(),
        tensors: vars.iter().map(|(k, v)| (k.clone(), v.dims().to_vec())).collect(),
        checksum: fnv1a(&bytes),
    };
    let json = serde_json::to_string_pretty(&meta).map_err(|e| io(&tmp_sidecar, e))?;
    std::fs::write(&tmp_sidecar, json).map_err(|e| io(&tmp_sidecar, e))?;
    std::fs::rename(&tmp_weights, &weights).map_err(|e| io(&weights, e))?;
    std::fs::rename(&tmp_sidecar, &sidecar).map_err(|e| io(&sidecar, e))?;
    Ok(())
}

/// Names the first field where two configurations differ in shape.
fn config_mismatch(found: &PolicyConfig, expected: &PolicyConfig) -> Option<String> {
    let fields = [
        ("layers", found.layers, expected.layers),
        ("hidden", found.hidden, expected.hidden),
        ("iterations", found.iterations, expected.iterations),
        ("op_buckets", found.op_buckets, expected.op_buckets),
    ];
    fields
        .iter()
        .find(|(_, a, b)| a != b)
        .map(|(name, a, b)| format!("checkpoint has {name}={a} but config says {b}"))
}

/// Whether every element of `t` is a finite number.
fn all_finite(t: &Tensor) -> Result<bool, PolicyError> {
    let values = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
    Ok(values.iter().all(|v| v.is_finite()))
}

/// `e` with, when it is a missing or unreadable file at `shipped` (the
/// checkpoint a strategy ships with), `what` added: what that checkpoint is,
/// how to make one and how to do without. Every learned strategy's loading
/// error says it the same way.
pub fn shipped_hint(e: PolicyError, stem: &Path, shipped: &str, what: &str) -> PolicyError {
    match e {
        PolicyError::Io { path, message } if stem == Path::new(shipped) => PolicyError::Io {
            path,
            message: format!("{message} ({what})"),
        },
        e => e,
    }
}

/// Loads the checkpoint at `stem` onto `device`. With `expected`, refuses a
/// checkpoint whose network shape differs from it (the seed may differ).
pub fn load(stem: &Path, expected: Option<&PolicyConfig>, device: &Device) -> Result<Policy, PolicyError> {
    let (weights, sidecar) = paths(stem);
    let text = std::fs::read_to_string(&sidecar).map_err(|e| io(&sidecar, e))?;
    let meta: Meta =
        serde_json::from_str(&text).map_err(|e| corrupt(&sidecar, format!("not a checkpoint sidecar: {e}")))?;
    if meta.format_version != FORMAT_VERSION {
        return Err(PolicyError::Mismatch(format!(
            "checkpoint format version {} but this build reads version {FORMAT_VERSION}",
            meta.format_version
        )));
    }
    if meta.feature_schema != FEATURE_SCHEMA {
        return Err(PolicyError::Mismatch(format!(
            "checkpoint was trained on feature schema {} but this build computes schema {FEATURE_SCHEMA}",
            meta.feature_schema
        )));
    }
    if let Some(msg) = expected.and_then(|e| config_mismatch(&meta.config, e)) {
        return Err(PolicyError::Mismatch(msg));
    }
    let dtype = parse_dtype(&meta.dtype).ok_or_else(|| corrupt(&sidecar, format!("unknown dtype `{}`", meta.dtype)))?;
    let bytes = std::fs::read(&weights).map_err(|e| io(&weights, e))?;
    let sum = fnv1a(&bytes);
    if sum != meta.checksum {
        return Err(corrupt(
            &weights,
            format!(
                "checksum {sum} differs from {} recorded in the sidecar (truncated, altered, or from another save)",
                meta.checksum
            ),
        ));
    }
    let stored = candle_core::safetensors::load_buffer(&bytes, device)
        .map_err(|e| corrupt(&weights, format!("not a valid safetensors file: {e}")))?;
    let shapes: BTreeMap<String, Vec<usize>> = stored.iter().map(|(k, t)| (k.clone(), t.dims().to_vec())).collect();
    if shapes != meta.tensors {
        return Err(corrupt(
            &sidecar,
            "the tensors it lists differ from those in the weights file",
        ));
    }
    let stored_count: u128 = stored.values().map(|t| t.elem_count() as u128).sum();
    let needed = Policy::parameters_for(&meta.config);
    if stored_count != needed {
        return Err(PolicyError::Mismatch(format!(
            "the weights file holds {stored_count} parameters but its configuration needs {needed}"
        )));
    }
    for (name, t) in &stored {
        if t.dtype() != dtype {
            return Err(corrupt(
                &sidecar,
                format!(
                    "it says the weights are {} but `{name}` is {}",
                    meta.dtype,
                    t.dtype().as_str()
                ),
            ));
        }
        if !all_finite(t)? {
            return Err(corrupt(
                &weights,
                format!("tensor `{name}` holds NaN or infinite weights (saved from a diverged training run?)"),
            ));
        }
    }
    let policy = Policy::new(&meta.config, device, dtype).map_err(|e| match e {
        PolicyError::Config(m) => corrupt(&sidecar, format!("its configuration cannot be used: {m}")),
        e => e,
    })?;
    let vars = policy.vars();
    for (name, var) in &vars {
        let Some(t) = stored.get(name) else {
            return Err(PolicyError::Mismatch(format!("checkpoint lacks tensor `{name}`")));
        };
        if t.dims() != var.dims() {
            return Err(PolicyError::Mismatch(format!(
                "tensor `{name}` has shape {:?} in the checkpoint but the config needs {:?}",
                t.dims(),
                var.dims()
            )));
        }
        var.set(&t.to_dtype(dtype)?)?;
    }
    if let Some(extra) = stored.keys().find(|k| !vars.iter().any(|(n, _)| n == *k)) {
        return Err(PolicyError::Mismatch(format!(
            "checkpoint has tensor `{extra}`, which this network does not"
        )));
    }
    Ok(policy)
}
