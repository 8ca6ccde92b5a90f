//! Metrics for ontology-grounded RAG (seed 000, Part 7): hierarchy-aware scores over a taxonomy
//! DAG, entity linking, constrained-output conformance and auditability.
//!
//! * [`taxonomy`] — the DAG (`child → parent` edges from JSON or CSV text; cycles are errors
//!   naming the cycle), ancestors and depths;
//! * [`hierarchical`] — hierarchical precision/recall/F1 (Kosmopoulos et al., 2015);
//! * [`wup`] — Wu–Palmer similarity, exactly as NLTK's `Synset.wup_similarity`;
//! * [`confusion`] — sibling, parent and descendant confusion rates;
//! * [`linking`] — entity linking at mention level, disambiguation accuracy, NIL handling;
//! * [`conformance`] — JSON Schema (draft 2020-12) validity and vocabulary conformance;
//! * [`audit`] — citation completeness, provenance depth and reproducibility rate.
//!
//! ```
//! use oloproof_metrics::ontology::{hierarchical::hierarchical_scores, taxonomy::Taxonomy};
//!
//! let tax = Taxonomy::parse_csv("child,parent\ncar,vehicle\nsedan,car\nhatchback,car\nsubmarine,vehicle\n")?;
//! let id = |n: &str| tax.id(n).unwrap();
//! // Sedan for Hatchback shares `car`; Sedan for Submarine shares nothing but the root.
//! let near = hierarchical_scores(&tax, &[(vec![id("sedan")], vec![id("hatchback")])]);
//! let far = hierarchical_scores(&tax, &[(vec![id("sedan")], vec![id("submarine")])]);
//! assert_eq!(near.precision(), Some(0.5));
//! assert_eq!(far.precision(), Some(0.0));
//! # Ok::<(), oloproof_metrics::ontology::taxonomy::TaxonomyError>(())
//! ```

pub mod audit;
pub mod conformance;
pub mod confusion;
pub mod hierarchical;
pub mod linking;
pub mod taxonomy;
pub mod wup;
