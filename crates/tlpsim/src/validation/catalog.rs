//! The device catalog (`validation/catalog.toml`), shared by every system: one calibrated
//! parameter serves every table that uses the device. Values are read by `section.key`, pasted
//! into scenario templates (`${section.key}`), or replaced for a calibration probe.

use crate::error::{ConfigError, Result};

/// The device catalog (validation/catalog.toml).
pub const CATALOG_TOML: &str = include_str!("../../../../validation/catalog.toml");

fn conflict(m: String) -> ConfigError {
    ConfigError::Conflict(m)
}

/// The catalog, parsed.
pub(crate) fn parse(text: &str) -> Result<toml::Table> {
    text.parse()
        .map_err(|e| conflict(format!("validation/catalog.toml: {e}")))
}

/// The catalog's `value` of `section.key`, as TOML text to paste into a template.
pub fn catalog_value(catalog: &toml::Table, path: &str) -> Option<String> {
    let (section, key) = path.split_once('.')?;
    let v = catalog
        .get(section)?
        .as_table()?
        .get(key)?
        .as_table()?
        .get("value")?;
    Some(match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Replaces every `${section.key}` in `template` with its catalog value.
pub fn render(template: &str, catalog: &toml::Table) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find('}')
            .ok_or_else(|| conflict("unterminated ${ in a validation template".into()))?;
        let key = &rest[i + 2..i + end];
        let value = catalog_value(catalog, key)
            .ok_or_else(|| conflict(format!("validation/catalog.toml has no value for {key}")))?;
        out.push_str(&value);
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A catalog value parsed by `parse`, with a message naming the key.
pub(crate) fn parsed<T>(
    catalog: &toml::Table,
    key: &str,
    parse: impl FnOnce(&str) -> Result<T>,
) -> Result<T> {
    let v = catalog_value(catalog, key)
        .ok_or_else(|| conflict(format!("validation/catalog.toml has no {key}")))?;
    parse(&v)
}

/// A catalog value as a number, with a message naming the key.
pub(crate) fn number<T: std::str::FromStr>(
    catalog: &toml::Table,
    key: &str,
    what: &str,
) -> Result<T> {
    parsed(catalog, key, |v| {
        v.parse()
            .map_err(|_| conflict(format!("{key} is not {what}")))
    })
}

/// Replaces catalog values (`section.key`, TOML value text; text that is not a TOML value is
/// taken as a string): the calibration tool's probe.
pub(crate) fn set_values(catalog: &mut toml::Table, overrides: &[(&str, &str)]) -> Result<()> {
    for (path, value) in overrides {
        let entry = path
            .split_once('.')
            .and_then(|(s, k)| {
                catalog
                    .get_mut(s)?
                    .as_table_mut()?
                    .get_mut(k)?
                    .as_table_mut()
            })
            .ok_or_else(|| conflict(format!("validation/catalog.toml has no {path}")))?;
        let v: toml::Value = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        entry.insert("value".into(), v);
    }
    Ok(())
}
