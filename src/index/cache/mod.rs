//! Where the index is kept between sessions: one folder per canonical
//! project root inside the user's cache folder (or `[index] cache_dir`),
//! never inside the root. A folder holds committed segments, the manifest
//! that names them, a lock file, a mark of its last use and the marker
//! that says this program made it (eviction removes nothing without it).
//!
//! One writer at a time holds the lock; it writes new segments, then
//! commits them by replacing the manifest atomically. Readers need no
//! lock: they read the manifest and map the segments it names, which are
//! never changed once written, so a server killed at any moment leaves
//! the previous manifest and its segments in place. Segments no manifest
//! names any more are removed by the next writer.

mod evict;
pub mod private;
mod status;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use evict::evict_over_budget;
pub use status::{clear, status};

use super::segment::{
    FILE_RECORD_BYTES, FileRecord, LOOKUP_BYTES, MAX_NAME_BYTES, Segment, SegmentError, store,
    write_segment,
};
use crate::config::IndexCacheConfig;

/// The folder inside the user's cache folder.
pub const APP_FOLDER: &str = "mcp-project-helper";
const MANIFEST: &str = "manifest";
const LOCK: &str = "lock";
const USED: &str = "used";
/// Written when a folder is created; only folders holding it are evicted.
const MARKER: &str = "mcp-project-helper-cache";
const MANIFEST_FIRST_LINE: &str = "mcp-project-helper index 2";
/// A manifest longer than this is damaged: it names a few dozen segments
/// and their dead ids, which merges keep under half of each segment's.
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
const MAX_SEGMENT_NAME: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("the index is kept in memory only ([index] persist = false)")]
    Off,
    #[error(
        "no cache folder: none of XDG_CACHE_HOME, HOME or LOCALAPPDATA is set; set [index] cache_dir"
    )]
    NoCacheFolder,
    #[error(
        "the cache folder {0} lies inside the project root; the index is never kept there: set [index] cache_dir elsewhere"
    )]
    InsideRoot(PathBuf),
    #[error(
        "the cache folder {0} has a `..` in its path, which could lead anywhere: name it without one"
    )]
    DotDot(PathBuf),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "this root's index alone takes more than [index] max_disk_mb ({} MB): its cache is given up and the index kept in memory",
        budget / (1024 * 1024)
    )]
    OverBudget { budget: u64 },
    #[error("manifest damaged: {0}")]
    Manifest(&'static str),
    #[error("{path}: {source}")]
    Segment { path: PathBuf, source: SegmentError },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The folder that holds every root's cache folder.
pub fn base_folder(config: &IndexCacheConfig) -> Result<PathBuf, CacheError> {
    if !config.persist {
        return Err(CacheError::Off);
    }
    // An operator's folder may hold anything: ours is a subfolder of it,
    // so that eviction never looks at what the operator keeps there.
    if let Some(dir) = &config.cache_dir {
        return Ok(dir.join(APP_FOLDER));
    }
    // XDG_CACHE_HOME wins wherever it is set (a user who sets it on macOS
    // or Windows means it), then %LOCALAPPDATA% as the variable says, then
    // the platform's own answer.
    let from_env = |name| std::env::var_os(name).map(PathBuf::from);
    from_env("XDG_CACHE_HOME")
        .or_else(|| cfg!(windows).then(|| from_env("LOCALAPPDATA")).flatten())
        .filter(|dir| dir.is_absolute())
        .or_else(dirs::cache_dir)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(APP_FOLDER))
        .ok_or(CacheError::NoCacheFolder)
}

/// A root's folder name: its last component, made safe and short, for
/// the reader, then a hash of the whole canonical path.
pub fn folder_name(root: &Path) -> String {
    let readable: String = root
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let hash = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hex: String = hash[..8].iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{hex}",
        if readable.is_empty() {
            "root"
        } else {
            &readable
        }
    )
}

/// Whether `name` is a folder [`folder_name`] could have made.
fn is_folder_name(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(readable, hex)| {
        !readable.is_empty()
            && readable.len() <= 32
            && hex.len() == 16
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// A committed segment: its file's name, the id of its first file (its
/// files' ids follow on) and the runs of its local ids that are dead (its
/// tombstones). See the manifest's grammar in `segment/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub name: String,
    pub first_id: u32,
    /// Increasing, apart, never empty; not yet checked against the
    /// segment's file count.
    pub dead: Vec<std::ops::Range<u32>>,
}

impl Committed {
    pub fn new(name: impl Into<String>, first_id: u32) -> Self {
        Committed {
            name: name.into(),
            first_id,
            dead: Vec::new(),
        }
    }

    /// Its dead runs as the manifest writes them: `-` for none, else
    /// `a-b` (inclusive) or `a`, joined by commas.
    fn dead_text(&self) -> String {
        if self.dead.is_empty() {
            return "-".to_string();
        }
        let runs: Vec<String> = self
            .dead
            .iter()
            .map(|run| match run.end - run.start {
                1 => run.start.to_string(),
                _ => format!("{}-{}", run.start, run.end - 1),
            })
            .collect();
        runs.join(",")
    }

    /// The runs `text` gives; `None` unless increasing, apart and numbers.
    fn parse_dead(text: &str) -> Option<Vec<std::ops::Range<u32>>> {
        if text == "-" {
            return Some(Vec::new());
        }
        let number = |digits: &str| {
            digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| digits.parse::<u32>().ok())
                .flatten()
        };
        let mut runs: Vec<std::ops::Range<u32>> = Vec::new();
        for run in text.split(',') {
            let (first, last) = match run.split_once('-') {
                Some((first, last)) => (number(first)?, number(last)?),
                None => (number(run)?, number(run)?),
            };
            let end = last.checked_add(1)?;
            if first > last || runs.last().is_some_and(|previous| previous.end >= first) {
                return None;
            }
            runs.push(first..end);
        }
        Some(runs)
    }
}

/// One root's cache folder.
#[derive(Debug, Clone)]
pub struct RootCache {
    folder: PathBuf,
    /// The canonical root, as segments record it.
    root: String,
}

/// The writer's lock, released when dropped (closing the file releases it,
/// also when the process is killed).
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl RootCache {
    /// Where the cache of `root` (canonical) lives; nothing is created.
    pub fn locate(config: &IndexCacheConfig, root: &Path) -> Result<RootCache, CacheError> {
        let base = base_folder(config)?;
        let folder = base.join(folder_name(root));
        if folder
            .components()
            .any(|part| part == std::path::Component::ParentDir)
        {
            return Err(CacheError::DotDot(folder));
        }
        if resolved(&folder).starts_with(root) || is_below_folder(&folder, root) {
            return Err(CacheError::InsideRoot(folder));
        }
        Ok(RootCache {
            folder,
            root: super::segment::root_text(root),
        })
    }

    pub fn folder(&self) -> &Path {
        &self.folder
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// Creates the folder and the base folder, the user's alone; both must
    /// be real folders of the user's (the base's own parent, such as
    /// `~/.cache`, may be a link). The folder gets this program's marker.
    pub fn create(&self) -> Result<(), CacheError> {
        if let Some(base) = self.folder.parent() {
            private::create_folder(base).map_err(io_error(base))?;
        }
        private::create_folder(&self.folder).map_err(io_error(&self.folder))?;
        let marker = self.folder.join(MARKER);
        private::open_kept_file(&marker).map_err(io_error(&marker))?;
        Ok(())
    }

    /// The writer's lock, or `None` while another server holds it.
    pub fn try_lock_writer(&self) -> Result<Option<WriterLock>, CacheError> {
        let path = self.folder.join(LOCK);
        let file = private::open_kept_file(&path).map_err(io_error(&path))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(WriterLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error)) => Err(io_error(&path)(error)),
        }
    }

    /// Records that a server used this folder now (eviction goes by it).
    pub fn mark_used(&self) -> Result<(), CacheError> {
        let path = self.folder.join(USED);
        private::open_kept_file(&path)
            .and_then(|file| file.set_modified(std::time::SystemTime::now()))
            .map_err(io_error(&path))
    }

    /// The segments the manifest names, in the order it names them; none
    /// when there is no manifest yet.
    pub fn committed(&self) -> Result<Vec<Committed>, CacheError> {
        let path = self.folder.join(MANIFEST);
        let file = match private::open_checked(&path, MAX_MANIFEST_BYTES) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io_error(&path)(error)),
        };
        let mut text = String::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|_| CacheError::Manifest("not UTF-8 text"))?;
        if text.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(CacheError::Manifest("too long"));
        }
        parse_manifest(&text)
    }

    /// Maps and checks the committed segment `name`, refused unopened when
    /// it is larger than `max_bytes` (see [`segment_bound`]).
    pub fn open_segment(&self, name: &str, max_bytes: u64) -> Result<Segment, CacheError> {
        let path = self.folder.join(name);
        let file = private::open_checked(&path, max_bytes).map_err(io_error(&path))?;
        Segment::open(&file, &self.root).map_err(|source| CacheError::Segment { path, source })
    }

    /// Writes the segment `bytes` (not yet committed) and returns its name.
    pub fn store_segment(&self, _lock: &WriterLock, bytes: &[u8]) -> Result<String, CacheError> {
        let name = new_segment_name();
        store(&self.folder, &name, bytes).map_err(|source| CacheError::Segment {
            path: self.folder.join(&name),
            source,
        })?;
        Ok(name)
    }

    /// Writes a new segment (not yet committed) and returns its name.
    pub fn write_segment(
        &self,
        lock: &WriterLock,
        files: &[FileRecord],
        postings: impl IntoIterator<Item = (u32, Vec<u32>)>,
    ) -> Result<String, CacheError> {
        let (name, _) = self.write_segment_with(lock, |folder, name, root| {
            write_segment(folder, name, root, files, postings)
        })?;
        Ok(name)
    }

    /// Has `write` write a new segment (not yet committed), given the cache
    /// folder, the segment's file name and the root: the name and what
    /// `write` returned. A segment `write` fails on is removed.
    pub fn write_segment_with<T>(
        &self,
        _lock: &WriterLock,
        write: impl FnOnce(&Path, &str, &str) -> Result<T, SegmentError>,
    ) -> Result<(String, T), CacheError> {
        let name = new_segment_name();
        match write(&self.folder, &name, &self.root) {
            Ok(written) => Ok((name, written)),
            Err(source) => {
                let path = self.folder.join(&name);
                let _ = std::fs::remove_file(&path);
                Err(CacheError::Segment { path, source })
            }
        }
    }

    /// Makes `segments` the committed set, then removes the segments and
    /// temporary files no manifest names (those a killed writer left).
    /// A reader that still maps a removed one keeps its pages (on Windows,
    /// where a mapped file cannot be removed, it goes at a later commit).
    pub fn commit(&self, _lock: &WriterLock, segments: &[Committed]) -> Result<(), CacheError> {
        let mut text = format!("{MANIFEST_FIRST_LINE}\n");
        for segment in segments {
            if !is_segment_name(&segment.name) {
                return Err(CacheError::Manifest(
                    "a segment name this program never makes",
                ));
            }
            let (name, first_id) = (&segment.name, segment.first_id);
            text.push_str(&format!(
                "segment {name} {first_id} {}\n",
                segment.dead_text()
            ));
        }
        text.push_str(&format!("check {:08x}\n", crc32fast::hash(text.as_bytes())));
        private::write_atomically(&self.folder, MANIFEST, text.as_bytes())
            .map_err(io_error(&self.folder))?;
        self.remove_all_but(segments)
    }

    /// Removes the segments and temporary files the manifest does not name:
    /// what a writer killed before its commit left. Only the writer calls
    /// it, so nothing it removes is being written.
    pub fn remove_uncommitted(&self, _lock: &WriterLock) -> Result<(), CacheError> {
        self.remove_all_but(&self.committed()?)
    }

    fn remove_all_but(&self, segments: &[Committed]) -> Result<(), CacheError> {
        let entries = std::fs::read_dir(&self.folder).map_err(io_error(&self.folder))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let stale = (is_segment_name(&name) && !segments.iter().any(|kept| kept.name == name))
                || (name.starts_with('.') && name.ends_with(".tmp"));
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }
}

/// `path` with its longest existing prefix resolved (links and all), so
/// that a cache folder reached through a link into the root is caught.
fn resolved(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(canonical) = dunce::canonicalize(ancestor) {
            let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return canonical.join(rest);
        }
    }
    path.to_path_buf()
}

/// Whether one of `path`'s existing ancestors is the folder `root` itself
/// under another path (a bind mount of the project, say): same device,
/// same inode. Windows has no such mounts to follow.
fn is_below_folder(path: &Path, root: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(root) = std::fs::metadata(root) else {
            return false;
        };
        path.ancestors().any(|ancestor| {
            std::fs::metadata(ancestor)
                .is_ok_and(|found| (found.dev(), found.ino()) == (root.dev(), root.ino()))
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (path, root);
        false
    }
}

/// Whether `folder` is one this program made: a real folder of the
/// user's holding the marker [`RootCache::create`] writes.
fn is_ours(folder: &Path) -> bool {
    std::fs::symlink_metadata(folder).is_ok_and(|metadata| metadata.is_dir())
        && private::open_checked(&folder.join(MARKER), 0).is_ok()
}

/// The largest segments of an index of `files` files holding
/// `content_bytes` of searchable text can take, with room to spare: the
/// fixed parts, a record and a name of the longest kind per file, and per
/// byte of text at most one new trigram (its posting, a varint of up to 5
/// bytes, and its lookup entry) and its filter bits. Segments larger than
/// this were not written for this tree: the restore refuses them (they
/// are opened, before the walk, only within the disk budget).
pub fn segment_bound(files: u64, content_bytes: u64) -> u64 {
    const FIXED: u64 = 1 << 20;
    const PER_FILE: u64 = (FILE_RECORD_BYTES + MAX_NAME_BYTES) as u64;
    const PER_BYTE: u64 = 5 + LOOKUP_BYTES as u64 + 1;
    FIXED
        .saturating_add(files.saturating_mul(PER_FILE))
        .saturating_add(content_bytes.saturating_mul(PER_BYTE))
}

fn new_segment_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!("seg-{nanos:x}-{}.idx", std::process::id())
}

fn is_segment_name(name: &str) -> bool {
    name.len() <= MAX_SEGMENT_NAME
        && name
            .strip_prefix("seg-")
            .and_then(|rest| rest.strip_suffix(".idx"))
            .is_some_and(|middle| {
                !middle.is_empty()
                    && middle
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-')
            })
}

fn parse_manifest(text: &str) -> Result<Vec<Committed>, CacheError> {
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|at| at + 1)
        .ok_or(CacheError::Manifest("too short"))?;
    let (body, check) = text.split_at(body_end);
    let expected = format!("check {:08x}\n", crc32fast::hash(body.as_bytes()));
    if check != expected {
        return Err(CacheError::Manifest("checksum"));
    }
    let mut lines = body.lines();
    if lines.next() != Some(MANIFEST_FIRST_LINE) {
        return Err(CacheError::Manifest("unknown version"));
    }
    lines
        .map(|line| {
            let mut words = line
                .strip_prefix("segment ")
                .ok_or(CacheError::Manifest("a line that names no segment"))?
                .split(' ');
            let (Some(name), Some(first_id), Some(dead), None) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                return Err(CacheError::Manifest(
                    "a segment line that is not name, id, dead",
                ));
            };
            if !is_segment_name(name) {
                return Err(CacheError::Manifest("a line that names no segment"));
            }
            let first_id = first_id
                .parse()
                .ok()
                .filter(|_| first_id.bytes().all(|b| b.is_ascii_digit()))
                .ok_or(CacheError::Manifest("a segment's first id is not a number"))?;
            let dead = Committed::parse_dead(dead).ok_or(CacheError::Manifest(
                "a segment's dead ids are not increasing runs",
            ))?;
            Ok(Committed {
                name: name.to_string(),
                first_id,
                dead,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::testing::unfiltered_records;
    use crate::walk::Stamp;

    pub(super) fn config_in(dir: &Path) -> IndexCacheConfig {
        IndexCacheConfig {
            cache_dir: Some(dir.to_path_buf()),
            ..IndexCacheConfig::default()
        }
    }

    /// A committed cache of `root` with one segment of `names`.
    pub(super) fn committed_cache(
        config: &IndexCacheConfig,
        root: &Path,
        names: &[&str],
    ) -> RootCache {
        let cache = RootCache::locate(config, root).unwrap();
        cache.create().unwrap();
        let lock = cache.try_lock_writer().unwrap().unwrap();
        let stamp = Stamp::of(&std::fs::metadata(root).unwrap());
        let files = unfiltered_records(names, stamp);
        let ids: Vec<u32> = (0..names.len() as u32).collect();
        let segment = cache.write_segment(&lock, &files, [(42, ids)]).unwrap();
        cache.commit(&lock, &[Committed::new(segment, 0)]).unwrap();
        cache
    }

    #[test]
    fn folder_names_are_readable_distinct_and_recognised() {
        let a = folder_name(Path::new("/home/me/my project"));
        let b = folder_name(Path::new("/home/you/my project"));
        assert!(a.starts_with("my_project-"), "{a}");
        assert_ne!(a, b);
        assert!(is_folder_name(&a) && is_folder_name(&folder_name(Path::new("/"))));
        assert!(!is_folder_name("Documents") && !is_folder_name("x-0123"));
    }

    #[test]
    fn what_a_killed_writer_left_goes_when_the_next_writer_starts() {
        let root = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(root.path()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = config_in(dir.path());
        let cache = committed_cache(&config, &root, &["a.rs"]);
        let committed = cache.committed().unwrap();
        let lock = cache.try_lock_writer().unwrap().unwrap();
        let stamp = Stamp::of(&std::fs::metadata(&root).unwrap());
        let left = cache
            .write_segment(&lock, &unfiltered_records(&["b.rs"], stamp), [(7, vec![0])])
            .unwrap();
        std::fs::write(cache.folder().join(".half-written.tmp"), b"x").unwrap();
        cache.remove_uncommitted(&lock).unwrap();
        let mut present: Vec<String> = std::fs::read_dir(cache.folder())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| is_segment_name(name) || name.ends_with(".tmp"))
            .collect();
        present.sort();
        assert_eq!(
            present,
            [committed[0].name.clone()],
            "{left} and the temporary file go"
        );
        assert!(cache.open_segment(&committed[0].name, u64::MAX).is_ok());
    }

    #[test]
    fn the_cache_never_lives_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(root.path()).unwrap();
        let config = config_in(&root.join("cache"));
        assert!(matches!(
            RootCache::locate(&config, &root),
            Err(CacheError::InsideRoot(_))
        ));
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            let link = outside.path().join("link");
            std::os::unix::fs::symlink(&root, &link).unwrap();
            assert!(matches!(
                RootCache::locate(&config_in(&link), &root),
                Err(CacheError::InsideRoot(_))
            ));
        }
        // A folder that does not exist yet, then `..` back into the root.
        let parent = root.parent().unwrap();
        let name = root.file_name().unwrap();
        let sneaky = parent.join("not-there").join("..").join(name);
        assert!(matches!(
            RootCache::locate(&config_in(&sneaky), &root),
            Err(CacheError::DotDot(_))
        ));
        let off = IndexCacheConfig {
            persist: false,
            ..config_in(Path::new("/elsewhere"))
        };
        assert!(matches!(
            RootCache::locate(&off, &root),
            Err(CacheError::Off)
        ));
    }

    #[test]
    fn a_commit_is_what_readers_see_and_stale_segments_go() {
        let (cache_dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let config = config_in(cache_dir.path());
        let cache = committed_cache(&config, root.path(), &["a", "b"]);
        let committed = cache.committed().unwrap();
        assert_eq!(committed.len(), 1);
        let segment = cache.open_segment(&committed[0].name, u64::MAX).unwrap();
        assert_eq!(segment.postings(42).unwrap(), vec![0, 1]);
        // A killed writer's leftovers: a temporary file and an uncommitted segment.
        std::fs::write(cache.folder().join(".seg-1-2.idx.9.0.tmp"), b"half").unwrap();
        std::fs::write(cache.folder().join("seg-1-2.idx"), b"junk").unwrap();
        assert_eq!(cache.committed().unwrap(), committed);
        let lock = cache.try_lock_writer().unwrap().unwrap();
        cache.commit(&lock, &committed).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(cache.folder())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [LOCK, MANIFEST, MARKER, committed[0].name.as_str()]);
    }

    #[test]
    fn one_writer_at_a_time() {
        let (cache_dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cache = RootCache::locate(&config_in(cache_dir.path()), root.path()).unwrap();
        cache.create().unwrap();
        let first = cache.try_lock_writer().unwrap();
        assert!(first.is_some());
        assert!(cache.try_lock_writer().unwrap().is_none());
        drop(first);
        assert!(cache.try_lock_writer().unwrap().is_some());
    }

    #[test]
    fn damaged_manifests_are_errors() {
        let good = format!(
            "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 -\nsegment seg-3-4.idx 70 3,5-9,12\n"
        );
        let seal = |body: &str| format!("{body}check {:08x}\n", crc32fast::hash(body.as_bytes()));
        let sealed = seal(&good);
        assert_eq!(
            parse_manifest(&sealed).unwrap(),
            [
                Committed::new("seg-1-2.idx", 0),
                Committed {
                    dead: vec![3..4, 5..10, 12..13],
                    ..Committed::new("seg-3-4.idx", 70)
                }
            ]
        );
        assert_eq!(parse_manifest(&sealed).unwrap()[1].dead_text(), "3,5-9,12");
        for bad in [
            String::new(),
            good.clone(),
            sealed.replace("seg-1", "seg-3"),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment ../../etc/passwd 0 -\n"
            )),
            seal(&format!("{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx\n")),
            seal(&format!("{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0\n")),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx -1 -\n"
            )),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx +1 -\n"
            )),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 4294967296 -\n"
            )),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 5,3\n"
            )),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 3-5,5\n"
            )),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 7-3\n"
            )),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 0-4294967295\n"
            )),
            seal(&format!("{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 ,\n")),
            seal(&format!(
                "{MANIFEST_FIRST_LINE}\nsegment seg-1-2.idx 0 - x\n"
            )),
            seal("mcp-project-helper index 1\nsegment seg-1-2.idx\n"),
        ] {
            assert!(parse_manifest(&bad).is_err(), "{bad:?}");
        }
    }
}
