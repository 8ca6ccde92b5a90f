//! YAML files: `oloproof.yaml` (with `--set` overrides), compare policies and gate policies.
//!
//! Asserted on rejection: the error is a `SourceError` whose origin is this file at a line
//! within the input (1-based, at most one past the last line), column ≥ 1 and width ≥ 1, or
//! the `--set` override it came from (one that was given); its message is not empty and it
//! renders (`Display`) without panicking.
//!
//! Not fuzzed: `load_config`'s two file reads (the file itself, whose `read_to_string` rejects
//! non-UTF-8 bytes, and `schema:` files named by evaluators, here resolved in a folder that does
//! not exist), and the
//! location of judges' local model paths (path joining only). Monitor policies do not exist
//! yet.

use oloproof_core::config::{apply_override, validate};
use oloproof_core::source::YamlDocument;
use oloproof_engine::compare::Policy;
use oloproof_engine::gate::GatePolicy;

use crate::check::{located, text};

/// The separator between the YAML text and the `--set` overrides (one a line) in an input.
const OVERRIDES: &str = "\n#--set\n";

/// `oloproof.yaml`: the input is the file's text, optionally followed by [`OVERRIDES`] and
/// `KEY=VALUE` lines applied as `--set` arguments — `core::config::load_config` without its
/// file reads.
pub fn config(data: &[u8]) {
    let Some(input) = text(data) else { return };
    let (yaml, sets) = input.split_once(OVERRIDES).unwrap_or((input, ""));
    let overrides: Vec<String> = sets.lines().map(str::to_string).collect();
    let path = "oloproof.yaml";
    let doc = match YamlDocument::parse(path, yaml) {
        Ok(doc) => doc,
        Err(e) => return located(&e, path, yaml, &[]),
    };
    let mut value = doc.value.clone();
    for assignment in &overrides {
        if let Err(e) = apply_override(&mut value, assignment) {
            return located(&e, path, yaml, &overrides);
        }
    }
    // The evaluator registry checks every entry's own options; a `schema:` file name resolves
    // against a folder that does not exist (a located "cannot read" error, no file read).
    let dir = std::path::Path::new("/nonexistent-oloproof-fuzz");
    match validate(
        &doc,
        &value,
        &overrides,
        dir,
        &oloproof_engine::evaluators::Catalog,
    ) {
        Ok(options) => {
            // What the engine asks of a valid configuration must not panic either: the
            // validated entries rebuild (they are the run's stored identity).
            let _ = options.rag();
            let built = oloproof_engine::evaluators::build_all(&options.evaluators)
                .expect("validated evaluator entries rebuild");
            for e in &built {
                let _ = e.criterion();
                let _ = e.judge_choice().map(|j| j.llm_judges());
            }
        }
        Err(e) => located(&e, path, yaml, &overrides),
    }
}

/// A compare policy (`engine::compare::Policy::parse`).
pub fn compare_policy(data: &[u8]) {
    let Some(yaml) = text(data) else { return };
    if let Err(e) = Policy::parse("policy.yaml", yaml) {
        located(&e, "policy.yaml", yaml, &[]);
    }
}

/// A gate policy (`engine::gate::GatePolicy::parse`).
pub fn gate_policy(data: &[u8]) {
    let Some(yaml) = text(data) else { return };
    match GatePolicy::parse("gate.yaml", yaml) {
        Ok(policy) => {
            let _ = policy.needs_history();
        }
        Err(e) => located(&e, "gate.yaml", yaml, &[]),
    }
}
