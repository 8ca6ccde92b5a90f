//! A BERT encoder for CPU inference, tuned for throughput: the texts of a batch are packed
//! into one `[tokens, hidden]` matrix without padding, each layer runs four matrix products
//! (fused query/key/value, attention output, intermediate, output) through candle, and
//! everything between them is one fused, multi-threaded pass: attention per text (bias,
//! scaled scores, softmax and weighted sum), bias + GELU, and bias + residual + layer norm.
//!
//! It reads the weights of candle-transformers' `BertModel` (the Hugging Face names) and
//! computes the same function: a padded token only ever met the other tokens of its text
//! through a softmax weight of exactly zero, so dropping the padding changes no real token's
//! vector beyond rounding.
//!
//! The RoBERTa family (`model_type` `roberta`, `xlm-roberta`, `camembert`) has the same
//! layers but numbers positions as `transformers`' `create_position_ids_from_input_ids`: from
//! `pad_token_id + 1`, counting only the tokens that are not `pad_token_id` (a pad token itself
//! sits at position `pad_token_id`), so `max_position_embeddings - pad_token_id - 1` tokens fit.

use candle_core::{
    bail, CpuStorage, CustomOp1, CustomOp2, DType, Device, Layout, Result, Shape, Tensor,
};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct};
use rayon::prelude::*;

use crate::bert::Encoded;

/// Rows per rayon task in the row-wise passes (layer norm, activation).
const ROWS_PER_TASK: usize = 16;

/// The encoder's output for a batch: every real token's vector, texts one after another.
pub(crate) struct Packed {
    /// `[tokens, hidden]`, row-major.
    pub hidden: Vec<f32>,
    /// Where each text's rows start (`texts + 1` entries; the last is the token count).
    pub offsets: Vec<usize>,
    /// The hidden size.
    pub width: usize,
}

impl Packed {
    /// The rows of text `i`.
    pub fn text(&self, i: usize) -> &[f32] {
        &self.hidden[self.offsets[i] * self.width..self.offsets[i + 1] * self.width]
    }
}

/// The `model_type`s whose positions start after the padding index (RoBERTa's embeddings).
pub(crate) const ROBERTA_MODEL_TYPES: &[&str] = &["roberta", "xlm-roberta", "camembert"];

/// Whether `model_type` is of the RoBERTa family ([`ROBERTA_MODEL_TYPES`]).
pub(crate) fn is_roberta(model_type: Option<&str>) -> bool {
    model_type.is_some_and(|t| ROBERTA_MODEL_TYPES.contains(&t))
}

/// How the encoder numbers the positions of a text's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Positions {
    /// BERT: `0, 1, 2, …`.
    FromZero,
    /// RoBERTa: `pad + 1, pad + 2, …` over the tokens that are not `pad`; a `pad` token is
    /// at position `pad` and is not counted.
    AfterPadding(usize),
}

/// The tokens a text may have: `max_position_embeddings`, less the RoBERTa family's offset of
/// `pad_token_id + 1` (so 512 for RoBERTa's 514 positions); 0 when the offset takes them all.
pub(crate) fn max_tokens(config: &Config) -> usize {
    let offset = if is_roberta(config.model_type.as_deref()) {
        config.pad_token_id.saturating_add(1)
    } else {
        0
    };
    config.max_position_embeddings.saturating_sub(offset)
}

/// The loaded encoder.
pub(crate) struct Encoder {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    vocab: usize,
    /// Tokens per text ([`max_tokens`]).
    max_tokens: usize,
    numbering: Positions,
    types: usize,
}

struct Layer {
    qkv: Tensor,
    attention: Attention,
    attn_out: Tensor,
    attn_norm: AddNorm,
    intermediate: Tensor,
    activation: BiasAct,
    output: Tensor,
    out_norm: AddNorm,
}

impl Encoder {
    /// Loads the encoder under `vb` (`embeddings.*`, `encoder.layer.N.*`), or under
    /// `vb.pp(model_type)` as candle-transformers does when the first fails.
    pub fn load(vb: VarBuilder, config: &Config) -> Result<Encoder> {
        match Encoder::load_at(vb.clone(), config) {
            Ok(e) => Ok(e),
            Err(err) => match &config.model_type {
                Some(t) => Encoder::load_at(vb.pp(t), config).map_err(|_| err),
                None => Err(err),
            },
        }
    }

    fn load_at(vb: VarBuilder, config: &Config) -> Result<Encoder> {
        let h = config.hidden_size;
        let heads = config.num_attention_heads;
        let eps = config.layer_norm_eps;
        let emb = vb.pp("embeddings");
        let table = |name: &str, rows: usize| -> Result<Vec<f32>> {
            emb.pp(name)
                .get((rows, h), "weight")?
                .flatten_all()?
                .to_vec1::<f32>()
        };
        let numbering = if is_roberta(config.model_type.as_deref()) {
            Positions::AfterPadding(config.pad_token_id)
        } else {
            Positions::FromZero
        };
        let word = table("word_embeddings", config.vocab_size)?;
        let position = table("position_embeddings", config.max_position_embeddings)?;
        let token_type = table("token_type_embeddings", config.type_vocab_size)?;
        let embed_norm = Norm::load(h, eps, emb.pp("LayerNorm"))?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), config, heads))
            .collect::<Result<Vec<_>>>()?;
        Ok(Encoder {
            word,
            position,
            token_type,
            embed_norm,
            layers,
            hidden: h,
            vocab: config.vocab_size,
            max_tokens: max_tokens(config),
            numbering,
            types: config.type_vocab_size,
        })
    }

    /// Every real token's last hidden state, for texts of any lengths (none empty).
    pub fn forward(&self, rows: &[&Encoded]) -> Result<Packed> {
        let h = self.hidden;
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        offsets.push(0);
        for r in rows {
            if r.len() > self.max_tokens {
                bail!(
                    "a text of {} tokens is longer than the model's {} positions",
                    r.len(),
                    self.max_tokens
                );
            }
            if let Some(&id) = r.ids.iter().find(|&&id| id as usize >= self.vocab) {
                bail!("token id {id} is outside the vocabulary of {}", self.vocab);
            }
            if let Some(&t) = r.type_ids.iter().find(|&&t| t as usize >= self.types) {
                bail!("token type {t} is outside the {} types", self.types);
            }
            offsets.push(offsets.last().copied().unwrap_or(0) + r.len());
        }
        let tokens = offsets.last().copied().unwrap_or(0);
        if tokens == 0 {
            return Ok(Packed {
                hidden: Vec::new(),
                offsets,
                width: h,
            });
        }
        // Embeddings: word + token type + position, then layer norm; one task per text.
        let mut x = vec![0f32; tokens * h];
        let mut parts: Vec<(&&Encoded, &mut [f32])> = Vec::with_capacity(rows.len());
        let mut rest = x.as_mut_slice();
        for r in rows {
            let (head, tail) = rest.split_at_mut(r.len() * h);
            parts.push((r, head));
            rest = tail;
        }
        parts.into_par_iter().for_each(|(r, out)| {
            let mut counted = 0;
            for (i, row) in out.chunks_exact_mut(h).enumerate() {
                let id = r.ids[i];
                // At most `max_tokens` tokens, so every position is inside the table.
                let pos = match self.numbering {
                    Positions::FromZero => i,
                    Positions::AfterPadding(pad) if id as usize == pad => pad,
                    Positions::AfterPadding(pad) => {
                        counted += 1;
                        pad + counted
                    }
                };
                let w = &self.word[id as usize * h..][..h];
                let t = &self.token_type[r.type_ids[i] as usize * h..][..h];
                let p = &self.position[pos * h..][..h];
                for (((o, &w), &t), &p) in row.iter_mut().zip(w).zip(t).zip(p) {
                    *o = w + t + p;
                }
                self.embed_norm.apply(row);
            }
        });
        let mut x = Tensor::from_vec(x, (tokens, h), &Device::Cpu)?;
        let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
        for layer in &self.layers {
            x = layer.forward(&x, &lengths)?;
        }
        Ok(Packed {
            hidden: x.flatten_all()?.to_vec1::<f32>()?,
            offsets,
            width: h,
        })
    }
}

impl Layer {
    fn load(vb: VarBuilder, config: &Config, heads: usize) -> Result<Layer> {
        let h = config.hidden_size;
        let inter = config.intermediate_size;
        let eps = config.layer_norm_eps;
        let attn = vb.pp("attention");
        let sa = attn.pp("self");
        let (wq, bq) = dense(sa.pp("query"), h, h)?;
        let (wk, bk) = dense(sa.pp("key"), h, h)?;
        let (wv, bv) = dense(sa.pp("value"), h, h)?;
        // One product for the three projections: `[h, 3h]`, query | key | value.
        let qkv = Tensor::cat(&[&wq, &wk, &wv], 0)?;
        let mut bias = bq;
        bias.extend(bk);
        bias.extend(bv);
        let (attn_out, bo) = dense(attn.pp("output").pp("dense"), h, h)?;
        let attn_norm = AddNorm {
            bias: bo,
            norm: Norm::load(h, eps, attn.pp("output").pp("LayerNorm"))?,
        };
        let (intermediate, bi) = dense(vb.pp("intermediate").pp("dense"), h, inter)?;
        let (output, bo2) = dense(vb.pp("output").pp("dense"), inter, h)?;
        let out_norm = AddNorm {
            bias: bo2,
            norm: Norm::load(h, eps, vb.pp("output").pp("LayerNorm"))?,
        };
        Ok(Layer {
            qkv: transposed(qkv)?,
            attention: Attention {
                bias,
                heads,
                head_size: h / heads,
            },
            attn_out: transposed(attn_out)?,
            attn_norm,
            intermediate: transposed(intermediate)?,
            activation: BiasAct {
                bias: bi,
                act: config.hidden_act,
            },
            output: transposed(output)?,
            out_norm,
        })
    }

    fn forward(&self, x: &Tensor, lengths: &[usize]) -> Result<Tensor> {
        let qkv = x.matmul(&self.qkv)?;
        let context = qkv.apply_op1_no_bwd(&PackedAttention {
            params: &self.attention,
            lengths,
        })?;
        let a = context
            .matmul(&self.attn_out)?
            .apply_op2_no_bwd(x, &self.attn_norm)?;
        let i = a
            .matmul(&self.intermediate)?
            .apply_op1_no_bwd(&self.activation)?;
        i.matmul(&self.output)?.apply_op2_no_bwd(&a, &self.out_norm)
    }
}

/// A dense layer's `[out, in]` weight and its bias.
fn dense(vb: VarBuilder, input: usize, output: usize) -> Result<(Tensor, Vec<f32>)> {
    let w = vb.get((output, input), "weight")?;
    let b = vb.get(output, "bias")?.to_vec1::<f32>()?;
    Ok((w, b))
}

/// `[out, in]` to a contiguous `[in, out]`, so `x.matmul(&w)` reads it row-major.
fn transposed(w: Tensor) -> Result<Tensor> {
    w.t()?.contiguous()
}

/// The contiguous f32 slice of a custom op's input.
fn slice<'a>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [f32]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s.as_slice::<f32>()?[a..b]),
        None => bail!("expected a contiguous f32 tensor"),
    }
}

/// Layer-norm parameters.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Norm {
    fn load(size: usize, eps: f64, vb: VarBuilder) -> Result<Norm> {
        let ln = candle_nn::layer_norm(size, eps, vb)?;
        let gamma = ln.weight().to_dtype(DType::F32)?.to_vec1::<f32>()?;
        let beta = match ln.bias() {
            Some(b) => b.to_dtype(DType::F32)?.to_vec1::<f32>()?,
            None => vec![0.0; size],
        };
        Ok(Norm {
            gamma,
            beta,
            eps: eps as f32,
        })
    }

    /// Normalises `row` in place (two passes, eight running sums each: vectorises).
    fn apply(&self, row: &mut [f32]) {
        let n = row.len() as f32;
        let mean = sum8(row, |v| v) / n;
        let var = sum8(row, |v| (v - mean) * (v - mean)) / n;
        let inv = 1.0 / (var + self.eps).sqrt();
        for ((v, &g), &b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// `Σ f(x)` over `xs` with eight running sums (vectorises).
#[inline]
fn sum8(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = xs.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().map(|&x| f(x)).sum();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `layer_norm(x + bias + residual)`, row by row.
struct AddNorm {
    bias: Vec<f32>,
    norm: Norm,
}

impl CustomOp2 for AddNorm {
    fn name(&self) -> &'static str {
        "bias-residual-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, r) = (slice(s1, l1)?, slice(s2, l2)?);
        let h = self.bias.len();
        if x.len() != r.len() || x.len() % h != 0 {
            bail!("bias-residual-layer-norm: mismatched shapes");
        }
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(h * ROWS_PER_TASK)
            .zip(x.par_chunks(h * ROWS_PER_TASK))
            .zip(r.par_chunks(h * ROWS_PER_TASK))
            .for_each(|((o, x), r)| {
                for ((o, x), r) in o
                    .chunks_exact_mut(h)
                    .zip(x.chunks_exact(h))
                    .zip(r.chunks_exact(h))
                {
                    for (((o, &x), &r), &b) in o.iter_mut().zip(x).zip(r).zip(&self.bias) {
                        *o = x + b + r;
                    }
                    self.norm.apply(o);
                }
            });
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// `act(x + bias)`, element by element.
struct BiasAct {
    bias: Vec<f32>,
    act: HiddenAct,
}

impl CustomOp1 for BiasAct {
    fn name(&self) -> &'static str {
        "bias-activation"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = slice(s, l)?;
        let n = self.bias.len();
        if x.len() % n != 0 {
            bail!("bias-activation: mismatched shapes");
        }
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(n * ROWS_PER_TASK)
            .zip(x.par_chunks(n * ROWS_PER_TASK))
            .for_each(|(o, x)| {
                for (o, x) in o.chunks_exact_mut(n).zip(x.chunks_exact(n)) {
                    for ((o, &x), &b) in o.iter_mut().zip(x).zip(&self.bias) {
                        *o = x + b;
                    }
                    match self.act {
                        HiddenAct::Gelu => o.iter_mut().for_each(|v| *v = gelu_erf(*v)),
                        HiddenAct::GeluApproximate => {
                            o.iter_mut().for_each(|v| *v = gelu_tanh(*v));
                        }
                        HiddenAct::Relu => o.iter_mut().for_each(|v| *v = v.max(0.0)),
                    }
                }
            });
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }
}

/// GELU with the error function, `x/2 · (1 + erf(x/√2))`, as PyTorch's default `gelu`.
#[inline]
pub(crate) fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// GELU's tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
fn gelu_tanh(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // √(2/π)
    0.5 * x * (1.0 + (C * (x + 0.044_715 * x * x * x)).tanh())
}

/// The error function as a branch-free rational function of odd/even polynomials (the
/// approximation of Eigen and XLA): within 5e-7 of the exact value in f32, and the loop
/// over a slice vectorises.
#[inline]
pub(crate) fn erf(x: f32) -> f32 {
    // Outside [-4, 4], erf is ±1 in f32.
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 - 2.101_024e-6;
    p = p * x2 - 5.692_506_4e-5;
    p = p * x2 - 7.349_906_3e-4;
    p = p * x2 - 2.954_600_2e-3;
    p = p * x2 - 1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 - 2.133_740_6e-4;
    q = q * x2 - 1.682_827e-3;
    q = q * x2 - 7.373_329e-3;
    q = q * x2 - 1.426_474e-2;
    x * p / q
}

/// Self-attention parameters: the query | key | value biases and the heads.
struct Attention {
    bias: Vec<f32>,
    heads: usize,
    head_size: usize,
}

/// Self-attention of packed texts: adds the query/key/value biases, and for each text and
/// head computes `softmax(q·kᵀ/√d)·v` over that text's tokens only.
struct PackedAttention<'a> {
    params: &'a Attention,
    /// Tokens of each text, in packing order.
    lengths: &'a [usize],
}

impl CustomOp1 for PackedAttention<'_> {
    fn name(&self) -> &'static str {
        "packed-attention"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let qkv = slice(s, l)?;
        let a = self.params;
        let d = a.head_size;
        let h = a.heads * d;
        let tokens: usize = self.lengths.iter().sum();
        if qkv.len() != tokens * 3 * h {
            bail!("packed-attention: mismatched shapes");
        }
        let mut starts = Vec::with_capacity(self.lengths.len());
        let mut start = 0;
        for &n in self.lengths {
            starts.push((start, n));
            start += n;
        }
        let scale = 1.0 / (d as f32).sqrt();
        // One task per (text, head), so a single long text still uses every thread.
        let heads: Vec<Vec<f32>> = starts
            .par_iter()
            .flat_map_iter(|&(start, n)| (0..a.heads).map(move |hd| (start, n, hd)))
            .map(|(start, n, hd)| {
                let rows = &qkv[start * 3 * h..(start + n) * 3 * h];
                // This head's q, k, v with biases, each `[n][d]`.
                let take = |m: usize| -> Vec<f32> {
                    let b = &a.bias[m * h + hd * d..][..d];
                    rows.chunks_exact(3 * h)
                        .flat_map(|row| {
                            row[m * h + hd * d..][..d]
                                .iter()
                                .zip(b)
                                .map(|(&x, &b)| x + b)
                        })
                        .collect()
                };
                let (q, k, v) = (take(0), take(1), take(2));
                let mut ctx = vec![0f32; n * d];
                let mut p = vec![0f32; n];
                for (qi, ci) in q.chunks_exact(d).zip(ctx.chunks_exact_mut(d)) {
                    let mut max = f32::NEG_INFINITY;
                    for (pj, kj) in p.iter_mut().zip(k.chunks_exact(d)) {
                        *pj = dot(qi, kj) * scale;
                        max = max.max(*pj);
                    }
                    let mut sum = 0f32;
                    for pj in p.iter_mut() {
                        *pj = (*pj - max).exp();
                        sum += *pj;
                    }
                    for (&pj, vj) in p.iter().zip(v.chunks_exact(d)) {
                        for (c, &x) in ci.iter_mut().zip(vj) {
                            *c += pj * x;
                        }
                    }
                    let inv = 1.0 / sum;
                    ci.iter_mut().for_each(|c| *c *= inv);
                }
                ctx
            })
            .collect();
        let mut out = vec![0f32; tokens * h];
        for (&(start, _), per_head) in starts.iter().zip(heads.chunks_exact(a.heads)) {
            for (hd, ctx) in per_head.iter().enumerate() {
                for (t, c) in ctx.chunks_exact(d).enumerate() {
                    out[(start + t) * h + hd * d..][..d].copy_from_slice(c);
                }
            }
        }
        Ok((CpuStorage::F32(out), (tokens, h).into()))
    }
}

/// A dot product with eight running sums (vectorises).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, ar) = a.split_at(a.len() - a.len() % 8);
    let (bc, br) = b.split_at(ac.len());
    for (x, y) in ac.chunks_exact(8).zip(bc.chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f32 = ar.iter().zip(br).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_within_5e7_of_the_exact_function() {
        // The exact function in f64: Taylor series for |x| ≤ 3, else erfc's continued fraction.
        fn exact(x: f64) -> f64 {
            if x.abs() > 3.0 {
                let mut f = 0.0;
                for k in (1..=60).rev() {
                    f = (k as f64 / 2.0) / (x.abs() + f);
                }
                let erfc = (-x * x).exp() / (std::f64::consts::PI.sqrt() * (x.abs() + f));
                return x.signum() * (1.0 - erfc);
            }
            let (mut term, mut sum) = (x, x);
            for n in 1..200 {
                term *= -x * x / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        }
        let mut worst = 0f64;
        for i in -60_000..=60_000 {
            let x = i as f64 / 10_000.0;
            worst = worst.max((f64::from(erf(x as f32)) - exact(f64::from(x as f32))).abs());
        }
        assert!(worst < 5e-7, "{worst}");
    }
}
