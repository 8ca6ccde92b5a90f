//! A loopback HTTP/1.1 server that answers each request with the next scripted reply: the
//! peer whose replies the `system_reply` and `judge_*` targets fuzz. One server per process,
//! on 127.0.0.1 only; every connection carries one request (`Connection: close`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};

/// One scripted reply: a status and the raw body bytes.
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

struct Server {
    url: String,
    script: Mutex<VecDeque<Reply>>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                handle(stream);
            }
        });
        Server {
            url,
            script: Mutex::new(VecDeque::new()),
        }
    })
}

/// The server's base URL (`http://127.0.0.1:PORT`).
pub fn url() -> String {
    server().url.clone()
}

/// Replaces the script: the next requests get these replies in order, then `404` with an
/// empty body.
pub fn script(replies: Vec<Reply>) {
    *server().script.lock().expect("script lock") = replies.into();
}

/// Splits a fuzz input into replies, one a line: a line `HTTP NNN BODY` is answered with
/// status `NNN` (100–599), any other line with `200` and the whole line as the body.
pub fn replies(data: &[u8]) -> Vec<Reply> {
    data.split(|&b| b == b'\n')
        .map(|line| {
            let status = line
                .strip_prefix(b"HTTP ")
                .and_then(|r| r.get(..3))
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| d.parse::<u16>().ok())
                .filter(|s| (100..600).contains(s) && line.get(8).is_none_or(|&b| b == b' '));
            match status {
                Some(status) => Reply {
                    status,
                    body: line.get(9..).unwrap_or_default().to_vec(),
                },
                None => Reply {
                    status: 200,
                    body: line.to_vec(),
                },
            }
        })
        .collect()
}

fn handle(stream: TcpStream) {
    let mut reader = BufReader::new(&stream);
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let reply = server()
        .script
        .lock()
        .expect("script lock")
        .pop_front()
        .unwrap_or(Reply {
            status: 404,
            body: Vec::new(),
        });
    // 1xx and 204/304 replies have no body in HTTP/1.1: send them as sent by a real server.
    let bodiless = reply.status < 200 || reply.status == 204 || reply.status == 304;
    let mut head = format!("HTTP/1.1 {} Fuzz\r\nConnection: close\r\n", reply.status);
    if !bodiless {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            reply.body.len()
        ));
    }
    head.push_str("\r\n");
    let mut stream = &stream;
    let _ = stream.write_all(head.as_bytes());
    if !bodiless {
        let _ = stream.write_all(&reply.body);
    }
    let _ = stream.flush();
}
