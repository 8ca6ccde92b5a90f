//! trec_eval-compatible qrels/run parsing, evaluation driver and output formatting.
#![warn(missing_docs)]
