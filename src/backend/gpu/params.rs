//! Kernel parameter blocks: `#[repr(C)]` Pod structs whose WGSL mirrors are generated from
//! the same definition ([`wgsl_structs`] is appended to every shader), so a field is named
//! once and the shaders read `P.rank`, never `P[1]`.
//!
//! Only 4-byte scalars and arrays of them: their WGSL storage layout (stride 4, no
//! padding) is exactly `repr(C)`, which the layout test below checks field by field.

use bytemuck::{Pod, Zeroable};

/// Rank limit of the strided kernels (the length of the shape and stride arrays); the
/// shaders get it as `MAX_RANK` too.
pub(crate) const MAX_RANK: usize = 8;

/// A Rust field type and its WGSL spelling.
pub(crate) trait WgslType {
    fn wgsl() -> String;
}
impl WgslType for u32 {
    fn wgsl() -> String {
        "u32".into()
    }
}
impl WgslType for i32 {
    fn wgsl() -> String {
        "i32".into()
    }
}
impl<T: WgslType, const N: usize> WgslType for [T; N] {
    fn wgsl() -> String {
        format!("array<{}, {N}>", T::wgsl())
    }
}

/// Declares parameter structs and their WGSL text.
macro_rules! params {
    ($($(#[$doc:meta])* struct $name:ident { $($(#[$fdoc:meta])* $f:ident: $t:ty,)* })*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
            #[allow(non_snake_case)] // field names are the shaders' (`P.M` in the matmuls)
            pub(crate) struct $name {
                $($(#[$fdoc])* pub(crate) $f: $t,)*
            }

            impl Params for $name {}

            impl $name {
                fn wgsl() -> String {
                    let fields: Vec<String> = vec![$(format!("    {}: {},", stringify!($f), <$t as WgslType>::wgsl())),*];
                    format!("struct {} {{\n{}\n}}\n", stringify!($name), fields.join("\n"))
                }
            }
        )*

        /// The WGSL declarations of every parameter struct.
        pub(crate) fn wgsl_structs() -> String {
            let mut s = String::from("// Generated from src/backend/gpu/params.rs.\n");
            s.push_str(&format!("const MAX_RANK: u32 = {MAX_RANK}u;\n"));
            $(s.push_str(&$name::wgsl());)*
            s
        }

        #[cfg(test)]
        fn field_offsets() -> Vec<(&'static str, Vec<(&'static str, usize)>)> {
            vec![$((stringify!($name), vec![$((stringify!($f), std::mem::offset_of!($name, $f))),*])),*]
        }
    };
}

/// Most inputs of a fused region on the GPU (the stride table's length): with the
/// parameters and the output, 10 bindings, inside every adapter's storage-buffer limit
/// this backend runs on (WebGPU's minimum is 8 per stage; the region planner also checks
/// the device's own limit).
pub(crate) const MAX_FUSED_INPUTS: usize = 8;

/// Most distinct folded constants of a fused region on the GPU (a region with more runs
/// unfused, with a warning in the log).
pub(crate) const MAX_FUSED_CONSTS: usize = 32;

params! {
    /// Generated fused kernels (`fused.rs`): strides of the inputs read with broadcast.
    struct FusedParams {
        /// Threads: output elements, or in the four-lane form vectors of four divided
        /// among the threads (`fused.rs`, `WIDE_VECTORS`).
        n: u32,
        /// In the four-lane form, the output's vectors of four; thread `i` writes
        /// vectors `i`, `i + n`, ... below it.
        vectors: u32,
        /// Rank of the merged output shape.
        rank: u32,
        /// The merged output shape.
        shape: [u32; MAX_RANK],
        /// Broadcast strides of each input (used by inputs neither flat nor scalar).
        strides: [[i32; MAX_RANK]; MAX_FUSED_INPUTS],
        /// The bits of the region's folded constants (distinct values, in order of first
        /// use). Read at run time, not written into the kernel: a compiler that sees a
        /// literal 0.0 divisor may fold `x / 0.0` under WGSL's no-NaN licence (lavapipe gave
        /// 1.0 for 0/0), and one kernel then serves every value of the constants.
        consts: [u32; MAX_FUSED_CONSTS],
        /// Always 0, read at run time: the generated kernels' `keep` barrier (`fused.rs`).
        zero: u32,
    }

    /// Generated row kernels (`fused.rs`: programs that reduce): one workgroup per row
    /// (kept coordinates) walks the reduced elements; kept and reduced axes are indexed
    /// apart, each input and the output with its own strides over both.
    struct FusedReduceParams {
        /// Rows (workgroups).
        n: u32,
        /// Reduced elements per output.
        len: u32,
        /// Rank of the (merged) kept axes.
        krank: u32,
        /// Rank of the (merged) reduced axes.
        rrank: u32,
        /// The kept axes.
        kshape: [u32; MAX_RANK],
        /// The reduced axes.
        rshape: [u32; MAX_RANK],
        /// Each input's strides over the kept axes.
        kstrides: [[i32; MAX_RANK]; MAX_FUSED_INPUTS],
        /// Each input's strides over the reduced axes.
        rstrides: [[i32; MAX_RANK]; MAX_FUSED_INPUTS],
        /// The output's strides over the kept axes (an elementwise root's output is at the
        /// program's shape; a reduction's is one value per row, at `o`).
        okstrides: [i32; MAX_RANK],
        /// The output's strides over the reduced axes.
        orstrides: [i32; MAX_RANK],
        /// Folded constants, as in `FusedParams`.
        consts: [u32; MAX_FUSED_CONSTS],
        /// Always 0, as in `FusedParams`.
        zero: u32,
    }

    /// `elementwise.wgsl`: unary, binary, select, astype (the unary kernels read only `n`).
    struct EwParams {
        /// Output elements.
        n: u32,
        /// Rank of the merged broadcast shape.
        rank: u32,
        /// Bit k: input k has the output's size and is read flat.
        flat: u32,
        pad: u32,
        /// The merged output shape.
        shape: [u32; MAX_RANK],
        /// Broadcast strides of inputs 0, 1, 2 (0 on broadcast axes).
        strides: [[i32; MAX_RANK]; 3],
    }

    /// `copy.wgsl`: `strided` (n, rank, offset, shape, strides) and `concat_into` (n,
    /// block, out_block, start).
    struct CopyParams {
        /// Elements written.
        n: u32,
        rank: u32,
        /// Element offset of the strided view.
        offset: i32,
        /// `len * inner` of the input being joined.
        block: u32,
        /// `out_len * inner` of the output.
        out_block: u32,
        /// `at * inner`: where the input starts along the joined axis.
        start: u32,
        pad0: u32,
        pad1: u32,
        shape: [u32; MAX_RANK],
        strides: [i32; MAX_RANK],
    }

    /// `fill.wgsl`: `fill` (n words of `word`) and `arange` (n, start, step).
    struct FillParams {
        n: u32,
        /// The 32-bit pattern (the value in device layout; two copies for f16).
        word: u32,
        start: i32,
        step: i32,
    }

    /// `reduce.wgsl`, over `[outer, len, inner]`: `reduce_lines`, `argreduce`, `scan` (n
    /// = outer * inner) and `reduce_rows` (n = rows * segments).
    struct ReduceParams {
        n: u32,
        len: u32,
        inner: u32,
        /// reduce_rows: elements per segment.
        segment: u32,
        /// reduce_rows: segments per row.
        segments: u32,
        /// scan: from the end.
        reverse: u32,
        pad0: u32,
        pad1: u32,
    }

    /// `index.wgsl`: `gather` (n outputs, len = idx_len * inner) and `scatter` (n columns,
    /// len = updates per column); `axis_len` is the source or destination axis length.
    struct IndexParams {
        n: u32,
        len: u32,
        inner: u32,
        axis_len: u32,
    }

    /// `random.wgsl`.
    struct RandomParams {
        n: u32,
        pad0: u32,
        pad1: u32,
        pad2: u32,
    }

    /// `matmul_simple.wgsl`: batch dims as a strided walk.
    struct SimpleMatmulParams {
        m: u32,
        n: u32,
        k: u32,
        /// Rank of the merged batch shape.
        rank: u32,
        /// First batch of this dispatch.
        first: u32,
        /// Bit 0: A stored transposed; bit 1: B stored transposed.
        flags: u32,
        pad0: u32,
        pad1: u32,
        batch_shape: [u32; MAX_RANK],
        a_strides: [i32; MAX_RANK],
        b_strides: [i32; MAX_RANK],
    }

    /// `matmul.wgsl` and `matmul_coop.wgsl`: the tuned kernels.
    struct MatmulParams {
        M: u32,
        N: u32,
        K: u32,
        batch: u32,
        lda: u32,
        ldb: u32,
        ldc: u32,
        /// Bit 0: A stored transposed; bit 1: B stored transposed.
        flags: u32,
        a_off: u32,
        b_off: u32,
        c_off: u32,
        pad0: u32,
        a_bstride: u32,
        b_bstride: u32,
        c_bstride: u32,
        pad1: u32,
    }
}

/// A kernel parameter block (only the structs declared here: `dispatch` takes nothing else,
/// so a bare word array cannot slip past its WGSL mirror).
pub(crate) trait Params: Pod {}

/// The parameter block as the words `dispatch` uploads.
pub(crate) fn words<P: Params>(p: &P) -> &[u32] {
    bytemuck::cast_slice(std::slice::from_ref(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// WGSL lays these structs out like `repr(C)`: each field at the running sum of the
    /// sizes before it (4-byte scalars and arrays of them, no padding).
    #[test]
    fn layouts_match_wgsl() {
        // Bytes of a WGSL type: array<array<i32, 8>, 3> -> 4 * 8 * 3.
        let size = |ty: &str| -> usize {
            4 * ty
                .split(", ")
                .skip(1)
                .map(|n| n.trim_end_matches('>').parse::<usize>().expect("length"))
                .product::<usize>()
        };
        let text = wgsl_structs();
        for (name, fields) in field_offsets() {
            let decl = text.split(&format!("struct {name} {{")).nth(1).expect("declared");
            let decl = &decl[..decl.find('}').expect("closed")];
            let mut at = 0;
            for ((fname, offset), line) in fields.iter().zip(decl.lines().filter(|l| !l.trim().is_empty())) {
                let (f, ty) = line.trim().trim_end_matches(',').split_once(": ").expect("field: type");
                assert_eq!(f, *fname);
                assert_eq!(*offset, at, "{name}.{f}");
                at += size(ty);
            }
        }
        assert!(text.contains("strides: array<array<i32, 8>, 3>,"));
    }
}
