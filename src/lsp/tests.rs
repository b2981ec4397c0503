//! The server on in-memory streams: the protocol's order of messages, the
//! answers to frames and bodies that are not messages, and the position
//! encoding.

use super::rpc::{INVALID_REQUEST, PARSE_ERROR, SERVER_NOT_INITIALIZED};
use super::{guarded, serve};
use serde_json::{json, Value};

fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn request(id: i64, method: &str, params: Value) -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn notify(method: &str, params: Value) -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

fn initialize(encodings: &[&str]) -> Vec<u8> {
    request(
        0,
        "initialize",
        json!({"capabilities": {"general": {"positionEncodings": encodings}}}),
    )
}

/// Serves `input` to its end: whether it shut down, and what it wrote.
fn run(input: &[u8]) -> (bool, Vec<Value>) {
    let mut out = Vec::new();
    let clean = serve(input, &mut out).unwrap();
    let mut msgs = Vec::new();
    let mut rest = &out[..];
    while !rest.is_empty() {
        let text = std::str::from_utf8(rest).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let len: usize = head.strip_prefix("Content-Length: ").unwrap().parse().unwrap();
        msgs.push(serde_json::from_str(&body[..len]).unwrap());
        rest = &rest[head.len() + 4 + len..];
    }
    (clean, msgs)
}

fn code(m: &Value) -> i64 {
    m["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {m}"))
}

#[test]
fn the_protocol_order_is_kept_and_only_exit_ends_the_session() {
    let mut input = request(1, "textDocument/hover", json!({}));
    input.extend(notify("textDocument/didOpen", json!({})));
    input.extend(initialize(&[]));
    input.extend(request(2, "initialize", json!({})));
    input.extend(request(3, "shutdown", Value::Null));
    input.extend(request(4, "textDocument/hover", json!({})));
    input.extend(request(5, "shutdown", Value::Null));
    input.extend(notify("exit", Value::Null));
    input.extend(request(6, "never/read", Value::Null));
    let (clean, msgs) = run(&input);
    assert!(clean, "exit after shutdown");
    let ids: Vec<&Value> = msgs.iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(0), &json!(2), &json!(3), &json!(4), &json!(5)]);
    assert_eq!(code(&msgs[0]), SERVER_NOT_INITIALIZED as i64);
    assert_eq!(msgs[1]["result"]["capabilities"]["positionEncoding"], "utf-16");
    assert_eq!(code(&msgs[2]), INVALID_REQUEST as i64);
    assert_eq!(msgs[3]["result"], Value::Null);
    assert!(msgs[3].get("error").is_none());
    assert_eq!(code(&msgs[4]), INVALID_REQUEST as i64);
    assert_eq!(code(&msgs[5]), INVALID_REQUEST as i64);

    // `exit` without `shutdown`, or the input closed: not a clean end.
    let mut input = initialize(&[]);
    input.extend(notify("exit", Value::Null));
    assert!(!run(&input).0);
    assert!(!run(&initialize(&[])).0);
}

#[test]
fn frames_and_bodies_that_are_not_messages_are_answered_and_the_session_goes_on() {
    let hover = |id: i64| {
        request(
            id,
            "textDocument/hover",
            json!({"textDocument": {"uri": "file:///a.mcm"}, "position": {"line": 0, "character": 0}}),
        )
    };
    let cases: Vec<(&str, Vec<u8>, i32)> = vec![
        (
            "a body that is not JSON",
            b"Content-Length: 8\r\n\r\nnot json".to_vec(),
            PARSE_ERROR,
        ),
        (
            "invalid UTF-8",
            b"Content-Length: 4\r\n\r\n\"\xff\xfe\"".to_vec(),
            PARSE_ERROR,
        ),
        (
            "a length too short",
            b"Content-Length: 5\r\n\r\n{\"id\": 1, \"method\": \"x\"}".to_vec(),
            PARSE_ERROR,
        ),
        (
            "a length too long",
            b"Content-Length: 30\r\n\r\n{\"method\": \"x\"}".to_vec(),
            PARSE_ERROR,
        ),
        ("no length", b"Content-Type: text\r\n\r\n{}".to_vec(), PARSE_ERROR),
        (
            "a length that is no number",
            b"Content-Length: ten\r\n\r\n{}".to_vec(),
            PARSE_ERROR,
        ),
        (
            "an absurd length",
            b"Content-Length: 1000000000000000\r\n\r\n{}".to_vec(),
            PARSE_ERROR,
        ),
        ("no header", b"hello\r\n".to_vec(), PARSE_ERROR),
        ("an array", frame(&json!([1, 2])), INVALID_REQUEST),
        (
            "an object that is no message",
            frame(&json!({"jsonrpc": "2.0"})),
            INVALID_REQUEST,
        ),
        (
            "an id that is an object",
            frame(&json!({"id": {}, "method": "m"})),
            INVALID_REQUEST,
        ),
    ];
    for (what, bad, expected) in cases {
        let mut input = initialize(&[]);
        input.extend(bad);
        input.extend(hover(7));
        input.extend(request(8, "shutdown", Value::Null));
        input.extend(notify("exit", Value::Null));
        let (clean, msgs) = run(&input);
        assert!(clean, "{what}: {msgs:?}");
        let codes: Vec<i64> = msgs[1..msgs.len() - 2].iter().map(code).collect();
        assert_eq!(codes, [expected as i64], "{what}: {msgs:?}");
        assert_eq!(msgs[1]["id"], Value::Null, "{what}");
        let answer = &msgs[msgs.len() - 2];
        assert_eq!(
            (&answer["id"], &answer["result"]),
            (&json!(7), &Value::Null),
            "{what}: {msgs:?}"
        );
    }
}

#[test]
fn positions_are_read_in_the_negotiated_encoding() {
    // `é` is one UTF-16 unit and two UTF-8 bytes: the `x` after it on the
    // last line is at character 18 in UTF-16 and 19 in UTF-8; a completion
    // after `// é` (character 4 in UTF-16, 5 in UTF-8) once panicked.
    let uri = "file:///nowhere/e.mcm";
    let open = notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mcm", "version": 1, "text": "// é\nlet x = 1\nlet z = ring(\"é\", x)\n"}}),
    );
    let at = |id: i64, method: &str, line: u32, character: u32| {
        request(
            id,
            method,
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        )
    };
    for (offered, spoken, col) in [(&[][..], "utf-16", 18), (&["utf-32", "utf-8"][..], "utf-8", 19)] {
        let mut input = initialize(offered);
        input.extend(open.clone());
        input.extend(at(1, "textDocument/completion", 0, col - 14));
        input.extend(at(2, "textDocument/hover", 2, col));
        let (_, msgs) = run(&input);
        assert_eq!(msgs[0]["result"]["capabilities"]["positionEncoding"], spoken);
        let answer = |id: i64| msgs.iter().find(|m| m["id"] == id).unwrap();
        assert!(
            answer(1)["result"].as_array().is_some_and(|a| !a.is_empty()),
            "{spoken}: {msgs:?}"
        );
        let hover = &answer(2)["result"];
        assert!(
            hover["contents"]["value"].as_str().unwrap().contains("let x"),
            "{spoken}: {hover}"
        );
        assert_eq!(
            hover["range"]["start"],
            json!({"line": 2, "character": col}),
            "{spoken}"
        );
    }
}

#[test]
fn a_panic_in_a_handler_becomes_an_internal_error() {
    let r: Result<(), String> = guarded("textDocument/hover", || panic!("boom"));
    let message = r.unwrap_err();
    assert!(
        message.contains("`textDocument/hover`") && message.contains("boom"),
        "{message}"
    );
    assert!(guarded("x", || 3).is_ok_and(|v| v == 3));
}
