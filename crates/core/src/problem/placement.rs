//! Placements and the partition file format (`*.partition.json`).

use crate::graph::Graph;
use serde::de::{MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// A chip id for every placed node, indexed by decision index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Placement {
    pub chips: Vec<u32>,
}

impl Placement {
    pub fn new(chips: Vec<u32>) -> Placement {
        Placement { chips }
    }

    pub fn chip(&self, decision: u32) -> u32 {
        self.chips[decision as usize]
    }

    /// How many chips hold a node (not the highest id + 1: without
    /// `no_skip` chips may be left empty between used ones).
    pub fn chips_used(&self) -> usize {
        self.chips.iter().collect::<std::collections::BTreeSet<_>>().len()
    }
}

#[derive(Debug, PartialEq)]
pub struct PartitionError {
    pub message: String,
    pub help: Option<String>,
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn perr(message: String, help: Option<&str>) -> PartitionError {
    PartitionError {
        message,
        help: help.map(str::to_string),
    }
}

/// The placement map keeps every entry in file order, so that a node named
/// twice is an error rather than silently the last one.
struct Entries(Vec<(String, i128)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object from node id to chip id")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let c = m.next_value_seed(ChipOf(&k))?;
                    out.push((k, c));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The chip id of node `.0` as written: a whole number (a huge one is
/// kept, to be reported as out of range); `1.0` or `"1"` is refused.
struct ChipOf<'a>(&'a str);

impl<'de> serde::de::DeserializeSeed<'de> for ChipOf<'_> {
    type Value = i128;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<i128, D::Error> {
        struct V<'a>(&'a str);
        impl Visitor<'_> for V<'_> {
            type Value = i128;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a chip id (a whole number) for node `{}`", self.0)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i128, E> {
                Ok(v.into())
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i128, E> {
                Ok(v.into())
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<i128, E> {
                // JSON integers past 64 bits arrive as floats.
                if v.fract() == 0.0 && v.abs() >= 9.2e18 {
                    return Ok(v as i128);
                }
                Err(E::custom(format!(
                    "node `{}` is placed on {v:?}, but a chip id is a whole number",
                    self.0
                )))
            }
        }
        d.deserialize_any(V(self.0))
    }
}

/// A partition or proposal file. Read by hand rather than derived, so that
/// a value of the wrong type is named by its key and what was expected
/// (`"chips": 4.0` read as "expected , or }" through an `i128`).
struct PartitionFile {
    graph: Option<String>,
    chips: Option<i128>,
    placement: Entries,
}

impl<'de> Deserialize<'de> for PartitionFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PartitionFile;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object with `placement` (and `graph`, `chips`)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<PartitionFile, A::Error> {
                use serde::de::Error;
                let (mut graph, mut chips, mut placement) = (None, None, None);
                while let Some(k) = m.next_key::<String>()? {
                    let twice = match k.as_str() {
                        "graph" => graph.replace(m.next_value_seed(GraphName)?).is_some(),
                        "chips" => chips.replace(m.next_value_seed(ChipCount)?).is_some(),
                        "placement" => placement.replace(m.next_value::<Entries>()?).is_some(),
                        // Other keys are left to other tools (notes, scores).
                        _ => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                            false
                        }
                    };
                    if twice {
                        return Err(A::Error::custom(format!("`{k}` is given twice")));
                    }
                }
                let placement = placement.ok_or_else(|| A::Error::custom("there is no `placement`"))?;
                Ok(PartitionFile {
                    graph: graph.flatten(),
                    chips: chips.flatten(),
                    placement,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// The `graph` of a partition file: a name, or null for none.
struct GraphName;

impl<'de> serde::de::DeserializeSeed<'de> for GraphName {
    type Value = Option<String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Option<String>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the graph's name (a string) for `graph`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Option<String>, E> {
                Ok(Some(v.to_string()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Option<String>, E> {
                Ok(None)
            }
        }
        d.deserialize_any(V)
    }
}

/// The `chips` of a partition file: a whole number, or null for none.
struct ChipCount;

impl<'de> serde::de::DeserializeSeed<'de> for ChipCount {
    type Value = Option<i128>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<i128>, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Option<i128>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the package's chip count (a whole number, like 4) for `chips`")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Option<i128>, E> {
                Ok(Some(v.into()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Option<i128>, E> {
                Ok(Some(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Option<i128>, E> {
                // JSON integers past 64 bits arrive as floats.
                if v.fract() == 0.0 && v.abs() >= 9.2e18 {
                    return Ok(Some(v as i128));
                }
                Err(E::custom(format!(
                    "`chips` is {v:?}, but a chip count is a whole number, written like 4"
                )))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Option<i128>, E> {
                Ok(None)
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON error of a partition or proposal file, its place first (serde_json
/// ends its message with it).
fn json_error(e: serde_json::Error, help: &str) -> PartitionError {
    perr(crate::textfile::json_error(&e), Some(help))
}

/// Reads a partition file for `graph` on a package of `num_chips` chips.
pub fn read_partition(path: &Path, graph: &Graph, num_chips: usize) -> Result<Placement, PartitionError> {
    let shown = path.display();
    let text = crate::textfile::read_text(path, crate::textfile::MAX_TEXT)
        .map_err(|e| perr(e.message("partition file", &shown.to_string()), None))?;
    parse_partition(&text, graph, num_chips).map_err(|e| PartitionError {
        message: format!("{shown}: {}", e.message),
        help: e.help,
    })
}

/// What a file of placements is read as: a whole partition, or a proposal
/// for FIX that may leave nodes out.
#[derive(Clone, Copy)]
enum Reading {
    Partition,
    Proposal,
}

impl Reading {
    fn noun(self) -> &'static str {
        match self {
            Reading::Partition => "partition",
            Reading::Proposal => "proposal",
        }
    }
}

/// Parses partition JSON; every placed node exactly once, chips in range.
pub fn parse_partition(text: &str, graph: &Graph, num_chips: usize) -> Result<Placement, PartitionError> {
    let chips = parse_entries(text, graph, num_chips, Reading::Partition)?;
    let missing: Vec<&str> = (0..graph.num_placed())
        .filter(|d| chips[*d].is_none())
        .map(|d| graph.placed_node(d as u32).id.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(perr(
            format!(
                "{} node(s) have no chip: {}",
                missing.len(),
                crate::graph::list_ids(missing.iter().copied())
            ),
            Some("every node that is not replicable appears exactly once"),
        ));
    }
    Ok(Placement::new(chips.into_iter().map(|c| c.unwrap_or(0)).collect()))
}

/// Reads a proposal for FIX: like a partition, but nodes may be missing
/// (`None`); chips must still be in range and nodes known and named once.
pub fn read_proposal(path: &Path, graph: &Graph, num_chips: usize) -> Result<Vec<Option<u32>>, PartitionError> {
    let shown = path.display();
    let text = crate::textfile::read_text(path, crate::textfile::MAX_TEXT)
        .map_err(|e| perr(e.message("proposal file", &shown.to_string()), None))?;
    parse_proposal(&text, graph, num_chips).map_err(|e| PartitionError {
        message: format!("{shown}: {}", e.message),
        help: e.help,
    })
}

/// Parses a proposal: a partition file whose placement may leave nodes out.
pub fn parse_proposal(text: &str, graph: &Graph, num_chips: usize) -> Result<Vec<Option<u32>>, PartitionError> {
    parse_entries(text, graph, num_chips, Reading::Proposal)
}

/// The checks a partition and a proposal share: the file's graph and chip
/// count when given, every node known, not replicable, on a chip in range,
/// and named once. Nodes the file leaves out are `None`.
fn parse_entries(
    text: &str,
    graph: &Graph,
    num_chips: usize,
    reading: Reading,
) -> Result<Vec<Option<u32>>, PartitionError> {
    let noun = reading.noun();
    let f: PartitionFile = serde_json::from_str(text).map_err(|e| {
        let shape = match reading {
            Reading::Partition => {
                "a partition is {\"graph\": NAME, \"chips\": C, \"placement\": {\"node\": chip, ...}}"
            }
            Reading::Proposal => "a proposal is {\"placement\": {\"node\": chip, ...}}, nodes may be missing",
        };
        json_error(e, shape)
    })?;
    if let Some(g) = &f.graph {
        if *g != graph.name {
            return Err(perr(
                format!(
                    // Also read by `show`, which has a graph but no problem.
                    "the {noun} is for graph `{g}`, but this graph is `{}`",
                    graph.name
                ),
                Some("pick the problem with --problem, or the partition made for this graph"),
            ));
        }
    }
    if let Some(c) = f.chips {
        if c != num_chips as i128 {
            return Err(perr(
                format!("the {noun} is for {c} chips, but the package has {num_chips}"),
                None,
            ));
        }
    }
    let mut chips: Vec<Option<u32>> = vec![None; graph.num_placed()];
    for (id, chip) in f.placement.0 {
        let node = graph.node_index(&id).ok_or_else(|| {
            perr(
                format!("the {noun} names node `{id}`, which the graph does not have"),
                Some(&crate::diag::unknown_help(&id, "node", graph.ids())),
            )
        })?;
        let d = graph.decision_of(node).ok_or_else(|| {
            perr(
                format!("node `{id}` is replicable: it takes no placement"),
                Some("leave replicable nodes out of the placement"),
            )
        })?;
        if chip < 0 || chip >= num_chips as i128 {
            return Err(perr(
                format!("node `{id}` is placed on chip {chip}, but chips are 0..{num_chips}"),
                None,
            ));
        }
        // `show` reads a partition without a package: its chip count is the
        // file's, and an id past 32 bits must not wrap to a low chip.
        let Ok(chip) = u32::try_from(chip) else {
            return Err(perr(
                format!("node `{id}` is placed on chip {chip}, past any package"),
                None,
            ));
        };
        if chips[d as usize].replace(chip).is_some() {
            return Err(perr(format!("node `{id}` appears twice in the {noun}"), None));
        }
    }
    Ok(chips)
}

/// The partition file for a placement.
pub fn partition_json(p: &Placement, graph: &Graph, num_chips: usize) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (d, c) in p.chips.iter().enumerate() {
        m.insert(graph.placed_node(d as u32).id.clone(), (*c).into());
    }
    serde_json::json!({"graph": graph.name, "chips": num_chips, "placement": m})
}

/// Writes a partition file atomically (write to a temporary, then rename).
/// The text is [`partition_json`]'s, written as it is made: the map of a
/// million ids would cost more than the partition. A path that is a device
/// or a pipe (`/dev/null`, `/dev/stdout`) is written into, never replaced;
/// a link is followed, so the rename replaces the file it names.
pub fn write_partition(path: &Path, p: &Placement, graph: &Graph, num_chips: usize) -> std::io::Result<()> {
    use std::io::Write;
    let write = |file: std::fs::File| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(
            &mut w,
            &PartitionOut {
                p,
                graph,
                chips: num_chips,
            },
        )?;
        w.write_all(b"\n")?;
        w.flush()
    };
    let target = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => {
            return write(std::fs::OpenOptions::new().write(true).open(path)?);
        }
        Ok(m) if m.is_file() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let tmp = target.with_extension("json.tmp");
    let written = std::fs::File::create(&tmp)
        .and_then(write)
        .and_then(|()| std::fs::rename(&tmp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A partition file's fields, in the order of [`partition_json`]'s map
/// (keys sorted, the placement's too).
struct PartitionOut<'a> {
    p: &'a Placement,
    graph: &'a Graph,
    chips: usize,
}

impl serde::Serialize for PartitionOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("chips", &self.chips)?;
        m.serialize_entry("graph", &self.graph.name)?;
        m.serialize_entry("placement", &SortedPlacement(self))?;
        m.end()
    }
}

struct SortedPlacement<'a>(&'a PartitionOut<'a>);

impl serde::Serialize for SortedPlacement<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (p, g) = (self.0.p, self.0.graph);
        let mut order: Vec<u32> = (0..p.chips.len() as u32).collect();
        order.sort_unstable_by(|a, b| g.placed_node(*a).id.cmp(&g.placed_node(*b).id));
        let mut m = s.serialize_map(Some(order.len()))?;
        for d in order {
            m.serialize_entry(&g.placed_node(d).id, &p.chips[d as usize])?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Graph, Node};

    #[test]
    fn chips_used_counts_chips_not_the_highest_id() {
        assert_eq!(Placement::new(vec![0, 7, 7, 3]).chips_used(), 3);
        assert_eq!(Placement::new(vec![]).chips_used(), 0);
    }

    fn g() -> Graph {
        Graph::new("g", vec![Node::new("a"), Node::new("b")], vec![(0, 1, None)]).unwrap()
    }

    #[test]
    fn written_files_are_the_json_of_the_partition() {
        let nodes = ["b", "a10", "a9", "Z", "é"].map(Node::new).to_vec();
        let g = Graph::new("g", nodes, vec![(0, 1, None)]).unwrap();
        let p = Placement::new(vec![3, 1, 4, 1, 5]);
        let path = std::env::temp_dir().join(format!("mcmpart-written-{}.partition.json", std::process::id()));
        write_partition(&path, &p, &g, 6).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            text,
            serde_json::to_string_pretty(&partition_json(&p, &g, 6)).unwrap() + "\n"
        );
    }

    /// `-o /dev/null` once replaced the device with a file: a pipe (the
    /// same kind of path, safe to make) must be written into and stay one,
    /// a link must stay a link to the written file.
    #[cfg(unix)]
    #[test]
    fn a_pipe_is_written_into_and_a_link_followed_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let p = Placement::new(vec![1, 0]);
        let want = serde_json::to_string_pretty(&partition_json(&p, &g(), 2)).unwrap() + "\n";
        let dir = std::env::temp_dir().join(format!("mcmpart-special-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();

        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_partition(&fifo, &p, &g(), 2).unwrap();
        // Checked before the join: a replaced pipe leaves the reader waiting.
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(reader.join().unwrap(), want);

        let file = dir.join("real.json");
        std::fs::write(&file, "old").unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_partition(&link, &p, &g(), 2).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), want);

        // A directory is refused and leaves no temporary behind.
        let sub = dir.join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(write_partition(&sub, &p, &g(), 2).is_err());
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 4, "{left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reads_and_rejects() {
        let p = parse_partition(r#"{"graph": "g", "chips": 2, "placement": {"b": 1, "a": 0}}"#, &g(), 2).unwrap();
        assert_eq!(p.chips, vec![0, 1]);
        let e = parse_partition(r#"{"placement": {"a": 0, "a": 1, "b": 0}}"#, &g(), 2).unwrap_err();
        assert!(e.message.contains("`a` appears twice"), "{}", e.message);
        let e = parse_partition(r#"{"placement": {"a": 0}}"#, &g(), 2).unwrap_err();
        assert!(e.message.contains("`b`"), "{}", e.message);
        let e = parse_partition(r#"{"placement": {"a": 0, "b": 2}}"#, &g(), 2).unwrap_err();
        assert!(e.message.contains("chip 2"), "{}", e.message);
        let e = parse_partition(r#"{"placement": {"a": 0, "c": 0}}"#, &g(), 2).unwrap_err();
        assert!(e.message.contains("`c`"), "{}", e.message);
        let e = parse_partition(r#"{"placement": [1]}"#, &g(), 2).unwrap_err();
        assert!(e.message.contains("line 1"), "{}", e.message);
        let e = parse_partition(r#"{"graph": "h", "placement": {"a": 0, "b": 1}}"#, &g(), 2).unwrap_err();
        assert_eq!(e.message, "the partition is for graph `h`, but this graph is `g`");
        // A chip id that is no whole number is said to be one, placed once.
        let e = parse_partition(r#"{"placement": {"a": 0, "b": 1.0}}"#, &g(), 2).unwrap_err();
        assert_eq!(
            e.message,
            "line 1, column 31: node `b` is placed on 1.0, but a chip id is a whole number"
        );
        // A huge whole number is out of range, not unreadable.
        let e = parse_partition(r#"{"placement": {"a": 0, "b": 18446744073709551617}}"#, &g(), 2).unwrap_err();
        assert!(e.message.contains("chip 1844674407370955161"), "{}", e.message);
        // With a chip count from the file (`show`), an id past 32 bits is
        // refused, not wrapped to chip 0.
        let e = parse_partition(r#"{"placement": {"a": 0, "b": 4294967296}}"#, &g(), 1 << 33).unwrap_err();
        assert!(e.message.contains("chip 4294967296, past any package"), "{}", e.message);
    }

    #[test]
    fn a_proposal_is_checked_like_a_partition_but_may_leave_nodes_out() {
        assert_eq!(
            parse_proposal(r#"{"placement": {"b": 1}}"#, &g(), 2).unwrap(),
            vec![None, Some(1)]
        );
        let bad = |text: &str| parse_proposal(text, &g(), 2).unwrap_err().message;
        assert_eq!(
            bad(r#"{"graph": "h", "placement": {}}"#),
            "the proposal is for graph `h`, but this graph is `g`"
        );
        assert_eq!(
            bad(r#"{"chips": 3, "placement": {}}"#),
            "the proposal is for 3 chips, but the package has 2"
        );
        assert!(bad(r#"{"placement": {"a": 2}}"#).contains("chip 2, but chips are 0..2"));
        assert!(bad(r#"{"placement": {"a": 0, "a": 1}}"#).contains("`a` appears twice in the proposal"));
        assert!(bad(r#"{"placement": {"zz": 0}}"#).contains("the proposal names node `zz`"));
    }

    #[test]
    fn values_of_the_wrong_type_name_their_key_and_what_was_expected() {
        let bad = |text: &str| parse_partition(text, &g(), 2).unwrap_err().message;
        assert_eq!(
            bad(r#"{"chips": 4.0, "placement": {"a": 0, "b": 1}}"#),
            "line 1, column 13: `chips` is 4.0, but a chip count is a whole number, written like 4"
        );
        assert_eq!(
            bad(r#"{"chips": "2", "placement": {"a": 0, "b": 1}}"#),
            "line 1, column 13: found string \"2\", \
             expected the package's chip count (a whole number, like 4) for `chips`"
        );
        assert_eq!(
            bad(r#"{"graph": 3, "placement": {}}"#),
            "line 1, column 11: found integer `3`, expected the graph's name (a string) for `graph`"
        );
        assert!(bad(r#"{"placement": [1]}"#).contains("expected an object from node id to chip id"));
        assert!(bad(r#"{"placement": {"a": "0"}}"#).contains("expected a chip id (a whole number) for node `a`"));
        assert!(bad(r#"{"chips": 2}"#).contains("there is no `placement`"));
        assert!(bad(r#"{"chips": 2, "chips": 2, "placement": {}}"#).contains("`chips` is given twice"));
        assert!(bad("[]").contains("line 1, column 1: found an array, expected an object with `placement`"));
        assert!(!bad("[]").contains("sequence"));
        // null is no value; other keys are left alone.
        let p = parse_partition(
            r#"{"graph": null, "chips": null, "note": [1], "placement": {"a": 0, "b": 1}}"#,
            &g(),
            2,
        );
        assert_eq!(p.unwrap().chips, vec![0, 1]);
    }
}
