//! Mutated programs that still compile run their test blocks without a
//! panic (the front end's own fuzzing is in crates/solver/tests/fuzz.rs).

use crate::common;

use common::mutate::{apply, edit, seeds};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn mutated_programs_never_panic(seed in 0usize..5, edits in proptest::collection::vec(edit(), 1..6)) {
        let text = apply(&seeds()[seed], &edits);
        let c = common::compile(&text);
        // Whatever compiles can also be run.
        if c.ok() {
            for t in &c.tests {
                let _ = mcmpart::testing::run(t);
            }
        }
    }
}
