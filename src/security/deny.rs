//! The deny-list: secrets that are never read, searched, listed or found,
//! built in and added to by the operator.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::PathError;

/// Secrets that are never read, searched, listed or found.
const BUILT_IN_DENY: &[&str] = &[
    ".env",
    ".env.*",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".git",
];
/// Templates that document secrets without holding them.
const DENY_EXCEPTIONS: &[&str] = &[".env.example", ".env.sample", ".env.template"];

/// Globs without `/` match a file or folder name at any depth; globs with
/// `/` match the root-relative path. A match on any ancestor denies the
/// whole subtree. Matching ignores case: on Windows and macOS `.ENV` is the
/// same file as `.env`.
#[derive(Debug, Clone)]
pub(super) struct DenyList {
    built_in_names: GlobSet,
    exceptions: GlobSet,
    operator_names: GlobSet,
    /// Each operator path glob `g` as `g` and `g/**`: one match on the whole
    /// path tells whether the path or any ancestor matches `g`, in one pass
    /// instead of one match per ancestor.
    operator_paths: GlobSet,
}

impl DenyList {
    pub(super) fn new(extra: &[String]) -> Result<Self, PathError> {
        let operator_names: Vec<&str> = extra
            .iter()
            .map(String::as_str)
            .filter(|g| !g.contains('/'))
            .collect();
        let operator_paths: Vec<String> = extra
            .iter()
            .filter(|g| g.contains('/'))
            .flat_map(|glob| {
                let glob = glob.trim_start_matches("./");
                [
                    glob.to_string(),
                    format!("{}/**", glob.trim_end_matches('/')),
                ]
            })
            .collect();
        let operator_paths: Vec<&str> = operator_paths.iter().map(String::as_str).collect();
        Ok(Self {
            built_in_names: glob_set(BUILT_IN_DENY)?,
            exceptions: glob_set(DENY_EXCEPTIONS)?,
            operator_names: glob_set(&operator_names)?,
            operator_paths: glob_set(&operator_paths)?,
        })
    }

    pub(super) fn denies(&self, relative: &str) -> bool {
        if relative == "." || relative.is_empty() {
            return false;
        }
        relative.split('/').any(|name| self.denies_name(name))
            || self.operator_paths.is_match(relative)
    }

    pub(super) fn denies_entry(&self, relative: &str) -> bool {
        if relative == "." || relative.is_empty() {
            return false;
        }
        let name = relative.rsplit('/').next().unwrap_or(relative);
        self.denies_name(name) || self.operator_paths.is_match(relative)
    }

    fn denies_name(&self, name: &str) -> bool {
        (self.built_in_names.is_match(name) && !self.exceptions.is_match(name))
            || self.operator_names.is_match(name)
    }
}

fn glob_set(globs: &[&str]) -> Result<GlobSet, PathError> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        let glob = GlobBuilder::new(glob.trim_start_matches("./"))
            .case_insensitive(true)
            .literal_separator(true)
            .build()
            .map_err(|error| PathError::BadGlob {
                glob: glob.to_string(),
                message: error.kind().to_string(),
            })?;
        builder.add(glob);
    }
    builder.build().map_err(|error| PathError::BadGlob {
        glob: globs.join(", "),
        message: error.to_string(),
    })
}
