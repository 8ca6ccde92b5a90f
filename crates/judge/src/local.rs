//! `provider: local` judges: the model loaded once when the client is built, and the calls
//! the client dispatches to it (embeddings, pair scores, text classifications, chat
//! completions).
//!
//! Built only with the `local-models` feature; without it, [`load`] fails with a message
//! saying so, and nothing of candle is compiled.

use crate::error::SettingsError;
use crate::settings::JudgeSettings;

/// Whether this build runs `provider: local` judges (the `local-models` feature).
pub const LOCAL_MODELS: bool = cfg!(feature = "local-models");

/// The error of a `provider: local` judge in a build without the `local-models` feature.
pub const WITHOUT_LOCAL_MODELS: &str = "`provider: local` needs local-model support, and this \
     oloproof was built without it (rebuild with the `local-models` cargo feature, which is on by default)";

/// Why a local model cannot be used: a load error (a configuration error, exit 2) or a
/// failed call (`missing` for that case).
#[derive(Debug)]
#[cfg_attr(not(feature = "local-models"), allow(dead_code))]
pub(crate) enum LocalFailure {
    /// The model cannot be loaded or the build lacks the feature.
    Load(String),
    /// One inference call failed.
    Call(String),
}

/// The label probabilities a `kind: classifier` local judge gives one text
/// ([`JudgeClient::classify`](crate::JudgeClient::classify)).
#[derive(Debug, Clone, PartialEq)]
pub struct TextClassification {
    /// The model's labels, in `id2label` order.
    pub labels: Vec<String>,
    /// Each window's probability of each label, `[windows][labels]` (one window for a text
    /// that fits the model; long texts are cut into overlapping windows).
    pub windows: Vec<Vec<f32>>,
    /// The probabilities are independent sigmoids (`problem_type:
    /// multi_label_classification`, or a single-logit model) rather than a softmax over the
    /// labels.
    pub sigmoid: bool,
}

/// One reply of a local chat model.
#[cfg_attr(not(feature = "local-models"), allow(dead_code))]
pub(crate) struct ChatReply {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub truncated: bool,
}

#[cfg(feature = "local-models")]
mod imp {
    use super::*;
    use crate::settings::LocalKind;
    use oloproof_local::{
        Activation, ChatModel, ClassifierOptions, EmbedderOptions, GenerateOptions, PairClassifier,
        SentenceEmbedder, SequenceClassifier, SequenceOptions,
    };

    /// A loaded local model.
    pub(crate) enum LocalModel {
        Embedding(SentenceEmbedder),
        Pairs(PairClassifier),
        Sequence(SequenceClassifier),
        Chat(ChatModel),
    }

    /// The labels of the sequence classifier in `dir` (`config.json` only).
    pub(crate) fn classifier_labels(
        dir: &std::path::Path,
    ) -> Result<Option<Vec<String>>, SettingsError> {
        SequenceClassifier::read_labels(dir)
            .map(Some)
            .map_err(|e| SettingsError::Invalid(e.to_string()))
    }

    impl std::fmt::Debug for LocalModel {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                LocalModel::Embedding(m) => m.fmt(f),
                LocalModel::Pairs(m) => m.fmt(f),
                LocalModel::Sequence(m) => m.fmt(f),
                LocalModel::Chat(m) => m.fmt(f),
            }
        }
    }

    /// Checks the `hf://` path `spec` without the network: well formed, and a GGUF file for
    /// `kind: generate`, a model folder for the other kinds.
    pub(crate) fn check_hub(spec: &str, kind: Option<LocalKind>) -> Result<(), SettingsError> {
        let file = oloproof_local::hub::HubPath::parse(spec)
            .map_err(|e| SettingsError::Hub(e.to_string()))?
            .file;
        match (kind, file) {
            (Some(LocalKind::Generate), None) => Err(SettingsError::Hub(format!(
                "`{spec}`: `kind: generate` takes one GGUF file: hf://ORG/NAME[@REVISION]/FILE.gguf"
            ))),
            (Some(k), Some(_)) if k != LocalKind::Generate => Err(SettingsError::Hub(format!(
                "`{spec}`: `kind: {}` takes a model folder, hf://ORG/NAME[@REVISION] (a .gguf file is for `kind: generate`)",
                k.as_str()
            ))),
            _ => Ok(()),
        }
    }

    /// The cached snapshot folder of the model folder `spec` (`hf://ORG/NAME[@REVISION]`)
    /// when its `config.json` is in the Hugging Face cache of the environment's Hub settings;
    /// no request is made.
    pub(crate) fn cached_hub_folder(spec: &str) -> Option<std::path::PathBuf> {
        use oloproof_local::hub::{self, HubSettings};
        hub::cached_file(spec, "config.json", &HubSettings::from_env())
            .and_then(|config| config.parent().map(std::path::Path::to_path_buf))
    }

    /// Resolves the `hf://` path `spec` ([`check_hub`]) with the Hub settings of the
    /// environment, downloading what the cache lacks.
    pub(crate) fn resolve_hub(
        spec: &str,
        kind: Option<LocalKind>,
    ) -> Result<std::path::PathBuf, SettingsError> {
        use oloproof_local::hub::{self, HubSettings};
        check_hub(spec, kind)?;
        hub::resolve(spec, &HubSettings::from_env())
            .map(|r| r.path)
            .map_err(|e| SettingsError::Hub(e.to_string()))
    }

    /// Loads the model `settings` describe.
    pub(crate) fn load(settings: &JudgeSettings) -> Result<LocalModel, LocalFailure> {
        let path = settings
            .local_path()
            .map_err(|e| LocalFailure::Load(e.to_string()))?;
        let load = |e: oloproof_local::LocalError| LocalFailure::Load(e.to_string());
        Ok(match settings.kind {
            Some(LocalKind::Embedding) | None => LocalModel::Embedding(
                SentenceEmbedder::load(
                    &path,
                    &EmbedderOptions {
                        threads: settings.threads,
                        max_length: settings.max_length,
                        batch_size: settings.batch_size,
                    },
                )
                .map_err(load)?,
            ),
            Some(LocalKind::CrossEncoder) | Some(LocalKind::Nli) => LocalModel::Pairs(
                PairClassifier::load(
                    &path,
                    &ClassifierOptions {
                        threads: settings.threads,
                        max_length: settings.max_length,
                        entailment_label: settings.entailment_label.clone(),
                        batch_size: settings.batch_size,
                        window_overlap: None,
                    },
                )
                .map_err(load)?,
            ),
            Some(LocalKind::Classifier) => LocalModel::Sequence(
                SequenceClassifier::load(
                    &path,
                    &SequenceOptions {
                        threads: settings.threads,
                        max_length: settings.max_length,
                        batch_size: settings.batch_size,
                        window_overlap: None,
                    },
                )
                .map_err(load)?,
            ),
            Some(LocalKind::Generate) => LocalModel::Chat(
                ChatModel::load(
                    &path,
                    &GenerateOptions {
                        threads: settings.threads,
                    },
                )
                .map_err(load)?,
            ),
        })
    }

    impl LocalModel {
        /// The model's content identity (sha256 of config and weights).
        pub(crate) fn identity(&self) -> String {
            match self {
                LocalModel::Embedding(m) => m.identity().to_string(),
                LocalModel::Pairs(m) => m.identity().to_string(),
                LocalModel::Sequence(m) => m.identity().to_string(),
                LocalModel::Chat(m) => m.identity().to_string(),
            }
        }

        pub(crate) fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalFailure> {
            match self {
                LocalModel::Embedding(m) => m
                    .embed(texts)
                    .map_err(|e| LocalFailure::Call(e.to_string())),
                _ => Err(LocalFailure::Call(
                    "embeddings need a `kind: embedding` local judge".into(),
                )),
            }
        }

        pub(crate) fn score_pairs(
            &self,
            pairs: &[(String, String)],
        ) -> Result<Vec<f32>, LocalFailure> {
            match self {
                LocalModel::Pairs(m) => m
                    .score(pairs)
                    .map(|s| s.into_iter().map(|s| s.score).collect())
                    .map_err(|e| LocalFailure::Call(e.to_string())),
                _ => Err(LocalFailure::Call(
                    "pair scores need a `kind: nli` or `kind: cross_encoder` local judge".into(),
                )),
            }
        }

        pub(crate) fn classify(
            &self,
            texts: &[String],
        ) -> Result<Vec<TextClassification>, LocalFailure> {
            match self {
                LocalModel::Sequence(m) => {
                    let sigmoid = m.activation() == Activation::Sigmoid;
                    m.classify(texts)
                        .map(|scores| {
                            scores
                                .into_iter()
                                .map(|s| TextClassification {
                                    labels: m.labels().to_vec(),
                                    windows: s.windows,
                                    sigmoid,
                                })
                                .collect()
                        })
                        .map_err(|e| LocalFailure::Call(e.to_string()))
                }
                _ => Err(LocalFailure::Call(
                    "text classification needs a `kind: classifier` local judge".into(),
                )),
            }
        }

        pub(crate) fn chat(
            &self,
            messages: &[(&str, &str)],
            max_tokens: usize,
        ) -> Result<ChatReply, LocalFailure> {
            match self {
                LocalModel::Chat(m) => m
                    .generate(messages, max_tokens)
                    .map(|g| ChatReply {
                        text: g.text,
                        input_tokens: g.prompt_tokens as u64,
                        output_tokens: g.output_tokens as u64,
                        truncated: g.truncated,
                    })
                    .map_err(|e| LocalFailure::Call(e.to_string())),
                _ => Err(LocalFailure::Call(
                    "LLM judgments need a `kind: generate` local judge".into(),
                )),
            }
        }
    }
}

#[cfg(not(feature = "local-models"))]
mod imp {
    use super::*;

    /// Never constructed: this build has no local models.
    #[derive(Debug)]
    pub(crate) enum LocalModel {}

    pub(crate) fn load(_settings: &JudgeSettings) -> Result<LocalModel, LocalFailure> {
        Err(LocalFailure::Load(WITHOUT_LOCAL_MODELS.into()))
    }

    pub(crate) fn check_hub(
        _spec: &str,
        _kind: Option<crate::settings::LocalKind>,
    ) -> Result<(), SettingsError> {
        Err(SettingsError::WithoutLocalModels)
    }

    /// Without local models nothing is read (the judge's validation says why).
    pub(crate) fn classifier_labels(
        _dir: &std::path::Path,
    ) -> Result<Option<Vec<String>>, SettingsError> {
        Ok(None)
    }

    pub(crate) fn resolve_hub(
        _spec: &str,
        _kind: Option<crate::settings::LocalKind>,
    ) -> Result<std::path::PathBuf, SettingsError> {
        Err(SettingsError::WithoutLocalModels)
    }

    /// Without local models the cache is not read.
    pub(crate) fn cached_hub_folder(_spec: &str) -> Option<std::path::PathBuf> {
        None
    }

    impl LocalModel {
        pub(crate) fn identity(&self) -> String {
            match *self {}
        }
        pub(crate) fn embed(&self, _texts: &[String]) -> Result<Vec<Vec<f32>>, LocalFailure> {
            match *self {}
        }
        pub(crate) fn score_pairs(
            &self,
            _pairs: &[(String, String)],
        ) -> Result<Vec<f32>, LocalFailure> {
            match *self {}
        }
        pub(crate) fn classify(
            &self,
            _texts: &[String],
        ) -> Result<Vec<TextClassification>, LocalFailure> {
            match *self {}
        }
        pub(crate) fn chat(
            &self,
            _messages: &[(&str, &str)],
            _max_tokens: usize,
        ) -> Result<ChatReply, LocalFailure> {
            match *self {}
        }
    }
}

pub(crate) use imp::{
    cached_hub_folder, check_hub, classifier_labels, load, resolve_hub, LocalModel,
};
