use super::*;
use crate::security::PathGate;
use crate::tools::temp_project;

fn input(name: &str) -> ReferencesInput {
    ReferencesInput {
        name: name.to_string(),
        path: ".".to_string(),
        max_results: DEFAULT_MAX_RESULTS,
        offset: 0,
    }
}

fn find(gate: &PathGate, input: &ReferencesInput) -> ReferencesOutput {
    find_references(&Corpus::walked(gate), input, &Cancel::never()).unwrap()
}

fn places(output: &ReferencesOutput) -> Vec<(String, u64, Option<String>)> {
    output
        .references
        .iter()
        .map(|r| (r.file.clone(), r.line, r.within.clone()))
        .collect()
}

fn files() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "b/shop.py",
            "def total(order):\n    return 1\n\nclass Cart:\n    def sum(self):\n        return total(self)  # total\n",
        ),
        (
            "a/uses.rs",
            "fn main() {\n    let t = total(); // total\n}\n",
        ),
        ("c/notes.txt", "total of the day\n"),
        ("c/Makefile", "subtotal: x\n"),
        ("node_modules/lib/x.js", "total();\n"),
        (".env", "total=1\n"),
    ]
}

#[test]
fn uses_sorted_by_path_with_the_enclosing_definition() {
    let files = files();
    let (_dir, gate) = temp_project(&files);
    let output = find(&gate, &input("total"));
    assert_eq!(
        places(&output),
        vec![
            ("a/uses.rs".to_string(), 2, Some("main".to_string())),
            ("b/shop.py".to_string(), 6, Some("Cart.sum".to_string())),
        ]
    );
    assert_eq!(
        output.references[1].text,
        "        return total(self)  # total"
    );
    assert_eq!(output.count, 2);
    assert!(!output.truncated);
    // notes.txt holds the word; the Makefile only `subtotal`; ignored and
    // denied files are never looked at.
    assert_eq!(output.files_without_grammar, 1);
    let json = serde_json::to_value(&output).unwrap();
    assert_eq!(json["references"][0]["in"], "main");
    let in_folder = find(
        &gate,
        &ReferencesInput {
            path: "b".to_string(),
            ..input("total")
        },
    );
    assert_eq!(in_folder.count, 1);
    assert_eq!(in_folder.files_without_grammar, 0);
}

#[test]
fn paging_gives_the_same_order() {
    let source: String = (0..30).map(|i| format!("x{i} = f()\n")).collect();
    let (_dir, gate) = temp_project(&[
        ("a.py", source.as_str()),
        ("b.py", source.as_str()),
        ("c.txt", "f"),
    ]);
    let all = find(
        &gate,
        &ReferencesInput {
            max_results: 200,
            ..input("f")
        },
    );
    assert_eq!(all.count, 60);
    assert!(!all.truncated);
    assert_eq!(all.files_without_grammar, 1);
    let mut paged = Vec::new();
    for page in 0..6 {
        let output = find(
            &gate,
            &ReferencesInput {
                max_results: 11,
                offset: page * 11,
                ..input("f")
            },
        );
        assert_eq!(output.truncated, page < 5, "page {page}");
        paged.extend(output.references);
    }
    assert_eq!(paged, all.references);
}

#[test]
fn bad_names_and_offsets_are_refused() {
    let (_dir, gate) = temp_project(&[("a.py", "x = 1\n")]);
    let error = |input: ReferencesInput| {
        find_references(&Corpus::walked(&gate), &input, &Cancel::never())
            .unwrap_err()
            .to_string()
    };
    assert!(error(input("")).contains("one identifier"));
    assert!(error(input("two words")).contains("one identifier"));
    assert!(error(input("Order.total")).contains("without a qualifier"));
    assert!(error(input(&"x".repeat(300))).contains("at most 256 characters"));
    assert!(
        error(ReferencesInput {
            offset: MAX_OFFSET + 1,
            ..input("x")
        })
        .contains("offset")
    );
    assert!(
        error(ReferencesInput {
            path: "../up".to_string(),
            ..input("x")
        })
        .contains("..")
    );
}

#[test]
fn a_cancelled_lookup_stops() {
    let (_dir, gate) = temp_project(&[("a.py", "f()\n")]);
    let cancel = Cancel::never();
    cancel.cancel();
    let outcome = find_references(&Corpus::walked(&gate), &input("f"), &cancel);
    assert!(matches!(outcome, Err(ToolError::Cancelled)));
}
