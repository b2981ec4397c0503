//! `mcmpart lsp` driven as an editor drives it: JSON-RPC over its standard
//! input and output.

use crate::common;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcmpart"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start mcmpart lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = c.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {}}),
        );
        assert_eq!(init["capabilities"]["hoverProvider"], true, "{init}");
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut len = 0;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed its output"
            );
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                len = n.parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        self.stdout.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its result, skipping notifications.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.receive();
            if m["id"] == id {
                assert!(m.get("error").is_none(), "{m}");
                return m["result"].clone();
            }
        }
    }

    /// The next diagnostics published for `uri`.
    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        loop {
            let m = self.receive();
            if m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri {
                return m["params"]["diagnostics"].as_array().unwrap().clone();
            }
        }
    }

    fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "mcm", "version": 1, "text": text}}),
        );
        self.diagnostics(uri)
    }

    fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        self.request(
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        )
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
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
