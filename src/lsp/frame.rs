//! The protocol's frames, read from a stream that may hold anything: a
//! frame is header lines (`Content-Length: N`, others ignored), an empty
//! line, then N bytes of body. A frame that cannot be read is reported and
//! reading goes on at the next `Content-Length:` header, so one bad frame
//! does not end the session. A length is never allocated on trust: a body is
//! kept as its bytes arrive, and a length over [`MAX_BODY`] is refused.

use std::io::{self, Read};

/// The most bytes a message's body may hold: the most the command line
/// reads of a file, so a document the CLI can check fits.
pub const MAX_BODY: u64 = mcm_core::textfile::MAX_TEXT;

/// A header line longer than this is not a header.
const MAX_HEADER_LINE: usize = 1024;

/// Nor are headers longer than this, all together.
const MAX_HEADERS: usize = 8 * 1024;

/// Where reading starts again after a bad frame.
const HEADER: &[u8] = b"Content-Length:";

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A body of the length its header said.
    Body(Vec<u8>),
    /// Bytes that were not a frame, and why: they are skipped up to the
    /// next `Content-Length:` header.
    Bad(String),
}

pub struct FrameReader<R> {
    inner: R,
    /// Bytes read from `inner` and not yet used.
    buf: Vec<u8>,
    /// Whether the next frame starts at the next `Content-Length:` (after a
    /// bad one), rather than here.
    resync: bool,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        FrameReader {
            inner,
            buf: Vec::new(),
            resync: false,
        }
    }

    /// The next frame, or `None` at the end of the stream.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        if std::mem::take(&mut self.resync) && !self.skip_to_header()? {
            return Ok(None);
        }
        // The headers stay in the buffer until the frame is read: after a
        // bad one, the next header is looked for from its start (garbage
        // glued to the front of a good header hides it in a longer name).
        let mut pos = 0;
        let mut length = None;
        loop {
            let Some(end) = self.line_end(pos)? else {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.bad(format!(
                    "a header line longer than {MAX_HEADER_LINE} bytes, or cut short"
                ))));
            };
            let line = String::from_utf8_lossy(&self.buf[pos..end]);
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() && pos == 0 {
                // A stray line break between frames.
                self.buf.drain(..end);
                continue;
            }
            if line.is_empty() {
                pos = end;
                break;
            }
            let Some((name, value)) = line.split_once(':').filter(|(n, _)| is_token(n)) else {
                return Ok(Some(self.bad(format!("`{}` is not a header", shown(line)))));
            };
            if name.eq_ignore_ascii_case("Content-Length") {
                let value = value.trim();
                match value.parse::<u64>() {
                    Ok(n) if n > MAX_BODY => {
                        return Ok(Some(self.bad(format!(
                            "Content-Length {n} is more than the {} MiB a message may hold; the frame is refused",
                            MAX_BODY >> 20
                        ))))
                    }
                    Ok(n) => length = Some(n as usize),
                    Err(_) => {
                        return Ok(Some(
                            self.bad(format!("Content-Length `{}` is not a length", shown(value))),
                        ))
                    }
                }
            }
            pos = end;
            if pos > MAX_HEADERS {
                return Ok(Some(self.bad(format!("headers longer than {MAX_HEADERS} bytes"))));
            }
        }
        let Some(length) = length else {
            return Ok(Some(self.bad("a frame without a Content-Length header".into())));
        };
        self.buf.drain(..pos);
        while self.buf.len() < length {
            if !self.fill()? {
                return Ok(None);
            }
        }
        Ok(Some(Frame::Body(self.buf.drain(..length).collect())))
    }

    /// After a body that was not a message: reading goes on at the next
    /// header after its first byte, in the body (its length was too long
    /// and it ran into the next frame) or after it (too short).
    pub fn recover(&mut self, body: Vec<u8>) {
        self.buf.splice(0..0, body);
        self.resync = true;
    }

    fn bad(&mut self, why: String) -> Frame {
        self.resync = true;
        Frame::Bad(why)
    }

    /// The end (past the `\n`) of the line of the buffer at `start`, reading
    /// as needed; `None` at the end of the stream or past the longest line.
    fn line_end(&mut self, start: usize) -> io::Result<Option<usize>> {
        let mut searched = start;
        loop {
            if let Some(i) = self.buf[searched..].iter().position(|&b| b == b'\n') {
                let end = searched + i + 1;
                return Ok((end - start <= MAX_HEADER_LINE).then_some(end));
            }
            searched = self.buf.len();
            if searched - start > MAX_HEADER_LINE || !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Drops bytes up to the next `Content-Length:` that does not start the
    /// buffer (the bad frame may start with one); false at the end of the
    /// stream.
    fn skip_to_header(&mut self) -> io::Result<bool> {
        if !self.buf.is_empty() {
            self.buf.remove(0);
        }
        loop {
            if let Some(i) = find(&self.buf, HEADER) {
                self.buf.drain(..i);
                return Ok(true);
            }
            // Keep what could be the start of a header cut by the read.
            let keep = self.buf.len().min(HEADER.len() - 1);
            self.buf.drain(..self.buf.len() - keep);
            if !self.fill()? {
                return Ok(false);
            }
        }
    }

    /// Reads what the stream has; false at its end.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0; 1 << 16];
        loop {
            match self.inner.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A header name: letters, digits and `-`.
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A line as an error message shows it: at most 60 characters.
fn shown(line: &str) -> String {
    let mut s: String = line.chars().take(60).collect();
    if s.len() < line.len() {
        s.push_str("...");
    }
    s
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::{Frame, FrameReader, MAX_BODY};

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    /// Every frame of a stream, as bodies (text) and refusals (`!why`).
    fn frames(stream: &[u8]) -> Vec<String> {
        let mut r = FrameReader::new(stream);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            out.push(match f {
                Frame::Body(b) => {
                    let text = String::from_utf8_lossy(&b).into_owned();
                    if serde_json::from_slice::<serde_json::Value>(&b).is_err() {
                        r.recover(b.clone());
                    }
                    text
                }
                Frame::Bad(why) => format!("!{why}"),
            });
        }
        out
    }

    #[test]
    fn well_formed_frames_are_read_whole_with_other_headers_ignored() {
        let s = format!(
            "{}Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n[]\r\n{}",
            frame("{\"a\":\"é\"}"),
            frame("{}")
        );
        assert_eq!(frames(s.as_bytes()), ["{\"a\":\"é\"}", "[]", "{}"]);
    }

    #[test]
    fn a_frame_without_a_usable_length_is_refused_and_the_next_one_read() {
        let next = frame("{}");
        for (head, why) in [
            ("Content-Type: x\r\n\r\n{\"x\": 1}", "without a Content-Length"),
            ("Content-Length: abc\r\n\r\n{}", "`abc` is not a length"),
            ("Content-Length: -3\r\n\r\n{}", "`-3` is not a length"),
            (
                "garbage in front{}",
                "`garbage in front{}Content-Length: 2` is not a header",
            ),
        ] {
            let got = frames(format!("{head}{next}").as_bytes());
            assert_eq!(got.len(), 2, "{head:?}: {got:?}");
            assert!(got[0].starts_with('!') && got[0].contains(why), "{head:?}: {got:?}");
            assert_eq!(got[1], "{}", "{head:?}");
        }
    }

    #[test]
    fn a_header_with_garbage_glued_to_its_front_is_found_again() {
        let s = format!("abc{}{}", frame("[1]"), frame("{}"));
        let got = frames(s.as_bytes());
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].contains("without a Content-Length"), "{got:?}");
        assert_eq!(got[1..], ["[1]", "{}"]);
    }

    #[test]
    fn an_absurd_length_is_refused_without_reading_it() {
        let s = format!("Content-Length: 1000000000000000\r\n\r\n{{}}{}", frame("{}"));
        let got = frames(s.as_bytes());
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].contains("is more than the") && got[0].contains("refused"),
            "{got:?}"
        );
        assert_eq!(got[1], "{}");
        // Just over the limit too.
        let s = format!("Content-Length: {}\r\n\r\n{}", MAX_BODY + 1, frame("[]"));
        assert_eq!(frames(s.as_bytes())[1], "[]");
    }

    #[test]
    fn lengths_that_do_not_match_the_body_resynchronise_on_the_next_header() {
        let good = frame("{\"id\":1}");
        // Too short: the body is cut, the rest is skipped up to the header.
        let short = format!("Content-Length: 3\r\n\r\n{{\"a\": [1, 2]}}{good}");
        assert_eq!(frames(short.as_bytes()), ["{\"a", "{\"id\":1}"]);
        // Too long: the body runs into the next frame, which is read again.
        let long = format!("Content-Length: 20\r\n\r\n{{\"a\":1}}{good}{}", frame("{}"));
        let got = frames(long.as_bytes());
        assert_eq!(got[1..], ["{\"id\":1}", "{}"], "{got:?}");
    }

    #[test]
    fn overlong_header_lines_and_a_stream_cut_short_end_cleanly() {
        let long = format!("X-{}: y\r\n\r\n{}", "a".repeat(5000), frame("{}"));
        let got = frames(long.as_bytes());
        assert!(got[0].contains("longer than 1024 bytes"), "{got:?}");
        assert_eq!(got[1], "{}");
        assert!(frames(b"Content-Length: 10\r\n\r\n{}").is_empty());
        assert!(frames(b"").is_empty());
    }
}
