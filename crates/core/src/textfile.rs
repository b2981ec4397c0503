//! Text files that may be gzipped (graph files, `compare`'s run files):
//! told by their first bytes, never by their name, and capped in what they
//! expand to, since a few kilobytes of gzip can expand to gigabytes. Files
//! are capped in size too, before they are read whole: a sparse file of
//! terabytes would otherwise be read until memory runs out. Only regular
//! files are read: a device (`/dev/zero`, `/dev/stdin`) or a pipe named in
//! a program would be read forever or block (the language server would
//! read its own protocol stream).

use std::io::Read;
use std::path::Path;

/// The most bytes of text a graph, partition or manifest file may hold
/// (after decompression): the largest graphs of the data set take 2 MiB.
pub const MAX_TEXT: u64 = 256 << 20;

/// Why bytes are not text.
#[derive(Debug)]
pub enum TextError {
    /// Gzip that does not decompress (cut short, damaged).
    Gzip(std::io::Error),
    /// Gzip that expands to more than the cap, in bytes.
    TooLarge(u64),
    /// Not UTF-8; `gzipped` says whether it was after decompression.
    NotUtf8 { gzipped: bool },
}

/// Why a file could not be read as text.
#[derive(Debug)]
pub enum ReadError {
    /// Opening or reading failed (missing, a folder, no permission).
    Io(std::io::Error),
    /// The file itself holds more than the cap, in bytes.
    FileTooLarge(u64),
    /// Not a regular file: a device, a pipe or a socket.
    NotAFile,
    /// Its bytes are not text.
    Text(TextError),
}

/// A regular file's bytes, at most `max` of them: refused from its size,
/// and never read past `max + 1` bytes (it may grow while it is read).
pub fn read_bytes(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let kind = |meta: &std::fs::Metadata| {
        if meta.is_dir() {
            // Reading a folder fails with a less clear "Is a directory".
            Err(ReadError::Io(std::io::Error::other("it is a folder")))
        } else if !meta.is_file() {
            Err(ReadError::NotAFile)
        } else {
            Ok(())
        }
    };
    // Told before opening, since opening a FIFO blocks until it has a
    // writer; and again after (opened without blocking), in case the path
    // was replaced in between.
    kind(&std::fs::metadata(path).map_err(ReadError::Io)?)?;
    let file = open_nonblocking(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    kind(&meta)?;
    if meta.len() > max {
        return Err(ReadError::FileTooLarge(max));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::FileTooLarge(max));
    }
    Ok(bytes)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// A file's text, gzipped or not, at most `max` bytes of file and of text.
pub fn read_text(path: &Path, max: u64) -> Result<String, ReadError> {
    decode(read_bytes(path, max)?, max).map_err(ReadError::Text)
}

impl ReadError {
    /// The error as one sentence about the `what` (`graph file`) at `shown`.
    pub fn message(&self, what: &str, shown: &str) -> String {
        match self {
            ReadError::Io(e) => format!("cannot read {what} `{shown}`: {e}"),
            ReadError::FileTooLarge(max) => {
                format!(
                    "{what} `{shown}` holds more than {} MiB, the most this tool reads",
                    max >> 20
                )
            }
            ReadError::NotAFile => {
                format!("{what} `{shown}` is not a regular file (a device, a pipe or a socket), which this tool does not read")
            }
            ReadError::Text(TextError::Gzip(e)) => format!("{what} `{shown}` is not valid gzip: {e}"),
            ReadError::Text(TextError::TooLarge(max)) => {
                format!("{what} `{shown}` expands to more than {} MiB of text", max >> 20)
            }
            ReadError::Text(TextError::NotUtf8 { gzipped: true }) => {
                format!("{what} `{shown}` holds gzip of text that is not UTF-8")
            }
            ReadError::Text(TextError::NotUtf8 { gzipped: false }) => format!("{what} `{shown}` is not UTF-8 text"),
        }
    }
}

/// Whether bytes start like gzip.
pub fn is_gzip(raw: &[u8]) -> bool {
    raw.starts_with(&[0x1f, 0x8b])
}

/// The text of a file's bytes: decompressed when they are gzip (several
/// members too, as `cat a.gz b.gz` makes), at most `max` bytes of it.
pub fn decode(raw: Vec<u8>, max: u64) -> Result<String, TextError> {
    if !is_gzip(&raw) {
        return String::from_utf8(raw).map_err(|_| TextError::NotUtf8 { gzipped: false });
    }
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..])
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(TextError::Gzip)?;
    if bytes.len() as u64 > max {
        return Err(TextError::TooLarge(max));
    }
    String::from_utf8(bytes).map_err(|_| TextError::NotUtf8 { gzipped: true })
}

/// Gzipped bytes, for the tests of the readers.
#[cfg(test)]
pub(crate) fn gzip(text: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

/// A JSON file's syntax or type error as these files' messages say it:
/// `line L, column C: what`, the place said once (serde ends its message
/// with it too) and the values in JSON's words, not serde's ("sequence",
/// "map").
pub fn json_error(e: &serde_json::Error) -> String {
    let place = format!(" at line {} column {}", e.line(), e.column());
    let what = e.to_string();
    let what = what
        .strip_suffix(&place)
        .unwrap_or(&what)
        .replace("invalid type: sequence", "found an array")
        .replace("invalid type: map", "found an object")
        .replace("invalid type: ", "found ");
    format!("line {}, column {}: {what}", e.line(), e.column().max(1))
}

#[cfg(test)]
mod tests {
    use super::{decode, gzip, read_bytes, read_text, ReadError, TextError};
    use std::path::Path;

    #[test]
    fn files_past_the_cap_are_refused_before_they_are_read() {
        let dir = std::env::temp_dir().join(format!("mcmpart-textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A sparse file of a terabyte: refused from its size, at once.
        let sparse = dir.join("sparse.json");
        std::fs::File::create(&sparse).unwrap().set_len(1 << 40).unwrap();
        assert!(matches!(read_bytes(&sparse, 1 << 20), Err(ReadError::FileTooLarge(m)) if m == 1 << 20));
        let small = dir.join("small.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_text(&small, 2).unwrap(), "{}");
        assert!(matches!(read_text(&small, 1), Err(ReadError::FileTooLarge(1))));
        assert!(matches!(read_text(&dir, 10), Err(ReadError::Io(_))));
        let e = read_text(&sparse, 1 << 20).unwrap_err().message("graph file", "s.json");
        assert_eq!(e, "graph file `s.json` holds more than 1 MiB, the most this tool reads");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_pipes_are_refused_without_reading_or_blocking() {
        // A device: `/dev/zero` would be read until the cap.
        for dev in ["/dev/zero", "/dev/null"] {
            let r = read_bytes(Path::new(dev), 1000);
            assert!(matches!(r, Err(ReadError::NotAFile)), "{dev}: {r:?}");
        }
        // A FIFO without a writer: opening it to read would block.
        let dir = std::env::temp_dir().join(format!("mcmpart-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("graph.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = read_text(&fifo, 1000).unwrap_err();
        assert!(matches!(e, ReadError::NotAFile), "{e:?}");
        assert_eq!(
            e.message("graph file", "graph.json"),
            "graph file `graph.json` is not a regular file (a device, a pipe or a socket), which this tool does not read"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn plain_and_gzipped_text_read_alike() {
        assert_eq!(decode(b"{}".to_vec(), 10).unwrap(), "{}");
        assert_eq!(decode(gzip(b"{}"), 10).unwrap(), "{}");
        let mut two = gzip(b"ab");
        two.extend(gzip(b"cd"));
        assert_eq!(decode(two, 10).unwrap(), "abcd", "members are concatenated");
    }

    #[test]
    fn bad_bytes_say_why() {
        assert!(matches!(decode(gzip(&[b'x'; 100]), 99), Err(TextError::TooLarge(99))));
        assert!(decode(gzip(&[b'x'; 99]), 99).is_ok());
        let mut cut = gzip(b"some text that is long enough");
        cut.truncate(cut.len() - 6);
        assert!(matches!(decode(cut, 100), Err(TextError::Gzip(_))));
        assert!(matches!(
            decode(vec![0xff, 0xfe], 100),
            Err(TextError::NotUtf8 { gzipped: false })
        ));
        assert!(matches!(
            decode(gzip(&[0xff]), 100),
            Err(TextError::NotUtf8 { gzipped: true })
        ));
    }
}
