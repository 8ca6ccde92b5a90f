//! Claim-level diagnostics: RAGChecker's metric family (Ru et al., 2024, "RAGChecker: A
//! Fine-grained Framework for Diagnosing Retrieval-Augmented Generation",
//! `amazon-science/RAGChecker`), computed from claims already checked.
//!
//! A case has the system's **answer** (RAGChecker's *response*), the **reference** answer
//! (*ground truth answer*) and the retrieved **chunks** handed to generation. Claims are
//! extracted from the answer and from the reference, and four sets of entailment checks are
//! made (by an LLM judge or an NLI model, outside this crate):
//!
//! | check | RAGChecker | here |
//! | --- | --- | --- |
//! | answer claim *i* entailed by the reference | `answer2response` | [`ReferenceChecks::answer_in_reference`] |
//! | reference claim *j* entailed by the answer | `response2answer` | [`ReferenceChecks::reference_in_answer`] |
//! | answer claim *i* entailed by chunk *k* | `retrieved2response` | [`ClaimChecks::answer_in_chunks`] |
//! | reference claim *j* entailed by chunk *k* | `retrieved2answer` | [`ReferenceChecks::reference_in_chunks`] |
//!
//! From them, with *A* the answer claims, *R* the reference claims and *K* the chunks:
//!
//! * an answer claim is **correct** when the reference entails it, **faithful** when some chunk
//!   entails it; a reference claim is **retrieved** when some chunk entails it;
//! * a chunk is **relevant** when it entails at least one reference claim;
//! * overall: precision = correct / |A|; recall = reference claims the answer entails / |R|;
//!   F1 = 2PR / (P + R), 0 when P + R = 0;
//! * retriever: claim recall = retrieved reference claims / |R|; context precision = relevant
//!   chunks / |K|;
//! * generator: context utilisation = reference claims both retrieved and entailed by the
//!   answer / retrieved reference claims; noise sensitivity (relevant) = incorrect answer
//!   claims entailed by a relevant chunk / |A|; noise sensitivity (irrelevant) = incorrect
//!   answer claims entailed by an irrelevant chunk and by no relevant one / |A| (the two are
//!   exclusive, as RAGChecker's code makes them); hallucination = incorrect unfaithful claims
//!   / |A|; self-knowledge = correct unfaithful claims / |A|; faithfulness = faithful claims /
//!   |A|. Faithfulness + hallucination + self-knowledge = 1 whenever the three are defined
//!   (each answer claim is exactly one of faithful, hallucinated, self-knowledge).
//!
//! Where RAGChecker's code returns 0 for an empty denominator, this module says the value is
//! undefined with a reason ([`Undefined`]): an answer without claims is `no_claims`, a
//! reference without claims `no_reference_claims`, no chunk `no_context` (for context precision
//! and noise sensitivity; claim recall, faithfulness, hallucination and self-knowledge keep
//! their meaning without chunks), no retrieved reference claim `no_recalled_claims` (context
//! utilisation), and a case without a reference `no_reference` (every metric but
//! faithfulness). `docs/ragchecker.md` lists every difference.
//!
//! ```
//! use oloproof_metrics::rag::ragchecker::{diagnose, ClaimChecks, Metric, ReferenceChecks, Undefined};
//!
//! // Two chunks. The answer makes three claims: the first is in the reference and in chunk 0,
//! // the second in chunk 1 only, the third nowhere. The reference has two claims: the first is
//! // in chunk 0 and in the answer, the second nowhere.
//! let checks = ClaimChecks {
//!     chunks: 2,
//!     answer_in_chunks: vec![vec![0], vec![1], vec![]],
//!     reference: Some(ReferenceChecks {
//!         answer_in_reference: vec![true, false, false],
//!         reference_in_answer: vec![true, false],
//!         reference_in_chunks: vec![vec![0], vec![]],
//!     }),
//! };
//! let d = diagnose(&checks)?;
//! assert_eq!(d.value(Metric::Precision), Ok(1.0 / 3.0));
//! assert_eq!(d.value(Metric::Recall), Ok(0.5));
//! assert_eq!(d.value(Metric::RetrieverContextPrecision), Ok(0.5)); // chunk 0 is relevant
//! assert_eq!(d.value(Metric::NoiseSensitivityIrrelevant), Ok(1.0 / 3.0)); // claim 2, chunk 1
//! assert_eq!(d.value(Metric::Hallucination), Ok(1.0 / 3.0)); // claim 3
//! assert_eq!(d.value(Metric::Faithfulness), Ok(2.0 / 3.0));
//!
//! // An answer without claims (a refusal) has no precision: excluded, not 0.
//! let refusal = ClaimChecks {
//!     chunks: 2,
//!     answer_in_chunks: vec![],
//!     reference: Some(ReferenceChecks {
//!         answer_in_reference: vec![],
//!         reference_in_answer: vec![false, false],
//!         reference_in_chunks: vec![vec![0], vec![]],
//!     }),
//! };
//! let d = diagnose(&refusal)?;
//! assert_eq!(d.value(Metric::Precision), Err(Undefined::NoClaims));
//! assert_eq!(Undefined::NoClaims.reason(), "no_claims");
//! assert_eq!(d.value(Metric::Recall), Ok(0.0)); // what it misses still counts
//! # Ok::<(), oloproof_metrics::rag::ragchecker::ClaimChecksError>(())
//! ```

/// The reference side of a case's checks (absent when the case has no reference answer).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReferenceChecks {
    /// Per answer claim, in order: whether the reference entails it (RAGChecker's
    /// `answer2response`). One entry per answer claim.
    pub answer_in_reference: Vec<bool>,
    /// Per reference claim, in order: whether the answer entails it (`response2answer`).
    pub reference_in_answer: Vec<bool>,
    /// Per reference claim, the chunks (0-based) that entail it (`retrieved2answer`, as sets).
    /// One entry per reference claim.
    pub reference_in_chunks: Vec<Vec<usize>>,
}

/// Every check of one case: the answer's claims against the chunks, and the reference side.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClaimChecks {
    /// The number of retrieved chunks given to generation.
    pub chunks: usize,
    /// Per answer claim, the chunks (0-based) that entail it (`retrieved2response`, as sets).
    pub answer_in_chunks: Vec<Vec<usize>>,
    /// The checks against and of the reference; `None` when the case has no reference.
    pub reference: Option<ReferenceChecks>,
}

/// Checks that do not fit together (a caller's bug, reported rather than guessed around).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimChecksError {
    /// `answer_in_reference` does not have one entry per answer claim.
    #[error("{got} answer-in-reference checks for {claims} answer claims")]
    AnswerChecks {
        /// Answer claims (`answer_in_chunks.len()`).
        claims: usize,
        /// Entries of `answer_in_reference`.
        got: usize,
    },
    /// `reference_in_chunks` does not have one entry per reference claim.
    #[error("{got} reference-in-chunks checks for {claims} reference claims")]
    ReferenceChecks {
        /// Reference claims (`reference_in_answer.len()`).
        claims: usize,
        /// Entries of `reference_in_chunks`.
        got: usize,
    },
    /// A chunk index at or beyond the number of chunks.
    #[error("chunk index {index} out of range ({chunks} chunks)")]
    ChunkOutOfRange {
        /// The index found.
        index: usize,
        /// The number of chunks.
        chunks: usize,
    },
}

/// The eleven metrics, in RAGChecker's order (overall, retriever, generator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Overall precision: correct answer claims / answer claims.
    Precision,
    /// Overall recall: reference claims entailed by the answer / reference claims.
    Recall,
    /// Overall F1: harmonic mean of precision and recall (0 when both are 0).
    F1,
    /// Retriever claim recall: reference claims entailed by some chunk / reference claims.
    RetrieverClaimRecall,
    /// Retriever context precision: relevant chunks / chunks.
    RetrieverContextPrecision,
    /// Generator context utilisation: retrieved reference claims the answer entails /
    /// retrieved reference claims.
    ContextUtilisation,
    /// Generator noise sensitivity in relevant chunks: incorrect answer claims entailed by a
    /// relevant chunk / answer claims (lower is better).
    NoiseSensitivityRelevant,
    /// Generator noise sensitivity in irrelevant chunks: incorrect answer claims entailed by
    /// an irrelevant chunk and by no relevant one / answer claims (lower is better).
    NoiseSensitivityIrrelevant,
    /// Generator hallucination: incorrect answer claims no chunk entails / answer claims
    /// (lower is better).
    Hallucination,
    /// Generator self-knowledge: correct answer claims no chunk entails / answer claims.
    SelfKnowledge,
    /// Generator faithfulness: answer claims some chunk entails / answer claims.
    Faithfulness,
}

/// RAGChecker's three groups of metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Precision, recall, F1.
    Overall,
    /// Claim recall, context precision.
    Retriever,
    /// Context utilisation, noise sensitivity, hallucination, self-knowledge, faithfulness.
    Generator,
}

impl Metric {
    /// Every metric, in RAGChecker's order.
    pub const ALL: [Metric; 11] = [
        Metric::Precision,
        Metric::Recall,
        Metric::F1,
        Metric::RetrieverClaimRecall,
        Metric::RetrieverContextPrecision,
        Metric::ContextUtilisation,
        Metric::NoiseSensitivityRelevant,
        Metric::NoiseSensitivityIrrelevant,
        Metric::Hallucination,
        Metric::SelfKnowledge,
        Metric::Faithfulness,
    ];

    /// Oloproof's name (the evaluator type and default criterion), distinct from every other
    /// criterion (`faithfulness`, `context_precision`, … are Ragas').
    pub fn name(self) -> &'static str {
        match self {
            Metric::Precision => "claim_precision",
            Metric::Recall => "claim_recall",
            Metric::F1 => "claim_f1",
            Metric::RetrieverClaimRecall => "retriever_claim_recall",
            Metric::RetrieverContextPrecision => "retriever_context_precision",
            Metric::ContextUtilisation => "generator_context_utilisation",
            Metric::NoiseSensitivityRelevant => "generator_noise_sensitivity_relevant",
            Metric::NoiseSensitivityIrrelevant => "generator_noise_sensitivity_irrelevant",
            Metric::Hallucination => "generator_hallucination",
            Metric::SelfKnowledge => "generator_self_knowledge",
            Metric::Faithfulness => "generator_faithfulness",
        }
    }

    /// RAGChecker's name for it (`metrics.py`).
    pub fn ragchecker_name(self) -> &'static str {
        match self {
            Metric::Precision => "precision",
            Metric::Recall => "recall",
            Metric::F1 => "f1",
            Metric::RetrieverClaimRecall => "claim_recall",
            Metric::RetrieverContextPrecision => "context_precision",
            Metric::ContextUtilisation => "context_utilization",
            Metric::NoiseSensitivityRelevant => "noise_sensitivity_in_relevant",
            Metric::NoiseSensitivityIrrelevant => "noise_sensitivity_in_irrelevant",
            Metric::Hallucination => "hallucination",
            Metric::SelfKnowledge => "self_knowledge",
            Metric::Faithfulness => "faithfulness",
        }
    }

    /// Its group.
    pub fn group(self) -> Group {
        match self {
            Metric::Precision | Metric::Recall | Metric::F1 => Group::Overall,
            Metric::RetrieverClaimRecall | Metric::RetrieverContextPrecision => Group::Retriever,
            _ => Group::Generator,
        }
    }

    /// Whether a higher value is better (false for noise sensitivity and hallucination;
    /// self-knowledge is neither, RAGChecker reads it with faithfulness).
    pub fn higher_is_better(self) -> bool {
        !matches!(
            self,
            Metric::NoiseSensitivityRelevant
                | Metric::NoiseSensitivityIrrelevant
                | Metric::Hallucination
        )
    }

    /// The metric named `name` ([`Metric::name`]).
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Why a metric has no value for a case (RAGChecker returns 0 in each of these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Undefined {
    /// The case has no reference answer.
    NoReference,
    /// The answer has no claims (a refusal, an empty answer).
    NoClaims,
    /// The reference has no claims.
    NoReferenceClaims,
    /// No chunk was given to generation.
    NoContext,
    /// No reference claim is entailed by any chunk (context utilisation's denominator).
    NoRecalledClaims,
}

impl Undefined {
    /// The snake_case reason code of an `excluded` verdict.
    pub fn reason(self) -> &'static str {
        match self {
            Undefined::NoReference => "no_reference",
            Undefined::NoClaims => "no_claims",
            Undefined::NoReferenceClaims => "no_reference_claims",
            Undefined::NoContext => "no_context",
            Undefined::NoRecalledClaims => "no_recalled_claims",
        }
    }
}

/// What an answer claim is, for faithfulness, hallucination and self-knowledge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerCategory {
    /// Some chunk entails it.
    Faithful,
    /// No chunk entails it and the reference does not either.
    Hallucination,
    /// No chunk entails it but the reference does (the model knew it).
    SelfKnowledge,
    /// No chunk entails it, and there is no reference to tell the two apart.
    Unfaithful,
}

impl AnswerCategory {
    /// `faithful`, `hallucination`, `self_knowledge` or `unfaithful`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerCategory::Faithful => "faithful",
            AnswerCategory::Hallucination => "hallucination",
            AnswerCategory::SelfKnowledge => "self_knowledge",
            AnswerCategory::Unfaithful => "unfaithful",
        }
    }
}

/// Which chunks led an incorrect answer claim (noise sensitivity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    /// An incorrect claim entailed by a relevant chunk.
    Relevant,
    /// An incorrect claim entailed by an irrelevant chunk and by no relevant one.
    Irrelevant,
}

impl Noise {
    /// `relevant` or `irrelevant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Noise::Relevant => "relevant",
            Noise::Irrelevant => "irrelevant",
        }
    }
}

/// The chunks that entail at least one reference claim (RAGChecker's *relevant* chunks), of
/// `chunks` chunks; `reference_in_chunks[j]` lists the chunks entailing reference claim `j`
/// (indices at or beyond `chunks` are ignored).
pub fn relevant_chunks(chunks: usize, reference_in_chunks: &[Vec<usize>]) -> Vec<bool> {
    let mut relevant = vec![false; chunks];
    for &c in reference_in_chunks.iter().flatten() {
        if let Some(r) = relevant.get_mut(c) {
            *r = true;
        }
    }
    relevant
}

/// Which kind of chunk led an answer claim astray: `None` for a correct claim or one no chunk
/// entails; [`Noise::Relevant`] when a relevant chunk entails it; [`Noise::Irrelevant`] when
/// only irrelevant chunks do. The classification behind noise sensitivity, here and in
/// Ragas' `noise_sensitivity` (which borrows RAGChecker's definition).
pub fn noise(correct: bool, chunks: &[usize], relevant: &[bool]) -> Option<Noise> {
    if correct || chunks.is_empty() {
        None
    } else if chunks.iter().any(|&c| relevant.get(c) == Some(&true)) {
        Some(Noise::Relevant)
    } else {
        Some(Noise::Irrelevant)
    }
}

/// One answer claim, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerClaim {
    /// The chunks that entail it (0-based, sorted, each once).
    pub chunks: Vec<usize>,
    /// Whether the reference entails it (`None` without a reference).
    pub correct: Option<bool>,
    /// Faithful, hallucination, self-knowledge (or unfaithful without a reference).
    pub category: AnswerCategory,
    /// For an incorrect claim entailed by some chunk: which kind of chunk (`None` otherwise).
    pub noise: Option<Noise>,
}

/// One reference claim, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceClaim {
    /// The chunks that entail it (0-based, sorted, each once).
    pub chunks: Vec<usize>,
    /// Whether the answer entails it.
    pub in_answer: bool,
    /// Whether some chunk entails it.
    pub retrieved: bool,
}

/// The diagnosis of one case: every claim classified and the eleven values.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    /// The answer's claims, in order.
    pub answer: Vec<AnswerClaim>,
    /// The reference's claims, in order (`None` without a reference).
    pub reference: Option<Vec<ReferenceClaim>>,
    /// Per chunk, whether it entails some reference claim (`None` without a reference).
    pub relevant_chunks: Option<Vec<bool>>,
    values: [Result<f64, Undefined>; 11],
}

impl Diagnosis {
    /// The value of `metric`, or why it is undefined.
    pub fn value(&self, metric: Metric) -> Result<f64, Undefined> {
        // The variants are declared in `ALL` order.
        self.values[metric as usize]
    }

    /// Every metric with its value, in [`Metric::ALL`] order.
    pub fn values(&self) -> impl Iterator<Item = (Metric, Result<f64, Undefined>)> + '_ {
        Metric::ALL.into_iter().zip(self.values.iter().copied())
    }
}

fn normalised(sets: &[Vec<usize>], chunks: usize) -> Result<Vec<Vec<usize>>, ClaimChecksError> {
    sets.iter()
        .map(|set| {
            let mut set = set.clone();
            set.sort_unstable();
            set.dedup();
            match set.iter().find(|&&k| k >= chunks) {
                Some(&index) => Err(ClaimChecksError::ChunkOutOfRange { index, chunks }),
                None => Ok(set),
            }
        })
        .collect()
}

fn share(count: usize, of: usize) -> f64 {
    count as f64 / of as f64
}

/// Classifies every claim of `checks` and computes the eleven metrics (module docs). An error
/// only when the checks do not fit together (lengths, chunk indices).
pub fn diagnose(checks: &ClaimChecks) -> Result<Diagnosis, ClaimChecksError> {
    let k = checks.chunks;
    let answer_chunks = normalised(&checks.answer_in_chunks, k)?;
    let n_answer = answer_chunks.len();
    let reference = match &checks.reference {
        None => None,
        Some(r) => {
            if r.answer_in_reference.len() != n_answer {
                return Err(ClaimChecksError::AnswerChecks {
                    claims: n_answer,
                    got: r.answer_in_reference.len(),
                });
            }
            if r.reference_in_chunks.len() != r.reference_in_answer.len() {
                return Err(ClaimChecksError::ReferenceChecks {
                    claims: r.reference_in_answer.len(),
                    got: r.reference_in_chunks.len(),
                });
            }
            Some((r, normalised(&r.reference_in_chunks, k)?))
        }
    };
    let relevant: Option<Vec<bool>> = reference.as_ref().map(|(_, sets)| relevant_chunks(k, sets));
    let answer: Vec<AnswerClaim> = answer_chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunks)| {
            let correct = reference.as_ref().map(|(r, _)| r.answer_in_reference[i]);
            let category = match (chunks.is_empty(), correct) {
                (false, _) => AnswerCategory::Faithful,
                (true, Some(true)) => AnswerCategory::SelfKnowledge,
                (true, Some(false)) => AnswerCategory::Hallucination,
                (true, None) => AnswerCategory::Unfaithful,
            };
            let noise = match (&relevant, correct) {
                (Some(rel), Some(correct)) => noise(correct, &chunks, rel),
                _ => None,
            };
            AnswerClaim {
                chunks,
                correct,
                category,
                noise,
            }
        })
        .collect();
    let reference_claims: Option<Vec<ReferenceClaim>> = reference.as_ref().map(|(r, sets)| {
        sets.iter()
            .zip(&r.reference_in_answer)
            .map(|(chunks, &in_answer)| ReferenceClaim {
                retrieved: !chunks.is_empty(),
                chunks: chunks.clone(),
                in_answer,
            })
            .collect()
    });

    let count = |f: &dyn Fn(&AnswerClaim) -> bool| answer.iter().filter(|c| f(c)).count();
    // Precondition chains, in one order for every metric: reference, answer claims, reference
    // claims, chunks.
    let need_reference = || reference_claims.as_deref().ok_or(Undefined::NoReference);
    let need_claims = || {
        if n_answer == 0 {
            Err(Undefined::NoClaims)
        } else {
            Ok(n_answer)
        }
    };
    let need_reference_claims = || {
        let r = need_reference()?;
        if r.is_empty() {
            Err(Undefined::NoReferenceClaims)
        } else {
            Ok(r)
        }
    };
    let need_context = || {
        if k == 0 {
            Err(Undefined::NoContext)
        } else {
            Ok(k)
        }
    };

    let precision = need_reference().and_then(|_| {
        let n = need_claims()?;
        Ok(share(count(&|c| c.correct == Some(true)), n))
    });
    let recall =
        need_reference_claims().map(|r| share(r.iter().filter(|c| c.in_answer).count(), r.len()));
    let f1 = need_reference().and_then(|_| {
        need_claims()?;
        need_reference_claims()?;
        let (p, r) = (precision?, recall?);
        Ok(if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        })
    });
    let claim_recall =
        need_reference_claims().map(|r| share(r.iter().filter(|c| c.retrieved).count(), r.len()));
    let context_precision = need_reference_claims().and_then(|_| {
        let k = need_context()?;
        let rel = relevant.as_deref().unwrap_or_default(); // present with a reference
        Ok(share(rel.iter().filter(|r| **r).count(), k))
    });
    let utilisation = need_reference_claims().and_then(|r| {
        need_context()?;
        let recalled = r.iter().filter(|c| c.retrieved).count();
        if recalled == 0 {
            return Err(Undefined::NoRecalledClaims);
        }
        Ok(share(
            r.iter().filter(|c| c.retrieved && c.in_answer).count(),
            recalled,
        ))
    });
    let noise = |kind: Noise| {
        need_reference()?;
        let n = need_claims()?;
        need_reference_claims()?;
        need_context()?;
        Ok(share(count(&|c| c.noise == Some(kind)), n))
    };
    let category = |category: AnswerCategory| {
        need_reference()?;
        let n = need_claims()?;
        Ok(share(count(&|c| c.category == category), n))
    };
    let faithfulness = need_claims().map(|n| share(count(&|c| !c.chunks.is_empty()), n));

    Ok(Diagnosis {
        values: [
            precision,
            recall,
            f1,
            claim_recall,
            context_precision,
            utilisation,
            noise(Noise::Relevant),
            noise(Noise::Irrelevant),
            category(AnswerCategory::Hallucination),
            category(AnswerCategory::SelfKnowledge),
            faithfulness,
        ],
        answer,
        reference: reference_claims,
        relevant_chunks: relevant,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// The worked example of the module docs, every metric by hand.
    fn example() -> ClaimChecks {
        // Chunks 0, 1, 2. Answer claims:
        //   a0: in reference, chunks {0}       -> correct, faithful
        //   a1: not in reference, chunks {0,1} -> incorrect, faithful, noise from relevant (0)
        //   a2: not in reference, chunks {2}   -> incorrect, faithful, noise from irrelevant (2)
        //   a3: in reference, no chunk         -> self-knowledge
        //   a4: not in reference, no chunk     -> hallucination
        // Reference claims:
        //   r0: in answer, chunks {0}    -> retrieved, used
        //   r1: not in answer, chunks {1} -> retrieved, unused
        //   r2: in answer, no chunk       -> not retrieved
        //   r3: not in answer, no chunk
        // Relevant chunks: 0 and 1 (entail r0, r1); chunk 2 is irrelevant.
        ClaimChecks {
            chunks: 3,
            answer_in_chunks: vec![vec![0], vec![1, 0], vec![2], vec![], vec![]],
            reference: Some(ReferenceChecks {
                answer_in_reference: vec![true, false, false, true, false],
                reference_in_answer: vec![true, false, true, false],
                reference_in_chunks: vec![vec![0], vec![1], vec![], vec![]],
            }),
        }
    }

    #[test]
    fn hand_worked_example() {
        let d = diagnose(&example()).unwrap();
        let v = |m| d.value(m).unwrap();
        assert!(close(v(Metric::Precision), 2.0 / 5.0));
        assert!(close(v(Metric::Recall), 2.0 / 4.0));
        let f1 = 2.0 * 0.4 * 0.5 / 0.9;
        assert!(close(v(Metric::F1), f1));
        assert!(close(v(Metric::RetrieverClaimRecall), 2.0 / 4.0));
        assert!(close(v(Metric::RetrieverContextPrecision), 2.0 / 3.0));
        // Retrieved reference claims r0, r1; the answer entails r0 only.
        assert!(close(v(Metric::ContextUtilisation), 1.0 / 2.0));
        assert!(close(v(Metric::NoiseSensitivityRelevant), 1.0 / 5.0));
        assert!(close(v(Metric::NoiseSensitivityIrrelevant), 1.0 / 5.0));
        assert!(close(v(Metric::Hallucination), 1.0 / 5.0));
        assert!(close(v(Metric::SelfKnowledge), 1.0 / 5.0));
        assert!(close(v(Metric::Faithfulness), 3.0 / 5.0));
        assert_eq!(d.relevant_chunks, Some(vec![true, true, false]));
        assert_eq!(d.answer[1].chunks, vec![0, 1], "sorted");
        assert_eq!(d.answer[1].noise, Some(Noise::Relevant));
        assert_eq!(d.answer[2].noise, Some(Noise::Irrelevant));
        assert_eq!(d.answer[0].noise, None, "a correct claim is never noise");
        assert_eq!(d.answer[3].category, AnswerCategory::SelfKnowledge);
        assert_eq!(d.answer[4].category, AnswerCategory::Hallucination);
        let r = d.reference.as_ref().unwrap();
        assert!(r[1].retrieved && !r[1].in_answer);
    }

    #[test]
    fn a_claim_from_relevant_and_irrelevant_chunks_counts_as_relevant_only() {
        let checks = ClaimChecks {
            chunks: 2,
            answer_in_chunks: vec![vec![0, 1]],
            reference: Some(ReferenceChecks {
                answer_in_reference: vec![false],
                reference_in_answer: vec![false],
                reference_in_chunks: vec![vec![0]],
            }),
        };
        let d = diagnose(&checks).unwrap();
        assert_eq!(d.value(Metric::NoiseSensitivityRelevant), Ok(1.0));
        assert_eq!(d.value(Metric::NoiseSensitivityIrrelevant), Ok(0.0));
    }

    /// SplitMix64, for random checks without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn set(&mut self, chunks: usize) -> Vec<usize> {
            (0..chunks).filter(|_| self.below(3) == 0).collect()
        }
    }

    fn random_checks(rng: &mut Rng) -> ClaimChecks {
        let chunks = rng.below(5);
        let na = rng.below(6);
        let nr = rng.below(6);
        ClaimChecks {
            chunks,
            answer_in_chunks: (0..na).map(|_| rng.set(chunks)).collect(),
            reference: (rng.below(8) != 0).then(|| ReferenceChecks {
                answer_in_reference: (0..na).map(|_| rng.below(2) == 0).collect(),
                reference_in_answer: (0..nr).map(|_| rng.below(2) == 0).collect(),
                reference_in_chunks: (0..nr).map(|_| rng.set(chunks)).collect(),
            }),
        }
    }

    #[test]
    fn faithfulness_hallucination_and_self_knowledge_sum_to_one() {
        let mut rng = Rng(18);
        let mut checked = 0;
        for _ in 0..2000 {
            let checks = random_checks(&mut rng);
            let d = diagnose(&checks).unwrap();
            let three = [
                d.value(Metric::Faithfulness),
                d.value(Metric::Hallucination),
                d.value(Metric::SelfKnowledge),
            ];
            if let [Ok(f), Ok(h), Ok(s)] = three {
                assert!(close(f + h + s, 1.0), "{checks:?}: {f} + {h} + {s}");
                checked += 1;
            } else if checks.reference.is_some() {
                // Defined together or not at all (with a reference).
                assert!(three.iter().all(Result::is_err), "{checks:?}");
            }
            // Noise is a part of the faithful incorrect claims.
            if let (Ok(r), Ok(i), Ok(f), Ok(p)) = (
                d.value(Metric::NoiseSensitivityRelevant),
                d.value(Metric::NoiseSensitivityIrrelevant),
                d.value(Metric::Faithfulness),
                d.value(Metric::Precision),
            ) {
                assert!(r + i <= f + 1e-12 && r + i <= 1.0 - p + 1e-12, "{checks:?}");
            }
            for (m, v) in d.values() {
                if let Ok(v) = v {
                    assert!((0.0..=1.0).contains(&v) && v.is_finite(), "{m:?} = {v}");
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn empty_lists_are_undefined_with_a_reason_never_zero() {
        // A refusal: no answer claims.
        let refusal = ClaimChecks {
            chunks: 1,
            answer_in_chunks: vec![],
            reference: Some(ReferenceChecks {
                answer_in_reference: vec![],
                reference_in_answer: vec![false],
                reference_in_chunks: vec![vec![0]],
            }),
        };
        let d = diagnose(&refusal).unwrap();
        for m in [
            Metric::Precision,
            Metric::F1,
            Metric::NoiseSensitivityRelevant,
            Metric::NoiseSensitivityIrrelevant,
            Metric::Hallucination,
            Metric::SelfKnowledge,
            Metric::Faithfulness,
        ] {
            assert_eq!(d.value(m), Err(Undefined::NoClaims), "{m:?}");
        }
        // What the refusal misses is measured: recall 0, the retriever's numbers stand.
        assert_eq!(d.value(Metric::Recall), Ok(0.0));
        assert_eq!(d.value(Metric::RetrieverClaimRecall), Ok(1.0));
        assert_eq!(d.value(Metric::RetrieverContextPrecision), Ok(1.0));
        assert_eq!(d.value(Metric::ContextUtilisation), Ok(0.0));

        // No reference: only faithfulness.
        let no_ref = ClaimChecks {
            chunks: 1,
            answer_in_chunks: vec![vec![0], vec![]],
            reference: None,
        };
        let d = diagnose(&no_ref).unwrap();
        assert_eq!(d.value(Metric::Faithfulness), Ok(0.5));
        assert_eq!(d.answer[1].category, AnswerCategory::Unfaithful);
        for m in Metric::ALL
            .into_iter()
            .filter(|m| *m != Metric::Faithfulness)
        {
            assert_eq!(d.value(m), Err(Undefined::NoReference), "{m:?}");
        }

        // A reference without claims, no chunks.
        let bare = ClaimChecks {
            chunks: 0,
            answer_in_chunks: vec![vec![]],
            reference: Some(ReferenceChecks {
                answer_in_reference: vec![true],
                reference_in_answer: vec![],
                reference_in_chunks: vec![],
            }),
        };
        let d = diagnose(&bare).unwrap();
        assert_eq!(d.value(Metric::Precision), Ok(1.0));
        assert_eq!(d.value(Metric::Recall), Err(Undefined::NoReferenceClaims));
        assert_eq!(d.value(Metric::F1), Err(Undefined::NoReferenceClaims));
        assert_eq!(
            d.value(Metric::NoiseSensitivityRelevant),
            Err(Undefined::NoReferenceClaims)
        );
        assert_eq!(d.value(Metric::SelfKnowledge), Ok(1.0));
        assert_eq!(d.value(Metric::Faithfulness), Ok(0.0));

        // Reference claims but no chunk: claim recall 0, the chunk metrics undefined.
        let no_chunks = ClaimChecks {
            chunks: 0,
            answer_in_chunks: vec![vec![]],
            reference: Some(ReferenceChecks {
                answer_in_reference: vec![false],
                reference_in_answer: vec![true],
                reference_in_chunks: vec![vec![]],
            }),
        };
        let d = diagnose(&no_chunks).unwrap();
        assert_eq!(d.value(Metric::RetrieverClaimRecall), Ok(0.0));
        assert_eq!(
            d.value(Metric::RetrieverContextPrecision),
            Err(Undefined::NoContext)
        );
        assert_eq!(
            d.value(Metric::ContextUtilisation),
            Err(Undefined::NoContext)
        );
        assert_eq!(
            d.value(Metric::NoiseSensitivityIrrelevant),
            Err(Undefined::NoContext)
        );
        assert_eq!(d.value(Metric::Hallucination), Ok(1.0));

        // Chunks that recall no reference claim: utilisation has no denominator.
        let unrecalled = ClaimChecks {
            chunks: 1,
            ..no_chunks
        };
        assert_eq!(
            diagnose(&unrecalled)
                .unwrap()
                .value(Metric::ContextUtilisation),
            Err(Undefined::NoRecalledClaims)
        );
    }

    #[test]
    fn f1_is_zero_when_precision_and_recall_are() {
        let checks = ClaimChecks {
            chunks: 0,
            answer_in_chunks: vec![vec![]],
            reference: Some(ReferenceChecks {
                answer_in_reference: vec![false],
                reference_in_answer: vec![false],
                reference_in_chunks: vec![vec![]],
            }),
        };
        assert_eq!(diagnose(&checks).unwrap().value(Metric::F1), Ok(0.0));
    }

    #[test]
    fn inconsistent_checks_are_errors() {
        let mut checks = example();
        checks.answer_in_chunks[0] = vec![3];
        assert_eq!(
            diagnose(&checks),
            Err(ClaimChecksError::ChunkOutOfRange {
                index: 3,
                chunks: 3
            })
        );
        let mut checks = example();
        checks.answer_in_chunks.pop();
        assert!(matches!(
            diagnose(&checks),
            Err(ClaimChecksError::AnswerChecks { claims: 4, got: 5 })
        ));
        let mut checks = example();
        checks.reference.as_mut().unwrap().reference_in_chunks.pop();
        assert!(matches!(
            diagnose(&checks),
            Err(ClaimChecksError::ReferenceChecks { claims: 4, got: 3 })
        ));
    }

    #[test]
    fn names_are_distinct_and_round_trip() {
        let names: std::collections::BTreeSet<&str> =
            Metric::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), 11);
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        assert_eq!(Metric::from_name("faithfulness"), None);
        assert_eq!(Metric::ContextUtilisation.group(), Group::Generator);
        assert!(!Metric::Hallucination.higher_is_better());
    }
}
