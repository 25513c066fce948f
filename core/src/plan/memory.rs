//! Buffer planning: the device memory every unit's operands need, as slots, and how many
//! copies cold-cache mode rotates through. Invariant: a slot is at least as large as the
//! furthest byte its operand can reach given its shape, strides and leading dimensions.

use super::types::{Buffer, Location};

/// L2 size assumed when the trace does not record one (H100: 50 MiB).
pub const DEFAULT_L2_BYTES: u64 = 50 << 20;

/// How far cold rotation must spread a unit's data: twice L2, so LRU has evicted a copy
/// before it comes round again.
pub const COLD_FOOTPRINT_FACTOR: u64 = 2;

/// At most this many copies, so tiny units do not allocate gigabytes of copies.
pub const MAX_ROTATION: u64 = 64;

#[derive(Default)]
pub struct Slots {
    pub buffers: Vec<Buffer>,
}

impl Slots {
    /// A new slot of at least one byte (cuBLAS and CUDA reject null pointers).
    pub fn add(&mut self, bytes: u64, location: Location) -> u32 {
        self.buffers.push(Buffer {
            bytes: bytes.max(1),
            location,
        });
        (self.buffers.len() - 1) as u32
    }
}

/// Copies needed so that `unit_bytes` of data rotated that many times spans
/// `COLD_FOOTPRINT_FACTOR * l2` bytes.
pub fn cold_rotation(unit_device_bytes: u64, l2: u64) -> u32 {
    if unit_device_bytes == 0 {
        return 1;
    }
    let want = COLD_FOOTPRINT_FACTOR * l2;
    want.div_ceil(unit_device_bytes).clamp(1, MAX_ROTATION) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_spreads_beyond_l2() {
        assert_eq!(cold_rotation(1 << 20, 50 << 20), 64);
        assert_eq!(cold_rotation(10 << 20, 50 << 20), 10);
        assert_eq!(cold_rotation(200 << 20, 50 << 20), 1);
    }
}
