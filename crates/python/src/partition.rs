//! `Partition`: a chip for every placed node of a problem.

use crate::problem::Loaded;
use mcmpart::problem::{partition_json, Placement};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// A chip for every placed node of a problem (by node index); `moved` is
/// how many nodes `fix` moved to make it, `None` for other partitions.
#[pyclass(module = "mcmpart._native", frozen)]
pub struct Partition {
    pub loaded: Arc<Loaded>,
    pub chips: Vec<u32>,
    pub moved: Option<usize>,
}

impl Partition {
    pub fn new(loaded: &Arc<Loaded>, chips: Vec<u32>) -> Partition {
        Partition {
            loaded: loaded.clone(),
            chips,
            moved: None,
        }
    }

    /// The partition file's JSON (`{"graph", "chips", "placement"}`).
    pub fn file_json(&self) -> serde_json::Value {
        let p = self.loaded.problem();
        partition_json(&Placement::new(self.chips.clone()), &p.graph, p.package.num_chips())
    }
}

#[pymethods]
impl Partition {
    /// The chip of each placed node, by node index.
    #[getter]
    fn chips(&self) -> Vec<u32> {
        self.chips.clone()
    }

    #[getter]
    fn moved(&self) -> Option<usize> {
        self.moved
    }

    /// How many chips hold at least one node.
    #[getter]
    fn chips_used(&self) -> usize {
        Placement::new(self.chips.clone()).chips_used()
    }

    /// Node id -> chip.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let g = &self.loaded.problem().graph;
        let d = PyDict::new(py);
        for (i, c) in self.chips.iter().enumerate() {
            d.set_item(&g.placed_node(i as u32).id, c)?;
        }
        Ok(d)
    }

    /// The partition file's text, as `solve --out` writes it.
    fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.file_json()).unwrap_or_default()
    }

    /// Writes the partition file (`solve --out`'s format), read back by
    /// `mcmpart eval --partition` and the other commands.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        let p = self.loaded.problem();
        mcmpart::problem::write_partition(
            &path,
            &Placement::new(self.chips.clone()),
            &p.graph,
            p.package.num_chips(),
        )
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot write `{}`: {e}", path.display())))
    }

    /// The chip of a node (index or id).
    fn __getitem__(&self, node: &Bound<'_, PyAny>) -> PyResult<u32> {
        Ok(self.chips[crate::convert::node(&self.loaded, node)? as usize])
    }

    fn __len__(&self) -> usize {
        self.chips.len()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<Partition>() {
            Ok(o) => o.get().chips == self.chips,
            Err(_) => other.extract::<Vec<u32>>().is_ok_and(|v| v == self.chips),
        }
    }

    fn __hash__(&self) -> u64 {
        mcmpart::digest::Fnv1a::new()
            .update(&self.chips.iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<u8>>())
            .value()
    }

    fn __repr__(&self) -> String {
        let shown: Vec<String> = self.chips.iter().take(16).map(u32::to_string).collect();
        let more = if self.chips.len() > 16 { ", ..." } else { "" };
        format!(
            "<mcmpart.Partition of {:?}: [{}{more}] on {} of {} chips>",
            self.loaded.problem().name,
            shown.join(", "),
            self.chips_used(),
            self.loaded.problem().package.num_chips()
        )
    }

    /// The package with each chip's load under this partition (Jupyter
    /// shows it), as `mcmpart show FILE --partition P --format svg` draws it.
    fn _repr_svg_(&self) -> String {
        crate::svg::package_svg(self.loaded.problem(), Some(&self.chips))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Partition>()
}
