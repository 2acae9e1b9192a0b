//! The knob keys: settings, presets, sizes, typed values and the command line they copy.

use super::*;

#[test]
fn knobs_before_load_change_settings_but_send_nothing() {
    let mut m = model();
    assert!(update(&mut m, key('+')).is_empty());
    assert_eq!(m.settings.size, 900);
}

#[test]
fn refused_knob_keeps_settings_and_names_the_setting() {
    let mut m = model();
    let before = m.settings.clone();
    update(&mut m, key(']'));
    assert_eq!(m.settings, before);
    assert!(m.error.as_deref().unwrap().contains("overlap"));
    update(&mut m, key('u'));
    assert!(m.error.as_deref().unwrap().contains("chunking.unit"));
}

#[test]
fn window_cycles_without_rechunking() {
    let mut m = model();
    assert_eq!(m.window().tokens, 128);
    assert!(update(&mut m, key('w')).is_empty());
    assert_eq!(m.window().tokens, 256);
    update(&mut m, key('w'));
    assert_eq!(m.window().tokens, 512);
}

#[test]
fn preset_cycles() {
    let mut m = model();
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::Langchain);
    assert_eq!(
        (m.settings.size, m.settings.overlap, m.settings.unit),
        (1500, 150, Unit::Chars)
    );
    update(&mut m, key('p'));
    assert_eq!(
        (m.settings.size, m.settings.overlap, m.settings.unit),
        (240, 32, Unit::Embed)
    );
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::Markdown);
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::MaxMin);
    assert_eq!(m.settings.overlap, 0);
    // Threshold keys turn the maxmin knobs, in steps of 0.05.
    update(&mut m, key('}'));
    assert_eq!(m.settings.maxmin.fixed_threshold, 0.65);
    update(&mut m, key('('));
    assert_eq!(m.settings.maxmin.c, 0.85);
    // Tuned since, the settings are no preset: the cycle goes on from the one they came from.
    update(&mut m, key('p'));
    assert_eq!(m.settings.strategy, Strategy::TextSplitter);
    // Outside maxmin the threshold keys say where they belong and change nothing.
    let before = m.settings.clone();
    update(&mut m, key('}'));
    assert_eq!(m.settings, before);
    assert!(m.error.as_deref().unwrap().contains("maxmin"));
    // A size turned on the first preset: the next is the second, not the first again.
    let mut m = model();
    update(&mut m, key('p'));
    update(&mut m, key('+'));
    assert_eq!(m.settings.unit, Unit::Chars);
    assert_ne!(m.settings.size, 1500);
    update(&mut m, key('p'));
    assert_eq!(
        (m.settings.size, m.settings.overlap, m.settings.unit),
        (240, 32, Unit::Embed)
    );
}

/// semchunk's automatic size is not stepped to 1: the keys say to type a size, and do nothing.
#[test]
fn size_keys_leave_semchunk_auto_alone() {
    let mut m = model();
    while m.settings.strategy != Strategy::Semchunk {
        update(&mut m, key('p'));
    }
    assert_eq!(m.settings.size, 0);
    let before = m.settings.clone();
    update(&mut m, key('+'));
    update(&mut m, key('-'));
    assert_eq!(m.settings, before);
    assert!(m.error.as_deref().unwrap().contains("auto"));
}

#[test]
fn metadata_and_parents_keys() {
    let mut m = model();
    update(&mut m, key('m'));
    assert_eq!(
        m.settings.metadata.heading,
        chunkscope_core::metadata::Use::Embed
    );
    update(&mut m, key('m'));
    assert_eq!(
        m.settings.metadata.file,
        chunkscope_core::metadata::Use::Embed
    );
    update(&mut m, key('m'));
    assert!(!m.settings.metadata.embeds_anything());
    update(&mut m, key('b'));
    assert!(m.settings.parents);
}

/// + then - (and - then +) come back to the same size and overlap, whatever the steps rounded.
#[test]
fn knob_turns_retrace() {
    let mut m = model();
    update(&mut m, key('p')); // langchain-chars 1500 / 150
    let start = (m.settings.size, m.settings.overlap);
    for keys in ["++--", "--++", "+-+-", "]][[", "[[]]", "+]-["] {
        for c in keys.chars() {
            update(&mut m, key(c));
        }
        assert_eq!((m.settings.size, m.settings.overlap), start, "after {keys}");
    }
    update(&mut m, key('+'));
    update(&mut m, key('+'));
    assert_ne!(m.settings.size, start.0);
}

/// y hands the terminal the headless command line of the knobs on screen.
#[test]
fn copy_gives_the_command_line() {
    let mut m = model();
    update(&mut m, key('p'));
    let cmds = update(&mut m, key('y'));
    let [Cmd::Copy { text }] = &cmds[..] else {
        panic!("{cmds:?}")
    };
    assert_eq!(
        text,
        "chunkscope audit examples --strategy langchain --unit chars --size 1500 --overlap 150 --window auto"
    );
    assert!(m.info.as_deref().unwrap().contains(text.as_str()));
}

/// Y hands the terminal the knobs as code for the strategy's framework: Java for spring-ai,
/// Python for langchain, workbench.toml for chunkscope's own strategies.
#[test]
fn copy_as_code_follows_the_strategy() {
    let mut m = model();
    let copied = |m: &mut Model| {
        let cmds = update(m, key('Y'));
        let [Cmd::Copy { text }] = &cmds[..] else {
            panic!("{cmds:?}")
        };
        (text.clone(), m.info.clone().unwrap_or_default())
    };
    let (java, info) = copied(&mut m);
    assert!(java.contains(".withChunkSize(800)"), "{java}");
    assert!(info.contains("Java for Spring AI"), "{info}");
    update(&mut m, key('p')); // langchain-chars 1500 / 150
    let (py, info) = copied(&mut m);
    assert!(py.contains("chunk_size=1500,"), "{py}");
    assert!(info.contains("Python for LangChain"), "{info}");
    update(&mut m, key('p')); // langchain-tokens
    update(&mut m, key('p')); // markdown
    let (toml, info) = copied(&mut m);
    assert!(toml.contains("strategy = \"markdown\""), "{toml}");
    assert!(info.contains("TOML for workbench.toml"), "{info}");
    // A store's chunks were made by the user's pipeline, not by these knobs.
    m.store = Some("jsonl:chunks.jsonl".into());
    assert!(update(&mut m, key('Y')).is_empty());
    assert!(m.error.as_deref().unwrap().contains("stored chunks"));
}

/// S, O and : open a number prompt: digits only, enter applies through the same rules as the
/// knob keys, esc cancels; ctrl-up / ctrl-down change k in the query pane and run the query again.
#[test]
fn typed_values_and_k() {
    let mut m = model();
    with_chunking(&mut m);
    update(&mut m, key('p')); // langchain-chars 1500 / 150
    update(&mut m, key('S'));
    for c in "12x30".chars() {
        update(&mut m, key(c));
    }
    assert!(
        !m.quit && m.settings.size == 1500,
        "letters do nothing in the prompt"
    );
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(m.settings.size, 1230);
    update(&mut m, key('O'));
    for c in "2000".chars() {
        update(&mut m, key(c));
    }
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(m.settings.overlap, 150, "overlap >= size is refused");
    assert!(m.error.as_deref().unwrap().contains("overlap"));
    update(&mut m, key('O'));
    update(&mut m, key('9'));
    update(&mut m, code(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!((m.settings.overlap, m.prompt.is_none()), (150, true));
    // k in the query pane.
    update(&mut m, key('/'));
    for c in "keys".chars() {
        update(&mut m, key(c));
    }
    update(&mut m, code(KeyCode::Enter, KeyModifiers::NONE));
    let cmds = update(&mut m, code(KeyCode::Up, KeyModifiers::CONTROL));
    assert!(matches!(&cmds[..], [Cmd::Query { k: 6, text, .. }] if text == "keys"));
}
