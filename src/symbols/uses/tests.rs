use super::*;
use crate::cancel::Cancel;
use python::Defined;

/// A name the project defines, as a method too.
const DEFINED: Defined = Defined {
    anywhere: true,
    as_method: true,
};

/// The uses of `name`, a name the project defines, as a method too.
fn uses_of(
    language: Language,
    source: &[u8],
    name: &str,
    budget: &ParseBudget,
) -> Result<Vec<Use>, ParseError> {
    let lookup = Lookup {
        name,
        class: None,
        python: DEFINED,
    };
    uses(language, source, &lookup, budget)
}

/// A call's budget that nobody cancels.
fn unbounded() -> ParseBudget {
    ParseBudget::for_call(&Cancel::never())
}

/// (line, in) of each use of `name` in `source`.
fn found(language: Language, source: &str, name: &str) -> Vec<(u64, Option<String>)> {
    uses_of(language, source.as_bytes(), name, &unbounded())
        .expect("parsed")
        .into_iter()
        .map(|found| (found.line, found.within))
        .collect()
}

fn at(line: u64, within: Option<&str>) -> (u64, Option<String>) {
    (line, within.map(str::to_string))
}

#[test]
fn rust_uses_in_impl_methods_macros_and_imports() {
    let source = r#"use crate::shop::total;
// total in a comment
/// total in a doc comment
struct Point { total: u32 }
impl Point {
    fn total(&self) -> u32 { self.total }
}
impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(f, "total {}", total(self))
    }
}
fn main() {
    let s = "total";
    println!("{}", total(&p)); let again = total;
}
"#;
    assert_eq!(
        found(Language::Rust, source, "total"),
        vec![
            at(1, None),
            at(6, Some("Point.total")),
            at(10, Some("Point.fmt")),
            at(15, Some("main")),
        ]
    );
    // The struct's name is its definition; `Point` after `impl` is a use.
    assert_eq!(
        found(Language::Rust, source, "Point"),
        vec![at(5, None), at(8, None)]
    );
}

#[test]
fn python_uses_fstrings_imports_and_methods() {
    let source = r#"from shop import apply_discount
import apply_discount.rules as other

# apply_discount in a comment
def apply_discount(order, percent):
    """apply_discount in a docstring"""
    return order

class Order:
    def total(self):
        return apply_discount(self, 5)

def main():
    label = "apply_discount"
    print(f"{apply_discount(o, 1)} apply_discount")
    fn = apply_discount
"#;
    assert_eq!(
        found(Language::Python, source, "apply_discount"),
        vec![
            // A module path (`import apply_discount.rules`) is not a use.
            at(1, None),
            at(11, Some("Order.total")),
            at(15, Some("main")),
            at(16, Some("main")),
        ]
    );
}

/// Lines of the uses of `name` in a Python `source`, a name the project
/// defines, as a method or not.
fn python_lines(source: &str, name: &str, as_method: bool) -> Vec<u64> {
    let defined = Defined {
        anywhere: true,
        as_method,
    };
    python_lookup_lines(
        source,
        &Lookup {
            name,
            class: None,
            python: defined,
        },
    )
}

/// Lines of the uses `lookup` finds in a Python `source`.
fn python_lookup_lines(source: &str, lookup: &Lookup<'_>) -> Vec<u64> {
    uses(Language::Python, source.as_bytes(), lookup, &unbounded())
        .expect("parsed")
        .into_iter()
        .map(|found| found.line)
        .collect()
}

#[test]
fn python_parameters_keywords_and_targets_are_not_uses() {
    let source = r#"def total(items):
    return sum(items)

def report(total, *rest, scale: int = 1, **options):
    return total * scale

def shown(order, total=total):
    order.send(total=3)
    return total

def counted(rows):
    total = 0
    for row in rows:
        total += row
    return total

def mixed(rows):
    value = total(rows)
    [total for total in rows]
    with open(rows) as total:
        pass
    return value, (lambda total: total)(1)

def nested(rows):
    total = 1
    def inner():
        return total
    return inner

def declared(rows):
    global total
    total = rows
    return total(rows)

class Holder:
    total = 5
    def method(self):
        return total(self)

if (total := 3):
    (a, total), b = (1, 2), 3
print(total(1))
"#;
    assert_eq!(
        python_lines(source, "total", false),
        // 7: a default value is read where the function is defined; 18:
        // `with … as total` on line 20 makes `total` local to all of
        // `mixed`, as in Python, while the comprehension and the lambda bind
        // it only in themselves; 33: `global`; 38: a class body hides
        // nothing from its methods; 42: the module level rebinds the name,
        // and the module's uses still count.
        vec![7, 33, 38, 42]
    );
}

#[test]
fn python_imports_and_attributes() {
    let source = r#"import shop
import shop.total
from shop import total
from shop.total import thing
from . import total as cart
from .total import other
from shop import other as total
import shop as total

def use(order):
    order.total()
    shop.total(order)
    self.total = 3
    cart.items.total(order)
    return total
"#;
    // `from shop import total` is a use (`as cart` too); module paths and `as` names are
    // not, and `as total` at the top rebinds the name (the uses at the
    // module's level still count: which binding a call sees depends on
    // the order the code runs in).
    // `order.total` is another object's attribute unless `total` is a
    // method somewhere; `shop.total` reads it from an imported module;
    // `self.total = 3` binds an attribute.
    assert_eq!(python_lines(source, "total", false), vec![3, 5, 12, 14, 15]);
    assert_eq!(
        python_lines(source, "total", true),
        vec![3, 5, 11, 12, 14, 15]
    );
}

/// Lines of the uses of `Class.name` in a Python `source`.
fn member_lines(source: &str, class: &str, name: &str) -> Vec<u64> {
    python_lookup_lines(
        source,
        &Lookup {
            name,
            class: Some(class),
            python: DEFINED,
        },
    )
}

#[test]
fn python_members_of_one_class() {
    let source = r#"from .text import Text
from .segment import Segment

class Console:
    lines: Text

    def render(self, text: Text, other: "Segment", plain):
        self.render(text)
        text.render()
        other.render()
        plain.render()
        made = Text("x")
        made.render()
        Segment.render()
        Text.render(made)
        self.lines.render()
        self.cache.render()
        make().render()
        return render(text)

class Rich(Text):
    def show(self):
        return self.render() or super().render()

class Own(Text):
    def render(self):
        return self.render()

def outside(console: Console, text: Text):
    text.render()
    console.render()
"#;
    // `Text.render`: instances by annotation (9, 30), construction (13) or
    // class field (16), the class itself (15), a plain name of no known
    // class (11), and `self` in a subclass that does not override it (23,
    // both on one line); not `Console`'s own `self` (8), another class
    // (10, 14, 31), an unknown field or a call's result (17, 18), nor a
    // plain name (19: a function, not the method).
    assert_eq!(
        member_lines(source, "Text", "render"),
        vec![9, 11, 13, 15, 16, 23, 30]
    );
    // `Console.render`: its own `self` (8), an annotated parameter (31).
    assert_eq!(member_lines(source, "Console", "render"), vec![8, 11, 31]);
    // `Own.render` is reached through its own `self` (27).
    assert_eq!(member_lines(source, "Own", "render"), vec![11, 27]);
}

#[test]
fn python_members_through_setters_constructors_and_constants() {
    let source = r#"from .text import Text, DEFAULT_TEXT, Other

def build(text: Text, console=None):
    text.render = 3
    Text("x").render()
    Other("y").render()
    DEFAULT_TEXT.render()
    shown = console or Text()
    shown.render()
    LOCAL_TEXT.render()

LOCAL_TEXT = make()
"#;
    // A property's setter (4), a constructed instance (5), `a or Class()`
    // read by its first alternative: `console`, of no known class (9), and
    // a constant of no known class (10); an imported constant is not
    // followed into its module (7).
    assert_eq!(member_lines(source, "Text", "render"), vec![4, 5, 9, 10]);
    assert_eq!(member_lines(source, "Other", "render"), vec![6, 9, 10]);
}

#[test]
fn deeply_nested_python_scopes_cost_a_bounded_look_per_use() {
    // Every lambda holds a use whose receiver's class is looked for in
    // the scopes around it: 20,000 deep, that look stops early.
    let depth = 20_000;
    let source = "f = ".to_string()
        + &"lambda a: (a.render, ".repeat(depth)
        + "0"
        + &")".repeat(depth)
        + "\n";
    assert_eq!(member_lines(&source, "Text", "render"), vec![1]);
}

#[test]
fn python_definitions_are_read_from_the_text() {
    let defined = |source: &str| Defined::in_source(source.as_bytes(), "total");
    let method = Defined {
        anywhere: true,
        as_method: true,
    };
    let top = Defined {
        anywhere: true,
        as_method: false,
    };
    assert_eq!(defined("class A:\n    def total(self):\n"), method);
    assert_eq!(defined("class A:\n\tasync  def total(self):\n"), method);
    assert_eq!(defined("def total(x):\n"), top);
    assert_eq!(defined("x = 1\nclass total:\n    pass\n"), top);
    // An indented class is not a method: `x.total` is not its use.
    assert_eq!(defined("if x:\n    class total: pass\n"), top);
    assert_eq!(
        defined("class A:\n    def totals(self):\n"),
        Defined::default()
    );
    assert_eq!(defined("    x = total\nundef total\n"), Defined::default());
    // A name defined nowhere: every occurrence counts, parameters too.
    let source = "def f(total):\n    return total\n";
    let lookup = Lookup {
        name: "total",
        class: None,
        python: Defined::default(),
    };
    let all = uses(Language::Python, source.as_bytes(), &lookup, &unbounded());
    assert_eq!(all.expect("parsed").len(), 2);
}

#[test]
fn javascript_and_typescript_uses() {
    let source = r#"import { render } from './view';
// render in a comment
function render(x) { return `render ${render(x - 1)}`; }
class View {
  render() { return this.render() + "render"; }
  show() { return { render }; }
}
"#;
    assert_eq!(
        found(Language::JavaScript, source, "render"),
        vec![
            at(1, None),
            at(3, Some("render")),
            at(5, Some("View.render")),
            at(6, Some("View.show")),
        ]
    );
    let typescript = r#"interface Shape { area(): number }
/* Shape */
class Square implements Shape {
  area(): number { return 1; }
}
function total(shapes: Shape[]): number { return shapes.length; }
const label: string = "Shape";
"#;
    assert_eq!(
        found(Language::TypeScript, typescript, "Shape"),
        vec![at(3, Some("Square")), at(6, Some("total"))]
    );
}

#[test]
fn go_uses_in_methods_with_receivers() {
    let source = r#"package shop

import "fmt"

// Norm in a comment
func (p Point) Norm() float64 { return 0 }

func (p *Point) Scaled() float64 {
	return p.Norm() * 2
}

func main() {
	fmt.Println("Norm", Point{}.Norm())
}
"#;
    assert_eq!(
        found(Language::Go, source, "Norm"),
        vec![at(9, Some("Point.Scaled")), at(13, Some("main"))]
    );
    assert_eq!(
        found(Language::Go, source, "fmt"),
        vec![at(13, Some("main"))]
    );
}

#[test]
fn java_uses_in_methods() {
    let source = r#"import shop.Order;
class Cart {
    // Order in a comment
    private Order order = new Order();
    Order first() { return order; }
    String label() { return "Order"; }
}
"#;
    assert_eq!(
        found(Language::Java, source, "Order"),
        vec![
            at(1, None),
            at(4, Some("Cart.order")),
            at(5, Some("Cart.first"))
        ]
    );
}

#[test]
fn c_uses_in_functions_and_macro_bodies() {
    let source = r#"#include "probe.h"
/* probe in a comment */
static int probe(struct device *dev)
{
	return 0;
}
#define PROBE_ALL(d) probe(d) /* probe */
#define NAME "probe"
#ifdef probe
#endif
static int bind(struct device *dev)
{
	const char *s = "probe";
	return probe(dev) + PROBE_ALL(dev);
}
static const struct driver_ops ops = { .probe = probe };
"#;
    assert_eq!(
        found(Language::C, source, "probe"),
        // A use in a macro body is in the macro; a declaration such as
        // `ops` is not a definition the symbol tools report.
        vec![
            at(7, Some("PROBE_ALL")),
            at(9, None),
            at(14, Some("bind")),
            at(16, None),
        ]
    );
}

#[test]
fn cpp_uses_in_qualified_methods() {
    let source = r#"namespace shop {
class Cart {
  public:
    int size() const;
};
// size in a comment
int Cart::size() const { return 0; }
int count(const Cart &cart) { return cart.size() + sizeof("size"); }
}
"#;
    assert_eq!(
        found(Language::Cpp, source, "size"),
        vec![at(8, Some("shop.count"))]
    );
    assert_eq!(
        found(Language::Cpp, source, "Cart"),
        vec![at(7, Some("Cart.size")), at(8, Some("shop.count"))]
    );
}

#[test]
fn csharp_uses_in_methods() {
    let source = r#"using Shop.Orders;
namespace Shop {
    class Cart {
        // Total in a comment
        public int Total() { return 0; }
        public int Twice() { return Total() * 2; }
        public string Label => "Total";
    }
}
"#;
    assert_eq!(
        found(Language::CSharp, source, "Total"),
        vec![at(6, Some("Cart.Twice"))]
    );
}

#[test]
fn one_entry_per_line_with_the_line_shown() {
    let source = "fn f() { g(); g(); }\n\tfn h() { g() }\n";
    let all = uses_of(Language::Rust, source.as_bytes(), "g", &unbounded()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].text, "fn f() { g(); g(); }");
    // Tabs and other control characters read as spaces.
    assert_eq!(all[1].text, " fn h() { g() }");
}

#[test]
fn a_long_line_shows_the_use() {
    let source = format!("const X = [{}target];\n", "1, ".repeat(5_000));
    let all = uses_of(
        Language::JavaScript,
        source.as_bytes(),
        "target",
        &unbounded(),
    )
    .unwrap();
    assert_eq!(all.len(), 1);
    assert!(all[0].text.contains("target"), "{}", all[0].text);
    assert!(all[0].text.chars().count() <= MAX_LINE_CHARS);
}

#[test]
fn whole_words_only() {
    let finder = memchr::memmem::Finder::new("total");
    assert!(holds_word(b"x = total + 1", &finder));
    assert!(holds_word(b"total", &finder));
    assert!(!holds_word(b"subtotal totals total_sum $total", &finder));
    assert!(!holds_word("totalé".as_bytes(), &finder));
    assert!(is_identifier("apply_discount"));
    assert!(is_identifier("$scope"));
    assert!(!is_identifier("Order.total"));
    assert!(!is_identifier("a b"));
    assert!(!is_identifier(""));
}

#[test]
fn deep_nesting_and_a_cancelled_parse_are_bounded() {
    let deep = "(".repeat(100_000) + "target" + &")".repeat(100_000);
    // The tree is walked without recursion.
    let all = uses_of(
        Language::JavaScript,
        deep.as_bytes(),
        "target",
        &unbounded(),
    )
    .unwrap();
    assert_eq!(all.len(), 1);
    let cancel = Cancel::never();
    cancel.cancel();
    let source = "fn f() { g() }\n".repeat(50_000);
    assert_eq!(
        uses_of(
            Language::Rust,
            source.as_bytes(),
            "g",
            &ParseBudget::for_call(&cancel)
        ),
        Err(ParseError::Cancelled)
    );
}
