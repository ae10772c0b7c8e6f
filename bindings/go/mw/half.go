package mw

import "math"

// F16 is an IEEE 754 binary16 value, the Go element type of Float16 buffers.
type F16 uint16

// BF16 is a bfloat16 value (the upper half of a binary32), the Go element
// type of BFloat16 buffers.
type BF16 uint16

// F16From rounds f to the nearest binary16 value (ties to even), as the
// library does after reducing through float32.
func F16From(f float32) F16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // Inf or NaN
		if mant != 0 {
			return F16(sign | 0x7e00)
		}
		return F16(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return F16(sign | 0x7c00)
	}
	if e <= 0 { // subnormal or zero in binary16
		if e < -10 {
			return F16(sign)
		}
		m := mant | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return F16(sign | uint16(h))
	}
	h := uint32(sign) | uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: still correct
	}
	return F16(h)
}

// Float32 is the exact float32 value of h.
func (h F16) Float32() float32 {
	v := uint32(h)
	sign := (v & 0x8000) << 16
	exp := (v >> 10) & 0x1f
	mant := v & 0x3ff
	switch {
	case exp == 0:
		f := float32(mant) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
}

// BF16From rounds f to the nearest bfloat16 value (ties to even).
func BF16From(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it a (quiet) NaN
		return BF16(b>>16 | 0x40)
	}
	return BF16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Float32 is the exact float32 value of h.
func (h BF16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }
