//! The line matcher behind search: a query (a literal or a Rust regex, in
//! either case mode) compiled for grep-searcher's line-by-line search.
//!
//! It matches as grep-regex's matcher does (the same parser settings, line
//! breaks taken out of classes, and no line terminator promised to the
//! searcher when the pattern holds `\A` or `\z`, so that it then searches
//! line by line), without one cost: grep-regex builds a full DFA for every
//! regex of up to 1,000 NFA states (ripgrep's setting, with no switch to
//! skip it), 0.2 to 30 ms per call, more than an indexed search spends
//! reading its candidates. The lazy DFA that remains builds only the states
//! a haystack needs and scans as fast. A query that is one literal string
//! skips the regex engine altogether (a substring search, built in
//! microseconds). A differential test against grep-regex (below) keeps the
//! answers the same.

use std::collections::BTreeSet;

use grep_matcher::{LineMatchKind, LineTerminator, Match, Matcher, NoCaptures, NoError};
use memchr::memmem;
use regex_automata::meta::{self, Regex};
use regex_automata::{Input, MatchKind};
use regex_syntax::hir::{self, Hir, HirKind};

/// Compiled size limit of one query (its NFA).
pub const SIZE_LIMIT: usize = 10 * 1024 * 1024;
/// Room for the lazy DFA's states, per search thread.
const LAZY_DFA_CACHE: usize = 2 * 1024 * 1024;
/// Nesting depth the parser accepts (grep-regex's).
const NEST_LIMIT: u32 = 250;

/// A query compiled for one search; cheap to clone (the compiled program is
/// shared, each clone keeps its own scratch space).
#[derive(Clone, Debug)]
pub struct LineMatcher {
    engine: Engine,
    /// `\n`, unless the pattern is anchored to the whole haystack (`\A`,
    /// `\z`): then the searcher hands it one line at a time.
    line_terminator: Option<LineTerminator>,
}

#[derive(Clone, Debug)]
enum Engine {
    /// A pattern that is one literal string (a case-sensitive literal
    /// query, or a regex without metacharacters): a substring search finds
    /// the same leftmost match, and building it costs a fraction of a
    /// regex's compilation, which an indexed search would otherwise spend
    /// more on than on reading its few candidates.
    Literal(Box<memmem::Finder<'static>>),
    Regex {
        regex: Regex,
        /// Finds the lines that may match (they hold one of the literals
        /// every match holds) when the regex alone would run its automaton
        /// over every byte: `\w+_parse_\w+` is twice as fast this way.
        candidate_lines: Option<Regex>,
    },
}

/// Parses `query` (a regex, or with `literal` a plain substring) as the
/// search matches it, with `\n` taken out of its classes; the one parse of
/// a query: the matcher compiles it and the index plans from it. The error
/// says what is wrong with the pattern.
pub fn parse(query: &str, literal: bool, case_insensitive: bool) -> Result<Hir, String> {
    if literal && !case_insensitive {
        // What the parser makes of the escaped text, without running it.
        return without_line_breaks(Hir::literal(query.as_bytes()));
    }
    let pattern = if literal {
        format!("(?:{})", regex_syntax::escape(query))
    } else {
        format!("(?:{query})")
    };
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .octal(false)
        .utf8(false)
        .case_insensitive(case_insensitive)
        .unicode(true)
        .build()
        .parse(&pattern)
        .map_err(|error| error.to_string())?;
    without_line_breaks(hir)
}

impl LineMatcher {
    /// Compiles a query [`parse`] gave; the error says what is wrong with it
    /// (too large, say).
    pub fn new(hir: &Hir) -> Result<Self, String> {
        if let HirKind::Literal(hir::Literal(bytes)) = hir.kind() {
            return Ok(Self {
                engine: Engine::Literal(Box::new(memmem::Finder::new(bytes).into_owned())),
                line_terminator: Some(LineTerminator::byte(b'\n')),
            });
        }
        let anchored = hir.properties().look_set().contains_anchor_haystack();
        let config = meta::Config::new()
            .match_kind(MatchKind::LeftmostFirst)
            .utf8_empty(false)
            .nfa_size_limit(Some(SIZE_LIMIT))
            .onepass_size_limit(Some(SIZE_LIMIT))
            .dfa(false)
            .hybrid_cache_capacity(LAZY_DFA_CACHE);
        let build = |hir: &Hir| {
            meta::Builder::new()
                .configure(config.clone())
                .build_from_hir(hir)
                .map_err(|error| error.to_string())
        };
        let regex = build(hir)?;
        // As grep-regex decides: only where the regex has no fast literal
        // search of its own, or a Unicode word boundary may make it give up
        // its lazy DFA; and never for a pattern anchored to the haystack,
        // which is searched line by line anyway.
        let wanted = !anchored
            && !hir.properties().is_alternation_literal()
            && (!regex.is_accelerated() || hir.properties().look_set().contains_word_unicode());
        let candidate_lines = match wanted.then(|| required_literals(hir)).flatten() {
            Some(literals) => Some(build(&Hir::alternation(
                literals.into_iter().map(Hir::literal).collect(),
            ))?),
            None => None,
        };
        Ok(Self {
            engine: Engine::Regex {
                regex,
                candidate_lines,
            },
            line_terminator: (!anchored).then(|| LineTerminator::byte(b'\n')),
        })
    }
}

impl Matcher for LineMatcher {
    type Captures = NoCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        Ok(match &self.engine {
            Engine::Literal(finder) => finder.find(&haystack[at..]).map(|start| {
                let start = at + start;
                Match::new(start, start + finder.needle().len())
            }),
            Engine::Regex { regex, .. } => regex
                .find(Input::new(haystack).span(at..haystack.len()))
                .map(|found| Match::new(found.start(), found.end())),
        })
    }

    fn new_captures(&self) -> Result<NoCaptures, NoError> {
        Ok(NoCaptures::new())
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        Ok(match &self.engine {
            // One string: the match that ends first is the leftmost.
            Engine::Literal(_) => self.find_at(haystack, at)?.map(|found| found.end()),
            Engine::Regex { regex, .. } => regex
                .search_half(&Input::new(haystack).span(at..haystack.len()))
                .map(|end| end.offset()),
        })
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        self.line_terminator
    }

    /// The searcher confirms a candidate with the whole regex on its line.
    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, NoError> {
        Ok(match &self.engine {
            Engine::Regex {
                candidate_lines: Some(literals),
                ..
            } => literals
                .search_half(&Input::new(haystack))
                .map(|found| LineMatchKind::Candidate(found.offset())),
            _ => self.shortest_match(haystack)?.map(LineMatchKind::Confirmed),
        })
    }
}

/// Most literals a set may hold, and fewest bytes its shortest must have,
/// for the set to find candidate lines faster than the regex.
const MAX_LITERALS: usize = 64;
const MIN_LITERAL_BYTES: usize = 3;
/// Members a class may have and still be taken as its strings (a
/// case-folded letter has two or three).
const MAX_CLASS_MEMBERS: u32 = 8;

/// A set of strings, as the literal analyses of a query's HIR (here and
/// in the index's planner) keep them.
pub type Strings = BTreeSet<Vec<u8>>;

/// Every `a + b`.
pub fn cross(left: &Strings, right: &Strings) -> Strings {
    let mut joined = Strings::new();
    for a in left {
        for b in right {
            joined.insert([a.as_slice(), b.as_slice()].concat());
        }
    }
    joined
}

/// The strings a class matches (UTF-8 for a Unicode class), each passed
/// through `map`, when it has at most `max` members.
pub fn class_strings(
    class: &hir::Class,
    max: u32,
    map: impl Fn(&[u8]) -> Vec<u8>,
) -> Option<Strings> {
    let count = match class {
        hir::Class::Unicode(class) => members(
            class
                .ranges()
                .iter()
                .map(|r| (r.start().into(), r.end().into())),
        ),
        hir::Class::Bytes(class) => members(
            class
                .ranges()
                .iter()
                .map(|r| (r.start().into(), r.end().into())),
        ),
    };
    if count > max {
        return None;
    }
    Some(match class {
        hir::Class::Unicode(class) => class
            .ranges()
            .iter()
            .flat_map(|range| range.start()..=range.end())
            .map(|member| map(member.encode_utf8(&mut [0; 4]).as_bytes()))
            .collect(),
        hir::Class::Bytes(class) => class
            .ranges()
            .iter()
            .flat_map(|range| range.start()..=range.end())
            .map(|byte| map(&[byte]))
            .collect(),
    })
}

/// How many members the spans (first and last code, inclusive) hold.
fn members(spans: impl Iterator<Item = (u32, u32)>) -> u32 {
    spans.map(|(first, last)| last - first + 1).sum()
}

/// What a part of a pattern says about the literals in its matches.
enum Literals {
    /// Its matches are exactly these strings.
    Exact(Strings),
    /// Each of its matches holds one of these.
    Required(Strings),
    /// Nothing useful.
    Unknown,
}

/// Literals of which every match of `hir` holds one, when they are few and
/// long enough to be worth searching for first.
fn required_literals(hir: &Hir) -> Option<Strings> {
    match literals_of(hir) {
        Literals::Exact(set) | Literals::Required(set) if useful(&set) => Some(set),
        _ => None,
    }
}

fn useful(set: &Strings) -> bool {
    !set.is_empty()
        && set.len() <= MAX_LITERALS
        && set.iter().all(|literal| literal.len() >= MIN_LITERAL_BYTES)
}

fn literals_of(hir: &Hir) -> Literals {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Literals::Exact(Strings::from([Vec::new()])),
        HirKind::Literal(hir::Literal(bytes)) => Literals::Exact(Strings::from([bytes.to_vec()])),
        HirKind::Class(class) => class_strings(class, MAX_CLASS_MEMBERS, <[u8]>::to_vec)
            .map_or(Literals::Unknown, Literals::Exact),
        HirKind::Capture(capture) => literals_of(&capture.sub),
        HirKind::Repetition(repetition) => match (repetition.min, repetition.max) {
            (0, _) => Literals::Unknown,
            (1, Some(1)) => literals_of(&repetition.sub),
            _ => match literals_of(&repetition.sub) {
                Literals::Exact(set) | Literals::Required(set) => Literals::Required(set),
                Literals::Unknown => Literals::Unknown,
            },
        },
        HirKind::Alternation(alternatives) => {
            let mut union = Strings::new();
            let mut exact = true;
            for alternative in alternatives {
                match literals_of(alternative) {
                    Literals::Exact(set) => union.extend(set),
                    Literals::Required(set) => {
                        exact = false;
                        union.extend(set);
                    }
                    Literals::Unknown => return Literals::Unknown,
                }
                if union.len() > MAX_LITERALS {
                    return Literals::Unknown;
                }
            }
            if exact {
                Literals::Exact(union)
            } else {
                Literals::Required(union)
            }
        }
        HirKind::Concat(parts) => concat_literals(parts),
    }
}

/// A concatenation's matches are its parts' matches end to end: runs of
/// parts with exact sets combine (every pairing), and any run or any part
/// is required; the best of them is kept.
fn concat_literals(parts: &[Hir]) -> Literals {
    let mut best: Option<Strings> = None;
    let mut consider = |set: Strings| {
        if useful(&set) && best.as_ref().is_none_or(|kept| better(&set, kept)) {
            best = Some(set);
        }
    };
    let mut run = Strings::from([Vec::new()]);
    let mut all_exact = true;
    for part in parts {
        match literals_of(part) {
            Literals::Exact(set) => match product(&run, &set) {
                Some(joined) => run = joined,
                None => {
                    // Too many pairings: a new run starts at this part.
                    all_exact = false;
                    consider(std::mem::replace(&mut run, set));
                }
            },
            other => {
                all_exact = false;
                consider(std::mem::replace(&mut run, Strings::from([Vec::new()])));
                if let Literals::Required(set) = other {
                    consider(set);
                }
            }
        }
    }
    if all_exact {
        return Literals::Exact(run);
    }
    consider(run);
    best.map_or(Literals::Unknown, Literals::Required)
}

/// Every `a + b`, unless there would be more than [`MAX_LITERALS`].
fn product(left: &Strings, right: &Strings) -> Option<Strings> {
    (left.len().saturating_mul(right.len()) <= MAX_LITERALS).then(|| cross(left, right))
}

/// Longer shortest literal first, then fewer literals.
fn better(set: &Strings, than: &Strings) -> bool {
    let shortest = |set: &Strings| set.iter().map(Vec::len).min().unwrap_or(0);
    (shortest(set), std::cmp::Reverse(set.len())) > (shortest(than), std::cmp::Reverse(than.len()))
}

/// `hir` with `\n` taken out of every class, so that no match spans a line
/// break (the searcher relies on it); a `\n` the pattern requires (`a\nb`,
/// or a class of `\n` alone) is an error, since matches lie within a line.
fn without_line_breaks(hir: Hir) -> Result<Hir, String> {
    let refused = || {
        Err("the pattern requires a line break (\\n), but matches lie within one line".to_string())
    };
    Ok(match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(hir::Literal(bytes)) => {
            if bytes.contains(&b'\n') {
                return refused();
            }
            Hir::literal(bytes)
        }
        HirKind::Class(hir::Class::Unicode(mut class)) => {
            if !class.ranges().is_empty() {
                class.difference(&hir::ClassUnicode::new([hir::ClassUnicodeRange::new(
                    '\n', '\n',
                )]));
                if class.ranges().is_empty() {
                    return refused();
                }
            }
            Hir::class(hir::Class::Unicode(class))
        }
        HirKind::Class(hir::Class::Bytes(mut class)) => {
            if !class.ranges().is_empty() {
                class.difference(&hir::ClassBytes::new([hir::ClassBytesRange::new(
                    b'\n', b'\n',
                )]));
                if class.ranges().is_empty() {
                    return refused();
                }
            }
            Hir::class(hir::Class::Bytes(class))
        }
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(without_line_breaks(*repetition.sub)?);
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(without_line_breaks(*capture.sub)?);
            Hir::capture(capture)
        }
        HirKind::Concat(parts) => Hir::concat(
            parts
                .into_iter()
                .map(without_line_breaks)
                .collect::<Result<_, _>>()?,
        ),
        HirKind::Alternation(parts) => Hir::alternation(
            parts
                .into_iter()
                .map(without_line_breaks)
                .collect::<Result<_, _>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_regex::RegexMatcherBuilder;
    use grep_searcher::sinks::UTF8;
    use grep_searcher::{BinaryDetection, SearcherBuilder};
    use proptest::prelude::*;

    /// The lines (number, text) the searcher reports for `matcher`.
    fn matched_lines<M: Matcher>(matcher: &M, haystack: &str) -> Vec<(u64, String)> {
        let mut lines = Vec::new();
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::none())
            .build()
            .search_slice(
                matcher,
                haystack.as_bytes(),
                UTF8(|number, line| {
                    lines.push((number, line.to_string()));
                    Ok(true)
                }),
            )
            .expect("a search of a slice cannot fail");
        lines
    }

    /// Ours and grep-regex's, on the same query: the same lines, and the
    /// same first match in each (the answer shows the text around it).
    fn assert_same(query: &str, literal: bool, case_insensitive: bool, haystack: &str) {
        let grep = RegexMatcherBuilder::new()
            .case_insensitive(case_insensitive)
            .fixed_strings(literal)
            .line_terminator(Some(b'\n'))
            .build(query);
        let ours = parse(query, literal, case_insensitive).and_then(|hir| LineMatcher::new(&hir));
        let (grep, ours) = match (grep, ours) {
            (Ok(grep), Ok(ours)) => (grep, ours),
            (Err(_), Err(_)) => return,
            (grep, ours) => panic!(
                "{query:?}: grep-regex {:?}, ours {:?}",
                grep.err().map(|e| e.to_string()),
                ours.err()
            ),
        };
        let lines = matched_lines(&ours, haystack);
        assert_eq!(
            lines,
            matched_lines(&grep, haystack),
            "{query:?} in {haystack:?}"
        );
        for (_, line) in lines {
            let line = line.trim_end_matches('\n').as_bytes();
            assert_eq!(
                ours.find(line).unwrap(),
                grep.find(line).unwrap(),
                "{query:?} in {line:?}"
            );
        }
    }

    const PIECES: &[&str] = &[
        "a",
        "b",
        "ab",
        "fn",
        "é",
        "\u{212A}",
        "\u{17F}",
        "K",
        "s",
        " ",
        "_",
        "x1",
        "(",
        ")",
        ".",
        "\\",
        "[",
        "]",
        "^",
        "$",
        "*",
        "+",
        "?",
        "{",
        "}",
        "|",
        "\\w",
        "\\s",
        "\\S",
        "\\b",
        "\\B",
        "\\d",
        "[^a]",
        "[a\\n]",
        "[\\s\\S]",
        "(?m)",
        "(?s)",
        "(?i)",
        "(?-u)",
        "\\A",
        "\\z",
        "(?:",
        "\\x41",
        "\\pL",
        "[[:alpha:]]",
        "{2}",
        "{1,3}",
        ".*",
        "\\n",
        "\\w+",
        "\\s*",
        "_x_",
        "foo",
        "(?:foo|bar)",
        "[A-Z]",
    ];
    const TEXT: &[&str] = &[
        "a", "b", "ab", "fn", "é", "\u{212A}", "\u{17F}", "K", "k", "S", "s", " ", "\t", "_", "x1",
        "(", ")", ".", "\n", "\r\n", "Z", "42", "[", "]", "\\", "foo", "_x_", "bar",
    ];

    proptest! {
        // The matcher is the same code on every platform; Windows' run (under
        // Wine in CI) checks it with fewer cases.
        #![proptest_config(ProptestConfig::with_cases(if cfg!(windows) { 200 } else { 2000 }))]

        #[test]
        fn matches_as_grep_regex_does(
            query in proptest::collection::vec(proptest::sample::select(PIECES), 1..6),
            text in proptest::collection::vec(proptest::sample::select(TEXT), 0..40),
            literal in any::<bool>(),
            case_insensitive in any::<bool>(),
        ) {
            assert_same(&query.concat(), literal, case_insensitive, &text.concat());
        }
    }

    #[test]
    fn anchors_and_folds_as_grep_regex() {
        let text = "fn main() {}\n  fn helper() {}\nfn last()\nKELVIN \u{212A}elvin cla\u{17F}s\n";
        for (query, literal) in [
            ("^fn", false),
            ("\\Afn", false),
            ("\\}$", false),
            ("last\\(\\)\\z", false),
            ("(?m)^\\s+fn", false),
            ("kelvin", false),
            ("class", false),
            ("fn main()", true),
            ("a.b", true),
        ] {
            for case_insensitive in [false, true] {
                assert_same(query, literal, case_insensitive, text);
            }
        }
    }

    fn literals(pattern: &str) -> Option<Vec<String>> {
        let hir = regex_syntax::Parser::new().parse(pattern).unwrap();
        required_literals(&hir).map(|set| {
            set.into_iter()
                .map(|literal| String::from_utf8(literal).unwrap())
                .collect()
        })
    }

    #[test]
    fn every_match_holds_one_of_the_required_literals() {
        let strings = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
        assert_eq!(literals(r"\w+_parse_\w+"), strings(&["_parse_"]));
        assert_eq!(literals(r"x?abc\d+"), strings(&["abc"]));
        assert_eq!(literals(r"(?:foo|bar\d)\s"), strings(&["bar", "foo"]));
        assert_eq!(
            literals(r"\s+(Sherlock|Holmes)\s+"),
            strings(&["Holmes", "Sherlock"])
        );
        // Each case-folded letter is a class; the run of them pairs up.
        assert_eq!(literals(r"(?i)fn_x").map(|set| set.len()), Some(8));
        // Too short or optional: nothing worth searching for first.
        assert_eq!(literals(r"a\w+"), None);
        assert_eq!(literals(r"(?:abc)?\w"), None);
        assert_eq!(literals(r"abc|\w"), None);
    }

    #[test]
    fn case_sensitive_literals_are_parsed_as_the_parser_would() {
        let parsed = |query: &str| {
            regex_syntax::ParserBuilder::new()
                .nest_limit(NEST_LIMIT)
                .octal(false)
                .utf8(false)
                .unicode(true)
                .build()
                .parse(&format!("(?:{})", regex_syntax::escape(query)))
                .map_err(|error| error.to_string())
                .and_then(without_line_breaks)
        };
        for query in [
            "",
            "a",
            "fn main()",
            "a.b*c?[d]{2}(e)|f^$\\",
            "k\u{212A}\u{17F}s ünï 😀",
            "\t tab",
        ] {
            assert_eq!(parse(query, true, false), parsed(query), "{query:?}");
        }
        assert_eq!(parse("a\nb", true, false), parsed("a\nb"));
        let engine = LineMatcher::new(&parse("fn main(", true, false).unwrap()).unwrap();
        assert!(matches!(engine.engine, Engine::Literal(_)));
    }

    #[test]
    fn candidate_lines_give_grep_regex_answers() {
        let text = "let x_parse_y = 1;\n  Sherlock Holmes \nnot_parse\nfoo BAR_parse_it\n\u{212A}_parse_\u{17F}\n";
        for query in [
            r"\w+_parse_\w+",
            r"\s+(Sherlock|[A-Z]atso[a-z]|Moriarty)\s+",
            r"\b\w+_parse_\w*\b",
        ] {
            let ours = LineMatcher::new(&parse(query, false, false).unwrap()).unwrap();
            assert!(
                matches!(
                    ours.engine,
                    Engine::Regex {
                        candidate_lines: Some(_),
                        ..
                    }
                ),
                "{query}"
            );
            for case_insensitive in [false, true] {
                assert_same(query, false, case_insensitive, text);
            }
        }
    }

    #[test]
    fn line_breaks_are_refused_or_left_out() {
        assert!(parse("a\\nb", false, false).is_err());
        assert!(parse("[\\n]", false, false).is_err());
        let spanning = LineMatcher::new(&parse("a\\sb", false, false).unwrap()).unwrap();
        assert_eq!(
            matched_lines(&spanning, "a\nb\na b\n"),
            vec![(3, "a b\n".into())]
        );
    }
}
