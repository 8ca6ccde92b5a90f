//! A run summarises the cases it holds in memory instead of reading the run back: the summary
//! must be exactly the one `summarize_stored` computes from the store (pass/fail, score and
//! excluded verdicts, slices, the seeded bootstrap intervals).

use oloproof_core::dataset::load_dataset;
use oloproof_engine::project::load_config_for_dataset;
use oloproof_engine::recorded::start_recorded_run;
use oloproof_engine::run::{summarize_run, summarize_stored, EngineEvaluators, RunFlags, Silent};
use oloproof_store::SqliteStore;

const CONFIG: &str = "dataset: data.jsonl
evaluators:
  - {type: contains, criterion: answer_correct}
  - {type: token_f1}
  - {type: entity_grounding}
  - {type: hit_rate, k: 2}
slices: [metadata.topic, relevant_position, context_truncated]
min_slice_support: 2
";

#[test]
fn the_held_summary_is_the_stored_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("oloproof.yaml"), CONFIG).unwrap();
    // Cases in an order unrelated to their ids, with passes, fails, scores and exclusions
    // (answers without names or numbers are excluded from entity grounding).
    let lines: Vec<String> = (0..60)
        .map(|i| {
            let n = (i * 37) % 60;
            let answer = match n % 4 {
                0 => "It takes 14 days in Paris.".to_string(),
                1 => format!("About {} days.", n),
                2 => "No idea.".to_string(),
                _ => "14 days, says Lyon.".to_string(),
            };
            format!(
                r#"{{"id": "case-{n:02}", "user_input": "Question {n}?", "retrieved_contexts": ["The answer to {n} is 14 days in Paris.", "Unrelated text."], "response": "{answer}", "reference": "14 days", "reference_contexts": ["The answer to {n} is 14 days in Paris."], "metadata": {{"topic": "t{}"}}}}"#,
                n % 3
            )
        })
        .collect();
    std::fs::write(dir.join("data.jsonl"), lines.join("\n")).unwrap();
    let config =
        load_config_for_dataset(&dir.join("oloproof.yaml"), &[], &dir.join("data.jsonl")).unwrap();
    let dataset = load_dataset(&dir.join("data.jsonl"), None).unwrap();
    let outcome = start_recorded_run(&config, dataset, RunFlags::default(), &mut Silent).unwrap();
    let store = SqliteStore::open_reader(&config.store_path()).unwrap();
    let mut stored = summarize_stored(&store, &outcome.run_id, outcome.summary.cache).unwrap();
    stored.incomplete_criteria = outcome.summary.incomplete_criteria.clone();
    assert_eq!(
        serde_json::to_value(&outcome.summary).unwrap(),
        serde_json::to_value(&stored).unwrap()
    );
    assert_eq!(outcome.summary.done, 60);
    // Both summarise slimmed cases (texts, contexts' passages and the verdict details the
    // summary does not read dropped): the whole cases give the same summary.
    let reader: &dyn oloproof_core::store::Store = &store;
    let whole = reader.load_run(&outcome.run_id, &EngineEvaluators).unwrap();
    assert!(whole
        .cases
        .iter()
        .any(|(_, t, _)| t.as_ref().is_some_and(|t| t.context.is_some())));
    let mut unslimmed = summarize_run(&whole, outcome.summary.cache).unwrap();
    unslimmed.incomplete_criteria = outcome.summary.incomplete_criteria.clone();
    assert_eq!(
        serde_json::to_value(&outcome.summary).unwrap(),
        serde_json::to_value(&unslimmed).unwrap()
    );
}
