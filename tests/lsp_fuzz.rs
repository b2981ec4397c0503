//! `mcmpart lsp` under random input from seeded generators: edits with
//! characters of several bytes (`é`, `∑`, a zero-width space, a byte-order
//! mark, characters outside the Basic Multilingual Plane), requests at
//! random positions (past the ends of lines and of the document too), and
//! frames that are not messages. Every request is answered (a result or an
//! error) within `ANSWER_WITHIN`, no handler fails with an internal error,
//! and the server answers a last request and exits cleanly.

use crate::common;
use crate::lsp::Client;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// What random edits insert.
const PIECES: &[&str] = &[
    "é",
    "∑",
    "\u{200B}",
    "\u{FEFF}",
    "😀",
    "𝔘",
    "\n",
    "\r\n",
    "\r",
    " ",
    "\t",
    ".",
    "u.",
    "d.",
    "let ",
    "x",
    "= ",
    "1 MiB",
    "3 ",
    "require ",
    "partition ",
    "{",
    "}",
    "(",
    ")",
    "\"",
    "//",
    "..",
    "forall d in chips: ",
    "graph(\"/dev/stdin\")",
    "graph(\"/dev/zero\")",
    "ring(n = 2)",
];

const REQUESTS: &[&str] = &[
    "textDocument/completion",
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/documentSymbol",
    "textDocument/formatting",
];

/// A random character boundary of `text`.
fn boundary(rng: &mut ChaCha8Rng, text: &str) -> usize {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    *bounds.choose(rng).unwrap()
}

/// A position in or near `text`: a line up to two past the last, a
/// character up to four past the line's end (counted generously), now and
/// then an absurd one.
fn position(rng: &mut ChaCha8Rng, text: &str) -> Value {
    let lines: Vec<&str> = text.split('\n').collect();
    let line = rng.random_range(0..lines.len() + 2);
    let width = lines.get(line).map_or(0, |l| l.encode_utf16().count());
    let character = if rng.random_bool(0.05) {
        u32::MAX as usize
    } else {
        rng.random_range(0..width + 5)
    };
    json!({"line": line, "character": character})
}

/// A frame that is not a well-formed message, and a word for it.
fn malformed(rng: &mut ChaCha8Rng) -> (&'static str, Vec<u8>) {
    let msg = json!({"jsonrpc": "2.0", "id": 999_999, "method": "textDocument/hover", "params": {}}).to_string();
    let n = msg.len();
    let k = rng.random_range(1..n / 2);
    let garbage: String = (0..rng.random_range(1..40))
        .map(|_| {
            *['a', 'Z', '7', ' ', '{', 'é', '😀', '\u{200B}', '"']
                .choose(rng)
                .unwrap()
        })
        .collect();
    let cases: [(&str, Vec<u8>); 10] = [
        (
            "not JSON",
            format!("Content-Length: {}\r\n\r\n{garbage}", garbage.len()).into_bytes(),
        ),
        (
            "invalid UTF-8",
            [&b"Content-Length: 5\r\n\r\n\"\xff"[..], &[0xc3, 0x28, b'"']].concat(),
        ),
        (
            "too short",
            format!("Content-Length: {}\r\n\r\n{msg}", n - k).into_bytes(),
        ),
        (
            "too long",
            format!("Content-Length: {}\r\n\r\n{msg}", n + k).into_bytes(),
        ),
        ("no length", format!("Content-Type: x\r\n\r\n{msg}").into_bytes()),
        (
            "a length that is no number",
            format!("Content-Length: x{garbage}\r\n\r\n{msg}").into_bytes(),
        ),
        (
            "an absurd length",
            format!(
                "Content-Length: {}\r\n\r\n{msg}",
                rng.random_range(1u64 << 40..u64::MAX)
            )
            .into_bytes(),
        ),
        ("garbage", format!("{garbage}\r\n").into_bytes()),
        ("JSON that is no message", frame(&json!([{"id": 1}, garbage]))),
        (
            "a bad id",
            frame(&json!({"jsonrpc": "2.0", "id": [garbage], "method": "shutdown"})),
        ),
    ];
    let (what, bytes) = cases.into_iter().nth(rng.random_range(0..10)).unwrap();
    (what, bytes)
}

fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn fuzz(seed: u64, steps: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Some clients speak UTF-8, the others the default UTF-16.
    let utf8 = seed % 2 == 1;
    let offered = if utf8 { json!(["utf-8", "utf-16"]) } else { json!([]) };
    let (mut c, init) = Client::start_with(json!({"general": {"positionEncodings": offered}}));
    let spoken = if utf8 { "utf-8" } else { "utf-16" };
    assert_eq!(init["capabilities"]["positionEncoding"], spoken, "{init}");
    // Named in the examples folder, so that its graph file is found.
    let uri = format!("file://{}/examples/fuzz-{seed}.mcm", common::root().display());
    let start = std::fs::read_to_string(common::root().join("examples/quickstart.mcm")).unwrap();
    let mut text = start.clone();
    c.open(&uri, &text);
    let mut version = 1;
    for step in 0..steps {
        match rng.random_range(0..10) {
            // An edit: the whole text (as the server asks), now and then a
            // range of it (where the server's copy then departs from ours
            // until the next whole text).
            0..=3 => {
                version += 1;
                let change = if rng.random_bool(0.8) {
                    if rng.random_bool(0.05) {
                        text = start.clone();
                    }
                    for _ in 0..rng.random_range(1..4) {
                        let at = boundary(&mut rng, &text);
                        if rng.random_bool(0.3) {
                            let end = boundary(&mut rng, &text[at..]);
                            text.replace_range(at..at + end, "");
                        } else {
                            text.insert_str(at, PIECES.choose(&mut rng).unwrap());
                        }
                    }
                    json!({"text": text})
                } else {
                    json!({"range": {"start": position(&mut rng, &text), "end": position(&mut rng, &text)},
                           "text": PIECES.choose(&mut rng).unwrap()})
                };
                c.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
                );
            }
            // A request at a random place.
            4..=7 => {
                let method = *REQUESTS.choose(&mut rng).unwrap();
                let params = json!({
                    "textDocument": {"uri": uri},
                    "position": position(&mut rng, &text),
                    "options": {"tabSize": 4, "insertSpaces": true},
                });
                let answer = c.answer(method, params);
                assert!(
                    answer["error"]["code"] != -32603,
                    "seed {seed}, step {step}: {method} failed inside: {answer}\n{text:?}"
                );
            }
            // A request the server cannot take: bad parameters, an unknown
            // method.
            8 => {
                let answer = c.answer("textDocument/hover", json!({"textDocument": 5, "position": "x"}));
                assert_eq!(answer["error"]["code"], -32602, "{answer}");
                let answer = c.answer("$/unknown", json!({}));
                assert_eq!(answer["error"]["code"], -32601, "{answer}");
            }
            // A frame that is not a message, then a request: the frame is
            // answered with an error that has no id, the request as usual.
            _ => {
                let (what, bytes) = malformed(&mut rng);
                c.send_raw(&bytes);
                let answer = c.answer("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
                assert!(answer.get("result").is_some(), "seed {seed}, {what}: {answer}");
            }
        }
    }
    // The server is still there and in step with us.
    let symbols = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": "file:///none.mcm"}}),
    );
    assert_eq!(symbols, Value::Null);
    // A request after `shutdown` is refused, and `exit` ends the server.
    c.request("shutdown", Value::Null);
    let after = c.answer("textDocument/hover", json!({}));
    assert_eq!(after["error"]["code"], -32600, "{after}");
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), Some(0));
}

#[test]
fn the_server_survives_random_edits_requests_and_frames() {
    for seed in 0..8 {
        fuzz(seed, 300);
    }
}
