//! The languages with a grammar: which files they take, and which syntax
//! nodes are definitions. Each grammar's node names are its own, so each
//! language has a small classifier; the walk in the parent module does the
//! rest (nesting, parents, methods, lines, signatures) the same for all.
//!
//! The grammars' own `tags.scm` queries name functions, classes and methods
//! only; these classifiers also give structs, enums, traits, interfaces,
//! modules, constants, types, fields and macros, and walk the tree once
//! without compiling a query.

use tree_sitter::Node;

use super::SymbolKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
    Java,
    C,
    Cpp,
    CSharp,
}

/// Every language, with its file name endings, in the order the offer is
/// written out.
const ENDINGS: &[(Language, &[&str])] = &[
    (Language::Rust, &["rs"]),
    (Language::Python, &["py", "pyi"]),
    (Language::TypeScript, &["ts", "mts", "cts"]),
    (Language::Tsx, &["tsx"]),
    (Language::JavaScript, &["js", "jsx", "mjs", "cjs"]),
    (Language::Go, &["go"]),
    (Language::Java, &["java"]),
    (Language::C, &["c", "h"]),
    (
        Language::Cpp,
        &["cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp"],
    ),
    (Language::CSharp, &["cs"]),
];

impl Language {
    /// The language of a file, by the ending of its name (case-insensitive).
    pub fn of_path(path: &str) -> Option<Self> {
        let ending = file_ending(path)?.to_ascii_lowercase();
        ENDINGS
            .iter()
            .find(|(_, endings)| endings.contains(&ending.as_str()))
            .map(|(language, _)| *language)
    }

    /// The language a file's text is written in, where its ending is
    /// ambiguous: a `.h` header (rarely a `.c` file) is C or C++, and one
    /// that declares a namespace, a template, a class or access labels is
    /// read with the C++ grammar (as universal-ctags reads every `.h`); the
    /// C grammar recovers badly from those. C's own files keep the C
    /// grammar, which reads `new` or `class` as the names they are there.
    pub fn for_source(self, source: &[u8]) -> Self {
        const CPP_LINE_STARTS: &[&[u8]] = &[
            b"namespace ",
            b"template <",
            b"template<",
            b"class ",
            b"public:",
            b"private:",
            b"protected:",
            b"using namespace ",
        ];
        let is_cpp = || {
            source.split(|&byte| byte == b'\n').any(|line| {
                let start = line
                    .iter()
                    .position(|byte| !byte.is_ascii_whitespace())
                    .unwrap_or(line.len());
                let line = &line[start..];
                CPP_LINE_STARTS
                    .iter()
                    .any(|marker| line.starts_with(marker))
            })
        };
        if self == Self::C && is_cpp() {
            Self::Cpp
        } else {
            self
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
            Self::JavaScript => "javascript",
            Self::Go => "go",
            Self::Java => "java",
            Self::C => "c",
            Self::Cpp => "cpp",
            Self::CSharp => "csharp",
        }
    }

    /// The languages offered, as a model reads them:
    /// `rust (.rs), python (.py, .pyi), …`.
    pub fn offered() -> String {
        ENDINGS
            .iter()
            .map(|(language, endings)| {
                let endings = endings
                    .iter()
                    .map(|ending| format!(".{ending}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("{} ({endings})", language.name())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The grammar; a static table in the binary, nothing is loaded or
    /// built until a file of this language is parsed.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Self::Rust => tree_sitter_rust::LANGUAGE.into(),
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::Go => tree_sitter_go::LANGUAGE.into(),
            Self::Java => tree_sitter_java::LANGUAGE.into(),
            Self::C => tree_sitter_c::LANGUAGE.into(),
            Self::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Self::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
        }
    }

    /// Whether a function may be defined inside another's body. C and C++
    /// have no such thing (lambdas and local classes aside, which are not
    /// function definitions), so one there is a misread macro.
    pub fn nests_functions(self) -> bool {
        !matches!(self, Self::C | Self::Cpp)
    }

    /// Whether `name` is a reserved word, which no definition can be named:
    /// the grammar's error recovery reads `} else if (x) {` after an
    /// `#if` block, or `while (x) {`, as a function definition. Only for
    /// languages where members cannot take these names either (JavaScript
    /// allows `if() {}` as a method).
    pub fn is_keyword(self, name: &[u8]) -> bool {
        const C_FAMILY: &[&[u8]] = &[
            b"if",
            b"else",
            b"for",
            b"while",
            b"do",
            b"switch",
            b"case",
            b"default",
            b"return",
            b"goto",
            b"break",
            b"continue",
            b"sizeof",
            b"void",
        ];
        // Identifiers in C, reserved in the others (`FMT_BEGIN_NAMESPACE`
        // before `namespace detail {` reads as a function `namespace`).
        const OBJECT_ORIENTED: &[&[u8]] = &[
            b"namespace",
            b"template",
            b"typename",
            b"class",
            b"struct",
            b"new",
            b"delete",
            b"throw",
            b"try",
            b"catch",
            b"operator",
        ];
        match self {
            Self::C | Self::Go => C_FAMILY.contains(&name),
            Self::Cpp | Self::CSharp | Self::Java => {
                C_FAMILY.contains(&name) || OBJECT_ORIENTED.contains(&name)
            }
            _ => false,
        }
    }

    /// What `node` defines, if anything.
    pub fn classify<'tree>(self, node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
        match self {
            Self::Rust => rust(node, source),
            Self::Python => python(node),
            Self::TypeScript | Self::Tsx | Self::JavaScript => script(node, source),
            Self::Go => go(node, source),
            Self::Java => java(node),
            Self::C | Self::Cpp => c_family(node, source),
            Self::CSharp => csharp(node),
        }
    }
}

/// The text after the last `.` of the file name, if any.
pub fn file_ending(path: &str) -> Option<&str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let (stem, ending) = name.rsplit_once('.')?;
    (!stem.is_empty() && !ending.is_empty()).then_some(ending)
}

/// What one syntax node defines.
#[derive(Debug)]
pub enum Definition<'tree> {
    /// Symbols of `kind` named by these nodes (usually one; `const a, b`
    /// gives two). A `Function` inside a class-like scope becomes a method.
    Symbols {
        kind: SymbolKind,
        names: Vec<Node<'tree>>,
        /// The owner named in the definition itself (`impl` blocks aside):
        /// a Go method's receiver type, C++'s `Type::method`.
        owner: Option<String>,
    },
    /// A block whose members belong to the named type without being a
    /// symbol itself: Rust's `impl Type`.
    Scope { owner: String },
}

fn named<'tree>(kind: SymbolKind, name: Option<Node<'tree>>) -> Option<Definition<'tree>> {
    name.map(|name| Definition::Symbols {
        kind,
        names: vec![name],
        owner: None,
    })
}

fn by_name<'tree>(kind: SymbolKind, node: Node<'tree>) -> Option<Definition<'tree>> {
    named(kind, node.child_by_field_name("name"))
}

fn many<'tree>(kind: SymbolKind, names: Vec<Node<'tree>>) -> Option<Definition<'tree>> {
    (!names.is_empty()).then_some(Definition::Symbols {
        kind,
        names,
        owner: None,
    })
}

fn text(node: Node<'_>, source: &[u8]) -> String {
    String::from_utf8_lossy(&source[node.byte_range()]).into_owned()
}

fn rust<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    let kind = match node.kind() {
        "function_item" | "function_signature_item" => SymbolKind::Function,
        "struct_item" | "union_item" => SymbolKind::Struct,
        "enum_item" => SymbolKind::Enum,
        "trait_item" => SymbolKind::Trait,
        "mod_item" => SymbolKind::Module,
        "const_item" | "static_item" => SymbolKind::Constant,
        "type_item" | "associated_type" => SymbolKind::Type,
        "macro_definition" => SymbolKind::Macro,
        "field_declaration" => SymbolKind::Field,
        "enum_variant" => SymbolKind::Constant,
        "impl_item" => {
            let owner = node.child_by_field_name("type")?;
            return Some(Definition::Scope {
                owner: text(rust_type_name(owner), source),
            });
        }
        _ => return None,
    };
    by_name(kind, node)
}

/// `Order` of `Order`, `Order<T>`, `crate::Order`, `&Order`.
fn rust_type_name(mut node: Node<'_>) -> Node<'_> {
    loop {
        let inner = match node.kind() {
            "generic_type" => node.child_by_field_name("type"),
            "scoped_type_identifier" => node.child_by_field_name("name"),
            "reference_type" | "pointer_type" => node.child_by_field_name("type"),
            _ => None,
        };
        match inner {
            Some(inner) => node = inner,
            None => return node,
        }
    }
}

fn python(node: Node<'_>) -> Option<Definition<'_>> {
    match node.kind() {
        "class_definition" => by_name(SymbolKind::Class, node),
        "function_definition" => by_name(SymbolKind::Function, node),
        _ => None,
    }
}

/// JavaScript, TypeScript and TSX share their node names.
fn script<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    let kind = match node.kind() {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            SymbolKind::Function
        }
        "class_declaration" | "abstract_class_declaration" => SymbolKind::Class,
        "method_definition" | "method_signature" | "abstract_method_signature" => {
            SymbolKind::Method
        }
        "interface_declaration" => SymbolKind::Interface,
        "type_alias_declaration" => SymbolKind::Type,
        "enum_declaration" => SymbolKind::Enum,
        "internal_module" | "module" => SymbolKind::Module,
        "public_field_definition" | "property_signature" => SymbolKind::Field,
        "field_definition" => {
            return named(SymbolKind::Field, node.child_by_field_name("property"));
        }
        "variable_declarator" => return script_variable(node, source),
        // `module.exports = function generate(it) {…}`: the name a
        // function expression gives itself.
        // (`const f = function g() {}` is named by its declarator.)
        "function_expression" | "generator_function"
            if node
                .parent()
                .is_none_or(|parent| parent.kind() != "variable_declarator") =>
        {
            SymbolKind::Function
        }
        "assignment_expression" => return assigned_method(node, source),
        _ => return None,
    };
    by_name(kind, node)
}

/// `const f = () => …` is a function; another top-level `const` a constant.
fn script_variable<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    let name = node.child_by_field_name("name")?;
    if name.kind() != "identifier" {
        return None;
    }
    let value = node.child_by_field_name("value");
    let is_function = value.is_some_and(|value| {
        matches!(
            value.kind(),
            "arrow_function" | "function_expression" | "function" | "generator_function"
        )
    });
    let declaration = node.parent()?;
    // Inside a function body both are locals (`const f = () => …` in a
    // test's callback), not definitions.
    if !at_module_level(declaration) {
        return None;
    }
    if is_function {
        return named(SymbolKind::Function, Some(name));
    }
    let is_const = declaration.kind() == "lexical_declaration"
        && declaration
            .child_by_field_name("kind")
            .is_some_and(|kind| &source[kind.byte_range()] == b"const");
    is_const.then_some(Definition::Symbols {
        kind: SymbolKind::Constant,
        names: vec![name],
        owner: None,
    })
}

/// Whether a declaration is at the top of a file or of a TypeScript
/// namespace (`export namespace util { export const f = … }`), through
/// `export`.
fn at_module_level(declaration: Node<'_>) -> bool {
    let Some(mut parent) = declaration.parent() else {
        return false;
    };
    if parent.kind() == "export_statement" {
        let Some(outer) = parent.parent() else {
            return false;
        };
        parent = outer;
    }
    match parent.kind() {
        "program" => true,
        "statement_block" => parent
            .parent()
            .is_some_and(|block| matches!(block.kind(), "internal_module" | "module")),
        _ => false,
    }
}

/// ES5 methods: `Ajv.prototype.compile = compile` (whatever the value)
/// defines `compile` on `Ajv`; `app.disable = function (…) {…}` defines
/// `disable` on `app` (a function expression with a name of its own is
/// listed by that name instead).
fn assigned_method<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    let left = node.child_by_field_name("left")?;
    if left.kind() != "member_expression" {
        return None;
    }
    let name = left.child_by_field_name("property")?;
    let object = left.child_by_field_name("object")?;
    let on_prototype = object.kind() == "member_expression"
        && object
            .child_by_field_name("property")
            .is_some_and(|property| &source[property.byte_range()] == b"prototype");
    let owner = if on_prototype {
        object.child_by_field_name("object")?
    } else {
        let value = node.child_by_field_name("right")?;
        let anonymous_function = matches!(
            value.kind(),
            "function_expression" | "arrow_function" | "generator_function"
        ) && value.child_by_field_name("name").is_none();
        if !anonymous_function {
            return None;
        }
        object
    };
    Some(Definition::Symbols {
        kind: SymbolKind::Method,
        names: vec![name],
        owner: Some(text(owner, source)),
    })
}

fn go<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    match node.kind() {
        "function_declaration" => by_name(SymbolKind::Function, node),
        "method_declaration" => {
            let name = node.child_by_field_name("name")?;
            let owner = node
                .child_by_field_name("receiver")
                .and_then(|receiver| first_of_kind(receiver, "type_identifier"))
                .map(|owner| text(owner, source));
            Some(Definition::Symbols {
                kind: SymbolKind::Method,
                names: vec![name],
                owner,
            })
        }
        "type_spec" => {
            let kind = match node.child_by_field_name("type").map(|t| t.kind()) {
                Some("struct_type") => SymbolKind::Struct,
                Some("interface_type") => SymbolKind::Interface,
                _ => SymbolKind::Type,
            };
            by_name(kind, node)
        }
        "type_alias" => by_name(SymbolKind::Type, node),
        "method_elem" => by_name(SymbolKind::Method, node),
        "field_declaration" => many(SymbolKind::Field, named_fields(node, "name")),
        "const_spec" => many(SymbolKind::Constant, named_fields(node, "name")),
        _ => None,
    }
}

/// The named nodes of field `field` (skipping `,` tokens).
fn named_fields<'tree>(node: Node<'tree>, field: &str) -> Vec<Node<'tree>> {
    let mut cursor = node.walk();
    node.children_by_field_name(field, &mut cursor)
        .filter(|child| child.is_named())
        .collect()
}

/// The first descendant of `kind`, breadth of a receiver or declarator
/// (a handful of nodes).
fn first_of_kind<'tree>(node: Node<'tree>, kind: &str) -> Option<Node<'tree>> {
    let mut cursor = node.walk();
    let mut visited = 0;
    loop {
        if cursor.node().kind() == kind {
            return Some(cursor.node());
        }
        visited += 1;
        if visited > 64 {
            return None;
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() || cursor.node() == node {
                return None;
            }
        }
    }
}

fn java(node: Node<'_>) -> Option<Definition<'_>> {
    let kind = match node.kind() {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration"
        | "constructor_declaration"
        | "compact_constructor_declaration"
        | "annotation_type_element_declaration" => SymbolKind::Method,
        "enum_constant" => SymbolKind::Constant,
        "field_declaration" => return many(SymbolKind::Field, declarator_names(node)),
        "constant_declaration" => return many(SymbolKind::Constant, declarator_names(node)),
        _ => return None,
    };
    by_name(kind, node)
}

/// The names of a Java field's `variable_declarator`s.
fn declarator_names(node: Node<'_>) -> Vec<Node<'_>> {
    named_fields(node, "declarator")
        .into_iter()
        .filter_map(|declarator| declarator.child_by_field_name("name"))
        .collect()
}

fn csharp(node: Node<'_>) -> Option<Definition<'_>> {
    let kind = match node.kind() {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "struct_declaration" | "record_struct_declaration" => SymbolKind::Struct,
        "interface_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "namespace_declaration" | "file_scoped_namespace_declaration" => SymbolKind::Module,
        "method_declaration" | "constructor_declaration" | "destructor_declaration" => {
            SymbolKind::Method
        }
        "local_function_statement" => SymbolKind::Function,
        "property_declaration" => SymbolKind::Field,
        "enum_member_declaration" => SymbolKind::Constant,
        "delegate_declaration" => SymbolKind::Type,
        "field_declaration" => {
            let mut cursor = node.walk();
            let names = node
                .named_children(&mut cursor)
                .filter(|child| child.kind() == "variable_declaration")
                .flat_map(|declaration| {
                    let mut cursor = declaration.walk();
                    declaration
                        .named_children(&mut cursor)
                        .filter(|child| child.kind() == "variable_declarator")
                        .filter_map(|declarator| declarator.child_by_field_name("name"))
                        .collect::<Vec<_>>()
                })
                .collect();
            return many(SymbolKind::Field, names);
        }
        _ => return None,
    };
    by_name(kind, node)
}

/// C and C++ (the C++ grammar extends C's node names).
fn c_family<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    match node.kind() {
        "function_definition" => c_function(node, source),
        "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => {
            // `struct s *p;` mentions a type; only a body defines one.
            node.child_by_field_name("body")?;
            let kind = match node.kind() {
                "class_specifier" => SymbolKind::Class,
                "enum_specifier" => SymbolKind::Enum,
                _ => SymbolKind::Struct,
            };
            // `struct formatter<T, char> {…}` specialises `formatter`.
            named(kind, node.child_by_field_name("name").and_then(c_name))
        }
        "namespace_definition" => by_name(SymbolKind::Module, node),
        "enumerator" => by_name(SymbolKind::Constant, node),
        "preproc_def" | "preproc_function_def" => by_name(SymbolKind::Macro, node),
        "alias_declaration" => by_name(SymbolKind::Type, node),
        "type_definition" => {
            let names = named_fields(node, "declarator")
                .into_iter()
                .filter_map(c_name)
                .collect();
            many(SymbolKind::Type, names)
        }
        "field_declaration" => {
            let declarators = named_fields(node, "declarator");
            // `void run();` in a class; `int (*callback)(void);` is a field.
            let is_method = declarators.iter().any(|declarator| {
                declarator.kind() == "function_declarator"
                    && declarator
                        .child_by_field_name("declarator")
                        .is_some_and(|inner| inner.kind() != "parenthesized_declarator")
            });
            let kind = if is_method {
                SymbolKind::Method
            } else {
                SymbolKind::Field
            };
            many(kind, declarators.into_iter().filter_map(c_name).collect())
        }
        _ => None,
    }
}

/// A function definition, read past the macros that the grammar does not
/// know (they expand to attributes):
/// - `static int __maybe_unused probe(void) {…}` parses as a declaration
///   ending at the macro, then a "definition" whose type is `probe` and
///   whose declarator is `(void)`: a definition needs a function
///   declarator, so the name is that type's.
/// - `void Run() LOCKS_EXCLUDED(mu) {…}` parses as a broken `Run()` (an
///   error node, or a declaration without its `;` on the same line) then a
///   definition of `LOCKS_EXCLUDED(mu)`: the name is the one before.
/// - `class GTEST_API_ Matrix {…}`: see below.
fn c_function<'tree>(node: Node<'tree>, source: &[u8]) -> Option<Definition<'tree>> {
    let declarator = node.child_by_field_name("declarator")?;
    // `class EXPORT_API Name {…}` parses as a "function" `Name` whose type
    // is `class EXPORT_API` and whose body is the class body.
    let export_macro_class = node.child_by_field_name("type").and_then(|kind| {
        let is_bodiless_type = matches!(
            kind.kind(),
            "class_specifier" | "struct_specifier" | "union_specifier"
        ) && kind.child_by_field_name("body").is_none();
        (is_bodiless_type && declarator.kind() == "identifier").then(|| match kind.kind() {
            "class_specifier" => SymbolKind::Class,
            _ => SymbolKind::Struct,
        })
    });
    if let Some(kind) = export_macro_class {
        return named(kind, Some(declarator));
    }
    if declarator.kind() == "parenthesized_declarator" {
        let name = node
            .child_by_field_name("type")
            .filter(|name| name.kind() == "type_identifier");
        return named(SymbolKind::Function, name);
    }
    let mut cursor = node.walk();
    let in_error = node
        .children(&mut cursor)
        .take_while(|child| child.id() != declarator.id())
        .filter(|child| child.kind() == "ERROR")
        .find_map(misread_declarator);
    let before = node
        .prev_named_sibling()
        .filter(|before| {
            node.child_by_field_name("type").is_none()
                && before.kind() == "declaration"
                && before.end_position().row == node.start_position().row
        })
        .and_then(|before| before.child_by_field_name("declarator"))
        .filter(|before| before.kind() == "function_declarator");
    let declarator = in_error.or(before).unwrap_or(declarator);
    c_declared(SymbolKind::Function, declarator, source)
}

/// The declarator a broken `name(…)` left in an error node: a function
/// declarator, or a variable initialised with an argument list.
fn misread_declarator(error: Node<'_>) -> Option<Node<'_>> {
    if let Some(function) = first_of_kind(error, "function_declarator") {
        return Some(function);
    }
    first_of_kind(error, "init_declarator")
        .filter(|call| {
            call.child_by_field_name("value")
                .is_some_and(|value| value.kind() == "argument_list")
        })
        .and_then(|call| call.child_by_field_name("declarator"))
}

/// A C/C++ declarator's symbol: `Type::name` gives the owner too.
fn c_declared<'tree>(
    kind: SymbolKind,
    declarator: Node<'tree>,
    source: &[u8],
) -> Option<Definition<'tree>> {
    let name = c_name(declarator)?;
    let owner = name
        .parent()
        .filter(|parent| parent.kind() == "qualified_identifier")
        .and_then(|qualified| qualified.child_by_field_name("scope"))
        .map(|scope| text(scope, source));
    let kind = if owner.is_some() {
        SymbolKind::Method
    } else {
        kind
    };
    Some(Definition::Symbols {
        kind,
        names: vec![name],
        owner,
    })
}

/// The identifier a declarator declares, through pointers, references,
/// arrays, parentheses, parameter lists and `A::B::` qualifiers.
fn c_name(mut node: Node<'_>) -> Option<Node<'_>> {
    // Declarators nest once per `*`, `[]` or `()`: bounded by the source,
    // and each step goes one node down.
    loop {
        match node.kind() {
            "identifier" | "field_identifier" | "type_identifier" | "destructor_name"
            | "operator_name" => return Some(node),
            "qualified_identifier" => node = node.child_by_field_name("name")?,
            "template_function" | "template_method" | "template_type" => {
                node = node.child_by_field_name("name")?;
            }
            "parenthesized_declarator" | "attributed_declarator" => node = node.named_child(0)?,
            _ => node = node.child_by_field_name("declarator")?,
        }
    }
}
