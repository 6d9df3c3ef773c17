use super::*;
use SymbolKind::*;

/// A call's budget that nobody cancels.
fn unbounded() -> ParseBudget {
    ParseBudget::for_call(&Cancel::never())
}

/// (kind, name, line, end_line, parent) of each definition in `source`.
fn symbols(
    language: Language,
    source: &str,
) -> Vec<(SymbolKind, String, u64, u64, Option<String>)> {
    definitions(language, source.as_bytes(), &unbounded())
        .expect("parsed")
        .into_iter()
        .map(|s| (s.kind, s.name, s.line, s.end_line, s.parent))
        .collect()
}

fn row(
    kind: SymbolKind,
    name: &str,
    line: u64,
    end_line: u64,
    parent: Option<&str>,
) -> (SymbolKind, String, u64, u64, Option<String>) {
    (
        kind,
        name.to_string(),
        line,
        end_line,
        parent.map(str::to_string),
    )
}

fn signatures(language: Language, source: &str) -> Vec<String> {
    definitions(language, source.as_bytes(), &unbounded())
        .expect("parsed")
        .into_iter()
        .map(|s| s.signature)
        .collect()
}

#[test]
fn languages_by_file_ending() {
    assert_eq!(Language::of_path("src/main.rs"), Some(Language::Rust));
    assert_eq!(Language::of_path("a/b.PY"), Some(Language::Python));
    assert_eq!(Language::of_path("x.tsx"), Some(Language::Tsx));
    assert_eq!(Language::of_path("x.d.ts"), Some(Language::TypeScript));
    assert_eq!(Language::of_path("lib/x.mjs"), Some(Language::JavaScript));
    assert_eq!(Language::of_path("inc/x.h"), Some(Language::C));
    assert_eq!(Language::of_path("x.hpp"), Some(Language::Cpp));
    assert_eq!(Language::of_path("X.cs"), Some(Language::CSharp));
    assert_eq!(Language::of_path("notes.xyz"), None);
    assert_eq!(Language::of_path(".rs"), None);
    assert_eq!(Language::of_path("Makefile"), None);
    let offered = Language::offered();
    assert!(
        offered.starts_with("rust (.rs), python (.py, .pyi)"),
        "{offered}"
    );
    assert!(offered.contains("csharp (.cs)"), "{offered}");
}

#[test]
fn python_classes_methods_and_decorators() {
    let source = "\"\"\"Doc.\"\"\"\n\n@dataclass\nclass Order:\n    items: list\n\n    def total(self) -> float:\n        def add(a, b):\n            return a + b\n        return 0\n\n\ndef main():\n    pass\n";
    assert_eq!(
        symbols(Language::Python, source),
        vec![
            row(Class, "Order", 4, 10, None),
            row(Method, "total", 7, 10, Some("Order")),
            row(Function, "add", 8, 9, Some("total")),
            row(Function, "main", 13, 14, None),
        ]
    );
    assert_eq!(
        signatures(Language::Python, source),
        [
            "class Order:",
            "def total(self) -> float:",
            "def add(a, b):",
            "def main():"
        ]
    );
}

#[test]
fn rust_items_impl_blocks_and_traits() {
    let source = r#"/// An order.
#[derive(Debug)]
pub struct Order {
    pub id: u32,
}

pub enum Status { Open, Closed }

impl<T> Display for Order {
    fn fmt(&self) {}
}

pub trait Priced {
    type Money;
    fn price(&self) -> u32;
}

pub mod shop {
    pub const LIMIT: usize = 3;
    macro_rules! shout { () => {} }
}

type Id = u32;
static NAME: &str = "x";

fn helper() {
    const LOCAL: u8 = 1;
}
"#;
    assert_eq!(
        symbols(Language::Rust, source),
        vec![
            row(Struct, "Order", 3, 5, None),
            row(Field, "id", 4, 4, Some("Order")),
            row(Enum, "Status", 7, 7, None),
            row(Constant, "Open", 7, 7, Some("Status")),
            row(Constant, "Closed", 7, 7, Some("Status")),
            row(Method, "fmt", 10, 10, Some("Order")),
            row(Trait, "Priced", 13, 16, None),
            row(Type, "Money", 14, 14, Some("Priced")),
            row(Method, "price", 15, 15, Some("Priced")),
            row(Module, "shop", 18, 21, None),
            row(Constant, "LIMIT", 19, 19, Some("shop")),
            row(Macro, "shout", 20, 20, Some("shop")),
            row(Type, "Id", 23, 23, None),
            row(Constant, "NAME", 24, 24, None),
            row(Function, "helper", 26, 28, None),
        ]
    );
    assert_eq!(signatures(Language::Rust, source)[0], "pub struct Order {");
}

#[test]
fn javascript_and_typescript() {
    let js = "export function load(a) {}\nclass Cart {\n  count = 0;\n  add(item) { return 1; }\n}\nconst MAX = 3;\nconst handler = async () => {};\nlet mutable = 1;\nfunction outer() { const inner = 2; }\n";
    assert_eq!(
        symbols(Language::JavaScript, js),
        vec![
            row(Function, "load", 1, 1, None),
            row(Class, "Cart", 2, 5, None),
            row(Field, "count", 3, 3, Some("Cart")),
            row(Method, "add", 4, 4, Some("Cart")),
            row(Constant, "MAX", 6, 6, None),
            row(Function, "handler", 7, 7, None),
            row(Function, "outer", 9, 9, None),
        ]
    );
    let ts = "interface Shape {\n  area(): number;\n  name: string;\n}\ntype Id = string;\nenum Color { Red }\nnamespace Geo {\n  export abstract class Circle implements Shape {\n    radius: number = 1;\n    area(): number { return 1; }\n  }\n}\nfunction f<T>(x: T): T { return x; }\n";
    assert_eq!(
        symbols(Language::TypeScript, ts),
        vec![
            row(Interface, "Shape", 1, 4, None),
            row(Method, "area", 2, 2, Some("Shape")),
            row(Field, "name", 3, 3, Some("Shape")),
            row(Type, "Id", 5, 5, None),
            row(Enum, "Color", 6, 6, None),
            row(Module, "Geo", 7, 12, None),
            row(Class, "Circle", 8, 11, Some("Geo")),
            row(Field, "radius", 9, 9, Some("Circle")),
            row(Method, "area", 10, 10, Some("Circle")),
            row(Function, "f", 13, 13, None),
        ]
    );
    let tsx = "export const App = () => <div>hi</div>;\nfunction Button(props: Props) { return <button/>; }\n";
    assert_eq!(
        symbols(Language::Tsx, tsx),
        vec![
            row(Function, "App", 1, 1, None),
            row(Function, "Button", 2, 2, None),
        ]
    );
}

#[test]
fn go_types_methods_and_constants() {
    let source = "package shop\n\nconst (\n\tMax = 3\n\tMin, Mid = 1, 2\n)\n\ntype Order struct {\n\tID, Name string\n}\n\ntype Pricer interface {\n\tPrice() int\n}\n\ntype Cents = int\n\nfunc (o *Order) Total() int {\n\treturn 0\n}\n\nfunc New() *Order { return nil }\n";
    assert_eq!(
        symbols(Language::Go, source),
        vec![
            row(Constant, "Max", 4, 4, None),
            row(Constant, "Min", 5, 5, None),
            row(Constant, "Mid", 5, 5, None),
            row(Struct, "Order", 8, 10, None),
            row(Field, "ID", 9, 9, Some("Order")),
            row(Field, "Name", 9, 9, Some("Order")),
            row(Interface, "Pricer", 12, 14, None),
            row(Method, "Price", 13, 13, Some("Pricer")),
            row(Type, "Cents", 16, 16, None),
            row(Method, "Total", 18, 20, Some("Order")),
            row(Function, "New", 22, 22, None),
        ]
    );
}

#[test]
fn java_classes_annotations_and_fields() {
    let source = "package shop;\n\npublic class Order {\n    private int count, limit;\n\n    @Override\n    public String toString() {\n        return \"\";\n    }\n\n    Order() {}\n\n    enum State { OPEN }\n}\n\ninterface Priced {\n    int price();\n}\n";
    assert_eq!(
        symbols(Language::Java, source),
        vec![
            row(Class, "Order", 3, 14, None),
            row(Field, "count", 4, 4, Some("Order")),
            row(Field, "limit", 4, 4, Some("Order")),
            row(Method, "toString", 7, 9, Some("Order")),
            row(Method, "Order", 11, 11, Some("Order")),
            row(Enum, "State", 13, 13, Some("Order")),
            row(Constant, "OPEN", 13, 13, Some("State")),
            row(Interface, "Priced", 16, 18, None),
            row(Method, "price", 17, 17, Some("Priced")),
        ]
    );
    assert_eq!(
        signatures(Language::Java, source)[3],
        "public String toString() {"
    );
}

#[test]
fn c_functions_structs_typedefs_and_macros() {
    let source = "#define LIMIT 3\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n\nstruct order {\n    int id;\n    int (*callback)(void);\n};\n\ntypedef struct order order_t;\nenum state { OPEN, CLOSED };\n\nstatic int *find(const char *name)\n{\n    return 0;\n}\n\nint prototype(void);\n";
    assert_eq!(
        symbols(Language::C, source),
        vec![
            row(Macro, "LIMIT", 1, 1, None),
            row(Macro, "MAX", 2, 2, None),
            row(Struct, "order", 4, 7, None),
            row(Field, "id", 5, 5, Some("order")),
            row(Field, "callback", 6, 6, Some("order")),
            row(Type, "order_t", 9, 9, None),
            row(Enum, "state", 10, 10, None),
            row(Constant, "OPEN", 10, 10, Some("state")),
            row(Constant, "CLOSED", 10, 10, Some("state")),
            row(Function, "find", 12, 15, None),
        ]
    );
}

#[test]
fn c_name_lines_and_misread_macros() {
    // GNU style puts the return type on a line of its own: the definition
    // starts there, its name is a line below. A macro loop with a block
    // (`list_for_each(pos, head) { … }`) and `} else if (…) {` after an
    // `#if` are read by the grammar's recovery as function definitions;
    // neither is one.
    let source = "static int
spd_check(int a)
{
	list_for_each(pos, head) {
		use(pos);
	}
	if (a) {
	}
#if CONFIG_X
	else if (a > 1) {
	}
#endif
	return 0;
}
";
    let found = definitions(Language::C, source.as_bytes(), &unbounded()).expect("parsed");
    let names: Vec<(&str, u64, u64)> = found
        .iter()
        .map(|s| (s.name.as_str(), s.line, s.name_line))
        .collect();
    assert_eq!(names, vec![("spd_check", 1, 2)]);
}

#[test]
fn reserved_words_are_never_definition_names() {
    assert!(Language::C.is_keyword(b"if"));
    assert!(Language::CSharp.is_keyword(b"while"));
    assert!(!Language::C.is_keyword(b"iffy"));
    // JavaScript allows `if() {}` as a method name.
    assert!(!Language::JavaScript.is_keyword(b"if"));
    let source = "class A {
    void Run(object value)
    {
#if NET
        if (value is int x)
        {
        }
#endif
    }
}
";
    let names: Vec<String> = symbols(Language::CSharp, source)
        .into_iter()
        .map(|(_, name, ..)| name)
        .collect();
    assert!(!names.iter().any(|name| name == "if"), "{names:?}");
    assert!(names.iter().any(|name| name == "Run"), "{names:?}");
}

#[test]
fn javascript_es5_methods_and_named_function_expressions() {
    let source = "var Cache = module.exports = function Cache() {};
Cache.prototype.put = function (key) {};
Cache.prototype.get = get;
app.disable = function (setting) {};
var f = function g() {};
function outer() {
  const local = () => 1;
  var other = function () {};
}
x.y = 3;
";
    assert_eq!(
        symbols(Language::JavaScript, source),
        vec![
            row(Function, "Cache", 1, 1, None),
            row(Method, "put", 2, 2, Some("Cache")),
            row(Method, "get", 3, 3, Some("Cache")),
            row(Method, "disable", 4, 4, Some("app")),
            row(Function, "f", 5, 5, None),
            row(Function, "outer", 6, 9, None),
        ]
    );
    // A namespace's `export const f = () => …` is at module level.
    let ts = "export namespace util {
  export const toText = (x: number): string => `${x}`;
}
";
    assert_eq!(
        symbols(Language::TypeScript, ts),
        vec![
            row(Module, "util", 1, 3, None),
            row(Function, "toText", 2, 2, Some("util")),
        ]
    );
}

#[test]
fn cpp_headers_take_the_cpp_grammar_and_macros_are_read_past() {
    assert_eq!(
        Language::C.for_source(b"namespace fmt {\nint f();\n}\n"),
        Language::Cpp
    );
    assert_eq!(
        Language::C.for_source(
            b"#ifdef __cplusplus\nextern \"C\" {\n#endif\nvoid list_add(struct list_head *new);\n"
        ),
        Language::C
    );
    assert_eq!(Language::Rust.for_source(b"class A {};\n"), Language::Rust);
    // `__maybe_unused` and a trailing lock annotation are macros the
    // grammar does not know; `formatter<T>` specialises `formatter`.
    let c = "static int __maybe_unused initr_binman(void)\n{\n\treturn 0;\n}\n";
    assert_eq!(
        symbols(Language::C, c),
        vec![row(Function, "initr_binman", 1, 4, None)]
    );
    let exported = "class GTEST_API_ Matrix {\n  int count() const { return 1; }\n};\nstruct FMT_API Range {\n  int size() { return 0; }\n};\n";
    assert_eq!(
        symbols(Language::Cpp, exported),
        vec![
            row(Class, "Matrix", 1, 3, None),
            row(Method, "count", 2, 2, Some("Matrix")),
            row(Struct, "Range", 4, 6, None),
            row(Method, "size", 5, 5, Some("Range")),
        ]
    );
    let cpp = "void Foo() LOCKS_EXCLUDED(mutex_) {\n  x();\n}\ntemplate <typename T> struct formatter<T, char> {\n  int parse() { return 0; }\n  ~formatter() override LOCKS_EXCLUDED(mu) {\n  }\n  void Run() LOCKS_EXCLUDED(mu) {\n  }\n};\nFMT_BEGIN_NAMESPACE\nnamespace detail {\n}\n";
    let names: Vec<(SymbolKind, String)> = symbols(Language::Cpp, cpp)
        .into_iter()
        .map(|(kind, name, ..)| (kind, name))
        .collect();
    assert_eq!(
        names,
        vec![
            (Function, "Foo".to_string()),
            (Struct, "formatter".to_string()),
            (Method, "parse".to_string()),
            (Method, "~formatter".to_string()),
            (Method, "Run".to_string()),
        ]
    );
}

#[test]
fn cpp_classes_namespaces_and_qualified_methods() {
    let source = "namespace shop {\nclass Order {\n public:\n  int total() const { return 0; }\n  void clear();\n  int count;\n};\n}\n\nvoid shop::Order::clear() {}\n\ntemplate <typename T>\nT twice(T x) { return x; }\n\nusing Id = int;\n";
    assert_eq!(
        symbols(Language::Cpp, source),
        vec![
            row(Module, "shop", 1, 8, None),
            row(Class, "Order", 2, 7, Some("shop")),
            row(Method, "total", 4, 4, Some("Order")),
            row(Method, "clear", 5, 5, Some("Order")),
            row(Field, "count", 6, 6, Some("Order")),
            row(Method, "clear", 10, 10, Some("Order")),
            row(Function, "twice", 13, 13, None),
            row(Type, "Id", 15, 15, None),
        ]
    );
}

#[test]
fn csharp_namespaces_types_and_members() {
    let source = "namespace Shop\n{\n    public class Order\n    {\n        private int count, limit;\n        public int Total { get; set; }\n        [Obsolete]\n        public int Sum() { return 0; }\n        public Order() {}\n    }\n    public interface IPriced { int Price(); }\n    public struct Point { }\n    public enum State { Open }\n}\n";
    assert_eq!(
        symbols(Language::CSharp, source),
        vec![
            row(Module, "Shop", 1, 14, None),
            row(Class, "Order", 3, 10, Some("Shop")),
            row(Field, "count", 5, 5, Some("Order")),
            row(Field, "limit", 5, 5, Some("Order")),
            row(Field, "Total", 6, 6, Some("Order")),
            row(Method, "Sum", 8, 8, Some("Order")),
            row(Method, "Order", 9, 9, Some("Order")),
            row(Interface, "IPriced", 11, 11, Some("Shop")),
            row(Method, "Price", 11, 11, Some("IPriced")),
            row(Struct, "Point", 12, 12, Some("Shop")),
            row(Enum, "State", 13, 13, Some("Shop")),
            row(Constant, "Open", 13, 13, Some("State")),
        ]
    );
    assert_eq!(
        signatures(Language::CSharp, source)[5],
        "public int Sum() { return 0; }"
    );
}

#[test]
fn nesting_levels_and_parent_indexes() {
    let source =
        "class A:\n    class B:\n        def f(self):\n            pass\n\ndef g():\n    pass\n";
    let found = definitions(Language::Python, source.as_bytes(), &unbounded()).unwrap();
    let shape: Vec<_> = found
        .iter()
        .map(|s| (s.name.as_str(), s.level, s.parent_index))
        .collect();
    assert_eq!(
        shape,
        [
            ("A", 0, None),
            ("B", 1, Some(0)),
            ("f", 2, Some(1)),
            ("g", 0, None)
        ]
    );
}

#[test]
fn hostile_sources_parse_within_bounds() {
    // Deep nesting: tens of thousands of levels, no stack overflow.
    let deep = format!("x = {}1{}\n", "[".repeat(50_000), "]".repeat(50_000));
    assert!(definitions(Language::Python, deep.as_bytes(), &unbounded()).is_ok());
    let deep_c = format!(
        "int f() {{ {}{} }}\n",
        "{".repeat(50_000),
        "}".repeat(50_000)
    );
    let found = definitions(Language::C, deep_c.as_bytes(), &unbounded()).unwrap();
    assert_eq!(found[0].name, "f");
    // (Python's grammar follows indentation up to about 500 levels.)
    let nested_classes: String = (0..400)
        .map(|level| format!("{}class C{level}:\n", " ".repeat(level)))
        .collect::<String>()
        + &" ".repeat(400)
        + "pass\n";
    let found = definitions(Language::Python, nested_classes.as_bytes(), &unbounded()).unwrap();
    assert_eq!(found.len(), 400);
    assert_eq!(found[399].level, 399);
    assert_eq!(found[399].parent.as_deref(), Some("C398"));
    // A huge line: names and signatures are cut.
    let long_name = "a".repeat(100_000);
    let huge = format!("fn {long_name}() {{}} {}\n", "fn b() {} ".repeat(10_000));
    let found = definitions(Language::Rust, huge.as_bytes(), &unbounded()).unwrap();
    assert_eq!(found.len(), 10_001);
    assert_eq!(found[0].name.chars().count(), MAX_NAME_CHARS);
    assert!(
        found
            .iter()
            .all(|s| s.signature.chars().count() <= MAX_SIGNATURE_CHARS)
    );
    // Invalid UTF-8 and NUL bytes are read lossily.
    let mut invalid = b"def caf\xe9():\n    pass\nclass \xff\xfe\x00:\n    pass\n".to_vec();
    invalid.extend_from_slice(b"def ok():\n    pass\n");
    let found = definitions(Language::Python, &invalid, &unbounded()).unwrap();
    assert!(found.iter().any(|s| s.name == "ok"), "{found:?}");
}

#[test]
fn a_cancelled_parse_stops() {
    let cancel = Cancel::never();
    cancel.cancel();
    let source = "fn f() {}\n".repeat(50_000);
    assert_eq!(
        definitions(
            Language::Rust,
            source.as_bytes(),
            &ParseBudget::for_call(&cancel)
        ),
        Err(ParseError::Cancelled)
    );
}

/// C++ whose `<` may open a template or compare, on every token: the
/// parser keeps several readings alive at once, and its state grows to
/// over 3 KB per byte of the file.
pub(crate) fn ambiguous_cpp(bytes: usize) -> String {
    let mut source = String::from("int x = ");
    while source.len() < bytes {
        source.push_str("a<b<c<d<");
    }
    source.push_str(";\n");
    source
}

#[test]
fn a_parse_over_its_memory_share_is_stopped() {
    let source = ambiguous_cpp(20_000);
    let limit = heap::parse_limit(source.len());
    assert_eq!(limit, source.len() * MAX_BYTES_PER_SOURCE_BYTE + (4 << 20));
    assert_eq!(
        definitions(Language::Cpp, source.as_bytes(), &unbounded()),
        Err(ParseError::TooLarge { limit })
    );
    let message = ParseError::TooLarge { limit }.to_string();
    assert!(
        message.contains("needs more than 24 MiB")
            && message.contains("1 KiB per byte of its file, at most 256 MiB"),
        "{message}"
    );
    // Normal code of the same size holds a small part of its share.
    let normal = "int f(int a) { return a < 2 ? a : f(a - 1); }\n".repeat(450);
    assert!(definitions(Language::Cpp, normal.as_bytes(), &unbounded()).is_ok());
    assert_eq!(heap::parse_limit(2 << 20), MAX_PARSE_BYTES);
}

#[test]
fn one_budget_is_shared_by_every_parse_of_a_call() {
    let source = "fn f() {}\n";
    let spent = ParseBudget::lasting(Duration::ZERO, &Cancel::never());
    assert_eq!(
        definitions(Language::Rust, source.as_bytes(), &spent).map(|found| found.len()),
        Err(ParseError::OutOfTime)
    );
    let budget = ParseBudget::lasting(Duration::from_millis(200), &Cancel::never());
    assert_eq!(
        definitions(Language::Rust, source.as_bytes(), &budget).map(|found| found.len()),
        Ok(1)
    );
    // Time between parses (reading files, a stalled machine) is not spent.
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(
        definitions(Language::Rust, source.as_bytes(), &budget).map(|found| found.len()),
        Ok(1)
    );
    // Time a parse or walk of the call runs is, for the next file too.
    let running = budget.running();
    std::thread::sleep(Duration::from_millis(250));
    drop(running);
    assert_eq!(
        definitions(Language::Rust, source.as_bytes(), &budget).map(|found| found.len()),
        Err(ParseError::OutOfTime)
    );
}

#[test]
fn parses_running_together_count_their_time_once() {
    let budget = ParseBudget::lasting(Duration::from_secs(10), &Cancel::never());
    let started = Instant::now();
    std::thread::scope(|threads| {
        for _ in 0..4 {
            threads.spawn(|| {
                let _running = budget.running();
                std::thread::sleep(Duration::from_millis(300));
            });
        }
    });
    let took = started.elapsed();
    let spent = Duration::from_secs(10) - budget.remaining();
    assert!(
        spent >= Duration::from_millis(300) && spent <= took,
        "four parses of 300 ms at once in {took:?} spent {spent:?}"
    );
}

/// Tests that take the whole pool, one at a time: two of them each holding
/// half of it would wait for each other.
static WHOLE_POOL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn parses_that_would_not_fit_together_wait_for_the_pool() {
    let _alone = WHOLE_POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let deadline = || Instant::now() + Duration::from_secs(30);
    let first = heap::Reservation::take(MAX_PARSE_BYTES, deadline(), || false).unwrap();
    let second = heap::Reservation::take(MAX_PARSE_BYTES, deadline(), || false).unwrap();
    // The pool is full: a third waits until its deadline or its cancel.
    let soon = Instant::now() + Duration::from_millis(50);
    assert_eq!(
        heap::Reservation::take(1, soon, || false).map(|r| r.bytes()),
        Err(heap::WaitEnded::OutOfTime)
    );
    assert_eq!(
        heap::Reservation::take(1, deadline(), || true).map(|r| r.bytes()),
        Err(heap::WaitEnded::Cancelled)
    );
    let waiting = std::thread::spawn(move || {
        heap::Reservation::take(MAX_PARSE_BYTES, deadline(), || false).map(|r| r.bytes())
    });
    drop(first);
    assert_eq!(waiting.join().unwrap(), Ok(MAX_PARSE_BYTES));
    drop(second);
}

#[test]
fn a_stopped_parse_leaves_its_state_to_the_reaper() {
    // The parser a stopped parse leaves is not freed on the caller's
    // thread (its count stays grown) but by the reaper.
    let source = ambiguous_cpp(20_000);
    let held_before = heap::thread_held();
    let outcome = parse(Language::Cpp, source.as_bytes(), &unbounded());
    assert!(matches!(outcome, Err(ParseError::TooLarge { .. })));
    let grown = heap::thread_held() - held_before;
    assert!(
        grown > (20 << 20),
        "the parse held {grown} bytes when it was stopped"
    );
    // Its share of the pool comes back once the reaper has freed it: the
    // whole pool can be taken again.
    let _alone = WHOLE_POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let deadline = Instant::now() + Duration::from_secs(30);
    let whole: Vec<_> = (0..MAX_TOTAL_PARSE_BYTES / MAX_PARSE_BYTES)
        .map(|_| heap::Reservation::take(MAX_PARSE_BYTES, deadline, || false))
        .collect();
    assert!(whole.iter().all(Result::is_ok), "{whole:?}");
}
