use super::*;

/// (line, in) of each use of `name` in `source`.
fn found(language: Language, source: &str, name: &str) -> Vec<(u64, Option<String>)> {
    uses(language, source.as_bytes(), name, &Cancel::never())
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
import apply_discount as other

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
            at(1, None),
            at(2, None),
            at(11, Some("Order.total")),
            at(15, Some("main")),
            at(16, Some("main")),
        ]
    );
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
    let all = uses(Language::Rust, source.as_bytes(), "g", &Cancel::never()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].text, "fn f() { g(); g(); }");
    // Tabs and other control characters read as spaces.
    assert_eq!(all[1].text, " fn h() { g() }");
}

#[test]
fn a_long_line_shows_the_use() {
    let source = format!("const X = [{}target];\n", "1, ".repeat(5_000));
    let all = uses(
        Language::JavaScript,
        source.as_bytes(),
        "target",
        &Cancel::never(),
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
    let all = uses(
        Language::JavaScript,
        deep.as_bytes(),
        "target",
        &Cancel::never(),
    )
    .unwrap();
    assert_eq!(all.len(), 1);
    let cancel = Cancel::never();
    cancel.cancel();
    let source = "fn f() { g() }\n".repeat(50_000);
    assert_eq!(
        uses(Language::Rust, source.as_bytes(), "g", &cancel),
        Err(ParseError::Cancelled)
    );
}
