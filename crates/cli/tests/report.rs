//! `oloproof report ID -o FILE` through the real binary: the example's run, its gold-context
//! diagnosis and the budget comparison written as HTML, Markdown and JUnit; the format from the
//! extension or `--format`; and a hostile answer rendered as text.

mod common;

use std::path::Path;

use common::*;

fn report(dir: &Path, id: &str, file: &str, extra: &[&str]) -> String {
    let mut args = vec!["report", id, "-o", file];
    args.extend_from_slice(extra);
    let o = oloproof(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read_to_string(dir.join(file)).unwrap()
}

/// The real tags of a page (escaped text holds no `<`), e.g. `svg class="chart" …`.
fn tags(html: &str) -> Vec<&str> {
    html.split('<')
        .skip(1)
        .map(|t| t.split('>').next().unwrap_or(""))
        .collect()
}

/// A page that fetches nothing, runs nothing and carries no handler.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg"), "no chart");
    assert!(html.contains("<style>"));
    for bad in ["http://", "https://", "<script", "javascript:"] {
        assert!(!html.contains(bad), "the report contains `{bad}`");
    }
    for tag in tags(html) {
        let lower = tag.to_ascii_lowercase();
        for word in lower.split_whitespace().skip(1) {
            assert!(
                !word.starts_with("on") && !word.starts_with("src=") && !word.starts_with("href="),
                "tag <{tag}> has an attribute that runs or fetches"
            );
        }
    }
}

#[test]
fn reports_of_a_run_a_diagnosis_and_a_comparison() {
    let (tmp, dir) = project("examples/support_rag");
    let base = oloproof(&dir, &["run", "."]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    let base = run_id(&stdout(&base));
    let diag = oloproof(
        &dir,
        &[
            "diagnose",
            &base,
            "--intervention",
            "gold-context",
            "--criterion",
            "answer_correct",
        ],
    );
    assert_eq!(diag.status.code(), Some(0), "{}", stderr(&diag));
    let diag = hash_id(&stdout(&diag));
    let cand = oloproof(&dir, &["run", ".", "--set", "system.rag.token_budget=120"]);
    assert_eq!(cand.status.code(), Some(0), "{}", stderr(&cand));
    let cand = run_id(&stdout(&cand));
    let cmp = oloproof(&dir, &["compare", &cand, &base, "--policy", "compare.yaml"]);
    assert_eq!(cmp.status.code(), Some(3), "{}", stderr(&cmp));
    let cmp = hash_id(&stdout(&cmp));

    // The run.
    let o = oloproof(&dir, &["report", &base, "-o", "run.html"]);
    insta::assert_snapshot!("report_run_html_stdout", transcript(&o, tmp.path()));
    let html = std::fs::read_to_string(dir.join("run.html")).unwrap();
    assert_self_contained(&html);
    assert!(html.contains(&base));
    assert!(html.contains("support-rag slice-b-example"));
    assert!(html.contains("Failing cases (4 of 13)"), "{html}");
    for case in [
        "money_back",
        "refund_review",
        "seat_count",
        "security_review",
    ] {
        assert!(html.contains(&format!("id=\"case-{case}\"")), "{case}");
    }
    assert!(!html.contains("id=\"case-refund_annual\""));
    // Dropped candidates are struck through with their reason; relevant ones are marked.
    assert!(html.contains("<del>kb-03 [kb-03#1] score 6.382</del> <span class=\"relevant\">★ relevant</span><span class=\"why\">dropped: token budget, 15 tokens</span>"), "{html}");
    assert!(html.contains("dropped: below top_k"));
    // Slices with support counts, small ones marked; stage latency percentiles.
    assert!(html.contains("⚠ small"));
    assert!(html.contains("<th>p95 ms</th>"));
    // Deterministic: the same report twice is the same bytes.
    assert_eq!(report(&dir, &base, "again.html", &[]), html);

    let md = report(&dir, &base, "run.md", &[]);
    insta::assert_snapshot!("report_run_md", redact(&md, tmp.path()));
    let xml = report(&dir, &base, "run.xml", &[]);
    assert!(xml.contains("tests=\"65\" failures=\"5\" errors=\"0\" skipped=\"0\""));
    insta::assert_snapshot!("report_run_junit", redact(&xml, tmp.path()));
    // --format wins over the extension.
    assert_eq!(
        report(&dir, &base, "junit.txt", &["--format", "junit"]),
        xml
    );

    // The diagnosis.
    let html = report(&dir, &diag, "diagnosis.html", &[]);
    assert_self_contained(&html);
    for label in [
        "RETRIEVAL_MISS",
        "CONTEXT_ASSEMBLY_LOSS",
        "GENERATION_FAILURE",
    ] {
        assert!(html.contains(label), "{label}");
    }
    assert!(html.contains(">recovered</text>") && html.contains(">not recovered</text>"));
    assert!(html.contains("id=\"case-refund_review\""));
    let md = report(&dir, &diag, "diagnosis.md", &[]);
    insta::assert_snapshot!("report_diagnosis_md", redact(&md, tmp.path()));

    // The comparison.
    let html = report(&dir, &cmp, "comparison.html", &[]);
    assert_self_contained(&html);
    assert!(html.contains("forest plot"));
    assert!(html.contains("margin -5.0") && html.contains("margin -2.0"));
    assert!(html.contains("answers-not-worse INSUFFICIENT_EVIDENCE"));
    assert!(html.contains("Gate: BLOCK (exit 3)"));
    let md = report(&dir, &cmp, "comparison.md", &[]);
    assert!(md.contains("**Gate: BLOCK (exit 3)**"));
    insta::assert_snapshot!("report_comparison_md", redact(&md, tmp.path()));
    let xml = report(&dir, &cmp, "comparison.xml", &[]);
    insta::assert_snapshot!("report_comparison_junit", redact(&xml, tmp.path()));
}

#[test]
fn unknown_formats_and_ids_are_usage_errors() {
    let (tmp, dir) = project("examples/support_rag");
    let run = oloproof(&dir, &["run", "."]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let id = run_id(&stdout(&run));
    let o = oloproof(&dir, &["report", &id, "-o", "report.pdf"]);
    insta::assert_snapshot!("report_unknown_extension", transcript(&o, tmp.path()));
    assert!(!dir.join("report.pdf").exists());
    let o = oloproof(&dir, &["report", &id, "-o", "r.html", "--format", "pdf"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("possible values: html, md, junit"));
    let o = oloproof(&dir, &["report", "sha256:0000", "-o", "r.html"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no diagnosis or comparison `sha256:0000`"));
    let o = oloproof(&dir, &["report", "run_nope", "-o", "r.html"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_hostile_answer_renders_as_text() {
    let (_tmp, dir) = project("tests/systems/echo");
    let hostile = "<script>alert(1)</script> <img src=x onerror=alert(1)>";
    let case = serde_json::json!({
        "id": "xss",
        "input": {"question": hostile},
        "expected": {"answer": "never-there", "relevant": [{"doc_id": "w-none"}]},
        "metadata": {"topic": "\"><b>"}
    });
    let mut cases = std::fs::read_to_string(dir.join("cases.jsonl")).unwrap();
    cases.push_str(&format!("{case}\n"));
    std::fs::write(dir.join("cases.jsonl"), cases).unwrap();
    let run = oloproof(&dir, &["run", "."]);
    assert!(matches!(run.status.code(), Some(0)), "{}", stderr(&run));
    let id = run_id(&stdout(&run));
    let html = report(&dir, &id, "xss.html", &[]);
    assert_self_contained(&html);
    assert!(
        html.contains("id=\"case-xss\""),
        "the hostile case is not listed"
    );
    assert!(!html.contains("<img"));
    assert!(!html.contains("\"><b>"));
    assert!(
        html.contains("metadata.topic = &quot;&gt;&lt;b&gt;"),
        "the slice value is shown escaped"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    // The answer echoes the question: it is shown escaped inside the answer block.
    assert!(html.contains(
        "<b>Answer</b><pre>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;"
    ));
    let md = report(&dir, &id, "xss.md", &[]);
    assert!(!md.contains("<script") && !md.contains("<img"), "{md}");
    let xml = report(&dir, &id, "xss.xml", &[]);
    assert!(!xml.contains("<script") && !xml.contains("<img"), "{xml}");
}
