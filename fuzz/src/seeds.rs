//! Generated seeds: inputs of the shapes the targets expect, for the parsers whose inputs the
//! repository holds no files of (history lines, peer replies, tokenizers) or that need the
//! fuzz input's own framing (overrides, status lines, the gzip flag byte). `scripts/fuzz`
//! adds the repository's fixture files next to them.

use std::io::Write;
use std::path::Path;

use serde_json::json;

fn put(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("seed folder");
    std::fs::write(d.join(name), bytes).expect("seed file");
}

fn lines(values: &[serde_json::Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn history_line(run: &str, when: &str, value: f64) -> serde_json::Value {
    json!({
        "schema_version": 1, "timestamp": when, "run_id": run,
        "commit": "0123abc", "branch": "main", "config_hash": "c0ffee",
        "system": "support-rag", "version": "v1",
        "judge_models": [{"name": "default", "provider": "openai", "model": "gpt-4o-mini"}],
        "cases": 13,
        "criteria": [
            {"criterion": "answer_correct", "kind": "proportion", "value": value,
             "interval": {"lower": 0.5, "upper": 0.9, "method": "wilson", "level": 0.95},
             "passed": 10, "observed": 13, "missing": 0, "excluded": 0},
            {"criterion": "recall@2", "kind": "mean", "value": 0.7, "interval": null,
             "std_dev": 0.2, "observed": 12, "missing": 1, "excluded": 0}
        ]
    })
}

fn word_level_tokenizer() -> serde_json::Value {
    let mut vocab = serde_json::Map::new();
    for (i, w) in [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "refund", "window", "days", "14", "?",
    ]
    .iter()
    .enumerate()
    {
        vocab.insert((*w).into(), json!(i));
    }
    json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [
            {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
        ],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    })
}

fn wordpiece_tokenizer() -> serde_json::Value {
    let mut t = word_level_tokenizer();
    let vocab = t["model"]["vocab"].clone();
    t["normalizer"] = json!({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true});
    t["pre_tokenizer"] = json!({"type": "BertPreTokenizer"});
    t["decoder"] = json!({"type": "WordPiece", "prefix": "##", "cleanup": true});
    t["model"] = json!({"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab});
    t
}

fn bpe_tokenizer() -> serde_json::Value {
    json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}]},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                  "vocab": {"r": 0, "e": 1, "f": 2, "u": 3, "n": 4, "d": 5, "re": 6, "ref": 7, "refund": 8, "und": 9},
                  "merges": ["r e", "re f", "u n", "un d", "ref und"]}
    })
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("gzip");
    e.finish().expect("gzip")
}

/// Writes every generated seed under `dir/TARGET/`.
pub fn write(dir: &Path) {
    // oloproof.yaml with `--set` overrides (the fixture files cover the plain files).
    put(
        dir,
        "config",
        "overrides.yaml",
        b"system:\n  name: s\n  version: v1\n  rag:\n    command: [python3, sys.py]\n    depth: 6\n    top_k: 2\ncases: cases.jsonl\nevaluators:\n  - {type: hit_rate, k: 2}\n#--set\nsystem.rag.top_k=4\nevaluators.0.k=[1, 2]\n",
    );

    put(
        dir,
        "history",
        "history.jsonl",
        &lines(&[
            history_line("01J0000000000000000000000A", "2026-09-16T12:00:00Z", 0.75),
            history_line(
                "01J0000000000000000000000B",
                "2026-09-17T08:30:00.250Z",
                0.8,
            ),
        ]),
    );

    // hello, retrieve, count_tokens, generate, rerank.
    let hello = json!({"id": 1, "ok": {"protocol": 1, "name": "support-rag", "version": "v1",
        "defaults": {"depth": 6, "top_k": 2}, "ops": ["retrieve", "generate", "count_tokens", "rerank"]}});
    let retrieve = json!({"id": 2, "ok": {"query": "refund window", "depth": 3, "candidates": [
        {"doc_id": "kb-1", "chunk_id": "kb-1#0", "score": 2.5, "text": "Refunds within 14 days.", "metadata": {"status": "current"}},
        {"doc_id": "kb-2", "score": 1.0, "text": "Shipping takes 3 days."}]}});
    let tokens = json!({"id": 3, "ok": [5, 7]});
    let generate = json!({"id": 4, "ok": {"answer": "14 days.", "citations": ["kb-1"]}});
    let rerank = json!({"id": 5, "ok": {"candidates": [{"doc_id": "b"}, {"doc_id": "a"}]}});
    put(
        dir,
        "system_reply",
        "ok.ndjson",
        &lines(&[hello.clone(), retrieve, tokens, generate, rerank]),
    );
    let raised = json!({"id": 2, "error": {"type": "KeyError", "message": "question", "traceback": "Traceback ..."}});
    let mut errors = lines(&[
        hello,
        raised,
        json!({"id": 3, "ok": [1]}),
        json!({"id": 4, "ok": "plain answer"}),
    ]);
    errors.extend_from_slice(b"HTTP 500 <html>oops</html>\n");
    put(dir, "system_reply", "errors.ndjson", &errors);

    let verdict = json!({"reason": "Stated in the context.", "grounded": 1}).to_string();
    let openai = |content: &str, finish: &str| {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "fuzz-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish,
                "logprobs": {"content": [{"token": "{", "logprob": -0.01, "top_logprobs": [{"token": "{", "logprob": -0.01}]}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 14, "total_tokens": 134}})
    };
    let embeddings = json!({"object": "list", "model": "fuzz-model",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.1, -0.2, 0.3]},
                 {"object": "embedding", "index": 1, "embedding": [0.0, 1.5, -1e-3]}],
        "usage": {"prompt_tokens": 4, "total_tokens": 4}});
    put(
        dir,
        "judge_openai",
        "ok.ndjson",
        &lines(&[openai(&verdict, "stop"), embeddings.clone()]),
    );
    let mut repaired = lines(&[
        openai("Sure! ```json\n{\"grounded\": 2}\n```", "stop"),
        openai(&verdict, "stop"),
    ]);
    repaired.extend_from_slice(
        b"HTTP 429 {\"error\": {\"message\": \"slow down\", \"type\": \"rate_limit\"}}\n",
    );
    repaired.extend_from_slice(&lines(&[embeddings]));
    put(dir, "judge_openai", "repair.ndjson", &repaired);
    put(
        dir,
        "judge_openai",
        "truncated.ndjson",
        &lines(&[
            openai("{\"reason\": \"Stat", "length"),
            openai("{\"reason\": \"x\", \"grounded\": 0}", "stop"),
        ]),
    );
    let mut http = b"HTTP 500 {\"error\": \"model not loaded\"}\nHTTP 400 {\"error\": {\"message\": \"bad request\"}}\n".to_vec();
    http.extend_from_slice(b"{\"choices\": []}\n");
    put(dir, "judge_openai", "errors.ndjson", &http);

    let tool = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "fuzz-model",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "judgment", "input": {"reason": "Stated.", "grounded": 1}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 120, "output_tokens": 14}});
    let text = json!({"id": "msg_2", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "{\"reason\": \"No.\", "}, {"type": "text", "text": "\"grounded\": 0}"}],
        "stop_reason": "max_tokens", "usage": {"input_tokens": 10, "output_tokens": 4}});
    put(dir, "judge_anthropic", "tool.ndjson", &lines(&[tool]));
    let mut anthropic = lines(&[text.clone(), text]);
    anthropic.extend_from_slice(b"HTTP 529 {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n");
    put(dir, "judge_anthropic", "text.ndjson", &anthropic);

    for (name, t) in [
        ("plain.txt", verdict.as_str()),
        ("fenced.txt", "Here you go:\n```json\n{\"claims\": [\"a\", \"b\"]}\n```\n"),
        ("prose.txt", "The verdicts are {\"verdicts\": [{\"id\": 1, \"verdict\": 1, \"reason\": \"ok\"}, {\"id\": 2, \"verdict\": 0, \"reason\": \"no\"}, {\"id\": 3, \"verdict\": 1, \"reason\": \"ok\"}]} as asked."),
        ("attribution.txt", "{\"verdicts\": [{\"id\": 1, \"reason\": \"r\", \"chunks\": [1, 3]}, {\"id\": 2, \"reason\": \"r\", \"chunks\": []}, {\"id\": 3, \"reason\": \"r\", \"chunks\": [2]}]}"),
        ("synthesis.txt", "{\"question\": \"q?\", \"answer\": \"a\", \"evidence\": [{\"passage\": 1, \"quote\": \"one\"}]}"),
        ("pairwise.txt", "{\"reason\": \"A is right\", \"winner\": \"A\"}"),
    ] {
        put(dir, "judge_text", name, t.as_bytes());
    }

    put(
        dir,
        "tokenizer",
        "wordlevel.json",
        word_level_tokenizer().to_string().as_bytes(),
    );
    put(
        dir,
        "tokenizer",
        "wordpiece.json",
        wordpiece_tokenizer().to_string().as_bytes(),
    );
    put(
        dir,
        "tokenizer",
        "bpe.json",
        bpe_tokenizer().to_string().as_bytes(),
    );

    // trec_gzip: byte 0 even = the rest is the raw .gz file, odd = the rest is compressed first.
    let qrels = b"301 0 FBIS3-10082 1\n301 0 FBIS3-10169 0\n302 0 FBIS3-10243 2\n";
    let run = b"301 Q0 FBIS3-10082 1 12.5 tag\n301 Q0 FBIS3-10169 2 11.25 tag\n302 Q0 FBIS3-10243 1 -3 tag\n";
    for (name, text) in [("qrels", &qrels[..]), ("run", &run[..])] {
        let mut raw = vec![0u8];
        raw.extend_from_slice(&gz(text));
        put(dir, "trec_gzip", &format!("{name}.gz"), &raw);
        let mut plain = vec![1u8];
        plain.extend_from_slice(text);
        put(dir, "trec_gzip", &format!("{name}.txt"), &plain);
    }
    // Two gzip members back to back (the reader is a multi-member decoder).
    let mut multi = vec![0u8];
    multi.extend_from_slice(&gz(&run[..31]));
    multi.extend_from_slice(&gz(&run[31..]));
    put(dir, "trec_gzip", "members.gz", &multi);

    // OTLP JSON Lines: a trace over two lines (camelCase, then snake_case with a base64 id),
    // OpenInference retrieval and LLM attributes, and a line that is not TracesData.
    let root = json!({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
        "value": {"stringValue": "bot"}}]}, "scopeSpans": [{"spans": [{
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "0000000000000001",
        "name": "rag", "startTimeUnixNano": "1764633600000000000",
        "endTimeUnixNano": "1764633600500000000", "status": {"code": 1},
        "attributes": [{"key": "input.value", "value": {"stringValue": "How long?"}},
                       {"key": "output.value", "value": {"stringValue": "14 days."}}]}]}]}]});
    let child = json!({"resource_spans": [{"scope_spans": [{"spans": [{
        "trace_id": "CvdlGRbNQ92ESOshHIAxnA==", "span_id": "AAAAAAAAAAI=",
        "parent_span_id": "AAAAAAAAAAE=", "name": "retrieve",
        "start_time_unix_nano": 1764633600010000000u64, "end_time_unix_nano": 1764633600030000000u64,
        "attributes": [
            {"key": "openinference.span.kind", "value": {"string_value": "RETRIEVER"}},
            {"key": "retrieval.documents.0.document.id", "value": {"string_value": "d1"}},
            {"key": "retrieval.documents.0.document.score", "value": {"double_value": 0.5}},
            {"key": "llm.token_count.prompt", "value": {"int_value": "12"}}],
        "events": [{"name": "exception", "time_unix_nano": "1764633600020000000",
            "attributes": [{"key": "exception.message", "value": {"stringValue": "x"}}]}]}]}]}]});
    let mut otlp = lines(&[root.clone(), child]);
    otlp.extend_from_slice(b"{\"resourceMetrics\": []}\n");
    put(dir, "otlp_json", "trace.jsonl", &otlp);
    put(dir, "otlp_request", "request.json", root.to_string().as_bytes());
    // A logs line whose events name the spans above, and an ordinary log line; then the
    // trace lines, so the same file is both (see `traces::otlp_logs`).
    let logs = json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.user.message", "traceId": "0af7651916cd43dd8448eb211c80319c",
         "spanId": "0000000000000001", "observedTimeUnixNano": "1764633600100000000",
         "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "How long?"}}]}}},
        {"eventName": "gen_ai.client.inference.operation.details",
         "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "0000000000000002",
         "attributes": [{"key": "gen_ai.output.messages", "value": {"arrayValue": {"values": [
             {"kvlistValue": {"values": [{"key": "role", "value": {"stringValue": "assistant"}}]}}]}}}]},
        {"body": {"stringValue": "GET /health"}, "traceId": "0af7651916cd43dd8448eb211c80319c",
         "spanId": "0000000000000001"}]}]}]});
    let mut both = lines(&[logs]);
    both.extend_from_slice(&otlp);
    put(dir, "otlp_logs", "logs_and_traces.jsonl", &both);
}
