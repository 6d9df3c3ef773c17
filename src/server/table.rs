//! The table of tools: the order they are listed in, their descriptions and
//! result-size hints (written from the limits the tools enforce, so the two
//! cannot disagree), the message for arguments of the wrong shape, and the
//! schema clean-up every tool gets. Tool names are the `#[tool]` function
//! names in `server.rs`, written nowhere else.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool};
use serde_json::{Value, json};

use super::ProjectHelper;
use crate::project::Project;
use crate::tools::{check, definitions, docs, find, list, outline, read, references, search};

/// One tool's row.
struct ToolRow {
    /// As registered, with the size hint set and the schemas cleaned.
    tool: Tool,
    /// The message for arguments that did not deserialize.
    argument_error: fn(Value) -> Option<String>,
    /// The input schema for the current project, when it depends on it.
    input_schema_for: Option<fn(&Project) -> JsonObject>,
}

/// Every tool, in listing order.
pub struct ToolTable {
    rows: Vec<ToolRow>,
}

impl ToolTable {
    /// `output_chars` is the check output cap the operator configured.
    pub fn new(output_chars: usize) -> Self {
        let row = |metadata: fn() -> Tool,
                   result_chars: u64,
                   argument_error: fn(Value) -> Option<String>,
                   input_schema_for: Option<fn(&Project) -> JsonObject>| {
            let mut tool = metadata();
            tool.meta = Some(result_size_meta(result_chars));
            tool.input_schema = Arc::new(cleaned(&tool.input_schema));
            tool.output_schema = tool.output_schema.map(|schema| Arc::new(cleaned(&schema)));
            ToolRow {
                tool,
                argument_error,
                input_schema_for,
            }
        };
        // The way a model explores: locate, read, look around, navigate
        // the code, run.
        let rows = vec![
            row(
                ProjectHelper::search_project_files_tool_attr,
                SEARCH_RESULT_CHARS,
                first_error::<search::SearchInput>,
                None,
            ),
            row(
                ProjectHelper::read_project_file_tool_attr,
                READ_RESULT_CHARS,
                first_error::<read::ReadInput>,
                None,
            ),
            row(
                ProjectHelper::list_project_directory_tool_attr,
                LIST_RESULT_CHARS,
                first_error::<list::ListInput>,
                None,
            ),
            row(
                ProjectHelper::find_project_files_tool_attr,
                FIND_RESULT_CHARS,
                first_error::<find::FindInput>,
                None,
            ),
            row(
                ProjectHelper::outline_project_file_tool_attr,
                OUTLINE_RESULT_CHARS,
                first_error::<outline::OutlineInput>,
                None,
            ),
            row(
                ProjectHelper::find_symbol_definitions_tool_attr,
                DEFINITIONS_RESULT_CHARS,
                first_error::<definitions::DefinitionsInput>,
                None,
            ),
            row(
                ProjectHelper::find_symbol_references_tool_attr,
                REFERENCES_RESULT_CHARS,
                first_error::<references::ReferencesInput>,
                None,
            ),
            row(
                ProjectHelper::get_docs_tool_attr,
                DOCS_RESULT_CHARS,
                first_error::<docs::DocsInput>,
                None,
            ),
            row(
                ProjectHelper::run_project_check_tool_attr,
                check_result_chars(output_chars),
                first_error::<check::CheckInput>,
                Some(check_input_schema),
            ),
        ];
        Self { rows }
    }

    /// The tools as listed for `project`.
    pub fn listed(&self, project: &Project) -> Vec<Tool> {
        self.rows
            .iter()
            .map(|row| {
                let mut tool = row.tool.clone();
                if let Some(schema_for) = row.input_schema_for {
                    tool.input_schema = Arc::new(schema_for(project));
                }
                tool
            })
            .collect()
    }

    /// Deserializes the arguments again, tracking the path, so the model
    /// reads which parameter was wrong: serde's own message does not say.
    pub fn bad_arguments(&self, tool: &str, arguments: Option<JsonObject>) -> Option<String> {
        let row = self.rows.iter().find(|row| row.tool.name == tool)?;
        let detail = (row.argument_error)(Value::Object(arguments.unwrap_or_default()))?;
        Some(format!(
            "invalid arguments for {tool}: {detail}; see the tool's input schema for the allowed parameters and types"
        ))
    }
}

fn first_error<T: serde::de::DeserializeOwned>(value: Value) -> Option<String> {
    serde_path_to_error::deserialize::<_, T>(value)
        .err()
        .map(|error| match error.path().to_string().as_str() {
            "." => error.inner().to_string(),
            path => format!("parameter `{path}`: {}", error.inner()),
        })
}

// Largest result of each tool as JSON text, for Claude Code's per-result
// budget. Each tool cuts its answer by its JSON size, escapes included, so
// the hint is the limit the tool enforces.

const SEARCH_RESULT_CHARS: u64 = search::MAX_RESULT_CHARS as u64;
const READ_RESULT_CHARS: u64 = read::MAX_RESULT_CHARS as u64;
const LIST_RESULT_CHARS: u64 = list::MAX_RESULT_CHARS as u64;
const FIND_RESULT_CHARS: u64 = find::MAX_RESULT_CHARS as u64;
const DOCS_RESULT_CHARS: u64 = docs::MAX_RESULT_CHARS as u64;
const OUTLINE_RESULT_CHARS: u64 = outline::MAX_RESULT_CHARS as u64;
const DEFINITIONS_RESULT_CHARS: u64 = definitions::MAX_RESULT_CHARS as u64;
const REFERENCES_RESULT_CHARS: u64 = references::MAX_RESULT_CHARS as u64;

/// Two streams of `output_chars`, each character escaped to at most six
/// (`\u001b`), plus the check name (bounded) and the other fields.
const fn check_result_chars(output_chars: usize) -> u64 {
    2 * 6 * output_chars as u64 + 4096
}

fn result_size_meta(max_chars: u64) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0
        .insert("anthropic/maxResultSizeChars".into(), json!(max_chars));
    meta
}

/// `204800` → `200 KiB`, `2097152` → `2 MiB`.
fn size_text(bytes: u64) -> String {
    const KIB: u64 = 1024;
    if bytes >= KIB * KIB && bytes.is_multiple_of(KIB * KIB) {
        format!("{} MiB", bytes / (KIB * KIB))
    } else {
        format!("{} KiB", bytes / KIB)
    }
}

pub fn search_description() -> String {
    format!(
        "Search file contents in the project (like ripgrep). Default: exact, case-sensitive substring; set regex=true for Rust regex syntax. Narrow with `path` (a folder) and `glob` (e.g. '*.py', 'src/**/*.rs'). output_mode 'content' returns matches {{file, line, text}} (context_lines adds before/after), 'files_with_matches' returns file paths, 'count' returns per-file counts. At most {} results per call; page with offset. Skips binary and >{} files, ignored and secret files. Results sorted by path, then line.",
        search::MAX_RESULTS_CAP,
        size_text(crate::corpus::searchable::MAX_SEARCHED_BYTES)
    )
}

pub fn read_description() -> String {
    format!(
        "Read one UTF-8 text file of the project, optionally only lines start_line..end_line (1-based, inclusive). Returns content, size, total_lines and truncated (content is capped at {}: read on with a later start_line). Refuses folders, binary files, special files and secrets such as .env, .envrc, *.pem, *.key, *.p12, id_rsa*, .netrc, .npmrc and .git/.",
        size_text(read::MAX_CONTENT_BYTES as u64)
    )
}

pub fn list_description() -> String {
    format!(
        "List a project folder: entries {{name, path, type: file|dir|symlink|other, size}} sorted by path, down to `depth` levels (1-{}). Uses the same ignore rules as search (.gitignore, node_modules, target, .venv …) and never shows secrets. Symlinks are reported, never followed.",
        list::MAX_DEPTH
    )
}

pub fn find_description() -> String {
    format!(
        "Find files by glob, e.g. '**/*.rs', '*.py' (file name at any depth) or 'src/*.{{ts,tsx}}' (path relative to `path`). `*` and `?` never cross '/', `**` does. Same ignore rules as search; returns at most {} sorted paths relative to the project root.",
        find::MAX_RESULTS_CAP
    )
}

pub fn outline_description() -> String {
    format!(
        "Outline one source file (up to {}): its definitions in source order, nested as children, each {{kind, name, line, end_line, signature, parent}} (signature: the first line; parent: the class, impl type or receiver it belongs to, null at the top level). Then read only the lines you need with read_project_file. Languages: {LANGUAGES}.",
        size_text(crate::corpus::searchable::MAX_SEARCHED_BYTES)
    )
}

pub fn definitions_description() -> String {
    format!(
        "Find where a name (exact, case-sensitive, unqualified) is defined in the project, optionally only of one `kind` or under `path`: {{file, line, end_line, kind, name, parent, signature}} sorted by path, then line; at most {} per call, page with offset. Same files as search; languages as outline_project_file.",
        definitions::MAX_RESULTS_CAP
    )
}

pub fn references_description() -> String {
    format!(
        "Find where an identifier (exact, case-sensitive, unqualified) is used in code across the project, e.g. who calls a function: one entry per line {{file, line, text, in}} (in: the enclosing definition, as Parent.name for a method, null at the top level), sorted by path, then line. Comments, string literals and the definitions themselves are left out; imports count. Name-based, not type-resolved: same-named items in other scopes are listed too. At most {} per call, page with offset. files_without_grammar counts files that hold the word but were not parsed (languages as outline_project_file); use search_project_files for those, for text in comments or strings, or for patterns.",
        references::MAX_RESULTS_CAP
    )
}

/// The languages with a grammar, as the descriptions name them.
const LANGUAGES: &str = "Rust, Python, TypeScript/TSX, JavaScript, Go, Java, C, C++, C#";

pub fn docs_description() -> String {
    format!(
        "Search the project's Markdown documentation (the docs folder), split into sections at headings. With `query`: sections whose heading or text contain it (case-insensitive), best matches first, as {{file, heading, snippet}} (at most {} results). Without `query`: one entry per document, to see what exists.",
        docs::MAX_RESULTS_CAP
    )
}

pub fn check_description() -> String {
    "Run one whitelisted project check (such as the test suite) by name and return exit_code, passed, duration_ms and the end of stdout/stderr. Only the names listed in this tool's input schema exist; no other command can be run. One check runs at a time; progress notifications report the latest output line. A check that exceeds its timeout is killed and returns status 'error'.".to_string()
}

/// The check tool's input schema: an enum of the offered names, each
/// described, so the model never has to guess.
fn check_input_schema(project: &Project) -> JsonObject {
    let names = project.checks().names();
    let runs = project
        .checks()
        .summaries()
        .into_iter()
        .map(|(name, command)| format!("'{name}' runs `{command}`"))
        .collect::<Vec<_>>();
    let mut check_name = json!({
        "type": "string",
        "maxLength": crate::tools::MAX_CHECK_NAME_CHARS,
        "description": if names.is_empty() {
            "No checks are configured for this project; calls will be refused.".to_string()
        } else {
            format!("Name of the check to run. Available: {}.", runs.join("; "))
        },
    });
    if !names.is_empty() {
        check_name["enum"] = json!(names);
    }
    let schema = json!({
        "type": "object",
        "properties": { "check_name": check_name },
        "required": ["check_name"],
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The formats JSON Schema 2020-12 defines. schemars adds its own (`uint`,
/// `uint64`, `int32` …), which hosts warn about; the limits are stated as
/// `minimum`/`maximum` instead.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn cleaned(schema: &JsonObject) -> JsonObject {
    let mut value = Value::Object(schema.clone());
    strip_nonstandard_formats(&mut value);
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn strip_nonstandard_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let nonstandard = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| !STANDARD_FORMATS.contains(&format));
            if nonstandard {
                map.remove("format");
            }
            for (keyword, value) in map.iter_mut() {
                // Values, not schemas.
                if !matches!(keyword.as_str(), "default" | "const" | "enum" | "examples") {
                    strip_nonstandard_formats(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nonstandard_formats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ToolTable {
        ToolTable::new(crate::config::DEFAULT_OUTPUT_CHARS)
    }

    fn hint(tool: &Tool) -> u64 {
        tool.meta
            .as_ref()
            .and_then(|meta| meta.0.get("anthropic/maxResultSizeChars"))
            .and_then(Value::as_u64)
            .unwrap_or_default()
    }

    #[test]
    fn every_registered_tool_is_in_the_table_once() {
        let router = ProjectHelper::tool_router();
        let table = table();
        let mut listed: Vec<&str> = table.rows.iter().map(|row| &*row.tool.name).collect();
        let mut registered: Vec<String> = router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        assert_eq!(listed.len(), 9);
        listed.sort_unstable();
        registered.sort_unstable();
        assert_eq!(listed, registered);
        for row in &table.rows {
            let name = &row.tool.name;
            assert!(
                row.tool
                    .description
                    .as_deref()
                    .is_some_and(|d| d.len() > 40),
                "{name}"
            );
            assert!(row.tool.output_schema.is_some(), "{name}");
            assert!(row.tool.annotations.is_some(), "{name}");
        }
    }

    fn row_tool(table: &ToolTable, name: &str) -> Tool {
        table
            .rows
            .iter()
            .find(|row| row.tool.name == name)
            .map(|row| row.tool.clone())
            .expect(name)
    }

    /// The numbers in descriptions and size hints are the tools' limits.
    #[test]
    fn descriptions_and_hints_state_the_enforced_limits() {
        let table = table();
        let described = |name: &str, text: String| {
            let description = row_tool(&table, name).description.unwrap_or_default();
            assert!(
                description.contains(&text),
                "{name}: {text} in {description}"
            );
        };
        described(
            "search_project_files",
            format!("At most {} results", search::MAX_RESULTS_CAP),
        );
        described(
            "search_project_files",
            format!(
                ">{} files",
                size_text(crate::corpus::searchable::MAX_SEARCHED_BYTES)
            ),
        );
        described(
            "read_project_file",
            format!("capped at {}", size_text(read::MAX_CONTENT_BYTES as u64)),
        );
        described(
            "list_project_directory",
            format!("levels (1-{})", list::MAX_DEPTH),
        );
        described(
            "find_project_files",
            format!("at most {} sorted paths", find::MAX_RESULTS_CAP),
        );
        described(
            "get_docs",
            format!("at most {} results", docs::MAX_RESULTS_CAP),
        );
        described(
            "find_symbol_definitions",
            format!("at most {} per call", definitions::MAX_RESULTS_CAP),
        );
        described(
            "find_symbol_references",
            format!("At most {} per call", references::MAX_RESULTS_CAP),
        );
        described(
            "outline_project_file",
            format!(
                "(up to {})",
                size_text(crate::corpus::searchable::MAX_SEARCHED_BYTES)
            ),
        );

        let hint_of = |name: &str| hint(&row_tool(&table, name));
        // Each hint leaves room for the largest payload its tool returns,
        // escaped.
        assert!(hint_of("search_project_files") >= search::MAX_RESULT_CHARS as u64);
        assert!(hint_of("read_project_file") >= 2 * read::MAX_CONTENT_BYTES as u64);
        assert!(hint_of("list_project_directory") >= 100 * list::MAX_ENTRIES_CAP as u64);
        assert!(hint_of("find_project_files") >= 100 * find::MAX_RESULTS_CAP as u64);
        assert!(
            hint_of("get_docs") >= 2 * (docs::MAX_RESULTS_CAP * docs::MAX_SNIPPET_CHARS) as u64
        );
        assert!(hint_of("outline_project_file") >= outline::MAX_RESULT_CHARS as u64);
        assert!(hint_of("find_symbol_definitions") >= definitions::MAX_RESULT_CHARS as u64);
        assert!(hint_of("find_symbol_references") >= references::MAX_RESULT_CHARS as u64);
        let output_chars = crate::config::DEFAULT_OUTPUT_CHARS as u64;
        assert!(hint_of("run_project_check") >= 4 * output_chars);
        // The check's hint follows the operator's output cap.
        let small = ToolTable::new(1_000);
        assert_eq!(hint(&row_tool(&small, "run_project_check")), 16_096);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_text(200 * 1024), "200 KiB");
        assert_eq!(size_text(2 * 1024 * 1024), "2 MiB");
    }

    #[test]
    fn only_standard_formats_remain() {
        let mut schema = json!({
            "properties": {
                "format": {"type": "string", "format": "uri"},
                "count": {"type": "integer", "format": "uint", "minimum": 0},
                "items": {"type": "array", "items": {"type": "integer", "format": "int32"}},
            },
            "default": {"format": "uint"},
        });
        strip_nonstandard_formats(&mut schema);
        assert_eq!(
            schema,
            json!({
                "properties": {
                    "format": {"type": "string", "format": "uri"},
                    "count": {"type": "integer", "minimum": 0},
                    "items": {"type": "array", "items": {"type": "integer"}},
                },
                "default": {"format": "uint"},
            })
        );
    }
}
