//! WGSL sources and their per-dtype specialisation.
//!
//! A kernel family is one file in `shaders/`. It is written against an element type
//! `T` (and an accumulator type `A`) and a small set of dtype helpers (`unary_t`,
//! `binary_t`, `to_acc`...). Specialising prepends, as text, `enable f16;` where needed,
//! the `alias T = ...;` lines and the helper file for the dtype's category
//! (`types_float.wgsl`, `types_sint.wgsl`, `types_uint.wgsl`, `types_bool.wgsl`).
//! Ops within a family are chosen with pipeline-overridable constants (`override OP`),
//! which the driver folds, so the branch costs nothing at run time.

use crate::dtype::DType;
use crate::error::{Error, Result};

/// A family of GPU kernels: one WGSL file, specialised per dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Constant fill and `arange`.
    Fill,
    /// Unary, binary, comparison, select and dtype conversion.
    Elementwise,
    /// Reductions, arg-reductions and scans.
    Reduce,
    /// Strided copy (`as_strided`) and concatenation.
    Copy,
    /// Gather and scatter.
    Index,
    /// Threefry-2x32 random bits (`U32` only).
    Random,
    /// A simple tiled matmul with batch broadcasting (float dtypes only).
    MatmulSimple,
}

impl Kernel {
    /// Every kernel family.
    pub const ALL: [Kernel; 7] = [
        Kernel::Fill,
        Kernel::Elementwise,
        Kernel::Reduce,
        Kernel::Copy,
        Kernel::Index,
        Kernel::Random,
        Kernel::MatmulSimple,
    ];

    /// The family's WGSL file name.
    pub fn file(self) -> &'static str {
        match self {
            Kernel::Fill => "fill.wgsl",
            Kernel::Elementwise => "elementwise.wgsl",
            Kernel::Reduce => "reduce.wgsl",
            Kernel::Copy => "copy.wgsl",
            Kernel::Index => "index.wgsl",
            Kernel::Random => "random.wgsl",
            Kernel::MatmulSimple => "matmul_simple.wgsl",
        }
    }

    fn body(self) -> &'static str {
        match self {
            Kernel::Fill => include_str!("../../../shaders/fill.wgsl"),
            Kernel::Elementwise => include_str!("../../../shaders/elementwise.wgsl"),
            Kernel::Reduce => include_str!("../../../shaders/reduce.wgsl"),
            Kernel::Copy => include_str!("../../../shaders/copy.wgsl"),
            Kernel::Index => include_str!("../../../shaders/index.wgsl"),
            Kernel::Random => include_str!("../../../shaders/random.wgsl"),
            Kernel::MatmulSimple => include_str!("../../../shaders/matmul_simple.wgsl"),
        }
    }

    /// The dtypes this family is specialised for.
    pub fn dtypes(self) -> &'static [DType] {
        const ALL: &[DType] = &[DType::Bool, DType::U32, DType::I32, DType::F16, DType::F32];
        match self {
            Kernel::Random => &[DType::U32],
            Kernel::MatmulSimple => &[DType::F16, DType::F32],
            _ => ALL,
        }
    }
}

const COMMON: &str = include_str!("../../../shaders/common.wgsl");
const TYPES_FLOAT: &str = include_str!("../../../shaders/types_float.wgsl");
const TYPES_SINT: &str = include_str!("../../../shaders/types_sint.wgsl");
const TYPES_UINT: &str = include_str!("../../../shaders/types_uint.wgsl");
const TYPES_BOOL: &str = include_str!("../../../shaders/types_bool.wgsl");

/// Every `(kernel, dtype)` pair the backend can build, f16 included (whether the
/// adapter supports f16 is checked when a kernel is built, not here).
pub fn shader_variants() -> Vec<(Kernel, DType)> {
    Kernel::ALL.iter().flat_map(|&k| k.dtypes().iter().map(move |&d| (k, d))).collect()
}

/// The WGSL source of `kernel` specialised for `dtype`. `Err(Error::Unsupported)` for a
/// dtype the family has no specialisation for (BF16, F64, I64 never do).
pub fn shader_source(kernel: Kernel, dtype: DType) -> Result<String> {
    if !kernel.dtypes().contains(&dtype) {
        return Err(Error::Unsupported {
            backend: "gpu".into(),
            msg: format!("{} has no {dtype} kernel; convert with astype(DType::F32) or use the CPU", kernel.file()),
        });
    }
    let (header, types) = match dtype {
        DType::F32 => ("alias T = f32;\nalias A = f32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n", TYPES_FLOAT),
        DType::F16 => ("enable f16;\nalias T = f16;\nalias A = f32;\nconst T_IS_F16 = true;\nconst T_IS_BOOL = false;\n", TYPES_FLOAT),
        DType::I32 => ("alias T = i32;\nalias A = i32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n", TYPES_SINT),
        DType::U32 => ("alias T = u32;\nalias A = u32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n", TYPES_UINT),
        DType::Bool => ("alias T = u32;\nalias A = u32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = true;\n", TYPES_BOOL),
        _ => unreachable!("checked above"),
    };
    let mut s = String::with_capacity(header.len() + COMMON.len() + types.len() + 8192);
    s.push_str(header);
    s.push_str(COMMON);
    s.push_str(types);
    s.push_str(kernel.body());
    Ok(s)
}
