//! The schemas the server really sends are ones hosts accept silently:
//! JSON Schema 2020-12 with no format it does not define (schemars' `uint`,
//! `int32` … make Claude Code and the MCP Inspector print warnings), every
//! limit a description promises as `minimum`/`maximum`, and descriptions
//! written for the model, not for Rust readers.

use serde_json::{Map, Value};

use crate::common::{Server, demo_root};

/// The formats JSON Schema 2020-12 defines.
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

const JSON_TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// Wording that only makes sense to someone reading the Rust source.
const RUST_WORDING: &[&str] = &[
    "callers",
    "the field is a constant",
    // `struct` alone is a symbol kind the model may ask for.
    "this struct",
    "the struct",
    "Option<",
    "Vec<",
    "usize",
    "u64",
    "serde",
    "schemars",
    "crate::",
];

async fn listed_tools() -> Vec<Value> {
    let server = Server::start(&demo_root()).await;
    let tools = server.client.list_all_tools().await.expect("tools/list");
    server.stop().await;
    tools
        .into_iter()
        .map(|tool| serde_json::to_value(tool).expect("tool as JSON"))
        .collect()
}

/// Every subschema (objects under schema keywords), with its JSON pointer.
fn subschemas<'a>(schema: &'a Value, at: String, out: &mut Vec<(String, &'a Map<String, Value>)>) {
    match schema {
        Value::Object(map) => {
            out.push((at.clone(), map));
            for (keyword, value) in map {
                // Data, not schemas.
                if matches!(keyword.as_str(), "default" | "const" | "enum" | "examples") {
                    continue;
                }
                match value {
                    Value::Object(_) => subschemas(value, format!("{at}/{keyword}"), out),
                    Value::Array(items) => {
                        for (index, item) in items.iter().enumerate() {
                            subschemas(item, format!("{at}/{keyword}/{index}"), out);
                        }
                    }
                    _ => {}
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                subschemas(item, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
}

fn types_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn schemas_use_only_standard_keywords_values_and_formats() {
    let tools = listed_tools().await;
    assert_eq!(tools.len(), 9);
    for tool in &tools {
        let name = tool["name"].as_str().expect("name");
        for key in ["inputSchema", "outputSchema"] {
            let schema = &tool[key];
            assert_eq!(schema["type"], "object", "{name} {key}");
            if let Some(dialect) = schema.get("$schema") {
                assert_eq!(
                    dialect, "https://json-schema.org/draft/2020-12/schema",
                    "{name} {key}"
                );
            }
            let mut found = Vec::new();
            subschemas(schema, format!("{name}/{key}"), &mut found);
            for (at, sub) in found {
                if let Some(format) = sub.get("format") {
                    let format = format.as_str().unwrap_or_default();
                    assert!(
                        STANDARD_FORMATS.contains(&format),
                        "{at}: format {format:?} is not a JSON Schema 2020-12 format"
                    );
                }
                assert!(
                    !sub.contains_key("$ref") && !sub.contains_key("$defs"),
                    "{at}: schemas are inlined for clients that do not resolve references"
                );
                for kind in types_of(sub) {
                    assert!(JSON_TYPES.contains(&kind), "{at}: type {kind:?}");
                }
                for bound in ["minimum", "maximum"] {
                    if let Some(value) = sub.get(bound) {
                        assert!(value.is_number(), "{at}: {bound} {value}");
                    }
                }
                if let Some(description) = sub.get("description") {
                    let description = description.as_str().expect("description is text");
                    for wording in RUST_WORDING {
                        assert!(
                            !description.contains(wording),
                            "{at}: {wording:?} in {description:?}"
                        );
                    }
                }
            }
        }
    }
}

/// Each input integer has a lower bound, and the limits the descriptions
/// state are the schema's bounds.
#[tokio::test]
async fn input_limits_are_minimum_and_maximum() {
    let tools = listed_tools().await;
    let mut integers = 0;
    for tool in &tools {
        let name = tool["name"].as_str().expect("name");
        let mut found = Vec::new();
        subschemas(&tool["inputSchema"], name.to_string(), &mut found);
        for (at, sub) in found {
            if types_of(sub).contains(&"integer") {
                integers += 1;
                assert!(sub.contains_key("minimum"), "{at} has no minimum");
            }
        }
    }
    assert_eq!(integers, 13, "integer inputs of the nine tools");

    let bounds = |tool: &str, property: &str| {
        let schema = tools
            .iter()
            .find(|listed| listed["name"] == tool)
            .unwrap_or_else(|| panic!("{tool} is listed"));
        let property = &schema["inputSchema"]["properties"][property];
        (property["minimum"].as_i64(), property["maximum"].as_i64())
    };
    let expected = [
        ("search_project_files", "max_results", Some(1), Some(200)),
        ("search_project_files", "context_lines", Some(0), Some(10)),
        ("search_project_files", "offset", Some(0), Some(10_000)),
        ("read_project_file", "start_line", Some(1), None),
        ("read_project_file", "end_line", Some(1), None),
        ("list_project_directory", "depth", Some(1), Some(5)),
        ("list_project_directory", "max_entries", Some(1), Some(2000)),
        ("find_project_files", "max_results", Some(1), Some(1000)),
        ("get_docs", "max_results", Some(1), Some(50)),
        ("find_symbol_definitions", "max_results", Some(1), Some(200)),
        ("find_symbol_definitions", "offset", Some(0), Some(10_000)),
        ("find_symbol_references", "max_results", Some(1), Some(200)),
        ("find_symbol_references", "offset", Some(0), Some(10_000)),
    ];
    for (tool, property, minimum, maximum) in expected {
        assert_eq!(
            bounds(tool, property),
            (minimum, maximum),
            "{tool}.{property}"
        );
    }
}

/// The model reads all nine descriptions on every turn: together they stay
/// short, and none speaks Rust.
#[tokio::test]
async fn tool_descriptions_are_concise_and_for_the_model() {
    let tools = listed_tools().await;
    let mut total = 0;
    for tool in &tools {
        let description = tool["description"].as_str().expect("description");
        total += description.len();
        for wording in RUST_WORDING {
            assert!(
                !description.contains(wording),
                "{wording:?} in {description:?}"
            );
        }
    }
    assert!(
        total <= 3_800,
        "the nine descriptions take {total} characters"
    );
}
