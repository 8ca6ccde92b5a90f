//! A JSON Lines byte stream read in blocks of whole lines, for readers that decode a block's
//! lines on every core ([`crate::decode_json_lines`]): one buffer, filled by large reads and
//! re-used from block to block, instead of a `String` allocated (and grown) for every line as
//! `BufRead::lines` does.
//!
//! Lines are what `BufRead::lines` yields: split at `\n`, a `\r` before it removed, a last
//! line without `\n` kept. Bytes that are not UTF-8 end the stream with the error `lines`
//! gives (`InvalidData`, "stream did not contain valid UTF-8"), after the whole lines before
//! the one that holds them.

use std::io::{ErrorKind, Read};

/// Whole lines of a stream, a block at a time (see the module doc).
pub struct LineBlocks<R> {
    reader: R,
    buf: Vec<u8>,
    /// Bytes of `buf` not handed out yet (a line not complete yet, or everything after an
    /// error).
    filled: usize,
    /// Bytes read at once, and the size of a block when lines are short.
    block: usize,
    /// 1-based number of the next block's first line.
    next_line: usize,
    /// The reader has no more bytes.
    eof: bool,
    /// An error to return once the lines before it are out.
    error: Option<std::io::Error>,
    /// Bytes at the start of `buf` handed out in the last block, dropped on the next call.
    consumed: usize,
}

/// One block: its lines (without their line ends) and the 1-based number of the first.
#[derive(Debug)]
pub struct LinesBlock<'a> {
    /// The lines, in order.
    pub lines: Vec<&'a str>,
    /// The 1-based line number of `lines[0]` in the stream.
    pub first_line: usize,
}

impl<R: Read> LineBlocks<R> {
    /// Reads `reader` in reads of `block` bytes (a line longer than that is read whole).
    pub fn new(reader: R, block: usize) -> Self {
        LineBlocks {
            reader,
            buf: Vec::new(),
            filled: 0,
            block: block.max(1),
            next_line: 1,
            eof: false,
            error: None,
            consumed: 0,
        }
    }

    /// The 1-based number of the next line [`next_block`](Self::next_block) hands out (after a
    /// read error: of the line it broke in).
    pub fn next_line(&self) -> usize {
        self.next_line
    }

    /// The next block of whole lines; `Ok(None)` at the end of the stream, `Err` for a read
    /// error or bytes that are not UTF-8 (after every whole line before it was handed out).
    ///
    /// # Errors
    ///
    /// The reader's error, or `InvalidData` for bytes that are not UTF-8.
    pub fn next_block(&mut self) -> std::io::Result<Option<LinesBlock<'_>>> {
        // Drop what the last block handed out: keep the incomplete tail at the front.
        self.buf.copy_within(self.consumed..self.filled, 0);
        self.filled -= self.consumed;
        self.consumed = 0;
        // Fill until the buffer holds a line end (and at least a block, when lines are
        // short), or the stream ends.
        while self.error.is_none() && !self.eof {
            if self.filled >= self.block && self.buf[..self.filled].contains(&b'\n') {
                break;
            }
            if self.buf.len() < self.filled + self.block {
                self.buf.resize(self.filled + self.block, 0);
            }
            match self.reader.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => self.error = Some(e),
            }
        }
        let data = &self.buf[..self.filled];
        // Whole lines end at the last `\n`; at the end of the stream the rest is a line too
        // (after a read error it is dropped, as `lines` drops the line its read failed in).
        let end = if self.eof && self.error.is_none() {
            data.len()
        } else {
            data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
        };
        let (text, utf8_error) = match std::str::from_utf8(&data[..end]) {
            Ok(text) => (text, false),
            Err(e) => {
                // The whole lines before the one that holds the bad bytes, then the error.
                let good = &data[..e.valid_up_to()];
                let cut = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                // Checked: the bytes before `valid_up_to` are UTF-8.
                (std::str::from_utf8(&data[..cut]).unwrap_or_default(), true)
            }
        };
        if utf8_error {
            self.error = Some(std::io::Error::new(
                ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ));
        }
        if text.is_empty() {
            self.consumed = 0;
            return match self.error.take() {
                Some(e) => {
                    // Nothing more is read after an error.
                    self.eof = true;
                    self.filled = 0;
                    Err(e)
                }
                None => Ok(None),
            };
        }
        self.consumed = text.len();
        // A `\r` is removed before a `\n` only (a last line without `\n` keeps it).
        let (body, unterminated) = match text.strip_suffix('\n') {
            Some(body) => (body, false),
            None => (text, true),
        };
        let mut lines: Vec<&str> = body.split('\n').collect();
        let terminated = lines.len() - usize::from(unterminated);
        for line in &mut lines[..terminated] {
            *line = line.strip_suffix('\r').unwrap_or(line);
        }
        let first_line = self.next_line;
        self.next_line += lines.len();
        Ok(Some(LinesBlock { lines, first_line }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    /// Every line with its number, as `LineBlocks` gives them, and the error that ended the
    /// stream.
    fn read_all(
        bytes: &[u8],
        block: usize,
        chunk: usize,
    ) -> (Vec<(usize, String)>, Option<String>) {
        let reader = Chunked { bytes, chunk };
        let mut blocks = LineBlocks::new(reader, block);
        let mut out = Vec::new();
        loop {
            match blocks.next_block() {
                Ok(Some(b)) => {
                    for (i, l) in b.lines.iter().enumerate() {
                        out.push((b.first_line + i, l.to_string()));
                    }
                }
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    /// What `BufRead::lines` gives for the same bytes.
    fn std_lines(bytes: &[u8]) -> (Vec<(usize, String)>, Option<String>) {
        let mut out = Vec::new();
        for (i, l) in std::io::Cursor::new(bytes).lines().enumerate() {
            match l {
                Ok(l) => out.push((i + 1, l)),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
        (out, None)
    }

    /// A reader that returns at most `chunk` bytes a read.
    struct Chunked<'a> {
        bytes: &'a [u8],
        chunk: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.chunk).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_are_what_bufread_lines_gives() {
        let long = "x".repeat(100);
        let cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"a\n".to_vec(),
            b"a\nb".to_vec(),
            b"a\r\nb\r\n\n\nc".to_vec(),
            b"\n\n".to_vec(),
            format!("{long}\nshort\n{long}{long}\n").into_bytes(),
            "é\nà\n".as_bytes().to_vec(),
            b"ok\nbad \xff line\nafter\n".to_vec(),
            b"ok\nbad\xc3".to_vec(),
            b"\xff".to_vec(),
            b"a\r".to_vec(),
        ];
        for bytes in &cases {
            for block in [1, 2, 3, 7, 64, 4096] {
                for chunk in [1, 2, 5, 1000] {
                    assert_eq!(
                        read_all(bytes, block, chunk),
                        std_lines(bytes),
                        "{:?} block {block} chunk {chunk}",
                        String::from_utf8_lossy(bytes)
                    );
                }
            }
        }
    }

    #[test]
    fn a_read_error_ends_the_stream_after_the_lines_before_it() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(std::io::Error::other("disk gone"));
                }
                let bytes = b"one\ntwo\nthr";
                buf[..bytes.len()].copy_from_slice(bytes);
                Ok(bytes.len())
            }
        }
        let mut blocks = LineBlocks::new(Failing(false), 64);
        let first = blocks.next_block().unwrap().unwrap();
        assert_eq!(first.lines, ["one", "two"]);
        // The partial line the read failed in is dropped, as `lines` drops it.
        assert_eq!(blocks.next_block().unwrap_err().to_string(), "disk gone");
        assert!(blocks.next_block().unwrap().is_none());
    }
}
