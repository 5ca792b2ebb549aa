// The 16-bit floats (bf16, f16) in generated code: fused loops compute them
// in f32, converting on load and rounding to nearest even on store (and at
// an explicit `cast`), so a chain of half operations is one loop like an f32
// chain rather than one CPU kernel per operation.
//
// The conversions are the ones of ir/Half.h, written as integer and float
// arithmetic on i16/i32 lanes: bit for bit what the CPU kernels compute
// (NaN payloads, f16 subnormals included), and the loop vectorizer turns
// them into a few AVX-512 (or AVX2) instructions per 16 lanes on any x86.
// The bf16 instructions (vcvtneps2bf16) flush subnormals and would not
// match the interpreter; a bf16 load is a shift, a bf16 store six integer
// operations, cheap next to the loads and stores themselves.
#include "backend/jit/Codegen.h"

namespace mdl::backend::jit {

using llvm::Value;

namespace {

Value *u32(llvm::IRBuilder<> &b, uint32_t v, Value *like) {
  return llvm::ConstantInt::get(like->getType(), v);
}

/// f32 bits -> bf16 bits (ir::floatToBf16): round to nearest even; a NaN
/// stays a quiet NaN of the same sign and upper payload.
Value *bitsToBf16(llvm::IRBuilder<> &b, Value *u) {
  Value *nan = b.CreateICmpUGT(b.CreateAnd(u, u32(b, 0x7fffffffu, u)), u32(b, 0x7f800000u, u));
  Value *odd = b.CreateAnd(b.CreateLShr(u, u32(b, 16, u)), u32(b, 1, u));
  Value *rounded =
      b.CreateLShr(b.CreateAdd(b.CreateAdd(u, u32(b, 0x7fffu, u)), odd), u32(b, 16, u));
  Value *quiet = b.CreateOr(b.CreateLShr(u, u32(b, 16, u)), u32(b, 0x40u, u));
  return b.CreateSelect(nan, quiet, rounded);
}

/// f32 bits -> f16 bits (ir::floatToHalf): round to nearest even,
/// subnormals included, overflow to infinity, every NaN to 0x7e00.
Value *bitsToF16(llvm::IRBuilder<> &b, Value *u) {
  llvm::Type *f32 = b.getFloatTy();
  Value *sign = b.CreateAnd(b.CreateLShr(u, u32(b, 16, u)), u32(b, 0x8000u, u));
  Value *f = b.CreateAnd(u, u32(b, 0x7fffffffu, u));
  // At least 65536 (the first float that rounds beyond the largest half):
  // infinity, or NaN.
  Value *big = b.CreateICmpUGE(f, u32(b, (127u + 16u) << 23, u));
  Value *special = b.CreateSelect(b.CreateICmpUGT(f, u32(b, 0x7f800000u, u)), u32(b, 0x7e00u, u),
                                  u32(b, 0x7c00u, u));
  // Below the smallest normal half: adding 0.5 aligns the half's subnormal
  // grid with the float's last mantissa bit; the float addition rounds.
  Value *small = b.CreateICmpULT(f, u32(b, (127u - 14u) << 23, u));
  Value *sum = b.CreateFAdd(b.CreateBitCast(f, f32), llvm::ConstantFP::get(f32, 0.5));
  Value *sub = b.CreateSub(b.CreateBitCast(sum, u->getType()), u32(b, 0x3f000000u, u));
  // Normal: rebias the exponent and round the 13 dropped bits to even.
  Value *odd = b.CreateAnd(b.CreateLShr(f, u32(b, 13, u)), u32(b, 1, u));
  Value *normal = b.CreateLShr(
      b.CreateAdd(b.CreateAdd(f, u32(b, ((15u - 127u) << 23) + 0xfffu, u)), odd), u32(b, 13, u));
  Value *out = b.CreateSelect(big, special, b.CreateSelect(small, sub, normal));
  return b.CreateOr(out, sign);
}

} // namespace

bool isHalf(ir::DType t) { return t == ir::DType::BF16 || t == ir::DType::F16; }

Value *halfToFloat(llvm::IRBuilder<> &b, ir::DType t, Value *bits) {
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy();
  Value *u = b.CreateZExt(bits, i32);
  if (t == ir::DType::BF16)
    return b.CreateBitCast(b.CreateShl(u, u32(b, 16, u)), f32);
  // f16 (ir::halfToFloat): exponent and mantissa moved into float position
  // read as a float are the value times 2^-112 (subnormals included).
  Value *sign = b.CreateShl(b.CreateAnd(u, u32(b, 0x8000u, u)), u32(b, 16, u));
  Value *em = b.CreateAnd(u, u32(b, 0x7fffu, u));
  Value *moved = b.CreateShl(em, u32(b, 13, u));
  Value *scaled = b.CreateBitCast(
      b.CreateFMul(b.CreateBitCast(moved, f32), llvm::ConstantFP::get(f32, 0x1p112)), i32);
  // Infinity and NaN keep an all-ones exponent.
  Value *special = b.CreateOr(moved, u32(b, 0x7f800000u, u));
  Value *mag = b.CreateSelect(b.CreateICmpUGE(em, u32(b, 0x7c00u, u)), special, scaled);
  return b.CreateBitCast(b.CreateOr(mag, sign), f32);
}

Value *floatToHalf(llvm::IRBuilder<> &b, ir::DType t, Value *x) {
  Value *u = b.CreateBitCast(x, b.getInt32Ty());
  Value *bits = t == ir::DType::BF16 ? bitsToBf16(b, u) : bitsToF16(b, u);
  return b.CreateTrunc(bits, b.getInt16Ty());
}

Value *roundToHalf(llvm::IRBuilder<> &b, ir::DType t, Value *x) {
  return halfToFloat(b, t, floatToHalf(b, t, x));
}

} // namespace mdl::backend::jit
