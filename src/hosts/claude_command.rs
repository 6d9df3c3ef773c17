//! The `claude mcp add` one-liner that registers the server with Claude
//! Code, quoted for each shell.

use super::{Launch, SERVER_NAME};
use crate::cli::Scope;

/// The shells a `claude mcp add` one-liner is quoted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// sh, bash, zsh: single quotes.
    Posix,
    /// PowerShell: single quotes, and `'--'` quoted, because PowerShell
    /// drops a bare `--` before it reaches the npm-installed `claude.ps1`.
    PowerShell,
    /// cmd.exe: double quotes (Windows paths cannot contain `"`).
    Cmd,
}

impl Shell {
    /// The shells to print one-liners for on this platform.
    pub fn for_this_platform() -> &'static [Shell] {
        if cfg!(windows) {
            &[Shell::PowerShell, Shell::Cmd]
        } else {
            &[Shell::Posix]
        }
    }

    fn quote(self, word: &str) -> String {
        let plain = !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=\\".contains(c));
        if word == "--" && self == Shell::PowerShell {
            return "'--'".to_string();
        }
        if plain && !(self == Shell::Posix && word.contains('\\')) {
            return word.to_string();
        }
        match self {
            Shell::Posix => format!("'{}'", word.replace('\'', r"'\''")),
            Shell::PowerShell => format!("'{}'", word.replace('\'', "''")),
            Shell::Cmd => format!("\"{word}\""),
        }
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            Shell::Posix => "",
            Shell::PowerShell => " (PowerShell)",
            Shell::Cmd => " (cmd)",
        }
    }
}

/// The `claude mcp add` command that registers `launch` with Claude Code.
pub fn claude_mcp_add(launch: &Launch, scope: Scope, shell: Shell) -> String {
    let scope = match scope {
        Scope::Project => "project",
        Scope::User => "user",
    };
    let mut words: Vec<String> = [
        "claude",
        "mcp",
        "add",
        "--scope",
        scope,
        "--transport",
        "stdio",
        SERVER_NAME,
        "--",
    ]
    .iter()
    .map(|w| shell.quote(w))
    .collect();
    words.push(shell.quote(&launch.command));
    words.extend(launch.args.iter().map(|a| shell.quote(a)));
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{WINDOWS_EXE, WINDOWS_ROOT};
    use super::*;

    #[test]
    fn one_liners_quote_for_each_shell() {
        let root_args = |root: &str| vec!["--root".to_string(), root.to_string()];
        let launch = Launch::native(WINDOWS_EXE, root_args(WINDOWS_ROOT));
        assert_eq!(
            claude_mcp_add(&launch, Scope::User, Shell::PowerShell),
            r"claude mcp add --scope user --transport stdio project-helper '--' 'C:\Users\Zoë O''Neil\My Tools\mcp-project-helper.exe' --root 'D:\work\my shop'"
        );
        assert_eq!(
            claude_mcp_add(&launch, Scope::User, Shell::Cmd),
            r#"claude mcp add --scope user --transport stdio project-helper -- "C:\Users\Zoë O'Neil\My Tools\mcp-project-helper.exe" --root "D:\work\my shop""#
        );
        let launch = Launch::native(
            "/home/o'neil/bin/mcp-project-helper",
            root_args("/srv/my shop"),
        );
        assert_eq!(
            claude_mcp_add(&launch, Scope::Project, Shell::Posix),
            r#"claude mcp add --scope project --transport stdio project-helper -- '/home/o'\''neil/bin/mcp-project-helper' --root '/srv/my shop'"#
        );
    }
}
