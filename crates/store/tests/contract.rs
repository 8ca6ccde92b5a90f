//! The store contract: one suite, run against every backend. SQLite always; Postgres on the
//! server `OLOPROOF_TEST_POSTGRES` names (`scripts/test` starts one), each test in a database of
//! its own. Without it the Postgres half is skipped, or fails under
//! `OLOPROOF_REQUIRE_REFERENCES=1` (CI).

use std::time::Duration;

use oloproof_core::case::Case;
use oloproof_core::config::{validate, EvaluatorCatalog, EvaluatorEntry, ProjectOptions};
use oloproof_core::run::{Evaluators, LoadedRun, StoredEvaluatorError};
use oloproof_core::settings::RunSettings;
use oloproof_core::source::{SourceError, YamlDocument};
use oloproof_core::store::{
    CacheLayer, CaseResult, CaseState, Claim, CollectedRequest, MonitorRecord, NewRun,
    OtlpEncoding, OtlpSignal, RunId, RunStatus, Store, StoreError, StoreLocation, WorkerId,
};
use oloproof_core::summary::{CacheCounts, HitMiss, RunSummary, SummaryKind};
use oloproof_core::trace::Trace;
use oloproof_core::verdict::{CriterionVerdict, Verdict};

/// Every criterion a proportion, named by its `criterion:` (else its type).
struct Kinds;
impl Evaluators for Kinds {
    fn criteria(
        &self,
        entries: &[EvaluatorEntry],
    ) -> Result<Vec<(String, SummaryKind)>, StoredEvaluatorError> {
        Ok(entries
            .iter()
            .map(|e| {
                let name = match (e.criterion_override(), e.options.get("k")) {
                    (Some(c), _) => c.to_string(),
                    (None, Some(k)) => format!("{}_at_{k}", e.type_name),
                    (None, None) => e.type_name.clone(),
                };
                (name, SummaryKind::Proportion)
            })
            .collect())
    }
    fn summarize(&self, _: &LoadedRun) -> Result<RunSummary, StoredEvaluatorError> {
        unreachable!("the loader never summarises")
    }
    fn slice_value(&self, _: &str, _: &Case, _: &Trace) -> String {
        unreachable!("the loader never slices")
    }
}

impl EvaluatorCatalog for Kinds {
    fn type_names(&self) -> Vec<&'static str> {
        vec!["contains", "hit_rate"]
    }
    fn check(
        &self,
        _: &YamlDocument,
        _: &[String],
        _: &std::path::Path,
        _: &mut ProjectOptions,
    ) -> Result<(), SourceError> {
        Ok(())
    }
}

const CONFIG: &str = "system:\n  rag:\n    object: app:X\n    depth: 2\n    top_k: 1\ncases: cases.jsonl\nevaluators:\n  - {type: contains, criterion: answer_correct}\n  - {type: hit_rate, k: 1}\n";

fn settings() -> RunSettings {
    let doc = YamlDocument::parse("oloproof.yaml", CONFIG).unwrap();
    let options = validate(&doc, &doc.value, &[], std::path::Path::new("."), &Kinds).unwrap();
    serde_json::from_value(serde_json::json!({
        "config_path": "oloproof.yaml", "config_dir": ".", "options": options,
        "system": {"name": "x", "version": "1", "depth": 2, "top_k": 1,
                   "token_budget": null, "index_version": null, "params": {}},
        "workers": 1, "timeout_s": 60.0, "use_cache": true,
    }))
    .unwrap()
}

fn case(id: &str) -> Case {
    serde_json::from_str(&format!(r#"{{"id":"{id}","input":{{}}}}"#)).unwrap()
}

fn verdict(criterion: &str) -> CriterionVerdict {
    CriterionVerdict {
        criterion: criterion.into(),
        verdict: Verdict::Pass,
        detail: serde_json::Value::Null,
    }
}

/// A store to test and a way to open more connections to it.
struct Backend {
    location: StoreLocation,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    fn store(&self) -> Box<dyn Store> {
        oloproof_store::open(&self.location).unwrap()
    }
}

fn sqlite() -> Backend {
    let dir = tempfile::tempdir().unwrap();
    Backend {
        location: StoreLocation::Sqlite(dir.path().join("s/o.db")),
        _dir: Some(dir),
    }
}

/// A fresh database on the test server, or `None` (skipped) without one.
#[allow(clippy::print_stderr)] // says why the test did nothing
fn postgres() -> Option<Backend> {
    let Ok(url) = std::env::var("OLOPROOF_TEST_POSTGRES") else {
        assert!(
            std::env::var("OLOPROOF_REQUIRE_REFERENCES").as_deref() != Ok("1"),
            "OLOPROOF_TEST_POSTGRES is not set but OLOPROOF_REQUIRE_REFERENCES=1: start one \
             with `eval \"$(scripts/postgres-test start)\"`"
        );
        eprintln!("skipped: OLOPROOF_TEST_POSTGRES is not set");
        return None;
    };
    Some(Backend {
        location: StoreLocation::Postgres(fresh_database(&url)),
        _dir: None,
    })
}

/// Creates a database of its own for one test on the server `url` names; returns its URL.
fn fresh_database(url: &str) -> String {
    let name = format!("t_{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut config: postgres::Config = url.parse().unwrap();
    if let Ok(p) = std::env::var("PGPASSWORD") {
        config.password(p);
    }
    let mut admin = config.connect(postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let base = base.rsplit_once('/').unwrap().0;
    match query {
        "" => format!("{base}/{name}"),
        q => format!("{base}/{name}?{q}"),
    }
}

macro_rules! contract {
    ($($name:ident),+ $(,)?) => {
        mod sqlite_backend {
            $(#[test] fn $name() { super::$name(&super::sqlite()) })+
        }
        mod postgres_backend {
            $(#[test] fn $name() { if let Some(b) = super::postgres() { super::$name(&b) } })+
        }
    };
}

contract!(
    claims_are_leased_in_batches_in_case_order,
    claimable_counts_what_a_claim_would_find_up_to_a_cap,
    completion_is_guarded_by_attempt_and_holder,
    an_expired_lease_is_claimed_again_under_the_next_attempt,
    heartbeats_keep_a_lease,
    resume_takes_over_unexpired_leases,
    a_case_past_max_attempts_is_handed_back_exhausted,
    concurrent_claimers_never_share_a_case,
    a_run_reads_back_typed,
    run_status_moves_through_its_life,
    the_cache_keeps_the_first_value_and_pages,
    artifacts_are_recorded_and_listed,
    a_run_is_exported_and_imported_whole,
    unknown_runs_are_typed_errors,
    collected_requests_keep_their_order_and_bytes,
    monitor_reports_are_recorded_listed_and_copied,
);

const LEASE: Duration = Duration::from_secs(60);

fn new_run(store: &mut dyn Store, id: &str, n: usize) -> RunId {
    let run = RunId::from(id);
    let cases: Vec<Case> = (0..n).map(|i| case(&format!("c{i:03}"))).collect();
    let refs: Vec<&Case> = cases.iter().collect();
    store
        .create_run(&NewRun {
            id: &run,
            config_path: "oloproof.yaml",
            settings: &settings(),
            identity: "sha256:i",
            system_json: "{}",
            parent: None,
            cases: &refs,
        })
        .unwrap();
    run
}

fn claim<'a>(worker: &'a WorkerId, limit: usize, lease: Duration) -> Claim<'a> {
    Claim {
        worker,
        limit,
        lease,
        respect_leases: true,
        max_attempts: None,
    }
}

fn result<'a>(
    case_id: &'a str,
    attempt: i64,
    trace: &'a Trace,
    verdicts: &'a [CriterionVerdict],
) -> CaseResult<'a> {
    CaseResult {
        case_id,
        attempt,
        trace,
        trace_json: None,
        verdicts,
        cache_use: CacheCounts {
            execution: HitMiss { hit: 0, miss: 1 },
            ..CacheCounts::default()
        },
    }
}

fn claims_are_leased_in_batches_in_case_order(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_batch", 5);
    let w = WorkerId::from("w1");
    let first = s.claim_batch(&run, &claim(&w, 2, LEASE)).unwrap();
    let ids: Vec<&str> = first.iter().map(|c| c.case.id.as_str()).collect();
    assert_eq!(ids, ["c000", "c001"]);
    assert!(first.iter().all(|c| c.attempt == 1 && !c.exhausted));
    let second = s.claim_batch(&run, &claim(&w, 10, LEASE)).unwrap();
    let ids: Vec<&str> = second.iter().map(|c| c.case.id.as_str()).collect();
    assert_eq!(
        ids,
        ["c002", "c003", "c004"],
        "leased cases are not claimed again"
    );
    assert!(s
        .claim_batch(&run, &claim(&w, 10, LEASE))
        .unwrap()
        .is_empty());
}

fn claimable_counts_what_a_claim_would_find_up_to_a_cap(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_claimable", 5);
    let (w1, w2) = (WorkerId::from("w1"), WorkerId::from("w2"));
    assert_eq!(s.claimable(&run, &claim(&w1, 10, LEASE), 100).unwrap(), 5);
    assert_eq!(
        s.claimable(&run, &claim(&w1, 10, LEASE), 3).unwrap(),
        3,
        "capped"
    );
    assert_eq!(s.claim_batch(&run, &claim(&w1, 2, LEASE)).unwrap().len(), 2);
    // Leased cases are not claimable, by their holder or by another worker...
    assert_eq!(s.claimable(&run, &claim(&w1, 10, LEASE), 100).unwrap(), 3);
    assert_eq!(s.claimable(&run, &claim(&w2, 10, LEASE), 100).unwrap(), 3);
    // ...unless leases are ignored (a resume), and then only by another holder.
    let mut resume = claim(&w2, 10, LEASE);
    resume.respect_leases = false;
    assert_eq!(s.claimable(&run, &resume, 100).unwrap(), 5);
    let got = s.claim_batch(&run, &claim(&w2, 10, LEASE)).unwrap();
    assert_eq!(got.len(), 3, "the count matched the claim");
    let trace = Trace::new("c002");
    let verdicts = [verdict("answer_correct")];
    assert_eq!(
        s.complete_cases(&run, &w2, &[result("c002", 1, &trace, &verdicts)])
            .unwrap(),
        [true]
    );
    // A done case is never claimable again; a holder never claims its own cases twice.
    let w3 = WorkerId::from("w3");
    resume.worker = &w3;
    assert_eq!(s.claimable(&run, &resume, 100).unwrap(), 4);
    resume.worker = &w1;
    assert_eq!(s.claimable(&run, &resume, 100).unwrap(), 2);
}

fn completion_is_guarded_by_attempt_and_holder(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_guard", 1);
    let (w1, w2) = (WorkerId::from("w1"), WorkerId::from("w2"));
    let c = &s.claim_batch(&run, &claim(&w1, 10, LEASE)).unwrap()[0];
    let trace = Trace::new("c000");
    let verdicts = [verdict("answer_correct")];
    // Another worker, or a stale attempt, writes nothing.
    assert_eq!(
        s.complete_cases(&run, &w2, &[result("c000", 1, &trace, &verdicts)])
            .unwrap(),
        [false]
    );
    assert_eq!(
        s.complete_cases(&run, &w1, &[result("c000", 0, &trace, &verdicts)])
            .unwrap(),
        [false]
    );
    assert_eq!(s.run(&run).unwrap().done_count, 0);
    assert!(s.verdicts(&run).unwrap().is_empty());
    // The holder of the current attempt writes; sending it again (a retried commit) is
    // recognised and writes nothing twice.
    let r = result("c000", c.attempt, &trace, &verdicts);
    assert_eq!(
        s.complete_cases(&run, &w1, std::slice::from_ref(&r))
            .unwrap(),
        [true]
    );
    assert_eq!(s.complete_cases(&run, &w1, &[r]).unwrap(), [true]);
    assert_eq!(s.run(&run).unwrap().done_count, 1);
    assert_eq!(s.verdicts(&run).unwrap().len(), 1);
    let rows = s.cases(&run).unwrap();
    assert_eq!(rows[0].state, CaseState::Done);
    assert_eq!(
        s.cache_use_of(&run).unwrap().execution,
        HitMiss { hit: 0, miss: 1 }
    );
}

fn an_expired_lease_is_claimed_again_under_the_next_attempt(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_expiry", 2);
    let (dead, alive) = (WorkerId::from("dead"), WorkerId::from("alive"));
    let short = Duration::from_millis(300);
    assert_eq!(
        s.claim_batch(&run, &claim(&dead, 10, short)).unwrap().len(),
        2
    );
    assert!(s
        .claim_batch(&run, &claim(&alive, 10, LEASE))
        .unwrap()
        .is_empty());
    std::thread::sleep(Duration::from_millis(600));
    let again = s.claim_batch(&run, &claim(&alive, 10, LEASE)).unwrap();
    assert_eq!(again.len(), 2);
    assert!(again.iter().all(|c| c.attempt == 2));
    // The stale worker's late completion is rejected; the new holder's is kept.
    let trace = Trace::new("c000");
    assert_eq!(
        s.complete_cases(&run, &dead, &[result("c000", 1, &trace, &[])])
            .unwrap(),
        [false]
    );
    assert_eq!(
        s.complete_cases(&run, &alive, &[result("c000", 2, &trace, &[])])
            .unwrap(),
        [true]
    );
    assert_eq!(s.run(&run).unwrap().done_count, 1);
}

fn heartbeats_keep_a_lease(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_beat", 3);
    let (w1, w2) = (WorkerId::from("w1"), WorkerId::from("w2"));
    let short = Duration::from_millis(400);
    assert_eq!(s.claim_batch(&run, &claim(&w1, 2, short)).unwrap().len(), 2);
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(s.heartbeat(&run, &w1, LEASE).unwrap(), 2);
    }
    // Past the first lease, but extended: only the unclaimed case is free.
    let other = s.claim_batch(&run, &claim(&w2, 10, LEASE)).unwrap();
    let ids: Vec<&str> = other.iter().map(|c| c.case.id.as_str()).collect();
    assert_eq!(ids, ["c002"]);
    // A heartbeat of a worker that holds nothing extends nothing.
    assert_eq!(s.heartbeat(&run, &WorkerId::from("w3"), LEASE).unwrap(), 0);
}

fn resume_takes_over_unexpired_leases(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_resume", 2);
    let (gone, resumer) = (WorkerId::from("gone"), WorkerId::from("resumer"));
    s.claim_batch(&run, &claim(&gone, 10, LEASE)).unwrap();
    let take = Claim {
        respect_leases: false,
        ..claim(&resumer, 10, LEASE)
    };
    let taken = s.claim_batch(&run, &take).unwrap();
    assert_eq!(taken.len(), 2);
    assert!(taken.iter().all(|c| c.attempt == 2));
}

fn a_case_past_max_attempts_is_handed_back_exhausted(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_max", 1);
    let capped = |w| Claim {
        respect_leases: false,
        max_attempts: Some(2),
        ..claim(w, 10, LEASE)
    };
    // Three workers in turn, each taking the case over from the one before.
    let (w1, w2, w3) = (
        WorkerId::from("w1"),
        WorkerId::from("w2"),
        WorkerId::from("w3"),
    );
    assert!(!s.claim_batch(&run, &capped(&w1)).unwrap()[0].exhausted);
    assert!(!s.claim_batch(&run, &capped(&w2)).unwrap()[0].exhausted);
    // A worker never claims again a case it holds.
    assert!(s.claim_batch(&run, &capped(&w2)).unwrap().is_empty());
    let third = &s.claim_batch(&run, &capped(&w3)).unwrap()[0];
    assert_eq!(third.attempt, 3);
    assert!(third.exhausted);
}

fn concurrent_claimers_never_share_a_case(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_race", 120);
    drop(s);
    let taken: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let run = run.clone();
                scope.spawn(move || {
                    let mut s = b.store();
                    let w = WorkerId::from(format!("w{i}").as_str());
                    let mut mine = Vec::new();
                    loop {
                        let batch = s.claim_batch(&run, &claim(&w, 7, LEASE)).unwrap();
                        if batch.is_empty() {
                            return mine;
                        }
                        mine.extend(batch.into_iter().map(|c| c.case.id));
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<String> = taken.into_iter().flatten().collect();
    assert_eq!(all.len(), 120);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 120, "no case claimed twice");
}

fn a_run_reads_back_typed(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_1", 2);
    let w = WorkerId::from("w");
    s.claim_batch(&run, &claim(&w, 2, LEASE)).unwrap();
    let trace = Trace::new("c000");
    let verdicts = [verdict("answer_correct")];
    s.complete_cases(&run, &w, &[result("c000", 1, &trace, &verdicts)])
        .unwrap();
    // A trace the caller serialised already is stored as that text, not serialised again.
    let mut given = Trace::new("c001");
    given.stderr.push("from the caller".into());
    let given_json = serde_json::to_string(&given).unwrap();
    let other = Trace::new("not this one");
    s.complete_cases(
        &run,
        &w,
        &[CaseResult {
            trace_json: Some(&given_json),
            ..result("c001", 1, &other, &[])
        }],
    )
    .unwrap();
    let stored = s.cases(&run).unwrap();
    assert_eq!(stored[1].trace_json.as_deref(), Some(given_json.as_str()));
    let loaded = s.load_run("run_1", &Kinds).unwrap();
    assert_eq!(loaded.record.id, "run_1");
    assert_eq!(loaded.settings.system.top_k, 1);
    let names: Vec<&str> = loaded.criteria.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(names, ["answer_correct", "hit_rate_at_1"]);
    let ids: Vec<&str> = loaded.cases.iter().map(|(c, _, _)| c.id.as_str()).collect();
    assert_eq!(ids, ["c000", "c001"]);
    assert!(loaded.cases[0].1.is_some());
    assert_eq!(loaded.cases[1].1.as_ref(), Some(&given));
    assert!(loaded.verdict("c000", "answer_correct").is_some());
    // Part of a run: only the selected cases are decoded, each shaped.
    let mut seen = Vec::new();
    let part = s
        .load_run_with(
            "run_1",
            &Kinds,
            |id| {
                seen.push(id.to_string());
                id == "c000"
            },
            |(_, _, verdicts)| verdicts.clear(),
        )
        .unwrap();
    assert_eq!(seen, ["c000", "c001"]);
    assert_eq!(part.cases.len(), 1);
    assert!(part.cases[0].2.is_empty());
}

fn run_status_moves_through_its_life(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_life", 1);
    assert_eq!(s.run(&run).unwrap().status, RunStatus::Running);
    s.mark_interrupted(&run).unwrap();
    assert_eq!(s.run(&run).unwrap().status, RunStatus::Interrupted);
    s.reopen_run(&run).unwrap();
    assert_eq!(s.run(&run).unwrap().status, RunStatus::Running);
    let summary = RunSummary {
        schema_version: 1,
        run_id: "run_life".into(),
        system: "x".into(),
        version: "1".into(),
        cases: 1,
        done: 0,
        errors: 0,
        criteria: Vec::new(),
        slices: Vec::new(),
        min_slice_support: 5,
        cache: CacheCounts::default(),
        latency_ms: Default::default(),
        bootstrap_seed: 1,
        bootstrap_resamples: 100,
        judges: None,
        repeat_agreement: Vec::new(),
        incomplete_criteria: Vec::new(),
        external_scores: Vec::new(),
    };
    assert!(s.finish_run(&run, RunStatus::Incomplete, &summary).unwrap());
    // Only a running run is finished: a second worker finishing it records nothing.
    assert!(!s.finish_run(&run, RunStatus::Complete, &summary).unwrap());
    let record = s.run(&run).unwrap();
    assert_eq!(record.status, RunStatus::Incomplete);
    let back: RunSummary = serde_json::from_str(&record.summary_json.unwrap()).unwrap();
    assert_eq!(back, summary);
    // A finished run is not marked interrupted.
    s.mark_interrupted(&run).unwrap();
    assert_eq!(s.run(&run).unwrap().status, RunStatus::Incomplete);
    let older = new_run(s.as_mut(), "run_life_0", 0);
    let listed: Vec<String> = s.list_runs().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&older.to_string()));
}

fn the_cache_keeps_the_first_value_and_pages(b: &Backend) {
    let mut s = b.store();
    let entries: Vec<_> = (0..5)
        .map(|i| (CacheLayer::Judgment, format!("k{i}"), format!("v{i}")))
        .collect();
    s.put_cache_entries(&entries).unwrap();
    s.put_cache_entries(&[(CacheLayer::Judgment, "k0".into(), "other".into())])
        .unwrap();
    assert_eq!(
        s.cache_get(CacheLayer::Judgment, "k0").unwrap().as_deref(),
        Some("v0")
    );
    assert_eq!(s.cache_get(CacheLayer::Execution, "k0").unwrap(), None);
    s.begin_read().unwrap();
    assert!(s.cache_get(CacheLayer::Judgment, "k4").unwrap().is_some());
    s.end_read();
    let first = s.cache_page(None, 3).unwrap();
    assert_eq!(first.len(), 3);
    let last = first.last().map(|(l, k, _)| (*l, k.clone()));
    let rest = s.cache_page(last, 3).unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!(rest[1].1, "k4");
}

fn collected_requests_keep_their_order_and_bytes(b: &Backend) {
    let mut s = b.store();
    assert!(s.collected_page(0, 10).unwrap().is_empty());
    let request = |i: u8, encoding| CollectedRequest {
        seq: 0,
        received_ms: 1_700_000_000_000 + i64::from(i),
        // Both signals, so that each backend is seen to keep which one a request carries.
        signal: if i == 2 {
            OtlpSignal::Logs
        } else {
            OtlpSignal::Traces
        },
        encoding,
        spans: i64::from(i),
        // Every byte value, so that a backend storing text would corrupt it.
        body: (0..=255u8).map(|b| b.wrapping_add(i)).collect(),
    };
    let first = s
        .append_collected(&[
            request(1, OtlpEncoding::Protobuf),
            request(2, OtlpEncoding::Json),
        ])
        .unwrap();
    let second = s
        .append_collected(&[request(3, OtlpEncoding::Protobuf)])
        .unwrap();
    assert_eq!(first.len(), 2);
    assert!(
        first[0] < first[1] && first[1] < second[0],
        "{first:?} {second:?}"
    );
    assert!(s.append_collected(&[]).unwrap().is_empty());
    let page = s.collected_page(0, 2).unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0].seq, first[0]);
    assert_eq!(page[0].body, request(1, OtlpEncoding::Protobuf).body);
    assert_eq!(page[1].encoding, OtlpEncoding::Json);
    assert_eq!(page[1].received_ms, 1_700_000_000_002);
    assert_eq!(page[1].spans, 2);
    let rest = s.collected_page(page[1].seq, 10).unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].seq, second[0]);
    assert!(s.collected_page(second[0], 10).unwrap().is_empty());
}

fn artifacts_are_recorded_and_listed(b: &Backend) {
    let mut s = b.store();
    s.save_diagnosis("sha256:d", "run_1", "{not json").unwrap();
    assert_eq!(s.diagnosis("sha256:d").unwrap().unwrap().run_id, "run_1");
    let err = s.load_diagnosis("sha256:d").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("stored record of diagnosis sha256:d is unreadable: "),
        "{err}"
    );
    assert!(s.load_diagnoses_of("run_1").is_err());
    assert_eq!(s.list_diagnoses().unwrap().len(), 1);
    s.save_comparison("sha256:c", "run_2", "run_1", "{}")
        .unwrap();
    s.save_comparison("sha256:c", "run_2", "run_1", "{}")
        .unwrap();
    assert_eq!(s.list_comparisons().unwrap().len(), 1);
    assert_eq!(
        s.comparison("sha256:c")
            .unwrap()
            .unwrap()
            .baseline
            .as_deref(),
        Some("run_1")
    );
    assert_eq!(s.load_comparison("abc").unwrap(), None);
    s.save_calibration("cal1", "j", "ident", false, "{\"a\":1}")
        .unwrap();
    s.save_calibration("cal2", "j", "ident", true, "{\"a\":2}")
        .unwrap();
    let (id, passed, _) = s.latest_calibration("ident").unwrap().unwrap();
    assert_eq!((id.as_str(), passed), ("cal2", true));
    assert_eq!(s.latest_calibration("other").unwrap(), None);
    assert_eq!(s.list_calibrations().unwrap().len(), 2);
}

/// A monitor report as `oloproof monitor` records it (the smallest the report type reads).
fn monitor_json(path: &str) -> String {
    serde_json::json!({
        "schema_version": 1,
        "traffic": {"path": path, "sha256": "ab", "records": 0, "timed": 0, "untimed": 0,
                    "untimed_examples": [], "skipped_rows": 0},
        "window": {"size": "1d", "rolling": "1d", "horizon_windows": 1,
                   "horizon_start": null, "horizon_end": null},
        "segments": [],
        "sampling": {"seed": 0, "target_judgments": 200, "always": [], "tiers": []},
        "windows": [], "slos": [], "alerts": [],
        "errors": {"errors": 0, "traces": 0, "max_error_rate": 0.0},
        "incomplete": [],
    })
    .to_string()
}

fn monitor_reports_are_recorded_listed_and_copied(b: &Backend) {
    let mut s = b.store();
    assert!(s.list_monitors().unwrap().is_empty());
    let (first, second) = (MonitorRecord::new_id(), MonitorRecord::new_id());
    s.save_monitor(&first, "a.jsonl", &monitor_json("a.jsonl"))
        .unwrap();
    std::thread::sleep(Duration::from_millis(5));
    s.save_monitor(&second, "b.jsonl", &monitor_json("b.jsonl"))
        .unwrap();
    let listed = s.list_monitors().unwrap();
    let ids: Vec<&str> = listed.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()], "newest first");
    assert_eq!(listed[1].traffic, "a.jsonl");
    let one = s.monitor(&first).unwrap().unwrap();
    assert_eq!(one, listed[1]);
    let report = s.load_monitor(&first).unwrap().unwrap();
    assert_eq!(report.traffic.path, "a.jsonl");
    assert_eq!(s.monitor("mon_none").unwrap(), None);
    assert!(s.load_monitor("mon_none").unwrap().is_none());
    // An unreadable report is an error naming it.
    s.save_monitor("mon_bad", "c.jsonl", "{not json").unwrap();
    let err = s.load_monitor("mon_bad").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("stored record of monitor report mon_bad is unreadable: "),
        "{err}"
    );
    // Copied into a SQLite store with their times; copying again keeps what is there.
    let other = sqlite();
    let mut t = other.store();
    t.import_artifacts(&[], &[], &[], &listed).unwrap();
    assert_eq!(t.list_monitors().unwrap(), listed);
    let mut changed = listed.clone();
    changed[0].content_json = monitor_json("changed.jsonl");
    t.import_artifacts(&[], &[], &[], &changed).unwrap();
    assert_eq!(t.list_monitors().unwrap(), listed);
}

fn a_run_is_exported_and_imported_whole(b: &Backend) {
    let mut s = b.store();
    let run = new_run(s.as_mut(), "run_copy", 2);
    let w = WorkerId::from("w");
    s.claim_batch(&run, &claim(&w, 1, LEASE)).unwrap();
    let trace = Trace::new("c000");
    let verdicts = [verdict("answer_correct")];
    s.complete_cases(&run, &w, &[result("c000", 1, &trace, &verdicts)])
        .unwrap();
    let export = s.export_run(&run).unwrap();
    // Into a SQLite store (and back into this backend's, under the same id: refused).
    let other = sqlite();
    let mut t = other.store();
    assert!(t.import_run(&export).unwrap());
    assert!(!t.import_run(&export).unwrap());
    assert!(!s.import_run(&export).unwrap());
    let copied = t.export_run(&run).unwrap();
    assert_eq!(copied.record, export.record);
    assert_eq!(copied.cases, export.cases);
    assert_eq!(copied.verdicts, export.verdicts);
    assert_eq!(copied.finished_ms, export.finished_ms);
}

fn unknown_runs_are_typed_errors(b: &Backend) {
    let s = b.store();
    assert!(matches!(
        s.load_run("run_2", &Kinds),
        Err(StoreError::UnknownRun(id)) if id == "run_2"
    ));
    assert!(s.run(&RunId::from("run_x")).unwrap_err().is_usage());
}
