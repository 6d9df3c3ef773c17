//! The query planner: from a regex's HIR to a trigram condition that every
//! file holding a match satisfies, after google/codesearch's analysis. Each
//! string the analysis requires also asks for its long sparse n-grams, which
//! only large files' filters answer (see `ngram`).
//!
//! The plan is built from the very HIR the matcher compiles (parsed once, by
//! `crate::matcher::parse`), so case folding (KELVIN
//! SIGN for `k`, LONG S for `s`), classes, alternations and repetitions are
//! handled by construction. Every rule may only weaken the condition: the
//! index may return files without a match (the searcher rejects them), never
//! miss one.

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::matcher::{Strings as Set, class_strings, cross};

use super::ngram::{GramBits, indexable, long_grams, long_grams_with_case, trigram};

/// A condition on a file's trigram set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// Every file may match: the index cannot narrow.
    All,
    /// No file can match.
    Nothing,
    Trigram(u32),
    /// A sparse n-gram of 4 to 8 bytes, folded, which large files'
    /// filters hold.
    Gram(u32),
    /// A sparse n-gram of a case-sensitive literal, its letters' case as it
    /// is, with whether it holds an upper-case letter; the largest files'
    /// filters hold those.
    ExactGram(u32, bool),
    And(Vec<Query>),
    Or(Vec<Query>),
}

impl Query {
    fn and(parts: Vec<Query>) -> Query {
        let mut flat = Vec::new();
        for part in parts {
            match part {
                Query::All => {}
                Query::Nothing => return Query::Nothing,
                Query::And(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        flat.dedup();
        match flat.len() {
            0 => Query::All,
            1 => flat.pop().unwrap_or(Query::All),
            _ => Query::And(flat),
        }
    }

    fn or(parts: Vec<Query>) -> Query {
        let mut flat = Vec::new();
        for part in parts {
            match part {
                Query::All => return Query::All,
                Query::Nothing => {}
                Query::Or(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        flat.dedup();
        match flat.len() {
            0 => Query::Nothing,
            1 => flat.pop().unwrap_or(Query::Nothing),
            _ => Query::Or(flat),
        }
    }

    /// Whether a file may satisfy the condition, given what is known of it:
    /// its sorted trigrams and its long-gram filter. What is not known (no
    /// trigrams given, no filter) is taken as satisfied.
    pub fn may_match(&self, trigrams: Option<&[u32]>, filter: Option<&dyn GramBits>) -> bool {
        match self {
            Query::All => true,
            Query::Nothing => false,
            Query::Trigram(key) => trigrams.is_none_or(|sorted| sorted.binary_search(key).is_ok()),
            Query::Gram(key) => filter.is_none_or(|filter| filter.may_hold(*key)),
            Query::ExactGram(key, upper) => {
                filter.is_none_or(|filter| filter.may_hold_exact(*key, *upper))
            }
            Query::And(parts) => parts.iter().all(|p| p.may_match(trigrams, filter)),
            Query::Or(parts) => parts.iter().any(|p| p.may_match(trigrams, filter)),
        }
    }
}

/// Exact sets larger than this become prefix/suffix/trigram conditions.
const MAX_EXACT: usize = 64;
/// Prefix and suffix sets larger than this are dropped (no information).
const MAX_AFFIX: usize = 64;
/// Boundary pairs (suffix x prefix) tried when concatenating.
const MAX_BOUNDARY: usize = 256;
/// Characters a class may hold and still be enumerated.
const MAX_CLASS_CHARS: u32 = 16;

/// What is known about the strings a sub-expression matches.
#[derive(Debug, Clone)]
struct Info {
    /// Every match is one of these (folded) strings, when known and small.
    exact: Option<Set>,
    /// Every match starts with one of these (at most 2 bytes each).
    prefix: Set,
    /// Every match ends with one of these (at most 2 bytes each).
    suffix: Set,
    /// Every text holding a match satisfies this.
    query: Query,
}

fn empty_set() -> Set {
    std::iter::once(Vec::new()).collect()
}

impl Info {
    fn exact(set: Set) -> Info {
        Info {
            exact: Some(set),
            prefix: empty_set(),
            suffix: empty_set(),
            query: Query::All,
        }
    }

    fn any() -> Info {
        Info {
            exact: None,
            prefix: empty_set(),
            suffix: empty_set(),
            query: Query::All,
        }
    }

    /// The same knowledge without an exact set.
    fn inexact(self) -> Info {
        let Some(exact) = self.exact else {
            return self;
        };
        Info {
            query: Query::and(vec![self.query, strings_query(&exact)]),
            prefix: trim_front(&exact),
            suffix: trim_back(&exact),
            exact: None,
        }
    }

    fn prefix_strings(&self) -> Set {
        self.exact
            .as_ref()
            .map_or_else(|| self.prefix.clone(), trim_front)
    }

    fn suffix_strings(&self) -> Set {
        self.exact
            .as_ref()
            .map_or_else(|| self.suffix.clone(), trim_back)
    }
}

/// Every string's first two bytes.
fn trim_front(set: &Set) -> Set {
    bounded(set.iter().map(|s| s[..s.len().min(2)].to_vec()).collect())
}

/// Every string's last two bytes.
fn trim_back(set: &Set) -> Set {
    bounded(
        set.iter()
            .map(|s| s[s.len().saturating_sub(2)..].to_vec())
            .collect(),
    )
}

fn bounded(set: Set) -> Set {
    if set.len() > MAX_AFFIX {
        empty_set()
    } else {
        set
    }
}

/// Any of the strings: all trigrams of one of them.
fn strings_query(set: &Set) -> Query {
    Query::or(set.iter().map(|s| string_query(s)).collect())
}

/// All trigrams of `text`, and all its long sparse n-grams (within lines).
fn string_query(text: &[u8]) -> Query {
    let mut parts: Vec<Query> = text
        .windows(3)
        .filter(|w| indexable(w))
        .map(|w| Query::Trigram(trigram(w[0], w[1], w[2])))
        .collect();
    for line in text.split(|&byte| byte == b'\n') {
        long_grams(line, |key| parts.push(Query::Gram(key)));
    }
    Query::and(parts)
}

/// The long sparse n-grams of a literal's bytes, their case as it is (a
/// literal never holds a line break: `matcher::parse` refuses one).
fn case_exact_grams(bytes: &[u8]) -> Query {
    let mut parts = Vec::new();
    long_grams_with_case(bytes, |key, upper| parts.push(Query::ExactGram(key, upper)));
    Query::and(parts)
}

/// Folds ASCII letters as the index does.
fn folded(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(|&b| super::ngram::fold(b)).collect()
}

fn analyze(hir: &Hir) -> Info {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::exact(empty_set()),
        HirKind::Literal(literal) => Info {
            // A literal matches its bytes exactly (case-insensitive
            // patterns hold classes wherever case matters): a file with a
            // match holds its long grams unfolded too.
            query: case_exact_grams(&literal.0),
            ..Info::exact(std::iter::once(folded(&literal.0)).collect())
        },
        HirKind::Class(class) => class_info(class),
        HirKind::Capture(capture) => analyze(&capture.sub),
        HirKind::Repetition(repetition) => {
            if repetition.min == 0 {
                return Info::any();
            }
            let sub = analyze(&repetition.sub);
            if repetition.max == Some(1) {
                return sub;
            }
            // At least one copy: whatever one copy needs, without exactness.
            sub.inexact()
        }
        HirKind::Concat(parts) => parts
            .iter()
            .map(analyze)
            .fold(Info::exact(empty_set()), concat),
        HirKind::Alternation(parts) => {
            let mut infos = parts.iter().map(analyze);
            let first = infos.next().unwrap_or_else(|| Info::exact(Set::new()));
            infos.fold(first, alternate)
        }
    }
}

fn class_info(class: &Class) -> Info {
    class_strings(class, MAX_CLASS_CHARS, folded).map_or_else(Info::any, Info::exact)
}

fn concat(left: Info, right: Info) -> Info {
    if let (Some(a), Some(b)) = (&left.exact, &right.exact)
        && a.len() * b.len() <= MAX_EXACT
    {
        return Info {
            query: Query::and(vec![left.query.clone(), right.query.clone()]),
            ..Info::exact(cross(a, b))
        };
    }
    let suffixes = left.suffix_strings();
    let prefixes = right.prefix_strings();
    let boundary = if suffixes.len() * prefixes.len() <= MAX_BOUNDARY {
        strings_query(&cross(&suffixes, &prefixes))
    } else {
        Query::All
    };
    let prefix = match &left.exact {
        Some(exact) => trim_front(&cross(exact, &right.prefix_strings())),
        None => left.prefix.clone(),
    };
    let suffix = match &right.exact {
        Some(exact) => trim_back(&cross(&left.suffix_strings(), exact)),
        None => right.suffix.clone(),
    };
    let left = left.inexact();
    let right = right.inexact();
    Info {
        exact: None,
        prefix,
        suffix,
        query: Query::and(vec![left.query, right.query, boundary]),
    }
}

fn alternate(left: Info, right: Info) -> Info {
    if let (Some(a), Some(b)) = (&left.exact, &right.exact)
        && a.len() + b.len() <= MAX_EXACT
    {
        let union: Set = a.union(b).cloned().collect();
        return Info {
            query: Query::or(vec![left.query.clone(), right.query.clone()]),
            ..Info::exact(union)
        };
    }
    let left = left.inexact();
    let right = right.inexact();
    Info {
        exact: None,
        prefix: bounded(left.prefix.union(&right.prefix).cloned().collect()),
        suffix: bounded(left.suffix.union(&right.suffix).cloned().collect()),
        query: Query::or(vec![left.query, right.query]),
    }
}

/// The trigram condition for a search query: `hir` is the query as
/// [`crate::matcher::parse`] gave it to the search's matcher. `All` when the
/// query cannot be narrowed.
pub fn plan(hir: &Hir) -> Query {
    let info = analyze(hir);
    // A bare exact set must be given its own condition here.
    let exact_query = info.exact.as_ref().map(strings_query);
    Query::and(vec![info.query, exact_query.unwrap_or(Query::All)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ngram::GramFilter;

    /// The plan of the query the search would make of these arguments.
    fn plan_of(pattern: &str, regex: bool, case_insensitive: bool) -> Query {
        plan(&crate::matcher::parse(pattern, !regex, case_insensitive).expect("valid"))
    }

    fn t(s: &str) -> Query {
        let b = s.as_bytes();
        Query::Trigram(trigram(b[0], b[1], b[2]))
    }

    /// The trigram part of a plan.
    fn trigrams_of(query: Query) -> Query {
        match query {
            Query::Gram(_) | Query::ExactGram(..) => Query::All,
            Query::And(parts) => Query::and(parts.into_iter().map(trigrams_of).collect()),
            Query::Or(parts) => Query::or(parts.into_iter().map(trigrams_of).collect()),
            other => other,
        }
    }

    fn grams_of(query: &Query) -> Vec<u32> {
        match query {
            Query::Gram(key) => vec![*key],
            Query::And(parts) | Query::Or(parts) => parts.iter().flat_map(grams_of).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn literals_need_all_their_trigrams() {
        assert_eq!(
            trigrams_of(plan_of("hello", false, false)),
            Query::And(vec![t("hel"), t("ell"), t("llo")])
        );
        // Literal means literal: the dot is a byte to find.
        assert_eq!(plan_of("a.b", false, false), t("a.b"));
        // Long enough for long grams: the file filters' part.
        assert!(!grams_of(&plan_of("handle_request", false, false)).is_empty());
        assert!(grams_of(&plan_of("abc", false, false)).is_empty());
        assert_eq!(plan_of("ab", false, false), Query::All);
    }

    fn exact_grams_of(query: &Query) -> Vec<u32> {
        match query {
            Query::ExactGram(key, _) => vec![*key],
            Query::And(parts) | Query::Or(parts) => parts.iter().flat_map(exact_grams_of).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn case_sensitive_literals_ask_for_their_grams_as_they_are() {
        let exact = |query: &Query| exact_grams_of(query).len();
        let constants = "pub const FINALIZE_VARIABLE_RESET: u32 = 1;\n"
            .repeat(super::super::ngram::CASE_EXACT_MIN_BYTES / 40);
        let filter = GramFilter::of(&mut constants.into_bytes()).expect("large");
        for (pattern, regex) in [
            ("finalize_variable_reset", false),
            (r"\bfinalize_variable_reset\s*[:=]", true),
            ("(?:finalize_variable_reset|FINALIZE_variable)", true),
        ] {
            let sensitive = plan_of(pattern, regex, false);
            assert!(exact(&sensitive) > 0, "{pattern}");
            assert!(!sensitive.may_match(None, Some(&filter)), "{pattern}");
            // Case-insensitive, the same file may match.
            let insensitive = plan_of(pattern, regex, true);
            assert!(insensitive.may_match(None, Some(&filter)), "{pattern}");
        }
        // What the file holds, in its case, it may match.
        for pattern in ["FINALIZE_VARIABLE_RESET", "const FINALIZE_VAR"] {
            assert!(plan_of(pattern, false, false).may_match(None, Some(&filter)));
        }
        // An optional literal asks for nothing.
        assert_eq!(exact(&plan_of("(?:finalize_variable)?x", true, false)), 0);
    }

    #[test]
    fn queries_without_a_literal_cannot_narrow() {
        for pattern in [".", r"\w+", "a*", "[a-z]+", "(?s).*", "x?y?z?"] {
            assert_eq!(plan_of(pattern, true, false), Query::All, "{pattern}");
        }
    }

    #[test]
    fn case_insensitive_plans_include_unicode_folds() {
        let query = plan_of("kelvin", false, true);
        let kelvin_sign = "\u{212A}elvin";
        let mut scratch = super::super::ngram::TrigramScratch::default();
        for text in ["KELVIN", "kelvin", kelvin_sign] {
            let trigrams = super::super::ngram::sorted_trigrams(&mut scratch, text.as_bytes());
            assert!(query.may_match(Some(&trigrams), None), "{text}");
            // A large file holding it: its filter agrees.
            let large = format!("{text}\n").repeat(super::super::ngram::FILTER_MIN_BYTES / 4);
            let filter = GramFilter::of(&mut large.into_bytes()).expect("large");
            assert!(query.may_match(None, Some(&filter)), "{text}");
        }
        let trigrams = super::super::ngram::sorted_trigrams(&mut scratch, b"kelvxn");
        assert!(!query.may_match(Some(&trigrams), None));
        let long_s = plan_of("class", false, true);
        let trigrams = super::super::ngram::sorted_trigrams(&mut scratch, "cla\u{17F}s".as_bytes());
        assert!(long_s.may_match(Some(&trigrams), None));
    }

    #[test]
    fn alternations_and_classes() {
        assert_eq!(
            trigrams_of(plan_of("foo|bar", true, false)),
            Query::Or(vec![t("bar"), t("foo")])
        );
        assert_eq!(
            trigrams_of(plan_of("fo[ox]", true, false)),
            Query::Or(vec![t("foo"), t("fox")])
        );
        assert_eq!(plan_of("foo|.", true, false), Query::All);
        assert_eq!(
            trigrams_of(plan_of(r"fn \w+_discount", true, false)),
            Query::And(vec![
                t("fn "),
                t("_di"),
                t("dis"),
                t("isc"),
                t("sco"),
                t("cou"),
                t("oun"),
                t("unt")
            ])
        );
    }
}
