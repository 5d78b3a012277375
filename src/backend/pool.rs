//! A size-keyed pool of idle buffers under a byte cap, evicting the least recently
//! released first: the policy both backends keep freed buffers by (the GPU's storage
//! buffers, the CPU's large vectors), generic over the buffer so it is tested without a
//! device.

use std::collections::{BTreeMap, HashMap, VecDeque};

/// How many idle bytes a pool keeps at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cap {
    /// The default: the most bytes live buffers have held at once, never below the floor
    /// given, so a loop whose working set was allocated once keeps getting it back and
    /// memory held stays within twice the largest working set. (On the GPU, a fixed 1 GiB
    /// made softmax over 1 GiB rows on an H200 allocate fresh buffers every call: 20 GB/s,
    /// 464 with this cap and the fusion changes of the same session; an unfused 5-op chain
    /// over 64M f32, whose temporaries passed the cap, took 12.4 ms where its first four
    /// ops took 1.2.)
    HighWater(u64),
    /// Set by `lazuli::memory::set_cache_limit`.
    Bytes(u64),
}

impl Cap {
    /// The cap in bytes when live buffers have held at most `high_water` bytes at once.
    pub(crate) fn bytes(self, high_water: u64) -> u64 {
        match self {
            Cap::HighWater(floor) => high_water.max(floor),
            Cap::Bytes(b) => b,
        }
    }
}

/// How many idle buffers of a size [`Pool::take`] looks at: past a few, making a new
/// buffer is cheaper than searching.
const TAKE_SCAN: usize = 8;

/// Idle buffers by bucket size, at most `cap` bytes in all. When a released buffer would
/// pass the cap, the least recently released buffers are evicted first: a loop that
/// allocates and drops same-sized arrays must keep getting its buffer back. (Dropping the
/// newest instead made an f16 8192² matmul loop on an H200 allocate a fresh 128 MiB output
/// every time, once earlier sizes had filled the pool: 77 instead of 123 TFLOP/s.)
pub(crate) struct Pool<B> {
    /// Idle buffers by size, each with its release number, oldest first.
    free: HashMap<u64, VecDeque<(u64, B)>>,
    /// Release number -> size of every idle buffer: the least recently released first.
    /// (A map, not a list searched on every take: a chain of a million small ops keeps
    /// many idle buffers, and a linear search made it quadratic.)
    order: BTreeMap<u64, u64>,
    /// The next release number.
    seq: u64,
    /// Idle bytes held.
    pub(crate) bytes: u64,
    /// The cap.
    pub(crate) cap: Cap,
}

impl<B> Pool<B> {
    pub(crate) fn new(cap: Cap) -> Self {
        Pool { free: HashMap::new(), order: BTreeMap::new(), seq: 0, bytes: 0, cap }
    }

    /// Sets the cap, returning the old one and the buffers evicted to fit under the new
    /// (`high_water`: see [`Cap::bytes`]).
    pub(crate) fn set_cap(&mut self, cap: Cap, high_water: u64) -> (Cap, Vec<B>) {
        let old = std::mem::replace(&mut self.cap, cap);
        let limit = cap.bytes(high_water);
        let mut evicted = Vec::new();
        while self.bytes > limit {
            let (_, size) = self.order.pop_first().expect("bytes > 0 means a buffer is idle");
            let (_, b) = self.free.get_mut(&size).and_then(|q| q.pop_front()).expect("order tracks every idle buffer");
            evicted.push(b);
            self.bytes -= size;
        }
        (old, evicted)
    }

    /// Every idle buffer, taken out (for the caller to free outside its lock); the cap
    /// stays.
    pub(crate) fn take_all(&mut self) -> Vec<B> {
        let cap = self.cap;
        let (_, evicted) = self.set_cap(Cap::Bytes(0), 0);
        self.cap = cap;
        evicted
    }

    /// The most recently released buffer of `size` bytes for which `usable` holds, among
    /// the [`TAKE_SCAN`] most recent, if any.
    pub(crate) fn take(&mut self, size: u64, usable: impl Fn(&B) -> bool) -> Option<B> {
        let q = self.free.get_mut(&size)?;
        let i = (0..q.len()).rev().take(TAKE_SCAN).find(|&i| usable(&q[i].1))?;
        let (seq, b) = q.remove(i).expect("in range");
        self.order.remove(&seq).expect("order tracks every idle buffer");
        self.bytes -= size;
        Some(b)
    }

    /// Keeps `b` (of `size` bytes); returns the buffers evicted to stay under the cap (or
    /// `b` itself when it alone is larger than the cap). `high_water`: see [`Cap::bytes`].
    pub(crate) fn put(&mut self, b: B, size: u64, high_water: u64) -> Vec<B> {
        let cap = self.cap.bytes(high_water);
        if size > cap {
            return vec![b];
        }
        let mut evicted = Vec::new();
        while self.bytes + size > cap {
            let (seq, oldest) = self.order.pop_first().expect("bytes > 0 means a buffer is idle");
            let (s, e) =
                self.free.get_mut(&oldest).and_then(|q| q.pop_front()).expect("order tracks every idle buffer");
            debug_assert_eq!(s, seq, "the oldest of a size is the oldest in order");
            evicted.push(e);
            self.bytes -= oldest;
        }
        let seq = self.seq;
        self.seq += 1;
        self.free.entry(size).or_default().push_back((seq, b));
        self.order.insert(seq, size);
        self.bytes += size;
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::{Cap, Pool};

    const POOL_FLOOR_BYTES: u64 = 1 << 30;

    #[test]
    fn pool_evicts_least_recently_released() {
        let mut p = Pool::new(Cap::Bytes(100));
        assert!(p.put("a40", 40, 0).is_empty());
        assert!(p.put("b40", 40, 0).is_empty());
        // 40 + 40 + 30 > 100: the oldest (a) goes, the newest stays.
        assert_eq!(p.put("c30", 30, 0), ["a40"]);
        assert_eq!(p.take(40, |_| true), Some("b40"));
        assert_eq!(p.take(40, |_| true), None);
        assert!(p.put("d60", 60, 0).is_empty());
        assert_eq!(p.put("e50", 50, 0), ["c30", "d60"]);
        assert_eq!(p.put("big", 101, 0), ["big"]);
        assert_eq!(p.take(50, |_| true), Some("e50"));
        assert_eq!((p.bytes, p.order.len()), (0, 0));
    }

    #[test]
    fn pool_cap_lowered_evicts_oldest() {
        let mut p = Pool::new(Cap::Bytes(100));
        p.put("a30", 30, 0);
        p.put("b30", 30, 0);
        p.put("c20", 20, 0);
        assert_eq!(p.set_cap(Cap::Bytes(50), 0), (Cap::Bytes(100), vec!["a30"]));
        assert_eq!(p.bytes, 50);
        assert_eq!(p.put("d40", 40, 0), ["b30", "c20"], "the new cap holds");
        assert_eq!(p.set_cap(Cap::Bytes(0), 0).1.len(), 1);
        assert_eq!((p.bytes, p.order.len()), (0, 0));
        p.set_cap(Cap::Bytes(100), 0);
        p.put("e10", 10, 0);
        p.put("f20", 20, 0);
        assert_eq!(p.take_all(), ["e10", "f20"], "oldest first");
        assert_eq!((p.bytes, p.order.len(), p.cap), (0, 0, Cap::Bytes(100)), "the cap stays");
    }

    #[test]
    fn pool_takes_the_newest_usable() {
        let mut p = Pool::new(Cap::Bytes(1000));
        for i in 0..12 {
            p.put(i, 10, 0);
        }
        assert_eq!(p.take(10, |&i| i % 3 == 0), Some(9), "the newest that may be used");
        assert_eq!(p.take(10, |&i| i == 0), None, "past the scan, a new buffer is cheaper");
        assert_eq!(p.take(10, |_| true), Some(11));
        assert_eq!((p.bytes, p.order.len()), (100, 10));
    }

    #[test]
    fn pool_returns_the_newest_of_a_size() {
        let mut p = Pool::new(Cap::Bytes(100));
        p.put(1, 10, 0);
        p.put(2, 10, 0);
        assert_eq!(p.take(10, |_| true), Some(2));
        assert_eq!(p.take(10, |_| true), Some(1));
    }

    #[test]
    fn default_cap_follows_the_high_water_mark() {
        assert_eq!(Cap::HighWater(POOL_FLOOR_BYTES).bytes(10), POOL_FLOOR_BYTES, "never below the floor");
        let big = 3 * POOL_FLOOR_BYTES;
        assert_eq!(Cap::HighWater(POOL_FLOOR_BYTES).bytes(big), big);
        // A working set of three floor-sized buffers, released after use, stays idle whole.
        let mut p = Pool::new(Cap::HighWater(POOL_FLOOR_BYTES));
        for i in 0..3 {
            assert!(p.put(i, POOL_FLOOR_BYTES, big).is_empty());
        }
        assert_eq!(p.put(3, POOL_FLOOR_BYTES, big), [0], "the oldest goes past the mark");
        assert_eq!(Cap::Bytes(5).bytes(big), 5, "a set limit is kept as set");
    }
}
