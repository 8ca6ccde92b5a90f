//! Embeds the lines of a file with a local sentence embedder and reports the throughput, for
//! `bench/embeddings.sh`:
//!
//! ```sh
//! cargo run --release -p oloproof-local --example embed_file -- MODEL_DIR sentences.txt [BATCH]
//! ```
//!
//! Prints one JSON line: sentences, seconds spent embedding (model loading excluded), and
//! sentences per second.

#![allow(clippy::print_stdout, reason = "a benchmark program's result")]

use std::time::Instant;

use oloproof_local::{EmbedderOptions, SentenceEmbedder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: embed_file MODEL_DIR SENTENCES_FILE [BATCH_SIZE]".into());
    }
    let batch: usize = args.get(3).map_or(Ok(32), |b| b.parse())?;
    let text = std::fs::read_to_string(&args[2])?;
    let lines: Vec<&str> = text.lines().collect();
    let model = SentenceEmbedder::load(
        std::path::Path::new(&args[1]),
        &EmbedderOptions {
            batch_size: Some(batch),
            ..EmbedderOptions::default()
        },
    )?;
    let start = Instant::now();
    let vectors = model.embed(&lines)?;
    let seconds = start.elapsed().as_secs_f64();
    let checksum: f64 = vectors.iter().map(|v| f64::from(v[0])).sum();
    println!(
        "{{\"impl\": \"oloproof\", \"sentences\": {}, \"seconds\": {seconds:.3}, \"sentences_per_s\": {:.1}, \"checksum\": {checksum:.6}}}",
        vectors.len(),
        vectors.len() as f64 / seconds
    );
    Ok(())
}
