//! `mcmpart lsp`: a language server over standard input and output,
//! synchronous (the front end is fast enough to recompile a file on every
//! change). The frames and JSON-RPC are read here ([`frame`], [`rpc`]) so
//! that no input ends the session: a bad frame or body is answered with the
//! error JSON-RPC gives and reading goes on; a panic in a handler answers
//! its request with an internal error. The message types are `lsp-types`';
//! what the server knows comes from the front end (`mcm_lang::compile_str`,
//! `mcm_lang::ide`, `mcm_lang::format`).

mod convert;
mod frame;
mod rpc;

use crate::lang::ide::{self, CompletionKind as K, SymbolKind as S};
use crate::lang::{compile_str, Compiled};
use convert::{diagnostics, location, Encoding, Lines};
use frame::{Frame, FrameReader};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Exit, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, Initialize, Request as _, Shutdown,
};
use lsp_types::*;
use rpc::{Message, Notification, Request, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// An open document: its text and the last compilation of it.
struct Doc {
    text: String,
    compiled: Option<Compiled>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Uninitialized,
    Running,
    ShutDown,
}

#[derive(Default)]
struct Server {
    docs: HashMap<Url, Doc>,
    enc: Encoding,
    phase: Phase,
}

/// Runs the server on standard input and output until the client sends
/// `exit` or closes the input; true when it asked to shut down first (the
/// exit status is then 0, otherwise 1, as the protocol says).
pub fn run_stdio() -> Result<bool, String> {
    serve(io::stdin().lock(), io::stdout().lock()).map_err(|e| format!("the server's input or output failed: {e}"))
}

/// Serves one client: [`run_stdio`] on any input and output.
pub fn serve(input: impl Read, mut output: impl Write) -> io::Result<bool> {
    let mut frames = FrameReader::new(input);
    let mut server = Server::default();
    while let Some(frame) = frames.next_frame()? {
        let body = match frame {
            Frame::Body(body) => body,
            Frame::Bad(why) => {
                eprintln!("mcmpart lsp: a frame that cannot be read: {why}");
                rpc::write(&mut output, &rpc::error(Value::Null, rpc::PARSE_ERROR, why))?;
                continue;
            }
        };
        let msg = match rpc::parse(&body) {
            Ok(msg) => msg,
            Err(refused) => {
                eprintln!("mcmpart lsp: a message refused: {}", refused.message);
                if refused.code == rpc::PARSE_ERROR {
                    frames.recover(body);
                }
                rpc::write(&mut output, &rpc::error(refused.id, refused.code, refused.message))?;
                continue;
            }
        };
        match msg {
            Message::Request(req) => rpc::write(&mut output, &server.request(req))?,
            Message::Notification(n) if n.method == Exit::METHOD => return Ok(server.phase == Phase::ShutDown),
            Message::Notification(n) => {
                for out in server.notification(n) {
                    rpc::write(&mut output, &out)?;
                }
            }
            Message::Response => {}
        }
    }
    Ok(server.phase == Phase::ShutDown)
}

/// Runs a handler: a panic in it (a bug, of the front end or of the server)
/// is logged and becomes an error, and the server goes on.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let message = format!("internal error in `{what}` (a bug of mcmpart): {why}");
        eprintln!("mcmpart lsp: {message}");
        message
    })
}

/// Compiles a document as the file it is, imports and graphs relative to it.
fn compile(uri: &Url, text: &str) -> Result<Compiled, String> {
    let path = uri.to_file_path().unwrap_or_else(|_| PathBuf::from("untitled.mcm"));
    let name = path
        .file_name()
        .map_or("untitled.mcm".into(), |n| n.to_string_lossy().into_owned());
    let dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    guarded("compile", || compile_str(&name, text, &dir))
}

impl Server {
    /// Answers a request: the protocol's order first (`initialize`, then
    /// anything, then `shutdown`, then nothing but `exit`).
    fn request(&mut self, req: Request) -> Value {
        let Request { id, method, params } = req;
        match (self.phase, method.as_str()) {
            (Phase::Uninitialized, Initialize::METHOD) => rpc::response(id, self.initialize(&params)),
            (Phase::Uninitialized, _) => rpc::error(
                id,
                rpc::SERVER_NOT_INITIALIZED,
                format!("`{method}` before `initialize`"),
            ),
            (_, Initialize::METHOD) => rpc::error(id, INVALID_REQUEST, "the server is already initialized"),
            (Phase::ShutDown, _) => rpc::error(
                id,
                INVALID_REQUEST,
                format!("`{method}` after `shutdown`: only `exit` is expected"),
            ),
            (Phase::Running, Shutdown::METHOD) => {
                self.phase = Phase::ShutDown;
                rpc::response(id, Value::Null)
            }
            (Phase::Running, _) => match guarded(&method, || self.answer(&method, params)) {
                Ok(Ok(result)) => rpc::response(id, result),
                Ok(Err((code, message))) => rpc::error(id, code, message),
                Err(message) => rpc::error(id, INTERNAL_ERROR, message),
            },
        }
    }

    /// The capabilities, in the position encoding the client prefers of
    /// those the server speaks.
    fn initialize(&mut self, params: &Value) -> Value {
        let offered: Vec<PositionEncodingKind> = params
            .pointer("/capabilities/general/positionEncodings")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        self.enc = Encoding::negotiate(&offered);
        self.phase = Phase::Running;
        let capabilities = ServerCapabilities {
            position_encoding: Some(self.enc.kind()),
            text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            definition_provider: Some(OneOf::Left(true)),
            document_symbol_provider: Some(OneOf::Left(true)),
            document_formatting_provider: Some(OneOf::Left(true)),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(vec![".".into(), " ".into()]),
                ..CompletionOptions::default()
            }),
            ..ServerCapabilities::default()
        };
        serde_json::to_value(InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "mcmpart".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        })
        .unwrap_or_default()
    }

    /// Keeps the open documents, and publishes a changed one's diagnostics.
    /// Notifications before `initialize` or after `shutdown` are dropped.
    fn notification(&mut self, n: Notification) -> Vec<Value> {
        if self.phase != Phase::Running {
            return vec![];
        }
        let method = n.method.clone();
        guarded(&method, || self.document_changed(n)).unwrap_or_default()
    }

    fn document_changed(&mut self, n: Notification) -> Vec<Value> {
        fn params<P: serde::de::DeserializeOwned>(n: Notification) -> Option<P> {
            serde_json::from_value(n.params)
                .map_err(|e| eprintln!("mcmpart lsp: `{}` ignored: {e}", n.method))
                .ok()
        }
        let uri = match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Some(p) = params::<DidOpenTextDocumentParams>(n) else {
                    return vec![];
                };
                let doc = Doc {
                    text: p.text_document.text,
                    compiled: None,
                };
                self.docs.insert(p.text_document.uri.clone(), doc);
                p.text_document.uri
            }
            DidChangeTextDocument::METHOD => {
                let Some(p) = params::<DidChangeTextDocumentParams>(n) else {
                    return vec![];
                };
                let doc = self.docs.entry(p.text_document.uri.clone()).or_insert(Doc {
                    text: String::new(),
                    compiled: None,
                });
                for change in p.content_changes {
                    apply(&mut doc.text, change, self.enc);
                }
                p.text_document.uri
            }
            DidCloseTextDocument::METHOD => {
                let Some(p) = params::<DidCloseTextDocumentParams>(n) else {
                    return vec![];
                };
                self.docs.remove(&p.text_document.uri);
                return vec![publish(p.text_document.uri, Vec::new())];
            }
            _ => return vec![],
        };
        let Some(doc) = self.docs.get_mut(&uri) else {
            return vec![];
        };
        let diags = match compile(&uri, &doc.text) {
            Ok(c) => {
                let diags = diagnostics(&c, &uri, &doc.text, self.enc);
                doc.compiled = Some(c);
                diags
            }
            Err(message) => {
                doc.compiled = None;
                vec![Diagnostic {
                    severity: Some(DiagnosticSeverity::ERROR),
                    source: Some("mcmpart".into()),
                    message,
                    ..Diagnostic::default()
                }]
            }
        };
        vec![publish(uri, diags)]
    }

    /// The result of a request of a running server, or its error.
    fn answer(&self, method: &str, params: Value) -> Result<Value, (i32, String)> {
        let enc = self.enc;
        match method {
            HoverRequest::METHOD => self.with::<HoverParams, _>(params, |d, _, at| {
                let (span, text) = ide::hover(d.compiled.as_ref()?, at)?;
                Some(Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: text,
                    }),
                    range: Some(Lines::new(&d.text, enc).range(span)),
                })
            }),
            GotoDefinition::METHOD => self.with::<GotoDefinitionParams, _>(params, |d, uri, at| {
                let c = d.compiled.as_ref()?;
                let span = ide::definition(c, at)?;
                Some(GotoDefinitionResponse::Scalar(location(c, uri, span, enc)?))
            }),
            Completion::METHOD => self.with::<CompletionParams, _>(params, |d, _, at| {
                let items = ide::completions(d.compiled.as_ref(), &d.text, at)
                    .into_iter()
                    .map(|c| CompletionItem {
                        label: c.label,
                        kind: Some(match c.kind {
                            K::Rule => CompletionItemKind::INTERFACE,
                            K::Topology => CompletionItemKind::CLASS,
                            K::Value => CompletionItemKind::VARIABLE,
                            K::Function => CompletionItemKind::FUNCTION,
                            K::Attribute => CompletionItemKind::FIELD,
                            K::Unit => CompletionItemKind::UNIT,
                            K::Keyword => CompletionItemKind::KEYWORD,
                        }),
                        detail: Some(c.detail),
                        ..CompletionItem::default()
                    })
                    .collect();
                Some(CompletionResponse::Array(items))
            }),
            DocumentSymbolRequest::METHOD => self.with::<DocumentSymbolParams, _>(params, |d, _, _| {
                let lines = Lines::new(&d.text, enc);
                #[allow(deprecated)] // `deprecated` is a required field of the type
                let symbols = ide::symbols(d.compiled.as_ref()?)
                    .into_iter()
                    .filter(|s| s.span.file == 0)
                    .map(|s| DocumentSymbol {
                        name: s.name,
                        detail: (!s.detail.is_empty()).then_some(s.detail),
                        kind: match s.kind {
                            S::Topology => SymbolKind::CLASS,
                            S::Constraint => SymbolKind::INTERFACE,
                            S::Let => SymbolKind::VARIABLE,
                            S::Problem => SymbolKind::OBJECT,
                            S::Test => SymbolKind::METHOD,
                            S::Use => SymbolKind::MODULE,
                        },
                        tags: None,
                        deprecated: None,
                        range: lines.range(s.span),
                        selection_range: lines.range(s.name_span),
                        children: None,
                    })
                    .collect();
                Some(DocumentSymbolResponse::Nested(symbols))
            }),
            Formatting::METHOD => self.with::<DocumentFormattingParams, _>(params, |d, _, _| {
                let formatted = crate::lang::format::format_source(&d.text).ok()?;
                let end = Lines::new(&d.text, enc).position(d.text.len());
                Some(vec![TextEdit::new(Range::new(Position::new(0, 0), end), formatted)])
            }),
            _ => Err((METHOD_NOT_FOUND, format!("unknown method `{method}`"))),
        }
    }

    /// Decodes a request's parameters, finds its document and the byte
    /// offset of its position, and answers `null` when `f` has nothing.
    fn with<P, R>(&self, params: Value, f: impl FnOnce(&Doc, &Url, usize) -> Option<R>) -> Result<Value, (i32, String)>
    where
        P: serde::de::DeserializeOwned + AtDoc,
        R: serde::Serialize,
    {
        let params: P = serde_json::from_value(params).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
        let (uri, pos) = params.at();
        let Some(doc) = self.docs.get(uri) else {
            return Ok(Value::Null);
        };
        let at = pos.map_or(0, |p| Lines::new(&doc.text, self.enc).offset(p));
        Ok(f(doc, uri, at).map_or(Value::Null, |r| serde_json::to_value(r).unwrap_or_default()))
    }
}

/// The document (and position) a request is about.
trait AtDoc {
    fn at(&self) -> (&Url, Option<Position>);
}

impl AtDoc for TextDocumentPositionParams {
    fn at(&self) -> (&Url, Option<Position>) {
        (&self.text_document.uri, Some(self.position))
    }
}

impl AtDoc for HoverParams {
    fn at(&self) -> (&Url, Option<Position>) {
        self.text_document_position_params.at()
    }
}

impl AtDoc for GotoDefinitionParams {
    fn at(&self) -> (&Url, Option<Position>) {
        self.text_document_position_params.at()
    }
}

impl AtDoc for CompletionParams {
    fn at(&self) -> (&Url, Option<Position>) {
        self.text_document_position.at()
    }
}

impl AtDoc for DocumentSymbolParams {
    fn at(&self) -> (&Url, Option<Position>) {
        (&self.text_document.uri, None)
    }
}

impl AtDoc for DocumentFormattingParams {
    fn at(&self) -> (&Url, Option<Position>) {
        (&self.text_document.uri, None)
    }
}

/// A change of a document: the whole text, or a range replaced (the
/// server asks for whole texts, but a range is applied all the same).
fn apply(text: &mut String, change: TextDocumentContentChangeEvent, enc: Encoding) {
    match change.range {
        None => *text = change.text,
        Some(r) => {
            let lines = Lines::new(text, enc);
            let (a, b) = (lines.offset(r.start), lines.offset(r.end));
            text.replace_range(a.min(b)..a.max(b), &change.text);
        }
    }
}

fn publish(uri: Url, diagnostics: Vec<Diagnostic>) -> Value {
    rpc::notification(
        PublishDiagnostics::METHOD,
        PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        },
    )
}

#[cfg(test)]
mod tests;
