//! Sequence-pair classifiers in ONNX, run by ONNX Runtime through the `ort` crate.
//!
//! A Hugging Face / optimum export of a `…ForSequenceClassification` model holds the graph as
//! `model.onnx` (optimum's `save_pretrained`) or `onnx/model.onnx` (the Hub's layout), beside
//! `config.json` and `tokenizer.json`. The graph takes `input_ids`, `attention_mask` and, for
//! BERT-like models, `token_type_ids`, each `[batch, sequence]` integers, and returns `logits`
//! `[batch, labels]`. Rows of a batch are padded on the right to the longest one (with the
//! `pad_token_id` of `config.json`, default 0) and masked out.
//!
//! ONNX Runtime is not linked into the binary and nothing is downloaded at build time: its
//! shared library is loaded once per process from the path in `ORT_DYLIB_PATH` (`ort`'s own
//! convention), e.g. the `libonnxruntime.so.X` that `pip install onnxruntime==X` puts under
//! `site-packages/onnxruntime/capi/`. Any ONNX Runtime from 1.17 on works (`ort`'s C API
//! version 17); the tests use [`TESTED_ONNXRUNTIME`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ort::environment::Environment;
use ort::session::{Session, SessionInputValue};
use ort::value::{Tensor, TensorElementType, ValueType};
use serde_json::Value;

use crate::bert::Encoded;
use crate::error::{LocalError, Result};
use crate::files;

/// The environment variable naming ONNX Runtime's shared library.
pub(crate) const ORT_DYLIB_PATH: &str = "ORT_DYLIB_PATH";

/// The ONNX Runtime release the tests run against (`onnxruntime` on PyPI).
pub(crate) const TESTED_ONNXRUNTIME: &str = "1.31.1";

/// Where an ONNX graph may sit in a model folder, in the order they are tried.
const MODEL_FILES: &[&str] = &["model.onnx", "onnx/model.onnx"];

/// What a sequence classifier's graph takes, for error messages.
const EXPECTED_IO: &str = "a sequence classifier's graph: inputs `input_ids` and `attention_mask` \
     (and optionally `token_type_ids`), integers [batch, sequence]; output `logits`, float32 \
     [batch, labels]";

/// The ONNX Runtime environment of the process: `ort` allows one, created on the first load
/// and kept for every later model. A failed load leaves it unset, so a later load (with
/// `ORT_DYLIB_PATH` fixed) tries again.
static RUNTIME: Mutex<Option<Environment>> = Mutex::new(None);

/// The input a graph input is fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feed {
    Ids,
    Mask,
    TypeIds,
}

/// One input the graph declares: its name, what it is fed and its integer width.
#[derive(Debug)]
struct GraphInput {
    name: String,
    feed: Feed,
    int32: bool,
}

/// A loaded ONNX sequence-pair classifier: one ONNX Runtime session, the inputs its graph
/// declares and the output read as the logits. `Send + Sync`; runs are serialised (an ONNX
/// Runtime session runs one batch at a time, spread over its intra-op threads).
pub(crate) struct OnnxPairModel {
    path: PathBuf,
    session: Mutex<Session>,
    inputs: Vec<GraphInput>,
    output: String,
    labels: Option<usize>,
    pad_id: i64,
}

impl std::fmt::Debug for OnnxPairModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxPairModel")
            .field("path", &self.path)
            .field("inputs", &self.inputs)
            .field("output", &self.output)
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl OnnxPairModel {
    /// Loads the ONNX graph of the model folder `dir` (`model.onnx`, else `onnx/model.onnx`)
    /// into an ONNX Runtime session with `threads` intra-op threads (default: every core),
    /// loading ONNX Runtime itself from `ORT_DYLIB_PATH` on the first call of the process.
    ///
    /// Errors: [`LocalError::MissingPath`] / [`LocalError::MissingFile`] for a missing folder or
    /// graph, [`LocalError::Runtime`] when ONNX Runtime cannot be loaded (saying how to get
    /// it), [`LocalError::BadFile`] for a file that is not ONNX or a graph whose inputs and
    /// outputs are not a sequence classifier's, [`LocalError::Options`] for 0 threads.
    pub(crate) fn load(dir: &Path, threads: Option<usize>) -> Result<OnnxPairModel> {
        let path = model_file(dir)?;
        let threads =
            threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if threads == 0 {
            return Err(LocalError::Options {
                message: "`threads` must be at least 1".into(),
            });
        }
        let pad_id = pad_token_id(dir)?;
        let environment = runtime()?;
        let session = Session::builder(&environment)
            .and_then(|b| Ok(b.with_intra_threads(threads)?))
            // No busy-waiting between runs: the rest of an evaluation shares the cores.
            .and_then(|b| Ok(b.with_intra_op_spinning(false)?))
            .map_err(|e| LocalError::Runtime {
                message: format!("cannot set up an ONNX Runtime session: {e}"),
            })?
            .commit_from_file(&path)
            .map_err(|e| {
                LocalError::bad_file(
                    &path,
                    format!(
                        "ONNX Runtime cannot load it (expected an ONNX model, {EXPECTED_IO}): {e}"
                    ),
                )
            })?;
        let inputs = graph_inputs(&path, &session)?;
        let (output, labels) = logits_output(&path, &session)?;
        Ok(OnnxPairModel {
            path,
            session: Mutex::new(session),
            inputs,
            output,
            labels,
            pad_id,
        })
    }

    /// The ONNX file the model was loaded from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The number of labels the graph declares for its logits (`None`: a dynamic axis).
    pub(crate) fn labels(&self) -> Option<usize> {
        self.labels
    }

    /// The logits of `rows` (tokenised pairs, special tokens included), `[rows][labels]`, from
    /// one run over the rows padded to the longest. No rows give no logits.
    pub(crate) fn logits(&self, rows: &[&Encoded]) -> Result<Vec<Vec<f32>>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let batch = rows.len();
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        if width == 0 {
            return Err(LocalError::inference("every row of the batch is empty"));
        }
        let mut ids = vec![self.pad_id; batch * width];
        let mut mask = vec![0i64; batch * width];
        let mut type_ids = vec![0i64; batch * width];
        for (b, row) in rows.iter().enumerate() {
            if row.type_ids.len() != row.ids.len() {
                return Err(LocalError::inference(format!(
                    "row {b} has {} token ids but {} token type ids",
                    row.ids.len(),
                    row.type_ids.len()
                )));
            }
            let at = b * width;
            for (j, (&id, &ty)) in row.ids.iter().zip(&row.type_ids).enumerate() {
                ids[at + j] = i64::from(id);
                type_ids[at + j] = i64::from(ty);
                mask[at + j] = 1;
            }
        }
        let mut feeds: Vec<(&str, SessionInputValue<'static>)> = Vec::new();
        for input in &self.inputs {
            // Input names are unique in a graph: each matrix is fed at most once.
            let data = std::mem::take(match input.feed {
                Feed::Ids => &mut ids,
                Feed::Mask => &mut mask,
                Feed::TypeIds => &mut type_ids,
            });
            let value = if input.int32 {
                let narrow = data
                    .into_iter()
                    .map(i32::try_from)
                    .collect::<std::result::Result<Vec<i32>, _>>()
                    .map_err(|_| {
                        LocalError::inference(format!(
                            "a value of `{}` does not fit the graph's int32 input",
                            input.name
                        ))
                    })?;
                SessionInputValue::from(
                    Tensor::from_array(([batch, width], narrow)).map_err(LocalError::inference)?,
                )
            } else {
                SessionInputValue::from(
                    Tensor::from_array(([batch, width], data)).map_err(LocalError::inference)?,
                )
            };
            feeds.push((input.name.as_str(), value));
        }
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let outputs = session.run(feeds).map_err(|e| {
            LocalError::inference(format!("{}: ONNX Runtime: {e}", self.path.display()))
        })?;
        let logits = outputs.get(&self.output).ok_or_else(|| {
            LocalError::inference(format!(
                "{}: the run gave no output `{}`",
                self.path.display(),
                self.output
            ))
        })?;
        let (shape, data) = logits.try_extract_tensor::<f32>().map_err(|e| {
            LocalError::inference(format!(
                "{}: output `{}`: {e}",
                self.path.display(),
                self.output
            ))
        })?;
        let labels = match **shape {
            [b, n] if b == batch as i64 && n > 0 => n as usize,
            _ => {
                return Err(LocalError::inference(format!(
                    "{}: output `{}` has shape {shape}, expected [{batch}, labels]",
                    self.path.display(),
                    self.output
                )))
            }
        };
        Ok(data.chunks(labels).map(<[f32]>::to_vec).collect())
    }
}

/// The ONNX graph of the folder `dir`: the first of [`MODEL_FILES`] that exists.
fn model_file(dir: &Path) -> Result<PathBuf> {
    let expected = "a folder with an ONNX sequence-pair classifier: model.onnx or \
                    onnx/model.onnx, config.json, tokenizer.json";
    if !dir.exists() {
        return Err(LocalError::MissingPath {
            path: dir.to_path_buf(),
            expected: expected.into(),
        });
    }
    if !dir.is_dir() {
        return Err(LocalError::bad_file(
            dir,
            format!("expected {expected}, found a file"),
        ));
    }
    MODEL_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| LocalError::MissingFile {
            dir: dir.to_path_buf(),
            file: MODEL_FILES[0].into(),
            expected: format!(
                "the ONNX graph of a sequence classifier as optimum exports it: {} \
                 (`optimum-cli export onnx --task text-classification`)",
                MODEL_FILES.join(" or ")
            ),
        })
}

/// `pad_token_id` of `dir/config.json` when the file exists and names one, else 0.
fn pad_token_id(dir: &Path) -> Result<i64> {
    let path = dir.join("config.json");
    if !path.is_file() {
        return Ok(0);
    }
    match files::read_json(&path)?.get("pad_token_id") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v.as_i64().filter(|&id| id >= 0).ok_or_else(|| {
            LocalError::bad_file(
                &path,
                format!("pad_token_id is {v}, expected a token id (an integer ≥ 0)"),
            )
        }),
    }
}

/// The process's ONNX Runtime environment, loading the library from `ORT_DYLIB_PATH` the first
/// time.
fn runtime() -> Result<Environment> {
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(environment) = slot.as_ref() {
        return Ok(environment.clone());
    }
    let library = runtime_library()?;
    let builder = ort::init_from(&library).map_err(|e| LocalError::Runtime {
        message: format!(
            "{ORT_DYLIB_PATH}={}: cannot load ONNX Runtime: {e} (expected {})",
            library.display(),
            how_to_get_runtime()
        ),
    })?;
    let environment = builder
        .with_name("oloproof")
        .with_telemetry(false)
        .build()
        .map_err(|e| LocalError::Runtime {
            message: format!(
                "{ORT_DYLIB_PATH}={}: cannot start ONNX Runtime: {e}",
                library.display()
            ),
        })?;
    environment.set_log_level(ort::logging::LogLevel::Warning);
    *slot = Some(environment.clone());
    Ok(environment)
}

/// The absolute path of ONNX Runtime's library from `ORT_DYLIB_PATH`, or a
/// [`LocalError::Runtime`] saying how to get it.
fn runtime_library() -> Result<PathBuf> {
    let Some(value) = std::env::var_os(ORT_DYLIB_PATH).filter(|v| !v.is_empty()) else {
        return Err(LocalError::Runtime {
            message: format!(
                "ONNX models need ONNX Runtime, which is loaded at run time: set {ORT_DYLIB_PATH} \
                 to {}",
                how_to_get_runtime()
            ),
        });
    };
    let path = PathBuf::from(value);
    if !path.is_file() {
        return Err(LocalError::Runtime {
            message: format!(
                "{ORT_DYLIB_PATH}={}: no such file (expected {})",
                path.display(),
                how_to_get_runtime()
            ),
        });
    }
    std::fs::canonicalize(&path).map_err(|e| LocalError::Runtime {
        message: format!("{ORT_DYLIB_PATH}={}: {e}", path.display()),
    })
}

/// What the runtime library is and where to get it.
fn how_to_get_runtime() -> String {
    format!(
        "the path of ONNX Runtime's shared library libonnxruntime.so, version 1.17 or later: \
         `pip install onnxruntime=={TESTED_ONNXRUNTIME}` installs it as \
         <site-packages>/onnxruntime/capi/libonnxruntime.so.{TESTED_ONNXRUNTIME}"
    )
}

/// The graph's inputs, each matched to what it is fed; an input a sequence classifier does
/// not take, a non-integer or non-matrix input, or a missing `input_ids` is an error.
fn graph_inputs(path: &Path, session: &Session) -> Result<Vec<GraphInput>> {
    let listed = || {
        session
            .inputs()
            .iter()
            .map(|i| format!("`{}`: {}", i.name(), i.dtype()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mismatch = |what: String| {
        LocalError::bad_file(
            path,
            format!(
                "{what}; the graph's inputs are {}; expected {EXPECTED_IO}",
                listed()
            ),
        )
    };
    let mut inputs = Vec::new();
    for input in session.inputs() {
        let feed = match input.name() {
            "input_ids" => Feed::Ids,
            "attention_mask" => Feed::Mask,
            "token_type_ids" => Feed::TypeIds,
            other => {
                return Err(mismatch(format!(
                    "input `{other}` is not one a sequence classifier takes"
                )))
            }
        };
        let int32 = match input.dtype() {
            ValueType::Tensor {
                ty: TensorElementType::Int64,
                shape,
                ..
            } if shape.len() == 2 => false,
            ValueType::Tensor {
                ty: TensorElementType::Int32,
                shape,
                ..
            } if shape.len() == 2 => true,
            other => {
                return Err(mismatch(format!(
                    "input `{}` is {}, not integers [batch, sequence]",
                    input.name(),
                    other
                )))
            }
        };
        inputs.push(GraphInput {
            name: input.name().to_string(),
            feed,
            int32,
        });
    }
    if !inputs.iter().any(|i| i.feed == Feed::Ids) {
        return Err(mismatch("the graph has no input `input_ids`".into()));
    }
    Ok(inputs)
}

/// The output read as the logits (`logits`, else the first) and the number of labels its shape
/// declares; it must be a float32 matrix.
fn logits_output(path: &Path, session: &Session) -> Result<(String, Option<usize>)> {
    let outputs = session.outputs();
    let Some(output) = outputs
        .iter()
        .find(|o| o.name() == "logits")
        .or_else(|| outputs.first())
    else {
        return Err(LocalError::bad_file(
            path,
            format!("the graph has no outputs; expected {EXPECTED_IO}"),
        ));
    };
    match output.dtype() {
        ValueType::Tensor {
            ty: TensorElementType::Float32,
            shape,
            ..
        } if shape.len() == 2 => {
            let labels = usize::try_from(shape[1]).ok().filter(|&n| n > 0);
            Ok((output.name().to_string(), labels))
        }
        other => Err(LocalError::bad_file(
            path,
            format!(
                "output `{}` is {}, not float32 logits [batch, labels]; expected {EXPECTED_IO}",
                output.name(),
                other
            ),
        )),
    }
}

/// The raw logits of an ONNX sequence-pair classifier folder (`model.onnx` or
/// `onnx/model.onnx`, `tokenizer.json`, optionally `config.json` for `pad_token_id`): the
/// graph's output for tokenised `(premise, hypothesis)` pairs, without labels, windows or
/// probabilities. For checking an ONNX export against its reference and for tests; judges use
/// [`PairClassifier`](crate::PairClassifier).
///
/// ONNX Runtime is loaded from `ORT_DYLIB_PATH` (see the crate's `onnx` feature).
///
/// ```
/// use std::path::Path;
/// use oloproof_local::{LocalError, OnnxClassifierRaw};
///
/// let err = OnnxClassifierRaw::load(Path::new("models/none"), None).unwrap_err();
/// assert!(matches!(err, LocalError::MissingPath { .. }));
/// assert!(err.to_string().contains("model.onnx"), "{err}");
/// ```
#[derive(Debug)]
pub struct OnnxClassifierRaw {
    model: OnnxPairModel,
    tokenizer: tokenizers::Tokenizer,
}

impl OnnxClassifierRaw {
    /// Loads the folder `dir` with `threads` intra-op threads (default: every core). Errors as
    /// the folder's files or ONNX Runtime's library are missing or malformed, each naming the
    /// file (or `ORT_DYLIB_PATH`) and what was expected.
    pub fn load(dir: &Path, threads: Option<usize>) -> Result<OnnxClassifierRaw> {
        let model = OnnxPairModel::load(dir, threads)?;
        let tokenizer = files::tokenizer(dir)?;
        Ok(OnnxClassifierRaw { model, tokenizer })
    }

    /// The ONNX file the graph was loaded from.
    pub fn model_file(&self) -> &Path {
        self.model.path()
    }

    /// The number of labels the graph's `logits` output declares (`None`: a dynamic axis).
    pub fn declared_labels(&self) -> Option<usize> {
        self.model.labels()
    }

    /// The logits of each `(premise, hypothesis)` pair, `[pairs][labels]`: the pairs are
    /// tokenised with special tokens, cut to `max_length` tokens (longest side first) and run
    /// as one batch padded to the longest pair.
    pub fn logits(&self, pairs: &[(String, String)], max_length: usize) -> Result<Vec<Vec<f32>>> {
        let encoded = crate::bert::encode_pairs(&self.tokenizer, pairs, max_length)?;
        let rows: Vec<&Encoded> = encoded.iter().collect();
        self.model.logits(&rows)
    }
}
