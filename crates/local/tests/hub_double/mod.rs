//! A test double of the Hugging Face Hub's file endpoints, on 127.0.0.1, speaking the wire
//! format the real Hub speaks to `huggingface_hub`'s `hf_hub_download`:
//!
//! * `HEAD`/`GET /{org}/{name}/resolve/{revision}/{file}` — `X-Repo-Commit` on every answer
//!   about an existing revision; a regular file answers 200 with its git blob id as `ETag`; a
//!   LFS file (weights) answers 302 to a CDN on another origin with `X-Linked-Etag` (its
//!   sha256) and `X-Linked-Size`.
//! * Errors with the Hub's `X-Error-Code`/`X-Error-Message`: 404 `EntryNotFound` (with
//!   `X-Repo-Commit`), 404 `RevisionNotFound`, 401 `RepoNotFound` without a token (404 with
//!   one), 401 `Invalid credentials in Authorization header` for a wrong token on a private
//!   repository, 401/403 `GatedRepo` for a gated one.
//! * A renamed repository answers 307 with a relative `Location` to its new name.
//!
//! Every request is recorded (method, path, `Authorization`, which server), so tests can check
//! where the token went. Dropping the double stops both servers (their ports then refuse
//! connections).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

/// Who may read a repository.
#[derive(Clone, Debug)]
pub enum Access {
    /// Anyone.
    Public,
    /// Only requests with `Authorization: Bearer {token}`.
    Private(String),
    /// A gated model: only `Bearer {token}` has been granted access.
    Gated(String),
}

/// A model repository at one commit.
#[derive(Clone, Debug)]
pub struct Repo {
    /// `ORG/NAME`.
    pub name: String,
    /// The commit `main` points to.
    pub commit: String,
    /// Relative path → content.
    pub files: BTreeMap<String, Vec<u8>>,
    pub access: Access,
}

impl Repo {
    /// A public repository with `files`.
    pub fn public(name: &str, commit: &str, files: BTreeMap<String, Vec<u8>>) -> Repo {
        Repo {
            name: name.into(),
            commit: commit.into(),
            files,
            access: Access::Public,
        }
    }
}

/// Every file of `dir` (recursively), by relative `/`-separated path.
pub fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// sha256 hex of `data` (a LFS file's etag).
pub fn sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The etag of a regular file: the Hub sends its git blob id (sha1 of `blob {len}\0{data}`);
/// the double sends 40 hex digits of the sha256 of the same bytes, equally opaque to clients.
pub fn git_etag(data: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(format!("blob {}\0", data.len()));
    h.update(data);
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..40]
        .to_string()
}

/// Whether the Hub stores `file` in LFS (weights), served from the CDN.
pub fn is_lfs(file: &str) -> bool {
    [".safetensors", ".gguf", ".onnx", ".onnx_data", ".bin"]
        .iter()
        .any(|x| file.ends_with(x))
}

/// One request the double received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    /// Received by the CDN rather than the Hub.
    pub cdn: bool,
}

#[derive(Default)]
struct State {
    repos: Vec<Repo>,
    renamed: BTreeMap<String, String>,
    seen: Vec<Seen>,
    corrupt: bool,
}

/// The running double: the Hub at [`HubDouble::url`], its CDN at another port.
pub struct HubDouble {
    /// The Hub's base URL (what `HF_ENDPOINT` would be).
    pub url: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    addrs: Vec<std::net::SocketAddr>,
    threads: Vec<JoinHandle<()>>,
}

impl HubDouble {
    /// Starts the Hub and its CDN serving `repos`.
    pub fn start(repos: Vec<Repo>) -> HubDouble {
        let state = Arc::new(Mutex::new(State {
            repos,
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let hub = TcpListener::bind("127.0.0.1:0").unwrap();
        let cdn = TcpListener::bind("127.0.0.1:0").unwrap();
        let (hub_addr, cdn_addr) = (hub.local_addr().unwrap(), cdn.local_addr().unwrap());
        let cdn_url = format!("http://{cdn_addr}");
        let mut threads = Vec::new();
        for (listener, is_cdn) in [(hub, false), (cdn, true)] {
            let (state, stop, cdn_url) = (state.clone(), stop.clone(), cdn_url.clone());
            threads.push(std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(conn) = conn {
                        serve(conn, &state, is_cdn, &cdn_url);
                    }
                }
            }));
        }
        HubDouble {
            url: format!("http://{hub_addr}"),
            state,
            stop,
            addrs: vec![hub_addr, cdn_addr],
            threads,
        }
    }

    /// Answers for `old` (`ORG/NAME`) with a 307 to `new`, as for a renamed repository.
    pub fn rename(&self, old: &str, new: &str) {
        self.state
            .lock()
            .unwrap()
            .renamed
            .insert(old.into(), new.into());
    }

    /// From now on the CDN flips one byte of what it serves.
    pub fn corrupt_downloads(&self) {
        self.state.lock().unwrap().corrupt = true;
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Stops both servers; their ports refuse connections afterwards.
    pub fn stop(&mut self) {
        if self.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        for a in &self.addrs {
            let _ = TcpStream::connect(a);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for HubDouble {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
    fn header(mut self, k: &str, v: impl Into<String>) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }
    fn error(status: u16, code: Option<&str>, message: &str) -> Reply {
        let mut r = Reply::new(status).header("X-Error-Message", message);
        if let Some(code) = code {
            r = r.header("X-Error-Code", code);
        }
        r.body = format!("{{\"error\":\"{message}\"}}").into_bytes();
        r
    }
}

fn serve(conn: TcpStream, state: &Mutex<State>, is_cdn: bool, cdn_url: &str) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut authorization = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_string());
            }
        }
    }
    let reply = {
        let mut st = state.lock().unwrap();
        st.seen.push(Seen {
            method: method.clone(),
            path: path.clone(),
            authorization: authorization.clone(),
            cdn: is_cdn,
        });
        if is_cdn {
            cdn_reply(&st, &path)
        } else {
            hub_reply(&st, &path, authorization.as_deref(), cdn_url)
        }
    };
    let mut out = conn;
    let mut head = format!("HTTP/1.1 {} X\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    let _ = out.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = out.write_all(&reply.body);
    }
    let _ = out.flush();
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn hub_reply(st: &State, path: &str, auth: Option<&str>, cdn_url: &str) -> Reply {
    let path = path.split('?').next().unwrap_or(path);
    let segs: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    let [org, name, "resolve", rev, file] = segs.as_slice() else {
        return Reply::error(404, None, "Not Found");
    };
    let repo_id = format!("{org}/{name}");
    if let Some(new) = st.renamed.get(&repo_id) {
        return Reply::new(307).header("Location", format!("/{new}/resolve/{rev}/{file}"));
    }
    let file = percent_decode(file);
    let rev = percent_decode(rev);
    let not_found = || {
        let status = if auth.is_some() { 404 } else { 401 };
        Reply::error(status, Some("RepoNotFound"), "Repository not found")
    };
    let Some(repo) = st.repos.iter().find(|r| r.name == repo_id) else {
        return not_found();
    };
    let bearer = auth.and_then(|a| a.strip_prefix("Bearer "));
    match &repo.access {
        Access::Public => {}
        Access::Private(t) => match bearer {
            None => return not_found(),
            Some(b) if b != t => {
                return Reply::error(401, None, "Invalid credentials in Authorization header")
            }
            Some(_) => {}
        },
        Access::Gated(t) => match bearer {
            None => {
                return Reply::error(
                    401,
                    Some("GatedRepo"),
                    &format!("Access to model {repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in."),
                )
            }
            Some(b) if b != t => {
                return Reply::error(
                    403,
                    Some("GatedRepo"),
                    &format!("Access to model {repo_id} is restricted and you are not in the authorized list. Visit https://huggingface.co/{repo_id} to ask for access."),
                )
            }
            Some(_) => {}
        },
    }
    if rev != "main" && rev != repo.commit {
        return Reply::error(
            404,
            Some("RevisionNotFound"),
            &format!("Invalid rev id: {rev}"),
        );
    }
    let Some(data) = repo.files.get(&file) else {
        return Reply::error(404, Some("EntryNotFound"), "Entry not found")
            .header("X-Repo-Commit", repo.commit.clone());
    };
    if is_lfs(&file) {
        let sha = sha256(data);
        let location = format!(
            "{cdn_url}/repos/{}/{sha}?X-Amz-Signature=abc123&Expires=9999999999",
            &sha[..2]
        );
        let mut r = Reply::new(302)
            .header("Location", location.clone())
            .header("X-Repo-Commit", repo.commit.clone())
            .header("ETag", format!("\"{}\"", git_etag(sha.as_bytes())))
            .header("X-Linked-Etag", format!("\"{sha}\""))
            .header("X-Linked-Size", data.len().to_string());
        r.body = format!("Found. Redirecting to {location}").into_bytes();
        r
    } else {
        let mut r = Reply::new(200)
            .header("X-Repo-Commit", repo.commit.clone())
            .header("ETag", format!("\"{}\"", git_etag(data)));
        r.body = data.clone();
        r
    }
}

fn cdn_reply(st: &State, path: &str) -> Reply {
    let path = path.split('?').next().unwrap_or(path);
    let sha = path.rsplit('/').next().unwrap_or("");
    for repo in &st.repos {
        for data in repo.files.values() {
            if sha256(data) == sha {
                let mut r = Reply::new(200).header("ETag", format!("\"{sha}\""));
                r.body = data.clone();
                if st.corrupt {
                    r.body[0] ^= 0xff;
                }
                return r;
            }
        }
    }
    Reply::error(403, None, "AccessDenied")
}
