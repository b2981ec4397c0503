//! Reads a file and everything it imports, and builds each module's scope.
//!
//! `use std::x::{a, b}` reads `stdlib/x.mcm` (embedded in the binary, so the
//! tool works from any folder); `use "path.mcm"` reads a file relative to the
//! importing one. Each module's scope holds its own items and its imports.

use super::ast::*;
use super::parse::parse_module;
use mcm_core::diag::{unknown_help, Diag};
use mcm_core::source::{FileId, SourceMap, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The standard library, as `(module name, source)`.
pub const STDLIB: &[(&str, &str)] = &[
    ("placement", include_str!("../../../stdlib/placement.mcm")),
    ("topologies", include_str!("../../../stdlib/topologies.mcm")),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemRef {
    pub module: usize,
    pub index: usize,
}

#[derive(Debug)]
pub struct LoadedModule {
    pub ast: Module,
    pub scope: HashMap<String, ItemRef>,
}

#[derive(Debug)]
pub struct Program {
    pub sources: SourceMap,
    pub modules: Vec<LoadedModule>,
}

impl Program {
    pub fn item(&self, r: ItemRef) -> &Item {
        &self.modules[r.module].ast.items[r.index]
    }

    pub fn lookup(&self, module: usize, name: &str) -> Option<ItemRef> {
        self.modules[module].scope.get(name).copied()
    }

    /// Whether a module is one of the embedded standard library's.
    pub fn is_std(&self, module: usize) -> bool {
        let f = self.sources.get(self.modules[module].ast.file);
        f.path.is_none() && STDLIB.iter().any(|(name, _)| f.name == format!("stdlib/{name}.mcm"))
    }

    pub fn names_in_scope(&self, module: usize) -> impl Iterator<Item = &str> + Clone {
        self.modules[module].scope.keys().map(String::as_str)
    }
}

/// The name an item is known by, if it can be imported.
pub fn item_name(item: &Item) -> Option<&Ident> {
    match item {
        Item::Let(l) => Some(&l.name),
        Item::Topology(t) => Some(&t.name),
        Item::Constraint(c) => Some(&c.name),
        _ => None,
    }
}

enum Source {
    Std(&'static str, &'static str),
    File(PathBuf),
}

struct Loader {
    sources: SourceMap,
    modules: Vec<LoadedModule>,
    /// Module index by stdlib name or canonical path.
    by_key: HashMap<String, usize>,
    /// Each resolved `use`: importing module, imported module, names (all when `None`).
    resolved: Vec<(usize, usize, Option<Vec<Ident>>, Span)>,
    diags: Vec<Diag>,
}

/// Why a source file cannot be read, and what to do about it.
struct Unreadable {
    message: String,
    help: &'static str,
}

/// A source file's text: UTF-8, a leading byte-order mark dropped (some
/// editors write one, and it would read as a stray character).
fn read_source(path: &Path) -> Result<String, Unreadable> {
    if path.is_dir() {
        return Err(Unreadable {
            message: format!("`{}` is a folder, not a .mcm file", path.display()),
            help: "name the .mcm file itself",
        });
    }
    // Capped like graph files: `check /dev/zero` would read until memory ran out.
    let limit = mcm_core::textfile::MAX_TEXT;
    let bytes = mcm_core::textfile::read_bytes(path, limit).map_err(|e| match e {
        mcm_core::textfile::ReadError::FileTooLarge(_) => Unreadable {
            message: format!(
                "`{}` holds more than {} MiB, the most this tool reads",
                path.display(),
                limit >> 20
            ),
            help: "a .mcm file is program text; large data belongs in graph files",
        },
        e => Unreadable {
            message: match e {
                mcm_core::textfile::ReadError::Io(e) => format!("cannot read `{}`: {e}", path.display()),
                e => e.message("file", &path.display().to_string()),
            },
            help: "check the path of the .mcm file",
        },
    })?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let column = String::from_utf8_lossy(&good[start..]).chars().count() + 1;
            Err(Unreadable {
                message: format!(
                    "`{}` is not UTF-8 text: byte 0x{:02X} at line {line}, column {column}",
                    path.display(),
                    bytes[e.valid_up_to()]
                ),
                help: "save the file as UTF-8",
            })
        }
    }
}

/// Loads a program from a file.
pub fn load_file(path: &Path) -> (Program, Vec<Diag>) {
    let mut l = Loader::new();
    match read_source(path) {
        Ok(text) => {
            let key = key_of(path);
            l.add(key, path.display().to_string(), Some(path.to_path_buf()), text);
        }
        Err(e) => l.diags.push(Diag::error("mcm::io", e.message).help(e.help)),
    }
    l.finish()
}

/// Loads a program from text; relative paths resolve against `dir`.
pub fn load_str(name: &str, text: &str, dir: &Path) -> (Program, Vec<Diag>) {
    let mut l = Loader::new();
    let path = dir.join(name);
    l.add(
        format!("mem:{}", path.display()),
        name.to_string(),
        Some(path),
        text.strip_prefix('\u{feff}').unwrap_or(text).to_string(),
    );
    l.finish()
}

fn key_of(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

impl Loader {
    fn new() -> Loader {
        Loader {
            sources: SourceMap::new(),
            modules: Vec::new(),
            by_key: HashMap::new(),
            resolved: Vec::new(),
            diags: Vec::new(),
        }
    }

    /// Parses and registers one module, then loads what it imports.
    fn add(&mut self, key: String, name: String, path: Option<PathBuf>, text: String) -> Option<usize> {
        if let Some(&m) = self.by_key.get(&key) {
            return Some(m);
        }
        let file = self.sources.add(name, path, text);
        let text = self.sources.get(file).text.clone();
        let ast = match parse_module(file, &text) {
            Ok(m) => m,
            Err(d) => {
                self.diags.extend(d);
                Module {
                    file,
                    items: Vec::new(),
                }
            }
        };
        let idx = self.modules.len();
        self.by_key.insert(key, idx);
        let uses: Vec<UseDecl> = ast
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Use(u) => Some(u.clone()),
                _ => None,
            })
            .collect();
        self.modules.push(LoadedModule {
            ast,
            scope: HashMap::new(),
        });
        for u in &uses {
            let Some((src, names)) = self.resolve_source(file, u) else {
                continue;
            };
            if let Some(target) = self.load_source(src, u.span) {
                self.resolved.push((idx, target, names, u.span));
            }
        }
        Some(idx)
    }

    fn resolve_source(&mut self, from: FileId, u: &UseDecl) -> Option<(Source, Option<Vec<Ident>>)> {
        match &u.target {
            UseTarget::File { path, span } => {
                let full = self.sources.base_dir(from).join(path);
                if full.is_dir() {
                    self.diags.push(
                        Diag::error("mcm::import", format!("`{path}` is a folder, not a .mcm file"))
                            .label(*span, format!("{} is a folder", full.display()))
                            .help("`use \"file.mcm\"` names a file, relative to the importing file"),
                    );
                    return None;
                }
                if !full.is_file() {
                    self.diags.push(
                        Diag::error("mcm::import", format!("cannot find `{path}`"))
                            .label(*span, format!("looked for {}", full.display()))
                            .help("`use \"file.mcm\"` is relative to the importing file"),
                    );
                    return None;
                }
                Some((Source::File(full), None))
            }
            UseTarget::Path { segments, items } => {
                let first = &segments[0];
                if first.name != "std" {
                    self.diags.push(
                        Diag::error("mcm::import", format!("unknown module root `{}`", first.name))
                            .label(first.span, "not a module")
                            .help("module paths start with `std::`; import a file with `use \"path/file.mcm\"`"),
                    );
                    return None;
                }
                let rest = &segments[1..];
                if rest.is_empty() {
                    self.diags.push(
                        Diag::error("mcm::import", "`use std` needs a module")
                            .label(first.span, "which module?")
                            .help("e.g. `use std::placement::{acyclic_flow, no_skip}` or `use std::topologies::ring`"),
                    );
                    return None;
                }
                let find = |name: &str| STDLIB.iter().find(|(n, _)| *n == name).copied();
                let whole: Vec<&str> = rest.iter().map(|s| s.name.as_str()).collect();
                let std_names = STDLIB.iter().map(|(n, _)| *n);
                match items {
                    UseItems::Some(list) => match find(&whole.join("/")) {
                        Some((n, t)) => Some((Source::Std(n, t), Some(list.clone()))),
                        None => {
                            self.unknown_module(rest, segments, std_names);
                            None
                        }
                    },
                    UseItems::All => match find(&whole.join("/")) {
                        Some((n, t)) => Some((Source::Std(n, t), None)),
                        None => {
                            self.unknown_module(rest, segments, std_names);
                            None
                        }
                    },
                    UseItems::Bare => {
                        if let Some((n, t)) = find(&whole.join("/")) {
                            return Some((Source::Std(n, t), None));
                        }
                        if rest.len() >= 2 {
                            let module = whole[..whole.len() - 1].join("/");
                            if let Some((n, t)) = find(&module) {
                                return Some((Source::Std(n, t), Some(vec![rest[rest.len() - 1].clone()])));
                            }
                            self.unknown_module(&rest[..rest.len() - 1], segments, std_names);
                        } else {
                            self.unknown_module(rest, segments, std_names);
                        }
                        None
                    }
                }
            }
        }
    }

    fn unknown_module<'a>(&mut self, rest: &[Ident], all: &[Ident], known: impl Iterator<Item = &'a str> + Clone) {
        let name: Vec<&str> = rest.iter().map(|s| s.name.as_str()).collect();
        let name = name.join("::");
        let span = rest
            .first()
            .map(|f| f.span.to(rest[rest.len() - 1].span))
            .unwrap_or(all[0].span);
        self.diags.push(
            Diag::error("mcm::import", format!("unknown standard module `std::{name}`"))
                .label(span, "no such module")
                .help(unknown_help(&name, "module", known)),
        );
    }

    fn load_source(&mut self, src: Source, span: Span) -> Option<usize> {
        match src {
            Source::Std(name, text) => self.add(
                format!("std:{name}"),
                format!("stdlib/{name}.mcm"),
                None,
                text.to_string(),
            ),
            Source::File(path) => match read_source(&path) {
                Ok(text) => {
                    let key = key_of(&path);
                    self.add(key, path.display().to_string(), Some(path), text)
                }
                Err(e) => {
                    self.diags.push(
                        Diag::error("mcm::import", e.message)
                            .label(span, "imported here")
                            .help(e.help),
                    );
                    None
                }
            },
        }
    }

    /// Builds every module's scope: its own items, then its imports.
    fn finish(mut self) -> (Program, Vec<Diag>) {
        let mut scopes = Vec::with_capacity(self.modules.len());
        for (mi, m) in self.modules.iter().enumerate() {
            let mut scope: HashMap<String, ItemRef> = HashMap::new();
            let mut first: HashMap<String, Span> = HashMap::new();
            for (ii, item) in m.ast.items.iter().enumerate() {
                if let Some(name) = item_name(item) {
                    if let Some(prev) = first.get(&name.name) {
                        self.diags.push(
                            Diag::error("mcm::duplicate", format!("`{}` is defined twice", name.name))
                                .label(name.span, "defined again here")
                                .label(*prev, "first defined here")
                                .help("rename one of them"),
                        );
                        continue;
                    }
                    first.insert(name.name.clone(), name.span);
                    scope.insert(name.name.clone(), ItemRef { module: mi, index: ii });
                }
            }
            scopes.push((scope, first));
        }
        let mut imports: Vec<Vec<(String, ItemRef, Span)>> = vec![Vec::new(); self.modules.len()];
        for (mi, target, names, use_span) in std::mem::take(&mut self.resolved) {
            {
                let own = &scopes[target].0;
                match names {
                    None => {
                        for (n, r) in own {
                            if r.module == target {
                                imports[mi].push((n.clone(), *r, use_span));
                            }
                        }
                    }
                    Some(list) => {
                        for id in list {
                            match own.get(&id.name) {
                                Some(r) => imports[mi].push((id.name.clone(), *r, id.span)),
                                None => {
                                    let known = own.keys().map(String::as_str);
                                    let mname = self.sources.get(self.modules[target].ast.file).name.clone();
                                    self.diags.push(
                                        Diag::error(
                                            "mcm::import",
                                            format!("`{}` is not defined in `{mname}`", id.name),
                                        )
                                        .label(id.span, "not found")
                                        .help(unknown_help(&id.name, "item", known)),
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        for (mi, imps) in imports.into_iter().enumerate() {
            let (scope, first) = &mut scopes[mi];
            for (name, r, span) in imps {
                match scope.get(&name) {
                    Some(prev) if *prev == r => {}
                    Some(_) => {
                        let mut d = Diag::error("mcm::duplicate", format!("`{name}` is already defined"))
                            .label(span, "imported here")
                            .help("rename the local item or import fewer names");
                        if let Some(p) = first.get(&name) {
                            d = d.label(*p, "defined here");
                        }
                        self.diags.push(d);
                    }
                    None => {
                        scope.insert(name, r);
                    }
                }
            }
        }
        for (m, (scope, _)) in self.modules.iter_mut().zip(scopes) {
            m.scope = scope;
        }
        (
            Program {
                sources: self.sources,
                modules: self.modules,
            },
            self.diags,
        )
    }
}
