//! `mcmpart lsp`: a language server over standard input and output. The
//! protocol plumbing is rust-analyzer's `lsp-server` (synchronous: the
//! front end is fast enough to recompile a file on every change) and the
//! message types are `lsp-types`; what the server knows comes from the
//! front end (`mcm_lang::compile_str`, `mcm_lang::ide`, `mcm_lang::format`).

mod convert;

use crate::lang::ide::{self, CompletionKind as K, SymbolKind as S};
use crate::lang::{compile_str, Compiled};
use convert::{diagnostics, location, Lines};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _, PublishDiagnostics,
};
use lsp_types::request::{Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, Request as _};
use lsp_types::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// An open document: its text and the last compilation of it.
struct Doc {
    text: String,
    compiled: Option<Compiled>,
}

#[derive(Default)]
struct Server {
    docs: HashMap<Url, Doc>,
}

/// Runs the server on standard input and output until the client exits.
pub fn run_stdio() -> Result<(), String> {
    let (connection, io) = Connection::stdio();
    serve(&connection)?;
    drop(connection);
    io.join()
        .map_err(|e| format!("the server's input or output failed: {e}"))
}

/// Serves one client on a connection: initialize, then requests and
/// notifications until `shutdown`.
pub fn serve(connection: &Connection) -> Result<(), String> {
    let caps = ServerCapabilities {
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
    let caps = serde_json::to_value(caps).map_err(|e| e.to_string())?;
    connection.initialize(caps).map_err(|e| format!("initialize: {e}"))?;
    let mut server = Server::default();
    for msg in &connection.receiver {
        match msg {
            Message::Request(req) => {
                if connection.handle_shutdown(&req).map_err(|e| e.to_string())? {
                    return Ok(());
                }
                let resp = server.request(req);
                connection
                    .sender
                    .send(Message::Response(resp))
                    .map_err(|e| e.to_string())?;
            }
            Message::Notification(n) => {
                for out in server.notification(n) {
                    connection
                        .sender
                        .send(Message::Notification(out))
                        .map_err(|e| e.to_string())?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

/// Compiles a document as the file it is, imports and graphs relative to it.
/// A panic in the front end is a bug, but must not take the editor's server down.
fn compile(uri: &Url, text: &str) -> Option<Compiled> {
    let path = uri.to_file_path().unwrap_or_else(|_| PathBuf::from("untitled.mcm"));
    let name = path
        .file_name()
        .map_or("untitled.mcm".into(), |n| n.to_string_lossy().into_owned());
    let dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compile_str(&name, text, &dir))).ok()
}

impl Server {
    fn notification(&mut self, n: Notification) -> Vec<Notification> {
        let uri = match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) else {
                    return vec![];
                };
                self.docs.insert(
                    p.text_document.uri.clone(),
                    Doc {
                        text: p.text_document.text,
                        compiled: None,
                    },
                );
                p.text_document.uri
            }
            DidChangeTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) else {
                    return vec![];
                };
                let Some(change) = p.content_changes.into_iter().last() else {
                    return vec![];
                };
                self.docs.insert(
                    p.text_document.uri.clone(),
                    Doc {
                        text: change.text,
                        compiled: None,
                    },
                );
                p.text_document.uri
            }
            DidCloseTextDocument::METHOD => {
                let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) else {
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
        doc.compiled = compile(&uri, &doc.text);
        let diags = doc
            .compiled
            .as_ref()
            .map_or_else(Vec::new, |c| diagnostics(c, &uri, &doc.text));
        vec![publish(uri, diags)]
    }

    fn request(&self, req: Request) -> Response {
        let id = req.id.clone();
        let result = match req.method.as_str() {
            HoverRequest::METHOD => self.with::<HoverParams, _>(req, |d, _, at| {
                let (span, text) = ide::hover(d.compiled.as_ref()?, at)?;
                Some(Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: text,
                    }),
                    range: Some(Lines::new(&d.text).range(span)),
                })
            }),
            GotoDefinition::METHOD => self.with::<GotoDefinitionParams, _>(req, |d, uri, at| {
                let c = d.compiled.as_ref()?;
                let span = ide::definition(c, at)?;
                Some(GotoDefinitionResponse::Scalar(location(c, uri, span)?))
            }),
            Completion::METHOD => self.with::<CompletionParams, _>(req, |d, _, at| {
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
            DocumentSymbolRequest::METHOD => self.with::<DocumentSymbolParams, _>(req, |d, _, _| {
                let lines = Lines::new(&d.text);
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
            Formatting::METHOD => self.with::<DocumentFormattingParams, _>(req, |d, _, _| {
                let formatted = crate::lang::format::format_source(&d.text).ok()?;
                let end = Lines::new(&d.text).position(d.text.len());
                Some(vec![TextEdit::new(Range::new(Position::new(0, 0), end), formatted)])
            }),
            _ => {
                return Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("unknown method {}", req.method),
                )
            }
        };
        match result {
            Ok(v) => Response::new_ok(id, v),
            Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, e),
        }
    }

    /// Decodes a request's parameters, finds its document and the byte
    /// offset of its position, and answers `null` when `f` has nothing.
    fn with<P, R>(
        &self,
        req: Request,
        f: impl FnOnce(&Doc, &Url, usize) -> Option<R>,
    ) -> Result<serde_json::Value, String>
    where
        P: serde::de::DeserializeOwned + AtDoc,
        R: serde::Serialize,
    {
        let params: P = serde_json::from_value(req.params).map_err(|e| e.to_string())?;
        let (uri, pos) = params.at();
        let Some(doc) = self.docs.get(uri) else {
            return Ok(serde_json::Value::Null);
        };
        let at = pos.map_or(0, |p| Lines::new(&doc.text).offset(p));
        Ok(f(doc, uri, at).map_or(serde_json::Value::Null, |r| serde_json::to_value(r).unwrap_or_default()))
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

fn publish(uri: Url, diagnostics: Vec<Diagnostic>) -> Notification {
    Notification::new(
        PublishDiagnostics::METHOD.to_string(),
        PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        },
    )
}
