//! Another embedding model (`[model] compare`) or another precision of the native backend: what
//! came from the one in force is dropped and the new one is asked for.

use chunkscope_core::embed::lowp::Precision;
use chunkscope_core::embed::BackendKind;

use super::{Cmd, Model};

impl Model {
    /// The next model of `[model] compare`: everything that came from the old one is dropped
    /// and the corpus is read again with the new tokenizer; knobs, view and a pinned eval A stay.
    pub(super) fn next_model(&mut self) -> Vec<Cmd> {
        if self.models.len() < 2 {
            self.info = Some(
                "one model: list others in workbench.toml [model] compare = [\"id or folder\", ...]"
                    .into(),
            );
            return Vec::new();
        }
        self.model_index = (self.model_index + 1) % self.models.len();
        self.switch_model()
    }

    /// The next precision of the native backend (f32, bf16, int8), on the same model: its
    /// workers are restarted as for another model, so a pinned eval A compares precisions.
    pub(super) fn next_precision(&mut self) -> Vec<Cmd> {
        if self.backend_kind != BackendKind::Native {
            self.info = Some(format!(
                "precision: only the native backend has bf16 and int8 (vectors come from {})",
                self.backend
            ));
            return Vec::new();
        }
        self.precision = match self.precision {
            Precision::F32 => Precision::Bf16,
            Precision::Bf16 => Precision::Int8,
            Precision::Int8 => Precision::F32,
        };
        self.switch_model()
    }

    /// Drop everything that came from the model in force and ask for `models[model_index]` at
    /// `precision`.
    fn switch_model(&mut self) -> Vec<Cmd> {
        // Before the session is configured there is no model to switch from.
        let Some(model) = self.models.get(self.model_index).cloned() else {
            return Vec::new();
        };
        self.engine = None;
        self.chunking = None;
        self.partial = None;
        self.embed = None;
        self.chunks.probe = None;
        self.query.results = None;
        self.query.reranked = None;
        self.last_reload = Some(format!("model {model} {}", self.precision));
        self.generation += 1;
        self.loading = true;
        vec![Cmd::SwitchModel {
            model,
            precision: self.precision,
            generation: self.generation,
        }]
    }
}
