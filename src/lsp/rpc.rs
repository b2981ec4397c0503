//! JSON-RPC 2.0 as the protocol uses it: a frame's body read as a request,
//! a notification or a response, or refused with the error the
//! specification gives (parse error, invalid request); and the messages the
//! server writes back.

use serde_json::{json, Value};
use std::io::{self, Write};

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;
/// The protocol's: a request other than `initialize` came first.
pub const SERVER_NOT_INITIALIZED: i32 = -32002;

#[derive(Debug)]
pub struct Request {
    /// A number or a string, answered as it came.
    pub id: Value,
    pub method: String,
    pub params: Value,
}

#[derive(Debug)]
pub struct Notification {
    pub method: String,
    pub params: Value,
}

#[derive(Debug)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    /// An answer to a request of the server's (it sends none).
    Response,
}

/// A body that is not a message: the error to answer it with, and its id
/// where one could be read (`null` otherwise).
#[derive(Debug)]
pub struct Refused {
    pub id: Value,
    pub code: i32,
    pub message: String,
}

impl Refused {
    fn new(id: Value, code: i32, message: impl Into<String>) -> Refused {
        Refused {
            id,
            code,
            message: message.into(),
        }
    }
}

/// Reads a frame's body as a message.
pub fn parse(body: &[u8]) -> Result<Message, Refused> {
    let text = std::str::from_utf8(body).map_err(|e| {
        Refused::new(
            Value::Null,
            PARSE_ERROR,
            format!("the message is not UTF-8 (byte {} is not)", e.valid_up_to()),
        )
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Refused::new(Value::Null, PARSE_ERROR, format!("the message is not JSON: {e}")))?;
    let Value::Object(mut obj) = value else {
        return Err(Refused::new(
            Value::Null,
            INVALID_REQUEST,
            "a message is a JSON object (batches are not part of the protocol)",
        ));
    };
    let id = match obj.remove("id") {
        None => None,
        Some(id @ (Value::Number(_) | Value::String(_))) => Some(id),
        Some(Value::Null) if !obj.contains_key("method") => Some(Value::Null),
        Some(other) => {
            return Err(Refused::new(
                Value::Null,
                INVALID_REQUEST,
                format!("a message's id is a number or a string, not `{other}`"),
            ))
        }
    };
    let params = obj.remove("params").unwrap_or(Value::Null);
    match (obj.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request(Request { id, method, params })),
        (Some(Value::String(method)), None) => Ok(Message::Notification(Notification { method, params })),
        (Some(other), id) => Err(Refused::new(
            id.unwrap_or_default(),
            INVALID_REQUEST,
            format!("a message's method is a string, not `{other}`"),
        )),
        (None, Some(_)) if obj.contains_key("result") || obj.contains_key("error") => Ok(Message::Response),
        (None, id) => Err(Refused::new(
            id.unwrap_or_default(),
            INVALID_REQUEST,
            "a message has a method (a request or a notification) or a result or error (a response)",
        )),
    }
}

/// The successful answer to request `id`.
pub fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The error answer to request `id` (`null` when it could not be read).
pub fn error(id: Value, code: i32, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

pub fn notification(method: &str, params: impl serde::Serialize) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Writes one message as a frame.
pub fn write(out: &mut impl Write, msg: &Value) -> io::Result<()> {
    let body = msg.to_string();
    write!(out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &[u8]) -> (Value, i32) {
        match parse(body) {
            Err(r) => (r.id, r.code),
            Ok(m) => panic!("{} read as {m:?}", String::from_utf8_lossy(body)),
        }
    }

    #[test]
    fn messages_are_told_apart_by_their_fields() {
        let Ok(Message::Request(r)) = parse(br#"{"jsonrpc":"2.0","id":"a","method":"m","params":[1]}"#) else {
            panic!()
        };
        assert_eq!((r.id, r.method.as_str(), r.params), (json!("a"), "m", json!([1])));
        let Ok(Message::Notification(n)) = parse(br#"{"jsonrpc":"2.0","method":"exit"}"#) else {
            panic!()
        };
        assert_eq!((n.method.as_str(), n.params), ("exit", Value::Null));
        assert!(matches!(parse(br#"{"id":3,"result":null}"#), Ok(Message::Response)));
        assert!(matches!(parse(br#"{"id":null,"error":{}}"#), Ok(Message::Response)));
    }

    #[test]
    fn bodies_that_are_not_json_are_parse_errors() {
        assert_eq!(refused(b"{\"id\": 1, \"method\""), (Value::Null, PARSE_ERROR));
        assert_eq!(refused(b"not json"), (Value::Null, PARSE_ERROR));
        assert_eq!(refused(b""), (Value::Null, PARSE_ERROR));
        assert_eq!(refused(b"{\"method\": \"\xff\xfe\"}"), (Value::Null, PARSE_ERROR));
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request() {
        assert_eq!(refused(b"[1, 2]"), (Value::Null, INVALID_REQUEST));
        assert_eq!(refused(b"42"), (Value::Null, INVALID_REQUEST));
        assert_eq!(refused(b"{}"), (Value::Null, INVALID_REQUEST));
        assert_eq!(refused(br#"{"id": 7}"#), (json!(7), INVALID_REQUEST));
        assert_eq!(refused(br#"{"id": 7, "method": 5}"#), (json!(7), INVALID_REQUEST));
        assert_eq!(
            refused(br#"{"id": [1], "method": "m"}"#),
            (Value::Null, INVALID_REQUEST)
        );
        assert_eq!(
            refused(br#"{"id": null, "method": "m"}"#),
            (Value::Null, INVALID_REQUEST)
        );
    }

    #[test]
    fn answers_are_framed_with_their_length_in_bytes() {
        let mut out = Vec::new();
        write(&mut out, &error(json!(1), INTERNAL_ERROR, "é")).unwrap();
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(head, format!("Content-Length: {}", body.len()));
        let v: Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], INTERNAL_ERROR);
        assert_eq!(v["id"], 1);
    }
}
