//! The work of `oloproof import` on an OTLP JSON Lines file, without the CLI: read in blocks of
//! whole lines, decode them (on every core, or on one with `--serial`), assemble and write the trace
//! records (to `OUT`, or counted and dropped). A cheap release build for bench/import.sh's
//! measurements (the CLI's release build takes long):
//!
//! ```text
//! cargo run --release -p oloproof-traces --example import_throughput -- FILE [OUT] [--serial]
//! ```
//!
//! Prints the spans read, the records written and the wall time.

use std::io::{BufWriter, Write};
use std::time::Instant;

use oloproof_traces::lines::LineBlocks;
use oloproof_traces::span::{Decoded, Location};
use oloproof_traces::{AssembleOptions, Assembler};

/// The CLI's allocator, so that the example measures what `oloproof import` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(clippy::print_stdout)]
fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let serial = args.iter().any(|a| a == "--serial");
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let Some(path) = paths.first() else {
        eprintln_usage();
        std::process::exit(2);
    };
    let started = Instant::now();
    let mut sink: Box<dyn Write> = match paths.get(1) {
        Some(out) => Box::new(BufWriter::new(std::fs::File::create(out)?)),
        None => Box::new(std::io::sink()),
    };
    let mut assembler = Assembler::new(AssembleOptions::default(), None);
    let write = |records: Vec<oloproof_traces::RecordLine>, sink: &mut Box<dyn Write>| {
        for r in records {
            sink.write_all(&r.json)?;
        }
        std::io::Result::Ok(())
    };
    // As the CLI does: one thread reads and decodes batches of lines, this one assembles them
    // in line order and writes.
    let file = std::fs::File::open(path)?;
    let name = path.to_string();
    std::thread::scope(|scope| -> std::io::Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<Decoded>>>(1);
        scope.spawn(move || {
            let mut blocks = LineBlocks::new(file, 1 << 20);
            loop {
                let block = match blocks.next_block() {
                    Ok(Some(block)) => block,
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let decoded = if serial {
                    decode_serial(&block.lines, block.first_line, &name)
                } else {
                    oloproof_traces::decode_json_lines(&block.lines, block.first_line, &name)
                };
                if tx.send(Ok(decoded)).is_err() {
                    return;
                }
            }
        });
        for decoded in rx {
            let decoded = decoded?;
            if serial {
                for d in decoded {
                    write(assembler.push(d), &mut sink)?;
                }
            } else {
                write(assembler.push_batch(decoded), &mut sink)?;
            }
        }
        Ok(())
    })?;
    let (records, summary) = assembler.finish();
    write(records, &mut sink)?;
    sink.flush()?;
    println!(
        "{} spans read, {} used, {} records, {:.2} s",
        summary.spans_read,
        summary.spans_used,
        summary.records,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The lines decoded on this thread alone.
fn decode_serial(lines: &[&str], first_line: usize, file: &str) -> Vec<Decoded> {
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let at = Location {
                file: file.to_string(),
                line: Some(first_line + i),
                byte_offset: None,
            };
            let mut d = Decoded::default();
            oloproof_traces::decode_json_line(line, &at, &mut d);
            d
        })
        .collect()
}

#[allow(clippy::print_stderr)]
fn eprintln_usage() {
    eprintln!("usage: import_throughput FILE [OUT] [--serial]");
}
