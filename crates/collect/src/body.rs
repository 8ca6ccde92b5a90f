//! One OTLP/HTTP request body in, one answer out: the content encoding undone within a size
//! limit, the request decoded by [`oloproof_traces::decode_request`], and the response bodies
//! of the OTLP/HTTP specification (`ExportTraceServiceResponse` with its `partial_success`,
//! `google.rpc.Status` for errors) in the request's own encoding. No I/O.

use std::io::Read;

use oloproof_core::store::{OtlpEncoding, OtlpSignal};
use oloproof_traces::span::Decoded;
use oloproof_traces::RequestError;
use prost::Message;

/// `opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct ExportTraceServiceResponse {
    #[prost(message, optional, tag = "1")]
    partial_success: Option<ExportTracePartialSuccess>,
}

/// `opentelemetry.proto.collector.trace.v1.ExportTracePartialSuccess`.
#[derive(Clone, PartialEq, prost::Message)]
struct ExportTracePartialSuccess {
    #[prost(int64, tag = "1")]
    rejected_spans: i64,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// `google.rpc.Status` (its `details` left empty).
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// `google.rpc.Code.INVALID_ARGUMENT`.
pub const CODE_INVALID_ARGUMENT: i32 = 3;
/// `google.rpc.Code.RESOURCE_EXHAUSTED`.
pub const CODE_RESOURCE_EXHAUSTED: i32 = 8;
/// `google.rpc.Code.UNAVAILABLE`.
pub const CODE_UNAVAILABLE: i32 = 14;

/// Why a request is refused, with the HTTP status OTLP/HTTP gives it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The body (or what it inflates to) is larger than the limit: 413.
    #[error("the request body is larger than {limit} bytes{inflated}; send smaller batches (the exporter's max export batch size) or raise --max-body-bytes", inflated = if *.inflated { " once decompressed" } else { "" })]
    TooLarge {
        /// The limit, bytes.
        limit: usize,
        /// Whether it is the decompressed size that went over.
        inflated: bool,
    },
    /// A `Content-Encoding` other than `gzip`/`identity`: 415.
    #[error("unsupported Content-Encoding `{0}`: send gzip or no encoding")]
    Encoding(String),
    /// An unsupported `Content-Type`: 415.
    #[error("{0}")]
    ContentType(String),
    /// Not an OTLP trace request (or a gzip stream that does not inflate): 400.
    #[error("{0}")]
    Malformed(String),
}

impl Refusal {
    /// The HTTP status code.
    pub fn http_status(&self) -> u16 {
        match self {
            Refusal::TooLarge { .. } => 413,
            Refusal::Encoding(_) | Refusal::ContentType(_) => 415,
            Refusal::Malformed(_) => 400,
        }
    }

    /// The `google.rpc.Code` put in the error body.
    pub fn rpc_code(&self) -> i32 {
        match self {
            Refusal::TooLarge { .. } => CODE_RESOURCE_EXHAUSTED,
            _ => CODE_INVALID_ARGUMENT,
        }
    }
}

/// A request read: its encoding, its (decompressed) bytes and what they decode to.
#[derive(Debug)]
pub struct Accepted {
    /// How the body is encoded.
    pub encoding: OtlpEncoding,
    /// The body, decompressed: what is stored.
    pub body: Vec<u8>,
    /// The spans and problems in it.
    pub decoded: Decoded,
}

/// The media type of a `Content-Type` header, lower-cased, without parameters.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The encoding a `Content-Type` names, if OTLP/HTTP's.
pub fn encoding_of(content_type: &str) -> Option<OtlpEncoding> {
    match media_type(content_type).as_str() {
        "application/x-protobuf" | "application/protobuf" => Some(OtlpEncoding::Protobuf),
        "application/json" => Some(OtlpEncoding::Json),
        _ => None,
    }
}

/// Reads one `POST /v1/traces` (or, for [`OtlpSignal::Logs`], `POST /v1/logs`) body: undoes
/// `content_encoding` (gzip or none), keeping the result within `limit` bytes, and decodes the
/// request.
///
/// Errors: a body over the limit before or after inflating ([`Refusal::TooLarge`]), an
/// unknown content encoding or type (415), a gzip stream that does not inflate or a body that
/// is not an OTLP trace request (400). A request with some unreadable spans is accepted; its
/// problems are in [`Accepted::decoded`].
pub fn read_request(
    raw: &[u8],
    signal: OtlpSignal,
    content_type: &str,
    content_encoding: Option<&str>,
    limit: usize,
) -> Result<Accepted, Refusal> {
    if raw.len() > limit {
        return Err(Refusal::TooLarge {
            limit,
            inflated: false,
        });
    }
    let encoding = encoding_of(content_type).ok_or_else(|| {
        Refusal::ContentType(
            RequestError::UnsupportedContentType {
                content_type: media_type(content_type),
            }
            .to_string(),
        )
    })?;
    let body = match content_encoding
        .map(|e| e.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") | Some("identity") => raw.to_vec(),
        Some("gzip") | Some("x-gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(raw)
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| Refusal::Malformed(format!("the gzip body does not inflate: {e}")))?;
            if out.len() > limit {
                return Err(Refusal::TooLarge {
                    limit,
                    inflated: true,
                });
            }
            out
        }
        Some(other) => return Err(Refusal::Encoding(other.to_string())),
    };
    let decoded = match signal {
        OtlpSignal::Traces => oloproof_traces::decode_request(&body, encoding.content_type()),
        OtlpSignal::Logs => {
            oloproof_traces::decode_logs_request_at(&body, encoding.content_type(), "POST /v1/logs")
        }
    }
    .map_err(|e| Refusal::Malformed(e.to_string()))?;
    Ok(Accepted {
        encoding,
        body,
        decoded,
    })
}

/// The success body: an `ExportTraceServiceResponse` (`ExportLogsServiceResponse` for logs:
/// the same fields and numbers, `rejected_log_records` for `rejected_spans`), with
/// `partial_success` when spans or records were rejected (`rejected` > 0), in `encoding`. A
/// full success is the empty message (`{}` in JSON), as the specification asks.
pub fn success_body(
    encoding: OtlpEncoding,
    signal: OtlpSignal,
    rejected: u64,
    message: &str,
) -> Vec<u8> {
    let partial = (rejected > 0).then(|| ExportTracePartialSuccess {
        rejected_spans: i64::try_from(rejected).unwrap_or(i64::MAX),
        error_message: message.to_string(),
    });
    match encoding {
        OtlpEncoding::Protobuf => ExportTraceServiceResponse {
            partial_success: partial,
        }
        .encode_to_vec(),
        OtlpEncoding::Json => {
            let value = match partial {
                None => serde_json::json!({}),
                // Proto3's JSON mapping: int64 as a string.
                Some(p) => {
                    let rejected = match signal {
                        OtlpSignal::Traces => "rejectedSpans",
                        OtlpSignal::Logs => "rejectedLogRecords",
                    };
                    serde_json::json!({"partialSuccess": {
                        rejected: p.rejected_spans.to_string(),
                        "errorMessage": p.error_message,
                    }})
                }
            };
            value.to_string().into_bytes()
        }
    }
}

/// An error body: a `google.rpc.Status` in `encoding`.
pub fn status_body(encoding: OtlpEncoding, code: i32, message: &str) -> Vec<u8> {
    match encoding {
        OtlpEncoding::Protobuf => RpcStatus {
            code,
            message: message.to_string(),
        }
        .encode_to_vec(),
        OtlpEncoding::Json => serde_json::json!({"code": code, "message": message})
            .to_string()
            .into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const T: OtlpSignal = OtlpSignal::Traces;
    use std::io::Write;

    const JSON: &str = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{
      "traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"rag",
      "startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000400000000"}]}]}]}"#;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn a_json_request_is_read_with_or_without_gzip() {
        for (raw, enc) in [
            (JSON.as_bytes().to_vec(), None),
            (gzip(JSON.as_bytes()), Some("gzip")),
            (JSON.as_bytes().to_vec(), Some("identity")),
        ] {
            let got =
                read_request(&raw, T, "application/json; charset=utf-8", enc, 1 << 20).unwrap();
            assert_eq!(got.encoding, OtlpEncoding::Json);
            assert_eq!(got.body, JSON.as_bytes());
            assert_eq!(got.decoded.spans.len(), 1);
            assert_eq!(got.decoded.spans[0].name, "rag");
        }
    }

    #[test]
    fn refusals_carry_their_http_status() {
        let too_big = read_request(JSON.as_bytes(), T, "application/json", None, 10).unwrap_err();
        assert_eq!(too_big.http_status(), 413);
        // A small gzip body that inflates past the limit (a "zip bomb") is refused too.
        let bomb = gzip(&vec![b' '; 100_000]);
        let inflated =
            read_request(&bomb, T, "application/json", Some("gzip"), 50_000).unwrap_err();
        assert_eq!(
            inflated,
            Refusal::TooLarge {
                limit: 50_000,
                inflated: true
            }
        );
        assert_eq!(
            read_request(b"x", T, "text/plain", None, 100)
                .unwrap_err()
                .http_status(),
            415
        );
        assert_eq!(
            read_request(JSON.as_bytes(), T, "application/json", Some("br"), 1 << 20)
                .unwrap_err()
                .http_status(),
            415
        );
        let not_json = read_request(b"{", T, "application/json", None, 100).unwrap_err();
        assert_eq!(not_json.http_status(), 400);
        assert!(not_json.to_string().contains("not JSON"), "{not_json}");
        let not_gzip =
            read_request(b"plain", T, "application/json", Some("gzip"), 100).unwrap_err();
        assert_eq!(not_gzip.http_status(), 400);
        let garbage =
            read_request(&[0xff; 16], T, "application/x-protobuf", None, 100).unwrap_err();
        assert_eq!(garbage.http_status(), 400);
    }

    #[test]
    fn a_logs_request_is_read_as_logs_and_a_traces_body_there_is_refused() {
        let logs = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{
          "eventName":"gen_ai.user.message","traceId":"0af7651916cd43dd8448eb211c80319c",
          "spanId":"b7ad6b7169203331","body":{"kvlistValue":{"values":[
            {"key":"content","value":{"stringValue":"hi"}}]}}}]}]}]}"#;
        let got = read_request(
            logs.as_bytes(),
            OtlpSignal::Logs,
            "application/json",
            None,
            1 << 20,
        )
        .unwrap();
        assert_eq!(got.decoded.log_events.len(), 1);
        assert_eq!(got.decoded.log_events[0].at.file, "POST /v1/logs");
        let wrong = read_request(
            JSON.as_bytes(),
            OtlpSignal::Logs,
            "application/json",
            None,
            1 << 20,
        )
        .unwrap_err();
        assert_eq!(wrong.http_status(), 400);
        assert!(wrong.to_string().contains("not OTLP `LogsData`"), "{wrong}");
    }

    #[test]
    fn response_bodies_follow_the_otlp_messages() {
        assert!(success_body(OtlpEncoding::Protobuf, T, 0, "").is_empty());
        assert_eq!(success_body(OtlpEncoding::Json, T, 0, ""), b"{}");
        let partial = success_body(OtlpEncoding::Protobuf, T, 3, "bad span");
        let back = ExportTraceServiceResponse::decode(partial.as_slice()).unwrap();
        let p = back.partial_success.unwrap();
        assert_eq!(
            (p.rejected_spans, p.error_message.as_str()),
            (3, "bad span")
        );
        let json: serde_json::Value =
            serde_json::from_slice(&success_body(OtlpEncoding::Json, T, 3, "bad span")).unwrap();
        assert_eq!(json["partialSuccess"]["rejectedSpans"], "3");
        let logs: serde_json::Value = serde_json::from_slice(&success_body(
            OtlpEncoding::Json,
            OtlpSignal::Logs,
            2,
            "bad record",
        ))
        .unwrap();
        assert_eq!(logs["partialSuccess"]["rejectedLogRecords"], "2");
        let status = RpcStatus::decode(
            status_body(OtlpEncoding::Protobuf, CODE_INVALID_ARGUMENT, "no").as_slice(),
        )
        .unwrap();
        assert_eq!((status.code, status.message.as_str()), (3, "no"));
    }
}
