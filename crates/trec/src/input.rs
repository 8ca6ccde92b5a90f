//! Reading input at the edge: memory-mapped files, `.gz` files and standard input (`-`).
//!
//! Runs are consumed block by block (a block ends at a newline), so memory holds the parsed,
//! compact form of the run rather than its text: mapped blocks are released with
//! `MADV_DONTNEED` as soon as they are parsed, and compressed or piped input is read into a
//! reusable buffer.
#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use memmap2::Mmap;

use crate::error::TrecError;

/// Size of one block handed to the parser.
pub(crate) const BLOCK: usize = 32 << 20;

/// A whole input held in memory: mapped or owned.
pub(crate) enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TrecError + '_ {
    move |source| TrecError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn is_gzip(path: &Path, head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || path.extension().is_some_and(|e| e == "gz")
}

/// Maps `file` read-only. Mapping is sound as long as nobody truncates the file while we
/// read it, the same assumption trec_eval makes.
fn map(file: &File) -> io::Result<Mmap> {
    // SAFETY: the mapping is read-only and private to this process; a concurrent truncation
    // of the file by another process is outside what the command supports.
    unsafe { Mmap::map(file) }
}

/// Reads a whole input (used for qrels, which are small next to runs).
pub(crate) fn read_all(path: &Path) -> Result<Bytes, TrecError> {
    if is_stdin(path) {
        let mut v = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(io_err(path))?;
        return Ok(Bytes::Owned(v));
    }
    let file = File::open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    if len == 0 {
        return Ok(Bytes::Owned(Vec::new()));
    }
    let m = map(&file).map_err(io_err(path))?;
    if is_gzip(path, &m) {
        let mut v = Vec::new();
        flate2::read::MultiGzDecoder::new(&m[..])
            .read_to_end(&mut v)
            .map_err(io_err(path))?;
        return Ok(Bytes::Owned(v));
    }
    Ok(Bytes::Mapped(m))
}

/// Calls `f` on consecutive blocks of the input, each ending just after a newline (the last
/// one may not), until `f` returns `false`. Mapped blocks are dropped from memory after `f`
/// returns.
pub(crate) fn for_each_block(
    path: &Path,
    mut f: impl FnMut(&[u8]) -> Result<bool, TrecError>,
) -> Result<(), TrecError> {
    if is_stdin(path) {
        return stream(io::stdin().lock(), path, f);
    }
    let file = File::open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    if len == 0 {
        return Ok(());
    }
    let m = map(&file).map_err(io_err(path))?;
    if is_gzip(path, &m) {
        return stream(flate2::read::MultiGzDecoder::new(&m[..]), path, f);
    }
    let _ = m.advise(memmap2::Advice::Sequential);
    let mut start = 0;
    while start < m.len() {
        let end = cut(&m[..], start);
        let more = f(&m[start..end])?;
        // SAFETY: DONTNEED on a read-only file mapping only drops pages from this process;
        // later reads fault them back in from the file. No borrowed slice outlives `f`.
        unsafe {
            let page = 4096;
            let from = start / page * page;
            let _ = m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, end - from);
        }
        if !more {
            break;
        }
        start = end;
    }
    Ok(())
}

/// End of the block that starts at `start`: just after the last newline within `BLOCK` bytes.
fn cut(data: &[u8], start: usize) -> usize {
    let limit = (start + BLOCK).min(data.len());
    if limit == data.len() {
        return limit;
    }
    match memchr::memrchr(b'\n', &data[start..limit]) {
        Some(i) => start + i + 1,
        None => match memchr::memchr(b'\n', &data[limit..]) {
            Some(i) => limit + i + 1,
            None => data.len(),
        },
    }
}

fn stream(
    mut r: impl Read,
    path: &Path,
    mut f: impl FnMut(&[u8]) -> Result<bool, TrecError>,
) -> Result<(), TrecError> {
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK + (1 << 20));
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut chunk).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() >= BLOCK {
            if let Some(i) = memchr::memrchr(b'\n', &buf) {
                if !f(&buf[..=i])? {
                    return Ok(());
                }
                buf.drain(..=i);
            }
        }
    }
    if !buf.is_empty() {
        f(&buf)?;
    }
    Ok(())
}
