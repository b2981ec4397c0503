//! ONNX import: the fixtures of tools/make_onnx_fixtures.py against the
//! Python reference's figures, corrupt input, hand-built models, and graph
//! files written from what was imported (tests/import.rs at the root runs
//! `mcmpart import`).

use mcm_core::graph::onnx::{import_onnx, import_onnx_bytes};
use mcm_core::graph::{load_graph_file, to_json, Graph};
use prost::Message;
use serde_json::Value;
use std::path::{Path, PathBuf};

const FIXTURES: &[&str] = &["tiny_cnn", "mlp", "attention"];

fn fixture(name: &str) -> PathBuf {
    mcm_testkit::root().join("tests/data/onnx").join(name)
}

fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("{name}.expected.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn import_fixture(name: &str) -> Graph {
    let path = fixture(&format!("{name}.onnx"));
    import_onnx(&path).unwrap_or_else(|e| panic!("{name}: {} ({:?})", e.message, e.help))
}

fn assert_same_graph(a: &Graph, b: &Graph) {
    assert_eq!(a.name, b.name);
    assert_eq!(a.nodes, b.nodes);
    assert_eq!(a.edges, b.edges);
}

// ---------------------------------------------------------------------------
// The fixtures against the reference

#[test]
fn fixtures_match_the_reference_figures() {
    for name in FIXTURES {
        let g = import_fixture(name);
        let exp = expected(name);
        let is = |n: &mcm_core::graph::Node, op: &str| n.op == op;
        let ops: Vec<usize> = (0..g.nodes.len())
            .filter(|&i| !is(&g.nodes[i], "placeholder") && !is(&g.nodes[i], "get_attr"))
            .collect();
        let op_edges = g
            .edges
            .iter()
            .filter(|e| ops.contains(&e.src) && ops.contains(&e.dst))
            .count();
        let figures = [
            ("nodes", g.nodes.len() as u128),
            ("edges", g.edges.len() as u128),
            ("flops", g.total_flops()),
            ("weight_bytes", g.total_params()),
            ("op_nodes", ops.len() as u128),
            (
                "input_nodes",
                g.nodes.iter().filter(|n| is(n, "placeholder")).count() as u128,
            ),
            (
                "initializer_nodes",
                g.nodes.iter().filter(|n| is(n, "get_attr")).count() as u128,
            ),
            ("op_edges", op_edges as u128),
        ];
        for (key, ours) in figures {
            assert_eq!(Some(ours), exp[key].as_u64().map(u128::from), "{name}: `{key}`");
        }
        assert_eq!(Some(g.name.as_str()), exp["name"].as_str(), "{name}: name");
        assert!(
            g.nodes.iter().all(|n| !n.replicable),
            "{name}: every node depends on the input or a weight"
        );
    }
}

#[test]
fn fixtures_match_the_reference_graph_node_by_node() {
    for name in FIXTURES {
        let g = import_fixture(name);
        let exp = expected(name);
        let nodes = exp["graph"]["nodes"].as_array().unwrap();
        assert_eq!(g.nodes.len(), nodes.len(), "{name}");
        for (ours, theirs) in g.nodes.iter().zip(nodes) {
            let at = format!("{name}: node `{}`", ours.id);
            assert_eq!(Some(ours.id.as_str()), theirs["id"].as_str(), "{at}: id");
            assert_eq!(Some(ours.op.as_str()), theirs["op"].as_str(), "{at}: op");
            assert_eq!(Some(ours.flops), theirs["flops"].as_u64(), "{at}: flops");
            assert_eq!(Some(ours.params), theirs["params"].as_u64(), "{at}: params");
            assert_eq!(
                Some(ours.output_bytes),
                theirs["output_bytes"].as_u64(),
                "{at}: output_bytes"
            );
        }
        let edges = exp["graph"]["edges"].as_array().unwrap();
        let ours: Vec<(String, String, u64)> = g
            .edges
            .iter()
            .map(|e| (g.nodes[e.src].id.clone(), g.nodes[e.dst].id.clone(), e.bytes))
            .collect();
        let theirs: Vec<(String, String, u64)> = edges
            .iter()
            .map(|e| {
                (
                    e["from"].as_str().unwrap().to_string(),
                    e["to"].as_str().unwrap().to_string(),
                    e["bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{name}: edges");
    }
}

#[test]
fn the_graph_name_falls_back_to_the_file_stem() {
    let mut m = decode_fixture("mlp");
    m.graph.as_mut().unwrap().name.clear();
    let g = import_onnx_bytes(&m.encode_to_vec(), "models/my_mlp.onnx").unwrap();
    assert_eq!(g.name, "my_mlp");
}

// ---------------------------------------------------------------------------
// Corrupt input: errors that name the file, never panics

#[test]
fn the_truncated_fixture_is_an_error_naming_the_file() {
    let exp = expected("truncated");
    assert_eq!(exp["valid"], false);
    let path = fixture("truncated.onnx");
    let e = import_onnx(&path).unwrap_err();
    assert!(e.message.contains("truncated.onnx"), "{}", e.message);
    assert!(
        e.message.contains("cannot be decoded"),
        "names the cause: {}",
        e.message
    );
    assert!(e.help.is_some());
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let e = import_onnx(Path::new("no/such/model.onnx")).unwrap_err();
    assert!(e.message.contains("no/such/model.onnx"), "{}", e.message);
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

#[test]
fn garbage_and_other_formats_are_errors() {
    let json = std::fs::read(fixture("mlp.expected.json")).unwrap();
    let gz = {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&json).unwrap();
        enc.finish().unwrap()
    };
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("text".into(), b"hello, this is not a model\n".to_vec()),
        ("json".into(), json),
        ("gzip".into(), gz),
        ("zeros".into(), vec![0u8; 64]),
    ];
    for seed in 1..=40u64 {
        cases.push((format!("garbage{seed}"), garbage(seed, 16 + 97 * seed as usize)));
    }
    for (what, bytes) in &cases {
        let name = format!("{what}.onnx");
        match import_onnx_bytes(bytes, &name) {
            Err(e) => assert!(e.message.contains(&name), "{what}: {}", e.message),
            Ok(g) => panic!("{what}: garbage imported as a graph of {} nodes", g.nodes.len()),
        }
    }
    let e = import_onnx_bytes(&[], "empty.onnx").unwrap_err();
    assert!(e.message.contains("empty"), "{}", e.message);
    let e = import_onnx_bytes(&cases[2].1, "graph.json").unwrap_err();
    assert!(e.help.unwrap().contains("JSON"));
}

#[test]
fn every_prefix_of_a_model_is_an_error() {
    for name in FIXTURES {
        let bytes = std::fs::read(fixture(&format!("{name}.onnx"))).unwrap();
        // The graph is the last big field; only `opset_import` follows it.
        let cut_off = bytes.len() - 16;
        for len in (0..cut_off).step_by(13).chain([1, 2, 3, cut_off - 1]) {
            let e = import_onnx_bytes(&bytes[..len], "cut.onnx")
                .map(|g| g.nodes.len())
                .unwrap_err();
            assert!(e.message.contains("`cut.onnx`"), "{name}[..{len}]: {}", e.message);
        }
    }
}

#[test]
fn flipped_bytes_give_errors_or_graphs_never_panics() {
    let mut errors = 0;
    let mut total = 0;
    for name in FIXTURES {
        let bytes = std::fs::read(fixture(&format!("{name}.onnx"))).unwrap();
        // Every byte of the head and tail (the structure), a stride through
        // the middle (mostly weights), each flipped three ways.
        let n = bytes.len();
        let positions = (0..n.min(600))
            .chain((600..n).step_by(37))
            .chain(n.saturating_sub(400)..n);
        for pos in positions {
            for mask in [0xFFu8, 0x80, 0x01] {
                let mut b = bytes.clone();
                b[pos] ^= mask;
                total += 1;
                if let Err(e) = import_onnx_bytes(&b, "flipped.onnx") {
                    assert!(e.message.contains("`flipped.onnx`"), "{}", e.message);
                    errors += 1;
                }
            }
        }
        // Flipping the first byte breaks the first field's tag.
        let mut b = bytes.clone();
        b[0] ^= 0xFF;
        assert!(import_onnx_bytes(&b, "flipped.onnx").is_err(), "{name}");
    }
    assert!(errors > 0 && errors < total, "{errors} errors of {total}");
}

// ---------------------------------------------------------------------------
// Hand-built models: the subset of onnx.proto needed to write them.

#[derive(Clone, PartialEq, Message)]
struct ModelProto {
    #[prost(int64, tag = "1")]
    ir_version: i64,
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
    #[prost(message, repeated, tag = "8")]
    opset_import: Vec<OperatorSetIdProto>,
}

#[derive(Clone, PartialEq, Message)]
struct OperatorSetIdProto {
    #[prost(string, tag = "1")]
    domain: String,
    #[prost(int64, tag = "2")]
    version: i64,
}

#[derive(Clone, PartialEq, Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    value_info: Vec<ValueInfoProto>,
}

#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    op_type: String,
    #[prost(message, repeated, tag = "5")]
    attribute: Vec<AttributeProto>,
    #[prost(string, tag = "7")]
    domain: String,
}

#[derive(Clone, PartialEq, Message)]
struct AttributeProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(int64, tag = "3")]
    i: i64,
    #[prost(int64, repeated, tag = "8")]
    ints: Vec<i64>,
    #[prost(int32, tag = "20")]
    r#type: i32,
}

#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "vec", tag = "9")]
    raw_data: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
struct ValueInfoProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    r#type: Option<TypeProto>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeProto {
    #[prost(message, optional, tag = "1")]
    tensor_type: Option<TypeTensor>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeTensor {
    #[prost(int32, tag = "1")]
    elem_type: i32,
    #[prost(message, optional, tag = "2")]
    shape: Option<TensorShapeProto>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    dim: Vec<Dimension>,
}

#[derive(Clone, PartialEq, Message)]
struct Dimension {
    #[prost(int64, optional, tag = "1")]
    dim_value: Option<i64>,
    #[prost(string, optional, tag = "2")]
    dim_param: Option<String>,
}

const FLOAT: i32 = 1;
const INT64: i32 = 7;

fn decode_fixture(name: &str) -> ModelProto {
    let bytes = std::fs::read(fixture(&format!("{name}.onnx"))).unwrap();
    ModelProto::decode(&bytes[..]).unwrap()
}

fn value(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeTensor {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            dim_param: None,
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

fn weight(name: &str, dims: &[i64]) -> TensorProto {
    let numel: i64 = dims.iter().product();
    TensorProto {
        dims: dims.to_vec(),
        data_type: FLOAT,
        name: name.into(),
        raw_data: vec![0; 4 * numel as usize],
    }
}

fn op(op_type: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: name.into(),
        op_type: op_type.into(),
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: v.to_vec(),
        r#type: 7,
        ..Default::default()
    }
}

fn int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        r#type: 2,
        ..Default::default()
    }
}

fn model(g: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        graph: Some(g),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
    }
    .encode_to_vec()
}

fn import(g: GraphProto) -> Result<Graph, mcm_core::graph::GraphError> {
    import_onnx_bytes(&model(g), "built.onnx")
}

fn node<'a>(g: &'a Graph, id: &str) -> &'a mcm_core::graph::Node {
    &g.nodes[g
        .node_index(id)
        .unwrap_or_else(|| panic!("no node `{id}` in {:?}", g.ids().collect::<Vec<_>>()))]
}

#[test]
fn our_encoder_round_trips_the_fixtures() {
    for name in FIXTURES {
        let again = import_onnx_bytes(&decode_fixture(name).encode_to_vec(), "x.onnx").unwrap();
        let mut g = import_fixture(name);
        g.name.clone_from(&again.name);
        assert_same_graph(&g, &again);
    }
}

#[test]
fn a_node_reading_an_undefined_tensor_is_an_error_naming_both() {
    let mut m = decode_fixture("mlp");
    m.graph.as_mut().unwrap().initializer.retain(|t| t.name != "w1");
    let e = import_onnx_bytes(&m.encode_to_vec(), "mlp_broken.onnx").unwrap_err();
    assert!(
        e.message.contains("`mlp_broken.onnx`")
            && e.message.contains("node `matmul1`")
            && e.message.contains("tensor `w1`"),
        "{}",
        e.message
    );
}

#[test]
fn a_model_without_a_graph_is_an_error() {
    let bytes = ModelProto {
        ir_version: 8,
        graph: None,
        opset_import: vec![],
    }
    .encode_to_vec();
    let e = import_onnx_bytes(&bytes, "nograph.onnx").unwrap_err();
    assert!(
        e.message.contains("`nograph.onnx`") && e.message.contains("without a graph"),
        "{}",
        e.message
    );
}

#[test]
fn cycles_and_double_definitions_are_errors() {
    let g = GraphProto {
        name: "loop".into(),
        input: vec![value("x", FLOAT, &[4])],
        node: vec![op("Add", "a", &["x", "t2"], &["t1"]), op("Relu", "b", &["t1"], &["t2"])],
        ..Default::default()
    };
    let e = import(g).unwrap_err();
    assert!(
        e.message.contains("`built.onnx`")
            && e.message.contains("cycle")
            && e.message.contains("`a`")
            && e.message.contains("`b`"),
        "{}",
        e.message
    );

    let g = GraphProto {
        input: vec![value("x", FLOAT, &[4])],
        node: vec![op("Relu", "a", &["x"], &["t"]), op("Relu", "b", &["x"], &["t"])],
        ..Default::default()
    };
    let e = import(g).unwrap_err();
    assert!(
        e.message.contains("node `b`") && e.message.contains("tensor `t`"),
        "{}",
        e.message
    );
}

#[test]
fn ids_are_node_names_or_op_type_n_made_unique() {
    let g = GraphProto {
        name: "ids".into(),
        input: vec![value("x", FLOAT, &[1, 8])],
        node: vec![
            op("Relu", "", &["x"], &["a"]),
            op("Relu", "", &["a"], &["b"]),
            op("Sigmoid", "Relu_2", &["b"], &["c"]),
            op("Relu", "", &["c"], &["d"]),
            op("Tanh", "act", &["d"], &["e"]),
            op("Tanh", "act", &["e"], &["f"]),
            op("Tanh", "x", &["f"], &["g"]),
        ],
        ..Default::default()
    };
    let g = import(g).unwrap();
    let ids: Vec<&str> = g.ids().collect();
    assert_eq!(
        ids,
        ["x", "Relu_0", "Relu_1", "Relu_2", "Relu_3", "act", "act_1", "x_1"]
    );
    assert_eq!(node(&g, "Relu_2").op, "sigmoid");
}

#[test]
fn flops_follow_the_conventions() {
    let g = GraphProto {
        name: "flops".into(),
        input: vec![
            value("img", FLOAT, &[1, 4, 8, 8]),
            value("a", FLOAT, &[2, 3, 5, 7]),
            value("b", FLOAT, &[2, 3, 7, 11]),
        ],
        initializer: vec![weight("w", &[6, 2, 3, 3]), weight("fc", &[6, 10])],
        node: vec![
            {
                let mut n = op("Conv", "conv", &["img", "w"], &["c"]);
                n.attribute = vec![int("group", 2), ints("kernel_shape", &[3, 3])];
                n
            },
            op("MatMul", "bmm", &["a", "b"], &["ab"]),
            op("Sub", "sub", &["ab", "ab"], &["d"]),
            op("Softmax", "sm", &["d"], &["p"]),
            op("Reshape", "flat", &["c"], &["cf"]),
            {
                let mut n = op("Gemm", "gemm", &["cf2", "fc"], &["y"]);
                n.attribute = vec![int("transA", 1)];
                n
            },
            op("Transpose", "tr", &["cf"], &["cf2"]),
            op("FancyCustomOp", "custom", &["p"], &["q"]),
            {
                let mut n = op("MaxPool", "pool", &["c"], &["pc"]);
                n.attribute = vec![ints("kernel_shape", &[2, 2])];
                n
            },
        ],
        value_info: vec![
            value("c", FLOAT, &[1, 6, 6, 6]),
            value("ab", FLOAT, &[2, 3, 5, 11]),
            value("d", FLOAT, &[2, 3, 5, 11]),
            value("p", FLOAT, &[2, 3, 5, 11]),
            value("cf", FLOAT, &[1, 216]),
            value("cf2", FLOAT, &[216, 1]),
            value("y", FLOAT, &[1, 10]),
            value("pc", FLOAT, &[1, 6, 3, 3]),
            // `q` (the custom op's output) has no shape.
        ],
        ..Default::default()
    };
    let g = import(g).unwrap();
    let f = |id: &str| node(&g, id).flops;
    assert_eq!(f("conv"), 2 * 216 * 2 * 9, "Cin/group from the weight");
    assert_eq!(f("bmm"), 2 * (2 * 3 * 5 * 11) * 7, "batched MatMul");
    assert_eq!(f("sub"), 2 * 3 * 5 * 11);
    assert_eq!(f("sm"), 5 * 2 * 3 * 5 * 11);
    assert_eq!(f("flat"), 0);
    assert_eq!(f("tr"), 0);
    assert_eq!(f("gemm"), 2 * 10 * 216, "K is A's first dim when transA");
    assert_eq!(f("custom"), 0, "unknown ops count 0");
    assert_eq!(f("pool"), 54 * 4);
    assert_eq!(node(&g, "custom").output_bytes, 0, "no shape: 0 bytes");
    assert_eq!(node(&g, "conv").output_bytes, 216 * 4);
    assert_eq!(node(&g, "w").params, 6 * 2 * 9 * 4);
    // `ab` is read twice by `sub`: one edge.
    let sub = g.node_index("sub").unwrap();
    assert_eq!(g.edges.iter().filter(|e| e.dst == sub).count(), 1);
}

#[test]
fn element_types_shapes_and_constants() {
    let mut sym = value("ids", INT64, &[1, 0]);
    if let Some(t) = sym.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.shape.as_mut().unwrap().dim[1] = Dimension {
            dim_value: None,
            dim_param: Some("seq".into()),
        };
    }
    let g = GraphProto {
        name: "types".into(),
        input: vec![sym, value("h", 10, &[2, 8])], // FLOAT16
        initializer: vec![TensorProto {
            dims: vec![3],
            data_type: 22, // INT4, packed two to a byte
            name: "q4".into(),
            raw_data: vec![0; 2],
        }],
        node: vec![
            op("Constant", "shape_const", &[], &["s"]),
            op("Add", "s2", &["s", "s"], &["s_twice"]),
            op("Reshape", "r", &["h", "s_twice"], &["hr"]),
            op("Gather", "emb", &["h", "ids"], &["e"]),
            op("Mul", "scale", &["hr", "q4"], &["out"]),
        ],
        value_info: vec![value("s", INT64, &[2]), value("hr", 10, &[16])],
        ..Default::default()
    };
    let g = import(g).unwrap();
    assert_eq!(node(&g, "ids").output_bytes, 0, "symbolic dim: unknown");
    assert_eq!(node(&g, "h").output_bytes, 32);
    assert_eq!(node(&g, "q4").params, 2);
    assert_eq!(node(&g, "shape_const").output_bytes, 16);
    assert_eq!(node(&g, "r").output_bytes, 32);
    assert_eq!(node(&g, "s2").flops, 0, "its output has no shape");
    for id in ["shape_const", "s2"] {
        assert!(node(&g, id).replicable, "{id} is computed from constants only");
    }
    for id in ["ids", "h", "q4", "r", "emb", "scale"] {
        assert!(!node(&g, id).replicable, "{id}");
    }
    assert_eq!(g.num_placed(), g.nodes.len() - 2);
}

// ---------------------------------------------------------------------------
// Writing graph files

#[test]
fn to_json_loads_back_equal() {
    let dir = mcm_testkit::scratch("onnx-to-json");
    for name in FIXTURES {
        let g = import_fixture(name);
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string(&to_json(&g)).unwrap()).unwrap();
        let back = load_graph_file(&path).unwrap();
        assert_same_graph(&g, &back);
    }
}

/// A graph of more entries than the importer takes is refused before it is
/// decoded: a million empty nodes are 2 MB of file and took gigabytes.
#[test]
fn a_graph_of_too_many_entries_is_refused_before_decoding() {
    // ModelProto field 7 (the graph), length-delimited, of `n` empty nodes.
    let graph = |n: usize| {
        let nodes: Vec<u8> = [0x0a, 0x00].repeat(n);
        let mut field = vec![0x3a];
        let mut len = nodes.len();
        while len >= 0x80 {
            field.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        field.push(len as u8);
        field.extend(nodes);
        field
    };
    let e = import_onnx_bytes(&graph(1_000_001), "many.onnx").unwrap_err();
    assert!(
        e.message.contains("1000001 nodes") && e.message.contains("more than 1000000"),
        "{}",
        e.message
    );
    // The decoder merges repeated graph fields and steps over groups: so
    // does the count (a group between two halves of 600,000).
    let mut split = graph(600_000);
    split.extend([0x0b, 0x08, 0x01, 0x0c]);
    split.extend(graph(600_000));
    let e = import_onnx_bytes(&split, "split.onnx").unwrap_err();
    assert!(e.message.contains("1200000 nodes"), "{}", e.message);
}
