//! Errors of this crate: only a request body as a whole can fail (files never do: their
//! problems are counted, see [`crate::problems`]).

/// Why an OTLP/HTTP request body cannot be read at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// Not a request: not JSON, not `TracesData`, or protobuf corrupt before any span (HTTP
    /// 400).
    #[error("malformed OTLP request: {message}")]
    Malformed {
        /// What was wrong.
        message: String,
    },
    /// Neither `application/x-protobuf` nor `application/json` (HTTP 415).
    #[error("unsupported content type `{content_type}`: OTLP/HTTP sends application/x-protobuf or application/json")]
    UnsupportedContentType {
        /// The media type received.
        content_type: String,
    },
}
