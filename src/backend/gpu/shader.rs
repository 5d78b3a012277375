//! WGSL sources and their per-dtype specialisation.
//!
//! A kernel family is one file in `shaders/`. It is written against an element type
//! `T` (and an accumulator type `A`) and a small set of dtype helpers (`unary_t`,
//! `binary_t`, `to_acc`...). Specialising prepends, as text, `enable f16;` where needed,
//! the `alias T = ...;` lines and the helper file for the dtype's category
//! (`types_float.wgsl`, `types_sint.wgsl`, `types_uint.wgsl`, `types_bool.wgsl`).
//! Ops within a family are chosen with pipeline-overridable constants (`override OP`),
//! which the driver folds, so the branch costs nothing at run time.

pub use super::matmul_coop::CoopConfig;
use super::params::wgsl_structs;
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
    /// A simple tiled matmul with batch broadcasting (float dtypes only), for batch
    /// layouts the tuned kernel does not take.
    MatmulSimple,
    /// The tuned matmul (`matmul.wgsl`; f16 storage by text rewrite) with one tile configuration.
    Matmul(TileConfig),
    /// The f16 tensor-core matmul (`matmul_coop.wgsl`, a template unrolled per configuration);
    /// needs a device with cooperative matrices.
    MatmulCoop(CoopConfig),
}

/// Tile configuration of the tuned matmul: a `BM x BN` output tile per workgroup, `BK`
/// deep, `TM x TN` outputs per thread, workgroups regrouped `GROUP_M` tile-rows at a time
/// for L2 reuse. See the header of `shaders/matmul.wgsl` for the constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub struct TileConfig {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub tm: u32,
    pub tn: u32,
    pub group_m: u32,
}

impl TileConfig {
    /// The configurations the backend picks from, largest tile first. Measured on an H200
    /// (shaders/matmul.wgsl header, BENCHMARKS.md): the first is fastest from n = 2048 up,
    /// the third at n = 1024; the last fits any adapter (8 KiB of workgroup memory).
    pub const TABLE: [TileConfig; 4] = [
        TileConfig { bm: 128, bn: 256, bk: 8, tm: 8, tn: 8, group_m: 8 },
        TileConfig { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8, group_m: 8 },
        TileConfig { bm: 64, bn: 128, bk: 16, tm: 4, tn: 8, group_m: 8 },
        TileConfig { bm: 64, bn: 64, bk: 8, tm: 4, tn: 4, group_m: 8 },
    ];

    /// Threads per workgroup.
    pub fn threads(self) -> u32 {
        (self.bm / self.tm) * (self.bn / self.tn)
    }

    /// Workgroup memory in bytes (double-buffered f32 tiles).
    pub fn workgroup_bytes(self) -> u32 {
        2 * self.bk * (self.bm + self.bn) * 4
    }

    fn tunables(self) -> String {
        format!(
            "const BM: u32 = {}u;\nconst BN: u32 = {}u;\nconst BK: u32 = {}u;\nconst TM: u32 = {}u;\n\
             const TN: u32 = {}u;\nconst GROUP_M: u32 = {}u;\n",
            self.bm, self.bn, self.bk, self.tm, self.tn, self.group_m
        )
    }
}

impl Kernel {
    /// Every kernel family.
    pub const ALL: [Kernel; 9] = [
        Kernel::Fill,
        Kernel::Elementwise,
        Kernel::Reduce,
        Kernel::Copy,
        Kernel::Index,
        Kernel::Random,
        Kernel::MatmulSimple,
        Kernel::Matmul(TileConfig::TABLE[0]),
        Kernel::MatmulCoop(CoopConfig::TABLE[0]),
    ];

    /// The tuned matmuls (`matmul.wgsl`, `matmul_coop.wgsl`): templates filled per tile
    /// configuration, without the dtype prelude.
    pub fn is_tuned_matmul(self) -> bool {
        match self {
            Kernel::Matmul(_) | Kernel::MatmulCoop(_) => true,
            Kernel::Fill
            | Kernel::Elementwise
            | Kernel::Reduce
            | Kernel::Copy
            | Kernel::Index
            | Kernel::Random
            | Kernel::MatmulSimple => false,
        }
    }

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
            Kernel::Matmul(_) => "matmul.wgsl",
            Kernel::MatmulCoop(_) => "matmul_coop.wgsl",
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
            // Templates: `shader_source` fills them in.
            Kernel::Matmul(_) => MATMUL_F32,
            Kernel::MatmulCoop(_) => super::matmul_coop::TEMPLATE,
        }
    }

    /// The dtypes this family is specialised for.
    pub fn dtypes(self) -> &'static [DType] {
        const ALL: &[DType] = &[DType::Bool, DType::U32, DType::I32, DType::F16, DType::F32];
        match self {
            Kernel::Random => &[DType::U32],
            Kernel::MatmulSimple | Kernel::Matmul(_) => &[DType::F16, DType::F32],
            Kernel::MatmulCoop(_) => &[DType::F16],
            Kernel::Fill | Kernel::Elementwise | Kernel::Reduce | Kernel::Copy | Kernel::Index => ALL,
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
    let tuned = TileConfig::TABLE.iter().skip(1).map(|&c| Kernel::Matmul(c));
    // Every coop configuration with every pair of transposes (TABLE[0] plain is in ALL).
    let coop = CoopConfig::TABLE
        .iter()
        .flat_map(|&c| [(false, false), (true, false), (false, true), (true, true)].map(|(a, b)| (c, a, b)))
        .skip(1)
        .map(|(c, trans_a, trans_b)| Kernel::MatmulCoop(CoopConfig { trans_a, trans_b, ..c }));
    Kernel::ALL.iter().copied().chain(tuned).chain(coop).flat_map(|k| k.dtypes().iter().map(move |&d| (k, d))).collect()
}

const MATMUL_F32: &str = include_str!("../../../shaders/matmul.wgsl");
/// `tile_of`, shared by both tuned matmuls; appended (WGSL allows any declaration order,
/// and `enable` directives must stay first).
pub(crate) const MATMUL_TILES: &str = include_str!("../../../shaders/matmul_tiles.wgsl");

/// The tuned matmul takes no dtype prelude, only `matmul_tiles.wgsl` appended; its tunables are whole `const`
/// lines between markers, replaced as text so tile arrays and loops stay constant.
fn tuned_matmul_source(cfg: TileConfig, dtype: DType) -> Result<String> {
    let body = MATMUL_F32;
    let (begin, end) = ("// @tunables-begin\n", "// @tunables-end");
    let (Some(b), Some(e)) = (body.find(begin), body.find(end)) else {
        return Err(Error::Internal("matmul.wgsl lost its @tunables markers".into()));
    };
    let src = format!("{}{}{}{}{MATMUL_TILES}{}", &body[..b], begin, cfg.tunables(), &body[e..], wgsl_structs());
    if dtype == DType::F16 { f16_storage(&src) } else { Ok(src) }
}

/// The f16 variant of the tuned matmul: f16 in the buffers, f32 in workgroup tiles and
/// accumulators, one rounding at the store. Every global load and store of `matmul.wgsl`
/// goes through the few lines rewritten here.
fn f16_storage(src: &str) -> Result<String> {
    let mut s = format!("enable f16;\n{src}");
    for (from, to) in [
        ("array<vec4<f32>>;", "array<vec4<f16>>;"),
        ("return A[i >> 2u][i & 3u];", "return f32(A[i >> 2u][i & 3u]);"),
        ("return B[i >> 2u][i & 3u];", "return f32(B[i >> 2u][i & 3u]);"),
        ("x = A[e >> 2u];", "x = vec4<f32>(A[e >> 2u]);"),
        ("x = B[e >> 2u];", "x = vec4<f32>(B[e >> 2u]);"),
        ("C[e >> 2u] = v;", "C[e >> 2u] = vec4<f16>(v);"),
        ("] = v.x;", "] = f16(v.x);"),
        ("] = v.y;", "] = f16(v.y);"),
        ("] = v.z;", "] = f16(v.z);"),
        ("] = v.w;", "] = f16(v.w);"),
    ] {
        // A rewrite that matches nothing would leave an f32 access in an f16 kernel.
        if !s.contains(from) {
            return Err(Error::Internal(format!("f16 matmul rewrite: `{from}` is no longer in matmul.wgsl")));
        }
        s = s.replace(from, to);
    }
    Ok(s)
}

/// The f32 helper library every generated (fused) kernel starts from: the same header,
/// op constants, common and float helpers and parameter structs as `shader_source` gives
/// an f32 elementwise kernel, so a fused step computes what its own kernel computes.
pub(crate) fn f32_library() -> String {
    let header = "alias T = f32;\nalias A = f32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n";
    let mut s = String::with_capacity(header.len() + COMMON.len() + TYPES_FLOAT.len() + 8192);
    s.push_str(header);
    s.push_str(&crate::primitive::wgsl_constants());
    s.push_str(COMMON);
    s.push_str(TYPES_FLOAT);
    s.push_str(&wgsl_structs());
    s
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
    match kernel {
        Kernel::Matmul(cfg) => return tuned_matmul_source(cfg, dtype),
        Kernel::MatmulCoop(cfg) => return Ok(super::matmul_coop::source(cfg) + &wgsl_structs()),
        Kernel::Fill
        | Kernel::Elementwise
        | Kernel::Reduce
        | Kernel::Copy
        | Kernel::Index
        | Kernel::Random
        | Kernel::MatmulSimple => {}
    }
    let (header, types) = match dtype {
        DType::F32 => {
            ("alias T = f32;\nalias A = f32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n", TYPES_FLOAT)
        }
        DType::F16 => (
            "enable f16;\nalias T = f16;\nalias A = f32;\nconst T_IS_F16 = true;\nconst T_IS_BOOL = false;\n",
            TYPES_FLOAT,
        ),
        DType::I32 => {
            ("alias T = i32;\nalias A = i32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n", TYPES_SINT)
        }
        DType::U32 => {
            ("alias T = u32;\nalias A = u32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = false;\n", TYPES_UINT)
        }
        DType::Bool => {
            ("alias T = u32;\nalias A = u32;\nconst T_IS_F16 = false;\nconst T_IS_BOOL = true;\n", TYPES_BOOL)
        }
        DType::I64 | DType::BF16 | DType::F64 => {
            return Err(Error::Internal(format!("{dtype} passed the dtype check of {}", kernel.file())));
        }
    };
    let mut s = String::with_capacity(header.len() + COMMON.len() + types.len() + 8192);
    s.push_str(header);
    s.push_str(&crate::primitive::wgsl_constants());
    s.push_str(COMMON);
    s.push_str(types);
    s.push_str(kernel.body());
    // WGSL allows declarations in any order; `enable` must stay first.
    s.push_str(&wgsl_structs());
    Ok(s)
}
