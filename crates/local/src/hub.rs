//! `hf://` model paths: a model folder or a GGUF file of a Hugging Face Hub repository,
//! downloaded into (or found in) the Hugging Face hub cache that Python's `huggingface_hub`
//! uses, so that both find the same files.
//!
//! * `hf://ORG/NAME[@REVISION]` — a model folder: `config.json`, `tokenizer.json` and
//!   `model.safetensors` (without it: `model.onnx`, else `onnx/model.onnx`), and those of
//!   `tokenizer_config.json`, `special_tokens_map.json`, `sentence_bert_config.json`,
//!   `modules.json` and `1_Pooling/config.json` the repository has.
//! * `hf://ORG/NAME[@REVISION]/FILE.gguf` — one GGUF file (`kind: generate`).
//!
//! `REVISION` is a branch, tag or commit (default `main`); one holding a `/` is written with
//! `%2F` (`@refs%2Fpr%2F3`) or, for `refs/pr/N` and `refs/convert/NAME`, as is — the
//! `hf://` syntax of huggingface_hub's `HfFileSystem`.
//!
//! **Cache layout** (huggingface_hub's `hf_hub_download`): `{cache}/models--ORG--NAME/` holds
//! `blobs/{etag}` (the content; a LFS file's etag is its sha256, checked on download),
//! `snapshots/{commit}/{file}` (relative symlinks to the blobs; copies where symlinks
//! fail), `refs/{revision}` (the commit a branch or tag pointed to) and
//! `.no_exist/{commit}/{file}` (files the Hub answered 404 `EntryNotFound` for).
//!
//! **Protocol**: `HEAD {endpoint}/ORG/NAME/resolve/{revision}/{file}`, following redirects
//! only within the endpoint's origin (a renamed repository), gives `X-Repo-Commit`,
//! `X-Linked-Etag` (else `ETag`), `X-Linked-Size` (else `Content-Length`) and, for a LFS
//! file, a `Location` on a CDN, from which the file is fetched with `GET`. The token goes to
//! the endpoint's origin only, never to the CDN. The first file fixes the commit and later
//! files are asked for at that commit, so a folder never mixes two commits. Which optional
//! files exist is decided by the Hub's 404 `EntryNotFound`, never by guessing.
//!
//! **Without the Hub**: with `HF_HUB_OFFLINE=1`, or when the first request fails for another
//! reason than a 404 (no network, 401/403, 5xx), the cached snapshot of the revision is used,
//! as huggingface_hub does; an optional file that is neither cached nor recorded as absent
//! then counts as absent (the cache may have been filled by a Python library that never asked
//! for it). Downloads need the `hub` cargo feature (on by default); a build without it reads
//! the cache only.
//!
//! ```
//! use oloproof_local::hub::{self, HubPath, HubSettings};
//! use oloproof_local::LocalError;
//!
//! let p = HubPath::parse("hf://TheBloke/SmolLM2-GGUF@v2/smollm2.Q4_1.gguf").unwrap();
//! assert_eq!((p.repo.as_str(), p.revision.as_str()), ("TheBloke/SmolLM2-GGUF", "v2"));
//! assert_eq!(p.file.as_deref(), Some("smollm2.Q4_1.gguf"));
//!
//! // Offline, a model that is not in the cache is a clear error naming it.
//! let dir = tempfile::tempdir().unwrap();
//! let settings = HubSettings {
//!     cache_dir: dir.path().into(),
//!     offline: true,
//!     ..HubSettings::from_vars(|_| None)
//! };
//! let err = hub::resolve("hf://org/model", &settings).unwrap_err();
//! assert!(matches!(err, LocalError::Hub(_)));
//! assert!(err.to_string().contains("hf://org/model@main"), "{err}");
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

/// The scheme of a Hub model path.
pub const SCHEME: &str = "hf://";

/// `HF_ENDPOINT`: the Hub's base URL.
pub const HF_ENDPOINT: &str = "HF_ENDPOINT";
/// `HF_HUB_CACHE`: the hub cache folder.
pub const HF_HUB_CACHE: &str = "HF_HUB_CACHE";
/// `HUGGINGFACE_HUB_CACHE`: the hub cache folder's older name (below `HF_HUB_CACHE`).
pub const HUGGINGFACE_HUB_CACHE: &str = "HUGGINGFACE_HUB_CACHE";
/// `HF_HOME`: the Hugging Face folder (the cache is its `hub/`, the token file its `token`).
pub const HF_HOME: &str = "HF_HOME";
/// `XDG_CACHE_HOME`: without `HF_HOME`, the Hugging Face folder is its `huggingface/`.
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
/// `HF_TOKEN`: the access token for private and gated repositories.
pub const HF_TOKEN: &str = "HF_TOKEN";
/// `HF_TOKEN_PATH`: the token file (default `$HF_HOME/token`, written by `hf auth login`).
pub const HF_TOKEN_PATH: &str = "HF_TOKEN_PATH";
/// `HF_HUB_OFFLINE`: `1`/`ON`/`YES`/`TRUE` for cache only.
pub const HF_HUB_OFFLINE: &str = "HF_HUB_OFFLINE";
/// `TRANSFORMERS_OFFLINE`: read when `HF_HUB_OFFLINE` is unset, as huggingface_hub does.
pub const TRANSFORMERS_OFFLINE: &str = "TRANSFORMERS_OFFLINE";

/// The Hub's default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Files of a model folder read when the repository has them.
pub const OPTIONAL_FILES: &[&str] = &[
    "tokenizer_config.json",
    "special_tokens_map.json",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
];

/// Where and how to reach the Hub: resolved once from the environment at the edge
/// ([`HubSettings::from_env`]) and passed down, so tests never touch process variables.
#[derive(Clone)]
pub struct HubSettings {
    /// The Hub's base URL without a trailing `/` (`HF_ENDPOINT`, default
    /// [`DEFAULT_ENDPOINT`]).
    pub endpoint: String,
    /// The hub cache folder (`HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`).
    pub cache_dir: PathBuf,
    /// The access token (`HF_TOKEN`, else the token file): sent as `Authorization: Bearer` to
    /// the endpoint's origin only, and never logged, shown (`Debug` redacts it) or put in an
    /// error.
    pub token: Option<String>,
    /// Cache only, no request (`HF_HUB_OFFLINE`).
    pub offline: bool,
}

impl fmt::Debug for HubSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubSettings")
            .field("endpoint", &self.endpoint)
            .field("cache_dir", &self.cache_dir)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("offline", &self.offline)
            .finish()
    }
}

impl HubSettings {
    /// The settings from this process's environment (see [`HubSettings::from_vars`]).
    pub fn from_env() -> HubSettings {
        HubSettings::from_vars(|name| std::env::var(name).ok())
    }

    /// The settings from the variables `var` returns (empty values count as unset), with
    /// huggingface_hub's precedence: [`HF_HUB_CACHE`] > [`HUGGINGFACE_HUB_CACHE`] >
    /// `$`[`HF_HOME`]`/hub` > `$`[`XDG_CACHE_HOME`]`/huggingface/hub` >
    /// `~/.cache/huggingface/hub` (a leading `~` is the home folder); [`HF_TOKEN`] > the
    /// file [`HF_TOKEN_PATH`] (default `$HF_HOME/token`); [`HF_HUB_OFFLINE`] (else
    /// [`TRANSFORMERS_OFFLINE`]) true for `1`, `ON`, `YES` or `TRUE`, any case.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> HubSettings {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let home = var("HOME")
            .or_else(|| var("USERPROFILE"))
            .map(PathBuf::from);
        let expand = |p: String| -> PathBuf {
            match (p.strip_prefix('~'), &home) {
                (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with(['/', '\\']) => {
                    home.join(rest.trim_start_matches(['/', '\\']))
                }
                _ => PathBuf::from(p),
            }
        };
        let hf_home = var(HF_HOME).map(&expand).unwrap_or_else(|| {
            var(XDG_CACHE_HOME)
                .map(&expand)
                .unwrap_or_else(|| home.clone().unwrap_or_default().join(".cache"))
                .join("huggingface")
        });
        let cache_dir = var(HF_HUB_CACHE)
            .or_else(|| var(HUGGINGFACE_HUB_CACHE))
            .map(&expand)
            .unwrap_or_else(|| hf_home.join("hub"));
        let token = var(HF_TOKEN).map(|t| t.trim().to_string()).or_else(|| {
            let path = var(HF_TOKEN_PATH)
                .map(&expand)
                .unwrap_or_else(|| hf_home.join("token"));
            std::fs::read_to_string(path)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
        let offline = var(HF_HUB_OFFLINE)
            .or_else(|| var(TRANSFORMERS_OFFLINE))
            .is_some_and(|v| {
                matches!(
                    v.trim().to_ascii_uppercase().as_str(),
                    "1" | "ON" | "YES" | "TRUE"
                )
            });
        let endpoint = var(HF_ENDPOINT)
            .map(|e| e.trim().trim_end_matches('/').to_string())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        HubSettings {
            endpoint,
            cache_dir,
            token,
            offline,
        }
    }
}

/// A parsed `hf://ORG/NAME[@REVISION][/FILE.gguf]` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubPath {
    /// `ORG/NAME`.
    pub repo: String,
    /// The branch, tag or commit (`main` when not given).
    pub revision: String,
    /// The GGUF file, for a single-file path; `None` for a model folder.
    pub file: Option<String>,
}

/// Whether `path` is a Hub model path (starts with `hf://`).
pub fn is_hub_path(path: &str) -> bool {
    path.starts_with(SCHEME)
}

impl HubPath {
    /// Parses `spec`; the error says what is wrong and the accepted forms. Repository names
    /// follow the Hub's rules (letters, digits, `-`, `_`, `.`, no `--` or `..`, neither
    /// starting nor ending with `-` or `.`); dataset and Space repositories are refused.
    pub fn parse(spec: &str) -> Result<HubPath, HubError> {
        let bad = |message: &str| HubError::Spec {
            spec: spec.to_string(),
            message: message.to_string(),
        };
        let rest = spec
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("does not start with hf://"))?;
        if rest.starts_with("datasets/") || rest.starts_with("spaces/") {
            return Err(bad("only model repositories hold models"));
        }
        let (org, rest) = rest
            .split_once('/')
            .ok_or_else(|| bad("expected ORG/NAME after hf://"))?;
        let end = rest.find(['@', '/']).unwrap_or(rest.len());
        let (name, mut rest) = rest.split_at(end);
        for part in [org, name] {
            if !valid_repo_part(part) {
                return Err(bad(&format!(
                    "`{part}` is not a repository owner or name (letters, digits, `-`, `_` and `.`, no `--` or `..`, not starting or ending with `-` or `.`)"
                )));
            }
        }
        let mut revision = "main".to_string();
        if let Some(r) = rest.strip_prefix('@') {
            let len = special_ref_len(r).unwrap_or_else(|| r.find('/').unwrap_or(r.len()));
            let (raw, after) = r.split_at(len);
            revision = raw.replace("%2F", "/").replace("%2f", "/");
            if !valid_revision(&revision) {
                return Err(bad(&format!(
                    "`{raw}` is not a revision (a branch, tag or commit; write a `/` in it as %2F)"
                )));
            }
            rest = after;
        }
        let file = match rest.strip_prefix('/') {
            None if rest.is_empty() => None,
            Some("") => None,
            Some(f) => {
                if f.split('/')
                    .any(|s| s.is_empty() || s == "." || s == ".." || s.contains('\\'))
                {
                    return Err(bad(&format!("`{f}` is not a file path of the repository")));
                }
                if !f.to_ascii_lowercase().ends_with(".gguf") {
                    return Err(bad(&format!(
                        "`{f}`: only a .gguf file can be named; a model folder is the whole repository"
                    )));
                }
                Some(f.to_string())
            }
            None => return Err(bad("unexpected text after the repository name")),
        };
        Ok(HubPath {
            repo: format!("{org}/{name}"),
            revision,
            file,
        })
    }

    /// `hf://ORG/NAME@REVISION`: how errors name the repository.
    fn model(&self) -> String {
        format!("{SCHEME}{}@{}", self.repo, self.revision)
    }
}

impl fmt::Display for HubPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.model())?;
        if let Some(file) = &self.file {
            write!(f, "/{file}")?;
        }
        Ok(())
    }
}

fn valid_repo_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 96
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.'])
        && !s.contains("--")
        && !s.contains("..")
}

fn valid_revision(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('/')
        && !s.ends_with('/')
        && s.split('/').all(|p| !p.is_empty() && p != "." && p != "..")
        && !s.chars().any(|c| c == '\\' || c.is_control())
}

/// The length of a leading `refs/pr/N` or `refs/convert/NAME`, revisions written with their
/// `/` in `hf://` paths.
fn special_ref_len(r: &str) -> Option<usize> {
    for (prefix, ok) in [
        (
            "refs/pr/",
            (|c: char| c.is_ascii_digit()) as fn(char) -> bool,
        ),
        ("refs/convert/", |c: char| c.is_alphanumeric() || c == '_'),
    ] {
        if let Some(tail) = r.strip_prefix(prefix) {
            let n = tail.find(|c: char| !ok(c)).unwrap_or(tail.len());
            if n > 0 {
                return Some(prefix.len() + n);
            }
        }
    }
    None
}

/// Whether `s` is a full commit id (40 lowercase hex digits).
fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A resolved `hf://` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The local path: the snapshot folder `…/snapshots/{commit}` of a model folder, or the
    /// GGUF file in it.
    pub path: PathBuf,
    /// The commit the files come from.
    pub commit: String,
    /// The repository files resolved (relative names, in the order they were asked for);
    /// optional files the repository lacks are not listed.
    pub files: Vec<String>,
}

/// Why an `hf://` path cannot be resolved. Messages name the repository, revision and file,
/// never the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The path is not of the `hf://` form.
    #[error("`{spec}`: {message} (expected hf://ORG/NAME[@REVISION] for a model folder or hf://ORG/NAME[@REVISION]/FILE.gguf for a GGUF file)")]
    Spec {
        /// The path as written.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// The Hub cannot be reached (no network, DNS, TLS, timeout, cut download) and the file is
    /// not cached.
    #[error("{model}: cannot reach {endpoint} to fetch {file}: {message}; it is not in the Hugging Face cache {} either (check the network, HF_ENDPOINT and proxy settings)", cache.display())]
    Unreachable {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file asked for.
        file: String,
        /// The endpoint (`HF_ENDPOINT`).
        endpoint: String,
        /// What the HTTP client said.
        message: String,
        /// The hub cache folder.
        cache: PathBuf,
    },
    /// 401/403: a private or gated repository, or a token that cannot read it.
    #[error(
        "{model}: the Hub answered {status} for {file}{}: {hint}",
        server_message(message)
    )]
    Unauthorized {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file asked for.
        file: String,
        /// 401 or 403.
        status: u16,
        /// The Hub's `X-Error-Message`.
        message: Option<String>,
        /// What to do (set `HF_TOKEN`, accept the terms of a gated model).
        hint: String,
    },
    /// 404 `RepoNotFound`.
    #[error(
        "{model}: no such model repository on {endpoint}{}",
        server_message(message)
    )]
    RepoNotFound {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The endpoint.
        endpoint: String,
        /// The Hub's `X-Error-Message`.
        message: Option<String>,
    },
    /// 404 `RevisionNotFound`.
    #[error(
        "{model}: the repository has no revision `{revision}` (a branch, tag or commit){}",
        server_message(message)
    )]
    RevisionNotFound {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The revision.
        revision: String,
        /// The Hub's `X-Error-Message`.
        message: Option<String>,
    },
    /// A required file is not in the repository (404 `EntryNotFound`).
    #[error("{model}: the repository has no {file} (the Hub answered 404; expected {expected})")]
    FileNotFound {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file.
        file: String,
        /// What the file holds.
        expected: String,
    },
    /// Cache only (`HF_HUB_OFFLINE`, or the Hub failed) and the revision or a required file is
    /// not cached.
    #[error("{model}: {what} is not in the Hugging Face cache {} ({why})", cache.display())]
    NotCached {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file, or the revision when no commit of it is cached.
        what: String,
        /// The hub cache folder.
        cache: PathBuf,
        /// Why only the cache was read.
        why: String,
    },
    /// Any other HTTP failure (429, 5xx, a download that is not 200).
    #[error(
        "{model}: {file}: the Hub answered {status}{}",
        server_message(message)
    )]
    Server {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file asked for.
        file: String,
        /// The HTTP status.
        status: u16,
        /// The Hub's `X-Error-Message`.
        message: Option<String>,
    },
    /// The endpoint does not answer like the Hub (no `X-Repo-Commit`, no `ETag`, redirect
    /// loops).
    #[error("{model}: {file}: {message}")]
    BadResponse {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file asked for.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A download does not match the size or sha256 the Hub announced.
    #[error("{model}: {file}: the download does not match what the Hub announced: {message}")]
    Integrity {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
        /// The file.
        file: String,
        /// Expected and actual size or sha256.
        message: String,
    },
    /// The cache cannot be written or read.
    #[error("{}: cannot {action} in the Hugging Face cache: {source}", path.display())]
    Cache {
        /// The path involved.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The weights are sharded (`model.safetensors.index.json`), which the loaders do not read.
    #[error("{model}: the weights are sharded (model.safetensors.index.json and its shards); oloproof reads one model.safetensors: merge the shards into one file and give its folder as a local path")]
    Sharded {
        /// `hf://ORG/NAME@REVISION`.
        model: String,
    },
}

fn server_message(message: &Option<String>) -> String {
    message
        .as_deref()
        .map(|m| format!(" ({m})"))
        .unwrap_or_default()
}

#[cfg(feature = "hub")]
impl HubError {
    /// Whether the cached snapshot may stand in: every failure but the Hub's positive
    /// answer that the repository, revision or file does not exist (huggingface_hub's rule).
    fn cache_may_answer(&self) -> bool {
        matches!(
            self,
            HubError::Unreachable { .. }
                | HubError::Unauthorized { .. }
                | HubError::Server { .. }
                | HubError::BadResponse { .. }
        )
    }
}

#[cfg(feature = "hub")]
fn cache_err<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl FnOnce(std::io::Error) -> HubError + 'a {
    move |source| HubError::Cache {
        path: path.to_path_buf(),
        action,
        source,
    }
}

/// One repository's folder of the hub cache.
struct CacheRepo {
    dir: PathBuf,
}

impl CacheRepo {
    fn new(cache: &Path, repo: &str) -> CacheRepo {
        CacheRepo {
            dir: cache.join(format!("models--{}", repo.replace('/', "--"))),
        }
    }

    fn snapshot(&self, commit: &str) -> PathBuf {
        self.dir.join("snapshots").join(commit)
    }

    fn pointer(&self, commit: &str, file: &str) -> PathBuf {
        file.split('/')
            .fold(self.snapshot(commit), |p, part| p.join(part))
    }

    fn no_exist(&self, commit: &str, file: &str) -> PathBuf {
        file.split('/')
            .fold(self.dir.join(".no_exist").join(commit), |p, part| {
                p.join(part)
            })
    }

    fn ref_path(&self, revision: &str) -> PathBuf {
        revision
            .split('/')
            .fold(self.dir.join("refs"), |p, part| p.join(part))
    }

    /// The commit `revision` is (a commit id) or last pointed to (its ref file).
    fn commit_of(&self, revision: &str) -> Option<String> {
        if is_commit(revision) {
            return Some(revision.to_string());
        }
        let c = std::fs::read_to_string(self.ref_path(revision)).ok()?;
        let c = c.trim();
        is_commit(c).then(|| c.to_string())
    }

    /// The snapshot's `file`, when cached (a dangling link counts as absent).
    fn cached(&self, commit: &str, file: &str) -> Option<PathBuf> {
        let p = self.pointer(commit, file);
        p.is_file().then_some(p)
    }

    fn known_absent(&self, commit: &str, file: &str) -> bool {
        self.no_exist(commit, file).is_file()
    }
}

/// Where the files of one resolution come from: the Hub (through the cache) or the cache.
trait Source {
    /// The local path of `file`, `None` if the repository lacks it.
    fn probe(&mut self, file: &str) -> Result<Option<PathBuf>, HubError>;
    /// The error for a required `file` that [`Source::probe`] found absent.
    fn missing(&self, file: &str, expected: &str) -> HubError;
    /// The commit, once known.
    fn commit(&self) -> Option<&str>;
}

/// The cache alone, at the commit the revision last pointed to.
struct Cached<'a> {
    hub: &'a HubPath,
    cache: &'a CacheRepo,
    cache_dir: &'a Path,
    commit: String,
    why: &'a str,
}

impl<'a> Cached<'a> {
    fn open(
        hub: &'a HubPath,
        cache: &'a CacheRepo,
        cache_dir: &'a Path,
        why: &'a str,
    ) -> Result<Cached<'a>, HubError> {
        let commit = cache
            .commit_of(&hub.revision)
            .filter(|c| cache.snapshot(c).is_dir())
            .ok_or_else(|| HubError::NotCached {
                model: hub.model(),
                what: format!("revision `{}`", hub.revision),
                cache: cache_dir.to_path_buf(),
                why: why.to_string(),
            })?;
        Ok(Cached {
            hub,
            cache,
            cache_dir,
            commit,
            why,
        })
    }
}

impl Source for Cached<'_> {
    fn probe(&mut self, file: &str) -> Result<Option<PathBuf>, HubError> {
        let found = self.cache.cached(&self.commit, file);
        if found.is_none() && !self.cache.known_absent(&self.commit, file) {
            tracing::debug!(model = %self.hub.model(), file, "not cached and not known to be absent: taken as absent");
        }
        Ok(found)
    }

    fn missing(&self, file: &str, expected: &str) -> HubError {
        let what = if self.cache.known_absent(&self.commit, file) {
            format!(
                "{file} (the Hub answered 404 for it at commit {}; expected {expected})",
                self.commit
            )
        } else {
            format!("{file} (commit {}; expected {expected})", self.commit)
        };
        HubError::NotCached {
            model: self.hub.model(),
            what,
            cache: self.cache_dir.to_path_buf(),
            why: self.why.to_string(),
        }
    }

    fn commit(&self) -> Option<&str> {
        Some(&self.commit)
    }
}

/// The cached copy of `file` of the model folder `spec` (`hf://ORG/NAME[@REVISION]`), read
/// from the cache alone — no request, whatever `settings.offline` says: the snapshot of the
/// commit the revision is (a commit id) or last pointed to (`refs/{revision}`), when that
/// snapshot holds the file (a dangling link counts as absent). `None` when the path is
/// malformed, names a GGUF file, or the revision or the file is not cached. For a check of a
/// configuration before anything is downloaded, e.g. a classifier's labels in `config.json`.
pub fn cached_file(spec: &str, file: &str, settings: &HubSettings) -> Option<PathBuf> {
    let hub = HubPath::parse(spec).ok()?;
    if hub.file.is_some() {
        return None;
    }
    let cache = CacheRepo::new(&settings.cache_dir, &hub.repo);
    let commit = cache.commit_of(&hub.revision)?;
    cache.cached(&commit, file)
}

/// Resolves the `hf://` path `spec` to a local path, downloading what the cache lacks (see
/// the module documentation for the files, the cache layout and the offline rules).
///
/// Errors ([`crate::LocalError::Hub`]): a malformed path; the Hub unreachable, refusing (401/403:
/// set `HF_TOKEN`) or answering 404 for the repository, revision or a required file, when the
/// cache cannot stand in; a model folder without weights or with sharded ones; a download
/// that does not match its announced size or sha256; a cache that cannot be written.
pub fn resolve(spec: &str, settings: &HubSettings) -> crate::Result<Resolved> {
    let hub = HubPath::parse(spec)?;
    let cache = CacheRepo::new(&settings.cache_dir, &hub.repo);
    let from_cache = |why: &str| -> Result<Resolved, HubError> {
        let mut src = Cached::open(&hub, &cache, &settings.cache_dir, why)?;
        resolve_with(&mut src, &hub, &cache)
    };
    if settings.offline {
        return Ok(from_cache("HF_HUB_OFFLINE is set: only the cache is read")?);
    }
    online(&hub, &cache, settings, &from_cache)
}

#[cfg(feature = "hub")]
fn online(
    hub: &HubPath,
    cache: &CacheRepo,
    settings: &HubSettings,
    from_cache: &dyn Fn(&str) -> Result<Resolved, HubError>,
) -> crate::Result<Resolved> {
    let client = http::Client::new(settings);
    let mut src = http::Online::new(&client, hub, cache);
    match resolve_with(&mut src, hub, cache) {
        Ok(r) => Ok(r),
        Err(e) if e.cache_may_answer() => match from_cache("the Hub failed") {
            Ok(r) => {
                tracing::warn!(model = %hub.model(), commit = %r.commit, error = %e, "the Hub failed: using the cached snapshot");
                Ok(r)
            }
            Err(_) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(feature = "hub"))]
fn online(
    _hub: &HubPath,
    _cache: &CacheRepo,
    _settings: &HubSettings,
    from_cache: &dyn Fn(&str) -> Result<Resolved, HubError>,
) -> crate::Result<Resolved> {
    Ok(from_cache(
        "this build cannot download: oloproof-local was built without its `hub` cargo feature; \
         fetch the model with `hf download ORG/NAME` or rebuild with the feature",
    )?)
}

/// The files of `hub` from `src`: the GGUF file, or the model folder's required files, its
/// weights and the optional files the repository has.
fn resolve_with(
    src: &mut dyn Source,
    hub: &HubPath,
    cache: &CacheRepo,
) -> Result<Resolved, HubError> {
    let mut files = Vec::new();
    let mut need = |src: &mut dyn Source, file: &str, expected: &str| {
        let p = src
            .probe(file)?
            .ok_or_else(|| src.missing(file, expected))?;
        files.push(file.to_string());
        Ok::<_, HubError>(p)
    };
    if let Some(file) = &hub.file {
        let path = need(src, file, "a GGUF chat model file")?;
        let commit = commit_or_bad(src, hub, file)?;
        return Ok(Resolved {
            path,
            commit,
            files,
        });
    }
    need(src, "config.json", "the model's Hugging Face config.json")?;
    need(
        src,
        "tokenizer.json",
        "the fast tokenizer file tokenizer.json (a repository with only vocab.txt or a \
         sentencepiece model needs converting with `tokenizers` first)",
    )?;
    let mut optional: Vec<&str> = Vec::new();
    if src.probe("model.safetensors")?.is_some() {
        files.push("model.safetensors".into());
    } else if src.probe("model.safetensors.index.json")?.is_some() {
        return Err(HubError::Sharded { model: hub.model() });
    } else if src.probe("model.onnx")?.is_some() {
        files.push("model.onnx".into());
        optional.push("model.onnx_data");
    } else if src.probe("onnx/model.onnx")?.is_some() {
        files.push("onnx/model.onnx".into());
        optional.push("onnx/model.onnx_data");
    } else {
        return Err(src.missing(
            "model.safetensors",
            "the weights: model.safetensors, or model.onnx / onnx/model.onnx without it",
        ));
    }
    optional.extend_from_slice(OPTIONAL_FILES);
    for file in optional {
        if src.probe(file)?.is_some() {
            files.push(file.to_string());
        }
    }
    let commit = commit_or_bad(src, hub, "config.json")?;
    Ok(Resolved {
        path: cache.snapshot(&commit),
        commit,
        files,
    })
}

fn commit_or_bad(src: &dyn Source, hub: &HubPath, file: &str) -> Result<String, HubError> {
    src.commit()
        .map(str::to_string)
        .ok_or_else(|| HubError::BadResponse {
            model: hub.model(),
            file: file.to_string(),
            message: "no commit is known for the files (the Hub sent no X-Repo-Commit)".into(),
        })
}

#[cfg(feature = "hub")]
mod http {
    //! The Hub's HTTP protocol (the `HEAD`/`GET` of `…/resolve/{revision}/{file}`) over ureq,
    //! the HTTP client (and rustls) the judges already use, and the writes into the cache.

    use std::io::{Read, Write};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use sha2::{Digest, Sha256};
    use ureq::http::Response;
    use ureq::Body;

    use super::{cache_err, is_commit, CacheRepo, HubError, HubPath, HubSettings, Source};

    /// Redirects followed within the endpoint (a renamed repository) before giving up.
    const MAX_REDIRECTS: usize = 10;

    /// What `HEAD` says of a file.
    pub(super) struct Meta {
        commit: String,
        etag: String,
        size: Option<u64>,
        /// The CDN URL of a LFS file; `None`: the file itself, fetched at the commit.
        location: Option<String>,
    }

    /// The answer of `HEAD`: the file, or the Hub's 404 `EntryNotFound` (with the commit it
    /// was looked for at, when the Hub says).
    pub(super) enum Head {
        Found(Meta),
        Absent { commit: Option<String> },
    }

    pub(super) struct Client {
        agent: ureq::Agent,
        endpoint: String,
        token: Option<String>,
        cache_dir: PathBuf,
    }

    impl Client {
        pub(super) fn new(settings: &HubSettings) -> Client {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .user_agent(concat!("oloproof/", env!("CARGO_PKG_VERSION")))
                .accept_encoding("identity")
                .timeout_connect(Some(Duration::from_secs(10)))
                .timeout_recv_response(Some(Duration::from_secs(30)))
                .timeout_per_read(Some(Duration::from_secs(60)))
                .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
                .build()
                .into();
            Client {
                agent,
                endpoint: settings.endpoint.clone(),
                token: settings.token.clone(),
                cache_dir: settings.cache_dir.clone(),
            }
        }

        fn url(&self, repo: &str, revision: &str, file: &str) -> String {
            format!(
                "{}/{repo}/resolve/{}/{}",
                self.endpoint,
                quote(revision, false),
                quote(file, true)
            )
        }

        /// `Authorization: Bearer …` for a request to `url`, if it is the endpoint's origin.
        fn auth(&self, url: &str) -> Option<String> {
            let token = self.token.as_deref()?;
            (origin(url).is_some() && origin(url) == origin(&self.endpoint))
                .then(|| format!("Bearer {token}"))
        }

        fn unreachable(&self, hub: &HubPath, file: &str, e: impl std::fmt::Display) -> HubError {
            HubError::Unreachable {
                model: hub.model(),
                file: file.to_string(),
                endpoint: self.endpoint.clone(),
                message: e.to_string(),
                cache: self.cache_dir.clone(),
            }
        }

        /// `HEAD` of `file` at `revision`, following redirects within the origin.
        pub(super) fn head(
            &self,
            hub: &HubPath,
            revision: &str,
            file: &str,
        ) -> Result<Head, HubError> {
            let mut url = self.url(&hub.repo, revision, file);
            for _ in 0..MAX_REDIRECTS {
                let mut req = self.agent.head(&url);
                if let Some(auth) = self.auth(&url) {
                    req = req.header("Authorization", auth);
                }
                let resp = req
                    .config()
                    .max_redirects(0)
                    .build()
                    .call()
                    .map_err(|e| self.unreachable(hub, file, e))?;
                let status = resp.status().as_u16();
                let target = header(&resp, "location").map(|l| join(&url, &l));
                match target {
                    Some(t) if (300..400).contains(&status) && origin(&t) == origin(&url) => {
                        url = t;
                        continue;
                    }
                    _ => return self.classify(hub, revision, file, &url, &resp, target),
                }
            }
            Err(HubError::BadResponse {
                model: hub.model(),
                file: file.to_string(),
                message: format!(
                    "more than {MAX_REDIRECTS} redirects from {}",
                    strip_query(&url)
                ),
            })
        }

        fn classify(
            &self,
            hub: &HubPath,
            revision: &str,
            file: &str,
            url: &str,
            resp: &Response<Body>,
            target: Option<String>,
        ) -> Result<Head, HubError> {
            let status = resp.status().as_u16();
            let code = header(resp, "x-error-code");
            let message = header(resp, "x-error-message");
            let model = hub.model();
            let redirect = (300..400).contains(&status) && target.is_some();
            if (200..300).contains(&status) || redirect {
                let bad = |m: String| HubError::BadResponse {
                    model: model.clone(),
                    file: file.to_string(),
                    message: m,
                };
                let commit = header(resp, "x-repo-commit").ok_or_else(|| {
                    bad(format!(
                        "{} answered without X-Repo-Commit: HF_ENDPOINT ({}) does not look like a Hugging Face Hub",
                        strip_query(url),
                        self.endpoint
                    ))
                })?;
                if !is_commit(&commit) {
                    return Err(bad(format!("X-Repo-Commit `{commit}` is not a commit id")));
                }
                let etag = header(resp, "x-linked-etag")
                    .or_else(|| header(resp, "etag"))
                    .map(|e| normalize_etag(&e))
                    .filter(|e| valid_etag(e))
                    .ok_or_else(|| {
                        bad(format!(
                            "{} answered without a usable ETag or X-Linked-Etag",
                            strip_query(url)
                        ))
                    })?;
                let size = header(resp, "x-linked-size")
                    .or_else(|| {
                        (!redirect)
                            .then(|| header(resp, "content-length"))
                            .flatten()
                    })
                    .and_then(|s| s.trim().parse().ok());
                return Ok(Head::Found(Meta {
                    commit,
                    etag,
                    size,
                    location: target.filter(|_| redirect),
                }));
            }
            let unauthorized = |hint: String| HubError::Unauthorized {
                model: model.clone(),
                file: file.to_string(),
                status,
                message: message.clone(),
                hint,
            };
            let token = self.token.is_some();
            match (code.as_deref(), status) {
                (Some("EntryNotFound"), _) => Ok(Head::Absent {
                    commit: header(resp, "x-repo-commit").filter(|c| is_commit(c)),
                }),
                (None, 404) => Ok(Head::Absent { commit: None }),
                (Some("RevisionNotFound"), _) => Err(HubError::RevisionNotFound {
                    model,
                    revision: revision.to_string(),
                    message,
                }),
                (Some("GatedRepo"), _) => Err(unauthorized(if token {
                    "the model is gated and the token in HF_TOKEN has not been granted access: \
                     request access on the model's page, then retry"
                        .into()
                } else {
                    "the model is gated: accept its terms on the model's page, then set HF_TOKEN \
                     to an access token of that account"
                        .into()
                })),
                (Some("RepoNotFound"), 404) => Err(HubError::RepoNotFound {
                    model,
                    endpoint: self.endpoint.clone(),
                    message,
                }),
                (_, 401)
                    if message.as_deref()
                        == Some("Invalid credentials in Authorization header") =>
                {
                    Err(unauthorized(
                        "the Hub rejected the token: set HF_TOKEN to a valid access token".into(),
                    ))
                }
                (_, 401) | (Some("RepoNotFound"), _) => Err(unauthorized(if token {
                    "the repository does not exist, or the token in HF_TOKEN cannot read it \
                     (a private repository of another account, or a gated model whose terms \
                     were not accepted)"
                        .into()
                } else {
                    "the repository does not exist, or it is private or gated: set HF_TOKEN to \
                     an access token that can read it (and accept a gated model's terms on its page)"
                        .into()
                })),
                (_, 403) => Err(unauthorized(
                    "the token in HF_TOKEN is not allowed to read this repository: give it read \
                     access (a fine-grained token needs the repository listed)"
                        .into(),
                )),
                _ => Err(HubError::Server {
                    model,
                    file: file.to_string(),
                    status,
                    message,
                }),
            }
        }

        /// Downloads the file `meta` describes into the blob `blob`, through a file of its
        /// own in the same folder renamed into place once its size and (for a sha256 etag)
        /// content are checked.
        pub(super) fn download(
            &self,
            hub: &HubPath,
            file: &str,
            meta: &Meta,
            blob: &Path,
        ) -> Result<(), HubError> {
            static SEQ: AtomicU64 = AtomicU64::new(0);
            let dir = blob.parent().unwrap_or(blob);
            std::fs::create_dir_all(dir).map_err(cache_err(dir, "create a folder"))?;
            // Tags the cache for backup tools (https://bford.info/cachedir/), as
            // huggingface_hub does.
            let tag = self.cache_dir.join("CACHEDIR.TAG");
            if !tag.exists() {
                let _ = std::fs::write(
                    &tag,
                    "Signature: 8a477f597d28d172789f06886806bc55\n\
                     # This file is a cache directory tag (the Hugging Face hub cache).\n\
                     # For information about cache directory tags, see:\n\
                     #\thttps://bford.info/cachedir/\n",
                );
            }
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let tmp = dir.join(format!(
                "{}.{:x}{:x}{:x}.incomplete",
                meta.etag,
                std::process::id(),
                nanos,
                SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            let guard = RemoveOnDrop(Some(tmp.clone()));
            tracing::info!(model = %hub.model(), file, bytes = meta.size, "downloading from the Hugging Face Hub");
            // A file the Hub serves itself is fetched at the commit, so that a branch moving
            // between `HEAD` and `GET` cannot mix commits.
            let location = meta
                .location
                .clone()
                .unwrap_or_else(|| self.url(&hub.repo, &meta.commit, file));
            let mut req = self.agent.get(&location);
            if let Some(auth) = self.auth(&location) {
                req = req.header("Authorization", auth);
            }
            let resp = req.call().map_err(|e| self.unreachable(hub, file, e))?;
            let status = resp.status().as_u16();
            if !(200..300).contains(&status) {
                return Err(HubError::Server {
                    model: hub.model(),
                    file: file.to_string(),
                    status,
                    message: Some(format!("downloading {}", strip_query(&location))),
                });
            }
            let body = resp.into_body().into_with_config();
            let mut reader = match meta.size {
                Some(n) => body.limit(n).reader(),
                None => body.reader(),
            };
            let mut out = std::fs::File::create(&tmp).map_err(cache_err(&tmp, "create a file"))?;
            let mut sha = Sha256::new();
            let mut len: u64 = 0;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = reader.read(&mut buf).map_err(|e| {
                    self.unreachable(
                        hub,
                        file,
                        format!("the download stopped after {len} bytes: {e}"),
                    )
                })?;
                if n == 0 {
                    break;
                }
                sha.update(&buf[..n]);
                out.write_all(&buf[..n]).map_err(cache_err(&tmp, "write"))?;
                len += n as u64;
            }
            out.sync_all().map_err(cache_err(&tmp, "write"))?;
            drop(out);
            let integrity = |message: String| HubError::Integrity {
                model: hub.model(),
                file: file.to_string(),
                message,
            };
            if let Some(n) = meta.size.filter(|&n| n != len) {
                return Err(integrity(format!("{len} bytes, expected {n}")));
            }
            let digest = crate::files::hex(&sha.finalize());
            if meta.etag.len() == 64
                && meta.etag.bytes().all(|b| b.is_ascii_hexdigit())
                && !digest.eq_ignore_ascii_case(&meta.etag)
            {
                return Err(integrity(format!(
                    "sha256 {digest}, expected {}",
                    meta.etag
                )));
            }
            std::fs::rename(&tmp, blob).map_err(cache_err(blob, "move a download into place"))?;
            guard.disarm();
            Ok(())
        }
    }

    /// The Hub as a [`Source`]: each file through the cache, the commit fixed by the first
    /// answer.
    pub(super) struct Online<'a> {
        client: &'a Client,
        hub: &'a HubPath,
        cache: &'a CacheRepo,
        commit: Option<String>,
    }

    impl<'a> Online<'a> {
        pub(super) fn new(
            client: &'a Client,
            hub: &'a HubPath,
            cache: &'a CacheRepo,
        ) -> Online<'a> {
            Online {
                client,
                hub,
                cache,
                commit: is_commit(&hub.revision).then(|| hub.revision.clone()),
            }
        }

        /// Takes the commit of the first answer and records the revision's ref to it; later
        /// answers must agree.
        fn adopt(&mut self, commit: String, file: &str) -> Result<String, HubError> {
            match &self.commit {
                Some(c) if *c == commit => Ok(commit),
                Some(c) => Err(HubError::BadResponse {
                    model: self.hub.model(),
                    file: file.to_string(),
                    message: format!("asked at commit {c}, the Hub answered for commit {commit}"),
                }),
                None => {
                    if self.hub.revision != commit {
                        write_ref(&self.cache.ref_path(&self.hub.revision), &commit)?;
                    }
                    self.commit = Some(commit.clone());
                    Ok(commit)
                }
            }
        }
    }

    impl Source for Online<'_> {
        fn probe(&mut self, file: &str) -> Result<Option<PathBuf>, HubError> {
            if let Some(c) = &self.commit {
                if let Some(p) = self.cache.cached(c, file) {
                    return Ok(Some(p));
                }
                if self.cache.known_absent(c, file) {
                    return Ok(None);
                }
            }
            let revision = self
                .commit
                .clone()
                .unwrap_or_else(|| self.hub.revision.clone());
            match self.client.head(self.hub, &revision, file)? {
                Head::Found(meta) => {
                    let commit = self.adopt(meta.commit.clone(), file)?;
                    let blob = self.cache.dir.join("blobs").join(&meta.etag);
                    if !blob.is_file() {
                        self.client.download(self.hub, file, &meta, &blob)?;
                    }
                    let pointer = self.cache.pointer(&commit, file);
                    link(&blob, &pointer, file)?;
                    Ok(Some(pointer))
                }
                Head::Absent { commit } => {
                    if let Some(c) = commit {
                        let c = self.adopt(c, file)?;
                        let marker = self.cache.no_exist(&c, file);
                        if let Some(dir) = marker.parent() {
                            std::fs::create_dir_all(dir)
                                .map_err(cache_err(dir, "create a folder"))?;
                        }
                        std::fs::write(&marker, b"").map_err(cache_err(&marker, "write"))?;
                    }
                    Ok(None)
                }
            }
        }

        fn missing(&self, file: &str, expected: &str) -> HubError {
            HubError::FileNotFound {
                model: self.hub.model(),
                file: file.to_string(),
                expected: expected.to_string(),
            }
        }

        fn commit(&self) -> Option<&str> {
            self.commit.as_deref()
        }
    }

    /// Deletes a partial download unless disarmed.
    struct RemoveOnDrop(Option<PathBuf>);
    impl RemoveOnDrop {
        fn disarm(mut self) {
            self.0 = None;
        }
    }
    impl Drop for RemoveOnDrop {
        fn drop(&mut self) {
            if let Some(p) = self.0.take() {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// Writes `commit` into the ref file `path` atomically (a file of its own, renamed).
    fn write_ref(path: &Path, commit: &str) -> Result<(), HubError> {
        if std::fs::read_to_string(path).is_ok_and(|c| c == commit) {
            return Ok(());
        }
        let dir = path.parent().unwrap_or(path);
        std::fs::create_dir_all(dir).map_err(cache_err(dir, "create a folder"))?;
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, commit).map_err(cache_err(&tmp, "write"))?;
        std::fs::rename(&tmp, path).map_err(cache_err(path, "write"))
    }

    /// Points the snapshot's `pointer` at `blob` with a relative symlink
    /// (`../../blobs/{etag}`, one `../` more per folder of `file`), or a copy where symlinks
    /// cannot be made.
    fn link(blob: &Path, pointer: &Path, file: &str) -> Result<(), HubError> {
        if pointer.is_file() {
            return Ok(());
        }
        let dir = pointer.parent().unwrap_or(pointer);
        std::fs::create_dir_all(dir).map_err(cache_err(dir, "create a folder"))?;
        if std::fs::symlink_metadata(pointer).is_ok() {
            std::fs::remove_file(pointer).map_err(cache_err(pointer, "replace a broken link"))?;
        }
        let mut target = PathBuf::new();
        for _ in 0..=file.split('/').count() {
            target.push("..");
        }
        target.push("blobs");
        target.push(blob.file_name().unwrap_or_default());
        if symlink(&target, pointer).is_err() {
            std::fs::copy(blob, pointer)
                .map_err(cache_err(pointer, "copy a blob into a snapshot"))?;
        }
        Ok(())
    }

    #[cfg(unix)]
    fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }

    #[cfg(windows)]
    fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
        std::os::windows::fs::symlink_file(target, link)
    }

    #[cfg(not(any(unix, windows)))]
    fn symlink(_target: &Path, _link: &Path) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    fn header(resp: &Response<Body>, name: &str) -> Option<String> {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }

    /// An ETag without `W/` and quotes, as huggingface_hub names blobs.
    fn normalize_etag(e: &str) -> String {
        let e = e.trim();
        e.strip_prefix("W/")
            .unwrap_or(e)
            .trim_matches('"')
            .to_string()
    }

    /// Whether an etag can name a blob file.
    fn valid_etag(e: &str) -> bool {
        !e.is_empty()
            && e.len() <= 128
            && e.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && !e.starts_with('.')
    }

    /// Percent-encodes `s` for a URL path: everything but unreserved characters (and `/` when
    /// `slash`), as huggingface_hub's `quote`.
    pub(super) fn quote(s: &str, slash: bool) -> String {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            if b.is_ascii_alphanumeric()
                || matches!(b, b'-' | b'_' | b'.' | b'~')
                || (slash && b == b'/')
            {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }

    /// `(scheme, host, port)` of an absolute URL, lowercase, with the scheme's default port.
    pub(super) fn origin(url: &str) -> Option<(String, String, u16)> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let authority = rest.split(['/', '?', '#']).next()?;
        let authority = authority.rsplit('@').next()?;
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') && h.ends_with(']') => {
                match p.parse() {
                    Ok(p) => (h, p),
                    Err(_) => (authority, default_port(&scheme)?),
                }
            }
            _ => (authority, default_port(&scheme)?),
        };
        Some((scheme, host.to_ascii_lowercase(), port))
    }

    fn default_port(scheme: &str) -> Option<u16> {
        match scheme {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        }
    }

    /// `location` resolved against `base` (absolute, scheme-relative or path-relative).
    pub(super) fn join(base: &str, location: &str) -> String {
        if location.contains("://") {
            return location.to_string();
        }
        let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
        if let Some(l) = location.strip_prefix("//") {
            return format!("{scheme}://{l}");
        }
        let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let root = format!("{scheme}://{}", &rest[..host_end]);
        if location.starts_with('/') {
            return format!("{root}{location}");
        }
        let path = rest[host_end..].split(['?', '#']).next().unwrap_or("");
        let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
        format!("{root}{dir}{location}")
    }

    /// A URL without its query (signed CDN URLs carry long signatures).
    fn strip_query(url: &str) -> &str {
        url.split('?').next().unwrap_or(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(s: &str) -> HubPath {
        HubPath::parse(s).unwrap()
    }

    #[test]
    fn cached_file_reads_the_snapshot_of_the_revision_without_a_request() {
        let dir = tempfile::tempdir().unwrap();
        let settings = HubSettings {
            cache_dir: dir.path().into(),
            // Online settings: the lookup never asks the Hub anyway (no server here).
            endpoint: "http://127.0.0.1:9".into(),
            offline: false,
            token: None,
        };
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = dir.path().join("models--org--tox");
        assert_eq!(cached_file("hf://org/tox", "config.json", &settings), None);
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), commit).unwrap();
        assert_eq!(
            cached_file("hf://org/tox", "config.json", &settings),
            None,
            "a ref without its snapshot"
        );
        let snap = repo.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(snap.join("config.json"), "{}").unwrap();
        let found = Some(snap.join("config.json"));
        assert_eq!(cached_file("hf://org/tox", "config.json", &settings), found);
        assert_eq!(
            cached_file(&format!("hf://org/tox@{commit}"), "config.json", &settings),
            found,
            "a pinned commit needs no ref"
        );
        assert_eq!(
            cached_file("hf://org/tox@v2", "config.json", &settings),
            None
        );
        assert_eq!(
            cached_file("hf://org/tox", "tokenizer.json", &settings),
            None
        );
        assert_eq!(
            cached_file("hf://org/tox/m.gguf", "config.json", &settings),
            None
        );
        assert_eq!(
            cached_file("not a hub path", "config.json", &settings),
            None
        );
    }

    #[test]
    fn parses_folders_files_and_revisions() {
        assert_eq!(
            parse("hf://sentence-transformers/all-MiniLM-L6-v2"),
            HubPath {
                repo: "sentence-transformers/all-MiniLM-L6-v2".into(),
                revision: "main".into(),
                file: None
            }
        );
        let p = parse("hf://org/m.v1@v1.2/sub/q4_k.GGUF");
        assert_eq!(
            (p.revision.as_str(), p.file.as_deref()),
            ("v1.2", Some("sub/q4_k.GGUF"))
        );
        assert_eq!(parse("hf://org/m@refs/pr/12").revision, "refs/pr/12");
        let p = parse("hf://org/m@refs/pr/12/x.gguf");
        assert_eq!(
            (p.revision.as_str(), p.file.as_deref()),
            ("refs/pr/12", Some("x.gguf"))
        );
        assert_eq!(parse("hf://org/m@feature%2Fnew").revision, "feature/new");
        assert_eq!(parse("hf://org/m/").file, None);
        assert_eq!(
            parse("hf://org/m@abc/x.gguf").to_string(),
            "hf://org/m@abc/x.gguf"
        );
    }

    #[test]
    fn malformed_paths_say_what_is_wrong() {
        for (spec, says) in [
            ("hf://", "ORG/NAME"),
            ("hf://gpt2", "ORG/NAME"),
            ("hf://org/", "not a repository"),
            ("hf://org/a--b", "not a repository"),
            ("hf://../x", "not a repository"),
            ("hf://datasets/org/x", "only model repositories"),
            ("hf://org/m@", "not a revision"),
            ("hf://org/m@a%2F..%2Fb", "not a revision"),
            ("hf://org/m/config.json", "only a .gguf file"),
            ("hf://org/m/../x.gguf", "not a file path"),
            ("hf://org/m/a//x.gguf", "not a file path"),
            ("models/x", "does not start with hf://"),
        ] {
            let e = HubPath::parse(spec).unwrap_err().to_string();
            assert!(e.contains(says), "{spec}: {e}");
            assert!(e.contains("hf://ORG/NAME[@REVISION]"), "{e}");
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> HubSettings {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HubSettings::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn settings_follow_huggingface_hub_precedence() {
        let s = vars(&[("HOME", "/home/u")]);
        assert_eq!(s.cache_dir, PathBuf::from("/home/u/.cache/huggingface/hub"));
        assert_eq!(s.endpoint, DEFAULT_ENDPOINT);
        assert!(!s.offline && s.token.is_none());
        let s = vars(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")]);
        assert_eq!(s.cache_dir, PathBuf::from("/xdg/huggingface/hub"));
        let s = vars(&[
            ("HOME", "/home/u"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HF_HOME", "~/hf"),
        ]);
        assert_eq!(s.cache_dir, PathBuf::from("/home/u/hf/hub"));
        let s = vars(&[("HF_HOME", "/hf"), ("HUGGINGFACE_HUB_CACHE", "/old")]);
        assert_eq!(s.cache_dir, PathBuf::from("/old"));
        let s = vars(&[
            ("HF_HOME", "/hf"),
            ("HUGGINGFACE_HUB_CACHE", "/old"),
            ("HF_HUB_CACHE", "/c"),
        ]);
        assert_eq!(s.cache_dir, PathBuf::from("/c"));
        let s = vars(&[
            ("HF_ENDPOINT", "http://mirror.local/ "),
            ("HF_HUB_OFFLINE", "yes"),
        ]);
        assert_eq!(s.endpoint, "http://mirror.local");
        assert!(s.offline);
        assert!(vars(&[("TRANSFORMERS_OFFLINE", "1")]).offline);
        assert!(!vars(&[("HF_HUB_OFFLINE", "0"), ("TRANSFORMERS_OFFLINE", "1")]).offline);
        assert!(!vars(&[("HF_HUB_OFFLINE", "")]).offline);
    }

    #[test]
    fn the_token_comes_from_hf_token_else_the_token_file_and_is_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "hf_fromfile\n").unwrap();
        let home = dir.path().to_str().unwrap();
        let s = vars(&[("HF_HOME", home)]);
        assert_eq!(s.token.as_deref(), Some("hf_fromfile"));
        let s = vars(&[("HF_HOME", home), ("HF_TOKEN", "hf_secret")]);
        assert_eq!(s.token.as_deref(), Some("hf_secret"));
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("hf_secret") && shown.contains("<redacted>"),
            "{shown}"
        );
        let other = dir.path().join("other");
        std::fs::write(&other, "hf_other").unwrap();
        let s = vars(&[
            ("HF_HOME", home),
            ("HF_TOKEN_PATH", other.to_str().unwrap()),
        ]);
        assert_eq!(s.token.as_deref(), Some("hf_other"));
    }

    #[cfg(feature = "hub")]
    #[test]
    fn urls_origins_and_redirect_targets() {
        use http::{join, origin, quote};
        assert_eq!(quote("refs/pr/1", false), "refs%2Fpr%2F1");
        assert_eq!(
            quote("1_Pooling/config.json", true),
            "1_Pooling/config.json"
        );
        assert_eq!(quote("a b.gguf", true), "a%20b.gguf");
        assert_eq!(
            origin("https://HF.co/x?y"),
            Some(("https".into(), "hf.co".into(), 443))
        );
        assert_eq!(
            origin("http://127.0.0.1:8080"),
            Some(("http".into(), "127.0.0.1".into(), 8080))
        );
        assert_eq!(
            origin("http://[::1]:81/a"),
            Some(("http".into(), "[::1]".into(), 81))
        );
        assert_eq!(
            origin("http://[::1]/a"),
            Some(("http".into(), "[::1]".into(), 80))
        );
        assert_eq!(origin("no-scheme"), None);
        let base = "http://h:1/o/n/resolve/main/config.json?x=1";
        assert_eq!(
            join(base, "/o2/n/resolve/main/config.json"),
            "http://h:1/o2/n/resolve/main/config.json"
        );
        assert_eq!(join(base, "https://cdn/x"), "https://cdn/x");
        assert_eq!(join(base, "//cdn/x"), "http://cdn/x");
        assert_eq!(
            join(base, "other.json"),
            "http://h:1/o/n/resolve/main/other.json"
        );
    }

    #[test]
    fn offline_reads_the_snapshot_a_ref_points_to() {
        let dir = tempfile::tempdir().unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = dir.path().join("models--org--m");
        let snap = repo.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), commit).unwrap();
        for f in [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "modules.json",
        ] {
            std::fs::write(snap.join(f), "{}").unwrap();
        }
        let settings = HubSettings {
            cache_dir: dir.path().into(),
            offline: true,
            ..HubSettings::from_vars(|_| None)
        };
        let r = resolve("hf://org/m", &settings).unwrap();
        assert_eq!(r.path, snap);
        assert_eq!(r.commit, commit);
        assert_eq!(
            r.files,
            [
                "config.json",
                "tokenizer.json",
                "model.safetensors",
                "modules.json"
            ]
        );
        // The same commit by id needs no ref.
        let r = resolve(&format!("hf://org/m@{commit}"), &settings).unwrap();
        assert_eq!(r.path, snap);
        // A missing required file names it; a revision never fetched is named too.
        std::fs::remove_file(snap.join("tokenizer.json")).unwrap();
        let e = resolve("hf://org/m", &settings).unwrap_err().to_string();
        assert!(
            e.contains("tokenizer.json") && e.contains("HF_HUB_OFFLINE"),
            "{e}"
        );
        let e = resolve("hf://org/m@v2", &settings).unwrap_err().to_string();
        assert!(
            e.contains("revision `v2`") && e.contains("hf://org/m@v2"),
            "{e}"
        );
    }
}
