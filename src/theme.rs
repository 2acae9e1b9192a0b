//! Themes from TOML: dark, light and mono are built in (themes/*.toml); a user's file with the same
//! layout can be named in workbench.toml.

use std::collections::BTreeMap;
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

pub const BUILT_IN: &[(&str, &str)] = &[
    ("dark", include_str!("../themes/dark.toml")),
    ("light", include_str!("../themes/light.toml")),
    ("mono", include_str!("../themes/mono.toml")),
];

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct RawStyle {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    modifiers: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    /// True for the mono theme: no colours, so views add symbols where colour would speak.
    pub mono: bool,
    pub text: Style,
    pub tail: Style,
    pub overlap: Style,
    pub boundary: Style,
    pub gutter: Style,
    pub tail_gutter: Style,
    pub title: Style,
    pub selected: Style,
    pub warn: Style,
    pub error: Style,
    pub dim: Style,
    pub bar: Style,
    pub window_mark: Style,
    pub status: Style,
}

impl Theme {
    pub fn built_in(name: &str) -> Option<Theme> {
        BUILT_IN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, src)| Theme::parse(src).unwrap_or_else(|e| panic!("built-in theme {n}: {e}")))
    }

    pub fn dark() -> Theme {
        Theme::built_in("dark").expect("dark is built in")
    }

    pub fn mono() -> Theme {
        Theme::built_in("mono").expect("mono is built in")
    }

    /// Parse a theme file; every style key is required so a theme never leaves meaning unmarked.
    pub fn parse(src: &str) -> Result<Theme, String> {
        let mut table: BTreeMap<String, toml::Value> =
            toml::from_str(src).map_err(|e| e.to_string())?;
        let name = match table.remove("name") {
            Some(toml::Value::String(s)) => s,
            _ => return Err("missing name".into()),
        };
        let mut get = |key: &str| -> Result<Style, String> {
            let raw: RawStyle = table
                .remove(key)
                .ok_or_else(|| format!("missing [{key}]"))?
                .try_into()
                .map_err(|e: toml::de::Error| format!("[{key}]: {e}"))?;
            to_style(&raw).map_err(|e| format!("[{key}]: {e}"))
        };
        let t = Theme {
            mono: name == "mono",
            text: get("text")?,
            tail: get("tail")?,
            overlap: get("overlap")?,
            boundary: get("boundary")?,
            gutter: get("gutter")?,
            tail_gutter: get("tail_gutter")?,
            title: get("title")?,
            selected: get("selected")?,
            warn: get("warn")?,
            error: get("error")?,
            dim: get("dim")?,
            bar: get("bar")?,
            window_mark: get("window_mark")?,
            status: get("status")?,
            name,
        };
        if let Some(k) = table.keys().next() {
            return Err(format!("unknown key '{k}'"));
        }
        Ok(t)
    }

    /// Load a theme by name: built in, or themes/NAME.toml under the current directory.
    pub fn load(name: &str) -> Result<Theme, String> {
        if let Some(t) = Theme::built_in(name) {
            return Ok(t);
        }
        let path = std::path::Path::new("themes").join(format!("{name}.toml"));
        let src = std::fs::read_to_string(&path)
            .map_err(|e| format!("theme '{name}': {}: {e}", path.display()))?;
        Theme::parse(&src).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn next_name(&self) -> &'static str {
        let i = BUILT_IN
            .iter()
            .position(|(n, _)| *n == self.name)
            .map_or(0, |i| i + 1);
        BUILT_IN[i % BUILT_IN.len()].0
    }
}

fn to_style(raw: &RawStyle) -> Result<Style, String> {
    let mut s = Style::default();
    if let Some(fg) = &raw.fg {
        s = s.fg(Color::from_str(fg).map_err(|_| format!("unknown colour '{fg}'"))?);
    }
    if let Some(bg) = &raw.bg {
        s = s.bg(Color::from_str(bg).map_err(|_| format!("unknown colour '{bg}'"))?);
    }
    for m in &raw.modifiers {
        s = s.add_modifier(match m.as_str() {
            "bold" => Modifier::BOLD,
            "dim" => Modifier::DIM,
            "italic" => Modifier::ITALIC,
            "underlined" => Modifier::UNDERLINED,
            "reversed" => Modifier::REVERSED,
            "crossed_out" => Modifier::CROSSED_OUT,
            other => return Err(format!("unknown modifier '{other}'")),
        });
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_parse_and_mono_has_no_colour() {
        for (n, _) in BUILT_IN {
            assert!(Theme::built_in(n).is_some());
        }
        let m = Theme::mono();
        for s in [
            m.text,
            m.tail,
            m.overlap,
            m.gutter,
            m.tail_gutter,
            m.selected,
            m.status,
        ] {
            assert_eq!(s.fg, None);
            assert_eq!(s.bg, None);
        }
        assert_ne!(m.tail, m.text, "mono must still mark the tail");
        let d = Theme::dark();
        assert_ne!(d.tail.fg, d.text.fg);
    }

    #[test]
    fn bad_theme_says_why() {
        let e = Theme::parse("name = \"x\"\n[text]\nfg = \"blurple\"\n").unwrap_err();
        assert!(e.contains("blurple"), "{e}");
    }
}
