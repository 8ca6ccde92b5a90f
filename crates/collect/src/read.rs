//! Reading collected requests back: each stored body through the same OTLP reader as a file,
//! its spans and problems located in `POST /v1/traces #SEQ` (the request's place in arrival
//! order, with byte offsets for protobuf).

use oloproof_core::store::{CollectedRequest, OtlpSignal, Store, StoreResult};
use oloproof_traces::problems::Problem;
use oloproof_traces::span::{Decoded, Location};

/// Requests read per store query.
pub const PAGE: usize = 64;

/// Where a collected request's spans are said to come from (`POST /v1/traces #SEQ`).
pub fn request_location(seq: i64) -> String {
    signal_location(OtlpSignal::Traces, seq)
}

/// Where a collected request of `signal` is said to come from (`POST /v1/logs #SEQ`).
pub fn signal_location(signal: OtlpSignal, seq: i64) -> String {
    format!("POST {} #{seq}", signal.path())
}

/// Decodes one stored request. A body that no longer decodes as a whole (stored by another
/// version, damaged) is one dropped input record with its reason, never an error that stops
/// the import.
pub fn decode_collected(request: &CollectedRequest) -> Decoded {
    let file = signal_location(request.signal, request.seq);
    let content_type = request.encoding.content_type();
    let decoded = match request.signal {
        OtlpSignal::Traces => {
            oloproof_traces::decode_request_at(&request.body, content_type, &file)
        }
        OtlpSignal::Logs => {
            oloproof_traces::decode_logs_request_at(&request.body, content_type, &file)
        }
    };
    match decoded {
        Ok(decoded) => decoded,
        Err(e) => {
            let mut decoded = Decoded::default();
            decoded.summary.drop_record(Problem {
                kind: "malformed_request".into(),
                at: Location {
                    file,
                    line: None,
                    byte_offset: None,
                },
                message: e.to_string(),
            });
            decoded
        }
    }
}

/// Calls `each` with every collected request after `after`, in arrival order, decoded, one
/// page of [`PAGE`] requests in memory at a time. Returns the last sequence number read
/// (`after` when there was none), from which a later call goes on.
pub fn for_each_collected<E>(
    store: &dyn Store,
    after: i64,
    mut each: impl FnMut(&CollectedRequest, Decoded) -> Result<(), E>,
) -> Result<i64, E>
where
    E: From<oloproof_core::store::StoreError>,
{
    let mut last = after;
    loop {
        let page: StoreResult<Vec<CollectedRequest>> = store.collected_page(last, PAGE);
        let page = page?;
        let Some(end) = page.last().map(|r| r.seq) else {
            return Ok(last);
        };
        for request in &page {
            each(request, decode_collected(request))?;
        }
        last = end;
    }
}

/// Every collected request assembled into trace records, as `oloproof import --collected`
/// assembles them: the JSON Lines text `monitor` reads as its traffic, with the import's
/// accounting.
#[derive(Debug, Clone, Default)]
pub struct CollectedTraffic {
    /// One trace record per line, in the order the assembler completed them.
    pub text: String,
    /// Requests read.
    pub requests: u64,
    /// Spans read, used and dropped (by problem kind), records written, the first problems.
    pub summary: oloproof_traces::problems::ImportSummary,
}

/// Reads every collected request of `store` into trace records (`corpus` resolves passage
/// text the spans did not record, by document id), one page of requests at a time.
///
/// # Errors
///
/// The store's; a request that does not decode is a dropped input record in the summary.
pub fn collected_traffic(
    store: &dyn Store,
    corpus: Option<&oloproof_core::corpus::Corpus>,
) -> StoreResult<CollectedTraffic> {
    use oloproof_traces::assemble::{AssembleOptions, Assembler};
    let mut assembler = Assembler::new(AssembleOptions::default(), corpus);
    let mut out = CollectedTraffic::default();
    let push = |records: Vec<oloproof_traces::RecordLine>, text: &mut String| {
        for r in records {
            // The assembler writes JSON text: valid UTF-8 by construction.
            text.push_str(&String::from_utf8_lossy(&r.json));
        }
    };
    for_each_collected(store, 0, |_, decoded| -> StoreResult<()> {
        out.requests += 1;
        push(assembler.push(decoded), &mut out.text);
        Ok(())
    })?;
    let (records, summary) = assembler.finish();
    push(records, &mut out.text);
    out.summary = summary;
    Ok(out)
}
