//! How OTLP trace files are laid out on disk, beyond one message: compression and the framing
//! of several binary messages in one file.
//!
//! - **One message**: a binary `ExportTraceServiceRequest` (or `TracesData`), as an OTLP/HTTP
//!   exporter posts it and as `protoc --encode` writes it.
//! - **Length-prefixed messages** ([`Framing::Fixed32`]): the Collector's file exporter with
//!   `format: proto` writes each `TracesData` after its size as a 4-byte big-endian unsigned
//!   integer; with `compression: zstd` (its long-standing default behaviour) every message,
//!   JSON or protobuf, is zstd-compressed and then length-prefixed the same way.
//! - **Delimited messages** ([`Framing::Varint`]): the OpenTelemetry specification's file
//!   exporter (`specification/protocol/file-exporter.md`) writes each message after its size
//!   as a varint (protobuf's `writeDelimitedTo`).
//! - **A compressed file**: zstd (the Collector's native compression writes one zstd stream of
//!   JSON Lines or of length-prefixed messages) or gzip (`.gz`), found by their magic bytes.
//!
//! [`Framing::detect`] decides from the bytes alone: a message never starts with a zero byte
//! (field number 0 does not exist), so a leading zero is a 4-byte size; otherwise the layout
//! whose sizes tile the file exactly, each part starting as a message does, wins, one message
//! first.

use std::io::{BufRead, Read};

use super::logs::{decode_logs_json_document, decode_logs_protobuf_into};
use super::{decode_json_document, decode_protobuf_into, Fields};
use crate::problems::Problem;
use crate::span::{Decoded, Location};

/// The first bytes of a zstd frame (RFC 8878, 3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The first bytes of a gzip member (RFC 1952, 2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How a file's bytes are compressed, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// Zstandard (one or more frames).
    Zstd,
    /// gzip (one or more members).
    Gzip,
}

impl Compression {
    /// The compression of bytes starting with `head` (at least 4 bytes of the file when it has
    /// them).
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&ZSTD_MAGIC) {
            Compression::Zstd
        } else if head.starts_with(&GZIP_MAGIC) {
            Compression::Gzip
        } else {
            Compression::None
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zstd => "zstd",
            Compression::Gzip => "gzip",
        }
    }

    /// A reader of `input`'s decompressed bytes (every zstd frame or gzip member, one after
    /// the other, as `zstd -d` and `gzip -d` read them).
    pub fn reader<'a, R: BufRead + Send + 'a>(self, input: R) -> Box<dyn Read + Send + 'a> {
        match self {
            Compression::None => Box::new(input),
            Compression::Zstd => Box::new(ZstdFrames {
                input: Some(input),
                frame: None,
            }),
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        }
    }
}

/// Decompresses zstd or gzip bytes whole; bytes that are neither are returned as they are.
pub fn decompress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let compression = Compression::sniff(bytes);
    if compression == Compression::None {
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    compression.reader(bytes).read_to_end(&mut out)?;
    Ok(out)
}

/// The frames of a zstd stream, decoded one after the other.
struct ZstdFrames<R: BufRead> {
    /// The compressed input, between frames.
    input: Option<R>,
    /// The frame being decoded.
    frame: Option<ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>>,
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(frame) = &mut self.frame {
                let n = frame.read(buf)?;
                if n > 0 || buf.is_empty() {
                    return Ok(n);
                }
                // This frame is done: the next one, if the input goes on.
                let frame = self.frame.take().map(|f| f.into_inner());
                self.input = frame;
            }
            let Some(mut input) = self.input.take() else {
                return Ok(0);
            };
            if input.fill_buf()?.is_empty() {
                return Ok(0);
            }
            let frame = ruzstd::decoding::StreamingDecoder::new(input).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("not a zstd frame: {e}"),
                )
            })?;
            self.frame = Some(frame);
        }
    }
}

/// How the binary messages of a file follow one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One message, the whole file.
    Single,
    /// Each message after its size as a 4-byte big-endian integer (the Collector's file
    /// exporter).
    Fixed32,
    /// Each message after its size as a varint (the specification's file exporter,
    /// `writeDelimitedTo`).
    Varint,
}

impl Framing {
    /// The framing of `bytes` (not compressed as a whole; see [`Compression`]).
    pub fn detect(bytes: &[u8]) -> Framing {
        match bytes.first() {
            None => Framing::Single,
            Some(0) => Framing::Fixed32,
            Some(_) if one_message(bytes) => Framing::Single,
            Some(_) if parts(bytes, Framing::Fixed32).is_some_and(|p| p.all_plausible()) => {
                Framing::Fixed32
            }
            Some(_) if parts(bytes, Framing::Varint).is_some_and(|p| p.all_plausible()) => {
                Framing::Varint
            }
            // A delimited file cut short: whole messages, then one the end cuts.
            Some(_) if parts(bytes, Framing::Varint).is_some_and(|p| p.plausible_but_cut()) => {
                Framing::Varint
            }
            Some(_) => Framing::Single,
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Framing::Single => "one message",
            Framing::Fixed32 => "messages after 4-byte sizes",
            Framing::Varint => "delimited messages",
        }
    }
}

/// Whether `bytes` walk as one `ExportTraceServiceRequest` (or `ExportLogsServiceRequest`) to
/// their last byte: top-level fields all `resource_spans` (`resource_logs`: 1,
/// length-delimited), none cut.
fn one_message(bytes: &[u8]) -> bool {
    Fields::new(bytes, 0).all(|f| f.is_ok_and(|f| f.number == 1 && f.len && !f.cut))
}

/// The messages of a framed file: each one's offset and bytes, and where the file ends inside
/// a size or a message, if it does.
struct Parts<'a> {
    messages: Vec<(usize, &'a [u8])>,
    /// The offset of the size whose message the file cuts (the cut message's bytes are the last
    /// entry of `messages`), or of a size cut itself.
    cut: Option<usize>,
}

impl Parts<'_> {
    /// Whether every message is whole and starts as an OTLP message does.
    fn all_plausible(&self) -> bool {
        self.cut.is_none() && self.messages.iter().all(|(_, m)| plausible(m))
    }

    /// Whether the file is cut after at least one whole message, every message (the cut one
    /// as far as it goes) starting as an OTLP message does.
    fn plausible_but_cut(&self) -> bool {
        self.cut.is_some()
            && self.messages.len() >= 2
            && self.messages.iter().all(|(_, m)| plausible(m))
    }
}

/// Whether `message` starts as an OTLP message does: empty, `resource_spans` (`0x0a`), a zstd
/// frame, or a JSON object.
fn plausible(message: &[u8]) -> bool {
    message.is_empty()
        || message[0] == 0x0a
        || message.starts_with(&ZSTD_MAGIC)
        || message.trim_ascii_start().starts_with(b"{")
}

/// Splits `bytes` by `framing`'s sizes; `None` when a size is unreadable (a varint longer than
/// 10 bytes). A message cut by the end of the file is kept as what is there, and `cut` says so.
fn parts(bytes: &[u8], framing: Framing) -> Option<Parts<'_>> {
    let mut messages = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let size_at = pos;
        let size = match framing {
            Framing::Single => {
                messages.push((0, bytes));
                return Some(Parts {
                    messages,
                    cut: None,
                });
            }
            Framing::Fixed32 => match bytes.get(pos..pos + 4) {
                Some(b) => {
                    pos += 4;
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize
                }
                None => {
                    return Some(Parts {
                        messages,
                        cut: Some(size_at),
                    })
                }
            },
            Framing::Varint => {
                let mut fields = Fields::new(&bytes[pos..], pos);
                match fields.varint() {
                    Some(n) => {
                        pos += fields.pos;
                        usize::try_from(n).ok()?
                    }
                    None if bytes.len() - pos < 10 => {
                        return Some(Parts {
                            messages,
                            cut: Some(size_at),
                        })
                    }
                    None => return None,
                }
            }
        };
        let end = pos.saturating_add(size);
        if end > bytes.len() {
            messages.push((pos, &bytes[pos..]));
            return Some(Parts {
                messages,
                cut: Some(size_at),
            });
        }
        messages.push((pos, &bytes[pos..end]));
        pos = end;
    }
    Some(Parts {
        messages,
        cut: None,
    })
}

/// Decodes a binary OTLP trace file, whatever its layout: one message, messages after 4-byte
/// or varint sizes, each possibly zstd-compressed (and then JSON or protobuf), or the whole
/// file zstd- or gzip-compressed. Spans are located by byte offset in `file` (in the
/// decompressed message, named by its offset in the file, for a compressed one).
///
/// A file cut inside a size or a message keeps every span before the cut and counts the cut
/// as `truncated_protobuf`; a message that does not decompress is a dropped record
/// (`undecodable_message`) and the next one is read.
pub fn decode_protobuf_file(bytes: &[u8], file: &str) -> Decoded {
    decode_file(bytes, file, Signal::Traces)
}

/// Decodes an OTLP logs file, whatever its layout: JSON (`LogsData` per line, or one
/// document) or binary `ExportLogsServiceRequest`s in any layout [`decode_protobuf_file`]
/// reads, compressed or not. Log records that are events about a span become
/// [`Decoded::log_events`] ([`super::logs`]).
pub fn decode_logs_file(bytes: &[u8], file: &str) -> Decoded {
    decode_file(bytes, file, Signal::Logs)
}

/// A whole file of `signal`: decompressed first when it is compressed; then a trace file is
/// read as binary messages, a logs file as JSON or binary messages, whichever it starts as.
fn decode_file(bytes: &[u8], file: &str, signal: Signal) -> Decoded {
    let mut out = Decoded::default();
    let compression = Compression::sniff(bytes);
    if compression != Compression::None {
        let name = format!("{file} ({} decompressed)", compression.name());
        match decompress(bytes) {
            Ok(plain) => decode_message(&plain, &name, 0, &mut out, true, signal),
            Err(e) => undecodable(&mut out, file, 0, compression, e),
        }
        return out;
    }
    match signal {
        Signal::Traces => decode_framed(bytes, file, &mut out, signal),
        Signal::Logs => decode_message(bytes, file, 0, &mut out, true, signal),
    }
    out
}

/// Which OTLP signal a file holds: its messages are `ExportTraceServiceRequest`s or
/// `ExportLogsServiceRequest`s (the layouts are the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
}

/// Decodes one protobuf message of `signal` at `base` of `file`.
fn decode_protobuf_message(
    bytes: &[u8],
    file: &str,
    base: usize,
    out: &mut Decoded,
    signal: Signal,
) {
    match signal {
        Signal::Traces => decode_protobuf_into(bytes, file, base, out),
        Signal::Logs => decode_logs_protobuf_into(bytes, file, base, out),
    }
}

/// Decodes `bytes` by the framing they have.
fn decode_framed(bytes: &[u8], file: &str, out: &mut Decoded, signal: Signal) {
    let framing = Framing::detect(bytes);
    if framing == Framing::Single {
        decode_protobuf_message(bytes, file, 0, out, signal);
        return;
    }
    let Some(parts) = parts(bytes, framing) else {
        // Not reachable: detect() chose a framing whose sizes read.
        decode_protobuf_message(bytes, file, 0, out, signal);
        return;
    };
    let last = parts.messages.len().saturating_sub(1);
    for (i, (offset, message)) in parts.messages.iter().enumerate() {
        if i == last && parts.cut.is_some() && message.starts_with(&ZSTD_MAGIC) {
            // A compressed message cut short does not decompress: say it was cut.
            break;
        }
        decode_message(message, file, *offset, out, false, signal);
    }
    if let Some(at) = parts.cut {
        if !out.summary.problems.contains_key("truncated_protobuf") {
            out.summary.drop_record(Problem {
                kind: "truncated_protobuf".into(),
                at: Location {
                    file: file.to_string(),
                    line: None,
                    byte_offset: Some(at as u64),
                },
                message: format!(
                    "the file ends inside the message whose size is here ({}): the file was cut; what follows is lost",
                    framing.name()
                ),
            });
        }
    }
}

/// Decodes one message at `offset` of `file`: zstd-compressed or not, then JSON (a
/// `TracesData` document, or JSON Lines in a decompressed file) or protobuf (framed again when
/// `whole_file`, a decompressed file).
fn decode_message(
    message: &[u8],
    file: &str,
    offset: usize,
    out: &mut Decoded,
    whole_file: bool,
    signal: Signal,
) {
    if message.starts_with(&ZSTD_MAGIC) {
        let name = format!("{file} (zstd message at byte {offset})");
        match decompress(message) {
            Ok(plain) => decode_message(&plain, &name, 0, out, false, signal),
            Err(e) => undecodable(out, file, offset, Compression::Zstd, e),
        }
        return;
    }
    let trimmed = message.trim_ascii_start();
    if trimmed.starts_with(b"{")
        || trimmed.starts_with(b"[")
        || trimmed.starts_with(b"\xef\xbb\xbf")
    {
        let name = if offset == 0 {
            file.to_string()
        } else {
            format!("{file} (message at byte {offset})")
        };
        let text = String::from_utf8_lossy(message);
        let decoded = match signal {
            Signal::Traces => decode_json_document(&text, &name),
            Signal::Logs => decode_logs_json_document(&text, &name),
        };
        out.spans.extend(decoded.spans);
        out.feedback.extend(decoded.feedback);
        out.log_events.extend(decoded.log_events);
        out.summary.merge(decoded.summary);
    } else if whole_file {
        decode_framed(message, file, out, signal);
    } else {
        decode_protobuf_message(message, file, offset, out, signal);
    }
}

/// A message that does not decompress: counted as a dropped record, located.
fn undecodable(
    out: &mut Decoded,
    file: &str,
    offset: usize,
    compression: Compression,
    e: std::io::Error,
) {
    let at = Location {
        file: file.to_string(),
        line: None,
        byte_offset: Some(offset as u64),
    };
    out.summary
        .drop_record(undecodable_problem(at, compression, &e));
}

/// The problem of compressed data that does not decompress (`undecodable_compressed`: cut
/// short, as a file still being written is, or corrupt), at `at`. Counted as one unreadable
/// input record: the spans it held are unknown.
pub fn undecodable_problem(at: Location, compression: Compression, e: &std::io::Error) -> Problem {
    Problem {
        kind: "undecodable_compressed".into(),
        at,
        message: format!(
            "the {} data does not decompress from here ({e}): cut short or corrupt; what it held is lost",
            compression.name()
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::super::pb;
    use super::*;

    /// An `ExportTraceServiceRequest` of one span named `name` with span id `id`.
    fn request(name: &str, id: u8) -> Vec<u8> {
        let span = pb::Span {
            trace_id: (1..=16).collect(),
            span_id: vec![0, 0, 0, 0, 0, 0, 0, id],
            parent_span_id: Vec::new(),
            name: name.into(),
            kind: 1,
            start_time_unix_nano: 1_700_000_000_000_000_000 + u64::from(id),
            end_time_unix_nano: 1_700_000_000_002_000_000,
            attributes: Vec::new(),
            events: Vec::new(),
            status: None,
        };
        let mut scope = Vec::new();
        prost::encoding::message::encode(2, &span, &mut scope);
        let mut rs = Vec::new();
        prost::encoding::bytes::encode(2, &scope, &mut rs);
        let mut req = Vec::new();
        prost::encoding::bytes::encode(1, &rs, &mut req);
        req
    }

    fn names(d: &Decoded) -> Vec<&str> {
        d.spans.iter().map(|s| s.name.as_str()).collect()
    }

    fn fixed32(messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.extend((m.len() as u32).to_be_bytes());
            out.extend(m);
        }
        out
    }

    fn varint(messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            prost::encoding::encode_varint(m.len() as u64, &mut out);
            out.extend(m);
        }
        out
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    /// Long enough that each message's size takes two varint bytes and a 4-byte size does not
    /// start with zero... unless the test wants it to.
    fn three() -> Vec<Vec<u8>> {
        vec![
            request("first", 1),
            request(&"second".repeat(40), 2),
            request("third", 3),
        ]
    }

    #[test]
    fn every_layout_of_the_same_messages_reads_the_same_spans() {
        let messages = three();
        let single: Vec<u8> = messages.concat();
        let second = "second".repeat(40);
        let want = vec!["first", second.as_str(), "third"];
        let cases: Vec<(&str, Vec<u8>, Framing)> = vec![
            (
                "one message (requests appended)",
                single.clone(),
                Framing::Single,
            ),
            ("4-byte sizes", fixed32(&messages), Framing::Fixed32),
            ("varint sizes", varint(&messages), Framing::Varint),
        ];
        for (what, bytes, framing) in cases {
            assert_eq!(Framing::detect(&bytes), framing, "{what}");
            let d = decode_protobuf_file(&bytes, "f.pb");
            assert_eq!(names(&d), want, "{what}");
            assert!(d.summary.first.is_empty(), "{what}: {:?}", d.summary.first);
            assert_eq!(d.summary.spans_read, 3, "{what}");
        }
        // Compressed: each message (the Collector's `compression: zstd`), or the whole file.
        let each: Vec<Vec<u8>> = messages.iter().map(|m| zstd(m)).collect();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&fixed32(&messages)).unwrap();
        for (what, bytes) in [
            ("zstd messages", fixed32(&each)),
            ("zstd file of 4-byte sizes", zstd(&fixed32(&messages))),
            ("zstd file of varint sizes", zstd(&varint(&messages))),
            ("gzip file", gz.finish().unwrap()),
        ] {
            let d = decode_protobuf_file(&bytes, "f.pb");
            assert_eq!(names(&d), want, "{what}");
            assert!(d.summary.first.is_empty(), "{what}: {:?}", d.summary.first);
        }
    }

    #[test]
    fn a_message_in_a_sized_file_is_located_at_its_own_offset() {
        let mut messages = three();
        // The second message's span id is all zeros: a bad id, located where that span is.
        messages[1] = request("bad", 0);
        let bytes = fixed32(&messages);
        let d = decode_protobuf_file(&bytes, "f.pb");
        assert_eq!(names(&d), ["first", "third"]);
        let p = &d.summary.first[0];
        assert_eq!(p.kind, "bad_id");
        let second = 4 + messages[0].len() + 4;
        let offset = p.at.byte_offset.unwrap() as usize;
        assert!(
            (second..second + messages[1].len()).contains(&offset),
            "{offset} not in the second message at {second}"
        );
    }

    #[test]
    fn a_json_message_among_sized_ones_is_read_as_json() {
        // The Collector with `format: json` and `compression: zstd`: zstd-compressed JSON
        // documents after 4-byte sizes.
        let json = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"from json","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000400000000"}]}]}]}"#;
        let bytes = fixed32(&[zstd(json), zstd(&request("from protobuf", 1))]);
        let d = decode_protobuf_file(&bytes, "f.zst");
        assert_eq!(names(&d), ["from json", "from protobuf"]);
    }

    #[test]
    fn a_file_cut_short_keeps_the_whole_messages_and_says_where_it_was_cut() {
        let messages = three();
        for (what, bytes) in [
            ("4-byte sizes", fixed32(&messages)),
            ("varint sizes", varint(&messages)),
        ] {
            // Cut inside the last message: its span is dropped as cut, the others read.
            let cut = &bytes[..bytes.len() - 5];
            let d = decode_protobuf_file(cut, "f.pb");
            assert_eq!(names(&d), ["first", "second".repeat(40).as_str()], "{what}");
            assert!(
                d.summary.problems.contains_key("truncated_protobuf"),
                "{what}: {:?}",
                d.summary
            );
        }
        // Cut inside the size of the last message (4-byte sizes): located at that size.
        let bytes = fixed32(&messages);
        let size_at = bytes.len() - messages[2].len() - 4;
        let d = decode_protobuf_file(&bytes[..size_at + 2], "f.pb");
        assert_eq!(names(&d).len(), 2);
        let p = &d.summary.first[0];
        assert_eq!(
            (p.kind.as_str(), p.at.byte_offset),
            ("truncated_protobuf", Some(size_at as u64))
        );
        assert_eq!(d.summary.records_dropped, 1);
        // A cut zstd message does not decompress: counted as cut, the messages before read.
        let each: Vec<Vec<u8>> = messages.iter().map(|m| zstd(m)).collect();
        let bytes = fixed32(&each);
        let d = decode_protobuf_file(&bytes[..bytes.len() - 3], "f.zst");
        assert_eq!(names(&d).len(), 2);
        assert_eq!(d.summary.problems.get("truncated_protobuf"), Some(&1));
    }

    #[test]
    fn data_that_does_not_decompress_is_a_located_dropped_record() {
        // A zstd magic number, then bytes that are no frame header.
        let mut corrupt = ZSTD_MAGIC.to_vec();
        corrupt.extend(b"garbage");
        let bytes = fixed32(&[corrupt, request("b", 2)]);
        let d = decode_protobuf_file(&bytes, "f.zst");
        assert_eq!(names(&d), ["b"], "the next message is still read");
        let p = &d.summary.first[0];
        assert_eq!(p.kind, "undecodable_compressed");
        assert_eq!(p.at.byte_offset, Some(4));
        assert_eq!(d.summary.records_dropped, 1);
    }

    #[test]
    fn the_readers_decompress_every_frame_and_member() {
        // Two zstd frames, one after the other (as `cat a.zst b.zst`), and two gzip members.
        let mut two = zstd(b"one\n");
        two.extend(zstd(b"two\n"));
        let mut text = String::new();
        Compression::sniff(&two)
            .reader(&two[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "one\ntwo\n");
        let mut gz = Vec::new();
        for part in ["one\n", "two\n"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(part.as_bytes()).unwrap();
            gz.extend(e.finish().unwrap());
        }
        let mut text = String::new();
        Compression::sniff(&gz)
            .reader(&gz[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "one\ntwo\n");
        assert_eq!(Compression::sniff(b"{\"a\":1}"), Compression::None);
    }
}
