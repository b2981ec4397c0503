//! Importing ONNX models (`*.onnx`) as computation graphs.
//!
//! The model is decoded with `prost` from hand-written messages that cover
//! only the part of `onnx.proto` this needs (no build script, no `protoc`);
//! every other field, weight data included, is skipped while decoding.
//!
//! The conventions are those of the Python reference importer in
//! `tools/make_onnx_fixtures.py` (see `tools/README.md`):
//!
//! * Nodes: one `placeholder` per graph input that is not an initializer,
//!   one `get_attr` per initializer (`params` = its bytes), and one node per
//!   operator, with `op` the lower-cased op type and `id` the node name
//!   (`OpType_N` when the node has none; ids are made unique). Graph outputs
//!   get no node.
//! * Edges: producer → consumer for each tensor an operator reads; parallel
//!   edges are merged, keeping the largest bytes. Bytes are the tensor's.
//! * Shapes come from the graph inputs, `value_info`, the graph outputs and
//!   the initializers' dims, as ONNX shape inference leaves them. A tensor
//!   without a known shape (or with a symbolic dimension) counts 0 bytes.
//! * FLOPs: see [`op_flops`]. Operators this importer does not know count 0.
//! * Operators computed only from constants (no path from a graph input, no
//!   initializer upstream, e.g. `Constant`) are marked replicable.

use super::{Graph, GraphError, Node};
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The subset of `onnx.proto` (proto2) the importer reads. Field numbers
/// are those of the official file; unlisted fields are skipped.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelProto {
        #[prost(int64, tag = "1")]
        pub ir_version: i64,
        #[prost(message, optional, tag = "7")]
        pub graph: Option<GraphProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GraphProto {
        #[prost(message, repeated, tag = "1")]
        pub node: Vec<NodeProto>,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(message, repeated, tag = "5")]
        pub initializer: Vec<TensorProto>,
        #[prost(message, repeated, tag = "11")]
        pub input: Vec<ValueInfoProto>,
        #[prost(message, repeated, tag = "12")]
        pub output: Vec<ValueInfoProto>,
        #[prost(message, repeated, tag = "13")]
        pub value_info: Vec<ValueInfoProto>,
        #[prost(message, repeated, tag = "15")]
        pub sparse_initializer: Vec<SparseTensorProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeProto {
        #[prost(string, repeated, tag = "1")]
        pub input: Vec<String>,
        #[prost(string, repeated, tag = "2")]
        pub output: Vec<String>,
        #[prost(string, tag = "3")]
        pub name: String,
        #[prost(string, tag = "4")]
        pub op_type: String,
        #[prost(message, repeated, tag = "5")]
        pub attribute: Vec<AttributeProto>,
        #[prost(string, tag = "7")]
        pub domain: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttributeProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(int64, optional, tag = "3")]
        pub i: Option<i64>,
        #[prost(int64, repeated, tag = "8")]
        pub ints: Vec<i64>,
        /// AttributeType: 2 = INT, 7 = INTS.
        #[prost(int32, tag = "20")]
        pub r#type: i32,
    }

    /// Only the sizes: `raw_data` (9) and the typed data fields are skipped.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorProto {
        #[prost(int64, repeated, tag = "1")]
        pub dims: Vec<i64>,
        #[prost(int32, tag = "2")]
        pub data_type: i32,
        #[prost(string, tag = "8")]
        pub name: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SparseTensorProto {
        #[prost(message, optional, tag = "1")]
        pub values: Option<TensorProto>,
        #[prost(int64, repeated, tag = "3")]
        pub dims: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueInfoProto {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub r#type: Option<TypeProto>,
    }

    /// Only `tensor_type` of the `value` oneof; sequences, maps, ... are
    /// skipped and so have no known shape.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TypeProto {
        #[prost(message, optional, tag = "1")]
        pub tensor_type: Option<TypeProtoTensor>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TypeProtoTensor {
        #[prost(int32, tag = "1")]
        pub elem_type: i32,
        #[prost(message, optional, tag = "2")]
        pub shape: Option<TensorShapeProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorShapeProto {
        #[prost(message, repeated, tag = "1")]
        pub dim: Vec<Dimension>,
    }

    /// `value` is a oneof in onnx.proto; two optional fields decode the same.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Dimension {
        #[prost(int64, optional, tag = "1")]
        pub dim_value: Option<i64>,
        #[prost(string, optional, tag = "2")]
        pub dim_param: Option<String>,
    }
}

use proto::{AttributeProto, GraphProto, ModelProto, NodeProto, TypeProto};

/// Imports an ONNX model file.
pub fn import_onnx(path: &Path) -> Result<Graph, GraphError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        GraphError::new(format!("cannot read ONNX file `{shown}`: {e}")).with_help("check the path to the .onnx file")
    })?;
    import_onnx_bytes(&bytes, &shown)
}

/// The most entries (nodes, initializers, inputs, outputs, value infos) a
/// graph may hold: decoding makes a few hundred bytes of each, whatever its
/// size in the file (an empty node is 2 bytes: 10 MB of them took 5 GB).
const MAX_GRAPH_ENTRIES: usize = 1_000_000;

/// Counts the entries of `ModelProto.graph`'s repeated fields without
/// decoding them, over every occurrence of the graph field (the decoder
/// merges them); a walk that breaks off counts what it saw (the decoder
/// then says why).
fn graph_entries(bytes: &[u8]) -> usize {
    fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*at)?;
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    // Visits each field of a message: (field number, its bytes if
    // length-delimited); groups (wire types 3 and 4) are stepped over, as
    // the decoder does.
    fn fields<'a>(b: &'a [u8], mut visit: impl FnMut(u64, Option<&'a [u8]>)) -> Option<()> {
        let mut at = 0;
        let mut groups = 0usize;
        while at < b.len() {
            let key = varint(b, &mut at)?;
            match key & 7 {
                0 => {
                    varint(b, &mut at)?;
                }
                1 => at = at.checked_add(8)?,
                5 => at = at.checked_add(4)?,
                2 => {
                    let len = usize::try_from(varint(b, &mut at)?).ok()?;
                    let end = at.checked_add(len).filter(|&e| e <= b.len())?;
                    if groups == 0 {
                        visit(key >> 3, Some(&b[at..end]));
                    }
                    at = end;
                }
                3 => groups += 1,
                4 => groups = groups.checked_sub(1)?,
                _ => return None,
            }
        }
        Some(())
    }
    let mut graphs = Vec::new();
    let _ = fields(bytes, |f, body| {
        if let (7, Some(b)) = (f, body) {
            graphs.push(b);
        }
    });
    let mut n = 0;
    for g in graphs {
        let _ = fields(g, |f, body| {
            if body.is_some() && matches!(f, 1 | 5 | 11 | 12 | 13 | 15) {
                n += 1;
            }
        });
    }
    n
}

/// Imports an ONNX model from its bytes. `name` is what error messages call
/// the input (usually the file's path); its file stem names the graph when
/// the model's graph has no name.
pub fn import_onnx_bytes(bytes: &[u8], name: &str) -> Result<Graph, GraphError> {
    if bytes.is_empty() {
        return Err(
            GraphError::new(format!("`{name}` is not an ONNX model: the file is empty"))
                .with_help("export the model again; an ONNX file is a serialized onnx.ModelProto"),
        );
    }
    let n = graph_entries(bytes);
    if n > MAX_GRAPH_ENTRIES {
        return Err(GraphError::new(format!(
            "`{name}` holds {n} nodes, tensors and values in its graph: more than {MAX_GRAPH_ENTRIES}"
        ))
        .with_help("a model this large (or a damaged file) is beyond what this tool places"));
    }
    let model = ModelProto::decode(bytes).map_err(|e| {
        GraphError::new(format!(
            "`{name}` is not a valid ONNX model: it cannot be decoded ({e})"
        ))
        .with_help(if e.to_string().contains("buffer underflow") {
            "a field runs past the end of the file: it is cut short (truncated) or corrupt; copy \
             or export it again"
                .to_string()
        } else {
            not_onnx_help(bytes)
        })
    })?;
    let Some(graph) = model.graph else {
        let what = if model.ir_version == 0 {
            "is not an ONNX model: it decodes as protobuf but has neither an IR version nor a graph"
        } else {
            "is an ONNX file without a graph (`ModelProto.graph` is missing)"
        };
        return Err(GraphError::new(format!("`{name}` {what}")).with_help(not_onnx_help(bytes)));
    };
    let graph_name = if graph.name.is_empty() {
        Path::new(name)
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("graph")
            .to_string()
    } else {
        graph.name.clone()
    };
    let (nodes, edges) = build(&graph).map_err(|e| GraphError {
        message: format!("`{name}`: {}", e.message),
        help: e.help,
    })?;
    Graph::new(graph_name, nodes, edges).map_err(|e| GraphError {
        message: format!("`{name}`: {}", e.message),
        help: e.help,
    })
}

/// A hint on what a file that is not a valid model may be instead.
fn not_onnx_help(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(8)];
    let text_start = bytes.iter().copied().find(|b| !b.is_ascii_whitespace()).unwrap_or(0);
    if crate::textfile::is_gzip(head) {
        "this is gzip data; an ONNX model is not compressed (a `.json.gz` graph file is read \
         directly, not imported)"
            .into()
    } else if text_start == b'{' || text_start == b'[' {
        "this looks like JSON; a graph file in mcmpart's format is read directly, not imported".into()
    } else if head.starts_with(b"PK") {
        "this is a zip archive (a PyTorch checkpoint?); export the model to ONNX with \
         torch.onnx.export first"
            .into()
    } else if head.starts_with(&[0x80]) {
        "this looks like a Python pickle; export the model to ONNX first".into()
    } else {
        "the file is cut short or corrupt, or not an ONNX model; export the model again".into()
    }
}

/// What is known of a tensor: its dims (None: unknown shape) and the bits
/// of one element (None: unknown element type).
#[derive(Clone, Debug, Default)]
struct TensorInfo {
    dims: Option<Vec<u64>>,
    bits: Option<u64>,
}

impl TensorInfo {
    fn numel(&self) -> Option<u64> {
        self.dims.as_ref().map(|d| product(d))
    }

    fn bytes(&self) -> u64 {
        match (self.numel(), self.bits) {
            (Some(n), Some(b)) => {
                let bits = (n as u128) * (b as u128);
                u64::try_from(bits.div_ceil(8)).unwrap_or(u64::MAX)
            }
            _ => 0,
        }
    }

    fn known(&self) -> bool {
        self.dims.is_some() && self.bits.is_some()
    }
}

fn product(d: &[u64]) -> u64 {
    d.iter().fold(1u64, |a, &x| a.saturating_mul(x))
}

/// Bits of one element of an ONNX `TensorProto.DataType`, None for unknown
/// types and for strings (whose size is not fixed).
fn elem_bits(data_type: i32) -> Option<u64> {
    Some(match data_type {
        1 | 6 | 12 => 32,       // FLOAT, INT32, UINT32
        2 | 3 | 9 => 8,         // UINT8, INT8, BOOL
        4 | 5 | 10 | 16 => 16,  // UINT16, INT16, FLOAT16, BFLOAT16
        7 | 11 | 13 | 14 => 64, // INT64, DOUBLE, UINT64, COMPLEX64
        15 => 128,              // COMPLEX128
        17..=20 | 24 => 8,      // FLOAT8 variants, FLOAT8E8M0
        21..=23 => 4,           // UINT4, INT4, FLOAT4E2M1 (packed)
        25 | 26 => 2,           // UINT2, INT2 (packed)
        27 | 28 => 6,           // FLOAT6 variants (packed)
        _ => return None,       // UNDEFINED, STRING, future types
    })
}

fn dims_of(raw: &[i64]) -> Option<Vec<u64>> {
    raw.iter().map(|&d| u64::try_from(d).ok()).collect()
}

fn type_info(t: Option<&TypeProto>) -> TensorInfo {
    let Some(tt) = t.and_then(|t| t.tensor_type.as_ref()) else {
        return TensorInfo::default();
    };
    let dims = tt.shape.as_ref().and_then(|s| {
        s.dim
            .iter()
            .map(|d| match (d.dim_value, &d.dim_param) {
                (Some(v), None) => u64::try_from(v).ok(),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>()
    });
    TensorInfo {
        dims,
        bits: elem_bits(tt.elem_type),
    }
}

/// The shapes of all tensors, in the reference's order of precedence:
/// inputs, then value_info, then outputs, then initializers (a later source
/// replaces an earlier one unless it knows less).
fn tensor_infos(g: &GraphProto) -> HashMap<&str, TensorInfo> {
    let mut m: HashMap<&str, TensorInfo> = HashMap::new();
    let vis = g.input.iter().chain(&g.value_info).chain(&g.output);
    for vi in vis {
        let info = type_info(vi.r#type.as_ref());
        match m.get(vi.name.as_str()) {
            Some(old) if old.known() && !info.known() => {}
            _ => {
                m.insert(vi.name.as_str(), info);
            }
        }
    }
    for t in &g.initializer {
        m.insert(
            t.name.as_str(),
            TensorInfo {
                dims: dims_of(&t.dims),
                bits: elem_bits(t.data_type),
            },
        );
    }
    for s in &g.sparse_initializer {
        if let Some(v) = &s.values {
            m.insert(
                v.name.as_str(),
                TensorInfo {
                    dims: dims_of(&s.dims),
                    bits: elem_bits(v.data_type),
                },
            );
        }
    }
    m
}

fn attr<'a>(n: &'a NodeProto, name: &str) -> Option<&'a AttributeProto> {
    n.attribute.iter().find(|a| a.name == name)
}

fn attr_int(n: &NodeProto, name: &str) -> Option<i64> {
    attr(n, name).and_then(|a| a.i)
}

fn attr_ints(n: &NodeProto, name: &str) -> Option<Vec<u64>> {
    attr(n, name).and_then(|a| dims_of(&a.ints))
}

/// Data movement and creation: no arithmetic. The first eleven are the
/// reference's list; the rest are data movement it does not name.
const ZERO_FLOP: &[&str] = &[
    "Flatten",
    "Reshape",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Identity",
    "Concat",
    "Gather",
    "Slice",
    "Shape",
    "Dropout",
    "Size",
    "Expand",
    "Tile",
    "Split",
    "SplitToSequence",
    "Pad",
    "Cast",
    "CastLike",
    "Constant",
    "ConstantOfShape",
    "Range",
    "GatherElements",
    "GatherND",
    "ScatterElements",
    "ScatterND",
    "Scatter",
    "DepthToSpace",
    "SpaceToDepth",
    "NonZero",
    "EyeLike",
    "Compress",
    "ReverseSequence",
    "Optional",
    "OptionalGetElement",
    "OptionalHasElement",
];

/// Standard ONNX operators counted, as the reference counts every operator
/// it does not name, at one FLOP per output element: elementwise arithmetic,
/// activations, comparisons and logic, normalisations, reductions, global
/// pooling, resizing and the like.
const PER_ELEMENT: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "BatchNormalization",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "Celu",
    "Ceil",
    "Clip",
    "Cos",
    "Cosh",
    "CumSum",
    "DequantizeLinear",
    "Div",
    "DynamicQuantizeLinear",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "GlobalAveragePool",
    "GlobalLpPool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "GroupNormalization",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "InstanceNormalization",
    "IsInf",
    "IsNaN",
    "LRN",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "LpNormalization",
    "Max",
    "MaxRoiPool",
    "MaxUnpool",
    "Mean",
    "MeanVarianceNormalization",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "PRelu",
    "Pow",
    "QuantizeLinear",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Resize",
    "RMSNormalization",
    "RoiAlign",
    "Round",
    "Selu",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "SkipLayerNormalization",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Sub",
    "Sum",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "TopK",
    "Trilu",
    "Upsample",
    "Where",
    "Xor",
];

/// FLOPs of one execution of an operator, following the reference:
///
/// * `Conv`: 2 · out_numel · (Cin/group) · prod(kernel), from the weight's
///   shape (or the input's channels, `group` and `kernel_shape`);
///   `ConvInteger` and `QLinearConv` alike.
/// * `ConvTranspose` (not in the reference, which would count it per
///   element): 2 · in_numel · (Cout/group) · prod(kernel), as the PyTorch
///   exporter counts `conv_transpose`.
/// * `Gemm`: 2 · M · N · K (the bias is not counted); `MatMul`, batched too,
///   2 · out_numel · K; `MatMulInteger` and `QLinearMatMul` alike.
/// * `MaxPool`, `AveragePool`, `LpPool`: prod(kernel_shape) · out_numel.
/// * `Softmax`: 5 · out_numel.
/// * [`ZERO_FLOP`] ops: 0. [`PER_ELEMENT`] ops: out_numel.
/// * Any other operator, and operators of a domain other than the default
///   one: 0.
///
/// A shape that is not known makes the count 0.
fn op_flops(n: &NodeProto, info: &dyn Fn(&str) -> TensorInfo) -> u64 {
    if !(n.domain.is_empty() || n.domain == "ai.onnx") {
        return 0;
    }
    let input = |i: usize| -> TensorInfo {
        n.input
            .get(i)
            .filter(|s| !s.is_empty())
            .map(|s| info(s))
            .unwrap_or_default()
    };
    let out_numel = || -> Option<u64> {
        let o = n.output.first().filter(|s| !s.is_empty())?;
        info(o).numel()
    };
    let mul = |xs: &[u64]| xs.iter().fold(1u64, |a, &x| a.saturating_mul(x));
    let op = n.op_type.as_str();
    let f: Option<u64> = match op {
        "Conv" | "ConvInteger" | "QLinearConv" => (|| {
            let w_at = if op == "QLinearConv" { 3 } else { 1 };
            let per_out = match input(w_at).dims {
                Some(w) if w.len() >= 2 => mul(&w[1..]),
                _ => {
                    let x = input(0).dims?;
                    let group = attr_int(n, "group").unwrap_or(1).max(1) as u64;
                    let cin = *x.get(1)?;
                    (cin / group).saturating_mul(mul(&attr_ints(n, "kernel_shape")?))
                }
            };
            Some(mul(&[2, out_numel()?, per_out]))
        })(),
        "ConvTranspose" => (|| {
            let w = input(1).dims?;
            if w.len() < 2 {
                return None;
            }
            Some(mul(&[2, input(0).numel()?, mul(&w[1..])]))
        })(),
        "Gemm" => (|| {
            let k = match input(0).dims {
                Some(a) if a.len() == 2 => {
                    if attr_int(n, "transA").unwrap_or(0) != 0 {
                        a[0]
                    } else {
                        a[1]
                    }
                }
                _ => {
                    let b = input(1).dims?;
                    if b.len() != 2 {
                        return None;
                    }
                    if attr_int(n, "transB").unwrap_or(0) != 0 {
                        b[1]
                    } else {
                        b[0]
                    }
                }
            };
            Some(mul(&[2, out_numel()?, k]))
        })(),
        "MatMul" | "MatMulInteger" | "QLinearMatMul" => (|| {
            let b_at = if op == "QLinearMatMul" { 3 } else { 1 };
            let k = match input(0).dims {
                Some(a) if !a.is_empty() => *a.last()?,
                _ => {
                    let b = input(b_at).dims?;
                    match b.len() {
                        0 => return None,
                        1 => b[0],
                        l => b[l - 2],
                    }
                }
            };
            Some(mul(&[2, out_numel()?, k]))
        })(),
        "MaxPool" | "AveragePool" | "LpPool" => (|| Some(mul(&[out_numel()?, mul(&attr_ints(n, "kernel_shape")?)])))(),
        "Softmax" => out_numel().map(|x| x.saturating_mul(5)),
        _ if ZERO_FLOP.contains(&op) => Some(0),
        _ if PER_ELEMENT.contains(&op) => out_numel(),
        _ => Some(0),
    };
    f.unwrap_or(0)
}

type Edges = Vec<(usize, usize, Option<u64>)>;

/// Hands out unique node ids. Explicit names (graph inputs, initializers,
/// node names) are reserved up front: the first taker of a name keeps it,
/// later ones get `NAME_1`, `NAME_2`, ...; nodes without a name get
/// `OpType_0`, `OpType_1`, ..., skipping reserved and used ids.
struct Ids<'a> {
    reserved: HashSet<&'a str>,
    used: HashSet<String>,
    next: HashMap<String, u64>,
}

impl<'a> Ids<'a> {
    fn new(reserved: impl IntoIterator<Item = &'a str>) -> Ids<'a> {
        Ids {
            reserved: reserved.into_iter().filter(|s| !s.is_empty()).collect(),
            used: HashSet::new(),
            next: HashMap::new(),
        }
    }

    /// The id for an explicit name.
    fn named(&mut self, name: &str) -> String {
        if self.used.insert(name.to_string()) {
            return name.to_string();
        }
        self.numbered(name, 1)
    }

    /// A generated id `BASE_N`.
    fn numbered(&mut self, base: &str, from: u64) -> String {
        let k = self.next.entry(base.to_string()).or_insert(from);
        loop {
            let c = format!("{base}_{k}");
            *k += 1;
            if !self.reserved.contains(c.as_str()) && self.used.insert(c.clone()) {
                return c;
            }
        }
    }

    fn id(&mut self, name: &str, fallback: &str) -> String {
        if name.is_empty() {
            self.numbered(fallback, 0)
        } else {
            self.named(name)
        }
    }
}

/// The nodes and edges of the graph, before validation.
fn build(g: &GraphProto) -> Result<(Vec<Node>, Edges), GraphError> {
    let infos = tensor_infos(g);
    let info = |name: &str| infos.get(name).cloned().unwrap_or_default();
    let tensor_bytes = |name: &str| infos.get(name).map_or(0, TensorInfo::bytes);

    let mut nodes: Vec<Node> = Vec::new();
    // Which node defines each tensor.
    let mut producer: HashMap<&str, usize> = HashMap::new();

    let inits: HashSet<&str> = g
        .initializer
        .iter()
        .map(|t| t.name.as_str())
        .chain(
            g.sparse_initializer
                .iter()
                .filter_map(|s| s.values.as_ref().map(|v| v.name.as_str())),
        )
        .collect();
    let mut ids = Ids::new(
        g.input
            .iter()
            .map(|v| v.name.as_str())
            .chain(inits.iter().copied())
            .chain(g.node.iter().map(|n| n.name.as_str())),
    );

    // Graph inputs that are not initializers.
    for vi in &g.input {
        if inits.contains(vi.name.as_str()) || producer.contains_key(vi.name.as_str()) {
            continue;
        }
        let id = ids.id(&vi.name, "input");
        let mut node = Node::new(id);
        node.op = "placeholder".into();
        node.output_bytes = tensor_bytes(&vi.name);
        if !vi.name.is_empty() {
            producer.insert(vi.name.as_str(), nodes.len());
        }
        nodes.push(node);
    }
    let n_inputs = nodes.len();

    // Initializers: weights.
    let init_names = g.initializer.iter().map(|t| t.name.as_str()).chain(
        g.sparse_initializer
            .iter()
            .filter_map(|s| s.values.as_ref().map(|v| v.name.as_str())),
    );
    for name in init_names {
        if !name.is_empty() {
            if let Some(&p) = producer.get(name) {
                return Err(GraphError::new(format!(
                    "initializer `{name}` is defined twice (also by `{}`)",
                    nodes[p].id
                ))
                .with_help("tensor names must be unique in an ONNX graph"));
            }
        }
        let id = ids.id(name, "initializer");
        let mut node = Node::new(id);
        node.op = "get_attr".into();
        let b = tensor_bytes(name);
        node.params = b;
        node.output_bytes = b;
        if !name.is_empty() {
            producer.insert(name, nodes.len());
        }
        nodes.push(node);
    }
    let first_op = nodes.len();

    // Operators: ids and the tensors they define, first for all of them, so
    // that a node reading a later node's output makes a cycle, not an error.
    for n in &g.node {
        let fallback = if n.op_type.is_empty() {
            "node"
        } else {
            n.op_type.as_str()
        };
        let id = ids.id(&n.name, fallback);
        let mut node = Node::new(id);
        node.op = n.op_type.to_lowercase();
        node.flops = op_flops(n, &info);
        node.output_bytes = n
            .output
            .iter()
            .filter(|o| !o.is_empty())
            .fold(0u64, |a, o| a.saturating_add(tensor_bytes(o)));
        let me = nodes.len();
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            if let Some(&p) = producer.get(o.as_str()) {
                let by = if p < n_inputs {
                    format!("graph input `{}`", nodes[p].id)
                } else if p < first_op {
                    format!("initializer `{}`", nodes[p].id)
                } else if p == me {
                    format!("node `{}` itself", nodes[p].id)
                } else {
                    format!("node `{}`", nodes[p].id)
                };
                return Err(GraphError::new(format!(
                    "node `{}` ({}) writes tensor `{o}`, which is already defined by {by}",
                    node.id, n.op_type
                ))
                .with_help("every tensor of an ONNX graph must have exactly one definition"));
            }
            producer.insert(o.as_str(), me);
        }
        nodes.push(node);
    }

    // Edges: one per (producer, consumer), the largest tensor kept.
    let mut slot: HashMap<(usize, usize), usize> = HashMap::new();
    let mut edges: Edges = Vec::new();
    for (k, n) in g.node.iter().enumerate() {
        let me = first_op + k;
        for t in n.input.iter().filter(|t| !t.is_empty()) {
            let Some(&p) = producer.get(t.as_str()) else {
                return Err(GraphError::new(format!(
                    "node `{}` ({}) reads tensor `{t}`, which no node produces and which is \
                     neither a graph input nor an initializer",
                    nodes[me].id, n.op_type
                ))
                .with_help("the model is incomplete; check it with onnx.checker.check_model"));
            };
            let b = tensor_bytes(t);
            match slot.get(&(p, me)) {
                Some(&i) => {
                    let e = &mut edges[i].2;
                    *e = Some(e.unwrap_or(0).max(b));
                }
                None => {
                    slot.insert((p, me), edges.len());
                    edges.push((p, me, Some(b)));
                }
            }
        }
    }

    mark_replicable(&mut nodes, first_op, &edges);
    Ok((nodes, edges))
}

/// Marks the operators that have no path from a graph input and no
/// initializer upstream (constants and what is computed only from them).
fn mark_replicable(nodes: &mut [Node], first_op: usize, edges: &Edges) {
    let n = nodes.len();
    let mut pending = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(s, d, _) in edges {
        pending[d] += 1;
        succ[s].push(d);
    }
    let mut stack: Vec<usize> = (first_op..n).filter(|&i| pending[i] == 0).collect();
    while let Some(i) = stack.pop() {
        nodes[i].replicable = true;
        for &d in &succ[i] {
            pending[d] -= 1;
            if pending[d] == 0 && d >= first_op {
                stack.push(d);
            }
        }
    }
}
