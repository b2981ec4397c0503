//! Source files and spans into them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub type FileId = u32;

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.end == self.start
    }
}

#[derive(Debug)]
pub struct SourceFile {
    /// The name shown in diagnostics: the path as given, or `std::name`.
    pub name: String,
    /// Where it was read from; `None` for the embedded standard library.
    pub path: Option<PathBuf>,
    pub text: Arc<str>,
}

/// Every source file the front end has read, addressed by `FileId`.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, name: String, path: Option<PathBuf>, text: impl Into<Arc<str>>) -> FileId {
        self.files.push(SourceFile {
            name,
            path,
            text: text.into(),
        });
        (self.files.len() - 1) as FileId
    }

    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id as usize]
    }

    pub fn find_path(&self, path: &Path) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.path.as_deref() == Some(path))
            .map(|i| i as FileId)
    }

    pub fn snippet(&self, span: Span) -> &str {
        let text = &self.get(span.file).text;
        text.get(span.start as usize..span.end as usize).unwrap_or("")
    }

    /// 1-based line and column of a span's start.
    pub fn line_col(&self, span: Span) -> (usize, usize) {
        let text = &self.get(span.file).text;
        let upto = &text[..(span.start as usize).min(text.len())];
        let line = upto.matches('\n').count() + 1;
        let col = upto.rfind('\n').map_or(upto.len(), |p| upto.len() - p - 1) + 1;
        (line, col)
    }

    /// The directory relative paths in a file are resolved against.
    pub fn base_dir(&self, id: FileId) -> PathBuf {
        self.get(id)
            .path
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
}
