//! The trec_eval measure catalog: every measure of `-m all_trec` (and `dcg`, `ideal_dcg`),
//! their parameters, their output names and their per-topic computation over a
//! [`JudgedRanking`].
//!
//! Formulas follow trec_eval 10.0's `m_*.c` files, term by term and in the same summation
//! order, so that printed values agree to the last digit. Where a formula is shared with the
//! per-query functions of [`super::query`] it goes through [`super::kernel`].

use super::error::RankingError;
use super::judged::{Compat, JudgedRanking, REL_NONPOOL, REL_UNJUDGED};
use super::kernel;

/// Floor for geometric means (trec_eval `MIN_GEO_MEAN`).
pub const MIN_GEO_MEAN: f64 = 0.00001;
/// Smoothing constant of `infAP` (trec_eval `INFAP_EPSILON`).
pub const INFAP_EPSILON: f64 = 0.00001;

/// Every measure the engine knows, in trec_eval's evaluation and printing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum MeasureKind {
    Runid,
    NumQ,
    NumRet,
    NumRel,
    NumRelRet,
    Map,
    GmMap,
    Rprec,
    Bpref,
    RecipRank,
    IprecAtRecall,
    P,
    Relstring,
    Recall,
    InfAP,
    GmBpref,
    RprecMult,
    Utility,
    Pt11Avg,
    BinG,
    G,
    Dcg,
    IdealDcg,
    Ndcg,
    NdcgRel,
    Rndcg,
    NdcgCut,
    MapCut,
    RelativeP,
    Success,
    SetP,
    SetRelativeP,
    SetRecall,
    SetMap,
    SetF,
    NumNonrelJudgedRet,
    Rbp,
    RbpResid,
    Unj,
}

/// How a measure takes parameters (trec_eval's `init_meas` families).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    /// No parameters.
    Plain,
    /// Sorted, unique, positive integer cut-offs; one value each (`P_5`).
    LongCut(&'static [usize]),
    /// Sorted, unique real cut-offs; one value each (`iprec_at_recall_0.10`).
    DoubleCut(&'static [f64]),
    /// An ordered list of reals; one value (`utility`).
    Doubles(&'static [f64]),
    /// `name=value` pairs; one value (`ndcg`).
    Pairs,
}

const CUTOFFS: &[usize] = &[5, 10, 15, 20, 30, 100, 200, 500, 1000];
const RECALL_POINTS: &[f64] = &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const RPREC_MULTS: &[f64] = &[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0];

const CATALOG: &[(MeasureKind, &str, Style)] = {
    use MeasureKind::*;
    &[
        (Runid, "runid", Style::Plain),
        (NumQ, "num_q", Style::Plain),
        (NumRet, "num_ret", Style::Plain),
        (NumRel, "num_rel", Style::Plain),
        (NumRelRet, "num_rel_ret", Style::Plain),
        (Map, "map", Style::Plain),
        (GmMap, "gm_map", Style::Plain),
        (Rprec, "Rprec", Style::Plain),
        (Bpref, "bpref", Style::Plain),
        (RecipRank, "recip_rank", Style::Plain),
        (
            IprecAtRecall,
            "iprec_at_recall",
            Style::DoubleCut(RECALL_POINTS),
        ),
        (P, "P", Style::LongCut(CUTOFFS)),
        (Relstring, "relstring", Style::Doubles(&[10.0])),
        (Recall, "recall", Style::LongCut(CUTOFFS)),
        (InfAP, "infAP", Style::Plain),
        (GmBpref, "gm_bpref", Style::Plain),
        (RprecMult, "Rprec_mult", Style::DoubleCut(RPREC_MULTS)),
        (Utility, "utility", Style::Doubles(&[1.0, -1.0, 0.0, 0.0])),
        (Pt11Avg, "11pt_avg", Style::Doubles(RECALL_POINTS)),
        (BinG, "binG", Style::Plain),
        (G, "G", Style::Pairs),
        (Dcg, "dcg", Style::Pairs),
        (IdealDcg, "ideal_dcg", Style::Pairs),
        (Ndcg, "ndcg", Style::Pairs),
        (NdcgRel, "ndcg_rel", Style::Pairs),
        (Rndcg, "Rndcg", Style::Pairs),
        (NdcgCut, "ndcg_cut", Style::LongCut(CUTOFFS)),
        (MapCut, "map_cut", Style::LongCut(CUTOFFS)),
        (RelativeP, "relative_P", Style::LongCut(CUTOFFS)),
        (Success, "success", Style::LongCut(&[1, 5, 10])),
        (SetP, "set_P", Style::Plain),
        (SetRelativeP, "set_relative_P", Style::Plain),
        (SetRecall, "set_recall", Style::Plain),
        (SetMap, "set_map", Style::Plain),
        (SetF, "set_F", Style::Doubles(&[1.0])),
        (NumNonrelJudgedRet, "num_nonrel_judged_ret", Style::Plain),
        (Rbp, "rbp", Style::Pairs),
        (RbpResid, "rbp_resid", Style::Plain),
        (Unj, "unj", Style::LongCut(&[5, 10, 20])),
    ]
};

const OFFICIAL: &[&str] = &[
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
];
const ALL_TREC: &[&str] = &[
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "relstring",
    "recall",
    "unj",
    "rbp",
    "rbp_resid",
    "infAP",
    "gm_bpref",
    "utility",
    "11pt_avg",
    "ndcg",
    "relative_P",
    "Rprec_mult",
    "success",
    "map_cut",
    "ndcg_cut",
    "ndcg_rel",
    "Rndcg",
    "binG",
    "G",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
];
/// Measures of `all_trec` that trec_eval 9.0.x did not have.
const NOT_IN_V9: &[&str] = &["unj", "rbp", "rbp_resid"];
const SET: &[&str] = &[
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "utility",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
];

/// A measure's parameter values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Params {
    /// No parameters.
    None,
    /// Integer cut-offs, ascending.
    Cutoffs(Vec<usize>),
    /// Real cut-offs, ascending.
    Fractions(Vec<f64>),
    /// An ordered list of reals.
    Values(Vec<f64>),
    /// `name=value` pairs in the order given.
    Pairs(Vec<(String, f64)>),
}

/// One requested measure with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// Which measure.
    pub kind: MeasureKind,
    /// Its parameters (defaults when none were given).
    pub params: Params,
    /// The parameter string as given on the command line, which trec_eval appends to the
    /// names of single-valued measures (`utility_2,-1,0,0`).
    pub printable: Option<String>,
}

/// How a value slot is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// `%6.4f`.
    Float,
    /// `%ld` of the value.
    Long,
    /// The relevance string (`'0011…'`), per topic only.
    RelString,
    /// The run identifier, summary only.
    RunId,
}

/// How per-topic values become the summary value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Aggregate {
    /// Arithmetic mean over topics.
    Mean,
    /// Sum over topics (`num_ret`, `num_rel`, …).
    Sum,
    /// Geometric mean: per-topic values are stored as `ln(max(x, MIN_GEO_MEAN))`.
    GeometricMean,
    /// Number of topics evaluated (`num_q`).
    Count,
    /// No summary value.
    None,
}

/// One output value of a measure set: its name and how it is printed and aggregated.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// Full name as printed (`P_10`, `ndcg_cut_5`, `utility_2,-1,0,0`).
    pub name: String,
    /// Which measure it belongs to.
    pub kind: MeasureKind,
    /// Print format.
    pub format: Format,
    /// Whether trec_eval prints it on per-topic (`-q`) lines.
    pub per_topic: bool,
    /// Summary rule.
    pub aggregate: Aggregate,
}

/// The values of one topic, one per [`Slot`] of the measure set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicValues {
    /// Values in slot order (geometric-mean measures hold the logarithm).
    pub values: Vec<f64>,
    /// The relevance string, when `relstring` was requested.
    pub relstring: Option<String>,
}

/// Per-topic context that is not in the judged ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvalContext {
    /// Release semantics.
    pub compat: Compat,
    /// Number of documents in the collection (trec_eval `-N`, used by `utility`).
    pub num_docs_in_coll: u64,
}

impl Default for EvalContext {
    fn default() -> Self {
        Self {
            compat: Compat::V10,
            num_docs_in_coll: 0,
        }
    }
}

/// A set of requested measures in trec_eval's order, with their output slots.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureSet {
    measures: Vec<Measure>,
    offsets: Vec<usize>,
    slots: Vec<Slot>,
}

/// C's `strtol` on a whole parameter: leading blanks, optional sign, digits; the rest ignored.
fn c_atol(s: &str) -> i64 {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    t[..i].parse().unwrap_or(0)
}

/// C's `atof`: the longest prefix that reads as a number, 0 if none.
fn c_atof(s: &str) -> f64 {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut any = i > digits_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        any |= i > f;
    }
    if any {
        end = i;
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            let mut j = i + 1;
            if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                j += 1;
            }
            let e = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > e {
                end = j;
            }
        }
    }
    let mut num = t[..end].to_string();
    if num.ends_with('.') {
        num.push('0');
    }
    if num.starts_with('.') || num.starts_with("-.") || num.starts_with("+.") {
        num = num.replacen('.', "0.", 1);
    }
    num.parse().unwrap_or(0.0)
}

/// Whether a gain-pair name is an integer relevance level (trec_eval 10.0 `valid_int`).
fn valid_int(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

fn parse_params(
    kind: MeasureKind,
    name: &str,
    style: Style,
    raw: &str,
) -> Result<Params, RankingError> {
    let bad = |reason: &str| RankingError::BadParameters {
        measure: name.to_string(),
        reason: reason.to_string(),
    };
    let _ = kind;
    Ok(match style {
        Style::Plain => Params::None,
        Style::LongCut(_) => {
            let mut v: Vec<i64> = raw.split(',').map(c_atol).collect();
            v.sort_unstable();
            if v[0] <= 0 {
                return Err(bad("cut-offs must be positive"));
            }
            if v.windows(2).any(|w| w[0] == w[1]) {
                return Err(bad("duplicate cut-offs"));
            }
            Params::Cutoffs(v.into_iter().map(|x| x as usize).collect())
        }
        Style::DoubleCut(_) => {
            let mut v: Vec<f64> = raw.split(',').map(c_atof).collect();
            v.sort_by(f64::total_cmp);
            if v.windows(2).any(|w| w[0] == w[1]) {
                return Err(bad("duplicate cut-offs"));
            }
            Params::Fractions(v)
        }
        Style::Doubles(_) => Params::Values(raw.split(',').map(c_atof).collect()),
        Style::Pairs => {
            let mut out = Vec::new();
            for part in raw.split(',') {
                let Some((n, v)) = part.split_once('=') else {
                    return Err(bad("malformed pair parameters"));
                };
                if v.contains('=') {
                    return Err(bad("malformed pair parameters"));
                }
                out.push((n.to_string(), c_atof(v)));
            }
            Params::Pairs(out)
        }
    })
}

fn default_params(style: Style) -> Params {
    match style {
        Style::Plain => Params::None,
        Style::LongCut(c) => Params::Cutoffs(c.to_vec()),
        Style::DoubleCut(c) => Params::Fractions(c.to_vec()),
        Style::Doubles(c) => Params::Values(c.to_vec()),
        Style::Pairs => Params::Pairs(Vec::new()),
    }
}

impl MeasureSet {
    /// Reads trec_eval `-m` specifications (`P.5,10`, `ndcg.1=3,2=9`, `all_trec`, …). An empty
    /// list means `official`. Parameters attach to the measure by name, the first given wins;
    /// the measures come out in trec_eval's order whatever the order of the specifications.
    pub fn from_specs<S: AsRef<str>>(specs: &[S], compat: Compat) -> Result<Self, RankingError> {
        let mut marked = vec![false; CATALOG.len()];
        let mut args: Vec<(String, String)> = Vec::new();
        let mark = |n: &str, marked: &mut Vec<bool>| -> bool {
            match CATALOG.iter().position(|c| c.1 == n) {
                Some(i) => {
                    marked[i] = true;
                    true
                }
                None => false,
            }
        };
        let specs: Vec<&str> = if specs.is_empty() {
            vec!["official"]
        } else {
            specs.iter().map(|s| s.as_ref()).collect()
        };
        for spec in specs {
            let (name, params) = match spec.split_once('.') {
                Some((n, p)) => {
                    if p.is_empty() {
                        return Err(RankingError::BadParameters {
                            measure: n.to_string(),
                            reason: "empty parameter list".into(),
                        });
                    }
                    (n, Some(p))
                }
                None => (spec, None),
            };
            if let Some(p) = params {
                args.push((name.to_string(), p.to_string()));
            }
            let list: Option<&[&str]> = match name {
                "official" => Some(OFFICIAL),
                "all_trec" => Some(ALL_TREC),
                "set" => Some(SET),
                _ => None,
            };
            match list {
                Some(list) => {
                    for n in list {
                        if compat == Compat::V9 && NOT_IN_V9.contains(n) {
                            continue;
                        }
                        mark(n, &mut marked);
                    }
                }
                None => {
                    if !mark(name, &mut marked) {
                        return Err(RankingError::UnknownMeasure {
                            spec: spec.to_string(),
                        });
                    }
                }
            }
        }
        let mut measures = Vec::new();
        for (i, &(kind, name, style)) in CATALOG.iter().enumerate() {
            if !marked[i] {
                continue;
            }
            let given = args.iter().find(|a| a.0 == name).map(|a| a.1.clone());
            let (params, printable) = match &given {
                Some(raw) if style != Style::Plain => {
                    (parse_params(kind, name, style, raw)?, Some(raw.clone()))
                }
                _ => (default_params(style), None),
            };
            if kind == MeasureKind::Utility {
                if let Params::Values(v) = &params {
                    if v.len() != 4 {
                        return Err(RankingError::BadParameters {
                            measure: name.into(),
                            reason: "utility takes exactly 4 coefficients".into(),
                        });
                    }
                }
            }
            if kind == MeasureKind::Pt11Avg {
                if let Params::Values(v) = &params {
                    if v.is_empty() {
                        return Err(RankingError::BadParameters {
                            measure: name.into(),
                            reason: "no cut-off values".into(),
                        });
                    }
                }
            }
            measures.push(Measure {
                kind,
                params,
                printable,
            });
        }
        Ok(Self::from_measures(measures))
    }

    /// Builds a set from explicit measures (kept in the given order).
    pub fn from_measures(measures: Vec<Measure>) -> Self {
        let mut offsets = Vec::with_capacity(measures.len());
        let mut slots = Vec::new();
        for m in &measures {
            offsets.push(slots.len());
            let base = CATALOG.iter().find(|c| c.0 == m.kind).map_or("?", |c| c.1);
            let (format, per_topic, aggregate) = match m.kind {
                MeasureKind::Runid => (Format::RunId, false, Aggregate::None),
                MeasureKind::NumQ => (Format::Long, false, Aggregate::Count),
                MeasureKind::NumRet
                | MeasureKind::NumRel
                | MeasureKind::NumRelRet
                | MeasureKind::NumNonrelJudgedRet => (Format::Long, true, Aggregate::Sum),
                MeasureKind::GmMap | MeasureKind::GmBpref => {
                    (Format::Float, false, Aggregate::GeometricMean)
                }
                MeasureKind::Relstring => (Format::RelString, true, Aggregate::None),
                _ => (Format::Float, true, Aggregate::Mean),
            };
            let mut push = |name: String| {
                slots.push(Slot {
                    name,
                    kind: m.kind,
                    format,
                    per_topic,
                    aggregate,
                })
            };
            match &m.params {
                Params::Cutoffs(c) => c.iter().for_each(|k| push(format!("{base}_{k}"))),
                Params::Fractions(c) => c.iter().for_each(|k| push(format!("{base}_{k:3.2}"))),
                _ => match &m.printable {
                    Some(p) => push(format!("{base}_{p}")),
                    None => push(base.to_string()),
                },
            }
        }
        Self {
            measures,
            offsets,
            slots,
        }
    }

    /// The measures, in evaluation order.
    pub fn measures(&self) -> &[Measure] {
        &self.measures
    }

    /// The output slots, in printing order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Index of the first slot of the `i`-th measure.
    pub fn offset(&self, i: usize) -> usize {
        self.offsets[i]
    }

    /// Index of the first slot named `name`, if any.
    pub fn slot_index(&self, name: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.name == name)
    }

    /// Computes every measure for one judged ranking.
    pub fn evaluate(&self, jr: &JudgedRanking, ctx: &EvalContext) -> TopicValues {
        let mut tv = TopicValues {
            values: vec![0.0; self.slots.len()],
            relstring: None,
        };
        let pre = Prefix::new(jr);
        for (i, m) in self.measures.iter().enumerate() {
            let off = self.offsets[i];
            let end = self.offsets.get(i + 1).copied().unwrap_or(self.slots.len());
            compute(
                m,
                jr,
                &pre,
                ctx,
                &mut tv.values[off..end],
                &mut tv.relstring,
            );
        }
        tv
    }

    /// Values of a qrels topic that the run does not contain, as trec_eval 10.0 computes them
    /// under `-c`: the topic is evaluated against a one-document ranking of an unknown
    /// document, then `num_ret`, `utility`, `relstring`, `unj_*` and `rbp_resid` are cleared.
    pub fn evaluate_missing(
        &self,
        levels: &[u64],
        relevance_level: i64,
        ctx: &EvalContext,
    ) -> TopicValues {
        let jr = JudgedRanking::from_rels(vec![REL_NONPOOL], levels.to_vec(), relevance_level);
        let mut tv = self.evaluate(&jr, ctx);
        for (s, v) in self.slots.iter().zip(tv.values.iter_mut()) {
            if matches!(
                s.kind,
                MeasureKind::NumRet
                    | MeasureKind::Utility
                    | MeasureKind::Unj
                    | MeasureKind::RbpResid
            ) {
                *v = 0.0;
            }
        }
        if tv.relstring.is_some() {
            tv.relstring = Some(String::new());
        }
        tv
    }
}

/// Running sums for the summary line.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    sums: Vec<f64>,
    topics: usize,
}

impl Summary {
    /// An empty summary for `set`.
    pub fn new(set: &MeasureSet) -> Self {
        Self {
            sums: vec![0.0; set.slots.len()],
            topics: 0,
        }
    }

    /// Adds one topic's values (trec_eval `acc_meas`).
    pub fn add(&mut self, values: &TopicValues) {
        for (s, v) in self.sums.iter_mut().zip(&values.values) {
            *s += v;
        }
        self.topics += 1;
    }

    /// Number of topics added.
    pub fn topics(&self) -> usize {
        self.topics
    }

    /// Final values (trec_eval `calc_avg`): means divide by `denominator` (the number of
    /// topics added, or every qrels topic under `-c`); geometric means count each topic not
    /// added as `MIN_GEO_MEAN`.
    pub fn finish(&self, set: &MeasureSet, denominator: usize) -> Vec<f64> {
        let n = denominator as f64;
        set.slots
            .iter()
            .zip(&self.sums)
            .map(|(slot, &sum)| match slot.aggregate {
                Aggregate::Mean => {
                    if denominator > 0 {
                        sum / n
                    } else {
                        sum
                    }
                }
                Aggregate::Sum => sum,
                Aggregate::Count => self.topics as f64,
                Aggregate::GeometricMean => {
                    if denominator > 0 {
                        let missing = denominator.saturating_sub(self.topics) as f64;
                        ((sum + missing * MIN_GEO_MEAN.ln()) / n).exp()
                    } else {
                        sum
                    }
                }
                Aggregate::None => 0.0,
            })
            .collect()
    }
}

/// Prefix counts shared by the cut-off measures.
struct Prefix {
    /// `rel[i]`: relevant documents among the first `i`.
    rel: Vec<u32>,
    /// `ap[i]`: sum of precisions at the relevant documents among the first `i`.
    ap: Vec<f64>,
}

impl Prefix {
    fn new(jr: &JudgedRanking) -> Self {
        let n = jr.rels.len();
        let mut rel = Vec::with_capacity(n + 1);
        let mut ap = Vec::with_capacity(n + 1);
        rel.push(0u32);
        ap.push(0.0);
        let (mut r, mut s) = (0u32, 0.0f64);
        for i in 0..n {
            if jr.is_rel(i) {
                r += 1;
                s += f64::from(r) / (i as f64 + 1.0);
            }
            rel.push(r);
            ap.push(s);
        }
        Self { rel, ap }
    }
    #[inline]
    fn rel_at(&self, k: usize) -> usize {
        self.rel[k.min(self.rel.len() - 1)] as usize
    }
    #[inline]
    fn ap_at(&self, k: usize) -> f64 {
        self.ap[k.min(self.ap.len() - 1)]
    }
}

/// Gains per relevance level (trec_eval `setup_gains`), sorted by increasing gain.
struct Gains {
    /// `(level, judged count at level, gain)`.
    entries: Vec<(i64, u64, f64)>,
}

impl Gains {
    fn new(params: &Params, levels: &[u64]) -> Self {
        let mut entries: Vec<(i64, u64, f64)> = Vec::new();
        if let Params::Pairs(pairs) = params {
            for (name, gain) in pairs {
                if valid_int(name) {
                    entries.push((c_atol(name), 0, *gain));
                }
            }
        }
        let given = entries.len();
        for (lvl, &count) in levels.iter().enumerate() {
            let lvl = lvl as i64;
            match entries[..given].iter_mut().find(|e| e.0 == lvl) {
                Some(e) => e.1 = count,
                None => entries.push((lvl, count, lvl as f64)),
            }
        }
        entries.sort_by(|a, b| a.2.total_cmp(&b.2));
        Self { entries }
    }

    #[inline]
    fn gain(&self, rel: i64) -> f64 {
        self.entries
            .iter()
            .find(|e| e.0 == rel)
            .map_or(0.0, |e| e.2)
    }

    fn walk(&self) -> IdealWalk<'_> {
        let cur = self.entries.len() as isize - 1;
        IdealWalk {
            gains: &self.entries,
            cur,
            num_at_level: 0,
            gain: if cur >= 0 {
                self.entries[cur as usize].2
            } else {
                0.0
            },
        }
    }
}

/// The ideal ranking's gains, one rank at a time, from the highest gain level down.
struct IdealWalk<'a> {
    gains: &'a [(i64, u64, f64)],
    cur: isize,
    num_at_level: u64,
    gain: f64,
}

impl IdealWalk<'_> {
    #[inline]
    fn advance(&mut self) {
        self.num_at_level += 1;
        while self.cur >= 0 && self.num_at_level > self.gains[self.cur as usize].1 {
            self.num_at_level = 1;
            self.cur -= 1;
            self.gain = if self.cur >= 0 {
                self.gains[self.cur as usize].2
            } else {
                0.0
            };
        }
    }
}

fn cutoffs(p: &Params) -> &[usize] {
    match p {
        Params::Cutoffs(c) => c,
        _ => &[],
    }
}
fn fractions(p: &Params) -> &[f64] {
    match p {
        Params::Fractions(c) | Params::Values(c) => c,
        _ => &[],
    }
}

/// Recall points as numbers of relevant documents: `lround(x * R)` in 10.0,
/// `(long)(x * R + 0.9)` in 9.0.
fn recall_cut(x: f64, num_rel: u64, compat: Compat) -> i64 {
    match compat {
        Compat::V10 => (x * num_rel as f64).round() as i64,
        Compat::V9 => (x * num_rel as f64 + 0.9) as i64,
    }
}

/// Interpolated precision at recall points (trec_eval `iprec_at_recall`, `11pt_avg`):
/// calls `emit(index, value)` for every point.
fn interpolated(
    jr: &JudgedRanking,
    points: &[f64],
    compat: Compat,
    mut emit: impl FnMut(usize, f64),
) {
    let cuts: Vec<i64> = points
        .iter()
        .map(|&x| recall_cut(x, jr.num_rel, compat))
        .collect();
    let mut cur = cuts.len() as isize - 1;
    let rel_ret = jr.num_rel_ret as i64;
    while cur >= 0 && cuts[cur as usize] > rel_ret {
        cur -= 1;
    }
    let mut int_precis = jr.num_rel_ret as f64 / jr.num_ret as f64;
    let mut rel_so_far = rel_ret;
    let mut i = jr.num_ret as usize;
    while i > 0 && rel_so_far > 0 {
        let precis = rel_so_far as f64 / i as f64;
        if int_precis < precis {
            int_precis = precis;
        }
        if jr.is_rel(i - 1) {
            while cur >= 0 && rel_so_far == cuts[cur as usize] {
                emit(cur as usize, int_precis);
                cur -= 1;
            }
            rel_so_far -= 1;
        }
        i -= 1;
    }
    while cur >= 0 {
        emit(cur as usize, int_precis);
        cur -= 1;
    }
}

fn compute(
    m: &Measure,
    jr: &JudgedRanking,
    pre: &Prefix,
    ctx: &EvalContext,
    out: &mut [f64],
    relstring: &mut Option<String>,
) {
    use MeasureKind as K;
    let n = jr.rels.len();
    let num_rel = jr.num_rel as usize;
    let level = jr.relevance_level;
    let judged_nonrel = |r: i64| r >= 0 && r < level;
    match m.kind {
        K::Runid => {}
        K::NumQ => out[0] = 1.0,
        K::NumRet => out[0] = jr.num_ret as f64,
        K::NumRel => out[0] = jr.num_rel as f64,
        K::NumRelRet => out[0] = jr.num_rel_ret as f64,
        K::Map => out[0] = kernel::average_precision(pre.ap_at(n), num_rel),
        K::GmMap => {
            let ap = kernel::average_precision(pre.ap_at(n), num_rel);
            out[0] = ap.max(MIN_GEO_MEAN).ln();
        }
        K::Rprec => {
            out[0] = kernel::recall(pre.rel_at(num_rel), num_rel).unwrap_or(0.0);
        }
        K::Bpref | K::GmBpref => {
            let num_nonrel: u64 = jr.levels.iter().take(level.max(0) as usize).sum();
            let (mut nonrel_so_far, mut bpref) = (0u64, 0.0f64);
            for &r in &jr.rels {
                if r == REL_NONPOOL || r == REL_UNJUDGED {
                    continue;
                }
                if judged_nonrel(r) {
                    nonrel_so_far += 1;
                } else if nonrel_so_far > 0 {
                    bpref += 1.0
                        - nonrel_so_far.min(jr.num_rel) as f64 / num_nonrel.min(jr.num_rel) as f64;
                } else {
                    bpref += 1.0;
                }
            }
            if num_rel > 0 {
                bpref /= num_rel as f64;
            }
            out[0] = if m.kind == K::Bpref {
                bpref
            } else {
                bpref.max(MIN_GEO_MEAN).ln()
            };
        }
        K::RecipRank => {
            out[0] = kernel::reciprocal_rank((0..n).find(|&i| jr.is_rel(i)));
        }
        K::IprecAtRecall => {
            interpolated(jr, fractions(&m.params), ctx.compat, |i, v| out[i] = v);
        }
        K::P => {
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                *o = kernel::precision(pre.rel_at(k), k);
            }
        }
        K::Relstring => {
            let len = fractions(&m.params).first().copied().unwrap_or(10.0) as i64;
            let len = len.min(n as i64).max(0) as usize;
            let s: String = jr.rels[..len]
                .iter()
                .map(|&r| match r {
                    r if r > 9 => '>',
                    r if r >= 0 => char::from(b'0' + r as u8),
                    REL_NONPOOL => '-',
                    REL_UNJUDGED => '.',
                    _ => '<',
                })
                .collect();
            *relstring = Some(s);
        }
        K::Recall => {
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                *o = kernel::recall(pre.rel_at(k), num_rel).unwrap_or(0.0);
            }
        }
        K::InfAP => {
            let (mut nonrel, mut rel, mut unj) = (0u64, 0u64, 0u64);
            let mut inf_ap = 0.0f64;
            for (j, &r) in jr.rels.iter().enumerate() {
                if r == REL_NONPOOL {
                    continue;
                }
                if r == REL_UNJUDGED {
                    unj += 1;
                    continue;
                }
                if judged_nonrel(r) {
                    nonrel += 1;
                } else {
                    rel += 1;
                    if j == 0 {
                        inf_ap += 1.0;
                    } else {
                        let fj = j as f64;
                        let (relm1, nonrel, unj) = ((rel - 1) as f64, nonrel as f64, unj as f64);
                        inf_ap += 1.0 / (fj + 1.0)
                            + (fj / (fj + 1.0))
                                * ((relm1 + nonrel + unj) / fj)
                                * ((relm1 + INFAP_EPSILON)
                                    / (relm1 + nonrel + 2.0 * INFAP_EPSILON));
                    }
                }
            }
            if num_rel > 0 {
                inf_ap /= num_rel as f64;
            }
            out[0] = inf_ap;
        }
        K::RprecMult => {
            let fr = fractions(&m.params);
            let cuts: Vec<i64> = fr
                .iter()
                .map(|&x| (x * jr.num_rel as f64 + 0.9) as i64)
                .collect();
            let num_ret = jr.num_ret as i64;
            let mut cur = cuts.len() as isize - 1;
            while cur >= 0 && cuts[cur as usize] > num_ret {
                out[cur as usize] = jr.num_rel_ret as f64 / cuts[cur as usize] as f64;
                cur -= 1;
            }
            let mut rel_so_far = jr.num_rel_ret as i64;
            let mut i = n;
            while i > 0 && rel_so_far > 0 {
                let precis = rel_so_far as f64 / i as f64;
                while cur >= 0 && i as i64 == cuts[cur as usize] {
                    out[cur as usize] = precis;
                    cur -= 1;
                }
                if jr.is_rel(i - 1) {
                    rel_so_far -= 1;
                }
                i -= 1;
            }
        }
        K::Utility => {
            let p = fractions(&m.params);
            if p.len() == 4 {
                let (rr, ret, rel) = (jr.num_rel_ret as f64, jr.num_ret as f64, jr.num_rel as f64);
                out[0] = p[0] * rr
                    + p[1] * (ret - rr)
                    + p[2] * (rel - rr)
                    + p[3] * (ctx.num_docs_in_coll as f64 + rr - ret - rel);
            }
        }
        K::Pt11Avg => {
            let pts = fractions(&m.params);
            let mut sum = 0.0;
            interpolated(jr, pts, ctx.compat, |_, v| sum += v);
            out[0] = sum / pts.len().max(1) as f64;
        }
        K::BinG => {
            let (mut rel_so_far, mut sum) = (0usize, 0.0f64);
            for i in 0..n {
                if jr.is_rel(i) {
                    rel_so_far += 1;
                    sum += 1.0 / ((3 + i - rel_so_far) as f64).log2();
                }
            }
            if rel_so_far > 0 {
                out[0] = sum / num_rel as f64;
            }
        }
        K::G => {
            let gains = Gains::new(&m.params, &jr.levels);
            let mut w = gains.walk();
            let (mut results_g, mut sum_results, mut sum_ideal, mut sum_cost) =
                (0.0, 0.0, 0.0, 0.0);
            let min_cost = 1.0;
            let mut i = 0;
            while i < n && w.gain > 0.0 {
                let rg = gains.gain(jr.rels[i]);
                sum_results += rg;
                w.advance();
                if w.gain > 0.0 {
                    sum_ideal += w.gain;
                }
                sum_cost += if w.gain >= min_cost { w.gain } else { min_cost };
                if rg != 0.0 {
                    results_g += rg / (2.0 + sum_cost - sum_results).log2();
                }
                i += 1;
            }
            while i < n {
                let rg = gains.gain(jr.rels[i]);
                sum_results += rg;
                sum_cost += min_cost;
                if rg != 0.0 {
                    results_g += rg / (2.0 + sum_cost - sum_results).log2();
                }
                i += 1;
            }
            while w.gain > 0.0 {
                w.advance();
                if w.gain > 0.0 {
                    sum_ideal += w.gain;
                }
            }
            if sum_ideal > 0.0 {
                out[0] = results_g / sum_ideal;
            }
        }
        K::Dcg | K::IdealDcg | K::Ndcg => {
            let gains = Gains::new(&m.params, &jr.levels);
            let mut w = gains.walk();
            let (mut dcg, mut idcg) = (0.0f64, 0.0f64);
            let mut i = 0;
            while i < n && w.gain > 0.0 {
                let rg = gains.gain(jr.rels[i]);
                if rg != 0.0 {
                    dcg += rg / kernel::discount(i);
                }
                w.advance();
                if w.gain > 0.0 {
                    idcg += w.gain / kernel::discount(i);
                }
                i += 1;
            }
            while i < n {
                let rg = gains.gain(jr.rels[i]);
                if rg != 0.0 {
                    dcg += rg / kernel::discount(i);
                }
                i += 1;
            }
            while w.gain > 0.0 {
                w.advance();
                if w.gain > 0.0 {
                    idcg += w.gain / kernel::discount(i);
                }
                i += 1;
            }
            out[0] = match m.kind {
                K::Dcg => dcg,
                K::IdealDcg => idcg,
                _ => kernel::ndcg(dcg, idcg).unwrap_or(0.0),
            };
        }
        K::NdcgRel => {
            let gains = Gains::new(&m.params, &jr.levels);
            let mut w = gains.walk();
            let (mut dcg, mut idcg, mut sum) = (0.0f64, 0.0f64, 0.0f64);
            let (mut nrel, mut nrel_ret) = (0i64, 0i64);
            let mut i = 0;
            while i < n && w.gain > 0.0 {
                let rg = gains.gain(jr.rels[i]);
                if rg != 0.0 {
                    dcg += rg / kernel::discount(i);
                }
                w.advance();
                if w.gain > 0.0 {
                    nrel += 1;
                    idcg += w.gain / kernel::discount(i);
                }
                if rg > 0.0 {
                    sum += dcg / idcg;
                    nrel_ret += 1;
                }
                i += 1;
            }
            while i < n {
                let rg = gains.gain(jr.rels[i]);
                if rg != 0.0 {
                    dcg += rg / kernel::discount(i);
                }
                if rg > 0.0 {
                    sum += dcg / idcg;
                    nrel_ret += 1;
                }
                i += 1;
            }
            while w.gain > 0.0 {
                w.advance();
                if w.gain > 0.0 {
                    nrel += 1;
                    idcg += w.gain / kernel::discount(i);
                }
                i += 1;
            }
            sum += (nrel - nrel_ret) as f64 * dcg / idcg;
            if sum > 0.0 {
                out[0] = sum / nrel as f64;
            }
        }
        K::Rndcg => {
            if jr.num_rel == 0 {
                return;
            }
            let gains = Gains::new(&m.params, &jr.levels);
            let mut w = gains.walk();
            let (mut dcg, mut idcg, mut sum) = (0.0f64, 0.0f64, 0.0f64);
            let mut old = w.gain;
            let mut changes = 0i64;
            let mut i = 0;
            while i < n && w.gain > 0.0 {
                let rg = gains.gain(jr.rels[i]);
                w.advance();
                if old != w.gain {
                    if idcg > 0.0 {
                        sum += dcg / idcg;
                        changes += 1;
                    }
                    old = w.gain;
                }
                if rg != 0.0 {
                    dcg += rg / kernel::discount(i);
                }
                if w.gain > 0.0 {
                    idcg += w.gain / kernel::discount(i);
                }
                i += 1;
            }
            if i < n {
                while i < n {
                    let rg = gains.gain(jr.rels[i]);
                    if rg != 0.0 {
                        dcg += rg / kernel::discount(i);
                    }
                    i += 1;
                }
                if idcg > 0.0 {
                    sum += dcg / idcg;
                    changes += 1;
                }
            }
            while w.gain > 0.0 {
                w.advance();
                if old != w.gain {
                    if idcg > 0.0 {
                        sum += dcg / idcg;
                        changes += 1;
                    }
                    old = w.gain;
                }
                if w.gain > 0.0 {
                    idcg += w.gain / kernel::discount(i);
                }
                i += 1;
            }
            out[0] = sum / changes as f64;
        }
        K::NdcgCut => {
            let raw = |r: i64| if r > 0 { r as f64 } else { 0.0 };
            let ideal = || {
                jr.levels
                    .iter()
                    .enumerate()
                    .skip(1)
                    .rev()
                    .flat_map(|(lvl, &c)| std::iter::repeat_n(lvl as f64, c as usize))
            };
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                let d = kernel::dcg(jr.rels.iter().map(|&r| raw(r)), k);
                *o = kernel::ndcg(d, kernel::dcg(ideal(), k)).unwrap_or(0.0);
            }
        }
        K::MapCut => {
            if num_rel == 0 {
                return;
            }
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                *o = kernel::average_precision(pre.ap_at(k), num_rel);
            }
        }
        K::RelativeP => {
            if num_rel == 0 {
                return;
            }
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                *o = pre.rel_at(k) as f64 / k.min(num_rel) as f64;
            }
        }
        K::Success => {
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                *o = kernel::success(pre.rel_at(k));
            }
        }
        K::SetP => {
            if n > 0 {
                out[0] = kernel::precision(jr.num_rel_ret as usize, n);
            }
        }
        K::SetRelativeP => {
            if n > 0 && num_rel > 0 {
                out[0] = jr.num_rel_ret as f64 / n.min(num_rel) as f64;
            }
        }
        K::SetRecall => out[0] = kernel::recall(jr.num_rel_ret as usize, num_rel).unwrap_or(0.0),
        K::SetMap => {
            // trec_eval `m_set_map.c`: (rr * rr) / (ret * rel), both products exact in double,
            // one rounding in the division. `(rr / ret) * (rr / rel)` rounds three times and
            // lands on the other side of a printing edge: 3 of 1,000 retrieved with 4 relevant
            // is 0.00225, which trec_eval prints as 0.0022 and the other order as 0.0023.
            if n > 0 && num_rel > 0 {
                let rr = jr.num_rel_ret as f64;
                out[0] = (rr * rr) / (n as f64 * num_rel as f64);
            }
        }
        K::SetF => {
            if n > 0 && num_rel > 0 && jr.num_rel_ret > 0 {
                let beta = fractions(&m.params).first().copied().unwrap_or(1.0);
                let p = jr.num_rel_ret as f64 / n as f64;
                let r = jr.num_rel_ret as f64 / num_rel as f64;
                out[0] = (beta + 1.0) * p * r / (beta * p + r);
            }
        }
        K::NumNonrelJudgedRet => {
            out[0] = jr.rels.iter().filter(|&&r| judged_nonrel(r)).count() as f64;
        }
        K::Rbp => {
            let mut gains = Gains::new(&m.params, &jr.levels);
            let mut p = 0.9;
            if let Params::Pairs(pairs) = &m.params {
                for (name, v) in pairs {
                    if name == "p" {
                        p = *v;
                    }
                }
            }
            let (min, max) = gains
                .entries
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
                    (lo.min(e.2), hi.max(e.2))
                });
            if min < 0.0 || max > 1.0 {
                for e in &mut gains.entries {
                    e.2 = (e.2 - min) / (max - min);
                }
            }
            let (mut sum, mut cur_p) = (0.0f64, 1.0f64);
            for &r in &jr.rels {
                let g = gains.gain(r);
                if g != 0.0 {
                    sum += g * cur_p;
                }
                cur_p *= p;
            }
            out[0] = (1.0 - p) * sum;
        }
        K::RbpResid => {
            let p = 0.9;
            let (mut unj, mut sum, mut cur_p) = (0u64, 0.0f64, 1.0f64);
            for &r in &jr.rels {
                if r < 0 {
                    unj += 1;
                    sum += cur_p;
                }
                cur_p *= p;
            }
            if unj > 0 {
                out[0] = cur_p + (1.0 - p) * sum;
            }
        }
        K::Unj => {
            let mut unj = vec![0usize; n + 1];
            for (i, &r) in jr.rels.iter().enumerate() {
                unj[i + 1] = unj[i] + usize::from(r == REL_NONPOOL || r == REL_UNJUDGED);
            }
            for (o, &k) in out.iter_mut().zip(cutoffs(&m.params)) {
                *o = unj[k.min(n)] as f64 / k as f64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_number_parsing() {
        assert_eq!(c_atol("23.4"), 23);
        assert_eq!(c_atol("x"), 0);
        assert_eq!(c_atof(".25"), 0.25);
        assert_eq!(c_atof("-1"), -1.0);
        assert_eq!(c_atof("4.5"), 4.5);
        assert_eq!(c_atof("1."), 1.0);
        assert_eq!(c_atof("abc"), 0.0);
    }

    #[test]
    fn names_follow_trec_eval() {
        let set = MeasureSet::from_specs(
            &[
                "P.5,7,3",
                "iprec_at_recall..10,.20",
                "utility.2,-1,0,0",
                "ndcg_cut.10,23.4",
            ],
            Compat::V10,
        )
        .unwrap();
        let names: Vec<&str> = set.slots().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "iprec_at_recall_0.10",
                "iprec_at_recall_0.20",
                "P_3",
                "P_5",
                "P_7",
                "utility_2,-1,0,0",
                "ndcg_cut_10",
                "ndcg_cut_23"
            ]
        );
        assert!(MeasureSet::from_specs(&["nope"], Compat::V10).is_err());
        assert!(MeasureSet::from_specs(&["P.0"], Compat::V10).is_err());
    }

    #[test]
    fn set_map_rounds_once_as_trec_eval_does() {
        // 3 relevant among 1,000 retrieved, 4 relevant in all: 9 / 4000 in one division
        // (trec_eval `m_set_map.c`), which sits below the printing edge 0.00225.
        let mut rels = vec![0i64; 1000];
        for r in &mut rels[..3] {
            *r = 1;
        }
        let jr = JudgedRanking::from_rels(rels, vec![10, 4], 1);
        let set = MeasureSet::from_specs(&["set_map"], Compat::V10).unwrap();
        let v = set.evaluate(&jr, &EvalContext::default()).values[0];
        assert_eq!(v.to_bits(), (9.0f64 / 4000.0).to_bits());
        assert_eq!(format!("{v:6.4}"), "0.0022");
    }
}
