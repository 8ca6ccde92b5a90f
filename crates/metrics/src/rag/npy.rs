//! A reader for NumPy's `.npy` format (version 1.0, 2.0 and 3.0 headers) holding a 2-D
//! `float32` or `float64` array in C order — what `numpy.save` writes for a matrix of
//! embeddings. The bytes are parsed from memory; reading the file is the caller's job.
//!
//! Format: the magic `\x93NUMPY`, a major and minor version byte, the header length (2 bytes
//! little-endian for version 1, 4 bytes for versions 2 and 3), then a Python dict literal with
//! `descr` (`'<f4'`, `'<f8'`, `'>f4'` or `'>f8'`), `fortran_order` and `shape`, padded with
//! spaces and a newline; the data follows (NumPy's `format.py`, "NPY format").

use thiserror::Error;

/// A dense row-major matrix of `f64` (a `float32` file is widened exactly).
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Number of rows (vectors).
    pub rows: usize,
    /// Number of columns (dimensions).
    pub cols: usize,
    /// `rows × cols` values, row after row.
    pub data: Vec<f64>,
}

impl Matrix {
    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
}

/// Why a `.npy` buffer could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum NpyError {
    /// The magic string is missing.
    #[error("not a .npy file (no \\x93NUMPY magic)")]
    NotNpy,
    /// The file ends inside the header or the data.
    #[error("truncated .npy file: {0}")]
    Truncated(&'static str),
    /// A header version this reader does not know.
    #[error("unsupported .npy version {0}.{1}")]
    Version(u8, u8),
    /// The header dict could not be parsed.
    #[error("malformed .npy header: {0}")]
    Header(String),
    /// The array is not float32/float64, not C-ordered or not 2-D.
    #[error("unsupported array: {0} (expected a 2-D float32 or float64 array in C order)")]
    Unsupported(String),
    /// The data length does not match the shape.
    #[error("the data holds {found} bytes where the shape needs {expected}")]
    Length {
        /// Bytes the shape and dtype need.
        expected: usize,
        /// Bytes present after the header.
        found: usize,
    },
}

/// Parses a `.npy` buffer holding a 2-D float32 or float64 C-order array.
///
/// # Errors
///
/// See [`NpyError`]: a missing magic, a truncated buffer, an unknown version, a malformed
/// header, another dtype, Fortran order, a shape that is not 2-D, or trailing bytes.
///
/// ```
/// use oloproof_metrics::rag::npy::parse_npy;
///
/// // numpy.save of np.array([[1.0, 2.0]], dtype="<f8")
/// let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
/// let mut header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }".to_string();
/// while (10 + header.len() + 1) % 64 != 0 { header.push(' '); }
/// header.push('\n');
/// bytes.extend((header.len() as u16).to_le_bytes());
/// bytes.extend(header.as_bytes());
/// bytes.extend(1.0f64.to_le_bytes());
/// bytes.extend(2.0f64.to_le_bytes());
/// let m = parse_npy(&bytes)?;
/// assert_eq!((m.rows, m.cols, m.row(0)), (1, 2, &[1.0, 2.0][..]));
/// # Ok::<(), oloproof_metrics::rag::npy::NpyError>(())
/// ```
pub fn parse_npy(bytes: &[u8]) -> Result<Matrix, NpyError> {
    if bytes.len() < 8 || &bytes[..6] != b"\x93NUMPY" {
        return Err(NpyError::NotNpy);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len, start) = match major {
        1 => {
            let b = bytes
                .get(8..10)
                .ok_or(NpyError::Truncated("header length"))?;
            (u16::from_le_bytes([b[0], b[1]]) as usize, 10)
        }
        2 | 3 => {
            let b = bytes
                .get(8..12)
                .ok_or(NpyError::Truncated("header length"))?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        _ => return Err(NpyError::Version(major, minor)),
    };
    let header = bytes
        .get(start..start + len)
        .ok_or(NpyError::Truncated("header"))?;
    let header = std::str::from_utf8(header).map_err(|e| NpyError::Header(e.to_string()))?;
    let descr = dict_value(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let (big_endian, width) = match descr {
        "<f4" => (false, 4),
        "<f8" => (false, 8),
        ">f4" => (true, 4),
        ">f8" => (true, 8),
        other => return Err(NpyError::Unsupported(format!("dtype {other}"))),
    };
    match dict_value(header, "fortran_order")? {
        "False" => {}
        "True" => return Err(NpyError::Unsupported("Fortran order".into())),
        other => return Err(NpyError::Header(format!("fortran_order {other}"))),
    }
    let shape = dict_value(header, "shape")?;
    let dims: Vec<usize> = shape
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|_| NpyError::Header(format!("shape {shape}")))
        })
        .collect::<Result<_, _>>()?;
    let [rows, cols] = dims[..] else {
        return Err(NpyError::Unsupported(format!("shape {shape}")));
    };
    let data = &bytes[start + len..];
    let expected = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(width))
        .ok_or_else(|| NpyError::Header(format!("shape {shape} overflows")))?;
    if data.len() != expected {
        return Err(NpyError::Length {
            expected,
            found: data.len(),
        });
    }
    let values = data
        .chunks_exact(width)
        .map(|c| match (width, big_endian) {
            (4, false) => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            (4, true) => f64::from(f32::from_be_bytes([c[0], c[1], c[2], c[3]])),
            (_, false) => f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
            (_, true) => f64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        })
        .collect();
    Ok(Matrix {
        rows,
        cols,
        data: values,
    })
}

/// The raw text of `key`'s value in the header dict literal.
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str, NpyError> {
    let missing = || NpyError::Header(format!("no '{key}' key"));
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))
        .ok_or_else(missing)?;
    let rest = header[at + key.len() + 2..].trim_start();
    let rest = rest.strip_prefix(':').ok_or_else(missing)?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else if let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
        rest[1..].find(q).map(|i| i + 2)
    } else {
        rest.find([',', '}'])
    }
    .ok_or_else(|| NpyError::Header(format!("unterminated '{key}'")))?;
    Ok(rest[..end].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8], version: u8) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        header.push('\n');
        let mut b = b"\x93NUMPY".to_vec();
        b.push(version);
        b.push(0);
        if version == 1 {
            b.extend((header.len() as u16).to_le_bytes());
        } else {
            b.extend((header.len() as u32).to_le_bytes());
        }
        b.extend(header.as_bytes());
        b.extend(data);
        b
    }

    #[test]
    fn reads_f4_and_big_endian_f8_and_version_2() {
        let data: Vec<u8> = [1.5f32, -2.0, 0.25, 4.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let m = parse_npy(&npy("<f4", "(2, 2)", &data, 1)).unwrap();
        assert_eq!(m.row(1), &[0.25, 4.0]);
        let data: Vec<u8> = [3.0f64].iter().flat_map(|x| x.to_be_bytes()).collect();
        let m = parse_npy(&npy(">f8", "(1, 1)", &data, 2)).unwrap();
        assert_eq!(m.data, vec![3.0]);
        let m = parse_npy(&npy("<f8", "(0, 3)", &[], 1)).unwrap();
        assert_eq!((m.rows, m.cols), (0, 3));
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert_eq!(parse_npy(b"hello"), Err(NpyError::NotNpy));
        assert!(matches!(
            parse_npy(&npy("<i8", "(1, 1)", &[0; 8], 1)),
            Err(NpyError::Unsupported(_))
        ));
        assert!(matches!(
            parse_npy(&npy("<f8", "(2,)", &[0; 16], 1)),
            Err(NpyError::Unsupported(_))
        ));
        assert_eq!(
            parse_npy(&npy("<f8", "(1, 2)", &[0; 8], 1)),
            Err(NpyError::Length {
                expected: 16,
                found: 8
            })
        );
        let fortran = npy("<f8", "(1, 1)", &[0; 8], 1);
        let text = String::from_utf8_lossy(&fortran).replace("False", "True ");
        assert!(matches!(
            parse_npy(text.as_bytes()),
            Err(NpyError::NotNpy | NpyError::Unsupported(_))
        ));
    }
}
