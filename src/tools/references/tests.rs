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
fn python_scopes_follow_the_whole_project() {
    let (_dir, gate) = temp_project(&[
        (
            "shop/cart.py",
            "class Cart:\n    def total(self):\n        return 1\n\ndef total(items):\n    return sum(items)\n",
        ),
        (
            "shop/report.py",
            "from shop.cart import Cart, total\n\ndef report(total, cart: Cart, rows):\n    return total\n\ndef main(rows, cart: Cart):\n    print(cart.total(), rows.total)\n    return total(rows)\n",
        ),
        (
            "notes/local.py",
            "def f(percent):\n    return percent * 2\n",
        ),
    ]);
    // `total` is a method in cart.py, so `rows.total` counts (its class is
    // not known); the parameter on line 3 and its use on line 4 do not.
    assert_eq!(
        places(&find(&gate, &input("total"))),
        vec![
            ("shop/report.py".to_string(), 1, None),
            ("shop/report.py".to_string(), 7, Some("main".to_string())),
            ("shop/report.py".to_string(), 8, Some("main".to_string())),
        ]
    );
    assert_eq!(
        places(&find(&gate, &input("Cart.total"))),
        vec![("shop/report.py".to_string(), 7, Some("main".to_string()))]
    );
    // A name no `def` or `class` defines: every occurrence, the parameter too.
    assert_eq!(
        places(&find(&gate, &input("percent"))),
        vec![
            ("notes/local.py".to_string(), 1, Some("f".to_string())),
            ("notes/local.py".to_string(), 2, Some("f".to_string())),
        ]
    );
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
    assert!(error(input("Order.total.x")).contains("'Class.name'"));
    assert!(error(input(".total")).contains("one identifier"));
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

#[test]
fn a_lookup_out_of_time_says_so_and_how_to_narrow() {
    let (_dir, gate) = temp_project(&[("a.py", "f()\n"), ("b.py", "f()\n")]);
    let spent = ParseBudget::lasting(std::time::Duration::ZERO, &Cancel::never());
    std::thread::sleep(std::time::Duration::from_millis(2));
    let error = look_up(
        &Corpus::walked(&gate),
        &input("f"),
        &Cancel::never(),
        &spent,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "looking for uses of 'f' ran out of the 10-second parse budget after parsing 0 file(s) that hold the name, before 'a.py'; give a narrower path (a folder or one file), or use search_project_files to find the name as text"
    );
}

#[test]
fn files_whose_parse_needs_too_much_memory_are_named_in_a_note() {
    let mut ambiguous = String::from("int y = f;\nint x = ");
    while ambiguous.len() < 20_000 {
        ambiguous.push_str("a<b<c<d<");
    }
    ambiguous.push_str(";\n");
    let (_dir, gate) = temp_project(&[
        ("a/ambiguous.cpp", ambiguous.as_str()),
        ("b/plain.c", "int g(void) { return f(); }\n"),
    ]);
    let output = find(&gate, &input("f"));
    assert_eq!(
        places(&output),
        vec![("b/plain.c".to_string(), 1, Some("g".to_string()))]
    );
    assert_eq!(
        output.note.as_deref(),
        Some(
            "1 file(s) holding the name could not be parsed (a parse may hold 1 KiB per byte of its file, at most 256 MiB) and are not in the answer: a/ambiguous.cpp; search_project_files finds the name in them"
        )
    );
}
