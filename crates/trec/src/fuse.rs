//! `oloproof fuse`: reading runs, fusing each topic with [`oloproof_metrics::fusion`], and
//! writing a TREC run.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};

use oloproof_metrics::fusion::{fuse, FusionMethod, FusionOptions, Normalization};
use oloproof_metrics::ranking::Retrieved;

use crate::cli::FuseArgs;
use crate::error::TrecError;
use crate::parse::read_run;

/// Fusion method on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MethodArg {
    /// Reciprocal rank fusion (weighted with `--weights`).
    #[default]
    Rrf,
    /// CombSUM.
    Combsum,
    /// CombMNZ.
    Combmnz,
    /// CombMAX.
    Combmax,
    /// CombMIN.
    Combmin,
    /// CombMED.
    Combmed,
    /// CombANZ.
    Combanz,
    /// Weighted sum of normalised scores (`--weights`).
    Wsum,
    /// `α·first + (1 − α)·second` (`--alpha`).
    Convex,
}

/// Score normalisation on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum NormArg {
    /// No normalisation.
    None,
    /// Min-max.
    #[default]
    Minmax,
    /// Z-score.
    Zscore,
    /// Divide by the sum.
    Sum,
    /// Divide by the maximum.
    Max,
    /// Rank-based `(n − r + 1) / n`.
    Rank,
}

pub(crate) fn fuse_files(args: &FuseArgs, out: &mut dyn Write) -> Result<(), TrecError> {
    let method = match args.method {
        MethodArg::Rrf => FusionMethod::Rrf { k: args.k },
        MethodArg::Combsum => FusionMethod::CombSum,
        MethodArg::Combmnz => FusionMethod::CombMnz,
        MethodArg::Combmax => FusionMethod::CombMax,
        MethodArg::Combmin => FusionMethod::CombMin,
        MethodArg::Combmed => FusionMethod::CombMed,
        MethodArg::Combanz => FusionMethod::CombAnz,
        MethodArg::Wsum => FusionMethod::WeightedSum,
        MethodArg::Convex => FusionMethod::Convex { alpha: args.alpha },
    };
    if matches!(method, FusionMethod::Convex { .. }) && args.runs.len() != 2 {
        return Err(TrecError::Usage(
            "--method convex needs exactly two runs".into(),
        ));
    }
    if !args.weights.is_empty() && args.weights.len() != args.runs.len() {
        return Err(TrecError::Usage(format!(
            "--weights has {} values for {} runs",
            args.weights.len(),
            args.runs.len()
        )));
    }
    let normalization = match args.norm {
        NormArg::None => Normalization::None,
        NormArg::Minmax => Normalization::MinMax,
        NormArg::Zscore => Normalization::ZScore,
        NormArg::Sum => Normalization::Sum,
        NormArg::Max => Normalization::Max,
        NormArg::Rank => Normalization::Rank,
    };
    let options = FusionOptions {
        method,
        normalization,
        weights: args.weights.clone(),
        depth: Some(args.depth),
    };
    let runs = args
        .runs
        .iter()
        .map(|p| read_run(p))
        .collect::<Result<Vec<_>, _>>()?;
    let topics: BTreeSet<&[u8]> = runs
        .iter()
        .flat_map(|r| r.topics.keys().map(Vec::as_slice))
        .collect();
    let mut file_out;
    let w: &mut dyn Write = match &args.output {
        Some(p) => {
            file_out = BufWriter::new(File::create(p).map_err(|source| TrecError::Io {
                path: p.clone(),
                source,
            })?);
            &mut file_out
        }
        None => out,
    };
    let mut buf = Vec::with_capacity(1 << 16);
    for topic in topics {
        let rankings: Vec<Vec<Retrieved<&[u8]>>> = runs
            .iter()
            .map(|r| {
                r.topics
                    .get(topic)
                    .map(|d| d.iter().map(|(doc, s)| Retrieved::new(doc, s)).collect())
                    .unwrap_or_default()
            })
            .collect();
        let fused = fuse(&rankings, &options);
        for (i, r) in fused.iter().enumerate() {
            buf.extend_from_slice(topic);
            buf.extend_from_slice(b" Q0 ");
            buf.extend_from_slice(r.doc);
            let _ = writeln!(buf, " {} {} {}", i + 1, r.score, args.run_id);
        }
        if buf.len() > 1 << 16 {
            w.write_all(&buf).map_err(TrecError::Output)?;
            buf.clear();
        }
    }
    w.write_all(&buf).map_err(TrecError::Output)?;
    w.flush().map_err(TrecError::Output)
}
