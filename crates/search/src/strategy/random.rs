//! Uniform random search: SAMPLE with uniform distributions, as many
//! partitions as the budget allows.

use super::{Search, Strategy};
use mcm_solver::Infeasible;

pub struct Random;

impl Strategy for Random {
    fn name(&self) -> &str {
        "random"
    }

    fn run(&mut self, search: &mut Search) -> Result<(), Infeasible> {
        while !search.done() {
            let batch = (0..search.batch())
                .map(|_| search.sample(None))
                .collect::<Result<Vec<_>, _>>()?;
            search.submit(batch);
        }
        Ok(())
    }
}
