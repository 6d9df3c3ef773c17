//! Trigrams and their posting lists.
//!
//! A trigram is three consecutive bytes of a file, ASCII letters folded to
//! lower case, packed into the low 24 bits of a `u32`. Windows that contain
//! a line break are not indexed: a search matches within one line, so no
//! query ever needs them. Folding makes a case-insensitive query as cheap as
//! a case-sensitive one and shrinks the index; a case-sensitive query gets a
//! few more candidates, which the searcher then rejects.
//!
//! Large files hold most trigrams of most identifiers somewhere, so the
//! trigrams alone admit them for nearly every query. Files of at least
//! [`FILTER_MIN_BYTES`] therefore also get a [`GramFilter`]: a Bloom filter
//! of their sparse n-grams of 4 to 8 bytes (GitHub code search's selection,
//! from the `sparse-ngrams` crate). Whether a substring is a sparse n-gram
//! depends only on its own bytes, so every sparse n-gram of a query's literal
//! is one of any file that holds the literal: a filter that lacks one rules
//! the file out. The largest files with much upper case also keep their
//! grams with the case as it is, for case-sensitive literals
//! ([`CASE_EXACT_MIN_BYTES`]).
//!

/// One folded byte.
pub fn fold(byte: u8) -> u8 {
    byte.to_ascii_lowercase()
}

pub fn trigram(a: u8, b: u8, c: u8) -> u32 {
    (u32::from(fold(a)) << 16) | (u32::from(fold(b)) << 8) | u32::from(fold(c))
}

/// Whether the trigram can be in the index (no line break in it).
pub fn indexable(window: &[u8]) -> bool {
    !window.contains(&b'\n')
}

/// Bits in the scratch set that [`distinct_trigrams`] uses: one per trigram.
const TRIGRAM_SPACE: usize = 1 << 24;

/// Scratch space for collecting one file's distinct trigrams: a bit per
/// possible trigram (2 MiB), cleared again after each file.
pub struct TrigramScratch {
    seen: Vec<u64>,
}

impl Default for TrigramScratch {
    fn default() -> Self {
        Self {
            seen: vec![0; TRIGRAM_SPACE / 64],
        }
    }
}

impl TrigramScratch {
    /// Appends the distinct indexable trigrams of `content` to `out`
    /// (unsorted) and leaves the scratch set clear.
    pub fn distinct(&mut self, content: &[u8], out: &mut Vec<u32>) {
        let start = out.len();
        for window in content.windows(3) {
            if !indexable(window) {
                continue;
            }
            let key = trigram(window[0], window[1], window[2]);
            let (word, bit) = ((key >> 6) as usize, 1u64 << (key & 63));
            if self.seen[word] & bit == 0 {
                self.seen[word] |= bit;
                out.push(key);
            }
        }
        for &key in &out[start..] {
            self.seen[(key >> 6) as usize] = 0;
        }
    }
}

/// The sorted distinct trigrams of `content` (what a query of `content`
/// asks the index for).
#[cfg(test)]
pub fn sorted_trigrams(scratch: &mut TrigramScratch, content: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    scratch.distinct(content, &mut out);
    out.sort_unstable();
    out.shrink_to_fit();
    out
}

/// Files at least this large get a [`GramFilter`]; smaller ones cost little
/// to read even when the trigrams admit them, while files of a few dozen
/// KiB already hold every trigram of many identifiers (the bench measures
/// the bytes a search reads). On u-boot a bound of 4 KiB opened 9 % fewer
/// files for rare identifiers, for an 11 % longer build and 9 % more cache.
pub const FILTER_MIN_BYTES: usize = 16 * 1024;

/// Filter bits per byte of the file: one bit per three bytes, rounded up
/// to a power of two, about seven to fourteen bits per distinct gram on
/// source code: with three probes, few false "may hold" answers, each of
/// which costs only a read.
const FILTER_BYTES_PER_BIT: usize = 3;

/// Bits set per gram.
const FILTER_PROBES: u64 = 3;

/// The longest sparse n-gram, in bytes.
const LONGEST_GRAM: usize = 8;

/// Calls `found` with the key and the bytes of every sparse n-gram of 4 to
/// [`LONGEST_GRAM`] bytes of `text` (folded as [`fold`] does, or as it is).
fn long_grams_in(text: &[u8], mut found: impl FnMut(u32, &[u8])) {
    sparse_ngrams::collect_sparse_grams_scan(text, |gram, end| {
        if gram.len() >= 4 {
            let end = end as usize;
            found(gram.as_u32(), &text[end - gram.len()..end]);
        }
    });
}

/// Calls `found` with the key of every long sparse n-gram of `text`.
pub fn long_grams(text: &[u8], mut found: impl FnMut(u32)) {
    long_grams_in(text, |key, _| found(key));
}

/// [`long_grams`], with whether each gram holds an upper-case ASCII letter.
pub fn long_grams_with_case(text: &[u8], mut found: impl FnMut(u32, bool)) {
    long_grams_in(text, |key, gram| {
        found(key, gram.iter().any(u8::is_ascii_uppercase));
    });
}

/// A Bloom filter of one large file's long sparse n-grams: answers "may
/// hold" or "surely does not".
#[derive(Debug)]
pub struct GramFilter {
    words: Box<[u64]>,
    case: FilterCase,
}

/// What a query asks of a large file's filter: whether it may hold a gram.
pub trait GramBits {
    /// The filter's size in bits (a power of two) and its case mode.
    fn shape(&self) -> (usize, FilterCase);
    /// Whether bit `bit` is set.
    fn bit(&self, bit: usize) -> bool;

    /// Whether the file may hold the folded gram `key` (false: it surely
    /// does not).
    fn may_hold(&self, key: u32) -> bool {
        probes(key, self.shape().0).all(|bit| self.bit(bit))
    }

    /// Whether the file may hold the gram `key` with its letters' case as
    /// they are; `upper`: the gram holds an upper-case ASCII letter.
    fn may_hold_exact(&self, key: u32, upper: bool) -> bool {
        match self.shape().1 {
            FilterCase::Folded => true,
            // The gram is its folded self, or one that cannot be there.
            FilterCase::NoUpperCase => !upper && self.may_hold(key),
            FilterCase::Exact => self.may_hold(key | CASE_EXACT),
        }
    }
}

impl GramBits for GramFilter {
    fn shape(&self) -> (usize, FilterCase) {
        (self.words.len() * 64, self.case)
    }

    fn bit(&self, bit: usize) -> bool {
        self.words[bit / 64] & (1 << (bit % 64)) != 0
    }
}

/// A filter read in place from a segment: its words little-endian.
pub struct MappedFilter<'a> {
    case: FilterCase,
    words: &'a [u8],
}

impl<'a> MappedFilter<'a> {
    /// The filter [`GramFilter::parts`] wrote: a power of two of words;
    /// `None` for anything else.
    pub fn new(case: u8, words: &'a [u8]) -> Option<Self> {
        let case = match case {
            0 => FilterCase::Folded,
            1 => FilterCase::NoUpperCase,
            2 => FilterCase::Exact,
            _ => return None,
        };
        if !words.len().is_multiple_of(8) || !(words.len() / 8).is_power_of_two() {
            return None;
        }
        Some(MappedFilter { case, words })
    }
}

impl GramBits for MappedFilter<'_> {
    fn shape(&self) -> (usize, FilterCase) {
        (self.words.len() * 8, self.case)
    }

    fn bit(&self, bit: usize) -> bool {
        // Word `bit / 64` little-endian: its byte `bit % 64 / 8`.
        self.words[bit / 8] & (1 << (bit % 8)) != 0
    }
}

/// Files at least this large, with at least one upper-case letter in
/// [`CASE_EXACT_UPPER_SHARE`], also keep their long grams with the letters'
/// case as it is. Folded grams alone let a case-sensitive `finalize_reset`
/// admit every file of `FINALIZE_...` constants (generated bindings are
/// full of them); the larger files have the room in their filters. The
/// second pass costs the build about as much as the first, so files with
/// little upper case go without it.
pub const CASE_EXACT_MIN_BYTES: usize = 64 * 1024;

/// One letter in this many upper case makes a large file keep its case.
const CASE_EXACT_UPPER_SHARE: usize = 4;

/// Marks the key of a gram kept with its case (folded keys use the low 27
/// bits only).
const CASE_EXACT: u32 = 1 << 31;

/// What a filter knows of its file's letter case.
#[derive(Debug, Clone, Copy)]
pub enum FilterCase {
    /// Folded grams only: a file below [`CASE_EXACT_MIN_BYTES`], or with
    /// little upper case.
    Folded,
    /// The file holds no upper-case ASCII letter: its grams are their
    /// folded selves.
    NoUpperCase,
    /// Folded grams, and the grams as they are under [`CASE_EXACT`].
    Exact,
}

impl GramFilter {
    /// The filter of `content` when it is at least [`FILTER_MIN_BYTES`]
    /// long; `content` is folded in place.
    pub fn of(content: &mut [u8]) -> Option<GramFilter> {
        if content.len() < FILTER_MIN_BYTES {
            return None;
        }
        let bits = filter_bits(content.len());
        let mut words = vec![0u64; bits / 64].into_boxed_slice();
        if content.len() < CASE_EXACT_MIN_BYTES {
            // As [`fold`] does.
            content.make_ascii_lowercase();
            insert_grams(&mut words, content, 0);
            return Some(GramFilter {
                words,
                case: FilterCase::Folded,
            });
        }
        // The work is halved between this thread and one more, on the core
        // the build otherwise leaves idle. Both sets of bits are allocated
        // here, so the helper leaves no memory in an allocator arena of its
        // own.
        let mut spare = vec![0u64; bits / 64];
        let case = letter_case(content);
        if let FilterCase::Exact = case {
            insert_on_two_threads([&mut words, &mut spare], halves(content), CASE_EXACT);
        }
        content.make_ascii_lowercase();
        insert_on_two_threads([&mut words, &mut spare], halves(content), 0);
        for (word, more) in words.iter_mut().zip(spare) {
            *word |= more;
        }
        Some(GramFilter { words, case })
    }

    /// What [`GramFilter::of`] takes for a file of `len` bytes, as
    /// [`GramFilter::bytes`] counts it; 0 when the file gets none.
    pub fn bytes_for(len: u64) -> usize {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len < FILTER_MIN_BYTES {
            return 0;
        }
        filter_bits(len) / 8 + std::mem::size_of::<GramFilter>()
    }

    /// Its case mode as a number and its bits, as the cache keeps them.
    pub fn parts(&self) -> (u8, &[u64]) {
        let case = match self.case {
            FilterCase::Folded => 0,
            FilterCase::NoUpperCase => 1,
            FilterCase::Exact => 2,
        };
        (case, &self.words)
    }

    /// Its bits and its handle, in bytes.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.words.len() * 8 + std::mem::size_of::<GramFilter>()
    }
}

/// What the filter of a file of at least [`CASE_EXACT_MIN_BYTES`] keeps
/// of its letters' case.
fn letter_case(content: &[u8]) -> FilterCase {
    let (mut upper, mut lower) = (0, 0);
    for byte in content {
        upper += usize::from(byte.is_ascii_uppercase());
        lower += usize::from(byte.is_ascii_lowercase());
    }
    if upper == 0 {
        FilterCase::NoUpperCase
    } else if upper * CASE_EXACT_UPPER_SHARE >= upper + lower {
        FilterCase::Exact
    } else {
        FilterCase::Folded
    }
}

/// The two halves of `text`, overlapping so that every gram lies whole in
/// one of them.
fn halves(text: &[u8]) -> [&[u8]; 2] {
    let middle = text.len() / 2;
    [&text[..middle], &text[middle - (LONGEST_GRAM - 1)..]]
}

/// Sets the bits of the long grams of `text` in the filter `words`, their
/// keys marked with `mark` ([`CASE_EXACT`] or 0).
fn insert_grams(words: &mut [u64], text: &[u8], mark: u32) {
    let bits = words.len() * 64;
    long_grams(text, |key| {
        for bit in probes(key | mark, bits) {
            words[bit / 64] |= 1 << (bit % 64);
        }
    });
}

/// [`insert_grams`] of each text into its own set of bits, the second on a
/// thread of its own (here, when none can be had).
fn insert_on_two_threads([mine, theirs]: [&mut [u64]; 2], [first, second]: [&[u8]; 2], mark: u32) {
    let helped = std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .spawn_scoped(scope, || insert_grams(theirs, second, mark))
            .ok();
        insert_grams(mine, first, mark);
        helper.is_some_and(|helper| helper.join().is_ok())
    });
    if !helped {
        insert_grams(theirs, second, mark);
    }
}

/// A filter's size in bits for a file of `len` bytes: a power of two, so
/// probes are masked rather than divided.
fn filter_bits(len: usize) -> usize {
    (len / FILTER_BYTES_PER_BIT).next_power_of_two()
}

/// The bits of `key` in a filter of `bits` bits (a power of two), by double
/// hashing.
fn probes(key: u32, bits: usize) -> impl Iterator<Item = usize> {
    let hash = u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let (first, step) = (hash >> 32, (hash & 0xFFFF_FFFF) | 1);
    (0..FILTER_PROBES)
        .map(move |i| (first.wrapping_add(i.wrapping_mul(step)) as usize) & (bits - 1))
}

/// What the index knows of one file's contents.
#[derive(Debug)]
pub struct FileGrams {
    /// Its distinct trigrams, in no order.
    pub trigrams: Vec<u32>,
    /// The hash of the text they were taken from.
    pub hash: super::segment::ContentHash,
    /// Its long grams, when it is large.
    pub filter: Option<GramFilter>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigrams_fold_ascii_and_skip_line_breaks() {
        let mut scratch = TrigramScratch::default();
        let found = sorted_trigrams(&mut scratch, b"AbC\nabc");
        assert_eq!(found, vec![trigram(b'a', b'b', b'c')]);
        // The scratch set is clear again.
        assert!(scratch.seen.iter().all(|&w| w == 0));
        let kelvin = "\u{212A}".as_bytes();
        let found = sorted_trigrams(&mut scratch, kelvin);
        assert_eq!(found, vec![trigram(kelvin[0], kelvin[1], kelvin[2])]);
    }

    fn long_gram_set(text: &[u8]) -> std::collections::HashSet<u32> {
        let mut set = std::collections::HashSet::new();
        long_grams(text, |key| {
            set.insert(key);
        });
        set
    }

    proptest::proptest! {
        /// The property the filters rest on: every long gram of a string is
        /// one of any text that holds the string, whatever surrounds it
        /// (repeated bytes, non-ASCII bytes, line breaks around it).
        #[test]
        fn a_text_holds_every_long_gram_of_its_substrings(
            before in proptest::collection::vec(proptest::sample::select(b"abcab_X\n\xc3\x84 ".to_vec()), 0..24),
            needle in proptest::collection::vec(proptest::sample::select(b"abcab_x\xc3\x84 ".to_vec()), 4..24),
            after in proptest::collection::vec(proptest::sample::select(b"abcab_X\n\xc3\x84 ".to_vec()), 0..24),
        ) {
            let text = [before, needle.clone(), after].concat();
            let held = long_gram_set(&text);
            for key in long_gram_set(&needle) {
                proptest::prop_assert!(held.contains(&key));
            }
        }
    }

    /// A large text made of `words`, one per line, cycling.
    fn large_text(words: &[&str]) -> Vec<u8> {
        text_of(words, FILTER_MIN_BYTES)
    }

    fn query_grams(needle: &str) -> Vec<u32> {
        let folded: Vec<u8> = needle.bytes().map(fold).collect();
        long_gram_set(&folded).into_iter().collect()
    }

    #[test]
    fn filters_hold_the_long_grams_of_what_the_file_holds() {
        let small = GramFilter::of(&mut b"small file".to_vec());
        assert!(small.is_none(), "small files need no filter");
        let text = large_text(&["let parse_frobnicate_header = 1;", "OTHER_Stuff();"]);
        let filter = GramFilter::of(&mut text.clone()).expect("large");
        let bits = (text.len() / FILTER_BYTES_PER_BIT).next_power_of_two();
        assert_eq!(filter.bytes(), bits / 8 + std::mem::size_of::<GramFilter>());
        assert_eq!(GramFilter::bytes_for(text.len() as u64), filter.bytes());
        assert_eq!(GramFilter::bytes_for(FILTER_MIN_BYTES as u64 - 1), 0);
        // Folded as the trigrams are: either case finds it.
        for needle in ["parse_frobnicate_header", "PARSE_FROBNICATE", "other_stuff"] {
            let grams = query_grams(needle);
            assert!(!grams.is_empty());
            assert!(grams.iter().all(|&key| filter.may_hold(key)), "{needle}");
        }
    }

    #[test]
    fn a_filter_read_in_place_from_its_bytes_answers_as_the_filter() {
        let text = large_text(&["let parse_frobnicate_header = 1;", "OTHER_Stuff();"]);
        let filter = GramFilter::of(&mut text.clone()).expect("large");
        let (case, words) = filter.parts();
        let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
        let mapped = MappedFilter::new(case, &bytes).expect("as written");
        assert_eq!(mapped.shape().0, filter.shape().0);
        for key in (0..200_000u32).map(|k| k.wrapping_mul(2_654_435_761)) {
            assert_eq!(mapped.may_hold(key), filter.may_hold(key), "{key}");
            assert_eq!(
                mapped.may_hold_exact(key, key % 2 == 0),
                filter.may_hold_exact(key, key % 2 == 0),
                "{key}"
            );
        }
        // Anything else is refused: not a power of two of words, a case
        // mode no writer makes.
        assert!(MappedFilter::new(case, &bytes[..bytes.len() - 8]).is_none());
        assert!(MappedFilter::new(case, &bytes[..12]).is_none());
        assert!(MappedFilter::new(3, &bytes).is_none());
    }

    #[test]
    fn filters_rule_out_a_word_whose_trigrams_are_all_there() {
        // Every trigram of "handle_request" is in this text, the word is not.
        let text = large_text(&["xhandlex", "the_request", "le_re", "e_r", "_req"]);
        let mut scratch = TrigramScratch::default();
        let trigrams = sorted_trigrams(&mut scratch, &text);
        let needle = b"handle_request";
        assert!(
            needle
                .windows(3)
                .all(|w| trigrams.binary_search(&trigram(w[0], w[1], w[2])).is_ok())
        );
        let filter = GramFilter::of(&mut text.clone()).expect("large");
        let grams = query_grams("handle_request");
        assert!(!grams.iter().all(|&key| filter.may_hold(key)));
    }

    /// The grams a case-sensitive query asks the filter for, as it is.
    fn exact_grams(needle: &str) -> Vec<(u32, bool)> {
        let mut grams = Vec::new();
        long_grams_with_case(needle.as_bytes(), |key, upper| grams.push((key, upper)));
        assert!(!grams.is_empty(), "{needle}");
        grams
    }

    fn holds_exactly(filter: &GramFilter, needle: &str) -> bool {
        exact_grams(needle)
            .into_iter()
            .all(|(key, upper)| filter.may_hold_exact(key, upper))
    }

    fn holds_folded(filter: &GramFilter, needle: &str) -> bool {
        query_grams(needle).iter().all(|&key| filter.may_hold(key))
    }

    /// Repeats `lines` until the text is at least `len` bytes.
    fn text_of(lines: &[&str], len: usize) -> Vec<u8> {
        let mut text = Vec::new();
        while text.len() < len {
            for line in lines {
                text.extend_from_slice(line.as_bytes());
                text.push(b'\n');
            }
        }
        text
    }

    #[test]
    fn the_largest_files_keep_the_case_of_their_grams() {
        let lines = [
            "pub const FINALIZE_VARIABLE_RESET: u32 = 1;",
            "fn Mixed_Case_Word() {}",
        ];
        let mut text = text_of(&lines, CASE_EXACT_MIN_BYTES);
        let filter = GramFilter::of(&mut text).expect("large");
        // Case-sensitive: only the case the file holds.
        assert!(holds_exactly(&filter, "FINALIZE_VARIABLE_RESET"));
        assert!(holds_exactly(&filter, "Mixed_Case_Word"));
        assert!(!holds_exactly(&filter, "finalize_variable_reset"));
        assert!(!holds_exactly(&filter, "mixed_case_word"));
        // Case-insensitive: every case, as before.
        assert!(holds_folded(&filter, "finalize_variable_reset"));
        assert!(holds_folded(&filter, "MIXED_CASE_WORD"));

        // A file without upper case: its grams are their folded selves.
        let mut lower = text_of(&["let finalize_variable_reset = 1;"], CASE_EXACT_MIN_BYTES);
        let filter = GramFilter::of(&mut lower).expect("large");
        assert!(holds_exactly(&filter, "finalize_variable_reset"));
        assert!(!holds_exactly(&filter, "Finalize_variable_reset"));
        assert!(holds_folded(&filter, "FINALIZE_VARIABLE_RESET"));

        // A large file with little upper case keeps folded grams only.
        let mut prose = text_of(
            &["fn Mixed_Case_Word() { let finalize_variable_reset_and_more = 1; }"],
            CASE_EXACT_MIN_BYTES,
        );
        let filter = GramFilter::of(&mut prose).expect("large");
        assert!(holds_exactly(&filter, "mixed_case_word"));
        assert!(holds_folded(&filter, "mixed_case_word"));

        // Below the size, folded grams only: the case is not known.
        let mut smaller = text_of(&lines, FILTER_MIN_BYTES);
        assert!(smaller.len() < CASE_EXACT_MIN_BYTES);
        let filter = GramFilter::of(&mut smaller).expect("filtered");
        assert!(holds_exactly(&filter, "finalize_variable_reset"));
        assert!(holds_folded(&filter, "finalize_variable_reset"));
    }

    #[test]
    fn a_filter_built_in_two_halves_holds_every_gram_of_the_whole() {
        // One word in blank filler, placed so that the middle of the text
        // falls at each of its bytes in turn: its grams occur nowhere else.
        let word = b"QX7_UNIQUE_marker_ZQ9";
        let len = CASE_EXACT_MIN_BYTES * 2;
        for shift in 0..word.len() {
            let mut text = vec![b' '; len];
            let at = len / 2 - shift;
            text[at..at + word.len()].copy_from_slice(word);
            let filter = GramFilter::of(&mut text).expect("large");
            assert!(matches!(filter.case, FilterCase::Exact));
            long_grams(&word.to_ascii_lowercase(), |key| {
                assert!(filter.may_hold(key), "shift {shift}");
            });
            long_grams_with_case(word, |key, upper| {
                assert!(filter.may_hold_exact(key, upper), "shift {shift}");
            });
        }
    }
}
