//! `oloproof view`: a local web viewer over the run store.
//!
//! An [axum] server that reads the SQLite run store read-only on every request and renders
//! HTML pages with the same fragments as `oloproof report` ([`oloproof_report::html`]):
//!
//! | path | page |
//! | --- | --- |
//! | `/` | runs (config summary, headline numbers), comparisons, diagnoses, monitor reports |
//! | `/runs/<id>` | metric table with intervals and counts, slices, latency, filtered cases |
//! | `/runs/<id>/cases/<case_id>` | one case's full trace with every verdict and judge output |
//! | `/comparisons/<id>` | forest plot, decisions, gate, cases side by side (regressions first) |
//! | `/diagnoses/<id>` | label counts, recovery, the labelled cases |
//! | `/monitors/<id>` | a monitor report: alerts, SLOs, per-window series, drift, feedback |
//!
//! Filters are query parameters read on the server (`criterion`, `outcome`, `slice`, `label`,
//! `direction`); the pages carry no script at all. Everything stored came from a system or a
//! model, so every value is escaped, ids from the path are only ever looked up in the store, and
//! every response carries [`CONTENT_SECURITY_POLICY`] and `X-Content-Type-Options: nosniff`.
//! The server binds 127.0.0.1 unless told otherwise, refuses a non-loopback address unless the
//! caller allows it explicitly, and then answers only requests addressed to a loopback name
//! (a DNS-rebinding guard).
//!
//! ```
//! use oloproof_view::{path_segment, CONTENT_SECURITY_POLICY};
//! assert_eq!(path_segment("refund/annual <1>"), "refund%2Fannual%20%3C1%3E");
//! assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
//! ```
#![warn(missing_docs)]

mod error;
pub mod pages;
mod server;

pub use error::ViewError;
pub use server::{Viewer, ViewerSettings};

/// The `Content-Security-Policy` of every response: nothing but this server's own stylesheet
/// and images, no script from anywhere but this server (and the pages load none), no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The default port of `oloproof view`.
pub const DEFAULT_PORT: u16 = 7878;

/// Percent-encodes one path segment: everything but `A–Z a–z 0–9 - . _ ~ :` is escaped, so any
/// stored id (with `/`, `?`, `#`, spaces, quotes) stays one segment of a stable link.
pub fn path_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b':' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The link to a run.
pub fn run_link(run_id: &str) -> String {
    format!("/runs/{}", path_segment(run_id))
}

/// The link to one case of a run: `/runs/<id>/cases/<case_id>`. A case id made only of dots
/// (which a browser would resolve as `.`/`..`) goes in the query instead.
pub fn case_link(run_id: &str, case_id: &str) -> String {
    if !case_id.is_empty() && case_id.bytes().all(|b| b == b'.') {
        return format!("{}/case?id={}", run_link(run_id), path_segment(case_id));
    }
    format!("{}/cases/{}", run_link(run_id), path_segment(case_id))
}

/// The link to a comparison.
pub fn comparison_link(id: &str) -> String {
    format!("/comparisons/{}", path_segment(id))
}

/// The link to a diagnosis.
pub fn diagnosis_link(id: &str) -> String {
    format!("/diagnoses/{}", path_segment(id))
}

/// The link to a monitor report.
pub fn monitor_link(id: &str) -> String {
    format!("/monitors/{}", path_segment(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_any_id_in_one_segment() {
        assert_eq!(run_link("run_01ABC"), "/runs/run_01ABC");
        assert_eq!(
            case_link("run_1", "a/b?c#d\"<>"),
            "/runs/run_1/cases/a%2Fb%3Fc%23d%22%3C%3E"
        );
        assert_eq!(case_link("run_1", ".."), "/runs/run_1/case?id=..");
        assert_eq!(comparison_link("sha256:ab"), "/comparisons/sha256:ab");
        assert_eq!(monitor_link("mon_01<"), "/monitors/mon_01%3C");
        assert_eq!(path_segment("é"), "%C3%A9");
    }
}
