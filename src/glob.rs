//! The glob matcher behind find's `pattern` and search's `glob`, one
//! semantics for both: `*` and `?` never cross `/`, `**` does, `{a,b}`
//! alternates, and a pattern without `/` matches the file name at any depth.
//! On Windows `\` is a path separator there as everywhere else (what a
//! Windows user types: `src\*.rs`), so it is read as `/` and escapes
//! nothing; elsewhere it escapes the character after it.

use globset::{GlobBuilder, GlobMatcher};

/// Longest glob accepted, in characters.
pub const MAX_GLOB_CHARS: usize = 1024;
/// Most wildcards (`*`, `?`, `[`) and alternation marks (`{`, `,`) in one
/// glob: each one grows the compiled matcher, and real patterns use a few.
pub const MAX_GLOB_WILDCARDS: usize = 64;

/// A pattern that is empty or does not parse; the message says what is
/// allowed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GlobError(String);

/// A glob with the SPEC's semantics: without `/` it is tried on the file
/// name, with `/` on the path relative to the tool's `path`.
#[derive(Debug, Clone)]
pub struct PathGlob {
    matcher: GlobMatcher,
    on_name: bool,
}

impl PathGlob {
    /// Refuses a glob over [`MAX_GLOB_CHARS`] or [`MAX_GLOB_WILDCARDS`]
    /// before compiling it: the matcher's size grows with both.
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        if pattern.len() > MAX_GLOB_CHARS && pattern.chars().count() > MAX_GLOB_CHARS {
            return Err(GlobError(format!(
                "glob is {} characters long; at most {MAX_GLOB_CHARS} characters are allowed",
                pattern.chars().count()
            )));
        }
        let wildcards = pattern
            .bytes()
            .filter(|b| matches!(b, b'*' | b'?' | b'[' | b'{' | b','))
            .count();
        if wildcards > MAX_GLOB_WILDCARDS {
            return Err(GlobError(format!(
                "glob has {wildcards} wildcards; at most {MAX_GLOB_WILDCARDS} of *, ?, [, {{ and , are allowed"
            )));
        }
        let spelled = separators_as_slashes(pattern);
        let trimmed = spelled.trim().trim_start_matches("./");
        if trimmed.is_empty() {
            return Err(GlobError(
                "glob is empty; give a pattern such as '*.py', '**/*.rs' or 'src/*.{ts,tsx}'"
                    .to_string(),
            ));
        }
        let glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .backslash_escape(cfg!(not(windows)))
            .build()
            .map_err(|error| {
                GlobError(format!(
                    "invalid glob {pattern:?}: {}; use *, ?, **, [abc] and {{a,b}}",
                    error.kind()
                ))
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            on_name: !trimmed.contains('/'),
        })
    }

    /// `below` is the path relative to the tool's `path`, `/`-separated.
    pub fn is_match(&self, below: &str) -> bool {
        if self.on_name {
            let name = below.rsplit('/').next().unwrap_or(below);
            self.matcher.is_match(name)
        } else {
            self.matcher.is_match(below)
        }
    }
}

/// The pattern with Windows' `\` separators spelled `/`.
#[cfg(windows)]
fn separators_as_slashes(pattern: &str) -> std::borrow::Cow<'_, str> {
    if pattern.contains('\\') {
        std::borrow::Cow::Owned(pattern.replace('\\', "/"))
    } else {
        std::borrow::Cow::Borrowed(pattern)
    }
}

#[cfg(not(windows))]
fn separators_as_slashes(pattern: &str) -> std::borrow::Cow<'_, str> {
    std::borrow::Cow::Borrowed(pattern)
}

/// The part of a root-relative `entry` below the root-relative folder `base`.
pub fn below<'a>(base: &str, entry: &'a str) -> &'a str {
    if base == "." {
        entry
    } else {
        entry
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_without_a_slash_match_at_any_depth() {
        let glob = PathGlob::new("*.py").expect("glob");
        assert!(glob.is_match("a/b/c.py"));
        assert!(!glob.is_match("a/b/c.pyc"));
        let glob = PathGlob::new("src/*.rs").expect("glob");
        assert!(glob.is_match("src/main.rs"));
        assert!(!glob.is_match("src/deep/main.rs"));
        assert!(
            PathGlob::new("src/**/*.rs")
                .expect("glob")
                .is_match("src/deep/main.rs")
        );
    }

    #[test]
    fn bad_globs_say_what_is_allowed() {
        assert!(
            PathGlob::new("a[")
                .unwrap_err()
                .to_string()
                .contains("use *, ?")
        );
        assert!(
            PathGlob::new("")
                .unwrap_err()
                .to_string()
                .contains("glob is empty")
        );
    }

    #[test]
    fn huge_or_wildcard_heavy_globs_are_refused_before_compiling() {
        let long = "a".repeat(MAX_GLOB_CHARS + 1);
        let error = PathGlob::new(&long).unwrap_err().to_string();
        assert!(error.contains("at most 1024 characters"), "{error}");
        let stars = "*".repeat(MAX_GLOB_WILDCARDS + 1);
        let error = PathGlob::new(&stars).unwrap_err().to_string();
        assert!(error.contains("at most 64"), "{error}");
        assert!(PathGlob::new(&"*/".repeat(MAX_GLOB_WILDCARDS / 2)).is_ok());
    }

    #[cfg(windows)]
    #[test]
    fn backslashes_are_separators_on_windows() {
        let glob = PathGlob::new(r"demo_app\*.py").expect("glob");
        assert!(glob.is_match("demo_app/models.py"));
        assert!(!glob.is_match("demo_app/deep/models.py"));
        assert!(
            PathGlob::new(r"src\**\*.rs")
                .expect("glob")
                .is_match("src/a/b.rs")
        );
        assert!(
            PathGlob::new(r".\*.md")
                .expect("glob")
                .is_match("docs/x.md")
        );
    }

    #[cfg(not(windows))]
    #[test]
    fn backslashes_escape_elsewhere() {
        let glob = PathGlob::new(r"a\*b").expect("glob");
        assert!(glob.is_match("a*b"));
        assert!(!glob.is_match("axb"));
    }

    #[test]
    fn below_strips_the_base_folder() {
        assert_eq!(below(".", "src/a.rs"), "src/a.rs");
        assert_eq!(below("src", "src/a.rs"), "a.rs");
        assert_eq!(below("src", "srcx/a.rs"), "srcx/a.rs");
    }
}
