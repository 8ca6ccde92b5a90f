//! The `http:` connector against a real HTTP server speaking the worker protocol.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;

struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_system_over_http() {
    let (_tmp, dir) = project("tests/systems/http");
    let mut child = Command::new("python3")
        .arg("server.py")
        .current_dir(&dir)
        .env(
            "PYTHONPATH",
            format!(
                "{}:{}",
                repo().join("python").display(),
                repo().join("tests/systems/echo").display()
            ),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _server = Server(child);
    let port: u16 = first.trim().parse().expect("the server prints its port");
    let url = format!("system.rag.http=http://127.0.0.1:{port}/");
    let o = oloproof(&dir, &["run", ".", "--set", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Stages: retrieve 0 hit/4 miss; generate 0 hit/4 miss"),
        "{out}"
    );
    assert!(out.contains("│ citations_valid │ 100.0%"), "{out}");
}

#[test]
fn an_unreachable_system_is_reported() {
    let (_tmp, dir) = project("tests/systems/http");
    let o = oloproof(&dir, &["run", "."]);
    assert_eq!(o.status.code(), Some(4));
    assert!(
        stderr(&o).contains("cannot reach http://127.0.0.1:9/unused"),
        "{}",
        stderr(&o)
    );
    let bad = oloproof(
        &dir,
        &[
            "run",
            ".",
            "--set",
            "system.rag.http=https://example.invalid/",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("is not an http:// URL"),
        "{}",
        stderr(&bad)
    );
}
