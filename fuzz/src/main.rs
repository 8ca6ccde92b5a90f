//! Oloproof's fuzz targets: one AFL++ persistent-mode binary, one target per parser that reads
//! user or peer input (issue 19, "Fuzzing").
//!
//! ```text
//! oloproof-fuzz list            the target names, one a line
//! oloproof-fuzz seeds DIR       writes the generated seeds (DIR/TARGET/…)
//! oloproof-fuzz TARGET          runs TARGET: under afl-fuzz in a persistent loop, else once
//!                               on standard input (how a crash is replayed)
//! ```
//!
//! Every target checks the same property: the parser returns (no panic, no abort, no stack
//! overflow; `afl-fuzz -t` and `-m` turn a hang or an unbounded allocation into a finding), and
//! every rejection is a *located* error — what "located" means for each parser, and so what is
//! asserted, is written at the top of its module:
//!
//! | target | parser | module |
//! | --- | --- | --- |
//! | `config` | `oloproof.yaml` and `--set` overrides | [`yaml`] |
//! | `compare_policy` | `oloproof compare --policy` files | [`yaml`] |
//! | `gate_policy` | `oloproof gate --policy` files | [`yaml`] |
//! | `cases` | case JSONL | [`jsonl`] |
//! | `dataset` | Ragas and trace dataset JSONL | [`jsonl`] |
//! | `dataset_tabular` | Ragas CSV and JSON exports (pandas, Hugging Face columns) | [`jsonl`] |
//! | `list_repr` | a CSV list cell (numpy / Python / JSON repr) | [`jsonl`] |
//! | `history` | score history JSONL | [`jsonl`] |
//! | `trec_qrels`, `trec_run` | trec_eval qrels and runs, plain | [`trec`] |
//! | `trec_gzip` | the same files gzip-compressed (the raw `.gz` bytes are fuzzed) | [`trec`] |
//! | `system_reply` | a system's replies (hello, retrieve, count_tokens, generate, rerank) | [`replies`] |
//! | `judge_openai`, `judge_anthropic` | judge HTTP replies in both wire formats | [`replies`] |
//! | `judge_text` | the JSON inside a judge's text reply, and its schema check | [`replies`] |
//! | `tokenizer` | a model folder's `tokenizer.json` | [`tokenizer`] |
//! | `otlp_json`, `otlp_protobuf` | OTLP trace files (`oloproof import`) | [`traces`] |
//! | `otlp_logs` | OTLP logs files (`oloproof import --logs`), joined to the spans of the same bytes | [`traces`] |
//! | `otlp_request` | an OTLP/HTTP body (`oloproof collect`) | [`traces`] |
//! | `phoenix`, `langfuse` | Phoenix and Langfuse exports (`oloproof import`) | [`traces`] |

mod check;
mod jsonl;
mod replies;
mod seeds;
mod server;
mod tokenizer;
mod traces;
mod trec;
mod yaml;

use std::io::Write;
use std::path::Path;

/// A fuzz target: parses one input and asserts the property.
type Target = fn(&[u8]);

/// Every target, by name.
const TARGETS: &[(&str, Target)] = &[
    ("config", yaml::config),
    ("compare_policy", yaml::compare_policy),
    ("gate_policy", yaml::gate_policy),
    ("cases", jsonl::cases),
    ("dataset", jsonl::dataset),
    ("dataset_tabular", jsonl::dataset_tabular),
    ("list_repr", jsonl::list_repr),
    ("history", jsonl::history),
    ("trec_qrels", trec::qrels),
    ("trec_run", trec::run),
    ("trec_gzip", trec::gzip),
    ("system_reply", replies::system_reply),
    ("judge_openai", replies::judge_openai),
    ("judge_anthropic", replies::judge_anthropic),
    ("judge_text", replies::judge_text),
    ("tokenizer", tokenizer::tokenizer),
    ("otlp_json", traces::otlp_json),
    ("otlp_protobuf", traces::otlp_protobuf),
    ("otlp_logs", traces::otlp_logs),
    ("otlp_request", traces::otlp_request),
    ("phoenix", traces::phoenix),
    ("langfuse", traces::langfuse),
];

fn usage() -> ! {
    let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    let _ = writeln!(
        std::io::stderr(),
        "usage: oloproof-fuzz list | seeds DIR | TARGET\ntargets: {}",
        names.join(", ")
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("list") => {
            let mut out = std::io::stdout().lock();
            for (name, _) in TARGETS {
                let _ = writeln!(out, "{name}");
            }
        }
        Some("seeds") => match args.get(2) {
            Some(dir) => seeds::write(Path::new(dir)),
            None => usage(),
        },
        Some(name) => match TARGETS.iter().find(|(n, _)| *n == name) {
            Some((_, target)) => afl::fuzz(true, |data: &[u8]| target(data)),
            None => usage(),
        },
        None => usage(),
    }
}
