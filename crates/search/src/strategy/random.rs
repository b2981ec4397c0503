//! Uniform random search: SAMPLE with uniform distributions, as many
//! partitions as the budget allows.

use super::{Search, Strategy};
use mcm_solver::Infeasible;

pub struct Random;

impl Strategy for Random {
    fn name(&self) -> &str {
        "random"
    }

    /// The given start (settled), if any, is the first sample.
    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        if let Some(start) = search.start()? {
            search.submit_one(start);
        }
        while !search.done() {
            let batch = (0..search.batch())
                .map(|_| search.sample(None))
                .collect::<Result<Vec<_>, _>>()?;
            search.submit(batch);
        }
        Ok(())
    }
}
