//! Large generated graphs and the peak memory of the commands on them: a
//! seeded chain or tree of N nodes with the attributes an exported model
//! has (op types, flops, output sizes, weights on some nodes), a problem
//! placing it on a 4-chip ring under the four stdlib rules, and the peak
//! resident memory and time of one `mcmpart` command run as a child.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The shape of a generated graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// Node i feeds node i + 1.
    Chain,
    /// Node i (i > 0) is fed by one of the four nodes before it: branches
    /// of a few nodes, as the heads and skip paths of a model.
    Tree,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Chain => "chain",
            Shape::Tree => "tree",
        }
    }
}

/// The ops of a transformer block, in order; `linear` and `embedding`
/// carry weights.
const OPS: [&str; 8] = [
    "linear",
    "add",
    "layer_norm",
    "linear",
    "gelu",
    "linear",
    "softmax",
    "matmul",
];

/// Chips of the generated problem's ring.
pub const CHIPS: u64 = 4;

/// Writes a graph of `n` nodes in the graph file format; returns the sum
/// of its weights in bytes. The same seed gives the same file.
pub fn write_graph(shape: Shape, n: usize, seed: u64, out: &mut impl Write) -> io::Result<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut params_total = 0u64;
    write!(out, "{{\"name\": \"{}_{n}\", \"nodes\": [", shape.name())?;
    for i in 0..n {
        let op = OPS[i % OPS.len()];
        let width: u64 = 256 << rng.random_range(0..4u32);
        let params = if op == "linear" { 2 * width * width } else { 0 };
        params_total += params;
        let flops = if op == "linear" || op == "matmul" {
            2 * 128 * width * width
        } else {
            128 * width
        };
        let sep = if i == 0 { "" } else { ", " };
        write!(
            out,
            "{sep}\n{{\"id\": \"block{}_{op}_{i}\", \"op\": \"{op}\", \"flops\": {flops}, \"params\": {params}, \"output_bytes\": {}}}",
            i / OPS.len(),
            2 * 128 * width
        )?;
    }
    write!(out, "], \"edges\": [")?;
    let id = |i: usize| format!("block{}_{}_{i}", i / OPS.len(), OPS[i % OPS.len()]);
    for i in 1..n {
        let from = match shape {
            Shape::Chain => i - 1,
            Shape::Tree => i - 1 - rng.random_range(0..i.min(4)),
        };
        let sep = if i == 1 { "" } else { ", " };
        write!(out, "{sep}\n{{\"from\": \"{}\", \"to\": \"{}\"}}", id(from), id(i))?;
    }
    writeln!(out, "]}}")?;
    Ok(params_total)
}

/// Writes `NAME.json` and `NAME.mcm` (the graph on a ring of [`CHIPS`]
/// chips, each with room for all of the weights, under the four stdlib rules)
/// into `dir`; returns the .mcm file.
pub fn write_problem(dir: &Path, shape: Shape, n: usize, seed: u64) -> io::Result<PathBuf> {
    let name = format!("{}_{n}", shape.name());
    let graph = dir.join(format!("{name}.json"));
    let mut w = io::BufWriter::new(std::fs::File::create(&graph)?);
    let params = write_graph(shape, n, seed, &mut w)?;
    w.flush()?;
    // Room for every weight on each chip: the rule is checked on every
    // node but does not make the search hard.
    let memory_kib = params.div_ceil(1024).max(1);
    let mcm = dir.join(format!("{name}.mcm"));
    std::fs::write(
        &mcm,
        format!(
            "// A generated {} of {n} nodes (seed {seed}) on a {CHIPS}-chip ring.\n\
             use std::placement::{{acyclic_flow, no_skip, triangle_dependency, memory_capacity}}\n\
             use std::topologies::ring\n\n\
             let package = ring(n = {CHIPS}, memory = {memory_kib} KiB, compute = 4 TFLOP/s, bandwidth = 25 GB/s)\n\
             let g = graph(\"{name}.json\")\n\n\
             partition g onto package {{\n    \
                 require acyclic_flow, no_skip, triangle_dependency, memory_capacity\n    \
                 maximize throughput\n\
             }}\n",
            shape.name()
        ),
    )?;
    Ok(mcm)
}

/// What one child process used.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Usage {
    /// Peak resident memory in bytes.
    pub peak_rss: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Processor seconds (user and system), which other work on the
    /// machine does not stretch.
    pub cpu_seconds: f64,
    /// Its exit code; `None` when a signal ended it.
    pub code: Option<i32>,
}

/// Runs `cmd` to its end and measures its peak resident memory. The
/// kernel's `ru_maxrss` for a child also counts the high-water mark of the
/// process that spawned it (Linux records the old address space's mark at
/// `exec`), so a test harness's own size would be charged to the child:
/// the peak is the child's `VmHWM` (its own address space's mark, which
/// only grows), read while it runs; `ru_maxrss` only where the child ended
/// before one reading. Its output goes where `cmd` says; not into a pipe,
/// which nobody reads while it runs.
pub fn measure(cmd: &mut Command) -> io::Result<Usage> {
    let start = Instant::now();
    let child = cmd.stdin(std::process::Stdio::null()).spawn()?;
    let pid = child.id() as libc::pid_t;
    let status_file = format!("/proc/{pid}/status");
    let mut hwm = 0u64;
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills; the child is ours
    // and not waited for elsewhere (`Child` does not reap on drop).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if r != 0 {
            break r;
        }
        if let Some(kib) = std::fs::read_to_string(&status_file)
            .ok()
            .as_deref()
            .and_then(vm_hwm_kib)
        {
            hwm = hwm.max(kib * 1024);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    if r == -1 {
        return Err(io::Error::last_os_error());
    }
    let seconds = start.elapsed().as_secs_f64();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // ru_maxrss is in KiB on Linux.
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Usage {
        peak_rss: if hwm > 0 { hwm } else { usage.ru_maxrss as u64 * 1024 },
        seconds,
        cpu_seconds: secs(usage.ru_utime) + secs(usage.ru_stime),
        code,
    })
}

/// The `VmHWM:` line of a `/proc/PID/status` text, in KiB.
fn vm_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_water_mark_is_read_from_a_status_text() {
        let text = "Name:\tmcmpart\nVmPeak:\t  9000 kB\nVmHWM:\t    4321 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(vm_hwm_kib(text), Some(4321));
        assert_eq!(vm_hwm_kib("Name:\tx\n"), None);
        let own = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(vm_hwm_kib(&own).is_some_and(|k| k > 0));
    }

    #[test]
    fn generated_graphs_load_with_their_shape() {
        for shape in [Shape::Chain, Shape::Tree] {
            let mut text = Vec::new();
            let params = write_graph(shape, 50, 7, &mut text).unwrap();
            let g = crate::graph::parse_graph_json(std::str::from_utf8(&text).unwrap()).unwrap();
            assert_eq!((g.nodes.len(), g.edges.len()), (50, 49), "{shape:?}");
            assert_eq!(g.total_params(), params as u128);
            assert!(g.nodes.iter().any(|n| n.params > 0) && g.nodes.iter().any(|n| n.params == 0));
            let mut again = Vec::new();
            write_graph(shape, 50, 7, &mut again).unwrap();
            assert_eq!(text, again, "the same seed gives the same file");
            let depth = crate::graph::stats::stats(&g, 1).depth;
            match shape {
                Shape::Chain => assert_eq!(depth, 50),
                Shape::Tree => assert!(depth < 50, "a tree branches: depth {depth}"),
            }
        }
    }
}
