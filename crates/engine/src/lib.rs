//! Run orchestration, evaluators, slices and summaries.
#![warn(missing_docs)]
