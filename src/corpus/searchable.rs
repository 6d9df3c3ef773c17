//! Which files a search reads, and how: the searchable-file policy that the
//! search and the index apply alike, so that the index never rules out a
//! file the search would read, nor holds one it would skip.

use std::fs::File;
use std::io;

/// Bytes inspected to tell text from binary: one page, enough for the NUL
/// bytes and invalid UTF-8 of binary formats, which show in their headers.
pub const SNIFF_BYTES: usize = 4096;
/// Files larger than this are not searched (nor indexed, since a search
/// would skip them): it bounds what one file costs a call in memory (each
/// search thread holds a file whole) and in time, and larger files in a
/// source tree are data or generated, rarely what an agent looks for.
pub const MAX_SEARCHED_BYTES: u64 = 2 * 1024 * 1024;

/// Binary means a NUL byte, or bytes that are not UTF-8 (a multi-byte
/// character cut by the end of the sample does not count).
pub fn looks_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => false,
        Err(error) => error.error_len().is_some(),
    }
}

/// Reads an opened file of `expected` bytes (its size from `fstat`) whole
/// into `buffer` and returns its length: the file is `buffer[..length]`.
/// `None` when it is, or has grown, larger than [`MAX_SEARCHED_BYTES`], or a
/// read fails.
///
/// One `read` per file: the room is one byte more than `expected`, so a
/// read that stops short at or past `expected` has reached the end (a file
/// that grew fills the room, and reading goes on up to the cap). The buffer
/// keeps its length from file to file, so only the room it gains is zeroed.
pub fn read_searchable(file: &mut File, expected: u64, buffer: &mut Vec<u8>) -> Option<usize> {
    use std::io::Read;
    if expected > MAX_SEARCHED_BYTES {
        return None;
    }
    let cap = MAX_SEARCHED_BYTES as usize;
    let expected = expected as usize;
    let mut room = expected + 1;
    let mut filled = 0;
    loop {
        if buffer.len() < room {
            buffer.resize(room, 0);
        }
        match file.read(&mut buffer[filled..room]) {
            Ok(0) => return Some(filled),
            Ok(read) => {
                filled += read;
                if filled > cap {
                    return None;
                }
                if filled == room {
                    room = (room * 2).clamp(8 * 1024, cap + 1);
                } else if filled >= expected {
                    return Some(filled);
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Whether the searcher sees other bytes than `content`: it transcodes
/// files with a byte-order mark, stripping the mark and replacing bytes that
/// are not UTF-8. A file marked UTF-8 that is UTF-8 throughout (as editors
/// on Windows often write them) is its own bytes less the mark, which is
/// not transcoding as far as its text goes.
pub fn is_transcoded(content: &[u8]) -> bool {
    [&[0xFF, 0xFE][..], &[0xFE, 0xFF]]
        .iter()
        .any(|bom| content.starts_with(bom))
        || (content.starts_with(&[0xEF, 0xBB, 0xBF]) && std::str::from_utf8(content).is_err())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, crate::security::RootDir) {
        let (dir, root) = crate::security::temp_root(files);
        let opener = crate::security::RootDir::open(&root).unwrap();
        (dir, opener)
    }

    #[test]
    fn reads_whole_files_up_to_the_cap_into_a_reused_buffer() {
        let cap = MAX_SEARCHED_BYTES as usize;
        let at_cap = format!("{}needle\n", "x".repeat(cap - 7));
        let over_cap = format!("{at_cap}y");
        let (_d, root) = root_with(&[
            ("at_cap.txt", &at_cap),
            ("over_cap.txt", &over_cap),
            ("small.txt", "small\n"),
        ]);
        let mut buffer = Vec::new();
        // `expected` is the size fstat gave; a file may have grown or
        // shrunk since.
        let mut read = |name: &str, expected: u64| {
            let (mut file, _) = root.open_file(Path::new(name)).unwrap();
            read_searchable(&mut file, expected, &mut buffer)
        };
        assert_eq!(read("at_cap.txt", cap as u64), Some(cap));
        assert_eq!(read("over_cap.txt", cap as u64 + 1), None);
        assert_eq!(read("over_cap.txt", 10), None, "grown past the cap");
        assert_eq!(read("small.txt", 2), Some(6), "grown since the fstat");
        assert_eq!(read("small.txt", 100), Some(6), "shrunk since the fstat");
        assert_eq!(read("small.txt", 6), Some(6));
        assert_eq!(&buffer[..6], b"small\n");
        // The room of the largest file is kept for the next one.
        assert!(buffer.len() > cap);
    }

    #[test]
    fn sniff_allows_a_cut_multibyte_char() {
        let mut sample = "aé".as_bytes().to_vec();
        sample.pop();
        assert!(!looks_binary(&sample));
        assert!(looks_binary(b"a\xffb"));
        assert!(looks_binary(b"a\0b"));
    }

    #[test]
    fn only_marks_the_searcher_transcodes_count() {
        assert!(is_transcoded(b"\xFF\xFEa\0"));
        assert!(is_transcoded(b"\xFE\xFF\0a"));
        assert!(is_transcoded(b"\xEF\xBB\xBFa\xFFb"));
        assert!(!is_transcoded("\u{FEFF}alpha".as_bytes()));
        assert!(!is_transcoded(b"plain"));
    }
}
