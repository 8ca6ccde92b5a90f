//! Writes the tiny randomly initialised models of `oloproof_local::testing::REFERENCE_MODELS`
//! (BERT, DeBERTa and RoBERTa classifiers and a RoBERTa sentence embedder, safetensors +
//! config.json + tokenizer.json), one folder each, for `bench/classifier_reference.py` to run
//! through `transformers`:
//!
//! ```sh
//! cargo run --profile ci -p oloproof-local --example write_tiny_models -- OUT_DIR
//! ```
//!
//! Prints one JSON line per model: its name, folder and the sha256 of its weights.

#![allow(clippy::print_stdout, reason = "the program's result")]

use std::path::PathBuf;

use oloproof_local::testing::REFERENCE_MODELS;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .ok_or("usage: write_tiny_models OUT_DIR")?;
    for m in REFERENCE_MODELS {
        let dir = out.join(m.name);
        std::fs::create_dir_all(&dir)?;
        m.write(&dir)?;
        let sha = oloproof_local::sha256_file(&dir.join("model.safetensors"))?;
        println!(
            "{}",
            serde_json::json!({"name": m.name, "dir": dir, "model_safetensors_sha256": sha})
        );
    }
    Ok(())
}
