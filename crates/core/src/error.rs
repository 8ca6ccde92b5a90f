//! Errors of the nouns' own checks: a word in a passage's or an output's field that is not one
//! of the values it may take. (Errors of the files a user writes are
//! [`SourceError`](crate::source::SourceError)s, located at a line and column.)

use serde_json::Value;

use crate::case::BEHAVIORS;
use crate::passage::EVIDENCE_STATUSES;

/// A passage's `metadata.status` that is not one of [`EVIDENCE_STATUSES`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvidenceStatusError {
    /// A string, but not a known status word.
    #[error("unknown status `{0}`: expected one of {choices}", choices = EVIDENCE_STATUSES.join(", "))]
    Unknown(String),
    /// Not a string at all.
    #[error("`status` must be a string, one of {choices}, not {0}", choices = EVIDENCE_STATUSES.join(", "))]
    NotAString(Value),
}

/// A system output's `behavior` field that is not one of [`BEHAVIORS`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclaredBehaviorError {
    /// A string, but not a known behaviour.
    #[error("the system declared behavior `{0}`: expected one of {choices}", choices = BEHAVIORS.join(", "))]
    Unknown(String),
    /// Not a string at all.
    #[error("the system's `behavior` must be a string, not {0}")]
    NotAString(Value),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passage::{EvidenceStatus, Passage};
    use serde_json::json;

    #[test]
    fn bad_status_words_name_the_value_and_the_choices() {
        let mut p: Passage = serde_json::from_value(json!({"doc_id": "d"})).unwrap();
        assert_eq!(p.status(), Ok(EvidenceStatus::Current));
        p.metadata = json!({"status": "stale"}).as_object().cloned();
        assert_eq!(
            p.status().unwrap_err().to_string(),
            "unknown status `stale`: expected one of current, archived"
        );
        p.metadata = json!({"status": 3}).as_object().cloned();
        assert_eq!(
            p.status().unwrap_err(),
            EvidenceStatusError::NotAString(json!(3))
        );
    }
}
