//! Element types: the Rust types a buffer may hold and their C dtypes.
use std::fmt;

use multiworld_sys as sys;

/// The element type of a buffer, as the C API names it (`mw_dtype_t`).
///
/// ```
/// use multiworld::{Dtype, Element, F16};
/// assert_eq!(<f32 as Element>::DTYPE, Dtype::Float32);
/// assert_eq!(F16::DTYPE.size(), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// `MW_INT8`, Rust `i8`.
    Int8,
    /// `MW_UINT8`, Rust `u8`.
    Uint8,
    /// `MW_INT32`, Rust `i32`.
    Int32,
    /// `MW_UINT32`, Rust `u32`.
    Uint32,
    /// `MW_INT64`, Rust `i64`.
    Int64,
    /// `MW_UINT64`, Rust `u64`.
    Uint64,
    /// `MW_FLOAT16` (IEEE binary16), Rust [`F16`].
    Float16,
    /// `MW_BFLOAT16` (upper half of a binary32), Rust [`BF16`].
    Bfloat16,
    /// `MW_FLOAT32`, Rust `f32`.
    Float32,
    /// `MW_FLOAT64`, Rust `f64`.
    Float64,
}

impl Dtype {
    /// The size of one element in bytes.
    ///
    /// ```
    /// assert_eq!(multiworld::Dtype::Float64.size(), 8);
    /// ```
    pub fn size(self) -> usize {
        match self {
            Dtype::Int8 | Dtype::Uint8 => 1,
            Dtype::Float16 | Dtype::Bfloat16 => 2,
            Dtype::Int32 | Dtype::Uint32 | Dtype::Float32 => 4,
            Dtype::Int64 | Dtype::Uint64 | Dtype::Float64 => 8,
        }
    }

    /// The `mw_dtype_t` value.
    ///
    /// ```
    /// assert_eq!(multiworld::Dtype::Bfloat16.to_raw(), multiworld::sys::MW_BFLOAT16);
    /// ```
    pub fn to_raw(self) -> sys::mw_dtype_t {
        match self {
            Dtype::Int8 => sys::MW_INT8,
            Dtype::Uint8 => sys::MW_UINT8,
            Dtype::Int32 => sys::MW_INT32,
            Dtype::Uint32 => sys::MW_UINT32,
            Dtype::Int64 => sys::MW_INT64,
            Dtype::Uint64 => sys::MW_UINT64,
            Dtype::Float16 => sys::MW_FLOAT16,
            Dtype::Bfloat16 => sys::MW_BFLOAT16,
            Dtype::Float32 => sys::MW_FLOAT32,
            Dtype::Float64 => sys::MW_FLOAT64,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that buffers of multiworld operations may hold.
///
/// Implemented for `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`
/// and the 16-bit float newtypes [`F16`] and [`BF16`]. The trait is sealed:
/// the library writes raw bytes into receive buffers, so only types for which
/// every bit pattern is a valid value and whose layout matches the dtype can
/// implement it.
///
/// ```
/// use multiworld::{Dtype, Element, BF16};
/// fn dtype_of<T: Element>(_: &[T]) -> Dtype {
///     T::DTYPE
/// }
/// assert_eq!(dtype_of(&[1u64, 2]), Dtype::Uint64);
/// assert_eq!(dtype_of(&[BF16::from_f32(1.0)]), Dtype::Bfloat16);
/// ```
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The C dtype of this type.
    const DTYPE: Dtype;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$d;
        }
    )*};
}

element! {
    i8 => Int8, u8 => Uint8, i32 => Int32, u32 => Uint32, i64 => Int64, u64 => Uint64,
    f32 => Float32, f64 => Float64, F16 => Float16, BF16 => Bfloat16,
}

/// An IEEE 754 binary16 value, stored as its bits (`MW_FLOAT16`).
///
/// The library reduces these on the CPU through `f32` with
/// round-to-nearest-even back to 16 bits; sends and receives move the bits
/// unchanged. [`F16::from_f32`] rounds the same way.
///
/// ```
/// use multiworld::F16;
/// let h = F16::from_f32(1.5);
/// assert_eq!(h.to_bits(), 0x3e00);
/// assert_eq!(h.to_f32(), 1.5);
/// assert_eq!(F16::from_bits(0x7c00).to_f32(), f32::INFINITY);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct F16(u16);

impl F16 {
    /// The value with these bits.
    ///
    /// ```
    /// assert_eq!(multiworld::F16::from_bits(0x3c00).to_f32(), 1.0);
    /// ```
    pub const fn from_bits(bits: u16) -> F16 {
        F16(bits)
    }

    /// The bits of this value.
    ///
    /// ```
    /// assert_eq!(multiworld::F16::from_f32(-2.0).to_bits(), 0xc000);
    /// ```
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// The nearest binary16 value (ties to even; overflow gives infinity,
    /// NaN stays NaN).
    ///
    /// ```
    /// use multiworld::F16;
    /// assert_eq!(F16::from_f32(1e6).to_bits(), 0x7c00); // overflow
    /// assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
    /// ```
    pub fn from_f32(x: f32) -> F16 {
        F16(f32_to_f16_bits(x))
    }

    /// The exact `f32` value.
    ///
    /// ```
    /// assert_eq!(multiworld::F16::from_bits(0x0001).to_f32(), 2f32.powi(-24));
    /// ```
    pub fn to_f32(self) -> f32 {
        f16_bits_to_f32(self.0)
    }
}

impl fmt::Debug for F16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "F16({:?} = {:#06x})", self.to_f32(), self.0)
    }
}

impl From<F16> for f32 {
    fn from(h: F16) -> f32 {
        h.to_f32()
    }
}

/// A bfloat16 value (the upper 16 bits of an `f32`), stored as its bits
/// (`MW_BFLOAT16`).
///
/// ```
/// use multiworld::BF16;
/// let b = BF16::from_f32(3.0);
/// assert_eq!(b.to_bits(), 0x4040);
/// assert_eq!(b.to_f32(), 3.0);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BF16(u16);

impl BF16 {
    /// The value with these bits.
    ///
    /// ```
    /// assert_eq!(multiworld::BF16::from_bits(0x3f80).to_f32(), 1.0);
    /// ```
    pub const fn from_bits(bits: u16) -> BF16 {
        BF16(bits)
    }

    /// The bits of this value.
    ///
    /// ```
    /// assert_eq!(multiworld::BF16::from_f32(-2.0).to_bits(), 0xc000);
    /// ```
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// The nearest bfloat16 value (ties to even; NaN stays NaN).
    ///
    /// ```
    /// assert_eq!(multiworld::BF16::from_f32(1.00390625).to_bits(), 0x3f80); // ties to even
    /// ```
    pub fn from_f32(x: f32) -> BF16 {
        let b = x.to_bits();
        if x.is_nan() {
            return BF16(((b >> 16) as u16) | 0x0040);
        }
        let round = 0x7fff + ((b >> 16) & 1);
        BF16((b.wrapping_add(round) >> 16) as u16)
    }

    /// The exact `f32` value.
    ///
    /// ```
    /// assert_eq!(multiworld::BF16::from_bits(0xc000).to_f32(), -2.0);
    /// ```
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl fmt::Debug for BF16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BF16({:?} = {:#06x})", self.to_f32(), self.0)
    }
}

impl From<BF16> for f32 {
    fn from(b: BF16) -> f32 {
        b.to_f32()
    }
}

fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x007f_ffff;
    if exp == 0xff {
        return if man == 0 {
            sign | 0x7c00
        } else {
            sign | 0x7e00 | (man >> 13) as u16
        };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x0080_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x03ff) as u32;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            let mut e: u32 = 127 - 15 + 1;
            let mut m = man;
            while m & 0x0400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x03ff) << 13)
        }
    } else if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 112) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_every_non_nan_bit_pattern() {
        for bits in 0..=u16::MAX {
            let h = F16::from_bits(bits);
            let x = h.to_f32();
            if x.is_nan() {
                assert!(F16::from_f32(x).to_f32().is_nan());
                continue;
            }
            assert_eq!(F16::from_f32(x).to_bits(), bits, "bits {:#06x}", bits);
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
        assert_eq!(F16::from_f32(1.0 + 2f32.powi(-11)).to_bits(), 0x3c00);
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: even.
        assert_eq!(F16::from_f32(1.0 + 3.0 * 2f32.powi(-11)).to_bits(), 0x3c02);
        assert_eq!(F16::from_f32(65520.0).to_bits(), 0x7c00);
        assert_eq!(F16::from_f32(65519.0).to_bits(), 0x7bff);
        assert_eq!(F16::from_f32(2f32.powi(-25)).to_bits(), 0);
        assert_eq!(F16::from_f32(2f32.powi(-24)).to_bits(), 1);
        assert_eq!(F16::from_f32(-0.0).to_bits(), 0x8000);
    }

    #[test]
    fn bf16_round_trips_and_rounds() {
        for bits in 0..=u16::MAX {
            let b = BF16::from_bits(bits);
            if b.to_f32().is_nan() {
                continue;
            }
            assert_eq!(BF16::from_f32(b.to_f32()).to_bits(), bits);
        }
        assert_eq!(BF16::from_f32(1.0 + 2f32.powi(-8)).to_bits(), 0x3f80);
        assert_eq!(BF16::from_f32(1.0 + 3.0 * 2f32.powi(-8)).to_bits(), 0x3f82);
    }
}
