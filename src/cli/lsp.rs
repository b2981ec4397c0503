//! `mcmpart lsp`: the language server, on standard input and output.

use crate::error::{Error, Result, Status};

pub fn run() -> Result {
    crate::lsp::run_stdio().map_err(Error::internal)?;
    Ok(Status::Success)
}
