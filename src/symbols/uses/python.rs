//! Python's scope rules for [`super::uses`]: of the identifiers that spell
//! the name, the ones that refer to a definition of it, as a reader who
//! knows Python's scopes tells them apart.
//!
//! Not uses, because each names something else or binds the name anew:
//! a parameter, a keyword argument's name (`f(name=1)`), a module path in
//! an import (`import a.name`, `from name import x`), an import's `as`
//! name, a `global` or `nonlocal` list, and the target of an assignment,
//! `for`, `with … as`, `except … as` or `:=` (`self.name = …` included).
//! `from m import name` is a use.
//!
//! A plain use inside a function, lambda or comprehension that binds the
//! name itself (a parameter or one of those targets), or inside a scope
//! nested in one, is that local variable, unless the scope declares the
//! name `global` or `nonlocal`; class bodies do not hide names from the
//! methods in them, as in Python. A nested `def name` or an import of the
//! name inside a function is the definition itself, so it hides nothing.
//!
//! These rules apply to a name the project defines by a `def` or `class`
//! ([`Defined`], decided by the caller over all its Python files): a name
//! defined nowhere (a parameter's, a local's, an attribute's) has only
//! such occurrences, and each one counts, as in the other languages.
//!
//! `x.name` is a use when the name is defined as a method somewhere in the
//! project, or when `x` is a name an import binds (`module.name`);
//! otherwise it is another object's attribute.
//!
//! `Class.name` (a member lookup) keeps only the uses tied to that class:
//! plain uses in its body, and `x.name` where `x` is the class, `self` in
//! its methods or a subclass's that does not override it, `super()` in a
//! subclass, or a name whose class an annotation, an assigned constructor
//! call or `with Class(…) as x` gives (also `self.x`, from the class's own
//! assignments); a plain name of no known class counts, an attribute's
//! value or a call's result does not. No type is inferred past these.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use tree_sitter::Node;

use super::super::{NODES_PER_CHECK, ParseBudget, ParseError};

/// Enclosing nodes looked at to tell an identifier's role, and enclosing
/// scopes looked at to find a receiver's class: assignment patterns,
/// dotted names and scopes nest no deeper in real code, and a hostile
/// nesting costs this much per identifier, not its depth.
const MAX_CLIMB: usize = 64;

/// Bytes before a name looked at for an indented `def`.
const MAX_DEF_PREFIX: usize = 256;

/// Values that are never an instance of a class of the project.
const LITERALS: &[&str] = &[
    "string",
    "concatenated_string",
    "integer",
    "float",
    "true",
    "false",
    "none",
    "dictionary",
    "list",
    "set",
    "tuple",
    "list_comprehension",
    "dictionary_comprehension",
    "set_comprehension",
    "generator_expression",
];

/// Built-in functions whose result is never an instance of a class of
/// the project.
const BUILT_INS: &[&[u8]] = &[
    b"str",
    b"int",
    b"float",
    b"bool",
    b"bytes",
    b"bytearray",
    b"list",
    b"dict",
    b"set",
    b"frozenset",
    b"tuple",
    b"sorted",
    b"len",
    b"repr",
    b"format",
    b"open",
    b"range",
];

/// Nodes whose body is a scope of its own.
const COMPREHENSIONS: &[&str] = &[
    "list_comprehension",
    "set_comprehension",
    "dictionary_comprehension",
    "generator_expression",
];

/// What the project's Python files define under one name, read from
/// their text ([`Defined::in_source`]) so that a caller can decide it for
/// every file before parsing any.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Defined {
    /// A `def` or `class` of the name, at any level.
    pub anywhere: bool,
    /// An indented `def` of the name: a method (or a nested function), so
    /// that `x.name` can be a use of it.
    pub as_method: bool,
}

impl Defined {
    /// What `source`, one Python file, defines under `name`.
    pub fn in_source(source: &[u8], name: &str) -> Self {
        let mut defined = Self::default();
        let finder = memchr::memmem::Finder::new(name.as_bytes());
        for at in finder.find_iter(source) {
            if source
                .get(at + name.len())
                .is_some_and(|&byte| super::is_word_byte(byte))
            {
                continue;
            }
            if let Some(keyword) = defining_keyword(&source[..at]) {
                defined.anywhere = true;
                defined.as_method |= keyword.indented && keyword.is_def;
                if defined.as_method {
                    break;
                }
            }
        }
        defined
    }

    /// Both files' definitions.
    pub fn and(self, other: Self) -> Self {
        Self {
            anywhere: self.anywhere || other.anywhere,
            as_method: self.as_method || other.as_method,
        }
    }
}

/// The keyword that defines the name just after `before`, if its line
/// reads `def` or `class` (`async def`), possibly indented, up to it.
struct DefiningKeyword {
    indented: bool,
    is_def: bool,
}

fn defining_keyword(before: &[u8]) -> Option<DefiningKeyword> {
    // A definition's line start is near: a long line costs this much.
    let scan_from = before.len().saturating_sub(MAX_DEF_PREFIX);
    let line = match before[scan_from..].iter().rposition(|&byte| byte == b'\n') {
        Some(newline) => &before[scan_from + newline + 1..],
        None if scan_from == 0 => before,
        None => return None,
    };
    let indented = line
        .first()
        .is_some_and(|&byte| byte == b' ' || byte == b'\t');
    let rest = line.trim_ascii_start();
    let rest = rest
        .strip_prefix(b"async")
        .filter(|rest| rest.first().is_some_and(u8::is_ascii_whitespace))
        .map_or(rest, <[u8]>::trim_ascii_start);
    let (is_def, gap) = match (rest.strip_prefix(b"def"), rest.strip_prefix(b"class")) {
        (Some(gap), _) => (true, gap),
        (None, Some(gap)) => (false, gap),
        (None, None) => return None,
    };
    (!gap.is_empty() && gap.iter().all(|&byte| byte == b' ' || byte == b'\t'))
        .then_some(DefiningKeyword { indented, is_def })
}

/// What is looked for in a Python file.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    pub name: &'a [u8],
    /// `Class.name`: only the uses tied to that class's member.
    pub class: Option<&'a [u8]>,
    /// `x.name` can be a use: the name is a method somewhere.
    pub member_uses: bool,
}

/// Where `wanted`, a name the project defines by a `def` or `class`, is
/// used in the tree of a Python file, as byte offsets in source order.
pub(in crate::symbols) fn spelled_at(
    root: Node<'_>,
    source: &[u8],
    wanted: Wanted<'_>,
    budget: &ParseBudget,
) -> Result<Vec<usize>, ParseError> {
    let _walking = budget.running();
    let mut walk = Walk {
        source,
        wanted,
        scopes: vec![Scope::default()],
        frames: Vec::new(),
        found: Vec::new(),
        imported: HashSet::new(),
        typed: HashMap::new(),
        classes: HashSet::new(),
    };
    let mut cursor = root.walk();
    walk.enter(cursor.node(), None);
    let mut visited = 0usize;
    loop {
        visited += 1;
        if visited.is_multiple_of(NODES_PER_CHECK) {
            budget.check()?;
        }
        walk.visit();
        if cursor.goto_first_child() {
            walk.enter(cursor.node(), cursor.field_name());
            continue;
        }
        loop {
            walk.frames.pop();
            if cursor.goto_next_sibling() {
                walk.enter(cursor.node(), cursor.field_name());
                break;
            }
            if !cursor.goto_parent() {
                return Ok(walk.kept());
            }
        }
    }
}

/// A function, lambda, comprehension or class body, or the module.
#[derive(Debug, Default)]
struct Scope {
    /// The scope it is nested in (the module is its own).
    parent: usize,
    /// Whether names bound in it are local to it (not so for a class body
    /// as seen from its methods, nor for the module).
    hides: bool,
    /// The scope binds the name: a parameter or a target.
    binds: bool,
    /// The scope declares the name `global` or `nonlocal`.
    declared: bool,
    /// A class body: what the class is.
    class: Option<Class>,
    /// A function in a class body: its first parameter (`self`, `cls`).
    instance: Option<Range<usize>>,
}

/// What a member lookup needs to know of a class.
#[derive(Debug)]
struct Class {
    name: Range<usize>,
    /// Its bases as written (`(Base, metaclass=M)`), empty without.
    bases: Range<usize>,
    /// Its body defines the name (a `def` or an assignment).
    defines: bool,
}

/// A node on the path from the root to the walk's position.
struct Frame<'tree> {
    node: Node<'tree>,
    /// Its field in its parent's node.
    field: Option<&'static str>,
    /// The scope its text is in.
    scope: usize,
    /// The scope it opens for its body, if it opens one.
    opens: Option<usize>,
}

/// What an identifier spelling the name is.
enum Role {
    /// Names something else: not a use, and hides nothing.
    Other,
    /// A use by its plain name, in this scope.
    Plain(usize),
    /// `x.name`, in this scope.
    Attribute(usize, Receiver),
}

/// The `x` of `x.name`.
enum Receiver {
    /// A plain name.
    Name(Range<usize>),
    /// `a.b.name`, `a` a plain name.
    Field {
        object: Range<usize>,
        field: Range<usize>,
    },
    /// A longer chain: where it starts.
    Chain { first: Range<usize> },
    /// `super()`.
    Super,
    /// `Class(…)`: a call of a plain name.
    Made(Range<usize>),
    /// Anything else (a call's result, a subscript, a literal).
    Unknown,
}

/// What a name's annotation or assigned call says it is, in one scope:
/// whether it names the wanted class.
type Typed<'source> = HashMap<(usize, &'source [u8]), bool>;

struct Walk<'tree, 'source> {
    source: &'source [u8],
    wanted: Wanted<'source>,
    /// Created as the walk enters them: a scope's parent comes before it.
    scopes: Vec<Scope>,
    frames: Vec<Frame<'tree>>,
    found: Vec<(usize, Role)>,
    /// Names an import binds anywhere in the file.
    imported: HashSet<&'source [u8]>,
    /// For a member lookup: the names whose class is known, by scope.
    typed: Typed<'source>,
    /// For a member lookup: the names of the classes the file defines.
    classes: HashSet<&'source [u8]>,
}

impl<'tree, 'source> Walk<'tree, 'source> {
    fn text(&self, range: Range<usize>) -> &'source [u8] {
        self.source.get(range).unwrap_or_default()
    }

    fn enter(&mut self, node: Node<'tree>, field: Option<&'static str>) {
        let scope = match self.frames.last() {
            None => 0,
            Some(parent) => self.scope_of_child(parent, field),
        };
        let kind = node.kind();
        let opens = match kind {
            "function_definition" | "lambda" => Some(Scope {
                hides: true,
                instance: (kind == "function_definition" && self.scopes[scope].class.is_some())
                    .then(|| first_parameter(node))
                    .flatten(),
                ..Scope::default()
            }),
            "class_definition" => {
                let class = self.class_facts(node);
                if let Some(facts) = &class {
                    let name = self.text(facts.name.clone());
                    self.classes.insert(name);
                }
                Some(Scope {
                    class,
                    ..Scope::default()
                })
            }
            _ if COMPREHENSIONS.contains(&kind) => Some(Scope {
                hides: true,
                ..Scope::default()
            }),
            _ => None,
        }
        .map(|opened| {
            self.scopes.push(Scope {
                parent: scope,
                ..opened
            });
            self.scopes.len() - 1
        });
        self.frames.push(Frame {
            node,
            field,
            scope,
            opens,
        });
    }

    /// The scope of a child's text: its parent's, but for the body (and
    /// the parameters) of a node that opens a scope, and for parameters'
    /// defaults and annotations, which the enclosing scope evaluates.
    fn scope_of_child(&self, parent: &Frame<'tree>, field: Option<&str>) -> usize {
        if let Some(opened) = parent.opens {
            let inside = COMPREHENSIONS.contains(&parent.node.kind())
                || matches!(field, Some("body" | "parameters"));
            return if inside { opened } else { parent.scope };
        }
        let evaluated_outside = matches!(
            (parent.node.kind(), field),
            (
                "default_parameter" | "typed_default_parameter",
                Some("value")
            ) | ("typed_parameter" | "typed_default_parameter", Some("type"))
        );
        if evaluated_outside {
            self.scopes[parent.scope].parent
        } else {
            parent.scope
        }
    }

    /// A class's name, bases and whether its body defines the name; only
    /// for a member lookup.
    fn class_facts(&self, node: Node<'tree>) -> Option<Class> {
        self.wanted.class?;
        let name = node.child_by_field_name("name")?.byte_range();
        let bases = node
            .child_by_field_name("superclasses")
            .map_or(0..0, |bases| bases.byte_range());
        let body = node.child_by_field_name("body")?;
        let mut cursor = body.walk();
        let defines = body.named_children(&mut cursor).any(|statement| {
            let defined = match statement.kind() {
                "decorated_definition" => statement.child_by_field_name("definition"),
                "function_definition" | "class_definition" => Some(statement),
                "expression_statement" => statement
                    .named_child(0)
                    .filter(|inner| inner.kind() == "assignment")
                    .and_then(|assignment| assignment.child_by_field_name("left")),
                _ => None,
            };
            let defined = defined.and_then(|node| match node.kind() {
                "identifier" => Some(node),
                _ => node.child_by_field_name("name"),
            });
            defined.is_some_and(|name| self.text(name.byte_range()) == self.wanted.name)
        });
        Some(Class {
            name,
            bases,
            defines,
        })
    }

    fn visit(&mut self) {
        let Some(frame) = self.frames.last() else {
            return;
        };
        let node = frame.node;
        match node.kind() {
            "identifier" if self.text(node.byte_range()) == self.wanted.name => {
                let role = self.role();
                self.found.push((node.start_byte(), role));
            }
            "import_statement" | "import_from_statement" => self.note_imports(node),
            "typed_parameter" | "typed_default_parameter" | "assignment"
                if self.wanted.class.is_some() =>
            {
                self.note_type(node, frame.scope);
            }
            "as_pattern"
                if self.wanted.class.is_some()
                    && self.frames.len() >= 2
                    && self.frames[self.frames.len() - 2].node.kind() == "with_item" =>
            {
                self.note_with(node, frame.scope);
            }
            _ => {}
        }
    }

    /// The role of the identifier at the walk's position; binding and
    /// declaring roles are noted on their scope.
    fn role(&mut self) -> Role {
        let at = self.frames.len() - 1;
        let leaf = &self.frames[at];
        let scope = leaf.scope;
        let Some(parent) = at.checked_sub(1).map(|index| &self.frames[index]) else {
            return Role::Plain(scope);
        };
        let in_parameters = |kind: &str| matches!(kind, "parameters" | "lambda_parameters");
        match (parent.node.kind(), leaf.field) {
            ("attribute", Some("attribute")) => {
                // `x.name = …` binds an attribute, but for a member it
                // calls its setter (a property).
                if self.wanted.class.is_none() && self.is_target(at - 1) {
                    return Role::Other;
                }
                let receiver = parent
                    .node
                    .child_by_field_name("object")
                    .map_or(Receiver::Unknown, |object| receiver(object, self.source));
                return Role::Attribute(scope, receiver);
            }
            ("keyword_argument", Some("name")) => return Role::Other,
            ("global_statement" | "nonlocal_statement", _) => {
                self.scopes[scope].declared = true;
                return Role::Other;
            }
            (kind, _) if in_parameters(kind) => return self.binds(scope),
            ("default_parameter" | "typed_default_parameter", Some("name"))
            | ("typed_parameter", None) => return self.binds(scope),
            ("list_splat_pattern" | "dictionary_splat_pattern", _)
                if at.checked_sub(2).is_some_and(|index| {
                    let kind = self.frames[index].node.kind();
                    in_parameters(kind) || kind == "typed_parameter"
                }) =>
            {
                return self.binds(scope);
            }
            _ => {}
        }
        if let Some(role) = self.import_role(at) {
            return role;
        }
        if self.is_target(at) {
            return self.binds(scope);
        }
        Role::Plain(scope)
    }

    fn binds(&mut self, scope: usize) -> Role {
        self.scopes[scope].binds = true;
        Role::Other
    }

    /// The role of an identifier inside an import, `None` outside one.
    fn import_role(&mut self, at: usize) -> Option<Role> {
        let parent = &self.frames[at.checked_sub(1)?];
        let scope = self.frames[at].scope;
        match parent.node.kind() {
            // `import m as name`, `from m import x as name`: binds the name
            // to something else, unless it is `name as name`.
            "aliased_import" => {
                let imported = parent.node.child_by_field_name("name").and_then(|dotted| {
                    let last = dotted.named_child_count().checked_sub(1)?;
                    dotted.named_child(last.try_into().ok()?)
                });
                let same =
                    imported.is_some_and(|last| self.text(last.byte_range()) == self.wanted.name);
                Some(if same { Role::Other } else { self.binds(scope) })
            }
            "relative_import" => Some(Role::Other),
            "dotted_name" => {
                let dotted = at - 1;
                let holder = &self.frames[dotted.checked_sub(1)?];
                let field = self.frames[dotted].field;
                let whole = parent.node.named_child_count() == 1;
                let holder_kind = match holder.node.kind() {
                    "aliased_import" => self.frames[dotted.checked_sub(2)?].node.kind(),
                    "relative_import" => return Some(Role::Other),
                    kind => kind,
                };
                match (holder_kind, field) {
                    ("import_from_statement" | "future_import_statement", Some("module_name")) => {
                        Some(Role::Other)
                    }
                    // `from m import name`: the use an import makes.
                    ("import_from_statement", Some("name")) if whole => Some(Role::Plain(scope)),
                    // `import name` binds a module of that name.
                    ("import_statement", _) if whole && holder.node.kind() != "aliased_import" => {
                        Some(self.binds(scope))
                    }
                    (
                        "import_statement" | "import_from_statement" | "future_import_statement",
                        _,
                    ) => Some(Role::Other),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether the node at `index` on the path is (inside) what an
    /// assignment, `for`, `with … as`, `except … as` or `:=` binds.
    fn is_target(&self, index: usize) -> bool {
        let mut at = index;
        for _ in 0..MAX_CLIMB {
            let Some(parent) = at.checked_sub(1).map(|above| &self.frames[above]) else {
                return false;
            };
            let field = self.frames[at].field;
            match parent.node.kind() {
                "pattern_list"
                | "tuple_pattern"
                | "list_pattern"
                | "list_splat_pattern"
                | "as_pattern_target"
                | "parenthesized_expression"
                | "tuple"
                | "list" => at -= 1,
                "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" => {
                    return field == Some("left");
                }
                "named_expression" => return field == Some("name"),
                "as_pattern" | "except_clause" => return field == Some("alias"),
                _ => return false,
            }
        }
        false
    }

    /// Notes the names an import statement binds.
    fn note_imports(&mut self, statement: Node<'tree>) {
        let mut cursor = statement.walk();
        for imported in statement.children_by_field_name("name", &mut cursor) {
            let bound = match imported.kind() {
                "aliased_import" => imported.child_by_field_name("alias"),
                // `import a.b` binds `a`; `from m import x` binds `x`.
                _ => imported.named_child(0),
            };
            if let Some(bound) = bound {
                let text = self.text(bound.byte_range());
                self.imported.insert(text);
            }
        }
    }

    /// Notes what an annotated parameter, or a name (or `self.name`)
    /// given an annotation or assigned a constructor's call or a known
    /// name, is: the wanted class or not.
    fn note_type(&mut self, node: Node<'tree>, scope: usize) {
        let Some(class) = self.wanted.class else {
            return;
        };
        let noted = match node.kind() {
            "assignment" => self.assigned_type(node, scope, class),
            // A parameter: its name is in the function's scope.
            _ => node
                .child_by_field_name("name")
                .or_else(|| {
                    node.named_child(0)
                        .filter(|first| first.kind() == "identifier")
                })
                .zip(node.child_by_field_name("type"))
                .map(|(name, annotation)| {
                    let names_class = holds_word(self.text(annotation.byte_range()), class);
                    ((scope, self.text(name.byte_range())), names_class)
                }),
        };
        if let Some((key, names_class)) = noted {
            *self.typed.entry(key).or_insert(false) |= names_class;
        }
    }

    /// Where an assignment's target's class is kept (its scope, or for
    /// `self.name` its class's), and whether the class is the wanted one.
    fn assigned_type(
        &self,
        node: Node<'tree>,
        scope: usize,
        class: &[u8],
    ) -> Option<((usize, &'source [u8]), bool)> {
        let left = node.child_by_field_name("left")?;
        let key = match left.kind() {
            "identifier" => (scope, self.text(left.byte_range())),
            "attribute" => {
                let object = left
                    .child_by_field_name("object")
                    .filter(|object| object.kind() == "identifier")?;
                let attribute = left.child_by_field_name("attribute")?;
                let class_scope = self.instance_scope(scope, self.text(object.byte_range()))?;
                (class_scope, self.text(attribute.byte_range()))
            }
            _ => return None,
        };
        if let Some(annotation) = node.child_by_field_name("type") {
            return Some((key, holds_word(self.text(annotation.byte_range()), class)));
        }
        let right = node.child_by_field_name("right")?;
        Some((key, self.value_type(right, scope, class)?))
    }

    /// Whether a value is of `class`, where that is known: a literal or a
    /// built-in's result is not; `Class(…)` or `Class.make(…)` says it; a
    /// name says what is known of it; what a function or another method
    /// returns is not known.
    fn value_type(&self, mut value: Node<'tree>, scope: usize, class: &[u8]) -> Option<bool> {
        // `a if c else b`, `a or b`: the first alternative says it.
        for _ in 0..MAX_CLIMB {
            if !matches!(value.kind(), "conditional_expression" | "boolean_operator") {
                break;
            }
            value = value.named_child(0)?;
        }
        match value.kind() {
            "call" => {
                let function = value.child_by_field_name("function")?;
                let first = self.text(first_name(function)?.byte_range());
                let plain = function.kind() == "identifier";
                if first == class {
                    Some(true)
                } else if plain
                    && (first.first().is_some_and(u8::is_ascii_uppercase)
                        || BUILT_INS.contains(&first))
                {
                    Some(false)
                } else {
                    None
                }
            }
            "identifier" => self.known_type(scope, self.text(value.byte_range())),
            kind if LITERALS.contains(&kind) => Some(false),
            _ => None,
        }
    }

    /// Notes `with Class(…) as name`: the name's class, as `__enter__`
    /// most often returns the object itself.
    fn note_with(&mut self, pattern: Node<'tree>, scope: usize) {
        let Some(class) = self.wanted.class else {
            return;
        };
        let alias = pattern
            .child_by_field_name("alias")
            .and_then(|target| target.named_child(0))
            .filter(|alias| alias.kind() == "identifier");
        let (Some(value), Some(alias)) = (pattern.named_child(0), alias) else {
            return;
        };
        if let Some(names_class) = self.value_type(value, scope, class) {
            let key = (scope, self.text(alias.byte_range()));
            *self.typed.entry(key).or_insert(false) |= names_class;
        }
    }

    /// The offsets of the uses, once the whole file has said which scopes
    /// bind the name.
    fn kept(self) -> Vec<usize> {
        // Parents come first, so one pass settles every scope.
        let mut hidden = vec![false; self.scopes.len()];
        for (index, scope) in self.scopes.iter().enumerate() {
            hidden[index] = !scope.declared
                && ((scope.hides && scope.binds) || (index > 0 && hidden[scope.parent]));
        }
        self.found
            .iter()
            .filter(|(_, role)| match role {
                Role::Other => false,
                Role::Plain(scope) => match self.wanted.class {
                    // A member by its plain name: only in its class's body.
                    Some(class) => self.scopes[*scope]
                        .class
                        .as_ref()
                        .is_some_and(|facts| self.text(facts.name.clone()) == class),
                    None => !hidden[*scope],
                },
                Role::Attribute(scope, receiver) => match self.wanted.class {
                    Some(class) => self.is_member_use(*scope, receiver, class),
                    None => self.wanted.member_uses || self.imported_receiver(receiver),
                },
            })
            .map(|(start, _)| *start)
            .collect()
    }

    /// `x.name` where `x` is (or starts with) a name an import binds.
    fn imported_receiver(&self, receiver: &Receiver) -> bool {
        match receiver {
            Receiver::Name(first)
            | Receiver::Field { object: first, .. }
            | Receiver::Chain { first } => self.imported.contains(self.text(first.clone())),
            Receiver::Super | Receiver::Made(_) | Receiver::Unknown => false,
        }
    }

    /// Whether `x.name` in `scope` is a use of `class`'s member: `x` is
    /// the class, an instance of it by the enclosing method's first
    /// parameter, an annotation or an assigned call, or `super()` in a
    /// subclass. A plain name whose class is not known counts; an
    /// attribute's value or a call's result does not.
    fn is_member_use(&self, scope: usize, receiver: &Receiver, class: &[u8]) -> bool {
        let named = match receiver {
            Receiver::Name(whole) => self.text(whole.clone()),
            Receiver::Super => {
                return self
                    .enclosing_class(scope)
                    .is_some_and(|facts| holds_word(self.text(facts.bases.clone()), class));
            }
            Receiver::Made(called) => return self.text(called.clone()) == class,
            // `self.child.name`: the class `child` is given in the class.
            Receiver::Field { object, field } => {
                let class_scope = self.instance_scope(scope, self.text(object.clone()));
                return class_scope
                    .and_then(|class_scope| {
                        self.typed.get(&(class_scope, self.text(field.clone())))
                    })
                    .is_some_and(|&names_class| names_class);
            }
            // `a.b.c.name`, `make().name`: what the attribute or the call
            // holds is not followed, and it is most often some other object
            // (a field's value, a string), so it does not count.
            Receiver::Chain { .. } | Receiver::Unknown => return false,
        };
        if named == class {
            return true;
        }
        // Another class (a capitalized name, as classes are named, but for
        // an `ALL_CAPS` constant), or an imported module or constant: not
        // followed into the module it comes from.
        let letters = || named.iter().filter(|byte| byte.is_ascii_alphabetic());
        let constant = letters().all(u8::is_ascii_uppercase);
        let capitalized = letters().next().is_some_and(u8::is_ascii_uppercase);
        if (capitalized && !constant)
            || self.imported.contains(named)
            || self.classes.contains(named)
        {
            return false;
        }
        if let Some(facts) = self.instance_class(scope, named) {
            return self.text(facts.name.clone()) == class
                || (!facts.defines && holds_word(self.text(facts.bases.clone()), class));
        }
        // A local or parameter of no known class: as often an instance (a
        // loop over them) as not; counted, so that none is missed.
        self.known_type(scope, named).unwrap_or(true)
    }

    /// The class of the method whose first parameter `named` is, seen
    /// from `scope` (a nested function sees its method's `self`).
    fn instance_class(&self, scope: usize, named: &[u8]) -> Option<&Class> {
        self.scopes[self.instance_scope(scope, named)?]
            .class
            .as_ref()
    }

    /// The scope of the class body whose method's first parameter `named`
    /// is, seen from `scope`.
    fn instance_scope(&self, scope: usize, named: &[u8]) -> Option<usize> {
        let mut at = scope;
        for _ in 0..MAX_CLIMB {
            let current = &self.scopes[at];
            if let Some(instance) = &current.instance {
                return (self.text(instance.clone()) == named).then_some(current.parent);
            }
            if at == 0 || current.class.is_some() {
                return None;
            }
            at = current.parent;
        }
        None
    }

    /// The class whose method holds `scope`.
    fn enclosing_class(&self, scope: usize) -> Option<&Class> {
        let mut at = scope;
        for _ in 0..MAX_CLIMB {
            let current = &self.scopes[at];
            if current.instance.is_some() || current.class.is_some() {
                return self.scopes[current.parent]
                    .class
                    .as_ref()
                    .or(current.class.as_ref());
            }
            if at == 0 {
                return None;
            }
            at = current.parent;
        }
        None
    }

    /// What is known of `named`'s class in `scope` or the scopes around it.
    fn known_type(&self, scope: usize, named: &[u8]) -> Option<bool> {
        let mut at = scope;
        for _ in 0..MAX_CLIMB {
            if let Some(&names_class) = self.typed.get(&(at, named)) {
                return Some(names_class);
            }
            if at == 0 {
                return None;
            }
            at = self.scopes[at].parent;
        }
        None
    }
}

/// The `x` of `x.name`.
fn receiver(object: Node<'_>, source: &[u8]) -> Receiver {
    match object.kind() {
        "identifier" => Receiver::Name(object.byte_range()),
        "attribute" => {
            let inner = object.child_by_field_name("object");
            let field = object.child_by_field_name("attribute");
            match (inner, field) {
                (Some(inner), Some(field)) if inner.kind() == "identifier" => Receiver::Field {
                    object: inner.byte_range(),
                    field: field.byte_range(),
                },
                _ => first_name(object).map_or(Receiver::Unknown, |first| Receiver::Chain {
                    first: first.byte_range(),
                }),
            }
        }
        "call" => match object.child_by_field_name("function") {
            Some(function) if source.get(function.byte_range()) == Some(b"super") => {
                Receiver::Super
            }
            Some(function) if function.kind() == "identifier" => {
                Receiver::Made(function.byte_range())
            }
            _ => Receiver::Unknown,
        },
        _ => Receiver::Unknown,
    }
}

/// A function's first parameter's name (`self`, `cls`).
fn first_parameter(function: Node<'_>) -> Option<Range<usize>> {
    let first = function.child_by_field_name("parameters")?.named_child(0)?;
    let name = match first.kind() {
        "identifier" => first,
        "typed_parameter" => first.named_child(0)?,
        "default_parameter" | "typed_default_parameter" => first.child_by_field_name("name")?,
        _ => return None,
    };
    (name.kind() == "identifier").then(|| name.byte_range())
}

/// Whether `text` holds `word` as a whole word.
fn holds_word(text: &[u8], word: &[u8]) -> bool {
    super::holds_word(text, &memchr::memmem::Finder::new(word))
}

/// The first plain name of an expression such as `a.b.c`, if it starts
/// with one.
fn first_name(mut node: Node<'_>) -> Option<Node<'_>> {
    for _ in 0..MAX_CLIMB {
        match node.kind() {
            "identifier" => return Some(node),
            "attribute" => node = node.child_by_field_name("object")?,
            _ => return None,
        }
    }
    None
}
