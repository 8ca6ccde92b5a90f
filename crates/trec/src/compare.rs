//! `--compare`: summary values of several runs side by side, with paired significance tests
//! of every run against the first (the baseline) and Holm's correction over the whole table.

use std::collections::HashMap;
use std::io::Write;

use oloproof_metrics::ranking::{Aggregate, MeasureSet};

use crate::driver::RunResult;
use crate::error::TrecError;
use crate::format::Precision;

/// Paired significance test used by `--compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TestKind {
    /// Student's paired t-test.
    #[value(name = "t-test")]
    TTest,
    /// Fisher's randomization (sign-flip) test.
    #[default]
    Randomization,
    /// Paired bootstrap test.
    Bootstrap,
}

/// Resolved settings of a comparison.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CompareSettings {
    pub(crate) test: TestKind,
    pub(crate) seed: u64,
    pub(crate) samples: usize,
    pub(crate) alpha: f64,
    pub(crate) precision: Precision,
}

fn describe(s: &CompareSettings) -> String {
    match s.test {
        TestKind::TTest => "paired t-test (two-sided)".to_string(),
        TestKind::Randomization => format!(
            "Fisher randomization test ({} permutations, seed {}, two-sided)",
            s.samples, s.seed
        ),
        TestKind::Bootstrap => format!(
            "paired bootstrap test ({} resamples, seed {}, two-sided)",
            s.samples, s.seed
        ),
    }
}

fn p_value(s: &CompareSettings, a: &[f64], b: &[f64]) -> Result<f64, TrecError> {
    let err = |e: oloproof_stats::StatsError| TrecError::Stats(e.to_string());
    Ok(match s.test {
        TestKind::TTest => oloproof_stats::paired_t_test(a, b).map_err(err)?.p_value,
        TestKind::Randomization => {
            oloproof_stats::randomization_test(a, b, s.samples, s.seed)
                .map_err(err)?
                .p_value
        }
        TestKind::Bootstrap => {
            oloproof_stats::paired_bootstrap_test(a, b, s.samples, s.seed, 0.95)
                .map_err(err)?
                .p_value
        }
    })
}

fn fmt(v: f64, p: Precision) -> String {
    match p {
        Precision::Standard => format!("{v:.4}"),
        Precision::Full => format!("{v}"),
    }
}

/// Writes the comparison table.
pub(crate) fn write_comparison(
    out: &mut dyn Write,
    set: &MeasureSet,
    runs: &[RunResult],
    s: &CompareSettings,
) -> Result<(), TrecError> {
    if runs.len() < 2 {
        return Err(TrecError::Usage("--compare needs at least two runs".into()));
    }
    // Topics evaluated in every run, in the baseline's order.
    let index: Vec<HashMap<&str, usize>> = runs
        .iter()
        .map(|r| {
            r.topics
                .iter()
                .enumerate()
                .map(|(i, t)| (t.0.as_str(), i))
                .collect()
        })
        .collect();
    let topics: Vec<&str> = runs[0]
        .topics
        .iter()
        .map(|t| t.0.as_str())
        .filter(|t| index.iter().all(|ix| ix.contains_key(t)))
        .collect();
    let slots: Vec<usize> = set
        .slots()
        .iter()
        .enumerate()
        .filter(|(_, sl)| sl.aggregate == Aggregate::Mean)
        .map(|(i, _)| i)
        .collect();
    let values = |r: usize, slot: usize| -> Vec<f64> {
        topics
            .iter()
            .map(|t| runs[r].topics[index[r][t]].1.values[slot])
            .collect()
    };
    // One test per (measure, run other than the baseline).
    let mut raw = Vec::new();
    let mut means = vec![vec![0.0; runs.len()]; slots.len()];
    for (m, &slot) in slots.iter().enumerate() {
        let base = values(0, slot);
        let n = base.len().max(1) as f64;
        means[m][0] = base.iter().sum::<f64>() / n;
        for (r, mean) in means[m].iter_mut().enumerate().skip(1) {
            let v = values(r, slot);
            *mean = v.iter().sum::<f64>() / n;
            raw.push(p_value(s, &v, &base)?);
        }
    }
    let adjusted = oloproof_stats::holm(&raw);
    let names: Vec<String> = runs
        .iter()
        .map(|r| format!("{} ({})", r.run_id, r.path.display()))
        .collect();
    let mut text = String::new();
    text.push_str(&format!(
        "# baseline: {}\n# test: {}; correction: Holm over {} comparisons; alpha = {}\n\
         # topics: {} evaluated in every run; ▲/▼ = significantly better/worse than the \
         baseline; p = Holm-adjusted p-value\n",
        names[0],
        describe(s),
        raw.len(),
        s.alpha,
        topics.len()
    ));
    let width = slots
        .iter()
        .map(|&i| set.slots()[i].name.len())
        .max()
        .unwrap_or(7)
        .max(7);
    text.push_str(&format!("{:<width$}", "measure"));
    for (r, run) in runs.iter().enumerate() {
        let label = if r == 0 {
            format!("{} (baseline)", run.run_id)
        } else {
            run.run_id.clone()
        };
        text.push_str(&format!("  {label:<24}"));
    }
    text.push('\n');
    for (m, &slot) in slots.iter().enumerate() {
        text.push_str(&format!("{:<width$}", set.slots()[slot].name));
        text.push_str(&format!("  {:<24}", fmt(means[m][0], s.precision)));
        for r in 1..runs.len() {
            let p = adjusted[m * (runs.len() - 1) + r - 1];
            let mark = if p <= s.alpha {
                if means[m][r] > means[m][0] {
                    "▲"
                } else {
                    "▼"
                }
            } else {
                " "
            };
            let cell = format!("{} {mark} p={p:.4}", fmt(means[m][r], s.precision));
            text.push_str(&format!("  {cell:<24}"));
        }
        text.push('\n');
    }
    out.write_all(text.as_bytes()).map_err(TrecError::Output)
}
