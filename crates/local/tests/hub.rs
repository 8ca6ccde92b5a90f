//! `hf://` model paths against a double of the Hugging Face Hub (`hub_double`, on 127.0.0.1,
//! speaking the Hub's `resolve` protocol): download then load, the cache layout
//! huggingface_hub expects, offline and server-down resolution from the cache, optional and
//! required files decided by the Hub's 404, and the token (sent as `Bearer` to the Hub only,
//! never shown).

#![cfg(feature = "hub")]

mod hub_double;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hub_double::{files_of, git_etag, sha256, Access, HubDouble, Repo};
use oloproof_local::hub::{self, HubError, HubSettings};
use oloproof_local::testing::write_tiny_classifier;
use oloproof_local::{ClassifierOptions, LocalError, PairClassifier};

const COMMIT: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
const NLI: &[&str] = &["contradiction", "neutral", "entailment"];

/// The tiny classifier's files plus two optional ones the repository has
/// (`tokenizer_config.json`, the nested `1_Pooling/config.json`).
fn classifier_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    write_tiny_classifier(dir, NLI, 7).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"model_max_length": 24}"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"pooling_mode_mean_tokens": true}"#,
    )
    .unwrap();
    files_of(dir)
}

fn settings(hub: &HubDouble, cache: &Path) -> HubSettings {
    HubSettings {
        endpoint: hub.url.clone(),
        cache_dir: cache.to_path_buf(),
        token: None,
        offline: false,
    }
}

fn pairs() -> Vec<(String, String)> {
    vec![
        (
            "the refund window is fourteen days from delivery".into(),
            "refund is fourteen days".into(),
        ),
        (
            "shipping takes three weeks".into(),
            "shipping takes one day".into(),
        ),
    ]
}

fn hub_error(e: LocalError) -> HubError {
    match e {
        LocalError::Hub(h) => h,
        other => panic!("expected a Hub error, got {other:?}"),
    }
}

#[test]
fn downloads_a_model_folder_and_loads_the_classifier_from_it() {
    let src = tempfile::tempdir().unwrap();
    let files = classifier_files(src.path());
    let hub = HubDouble::start(vec![Repo::public("org/tiny-nli", COMMIT, files)]);
    let cache = tempfile::tempdir().unwrap();

    let r = hub::resolve("hf://org/tiny-nli", &settings(&hub, cache.path())).unwrap();
    assert_eq!(
        r.path,
        cache
            .path()
            .join("models--org--tiny-nli/snapshots")
            .join(COMMIT)
    );
    assert_eq!(r.commit, COMMIT);
    assert_eq!(
        r.files,
        [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "tokenizer_config.json",
            "1_Pooling/config.json"
        ]
    );

    let options = ClassifierOptions {
        threads: Some(1),
        ..ClassifierOptions::default()
    };
    let from_hub = PairClassifier::load(&r.path, &options).unwrap();
    let local = PairClassifier::load(src.path(), &options).unwrap();
    assert_eq!(from_hub.identity(), local.identity());
    assert_eq!(
        from_hub.max_length(),
        24,
        "tokenizer_config.json was fetched"
    );
    let (a, b) = (
        from_hub.logits(&pairs()).unwrap(),
        local.logits(&pairs()).unwrap(),
    );
    assert_eq!(a, b);
}

#[test]
fn the_cache_has_huggingface_hubs_layout() {
    let src = tempfile::tempdir().unwrap();
    let files = classifier_files(src.path());
    let hub = HubDouble::start(vec![Repo::public("org/tiny-nli", COMMIT, files.clone())]);
    let cache = tempfile::tempdir().unwrap();
    hub::resolve("hf://org/tiny-nli", &settings(&hub, cache.path())).unwrap();

    let repo = cache.path().join("models--org--tiny-nli");
    // refs/main holds the commit, without a newline.
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        COMMIT
    );
    let snap = repo.join("snapshots").join(COMMIT);
    // Snapshots are relative symlinks to blobs named by etag: the sha256 for LFS files, the
    // git blob id for the others.
    for (file, etag) in [
        ("model.safetensors", sha256(&files["model.safetensors"])),
        ("config.json", git_etag(&files["config.json"])),
        (
            "1_Pooling/config.json",
            git_etag(&files["1_Pooling/config.json"]),
        ),
    ] {
        let pointer = snap.join(file);
        let depth = file.split('/').count() + 1;
        let expected: PathBuf = std::iter::repeat_n("..", depth)
            .chain(["blobs", etag.as_str()])
            .collect();
        assert_eq!(std::fs::read_link(&pointer).unwrap(), expected, "{file}");
        assert_eq!(
            std::fs::read(repo.join("blobs").join(&etag)).unwrap(),
            files[file]
        );
        assert_eq!(std::fs::read(&pointer).unwrap(), files[file]);
    }
    // Files the Hub answered 404 EntryNotFound for are recorded under .no_exist/{commit}.
    let no_exist = repo.join(".no_exist").join(COMMIT);
    for absent in [
        "special_tokens_map.json",
        "sentence_bert_config.json",
        "modules.json",
    ] {
        assert!(no_exist.join(absent).is_file(), "{absent}");
        assert!(!snap.join(absent).exists(), "{absent}");
    }
    // One blob per file, no partial downloads left behind.
    let blobs: Vec<String> = std::fs::read_dir(repo.join("blobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(blobs.len(), files.len(), "{blobs:?}");
    assert!(blobs.iter().all(|b| !b.contains('.')), "{blobs:?}");
}

#[test]
fn the_token_goes_to_the_hub_as_bearer_and_never_to_the_cdn() {
    let src = tempfile::tempdir().unwrap();
    let mut repo = Repo::public("org/private", COMMIT, classifier_files(src.path()));
    repo.access = Access::Private("hf_right_token".into());
    let hub = HubDouble::start(vec![repo]);
    let cache = tempfile::tempdir().unwrap();
    let mut s = settings(&hub, cache.path());
    s.token = Some("hf_right_token".into());
    hub::resolve("hf://org/private", &s).unwrap();

    let seen = hub.seen();
    let (cdn, hub_side): (Vec<_>, Vec<_>) = seen.iter().partition(|r| r.cdn);
    assert!(!hub_side.is_empty() && !cdn.is_empty());
    for r in &hub_side {
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer hf_right_token"),
            "{r:?}"
        );
        assert!(r.path.starts_with("/org/private/resolve/"), "{r:?}");
    }
    // The weights come from the CDN's signed URL, without the token.
    assert!(cdn
        .iter()
        .all(|r| r.authorization.is_none() && r.method == "GET"));
    assert!(cdn.iter().any(|r| r.path.contains(&sha256(
        &std::fs::read(src.path().join("model.safetensors")).unwrap()
    ))));
    // The first file is asked for at `main`, the others at the commit it answered with.
    assert_eq!(hub_side[0].path, "/org/private/resolve/main/config.json");
    assert!(hub_side[1..].iter().all(|r| r
        .path
        .starts_with(&format!("/org/private/resolve/{COMMIT}/"))));
}

#[test]
fn a_second_resolve_works_offline_and_with_the_server_stopped() {
    let src = tempfile::tempdir().unwrap();
    let mut hub = HubDouble::start(vec![Repo::public(
        "org/tiny-nli",
        COMMIT,
        classifier_files(src.path()),
    )]);
    let cache = tempfile::tempdir().unwrap();
    let s = settings(&hub, cache.path());
    let first = hub::resolve("hf://org/tiny-nli", &s).unwrap();

    // Online again: the commit is checked with one HEAD, nothing is downloaded.
    let before = hub.seen().len();
    assert_eq!(hub::resolve("hf://org/tiny-nli", &s).unwrap(), first);
    let again = &hub.seen()[before..];
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].method, "HEAD");

    hub.stop();
    let offline = HubSettings {
        offline: true,
        ..s.clone()
    };
    assert_eq!(hub::resolve("hf://org/tiny-nli", &offline).unwrap(), first);
    // Without the offline setting, an unreachable Hub falls back to the cached snapshot too.
    assert_eq!(hub::resolve("hf://org/tiny-nli", &s).unwrap(), first);
    PairClassifier::load(&first.path, &ClassifierOptions::default()).unwrap();

    // An empty cache with the Hub down: a clear network error naming the model and file.
    let empty = tempfile::tempdir().unwrap();
    let e =
        hub_error(hub::resolve("hf://org/tiny-nli", &settings(&hub, empty.path())).unwrap_err());
    assert!(matches!(e, HubError::Unreachable { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("hf://org/tiny-nli@main")
            && msg.contains("config.json")
            && msg.contains(&hub.url),
        "{msg}"
    );
    // Offline with an empty cache: says it is not cached and why only the cache was read.
    let e = hub::resolve(
        "hf://org/tiny-nli",
        &HubSettings {
            offline: true,
            ..settings(&hub, empty.path())
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("not in the Hugging Face cache") && e.contains("HF_HUB_OFFLINE"),
        "{e}"
    );
}

#[test]
fn optional_files_come_from_the_hubs_404_and_a_missing_required_file_is_an_error() {
    let src = tempfile::tempdir().unwrap();
    let files = classifier_files(src.path());
    let without = |name: &str| {
        let mut f = files.clone();
        f.remove(name);
        f
    };
    let mut sharded = without("model.safetensors");
    sharded.insert(
        "model.safetensors.index.json".into(),
        b"{\"weight_map\":{}}".to_vec(),
    );
    let mut onnx = without("model.safetensors");
    onnx.insert("onnx/model.onnx".into(), b"not really onnx".to_vec());
    let hub = HubDouble::start(vec![
        Repo::public("org/no-tokenizer", COMMIT, without("tokenizer.json")),
        Repo::public("org/no-weights", COMMIT, without("model.safetensors")),
        Repo::public("org/sharded", COMMIT, sharded),
        Repo::public("org/onnx", COMMIT, onnx),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let s = settings(&hub, cache.path());

    let e = hub_error(hub::resolve("hf://org/no-tokenizer", &s).unwrap_err());
    assert!(
        matches!(&e, HubError::FileNotFound { file, .. } if file == "tokenizer.json"),
        "{e:?}"
    );
    assert!(e.to_string().contains("hf://org/no-tokenizer@main"), "{e}");
    let e = hub::resolve("hf://org/no-weights", &s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.safetensors") && e.contains("404"), "{e}");
    let e = hub_error(hub::resolve("hf://org/sharded", &s).unwrap_err());
    assert!(matches!(e, HubError::Sharded { .. }), "{e:?}");

    // Without safetensors, the ONNX graph at the Hub's `onnx/` is taken.
    let r = hub::resolve("hf://org/onnx", &s).unwrap();
    assert!(
        r.files.contains(&"onnx/model.onnx".to_string()),
        "{:?}",
        r.files
    );
    assert!(r.path.join("onnx/model.onnx").is_file());
    let no_exist = cache
        .path()
        .join("models--org--onnx/.no_exist")
        .join(COMMIT);
    for absent in [
        "model.safetensors",
        "model.safetensors.index.json",
        "model.onnx",
        "onnx/model.onnx_data",
    ] {
        assert!(no_exist.join(absent).is_file(), "{absent}");
    }
}

#[test]
fn unauthorized_says_to_set_hf_token_and_never_prints_it() {
    let src = tempfile::tempdir().unwrap();
    let files = classifier_files(src.path());
    let mut private = Repo::public("org/private", COMMIT, files.clone());
    private.access = Access::Private("hf_right_token".into());
    let mut gated = Repo::public("org/gated", COMMIT, files);
    gated.access = Access::Gated("hf_granted".into());
    let hub = HubDouble::start(vec![private, gated]);
    let cache = tempfile::tempdir().unwrap();
    let anonymous = settings(&hub, cache.path());
    let with = |t: &str| HubSettings {
        token: Some(t.into()),
        ..anonymous.clone()
    };

    let e = hub_error(hub::resolve("hf://org/private", &anonymous).unwrap_err());
    assert!(
        matches!(e, HubError::Unauthorized { status: 401, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("set HF_TOKEN")
            && msg.contains("hf://org/private@main")
            && msg.contains("config.json"),
        "{msg}"
    );

    let secret = "hf_wrong_secret_value";
    let e = hub_error(hub::resolve("hf://org/private", &with(secret)).unwrap_err());
    let (msg, debug) = (e.to_string(), format!("{e:?}"));
    assert!(
        msg.contains("rejected the token") && msg.contains("HF_TOKEN"),
        "{msg}"
    );
    assert!(
        !msg.contains(secret) && !debug.contains(secret),
        "{msg} / {debug}"
    );
    assert!(!format!("{:?}", with(secret)).contains(secret));

    let e = hub::resolve("hf://org/gated", &anonymous)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("401") && e.contains("gated") && e.contains("HF_TOKEN"),
        "{e}"
    );
    let e = hub::resolve("hf://org/gated", &with("hf_not_granted"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("403") && e.contains("request access"), "{e}");
    assert!(!e.contains("hf_not_granted"), "{e}");

    hub::resolve("hf://org/private", &with("hf_right_token")).unwrap();
    hub::resolve("hf://org/gated", &with("hf_granted")).unwrap();
}

#[test]
fn a_missing_repository_or_revision_is_named() {
    let src = tempfile::tempdir().unwrap();
    let hub = HubDouble::start(vec![Repo::public(
        "org/tiny-nli",
        COMMIT,
        classifier_files(src.path()),
    )]);
    let cache = tempfile::tempdir().unwrap();
    let s = settings(&hub, cache.path());

    // Authenticated, the Hub says 404 RepoNotFound; anonymous, 401 (it may be private).
    let e = hub_error(
        hub::resolve(
            "hf://org/nope",
            &HubSettings {
                token: Some("hf_x".into()),
                ..s.clone()
            },
        )
        .unwrap_err(),
    );
    assert!(matches!(e, HubError::RepoNotFound { .. }), "{e:?}");
    assert!(
        e.to_string().contains("hf://org/nope@main") && e.to_string().contains(&hub.url),
        "{e}"
    );
    let e = hub::resolve("hf://org/nope", &s).unwrap_err().to_string();
    assert!(
        e.contains("does not exist, or it is private or gated") && e.contains("HF_TOKEN"),
        "{e}"
    );

    let e = hub_error(hub::resolve("hf://org/tiny-nli@v9", &s).unwrap_err());
    assert!(
        matches!(&e, HubError::RevisionNotFound { revision, .. } if revision == "v9"),
        "{e:?}"
    );
    assert!(e.to_string().contains("hf://org/tiny-nli@v9"), "{e}");
}

#[test]
fn a_renamed_repository_is_followed_within_the_hub() {
    let src = tempfile::tempdir().unwrap();
    let hub = HubDouble::start(vec![Repo::public(
        "new-org/tiny-nli",
        COMMIT,
        classifier_files(src.path()),
    )]);
    hub.rename("old-org/tiny-nli", "new-org/tiny-nli");
    let cache = tempfile::tempdir().unwrap();
    let r = hub::resolve("hf://old-org/tiny-nli", &settings(&hub, cache.path())).unwrap();
    // Cached under the name asked for, as huggingface_hub does.
    assert!(r
        .path
        .starts_with(cache.path().join("models--old-org--tiny-nli")));
    PairClassifier::load(&r.path, &ClassifierOptions::default()).unwrap();
    assert!(hub
        .seen()
        .iter()
        .any(|q| q.path.starts_with("/new-org/tiny-nli/resolve/main/")));
}

#[test]
fn a_gguf_file_resolves_alone_and_a_pinned_commit_needs_no_request_once_cached() {
    let gguf: Vec<u8> = b"GGUF\x03\x00\x00\x00not a real model".to_vec();
    let files = BTreeMap::from([
        ("smol.Q4_1.gguf".to_string(), gguf.clone()),
        ("README.md".to_string(), b"# smol".to_vec()),
    ]);
    let mut hub = HubDouble::start(vec![Repo::public("org/smol-GGUF", COMMIT, files)]);
    let cache = tempfile::tempdir().unwrap();
    let s = settings(&hub, cache.path());
    let r = hub::resolve("hf://org/smol-GGUF/smol.Q4_1.gguf", &s).unwrap();
    assert_eq!(
        r.path,
        cache
            .path()
            .join("models--org--smol-GGUF/snapshots")
            .join(COMMIT)
            .join("smol.Q4_1.gguf")
    );
    assert_eq!(std::fs::read(&r.path).unwrap(), gguf);
    assert_eq!(r.files, ["smol.Q4_1.gguf"]);
    let e = hub::resolve("hf://org/smol-GGUF/other.gguf", &s)
        .unwrap_err()
        .to_string();
    assert!(e.contains("other.gguf") && e.contains("404"), "{e}");

    hub.stop();
    let before = hub.seen().len();
    let pinned = hub::resolve(&format!("hf://org/smol-GGUF@{COMMIT}/smol.Q4_1.gguf"), &s).unwrap();
    assert_eq!(pinned.path, r.path);
    assert_eq!(hub.seen().len(), before);
}

#[test]
fn a_corrupt_download_is_refused_and_not_cached() {
    let src = tempfile::tempdir().unwrap();
    let hub = HubDouble::start(vec![Repo::public(
        "org/tiny-nli",
        COMMIT,
        classifier_files(src.path()),
    )]);
    hub.corrupt_downloads();
    let cache = tempfile::tempdir().unwrap();
    let e =
        hub_error(hub::resolve("hf://org/tiny-nli", &settings(&hub, cache.path())).unwrap_err());
    assert!(
        matches!(&e, HubError::Integrity { file, .. } if file == "model.safetensors"),
        "{e:?}"
    );
    assert!(e.to_string().contains("sha256"), "{e}");
    let blobs = cache.path().join("models--org--tiny-nli/blobs");
    let names: Vec<String> = std::fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".incomplete")),
        "{names:?}"
    );
    assert!(!blobs
        .join(sha256(
            &std::fs::read(src.path().join("model.safetensors")).unwrap()
        ))
        .exists());
}
