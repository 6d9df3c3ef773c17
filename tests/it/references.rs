//! find_symbol_references through the real binary: the demo project's
//! `apply_discount` and `Order.total`, comments, strings and definitions
//! left out, Python's parameters and locals, paging,
//! the skip and deny rules, files without a grammar counted, answers that
//! do not depend on the index, and bad input.

use serde_json::{Value, json};

use crate::common::{Server, TempProject, demo_root, indexed_and_scanning_servers};

/// (file, line, in) of each reference.
fn references(out: &Value) -> Vec<(String, u64, String)> {
    out["references"]
        .as_array()
        .expect("references")
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["line"].as_u64().unwrap(),
                r["in"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

fn at(file: &str, line: u64, within: &str) -> (String, u64, String) {
    (file.to_string(), line, within.to_string())
}

#[tokio::test]
async fn demo_apply_discount_is_used_by_the_tests() {
    let server = Server::start(&demo_root()).await;
    let out = server
        .ok("find_symbol_references", json!({"name": "apply_discount"}))
        .await;
    assert_eq!(
        out,
        json!({"status":"success","name":"apply_discount","count":3,"truncated":false,"files_without_grammar":0,
         "references":[
          {"file":"tests/test_services.py","line":1,"text":"from demo_app.services import OrderBuilder, apply_discount","in":null},
          {"file":"tests/test_services.py","line":6,"text":"    assert apply_discount(order, 10) == 36.0","in":"test_discount_reduces_total"},
          {"file":"tests/test_services.py","line":11,"text":"    assert apply_discount(order, 90) == 5.0","in":"test_discount_is_clamped"}]})
    );
    server.stop().await;
}

#[tokio::test]
async fn demo_order_total_as_a_member_and_a_parameter_name() {
    let server = Server::start(&demo_root()).await;
    let member = server
        .ok("find_symbol_references", json!({"name": "Order.total"}))
        .await;
    assert_eq!(member["name"], "Order.total", "{member}");
    // `order: Order` makes `order.total()` the method's use.
    assert_eq!(
        references(&member),
        vec![at("demo_app/services.py", 18, "apply_discount")]
    );
    // `percent` is a parameter, defined by no `def` or `class`: every
    // occurrence in code counts (the docstring's "percentage" does not).
    let parameter = server
        .ok("find_symbol_references", json!({"name": "percent"}))
        .await;
    assert_eq!(
        references(&parameter),
        vec![
            at("demo_app/services.py", 12, "apply_discount"),
            at("demo_app/services.py", 17, "apply_discount"),
            at("demo_app/services.py", 18, "apply_discount"),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn python_parameters_and_locals_of_a_defined_name_are_not_its_uses() {
    let project = TempProject::new();
    project
        .write("shop/cart.py", "def total(items):\n    return sum(items)\n")
        .write(
            "shop/report.py",
            "from shop.cart import total\n\ndef report(total):\n    return total\n\ndef main(rows):\n    subtotal = total(rows)\n    total = 0\n    return subtotal\n\ndef last(rows):\n    return total(rows), rows.total\n",
        );
    let server = Server::start(&project.root).await;
    let out = server
        .ok("find_symbol_references", json!({"name": "total"}))
        .await;
    // 3-4: a parameter; 7-8: `main` assigns `total`, so it is a local
    // there (Python's rule); 12: `rows.total` is some other object's
    // attribute, as `total` is no method.
    assert_eq!(
        references(&out),
        vec![
            at("shop/report.py", 1, "-"),
            at("shop/report.py", 12, "last")
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn skip_and_deny_rules_and_files_without_grammar() {
    let project = TempProject::new();
    project
        .write(".gitignore", "generated/\n")
        .write("generated/out.py", "handler()\n")
        .write("node_modules/pkg/index.js", "handler();\n")
        .write(".env", "handler = 1\n")
        .write("keys/server.pem", "handler()\n")
        .write("private/secret.py", "handler()\n")
        .write("docs/notes.md", "Call handler first.\n")
        .write("Makefile", "run: handler\n")
        .write("blob.py", b"handler()\0\0\n")
        .write(
            "src/app.py",
            "# handler in a comment\ndef handler():\n    return 'handler'\n\ndef main():\n    handler()\n",
        )
        .write(
            "src/lib.rs",
            "pub struct Server;\nimpl Server {\n    pub fn run(&self) { handler(); }\n}\n",
        );
    let config = project.outside().join("deny.toml");
    std::fs::write(&config, "[deny]\nglobs = [\"private/**\"]\n").unwrap();
    let server =
        Server::start_with(&project.root, &["--config", config.to_str().unwrap()], &[]).await;
    let out = server
        .ok("find_symbol_references", json!({"name": "handler"}))
        .await;
    assert_eq!(
        references(&out),
        vec![
            at("src/app.py", 6, "main"),
            at("src/lib.rs", 3, "Server.run")
        ]
    );
    // docs/notes.md and the Makefile hold the word and have no grammar.
    assert_eq!(out["files_without_grammar"], 2, "{out}");
    let text = serde_json::to_string(&out).unwrap();
    for hidden in [
        ".env",
        "server.pem",
        "secret.py",
        "generated",
        "node_modules",
    ] {
        assert!(!text.contains(hidden), "{hidden} shown: {text}");
    }
    let one_file = server
        .ok(
            "find_symbol_references",
            json!({"name": "handler", "path": "src/lib.rs"}),
        )
        .await;
    assert_eq!(
        references(&one_file),
        vec![at("src/lib.rs", 3, "Server.run")]
    );
    server.stop().await;
}

#[tokio::test]
async fn references_page_in_path_then_line_order() {
    let project = TempProject::new();
    let python: String = (0..10).map(|i| format!("x{i} = run()\n")).collect();
    project
        .write("b.py", &python)
        .write("a.py", &python)
        .write("c/d.go", "package c\nfunc main() {\n\trun()\n\trun()\n}\n")
        .write("c/e.rs", "fn main() {\n    run(); run();\n}\n");
    let server = Server::start(&project.root).await;
    let all = server
        .ok(
            "find_symbol_references",
            json!({"name": "run", "max_results": 200}),
        )
        .await;
    assert_eq!(all["count"], 23, "{all}");
    assert_eq!(all["truncated"], false);
    let found = references(&all);
    let mut sorted = found.clone();
    sorted.sort_by(|a, b| (a.0.as_str(), a.1).cmp(&(b.0.as_str(), b.1)));
    assert_eq!(found, sorted);
    // Two uses on one line are one reference.
    assert_eq!(found[22], at("c/e.rs", 2, "main"));
    let mut paged = Vec::new();
    for page in 0..3 {
        let out = server
            .ok(
                "find_symbol_references",
                json!({"name": "run", "max_results": 10, "offset": page * 10}),
            )
            .await;
        assert_eq!(out["truncated"], page < 2, "page {page}");
        paged.extend(references(&out));
    }
    assert_eq!(paged, found);
    server.stop().await;
}

/// With the index built and without one, and for files written after the
/// build, the answers are the same.
#[tokio::test]
async fn answers_do_not_depend_on_the_index() {
    let project = TempProject::new();
    for i in 0..200 {
        project.write(
            &format!("m{}/f{i}.py", i % 7),
            format!("def f{i}():\n    return handle_{}(f{i})\n", i % 3),
        );
    }
    let (indexed, scanning) = indexed_and_scanning_servers(&project).await;
    project
        .write("m2/late.rs", "fn late() { handle_1(); }\n")
        .write("m1/late.txt", "handle_1\n");
    for name in ["handle_1", "f17", "missing_name"] {
        let arguments = json!({"name": name, "max_results": 200});
        let a = indexed
            .ok("find_symbol_references", arguments.clone())
            .await;
        let b = scanning.ok("find_symbol_references", arguments).await;
        assert_eq!(a, b, "{name}");
    }
    let late = indexed
        .ok(
            "find_symbol_references",
            json!({"name": "handle_1", "path": "m2", "max_results": 200}),
        )
        .await;
    assert!(
        references(&late).contains(&at("m2/late.rs", 1, "late")),
        "{late}"
    );
    let late = indexed
        .ok(
            "find_symbol_references",
            json!({"name": "handle_1", "path": "m1"}),
        )
        .await;
    assert_eq!(late["files_without_grammar"], 1, "{late}");
    indexed.stop().await;
    scanning.stop().await;
}

#[tokio::test]
async fn bad_input_is_refused_with_what_is_allowed() {
    let project = TempProject::new();
    project.write("a.py", "x = 1\n");
    let server = Server::start(&project.root).await;
    for (arguments, wanted) in [
        (json!({"name": ""}), "one identifier"),
        (json!({"name": "two words"}), "one identifier"),
        (json!({"name": "Order.total.x"}), "'Class.name'"),
        (json!({"name": "a", "offset": 10_001}), "offset"),
        (json!({"name": "a", "path": "/etc"}), "absolute"),
        (
            json!({"name": "a", "path": "../up"}),
            "leaves the project root",
        ),
        (json!({"name": "x".repeat(300)}), "at most 256 characters"),
        (
            json!({"name": "a", "max_results": "many"}),
            "parameter `max_results`",
        ),
        (json!({}), "name"),
    ] {
        server
            .err_saying("find_symbol_references", arguments, wanted)
            .await;
    }
    server.stop().await;
}
