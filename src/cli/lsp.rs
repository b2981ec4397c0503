//! `mcmpart lsp`: the language server, on standard input and output.

use super::output::Output;
use crate::error::{Error, Result, Status};

pub fn run(out: &Output) -> Result {
    if out.json {
        // The server's messages are JSON-RPC: there is no one JSON answer.
        return Err(
            Error::usage("`lsp` speaks JSON-RPC on standard input and output; --json does not apply")
                .with_help("run `mcmpart lsp` from an editor's language client"),
        );
    }
    // The protocol's exit status: 0 when the client shut the server down
    // before `exit`, 1 when it exited (or closed the input) without.
    let shut_down = crate::lsp::run_stdio().map_err(Error::internal)?;
    Ok(Status::of(shut_down))
}
