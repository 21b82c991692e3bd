//! Numbered slots for values that come and go by the thousand (parked connections): a slot
//! costs its value and 8 bytes, memory grows by a chunk of slots rather than by doubling a
//! table, and a freed slot is reused. A key names a slot and its generation, so a key whose
//! value was taken (a late wake-up) finds nothing even after the slot holds another value.

/// Slots per chunk: memory grows 1,024 slots at a time.
const CHUNK: usize = 1024;
/// `next` of a slot that is reserved or holds a value (not on the free list).
const IN_USE: u32 = u32::MAX;
/// `next` of the last free slot.
const END: u32 = u32::MAX - 1;

struct Slot<T> {
    /// Bumped each time the slot is freed.
    generation: u32,
    /// The next free slot while this one is free; [`IN_USE`] otherwise.
    next: u32,
    value: Option<T>,
}

/// A slot and its generation.
pub type Key = u64;

fn key(index: u32, generation: u32) -> Key {
    (u64::from(generation) << 32) | u64::from(index)
}

fn split(key: Key) -> (usize, u32) {
    ((key & 0xffff_ffff) as usize, (key >> 32) as u32)
}

pub struct Slots<T> {
    chunks: Vec<Vec<Slot<T>>>,
    free: u32,
    filled: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            chunks: Vec::new(),
            free: END,
            filled: 0,
        }
    }
}

impl<T> Slots<T> {
    /// Values held now.
    pub fn len(&self) -> usize {
        self.filled
    }

    fn slot(&mut self, index: usize) -> Option<&mut Slot<T>> {
        self.chunks.get_mut(index / CHUNK)?.get_mut(index % CHUNK)
    }

    /// A slot for a value to come ([`Slots::fill`]); None when 2³² − 2 slots are in use.
    pub fn reserve(&mut self) -> Option<Key> {
        if self.free != END {
            let index = self.free;
            let slot = self.slot(index as usize)?;
            let next = std::mem::replace(&mut slot.next, IN_USE);
            let generation = slot.generation;
            self.free = next;
            return Some(key(index, generation));
        }
        let count =
            self.chunks.len().saturating_sub(1) * CHUNK + self.chunks.last().map_or(0, Vec::len);
        let index = u32::try_from(count).ok().filter(|&i| i < END)?;
        if self.chunks.last().is_none_or(|chunk| chunk.len() == CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let chunk = self.chunks.last_mut()?;
        chunk.push(Slot {
            generation: 0,
            next: IN_USE,
            value: None,
        });
        Some(key(index, 0))
    }

    /// Puts `value` in the reserved slot `key`; gives it back if `key` is not reserved.
    pub fn fill(&mut self, key: Key, value: T) -> Result<(), T> {
        let (index, generation) = split(key);
        match self.slot(index) {
            Some(slot)
                if slot.generation == generation && slot.next == IN_USE && slot.value.is_none() =>
            {
                slot.value = Some(value);
                self.filled += 1;
                Ok(())
            }
            _ => Err(value),
        }
    }

    /// Takes the value of slot `key` and frees the slot; None when the key's value was taken
    /// already (or never put).
    pub fn take(&mut self, key: Key) -> Option<T> {
        let (index, generation) = split(key);
        let slot = self.slot(index)?;
        if slot.generation != generation {
            return None;
        }
        let value = slot.value.take()?;
        self.filled -= 1;
        self.free_slot(index);
        Some(value)
    }

    /// Frees the reserved slot `key` if it was never filled.
    pub fn release(&mut self, key: Key) {
        let (index, generation) = split(key);
        if let Some(slot) = self.slot(index) {
            if slot.generation == generation && slot.next == IN_USE && slot.value.is_none() {
                self.free_slot(index);
            }
        }
    }

    fn free_slot(&mut self, index: usize) {
        let free = self.free;
        if let Some(slot) = self.slot(index) {
            slot.generation = slot.generation.wrapping_add(1);
            slot.next = free;
            // `index` came from a key this type made, so it fits a u32.
            self.free = index as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_comes_back_once_and_a_stale_key_finds_nothing() {
        let mut slots = Slots::default();
        let a = slots.reserve().expect("slot");
        assert_eq!(slots.take(a), None, "reserved, not filled");
        slots.fill(a, "a").expect("reserved");
        assert_eq!(slots.len(), 1);
        assert_eq!(slots.take(a), Some("a"));
        assert_eq!(slots.take(a), None);
        // The slot is reused under a new generation: the old key does not reach it.
        let b = slots.reserve().expect("slot");
        assert_eq!(split(a).0, split(b).0);
        assert_ne!(a, b);
        slots.fill(b, "b").expect("reserved");
        assert_eq!(slots.take(a), None);
        assert_eq!(slots.fill(a, "stale"), Err("stale"));
        assert_eq!(slots.take(b), Some("b"));
        assert_eq!(slots.len(), 0);
    }

    #[test]
    fn a_released_reservation_is_reused_and_filled_slots_are_not_released() {
        let mut slots = Slots::default();
        let a = slots.reserve().expect("slot");
        slots.release(a);
        assert_eq!(slots.fill(a, 1), Err(1));
        let b = slots.reserve().expect("slot");
        assert_eq!(split(a).0, split(b).0);
        slots.fill(b, 2).expect("reserved");
        slots.release(b);
        assert_eq!(slots.take(b), Some(2));
    }

    #[test]
    fn thousands_of_slots_grow_by_chunks_and_every_value_comes_back() {
        let mut slots = Slots::default();
        let keys: Vec<Key> = (0..3 * CHUNK + 5)
            .map(|i| {
                let key = slots.reserve().expect("slot");
                slots.fill(key, i).expect("reserved");
                key
            })
            .collect();
        assert_eq!(slots.chunks.len(), 4);
        assert!(slots.chunks.iter().all(|c| c.capacity() == CHUNK));
        for (i, key) in keys.iter().enumerate().rev() {
            assert_eq!(slots.take(*key), Some(i));
        }
        assert_eq!(slots.len(), 0);
        // Freed slots are used again before the slots grow.
        for _ in 0..3 * CHUNK + 5 {
            let key = slots.reserve().expect("slot");
            slots.fill(key, 0).expect("reserved");
        }
        assert_eq!(slots.chunks.len(), 4);
    }
}
