//! A BERT encoder forward pass over the model's safetensors weights (memory-mapped, read once),
//! with matrix products by the gemm crate. The same pass runs the BERT family's variants: RoBERTa's
//! and MPNet's positions, DistilBERT's names, NomicBERT (rotary positions, SwiGLU) and JinaBERT
//! (ALiBi, gated GELU). Sequences are packed without padding: the dense layers
//! run on all real tokens of a batch at once and attention runs per sequence and head, so no work
//! is spent on pad tokens and no attention mask is needed.

//!
//! `config` reads config.json, `load` the weights, `forward` runs the pass.

mod attention;
mod config;
mod error;
mod forward;
mod load;

use super::lowp::{Packed, Precision};
pub use config::{nomic_unsupported, BertConfig, Family, NATIVE_TYPES};
pub use error::BertError;
pub(crate) use load::f32_values;
pub(in crate::embed) use load::word_table;

/// A Linear layer's weight (n x k): f32 as read, or packed for a reduced precision.
enum Dense {
    F32(Vec<f32>),
    Packed(Packed),
}

impl Dense {
    fn new(w: Vec<f32>, n: usize, k: usize, precision: Precision) -> Dense {
        match precision {
            Precision::F32 => Dense::F32(w),
            p => Dense::Packed(Packed::new(&w, n, k, p)),
        }
    }

    /// The row length of the bf16 input this layer's product reads (`Packed::matmul_rounded`),
    /// where its weights are bf16; None for f32 and int8, whose products take f32 rows.
    fn rounded_stride(&self) -> Option<usize> {
        match self {
            Dense::Packed(p) if p.precision() == Precision::Bf16 => Some(p.bf16_stride()),
            _ => None,
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Dense::F32(w) => w.len() * 4,
            Dense::Packed(p) => p.bytes(),
        }
    }
}

struct Layer {
    /// Query, key and value projections stacked: (3 hidden) x hidden, and their biases.
    qkv_w: Dense,
    qkv_b: Vec<f32>,
    out_w: Dense,
    out_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    inter_w: Dense,
    inter_b: Vec<f32>,
    down_w: Dense,
    down_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

pub struct Bert {
    pub config: BertConfig,
    /// The arithmetic of the dense layers.
    pub precision: Precision,
    word: Vec<f32>,
    position: Vec<f32>,
    /// The token type table (rows x hidden); one zero row when the model has none.
    token_types: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    /// MPNet's relative position bias: (buckets x heads, row-major) and the bucket count.
    rel_bias: Option<(Vec<f32>, usize)>,
}

#[cfg(test)]
mod tests {
    use super::attention::alibi_slopes;
    use super::forward::{gate_rows, groups, linear, GROUP_BYTES};
    use super::load::table_rows;
    use super::*;
    use crate::embed::kernels::Activation;
    use safetensors::{Dtype, SafeTensors};

    /// The product's unsafe call reads by the lengths it is told: weights or inputs shorter than
    /// the shape stop at the check, naming the shape, instead of reading past the buffer.
    #[test]
    fn linear_checks_its_lengths() {
        let w = Dense::F32(vec![0.5; 6]);
        let mut out = vec![0.0; 4];
        linear(&[1.0; 6], (2, 3, 2), &w, None, &mut out, true);
        assert_eq!(out, [1.5; 4]);
        for (x, w, n) in [
            (vec![1.0; 5], vec![0.5; 6], 2),
            (vec![1.0; 6], vec![0.5; 5], 2),
        ] {
            let why = std::panic::catch_unwind(move || {
                let mut out = vec![0.0; 4];
                linear(&x, (2, 3, n), &Dense::F32(w), None, &mut out, true)
            })
            .unwrap_err();
            let why = why.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(why.contains("linear:"), "{why}");
        }
    }

    /// A table whose shape is not rows x columns (a scalar, a vector, no rows) is an error
    /// naming the tensor, not a panic in the embedder's thread.
    #[test]
    fn malformed_tables_are_refused_by_name() {
        use safetensors::tensor::TensorView;
        let four = [0u8; 16];
        let views = [
            (
                "scalar",
                TensorView::new(Dtype::F32, vec![], &four[..4]).unwrap(),
            ),
            (
                "vector",
                TensorView::new(Dtype::F32, vec![4], &four).unwrap(),
            ),
            (
                "empty",
                TensorView::new(Dtype::F32, vec![0, 4], &[]).unwrap(),
            ),
            (
                "table",
                TensorView::new(Dtype::F32, vec![2, 2], &four).unwrap(),
            ),
        ];
        let bytes =
            safetensors::serialize(views.iter().map(|(n, v)| (*n, v.clone())), None).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        for name in ["scalar", "vector", "empty"] {
            let err = table_rows(&st, name).unwrap_err().to_string();
            assert!(
                err.contains(name) && err.contains("expected a table"),
                "{err}"
            );
        }
        assert_eq!(table_rows(&st, "table").unwrap(), 2);
        assert!(table_rows(&st, "missing")
            .unwrap_err()
            .to_string()
            .contains("no tensor"));
    }

    /// The ALiBi paper's slopes: 1/2 .. 1/256 for 8 heads; for 12, those 8 then 2^-0.5,
    /// 2^-1.5, 2^-2.5, 2^-3.5 (every other slope of the 16-head series).
    /// Groups cover every sequence once and in order, their rows run on without a gap, each
    /// sequence's start is counted from its group's, and a group closes once it reaches the
    /// target (one long sequence alone, empty ones carried along).
    #[test]
    fn groups_cut_the_batch_in_order() {
        let width = 3 * 384;
        let target = GROUP_BYTES / (width * 4);
        let lens = [0, 200, 300, 5, 0, 2 * target, 1, 1, 0, target - 1, 1, 7];
        let seqs: Vec<Vec<u32>> = lens.iter().map(|&n| vec![1; n]).collect();
        let gs = groups(&seqs, width);
        let (mut seq, mut row) = (0, 0);
        for (i, g) in gs.iter().enumerate() {
            assert_eq!((g.seqs.start, g.rows.start), (seq, row));
            let mut at = 0;
            for (k, s) in g.seqs.clone().enumerate() {
                assert_eq!(g.starts[k], at);
                at += lens[s];
            }
            assert_eq!(g.rows.len(), at);
            let last = i + 1 == gs.len();
            assert!(last || g.rows.len() >= target, "group {i} closed early");
            // Closed as soon as it reached the target: without its last sequence it had not.
            assert!(at - lens[g.seqs.end - 1] < target || g.seqs.len() == 1);
            (seq, row) = (g.seqs.end, g.rows.end);
        }
        assert_eq!((seq, row), (lens.len(), lens.iter().sum()));
        assert!(groups(&[], width).is_empty());
        assert_eq!(groups(&[vec![]], width).len(), 1);
    }

    #[test]
    fn alibi_slopes_follow_the_paper() {
        let eight: Vec<f32> = (1..=8).map(|k| 0.5f32.powi(k)).collect();
        assert_eq!(alibi_slopes(8), eight);
        let twelve = alibi_slopes(12);
        assert_eq!(&twelve[..8], &eight[..]);
        for (got, e) in twelve[8..].iter().zip([0.5f32, 1.5, 2.5, 3.5]) {
            assert!((got - 2f32.powf(-e)).abs() < 1e-7, "{got}");
        }
    }

    /// A gated row: SiLU(gate) x value and GELU(gate) x value, biases added to both halves.
    #[test]
    fn gates_multiply_the_activated_half_by_the_other() {
        let gates = [1.0f32, -2.0, 3.0, 0.5];
        let bias = [0.0f32, 1.0, 0.0, 0.5];
        let mut out = [0.0f32; 2];
        gate_rows(&mut out, &gates, &bias, Activation::Silu);
        let silu = |x: f32| x / (1.0 + (-x).exp());
        assert!((out[0] - silu(1.0) * 3.0).abs() < 1e-6);
        assert!((out[1] - silu(-1.0) * 1.0).abs() < 1e-6);
        gate_rows(&mut out, &gates, &bias, Activation::Gelu);
        assert!((out[0] - 0.841_344_7 * 3.0).abs() < 1e-5, "{}", out[0]);
    }

    /// Each way a model folder fails to load is its own variant, naming the file.
    #[test]
    fn load_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("chunkscope-bert-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config.json");
        assert!(matches!(
            Bert::load(&dir),
            Err(BertError::Config(crate::embed::hf_config::HfConfigError::Read { path, .. })) if path == config
        ));
        std::fs::write(&config, r#"{"model_type": "gpt2", "hidden_size": 8}"#).unwrap();
        let err = Bert::load(&dir).err().unwrap();
        assert!(
            matches!(&err, BertError::Refused { path, why } if path == &config && why.contains("gpt2")),
            "{err:?}"
        );
        std::fs::write(
            &config,
            r#"{"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2,
                "num_hidden_layers": 1, "intermediate_size": 16, "max_position_embeddings": 16}"#,
        )
        .unwrap();
        let err = Bert::load(&dir).err().unwrap();
        let weights = dir.join("model.safetensors");
        assert!(
            matches!(&err, BertError::Open { path, .. } if path == &weights),
            "{err:?}"
        );
        assert!(err.to_string().contains("cannot open the weights"), "{err}");
        std::fs::write(&weights, b"not safetensors").unwrap();
        assert!(matches!(
            Bert::load(&dir),
            Err(BertError::NotSafetensors { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
