//! trec_eval's output: `%-22s\t%s\t%6.4f` lines, per topic (`-q`) then `all`.

use std::io::{self, Write};

use oloproof_metrics::ranking::{Aggregate, Format, MeasureSet};

use crate::driver::RunResult;

/// How values are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Precision {
    /// `%6.4f`, byte-identical to trec_eval.
    #[default]
    Standard,
    /// The shortest decimal that reads back as the same 64-bit float.
    Full,
}

fn float(buf: &mut Vec<u8>, v: f64, precision: Precision) {
    if v.is_nan() {
        let s = if v.is_sign_negative() { "-nan" } else { "nan" };
        let _ = write!(buf, "{s:>6}");
        return;
    }
    let _ = match precision {
        Precision::Standard => write!(buf, "{v:6.4}"),
        Precision::Full => write!(buf, "{v}"),
    };
}

fn line(buf: &mut Vec<u8>, name: &str, topic: &str) {
    let _ = write!(buf, "{name:<22}\t{topic}\t");
}

/// Writes one run's evaluation as trec_eval does.
pub(crate) fn write_run(
    out: &mut dyn Write,
    set: &MeasureSet,
    res: &RunResult,
    per_topic: bool,
    summary: bool,
    precision: Precision,
) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    if per_topic {
        for (topic, tv) in &res.topics {
            for (slot, &v) in set.slots().iter().zip(&tv.values) {
                if !slot.per_topic {
                    continue;
                }
                line(&mut buf, &slot.name, topic);
                match slot.format {
                    Format::Long => {
                        let _ = write!(buf, "{}", v as i64);
                    }
                    Format::RelString => {
                        let _ = write!(buf, "'{}'", tv.relstring.as_deref().unwrap_or(""));
                    }
                    _ => float(&mut buf, v, precision),
                }
                buf.push(b'\n');
            }
            if buf.len() > 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
    }
    if summary {
        for (slot, &v) in set.slots().iter().zip(&res.summary) {
            match (slot.format, slot.aggregate) {
                (Format::RunId, _) => {
                    line(&mut buf, "runid", "all");
                    buf.extend_from_slice(res.run_id.as_bytes());
                }
                (_, Aggregate::None) => continue,
                (Format::Long, _) => {
                    line(&mut buf, &slot.name, "all");
                    let _ = write!(buf, "{}", v as i64);
                }
                _ => {
                    line(&mut buf, &slot.name, "all");
                    float(&mut buf, v, precision);
                }
            }
            buf.push(b'\n');
        }
    }
    out.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_like_floats() {
        let mut b = Vec::new();
        float(&mut b, 0.25, Precision::Standard);
        float(&mut b, -358.0, Precision::Standard);
        float(&mut b, 0.1, Precision::Full);
        assert_eq!(String::from_utf8(b).unwrap(), "0.2500-358.00000.1");
    }

    /// `printf("%6.4f")` rounds the exact binary value: exact halves (odd multiples of 1/32)
    /// go to the even digit, and a decimal edge such as 0.00225 goes the way its stored
    /// double lies (below, for 9 / 4000).
    #[test]
    fn rounding_edges_print_as_printf_does() {
        let cases = [
            (1.0 / 32.0, "0.0312"),
            (3.0 / 32.0, "0.0938"),
            (5.0 / 32.0, "0.1562"),
            (33.0 / 32.0, "1.0312"),
            (9.0 / 4000.0, "0.0022"),
            (1.0 / 160.0, "0.0063"),
            (3.0 / 160.0, "0.0187"),
        ];
        for (v, want) in cases {
            let mut b = Vec::new();
            float(&mut b, v, Precision::Standard);
            assert_eq!(String::from_utf8(b).unwrap(), want, "{v:e}");
        }
    }
}
