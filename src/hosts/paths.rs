//! How a snippet writes the project's paths: relative to the project's
//! top (or through the host's workspace variable) in project scope,
//! absolute in user scope. Shared by the native and the `docker run`
//! launch.

use super::Request;
use super::host_specs::Top;

/// `path` below `top` as a `/`-separated relative path (`""` for `top`
/// itself), compared as text so that Windows paths work on every platform.
pub(super) fn below(path: &str, top: &str) -> Option<String> {
    let rest = path.strip_prefix(top)?;
    if rest.is_empty() {
        return Some(String::new());
    }
    let rest = if top.ends_with(['/', '\\']) {
        rest
    } else {
        rest.strip_prefix(['/', '\\'])?
    };
    Some(rest.replace('\\', "/"))
}

/// A folder below the project's top as a project-scoped entry writes it:
/// through the workspace variable, relative (`.`-based) or absolute.
pub(super) fn in_project(top_form: Top, relative: &str, absolute: &str) -> String {
    match (top_form, relative) {
        (Top::Absolute, _) => absolute.to_string(),
        (Top::Variable(variable), "") => variable.to_string(),
        (Top::Variable(variable), relative) => format!("{variable}/{relative}"),
        (Top::Dot, "") => ".".to_string(),
        (Top::Dot, relative) => relative.to_string(),
    }
}

/// How `request` writes its paths, and what it must say about them.
pub(super) struct Paths<'r> {
    pub(super) request: &'r Request<'r>,
    /// The project scope's form of the top folder; `None` in user scope
    /// (absolute paths).
    pub(super) top_form: Option<Top>,
    /// Comment lines about paths written as they are.
    pub(super) notes: Vec<String>,
}

impl Paths<'_> {
    /// `path` (absolute) as the entry writes it: relative to the project's
    /// top in project scope when it lies below it, else absolute (said in a
    /// note: that path is personal to this machine).
    pub(super) fn write(&mut self, flag: &str, path: &str) -> String {
        let Some(top_form) = self.top_form else {
            return path.to_string();
        };
        match below(path, self.request.top) {
            Some(relative) => in_project(top_form, &relative, path),
            None => {
                self.notes.push(format!(
                    "{flag} {path} lies outside the project: its absolute path is written, which holds only on this machine."
                ));
                path.to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_below_the_top_are_found_on_either_platform() {
        assert_eq!(
            below(r"D:\work\shop\a\b", r"D:\work\shop"),
            Some("a/b".to_string())
        );
        assert_eq!(below("/w/shop", "/w/shop"), Some(String::new()));
        assert_eq!(below("/w/shop-secret", "/w/shop"), None);
        assert_eq!(below("/w/x", "/"), Some("w/x".to_string()));
    }
}
