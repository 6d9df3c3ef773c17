//! Tombstones: the ids whose files no longer hold them (changed, gone, or
//! re-read by a call while the build ran), one bit per id. A segment is
//! never changed once made, so a file's old version stays in its lists
//! until a merge leaves it out; until then its bit here keeps it from
//! being a candidate (as Zoekt's tombstones do for its shards).

/// One bit per id, set for the dead.
#[derive(Debug, Default)]
pub struct Tombstones {
    words: Vec<u64>,
}

impl Tombstones {
    pub fn mark(&mut self, id: u32) {
        let word = id as usize / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (id % 64);
    }

    pub fn clear(&mut self, id: u32) {
        if let Some(word) = self.words.get_mut(id as usize / 64) {
            *word &= !(1 << (id % 64));
        }
    }

    pub fn is_dead(&self, id: u32) -> bool {
        self.words
            .get(id as usize / 64)
            .is_some_and(|word| word & (1 << (id % 64)) != 0)
    }

    pub fn any(&self) -> bool {
        self.words.iter().any(|word| *word != 0)
    }

    /// How many of `ids` are dead.
    pub fn count(&self, ids: std::ops::Range<u32>) -> u32 {
        ids.filter(|&id| self.is_dead(id)).count() as u32
    }

    /// Forgets the ids of `ids`: a layer that held them is gone, and they
    /// may be given out again.
    pub fn forget(&mut self, ids: std::ops::Range<u32>) {
        for id in ids {
            self.clear(id);
        }
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Heap bytes.
    pub fn bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_count_and_are_forgotten() {
        let mut dead = Tombstones::default();
        assert!(!dead.is_dead(5));
        for id in [5, 64, 65, 1000] {
            dead.mark(id);
        }
        assert!(dead.is_dead(5) && dead.is_dead(1000) && !dead.is_dead(6));
        assert_eq!(dead.count(0..100), 3);
        dead.clear(64);
        assert_eq!(dead.count(0..100), 2);
        dead.forget(900..1100);
        assert!(!dead.is_dead(1000));
        assert_eq!(dead.words.len(), 2);
    }
}
