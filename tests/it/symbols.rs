//! outline_project_file and find_symbol_definitions through the real
//! binary: the SPEC example on demo_project, refusals, the deny-list, paging,
//! answers that do not depend on the index, and hostile files.

use serde_json::{Value, json};

use crate::common::{Server, TempProject, demo_root, indexed_and_scanning_servers, text_of};

/// The outline of `path`, or `None` when the server refused it with the
/// parse budget's error: for hostile files whose parse time depends on the
/// machine's speed and load, where either answer is fine and a hang or a
/// crash is not.
async fn outline_or_over_budget(server: &Server, path: &str) -> Option<Value> {
    let result = server
        .call("outline_project_file", json!({"path": path}))
        .await;
    if result.is_error == Some(true) {
        assert_eq!(
            text_of(&result),
            format!(
                "cannot outline '{path}': the call's 10-second parse budget ran out; use search_project_files or read_project_file with a line range"
            )
        );
        return None;
    }
    let out = result.structured_content.expect("structuredContent");
    assert_eq!(out["file"], path, "{out}");
    Some(out)
}

fn definitions(out: &Value) -> Vec<(String, u64, String, String)> {
    out["definitions"]
        .as_array()
        .expect("definitions")
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["kind"].as_str().unwrap().to_string(),
                d["parent"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

fn def(file: &str, line: u64, kind: &str, parent: &str) -> (String, u64, String, String) {
    (file.to_string(), line, kind.to_string(), parent.to_string())
}

#[tokio::test]
async fn the_demo_outline_is_the_spec_example() {
    let server = Server::start(&demo_root()).await;
    let out = server
        .ok(
            "outline_project_file",
            json!({"path": "demo_app/models.py"}),
        )
        .await;
    assert_eq!(
        out,
        json!({"status":"success","file":"demo_app/models.py","language":"python","count":3,"truncated":false,
         "symbols":[{"kind":"class","name":"Product","line":7,"end_line":10,"signature":"class Product:","parent":null,"children":[]},
          {"kind":"class","name":"Order","line":14,"end_line":20,"signature":"class Order:","parent":null,
           "children":[{"kind":"method","name":"total","line":18,"end_line":20,"signature":"def total(self) -> float:","parent":"Order","children":[]}]}]})
    );
    server.stop().await;
}

/// (name, line, parent) of every outline symbol, depth first.
fn outline_parents(symbols: &Value) -> Vec<(String, u64, String)> {
    symbols
        .as_array()
        .expect("symbols")
        .iter()
        .flat_map(|symbol| {
            let own = (
                symbol["name"].as_str().unwrap().to_string(),
                symbol["line"].as_u64().unwrap(),
                symbol["parent"].as_str().unwrap_or("-").to_string(),
            );
            std::iter::once(own).chain(outline_parents(&symbol["children"]))
        })
        .collect()
}

/// Each language family's way of saying whose a method is: an enclosing
/// class, a Rust `impl` (a trait's included), a Go receiver, C++'s `A::`.
/// The outline gives every symbol the parent find_symbol_definitions gives
/// the same definition.
#[tokio::test]
async fn outline_parents_are_those_of_the_definitions() {
    let project = TempProject::new();
    project
        .write(
            "shapes.rs",
            "pub struct A;\npub struct B;\nimpl A {\n    pub fn new() -> A { A }\n}\nimpl B {\n    pub fn new() -> B { B }\n}\nimpl std::fmt::Display for A {\n    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { Ok(()) }\n}\npub fn free() {}\n",
        )
        .write(
            "point.go",
            "package p\n\ntype Point struct {\n\tX int\n}\n\nfunc (p *Point) Norm() int { return p.X }\n\nfunc Free() {}\n",
        )
        .write(
            "cart.cpp",
            "class Cart {\n  public:\n    int size() const;\n};\nint Cart::size() const { return 0; }\nint free_size() { return 1; }\n",
        )
        .write(
            "shop.py",
            "class Order:\n    def total(self):\n        return 0\n\ndef free():\n    pass\n",
        )
        .write(
            "view.ts",
            "export class View {\n  render(): void {}\n}\nexport function free(): void {}\n",
        )
        .write(
            "Cart.java",
            "class Cart {\n    int size() { return 0; }\n}\n",
        )
        .write(
            "Cart.cs",
            "namespace Shop {\n    class Cart {\n        int Size() { return 0; }\n    }\n}\n",
        );
    let server = Server::start(&project.root).await;
    type Outline = &'static [(&'static str, u64, &'static str)];
    let expected: &[(&str, Outline)] = &[
        (
            "shapes.rs",
            &[
                ("A", 1, "-"),
                ("B", 2, "-"),
                ("new", 4, "A"),
                ("new", 7, "B"),
                ("fmt", 10, "A"),
                ("free", 12, "-"),
            ],
        ),
        (
            "point.go",
            &[
                ("Point", 3, "-"),
                ("X", 4, "Point"),
                ("Norm", 7, "Point"),
                ("Free", 9, "-"),
            ],
        ),
        (
            "cart.cpp",
            &[
                ("Cart", 1, "-"),
                ("size", 3, "Cart"),
                ("size", 5, "Cart"),
                ("free_size", 6, "-"),
            ],
        ),
        (
            "shop.py",
            &[("Order", 1, "-"), ("total", 2, "Order"), ("free", 5, "-")],
        ),
        (
            "view.ts",
            &[("View", 1, "-"), ("render", 2, "View"), ("free", 4, "-")],
        ),
        ("Cart.java", &[("Cart", 1, "-"), ("size", 2, "Cart")]),
        (
            "Cart.cs",
            &[("Shop", 1, "-"), ("Cart", 2, "Shop"), ("Size", 3, "Cart")],
        ),
    ];
    for (file, symbols) in expected {
        let out = server
            .ok("outline_project_file", json!({"path": file}))
            .await;
        let found = outline_parents(&out["symbols"]);
        let wanted: Vec<(String, u64, String)> = symbols
            .iter()
            .map(|(name, line, parent)| (name.to_string(), *line, parent.to_string()))
            .collect();
        assert_eq!(found, wanted, "{file}");
        for (name, line, parent) in &found {
            let defined = server
                .ok(
                    "find_symbol_definitions",
                    json!({"name": name, "path": file}),
                )
                .await;
            assert!(
                definitions(&defined)
                    .iter()
                    .any(|d| d.1 == *line && d.3 == *parent),
                "{file}: {name} at {line} with parent {parent}: {defined}"
            );
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn demo_definitions_by_name_and_kind() {
    let server = Server::start(&demo_root()).await;
    let out = server
        .ok("find_symbol_definitions", json!({"name": "apply_discount"}))
        .await;
    assert_eq!(
        out,
        json!({"status":"success","name":"apply_discount","count":1,"truncated":false,
         "definitions":[{"file":"demo_app/services.py","line":12,"end_line":18,"kind":"function",
          "name":"apply_discount","parent":null,
          "signature":"def apply_discount(order: Order, percent: float) -> float:"}]})
    );
    let total = server
        .ok("find_symbol_definitions", json!({"name": "total"}))
        .await;
    assert_eq!(
        definitions(&total),
        vec![def("demo_app/models.py", 18, "method", "Order")]
    );
    let classes = server
        .ok(
            "find_symbol_definitions",
            json!({"name": "Order", "kind": "class", "path": "demo_app"}),
        )
        .await;
    assert_eq!(
        definitions(&classes),
        vec![def("demo_app/models.py", 14, "class", "-")]
    );
    let none = server
        .ok(
            "find_symbol_definitions",
            json!({"name": "Order", "kind": "function"}),
        )
        .await;
    assert_eq!(none["count"], 0);
    assert_eq!(
        server
            .ok("find_symbol_definitions", json!({"name": "order"}))
            .await["count"],
        0,
        "names are case-sensitive"
    );
    server.stop().await;
}

#[tokio::test]
async fn refusals_name_what_is_allowed() {
    let project = TempProject::new();
    project
        .write("notes.xyz", "fn a() {}\n")
        .write("src/lib.rs", "pub fn a() {}\n")
        .write("blob.py", b"def a():\0\0\n")
        .write(".env", "def secret(): pass\n")
        .write("keys/server.pem", "def secret(): pass\n")
        .write(".git/hooks/hook.py", "def secret(): pass\n")
        .write("private/hidden.py", "def secret(): pass\n")
        .write("public/open.py", "def secret(): pass\n");
    let config = project.outside().join("deny.toml");
    std::fs::write(&config, "[deny]\nglobs = [\"private/**\"]\n").unwrap();
    let server =
        Server::start_with(&project.root, &["--config", config.to_str().unwrap()], &[]).await;

    let unknown = server
        .err("outline_project_file", json!({"path": "notes.xyz"}))
        .await;
    assert!(
        unknown.starts_with(
            "no outline for .xyz files; outlines are offered for rust (.rs), python (.py, .pyi)"
        ),
        "{unknown}"
    );
    assert!(unknown.contains("use search_project_files"), "{unknown}");
    let folder = server
        .err("outline_project_file", json!({"path": "src"}))
        .await;
    assert!(folder.contains("is a folder"), "{folder}");
    let binary = server
        .err("outline_project_file", json!({"path": "blob.py"}))
        .await;
    assert!(binary.contains("binary"), "{binary}");
    let outside = server
        .err("outline_project_file", json!({"path": "../x.rs"}))
        .await;
    assert!(outside.contains("leaves the project root"), "{outside}");
    for denied in [".git/hooks/hook.py", "private/hidden.py"] {
        let message = server
            .err_saying("outline_project_file", json!({"path": denied}), "deny-list")
            .await;
        assert!(!message.contains("def secret"), "{message}");
    }

    let found = server
        .ok("find_symbol_definitions", json!({"name": "secret"}))
        .await;
    assert_eq!(
        definitions(&found),
        vec![def("public/open.py", 1, "function", "-")]
    );
    for (arguments, wanted) in [
        (json!({"name": ""}), "one identifier"),
        (json!({"name": "two words"}), "one identifier"),
        (json!({"name": "a", "offset": 10_001}), "offset"),
        (json!({"name": "a", "path": "/etc"}), "absolute"),
    ] {
        let message = server
            .err("find_symbol_definitions", arguments.clone())
            .await;
        assert!(message.contains(wanted), "{arguments}: {message}");
    }
    let bad_kind = server
        .err(
            "find_symbol_definitions",
            json!({"name": "a", "kind": "variable"}),
        )
        .await;
    assert!(bad_kind.contains("parameter `kind`"), "{bad_kind}");
    assert!(bad_kind.contains("function"), "{bad_kind}");
    server.stop().await;
}

#[tokio::test]
async fn definitions_page_in_path_then_line_order() {
    let project = TempProject::new();
    for file in ["b.py", "a.py", "c/d.go", "c/e.rs"] {
        let source = match file {
            "c/d.go" => "package c\nfunc run() {}\nfunc run2() {}\n".to_string(),
            "c/e.rs" => "fn run() {}\nmod m { pub fn run() {} }\n".to_string(),
            _ => (0..10)
                .map(|i| format!("def run():\n    return {i}\n"))
                .collect(),
        };
        project.write(file, source);
    }
    let server = Server::start(&project.root).await;
    let all = server
        .ok(
            "find_symbol_definitions",
            json!({"name": "run", "max_results": 200}),
        )
        .await;
    assert_eq!(all["count"], 23);
    assert_eq!(all["truncated"], false);
    let found = definitions(&all);
    let mut sorted = found.clone();
    sorted.sort_by(|a, b| (a.0.as_str(), a.1).cmp(&(b.0.as_str(), b.1)));
    assert_eq!(found, sorted);
    assert_eq!(found[20], def("c/d.go", 2, "function", "-"));
    assert_eq!(found[22], def("c/e.rs", 2, "function", "m"));

    let mut paged = Vec::new();
    for page in 0..3 {
        let out = server
            .ok(
                "find_symbol_definitions",
                json!({"name": "run", "max_results": 10, "offset": page * 10}),
            )
            .await;
        assert_eq!(out["truncated"], page < 2, "page {page}");
        paged.extend(definitions(&out));
    }
    assert_eq!(paged, found);
    server.stop().await;
}

/// With the index built and without one, and for files written after the
/// index was built, the answers are the same.
#[tokio::test]
async fn answers_do_not_depend_on_the_index() {
    let project = TempProject::new();
    for i in 0..200 {
        project.write(
            &format!("m{}/f{i}.py", i % 7),
            format!("def f{i}():\n    return handler_{i}\n"),
        );
    }
    project.write(
        "m1/target.py",
        "class Handler:\n    def handle(self):\n        pass\n",
    );
    let (indexed, scanning) = indexed_and_scanning_servers(&project).await;

    // Written after the build: the index cannot vouch for these yet.
    project
        .write(
            "m2/late.rs",
            "struct Handler;\nimpl Handler { fn handle(&self) {} }\n",
        )
        .write(
            "m1/target.py",
            "class Other:\n    pass\n\nclass Handler:\n    def handle(self):\n        pass\n",
        );
    for name in ["Handler", "handle", "f17", "missing_name"] {
        let arguments = json!({"name": name});
        let a = indexed
            .ok("find_symbol_definitions", arguments.clone())
            .await;
        let b = scanning.ok("find_symbol_definitions", arguments).await;
        assert_eq!(a, b, "{name}");
    }
    let handler = indexed
        .ok("find_symbol_definitions", json!({"name": "Handler"}))
        .await;
    assert_eq!(
        definitions(&handler),
        vec![
            def("m1/target.py", 4, "class", "-"),
            def("m2/late.rs", 1, "struct", "-"),
        ]
    );
    let handle = indexed
        .ok("find_symbol_definitions", json!({"name": "handle"}))
        .await;
    assert_eq!(
        definitions(&handle),
        vec![
            def("m1/target.py", 5, "method", "Handler"),
            def("m2/late.rs", 2, "method", "Handler"),
        ]
    );
    indexed.stop().await;
    scanning.stop().await;
}

/// Deep nesting, huge lines and invalid UTF-8 get an answer, and the
/// server goes on serving.
#[tokio::test]
async fn hostile_files_neither_crash_nor_hang_the_server() {
    let project = TempProject::new();
    let deep_js = format!(
        "function top() {{}}\nconst x = {}1{};\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let unbalanced_c = format!("int f(void) {{ {}\n", "{ (".repeat(100_000));
    let long_line = format!(
        "fn {}() {{}} {}\n",
        "n".repeat(500_000),
        "fn b() {} ".repeat(100_000)
    );
    let mut invalid = b"def ok():\n    pass\n".to_vec();
    invalid.extend_from_slice(&[b'#'; 5000]);
    invalid.extend_from_slice(b"\ndef caf\xe9():\n    pass\nclass \xff\xfe:\n    pass\n");
    let nested_classes: String = (0..300)
        .map(|level| format!("{}class C{level}:\n", " ".repeat(level)))
        .collect::<String>()
        + &" ".repeat(300)
        + "pass\n";
    project
        .write("deep.js", deep_js)
        .write("unbalanced.c", unbalanced_c)
        .write("long.rs", long_line)
        .write("invalid.py", invalid)
        .write("nested.py", nested_classes);
    #[cfg(unix)]
    {
        let fifo = std::ffi::CString::new(project.root.join("pipe.py").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    }
    let server = Server::start(&project.root).await;
    #[cfg(unix)]
    {
        let fifo = server
            .err("outline_project_file", json!({"path": "pipe.py"}))
            .await;
        assert!(fifo.contains("not a regular file"), "{fifo}");
    }

    let deep = server
        .ok("outline_project_file", json!({"path": "deep.js"}))
        .await;
    assert_eq!(deep["symbols"][0]["name"], "top");
    // Error recovery on unbalanced.c, and the 1.5 MB line of long.rs, may
    // outrun the parse budget on a slow or loaded machine.
    if let Some(unbalanced) = outline_or_over_budget(&server, "unbalanced.c").await {
        assert!(unbalanced["count"].is_u64(), "{unbalanced}");
    }
    let long = outline_or_over_budget(&server, "long.rs").await;
    if let Some(long) = &long {
        assert_eq!(long["truncated"], true);
        let first = &long["symbols"][0];
        assert_eq!(first["name"].as_str().unwrap().chars().count(), 200);
        assert!(first["signature"].as_str().unwrap().chars().count() <= 200);
        let text = serde_json::to_string(long).unwrap();
        assert!(text.len() <= 100_000, "{}", text.len());
    }
    let invalid = server
        .ok("outline_project_file", json!({"path": "invalid.py"}))
        .await;
    assert_eq!(invalid["symbols"][0]["name"], "ok");
    assert!(invalid["count"].as_u64().unwrap() >= 2, "{invalid}");
    let nested = server
        .ok("outline_project_file", json!({"path": "nested.py"}))
        .await;
    assert_eq!(nested["truncated"], true);
    assert_eq!(nested["count"], 16);

    // Every `b` is in long.rs: found when it parses in time; else the note
    // names it as unparsed, or, when the budget ran out before any file was
    // parsed, the call says so.
    let lookup = server
        .call(
            "find_symbol_definitions",
            json!({"name": "b", "max_results": 200}),
        )
        .await;
    if lookup.is_error == Some(true) {
        assert_eq!(
            text_of(&lookup),
            "looking up 'b' ran out of the 10-second parse budget after parsing 0 file(s) that hold the name, \
             before 'long.rs'; give a narrower path (a folder or one file), or use search_project_files to find \
             the name as text"
        );
    } else {
        let found = lookup.structured_content.expect("structuredContent");
        let note = found["note"].as_str().unwrap_or_default();
        if note.contains("could not be parsed") {
            assert!(
                note.ends_with(": long.rs; search_project_files finds the name in them"),
                "{note}"
            );
            assert_eq!(found["count"], 0, "{found}");
        } else {
            assert_eq!(found["count"], 200, "{found}");
            assert_eq!(found["truncated"], true);
        }
    }
    // Still serving.
    let out = server
        .ok("find_symbol_definitions", json!({"name": "top"}))
        .await;
    assert_eq!(definitions(&out), vec![def("deep.js", 1, "function", "-")]);
    server.stop().await;
}
