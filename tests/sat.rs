mod common;
#[test]
fn probe() {
    let text = format!("{}{}", common::HEADER, "constraint near(k: int) { forall (u, v) in edges: hops(chip(u), chip(v)) <= k }\nlet t = ring(n = 3, memory = 3 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\nlet g = graph { a { params = 1 MiB } -> b  b -> c a -> c }\npartition g onto t { require acyclic_flow, no_skip, triangle_dependency, memory_capacity, near(1) }\n");
    let c = common::compile(&text);
    let p = c.problem(None).unwrap();
    for k in &p.constraints {
        println!("{} {:?}", k.name, k.native);
        for i in &k.instances {
            println!("  {:?}\n   {:?}", i.bindings, i.formula);
        }
    }
}
