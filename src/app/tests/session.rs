//! The session: quitting, help, model and precision switches, setup messages.

use super::*;

#[test]
fn quit_and_help() {
    let mut m = model();
    update(&mut m, key('?'));
    assert!(m.show_help);
    update(&mut m, key('s'));
    assert!(!m.show_help, "any key closes help");
    assert!(matches!(update(&mut m, key('q'))[..], [Cmd::Quit]));
}

#[test]
fn terminate_quits_like_q() {
    let mut m = model();
    assert!(matches!(update(&mut m, Msg::Terminate)[..], [Cmd::Quit]));
    assert!(m.quit);
}

/// `E` asks for the next model of `[model] compare` off the UI thread; a model that cannot be
/// had leaves the previous one, read again; an answer for an older switch is dropped.
#[test]
fn next_model_switches_or_keeps_the_previous_one() {
    let mut m = model();
    assert!(
        update(&mut m, key('E')).is_empty(),
        "one model: nothing to switch to"
    );
    assert!(m
        .info
        .as_deref()
        .is_some_and(|i| i.contains("[model] compare")));
    m.models = vec!["a".into(), "b".into()];
    let cmds = update(&mut m, key('E'));
    let generation = m.generation;
    assert!(
        matches!(&cmds[..], [Cmd::SwitchModel { model, generation: g, .. }] if model == "b" && *g == generation)
    );
    let stale = Msg::ModelReady {
        generation: generation - 1,
        result: Err("late".into()),
    };
    assert!(update(&mut m, stale).is_empty());
    let failed = Msg::ModelReady {
        generation,
        result: Err("model b: not found".into()),
    };
    let cmds = update(&mut m, failed);
    assert!(matches!(cmds[..], [Cmd::Load { generation: g }] if g == generation));
    assert!(m
        .error
        .as_deref()
        .is_some_and(|e| e.contains("the previous model stays")));
}

/// `B` pressed before the session is configured (no model list yet) asks for nothing and
/// does not panic.
#[test]
fn precision_key_before_the_models_are_known() {
    let mut m = model();
    m.models.clear();
    let cmds = update(&mut m, key('B'));
    assert!(cmds.is_empty(), "{cmds:?}");
}

/// `B` cycles the native backend's precision on the same model (f32, bf16, int8, f32), through
/// the same switch as `E`, so a pinned eval A compares precisions; a server has none to cycle.
#[test]
fn next_precision_cycles_on_the_same_model() {
    use chunkscope_core::embed::lowp::Precision;
    let mut m = model();
    m.models = vec!["a".into(), "b".into()];
    m.model_index = 1;
    m.backend = "native f32 · mean".into();
    for want in [Precision::Bf16, Precision::Int8, Precision::F32] {
        let cmds = update(&mut m, key('B'));
        let generation = m.generation;
        assert!(
            matches!(&cmds[..], [Cmd::SwitchModel { model, precision, generation: g }]
                if model == "b" && *precision == want && *g == generation),
            "{cmds:?}"
        );
        assert_eq!(m.precision, want);
    }
    m.backend = "remote http://127.0.0.1:8080/v1 m".into();
    m.backend_kind = chunkscope_core::embed::BackendKind::Remote;
    assert!(update(&mut m, key('B')).is_empty());
    assert!(m
        .info
        .as_deref()
        .is_some_and(|i| i.contains("only the native backend")));
}

/// The terminal side hands the session's setup, a started model and the watcher's mode to the
/// model as messages; update alone writes them.
#[test]
fn setup_model_and_watcher_arrive_as_messages() {
    let mut m = model();
    let cmds = update(
        &mut m,
        Msg::Configured(Box::new(Setup {
            notes: vec!["workbench.toml:3: bad key; using defaults".into()],
            store: Some("jsonl:chunks.jsonl".into()),
            search_k: 7,
            models: vec!["a".into(), "b".into()],
            ..Setup::default()
        })),
    );
    assert!(cmds.is_empty());
    assert_eq!(m.query.k, 7);
    assert_eq!(m.models, ["a", "b"]);
    assert_eq!(m.generation, 1);
    assert_eq!(
        m.error.as_deref(),
        Some("workbench.toml:3: bad key; using defaults")
    );
    assert!(m.notes.iter().any(|n| n.starts_with("stored chunks")));
    update(
        &mut m,
        Msg::Started(Box::new(ModelFacts {
            name: "tiny".into(),
            specials: 3,
            backend: "native bf16".into(),
            warning: Some("the server counts differently".into()),
            ..ModelFacts::default()
        })),
    );
    assert_eq!((m.model_name.as_str(), m.specials), ("tiny", 3));
    assert_eq!(m.error.as_deref(), Some("the server counts differently"));
    update(&mut m, Msg::Watching(Err("a store is not watched".into())));
    assert_eq!(m.watch, "not watching");
    assert!(m.notes.iter().any(|n| n == "a store is not watched"));
}
