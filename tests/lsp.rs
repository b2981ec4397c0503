//! `mcmpart lsp` driven as an editor drives it: JSON-RPC over its standard
//! input and output.

use crate::common;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The longest the server may take to answer one request: a server that
/// hangs fails the test instead of stalling it.
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(5);

pub(crate) struct Client {
    child: Child,
    stdin: ChildStdin,
    /// The server's messages, read on a thread (so that waiting for one can
    /// time out); closed when the server closes its output.
    messages: Receiver<Value>,
    next_id: i64,
}

impl Client {
    /// The server, initialized with these client capabilities.
    pub(crate) fn start_with(capabilities: Value) -> (Client, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcmpart"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mcmpart lsp");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            while let Some(m) = read_message(&mut stdout) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            messages,
            next_id: 1,
        };
        let init = c.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities}),
        );
        c.notify("initialized", json!({}));
        (c, init)
    }

    pub(crate) fn start() -> Client {
        let (c, init) = Client::start_with(json!({}));
        assert_eq!(init["capabilities"]["hoverProvider"], true, "{init}");
        c
    }

    /// Writes raw bytes, a frame or not.
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    pub(crate) fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// The server's next message, within [`ANSWER_WITHIN`].
    pub(crate) fn receive(&mut self) -> Value {
        match self.messages.recv_timeout(ANSWER_WITHIN) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server within {ANSWER_WITHIN:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its answer (a result or an error),
    /// skipping the messages before it; it must come within
    /// [`ANSWER_WITHIN`].
    pub(crate) fn answer(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let sent = Instant::now();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.receive();
            assert!(sent.elapsed() < ANSWER_WITHIN, "`{method}` took {:?}", sent.elapsed());
            if m["id"] == id {
                assert!(m.get("result").is_some() != m.get("error").is_some(), "{m}");
                return m;
            }
        }
    }

    /// Sends a request and returns its result, which must not be an error.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let m = self.answer(method, params);
        assert!(m.get("error").is_none(), "{m}");
        m["result"].clone()
    }

    /// The next diagnostics published for `uri`.
    pub(crate) fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        loop {
            let m = self.receive();
            if m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri {
                return m["params"]["diagnostics"].as_array().unwrap().clone();
            }
        }
    }

    pub(crate) fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "mcm", "version": 1, "text": text}}),
        );
        self.diagnostics(uri)
    }

    pub(crate) fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        self.request(
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        )
    }

    /// Shuts the server down; it must exit with status 0.
    pub(crate) fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        assert_eq!(self.wait(), Some(0));
    }

    /// The server's exit status; it must exit within [`ANSWER_WITHIN`].
    pub(crate) fn wait(&mut self) -> Option<i32> {
        let asked = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(asked.elapsed() < ANSWER_WITHIN, "the server did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A failed test leaves no server behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One message of the server's output; `None` at its end.
fn read_message(out: &mut impl BufRead) -> Option<Value> {
    let mut len = 0;
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            len = n.parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    out.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).expect("the server writes JSON"))
}

const PROGRAM: &str = "use std::placement::{acyclic_flow, no_skip}
use std::topologies::ring

let package = ring(n = 4, memory = 128 MiB, compute = 4 TFLOP/s, bandwidth = 25 GB/s)
let g = graph { a -> b }
partition g onto package {
    require acyclic_flow, no_skp
}
";

#[test]
fn the_server_reports_hovers_and_jumps_into_the_standard_library() {
    let dir = common::scratch("lsp");
    let path = dir.join("p.mcm");
    std::fs::write(&path, PROGRAM).unwrap();
    let uri = format!("file://{}", path.display());
    let mut c = Client::start();

    // A typo in a `require`: one error, on its line, at the name.
    let diags = c.open(&uri, PROGRAM);
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d["range"]["start"], json!({"line": 6, "character": 26}), "{d}");
    assert_eq!(d["severity"], 1);
    assert!(
        d["message"].as_str().unwrap().contains("no_skip"),
        "the suggestion: {d}"
    );

    // Fixed: the diagnostics clear.
    let fixed = PROGRAM.replace("no_skp", "no_skip");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    assert_eq!(c.diagnostics(&uri), Vec::<Value>::new());

    // Hover on the topology call: its parameters with their units.
    let h = c.at("textDocument/hover", &uri, 3, 15);
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(text.contains("`memory`: bytes (in B, KB"), "{text}");
    assert!(text.contains("`bandwidth`: rate (in B/s"), "{text}");
    assert!(text.contains("`compute`: flop_rate (in FLOP/s"), "{text}");
    assert_eq!(h["range"]["start"], json!({"line": 3, "character": 14}));

    // Definition of `ring`: the standard library's file, at the topology.
    let def = c.at("textDocument/definition", &uri, 3, 16);
    let target = def["uri"].as_str().unwrap();
    assert!(target.ends_with("stdlib/topologies.mcm"), "{def}");
    let file = target.strip_prefix("file://").unwrap();
    let line = def["range"]["start"]["line"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.lines().nth(line).unwrap().starts_with("topology ring("), "{def}");

    // Completion of a rule on a `require` line.
    let items = c.at("textDocument/completion", &uri, 6, 26);
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&"no_skip") && labels.contains(&"memory_capacity"),
        "{labels:?}"
    );

    // The outline.
    let symbols = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let names: Vec<&str> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"package") && names.contains(&"g"), "{names:?}");

    // Formatting: one edit, the formatter's text.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "let   x=1\n"}]}),
    );
    c.diagnostics(&uri);
    let edits = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    );
    assert_eq!(edits[0]["newText"], "let x = 1\n");
    c.stop();
}

#[test]
fn errors_in_types_carry_related_spans_and_syntax_errors_do_not_stop_the_server() {
    let mut c = Client::start();
    let uri = "file:///nowhere/t.mcm";
    let diags = c.open(uri, "let a = 32 MiB\nlet b = 25 GB/s\nlet c = a < b\n");
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["range"]["start"]["line"], 2);
    let related = diags[0]["relatedInformation"].as_array().expect("related spans");
    assert!(!related.is_empty(), "{diags:?}");
    let diags = c.open("file:///nowhere/u.mcm", "topology (\n");
    assert_eq!(diags.len(), 1);
    assert!(diags[0]["message"].as_str().unwrap().contains("syntax"), "{diags:?}");
    // Hover where nothing is known is `null`, not an error.
    assert_eq!(c.at("textDocument/hover", "file:///nowhere/u.mcm", 0, 3), Value::Null);
    c.stop();
}

#[test]
fn definitions_reach_imported_files() {
    let dir = common::scratch("lsp-import");
    std::fs::write(
        dir.join("parts.mcm"),
        "/// Two dies.\ntopology pair(memory: bytes = 1 MiB) {\n    chips die[2] { memory = memory, compute = 1 TFLOP/s }\n    link die[0] -> die[1] { bandwidth = 1 GB/s }\n}\n",
    )
    .unwrap();
    let main = "use \"parts.mcm\"\nlet p = pair()\n";
    let path = dir.join("main.mcm");
    std::fs::write(&path, main).unwrap();
    let uri = format!("file://{}", path.display());
    let mut c = Client::start();
    assert_eq!(c.open(&uri, main), Vec::<Value>::new());
    let def = c.at("textDocument/definition", &uri, 1, 9);
    assert!(def["uri"].as_str().unwrap().ends_with("/parts.mcm"), "{def}");
    assert_eq!(def["range"]["start"], json!({"line": 1, "character": 9}));
    let h = c.at("textDocument/hover", &uri, 1, 9);
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("`memory`: bytes (in B") && text.contains("default `1 MiB`") && text.contains("Two dies."),
        "{text}"
    );
    c.stop();
}

/// A document that names a device or a pipe as its graph is answered with
/// an error at the call: the server once read its own input as the graph,
/// and every later request hung.
#[test]
fn devices_and_pipes_named_as_graphs_are_not_read() {
    let dir = common::scratch("lsp-devices");
    let fifo = dir.join("pipe.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let uri = format!("file://{}", dir.join("d.mcm").display());
    let mut c = Client::start();
    for (name, shown) in [("/dev/stdin", "/dev/stdin"), ("pipe.json", "pipe.json")] {
        let text = format!("let g = graph(\"{name}\")\n");
        let diags = c.open(&uri, &text);
        assert_eq!(diags.len(), 1, "{diags:?}");
        let message = diags[0]["message"].as_str().unwrap();
        assert!(
            message.contains(shown) && message.contains("is not a regular file"),
            "{message}"
        );
        assert_eq!(diags[0]["range"]["start"], json!({"line": 0, "character": 8}));
        // The server still answers.
        assert_eq!(c.at("textDocument/hover", &uri, 0, 4)["range"]["start"]["character"], 4);
    }
    c.stop();
}

/// `exit` without `shutdown` ends the server with status 1, as the
/// protocol says.
#[test]
fn exit_without_shutdown_is_status_1() {
    let mut c = Client::start();
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), Some(1));
}
