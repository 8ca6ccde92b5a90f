//! The local-model error type.
//!
//! Every variant names the file or folder involved and what was expected, so a user who points
//! a judge at the wrong folder learns which file is missing or malformed. The judge layer turns
//! load errors into configuration errors (exit 2) and inference errors into `missing`
//! verdicts.

use std::path::PathBuf;

/// What went wrong loading or running a local model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// The configured path does not exist.
    #[error("{}: no such file or folder (expected {expected})", path.display())]
    MissingPath {
        /// The path as configured.
        path: PathBuf,
        /// What the path should hold.
        expected: String,
    },
    /// A required file of a model folder is absent.
    #[error("{}: missing {file} (expected {expected})", dir.display())]
    MissingFile {
        /// The model folder.
        dir: PathBuf,
        /// The file name that is absent.
        file: String,
        /// What the file holds and where it comes from.
        expected: String,
    },
    /// A file exists but cannot be read or parsed.
    #[error("{}: {message}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The weights do not match `config.json` (a tensor is absent or has another shape).
    #[error("{}: the weights do not match {}: {message}", weights.display(), config.display())]
    WeightsMismatch {
        /// The weights file.
        weights: PathBuf,
        /// The `config.json` they were checked against.
        config: PathBuf,
        /// The tensor and the shapes involved.
        message: String,
    },
    /// The options cannot work with this model (e.g. an entailment label it does not have).
    #[error("{message}")]
    Options {
        /// What is wrong.
        message: String,
    },
    /// The ONNX Runtime library cannot be loaded: `ORT_DYLIB_PATH` is unset, names no file, or
    /// names a file that is not a compatible `libonnxruntime`.
    #[error("{message}")]
    Runtime {
        /// What is wrong and how to get the library.
        message: String,
    },
    /// An `hf://` model path cannot be resolved (see [`crate::hub`]).
    #[error(transparent)]
    Hub(#[from] crate::hub::HubError),
    /// Tokenisation or the forward pass failed.
    #[error("local model inference failed: {message}")]
    Inference {
        /// What the tokenizer or candle said.
        message: String,
    },
}

impl LocalError {
    /// Whether the error is about the model's files or options (a configuration error) rather
    /// than one inference call.
    pub fn is_load_error(&self) -> bool {
        !matches!(self, LocalError::Inference { .. })
    }

    pub(crate) fn bad_file(path: &std::path::Path, message: impl std::fmt::Display) -> Self {
        LocalError::BadFile {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    pub(crate) fn inference(message: impl std::fmt::Display) -> Self {
        LocalError::Inference {
            message: message.to_string(),
        }
    }
}

/// `Result` with [`LocalError`].
pub type Result<T, E = LocalError> = std::result::Result<T, E>;
