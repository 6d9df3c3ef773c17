//! `outline_project_file`: the definitions in one source file, nested by
//! parent, so the model can read only the lines it needs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, Status, ToolError};
use crate::cancel::Cancel;
use crate::corpus::searchable::{MAX_SEARCHED_BYTES, SNIFF_BYTES, looks_binary, read_searchable};
use crate::security::PathGate;
use crate::symbols::{self, Language, ParseError, Symbol, SymbolKind};

/// Largest answer as JSON text: about 25,000 tokens, a few thousand symbols.
pub const MAX_RESULT_CHARS: usize = 100_000;
/// Nesting shown: deeper definitions are left out (`truncated`), so the
/// answer stays readable by JSON parsers with a depth limit.
pub const MAX_NESTING: usize = 16;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct OutlineInput {
    /// Source file path relative to the project root, with `/` separators, e.g. `src/main.rs`.
    pub path: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OutlineOutput {
    pub status: Status,
    /// The file's path relative to the project root.
    pub file: String,
    /// The grammar the file was read with, e.g. `python`.
    pub language: String,
    /// Number of symbols returned, nested ones included.
    pub count: usize,
    /// True when symbols were left out (the answer's size cap, or nesting deeper than 16 levels).
    pub truncated: bool,
    /// Top-level definitions in source order, each with its members as `children`.
    pub symbols: Vec<OutlineSymbol>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct OutlineSymbol {
    /// function, method, class, struct, enum, trait, interface, module, constant, type, field or macro.
    pub kind: SymbolKind,
    pub name: String,
    /// 1-based line where the definition starts.
    pub line: u64,
    /// 1-based last line of the definition.
    pub end_line: u64,
    /// The definition's first line, cut to 200 characters.
    pub signature: String,
    /// What it belongs to (class, impl type, receiver, namespace …), as find_symbol_definitions reports it; null at the top level.
    pub parent: Option<String>,
    /// Definitions inside this one, in source order.
    #[schemars(schema_with = "children_schema")]
    pub children: Vec<OutlineSymbol>,
}

/// Members have the same fields; written out once, not as a recursive
/// reference, since schemas here are inlined for clients that do not
/// resolve references.
fn children_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "description": "A member definition with the same fields: kind, name, line, end_line, signature, parent, children.",
            "required": ["kind", "name", "line", "end_line", "signature", "parent", "children"]
        }
    })
}

impl OutlineInput {
    pub fn log_params(&self) -> String {
        format!("path={:?}", self.path)
    }
}

impl OutlineOutput {
    pub fn log_summary(&self) -> String {
        format!(
            "language={} count={} truncated={}",
            self.language, self.count, self.truncated
        )
    }
}

pub fn outline(
    gate: &PathGate,
    input: &OutlineInput,
    cancel: &Cancel,
) -> Result<OutlineOutput, ToolError> {
    if input.path.trim().is_empty() {
        return Err(ToolError::invalid(
            "path is empty; give a source file path relative to the project root, e.g. 'src/main.rs'",
        ));
    }
    let resolved = gate.resolve(&input.path)?;
    let relative = resolved.relative;
    if resolved.real.is_dir() {
        return Err(folder_error(&relative));
    }
    let Some(language) = Language::of_path(&relative) else {
        let ending = symbols::file_ending(&relative).map_or_else(
            || "files without an ending".to_string(),
            |e| format!(".{e} files"),
        );
        return Err(ToolError::invalid(format!(
            "no outline for {ending}; outlines are offered for {}; use search_project_files or read_project_file for other files",
            Language::offered()
        )));
    };
    let (mut file, metadata) = gate
        .open_file_with_metadata(&resolved.real)
        .map_err(|error| ToolError::io(&relative, &error))?;
    if metadata.is_dir() {
        return Err(folder_error(&relative));
    }
    if !metadata.is_file() {
        return Err(ToolError::invalid(format!(
            "'{relative}' is not a regular file; only source files can be outlined"
        )));
    }
    let too_large = || {
        ToolError::invalid(format!(
            "'{relative}' is larger than {} MiB; outlines are made for files up to that size, use search_project_files or read_project_file with a line range",
            MAX_SEARCHED_BYTES / (1024 * 1024)
        ))
    };
    if metadata.len() > MAX_SEARCHED_BYTES {
        return Err(too_large());
    }
    let mut buffer = Vec::new();
    let length = read_searchable(&mut file, metadata.len(), &mut buffer).ok_or_else(too_large)?;
    let source = &buffer[..length];
    if looks_binary(&source[..length.min(SNIFF_BYTES)]) {
        return Err(ToolError::invalid(format!(
            "'{relative}' is a binary file (NUL byte or invalid UTF-8 near the start); only source text can be outlined"
        )));
    }
    ToolError::check_cancel(cancel)?;
    let language = language.for_source(source);
    let found = symbols::definitions(language, source, cancel).map_err(|error| match error {
        ParseError::Cancelled => ToolError::Cancelled,
        other => ToolError::invalid(format!(
            "cannot outline '{relative}': {other}; use search_project_files or read_project_file with a line range"
        )),
    })?;
    let mut output = OutlineOutput {
        status: Status::Success,
        file: relative,
        language: language.name().to_string(),
        count: 0,
        truncated: false,
        symbols: Vec::new(),
    };
    let (kept, truncated) = keep_within_budget(&found, &output);
    output.symbols = nest(&found, &kept);
    output.count = kept.iter().filter(|keep| **keep).count();
    output.truncated = truncated;
    Ok(output)
}

fn folder_error(relative: &str) -> ToolError {
    ToolError::invalid(format!(
        "'{relative}' is a folder; give a source file (list_project_directory shows a folder's files)"
    ))
}

fn leaf(symbol: &Symbol) -> OutlineSymbol {
    OutlineSymbol {
        kind: symbol.kind,
        name: symbol.name.clone(),
        line: symbol.line,
        end_line: symbol.end_line,
        signature: symbol.signature.clone(),
        parent: symbol.parent.clone(),
        children: Vec::new(),
    }
}

/// Which symbols the answer holds: in source order while they fit the
/// answer's size, none nested deeper than [`MAX_NESTING`]. A parent comes
/// before its members, so every kept symbol's parent is kept.
fn keep_within_budget(found: &[Symbol], skeleton: &OutlineOutput) -> (Vec<bool>, bool) {
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, skeleton);
    let mut kept = vec![false; found.len()];
    let mut truncated = false;
    for (index, symbol) in found.iter().enumerate() {
        if symbol.level >= MAX_NESTING {
            truncated = true;
            continue;
        }
        if !budget.take(&leaf(symbol)) {
            truncated = true;
            break;
        }
        kept[index] = true;
    }
    (kept, truncated)
}

/// The kept symbols as a tree (at most [`MAX_NESTING`] levels deep).
fn nest(found: &[Symbol], kept: &[bool]) -> Vec<OutlineSymbol> {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); found.len()];
    let mut top = Vec::new();
    for (index, symbol) in found.iter().enumerate() {
        if !kept[index] {
            continue;
        }
        match symbol.parent_index {
            Some(parent) if parent < found.len() => children[parent].push(index),
            _ => top.push(index),
        }
    }
    fn build(index: usize, found: &[Symbol], children: &[Vec<usize>]) -> OutlineSymbol {
        let mut symbol = leaf(&found[index]);
        symbol.children = children[index]
            .iter()
            .map(|&child| build(child, found, children))
            .collect();
        symbol
    }
    top.into_iter()
        .map(|index| build(index, found, &children))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::temp_project;

    fn input(path: &str) -> OutlineInput {
        OutlineInput {
            path: path.to_string(),
        }
    }

    const MODELS: &str = "\"\"\"Data classes.\"\"\"\n\nfrom dataclasses import dataclass, field\n\n\n@dataclass\nclass Product:\n    sku: str\n    name: str\n    price: float\n\n\n@dataclass\nclass Order:\n    order_id: str\n    items: list[Product] = field(default_factory=list)\n\n    def total(self) -> float:\n        \"\"\"Sum of the item prices.\"\"\"\n        return sum(item.price for item in self.items)\n";

    #[test]
    fn the_spec_example_shape() {
        let (_dir, gate) = temp_project(&[("demo_app/models.py", MODELS)]);
        let output = outline(&gate, &input("demo_app/models.py"), &Cancel::never()).unwrap();
        let json = serde_json::to_value(&output).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"status":"success","file":"demo_app/models.py","language":"python","count":3,"truncated":false,
             "symbols":[{"kind":"class","name":"Product","line":7,"end_line":10,"signature":"class Product:","parent":null,"children":[]},
              {"kind":"class","name":"Order","line":14,"end_line":20,"signature":"class Order:","parent":null,
               "children":[{"kind":"method","name":"total","line":18,"end_line":20,"signature":"def total(self) -> float:","parent":"Order","children":[]}]}]})
        );
    }

    /// (name, parent) of every symbol, depth first.
    fn parents(symbols: &[OutlineSymbol]) -> Vec<(String, Option<String>)> {
        symbols
            .iter()
            .flat_map(|symbol| {
                std::iter::once((symbol.name.clone(), symbol.parent.clone()))
                    .chain(parents(&symbol.children))
            })
            .collect()
    }

    fn pair(name: &str, parent: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), parent.map(str::to_string))
    }

    #[test]
    fn every_symbol_says_whose_it_is() {
        let rust = "struct A;\nstruct B;\nimpl A { fn new() -> A { A } }\nimpl B { fn new() -> B { B } }\nimpl std::fmt::Display for A {\n    fn fmt(&self) {}\n}\nfn free() {}\n";
        let go = "package p\ntype Point struct{ X int }\nfunc (p *Point) Norm() int { return 0 }\nfunc Free() {}\n";
        let cpp = "class A {\n  public:\n    void f();\n};\nvoid A::f() {}\nvoid g() {}\n";
        let (_dir, gate) = temp_project(&[
            ("demo_app/models.py", MODELS),
            ("a.rs", rust),
            ("p.go", go),
            ("a.cpp", cpp),
        ]);
        let of = |path: &str| {
            parents(
                &outline(&gate, &input(path), &Cancel::never())
                    .unwrap()
                    .symbols,
            )
        };
        assert_eq!(
            of("a.rs"),
            vec![
                pair("A", None),
                pair("B", None),
                pair("new", Some("A")),
                pair("new", Some("B")),
                pair("fmt", Some("A")),
                pair("free", None),
            ]
        );
        assert_eq!(
            of("p.go"),
            vec![
                pair("Point", None),
                pair("X", Some("Point")),
                pair("Norm", Some("Point")),
                pair("Free", None),
            ]
        );
        assert_eq!(
            of("a.cpp"),
            vec![
                pair("A", None),
                pair("f", Some("A")),
                pair("f", Some("A")),
                pair("g", None),
            ]
        );
        assert_eq!(
            of("demo_app/models.py"),
            vec![
                pair("Product", None),
                pair("Order", None),
                pair("total", Some("Order")),
            ]
        );
    }

    #[test]
    fn refusals_say_what_is_allowed() {
        let (_dir, gate) = temp_project(&[
            ("notes.xyz", "text"),
            ("Makefile", "all:"),
            ("blob.rs", "fn a() {}\0\0"),
            ("src/lib.rs", "fn a() {}"),
            (".env", "KEY=1"),
        ]);
        let error = |path: &str| {
            outline(&gate, &input(path), &Cancel::never())
                .unwrap_err()
                .to_string()
        };
        let unknown = error("notes.xyz");
        assert!(
            unknown.starts_with("no outline for .xyz files; outlines are offered for rust (.rs)"),
            "{unknown}"
        );
        assert!(
            unknown.ends_with("use search_project_files or read_project_file for other files"),
            "{unknown}"
        );
        assert!(error("Makefile").starts_with("no outline for files without an ending"));
        assert!(error("blob.rs").contains("is a binary file"));
        assert!(error("src").contains("is a folder"));
        assert!(error("").contains("path is empty"));
        assert!(
            error("../x.rs").contains("outside") || error("../x.rs").contains(".."),
            "{}",
            error("../x.rs")
        );
        let denied = error(".env");
        assert!(!denied.contains("KEY"), "{denied}");
        assert!(error("missing.rs").contains("missing.rs"));
    }

    #[test]
    fn large_outlines_are_cut_to_the_budget_and_deep_nesting_to_the_limit() {
        let many: String = (0..20_000)
            .map(|i| format!("fn function_number_{i}() {{}}\n"))
            .collect();
        let deep: String = (0..40)
            .map(|level| format!("{}class C{level}:\n", " ".repeat(level)))
            .collect::<String>()
            + &" ".repeat(40)
            + "pass\n";
        let (_dir, gate) = temp_project(&[("many.rs", many.as_str()), ("deep.py", deep.as_str())]);
        let output = outline(&gate, &input("many.rs"), &Cancel::never()).unwrap();
        assert!(output.truncated);
        assert!(
            output.count > 100 && output.count < 20_000,
            "{}",
            output.count
        );
        assert_eq!(output.count, output.symbols.len());
        assert!(super::super::json_len(&output) <= MAX_RESULT_CHARS);

        let output = outline(&gate, &input("deep.py"), &Cancel::never()).unwrap();
        assert!(output.truncated);
        assert_eq!(output.count, MAX_NESTING);
        let mut depth = 0;
        let mut level = &output.symbols;
        while let Some(first) = level.first() {
            depth += 1;
            level = &first.children;
        }
        assert_eq!(depth, MAX_NESTING);
    }

    #[test]
    fn oversized_files_are_refused() {
        let big = "x".repeat(MAX_SEARCHED_BYTES as usize + 1);
        let (_dir, gate) = temp_project(&[("big.js", big.as_str())]);
        let error = outline(&gate, &input("big.js"), &Cancel::never()).unwrap_err();
        assert!(error.to_string().contains("larger than 2 MiB"), "{error}");
    }
}
