//! The standard library's native rules are grounded by Rust code, not by
//! the interpreter: the instances must be the interpreter's, formula for
//! formula. Each rule is required twice, as the library's and as a user's
//! copy of the same text (which the interpreter grounds), on random graphs
//! and packages, and the two lists are compared.

use mcm_core::graph::{Graph, Node};
use mcm_core::problem::Problem;
use std::sync::Arc;

const RULES: [&str; 4] = ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"];

/// The library's rules as a user would copy them: the same text, renamed,
/// without `:: native`.
fn user_copies() -> String {
    let mut text = include_str!("../../../stdlib/placement.mcm").replace(" :: native", "");
    for r in RULES {
        text = text.replace(&format!("constraint {r}("), &format!("constraint user_{r}("));
    }
    text
}

/// A small reproducible generator (xorshift), enough for shapes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A DAG of up to 12 nodes in index order: a prefix of replicable nodes,
/// some nodes without weights, edges given twice now and then.
fn random_graph(rng: &mut Rng) -> Graph {
    let n = 1 + rng.below(12) as usize;
    let replicable = rng.below(3) as usize;
    let nodes = (0..n)
        .map(|i| {
            let mut node = Node::new(format!("n{i}"));
            node.replicable = i < replicable.min(n - 1);
            node.params = [0, 0, 1024, 3000, 1 << 20][rng.below(5) as usize];
            node.flops = 1000;
            node
        })
        .collect();
    let mut edges = Vec::new();
    for j in 1..n {
        for i in 0..j {
            if rng.below(3) == 0 {
                edges.push((i, j, None));
                if rng.below(4) == 0 {
                    edges.push((i, j, Some(7)));
                }
            }
        }
    }
    Graph::new("g", nodes, edges).expect("a valid DAG")
}

fn problem(text: &str, graph: Graph) -> Problem {
    let dir = std::env::temp_dir();
    let c = mcm_lang::compile_str_with_graph("native.mcm", text, &dir, Arc::new(graph));
    assert!(c.ok(), "{text}\n{:?}", c.diags);
    c.problems.into_iter().next().expect("one problem")
}

#[test]
fn native_grounding_gives_the_interpreters_instances() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut made = 0;
    for case in 0..60 {
        let graph = random_graph(&mut rng);
        let chips = 1 + rng.below(5);
        let memory = ["1 KiB", "4 MiB", "0 B", "3000 B"][rng.below(4) as usize];
        let package = if rng.below(3) == 0 {
            format!("mesh(rows = 2, cols = {chips}, memory = {memory}, compute = 1 TFLOP/s, bandwidth = 1 GB/s)")
        } else {
            format!("ring(n = {chips}, memory = {memory}, compute = 1 TFLOP/s, bandwidth = 1 GB/s)")
        };
        let text = format!(
            "use std::placement::{{{}}}\nuse std::topologies::{{ring, mesh}}\n{}\nlet g = graph {{ a -> b }}\n\
             partition g onto {package} {{\n    require {}, {}\n}}\n",
            RULES.join(", "),
            user_copies(),
            RULES.join(", "),
            RULES.map(|r| format!("user_{r}")).join(", "),
        );
        let p = problem(&text, graph);
        for (k, rule) in RULES.iter().enumerate() {
            let (native, user) = (&p.constraints[k], &p.constraints[k + RULES.len()]);
            assert_eq!(native.native.as_deref(), Some(*rule));
            assert_eq!(user.native, None);
            assert!(!user.instances.is_made(), "the interpreter lists its instances");
            made += usize::from(native.instances.is_made());
            assert_eq!(
                native.instances.len(),
                user.instances.len(),
                "case {case}: {rule} on {package}"
            );
            for (a, b) in native.instances.iter().zip(user.instances.iter()) {
                assert_eq!(*a, *b, "case {case}: {rule} on {package}");
            }
        }
    }
    assert!(made > 60, "the per-edge rules are made on demand, not listed ({made})");
}

#[test]
fn a_chip_without_memory_is_the_interpreters_error() {
    let text = "use std::placement::memory_capacity\n\
        topology bare(n: int) {\n    chips c[n] { compute = 1 TFLOP/s }\n}\n\
        let g = graph { a { params = 1 KiB } -> b }\n\
        partition g onto bare(n = 2) {\n    require memory_capacity\n}\n";
    let c = mcm_lang::compile_str("bare.mcm", text, &std::env::temp_dir());
    assert!(!c.ok());
    let msg = format!("{:?}", c.diags);
    assert!(msg.contains("no attribute `memory`"), "{msg}");
}
