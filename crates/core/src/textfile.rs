//! Text files that may be gzipped (graph files, `compare`'s run files):
//! told by their first bytes, never by their name, and capped in what they
//! expand to, since a few kilobytes of gzip can expand to gigabytes.

use std::io::Read;

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

#[cfg(test)]
mod tests {
    use super::{decode, gzip, TextError};

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
