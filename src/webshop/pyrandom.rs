//! Python's `random.Random` (MT19937) for the few calls WebShop's goal code makes, bit for bit: the
//! original orders its goals with `random.seed(233); random.shuffle(goals)` and picks price caps with
//! `random.sample`, so reproducing the generator reproduces its goal order.

const N: usize = 624;
const M: usize = 397;

/// A Mersenne Twister seeded and consumed exactly as CPython's `random` module does.
#[derive(Clone)]
pub struct PyRandom {
    mt: Box<[u32; N]>,
    index: usize,
}

impl PyRandom {
    /// `random.seed(seed)` for a non-negative integer seed (CPython seeds with the 32-bit words of
    /// `abs(seed)`, least significant first).
    pub fn new(seed: u64) -> PyRandom {
        let low = seed as u32;
        let high = (seed >> 32) as u32;
        let key: &[u32] = if high == 0 { &[low] } else { &[low, high] };
        let mut r = PyRandom { mt: Box::new([0; N]), index: N };
        r.init_by_array(key);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
        }
        self.mt[0] = 0x8000_0000;
    }

    fn twist(&mut self) {
        for k in 0..N {
            let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % N] & 0x7fff_ffff);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.getrandbits(k)` for `1 <= k <= 64`: 32-bit words, least significant first, the last
    /// one cut to its top bits.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        debug_assert!((1..=64).contains(&k));
        if k <= 32 {
            return u64::from(self.next_u32() >> (32 - k));
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        low | (high << 32)
    }

    /// `random.random()`: 53 random bits in [0, 1).
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `random._randbelow(n)` for `n >= 1`: rejection sampling on `n.bit_length()` bits.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        debug_assert!(n >= 1);
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `random.shuffle(items)`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.randbelow(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// `random.sample(range(n), k)`: the chosen indices in selection order. CPython draws from a
    /// shrinking pool when the population is small compared with `k`, else by rejection from a set;
    /// both branches are reproduced because they consume the generator differently.
    pub fn sample_indices(&mut self, n: usize, k: usize) -> Vec<usize> {
        assert!(k <= n, "sample larger than population");
        let mut setsize = 21usize;
        if k > 5 {
            let exponent = ((k * 3) as f64).ln() / 4f64.ln();
            setsize += 4usize.pow(exponent.ceil() as u32);
        }
        if n <= setsize {
            let mut pool: Vec<usize> = (0..n).collect();
            (0..k)
                .map(|i| {
                    let j = self.randbelow((n - i) as u64) as usize;
                    let picked = pool[j];
                    pool[j] = pool[n - i - 1];
                    picked
                })
                .collect()
        } else {
            let mut selected = std::collections::HashSet::new();
            (0..k)
                .map(|_| loop {
                    let j = self.randbelow(n as u64) as usize;
                    if selected.insert(j) {
                        break j;
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values printed by CPython 3.11 for the same calls.

    #[test]
    fn matches_cpython_getrandbits_and_shuffle() {
        let mut r = PyRandom::new(233);
        let got: Vec<u64> = (0..3).map(|_| r.getrandbits(32)).collect();
        assert_eq!(got, [2931216007, 3446561803, 2698614761]);
        let mut r = PyRandom::new(233);
        let mut items: Vec<u32> = (0..10).collect();
        r.shuffle(&mut items);
        assert_eq!(items, [5, 9, 0, 1, 4, 7, 6, 3, 8, 2]);
    }

    #[test]
    fn matches_cpython_two_word_seed_random_and_wide_bits() {
        let mut r = PyRandom::new((1 << 40) + 5);
        assert_eq!(r.random(), 0.5043802970418443);
        assert_eq!(r.getrandbits(40), 727003120297);
    }

    #[test]
    fn matches_cpython_sample_both_branches() {
        let mut r = PyRandom::new(0);
        assert_eq!(r.sample_indices(4, 2), [3, 1]);
        assert_eq!(r.sample_indices(100, 7), [5, 33, 65, 62, 51, 38, 61]);
    }
}
