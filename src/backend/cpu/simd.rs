//! Runtime dispatch to the widest instruction set the CPU has (AVX-512, AVX2+FMA, or the
//! build's baseline), through `pulp`. Kernels pass their loop as an `#[inline(always)]`
//! closure; everything it calls that is `#[inline(always)]` (or small enough to inline)
//! is compiled for that instruction set, so plain element loops vectorise to its width.

/// Runs `f` compiled for the best instruction set detected at run time.
#[inline(always)]
pub(crate) fn vectorize<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}
