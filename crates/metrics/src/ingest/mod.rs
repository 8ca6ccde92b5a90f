//! Ingestion and chunking metrics (seed 000, parts 2–3): OCR/transcription error rates (CER,
//! WER as jiwer), table-structure similarity (TEDS, TEDS-S as PubTabNet), near-duplicate
//! detection (MinHash with LSH banding), span-level detection scores (PII, boilerplate),
//! label-level scores (language ID), Unicode normalisation agreement, extraction completeness,
//! title similarity, context compression and structural checks of chunkings.
//!
//! Every function is pure; the command line (`oloproof metric NAME`) reads the files.

pub mod chunking;
pub mod document;
pub mod error_rate;
pub mod minhash;
pub mod spans;
pub mod teds;
