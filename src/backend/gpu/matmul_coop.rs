//! The tensor-core f16 matmul: `shaders/matmul_coop.wgsl` (a template) unrolled per tile
//! configuration, and its launch. Taken for f16 where the device was created with
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` (see `context`), else the SIMT kernel runs.

use std::fmt::Write;

use super::buffer::{GpuBuffer, alloc};
use super::context::Context;
use super::encoder::dispatch;
use super::params::MatmulParams;
use super::pipeline::pipeline;
use super::shader::Kernel;
use crate::dtype::DType;
use crate::error::Result;
use crate::stream::Stream;

/// A tile configuration: `sub_m x sub_n` subgroups of 32 per workgroup, each owning
/// `frag_m x frag_n` 16x16 fragments; `bk` deep slabs; `stages` 1 or 2 (double-buffered
/// workgroup memory); workgroups regrouped `group_m` tile-rows at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub struct CoopConfig {
    pub sub_m: u32,
    pub sub_n: u32,
    pub frag_m: u32,
    pub frag_n: u32,
    pub bk: u32,
    pub group_m: u32,
    pub stages: u32,
    /// A is stored `[.., K, M]` (read transposed).
    pub trans_a: bool,
    /// B is stored `[.., N, K]`.
    pub trans_b: bool,
}

impl CoopConfig {
    /// Untransposed; `launch` sets the transposes. Preferred first; the first that fits the adapter's workgroup limits is used. Both
    /// are 128x128 tiles of 256 invocations; measured on an H200 (kernel alone, GPU
    /// timestamps; BENCHMARKS.md) the double-buffered one (45 KiB of workgroup memory) ran
    /// 66 / 146 / 121 / 124 TFLOP/s at n = 1024 / 2048 / 4096 / 8192, the single-stage one
    /// (27 KiB, for adapters with 32 KiB) 141 / 117 / 120 from n = 2048. A 128x256 tile was
    /// 5-8% faster at n = 2048 and 4096 but unsteady at 8192 (142, then 92 TFLOP/s in a later
    /// call), so it is not used.
    pub const TABLE: [CoopConfig; 2] = [
        CoopConfig {
            sub_m: 4,
            sub_n: 2,
            frag_m: 2,
            frag_n: 4,
            bk: 32,
            group_m: 8,
            stages: 2,
            trans_a: false,
            trans_b: false,
        },
        CoopConfig {
            sub_m: 4,
            sub_n: 2,
            frag_m: 2,
            frag_n: 4,
            bk: 32,
            group_m: 8,
            stages: 1,
            trans_a: false,
            trans_b: false,
        },
    ];

    /// Output rows per workgroup.
    pub fn bm(self) -> u32 {
        self.sub_m * self.frag_m * 16
    }

    /// Output columns per workgroup.
    pub fn bn(self) -> u32 {
        self.sub_n * self.frag_n * 16
    }

    /// Invocations per workgroup.
    pub fn threads(self) -> u32 {
        32 * self.sub_m * self.sub_n
    }

    /// Workgroup memory in bytes: f16 A and B tiles per stage (rows padded by 8), plus one
    /// f32 staging fragment per subgroup.
    pub fn workgroup_bytes(self) -> u32 {
        let g = Gen::new(self);
        self.stages * (g.a.halves() + g.b.halves()) * 2 + self.sub_m * self.sub_n * 1024
    }
}

pub(crate) const TEMPLATE: &str = include_str!("../../../shaders/matmul_coop.wgsl");

/// The WGSL of the coop matmul for `cfg`: the template's config block replaced, and its
/// `// @generate` lines expanded into straight-line code for this configuration.
pub(crate) fn source(cfg: CoopConfig) -> String {
    let g = Gen::new(cfg);
    let mut out = String::with_capacity(TEMPLATE.len() * 4);
    let mut in_config = false;
    for line in TEMPLATE.lines() {
        match line.trim() {
            "// @config-begin" => {
                in_config = true;
                out.push_str(line);
                out.push('\n');
                out.push_str(&g.config());
                continue;
            }
            "// @config-end" => in_config = false,
            "// @generate declarations" => {
                out.push_str(&g.declarations());
                continue;
            }
            "// @generate main-loop" => {
                out.push_str(&g.main_loop());
                continue;
            }
            "// @generate epilogue" => {
                out.push_str(&g.epilogue());
                continue;
            }
            _ if in_config => continue,
            _ => {}
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(super::shader::MATMUL_TILES);
    out
}

/// Code generation for one configuration. Each operand's tile is copied to workgroup
/// memory in its stored orientation (A: BM x BK, or BK x BM when transposed; B: BK x BN, or
/// BN x BK), rows padded by 8 halves, and its fragments are loaded row-major (`coopLoadT`)
/// or, for a transposed operand, column-major (`coopLoad`), so neither is ever transposed
/// by hand. Loads are vec4 along the stored rows; thread `tid` loads slots `tid + j * NT`.
struct Gen {
    c: CoopConfig,
    nt: u32,
    a: Tile,
    b: Tile,
}

/// One operand's tile as stored: `rows x cols` halves, row stride `cols + 8`.
#[derive(Clone, Copy)]
struct Tile {
    rows: u32,
    cols: u32,
}

impl Tile {
    fn stride(self) -> u32 {
        self.cols + 8
    }
    fn halves(self) -> u32 {
        self.rows * self.stride()
    }
    /// vec4 slots in the tile.
    fn slots(self) -> u32 {
        self.rows * self.cols / 4
    }
}

impl Gen {
    fn new(c: CoopConfig) -> Gen {
        let (bm, bn, bk) = (c.bm(), c.bn(), c.bk);
        let a = if c.trans_a { Tile { rows: bk, cols: bm } } else { Tile { rows: bm, cols: bk } };
        let b = if c.trans_b { Tile { rows: bn, cols: bk } } else { Tile { rows: bk, cols: bn } };
        Gen { c, nt: c.threads(), a, b }
    }

    /// vec4 loads per thread per tile.
    fn loads(&self, t: Tile) -> u32 {
        t.slots().div_ceil(self.nt)
    }

    fn config(&self) -> String {
        let c = self.c;
        format!(
            "const WGM: u32 = {}u;\nconst WGN: u32 = {}u;\nconst FM: u32 = {}u;\nconst FN: u32 = {}u;\n\
             const BK: u32 = {}u;\nconst GROUP_M: u32 = {}u;\nconst STAGES: u32 = {}u;\n\
             const SA: u32 = {}u;\nconst SB: u32 = {}u;\nconst TA: u32 = {}u;\nconst TB: u32 = {}u;\n",
            c.sub_m,
            c.sub_n,
            c.frag_m,
            c.frag_n,
            c.bk,
            c.group_m,
            c.stages,
            self.a.stride(),
            self.b.stride(),
            self.a.halves(),
            self.b.halves()
        )
    }

    fn declarations(&self) -> String {
        let mut s = String::new();
        for i in 0..self.c.frag_m {
            for j in 0..self.c.frag_n {
                let _ = writeln!(s, "    var c{i}_{j}: coop_mat16x16<f32, C>;");
            }
        }
        for j in 0..self.loads(self.a) {
            let _ = writeln!(s, "    var ra{j} = vec4<f16>(0.0h);");
        }
        for j in 0..self.loads(self.b) {
            let _ = writeln!(s, "    var rb{j} = vec4<f16>(0.0h);");
        }
        s
    }

    /// `if (slot in range)` guard, only when the tile does not split evenly over threads.
    fn guard(&self, j: u32, slots: u32) -> String {
        if (j + 1) * self.nt <= slots { String::new() } else { format!("if (tid + {}u < {slots}u) ", j * self.nt) }
    }

    /// Global -> registers for the slab starting at element `k0` (a WGSL expression).
    fn load(&self, ind: &str, k0: &str) -> String {
        let mut s = String::new();
        // (register, tile, (first index, its variable), (second index, its variable), bounds, address)
        let (ka, kb) = (format!("{k0} + r"), format!("{k0} + c"));
        let a = if self.c.trans_a {
            (format!("let gk = {ka}; let gm = m0 + c;"), "gA[(abase + gk * lda + gm) >> 2u]")
        } else {
            (format!("let gm = m0 + r; let gk = {kb};"), "gA[(abase + gm * lda + gk) >> 2u]")
        };
        let b = if self.c.trans_b {
            (format!("let gn = n0 + r; let gk = {kb};"), "gB[(bbase + gn * ldb + gk) >> 2u]")
        } else {
            (format!("let gk = {ka}; let gn = n0 + c;"), "gB[(bbase + gk * ldb + gn) >> 2u]")
        };
        for (reg, t, (idx, addr), bounds) in
            [("ra", self.a, a, "gm < M && gk < K"), ("rb", self.b, b, "gk < K && gn < N")]
        {
            let c4 = t.cols / 4;
            for j in 0..self.loads(t) {
                let _ = writeln!(
                    s,
                    "{ind}{reg}{j} = vec4<f16>(0.0h);\n{ind}{}{{ let v = tid + {}u; let r = v / {c4}u; \
                     let c = (v % {c4}u) * 4u; {idx} if ({bounds}) {{ {reg}{j} = {addr}; }} }}",
                    self.guard(j, t.slots()),
                    j * self.nt
                );
            }
        }
        s
    }

    /// Registers -> workgroup memory stage `stage` (a WGSL expression).
    fn store(&self, ind: &str, stage: &str) -> String {
        let mut s = String::new();
        for (reg, arr, t, (stride, size)) in [("ra", "As", self.a, ("SA", "TA")), ("rb", "Bs", self.b, ("SB", "TB"))] {
            let c4 = t.cols / 4;
            for j in 0..self.loads(t) {
                let scatter: Vec<String> = ["x", "y", "z", "w"]
                    .iter()
                    .enumerate()
                    .map(|(q, f)| format!("{arr}[s + {q}u] = {reg}{j}.{f};"))
                    .collect();
                let _ = writeln!(
                    s,
                    "{ind}{}{{ let v = tid + {}u; let s = {stage} * {size} + (v / {c4}u) * {stride} + (v % {c4}u) * 4u; {} }}",
                    self.guard(j, t.slots()),
                    j * self.nt,
                    scatter.join(" ")
                );
            }
        }
        s
    }

    /// Multiply-accumulate one slab held in workgroup memory stage `stage`.
    fn compute(&self, ind: &str, stage: &str) -> String {
        let c = self.c;
        let mut s = String::new();
        for kk in (0..c.bk).step_by(16) {
            for i in 0..c.frag_m {
                let m = format!("sm * {}u + {}u", c.frag_m * 16, i * 16);
                let (load, at) = if c.trans_a {
                    ("coopLoad", format!("{kk}u * SA + {m}"))
                } else {
                    ("coopLoadT", format!("({m}) * SA + {kk}u"))
                };
                let _ =
                    writeln!(s, "{ind}let a{i}_{kk} = {load}<coop_mat16x16<f16, A>>(&As[{stage} * TA + {at}], SA);");
            }
            for j in 0..c.frag_n {
                let n = format!("sn * {}u + {}u", c.frag_n * 16, j * 16);
                let (load, at) = if c.trans_b {
                    ("coopLoad", format!("({n}) * SB + {kk}u"))
                } else {
                    ("coopLoadT", format!("{kk}u * SB + {n}"))
                };
                let _ =
                    writeln!(s, "{ind}let b{j}_{kk} = {load}<coop_mat16x16<f16, B>>(&Bs[{stage} * TB + {at}], SB);");
                for i in 0..c.frag_m {
                    let _ = writeln!(s, "{ind}c{i}_{j} = coopMultiplyAdd(a{i}_{kk}, b{j}_{kk}, c{i}_{j});");
                }
            }
        }
        s
    }

    fn main_loop(&self) -> String {
        let next = format!("(t + 1u) * {}u", self.c.bk);
        let mut s = self.load("    ", "0u");
        if self.c.stages == 2 {
            // Stage t&1 is read while t+1 is written to the other: one barrier per slab.
            s += &self.store("    ", "0u");
            s += "    workgroupBarrier();\n    for (var t = 0u; t < nk; t++) {\n        let cur = t & 1u;\n";
            s += &format!("        if (t + 1u < nk) {{\n{}        }}\n", self.load("            ", &next));
            s += &self.compute("        ", "cur");
            s += &format!("        if (t + 1u < nk) {{\n{}        }}\n", self.store("            ", "(cur ^ 1u)"));
            s += "        workgroupBarrier();\n    }\n";
        } else {
            s += "    for (var t = 0u; t < nk; t++) {\n";
            s += &self.store("        ", "0u");
            s += "        workgroupBarrier();\n";
            s += &format!("        if (t + 1u < nk) {{\n{}        }}\n", self.load("            ", &next));
            s += &self.compute("        ", "0u");
            s += "        workgroupBarrier();\n    }\n";
        }
        s
    }

    /// Each fragment goes through the subgroup's f32 staging area; each lane converts and
    /// stores 8 of its 256 values as two vec4<f16>.
    fn epilogue(&self) -> String {
        let c = self.c;
        let mut s = String::new();
        for i in 0..c.frag_m {
            for j in 0..c.frag_n {
                let _ = write!(
                    s,
                    "    coopStoreT(c{i}_{j}, &Cs[sg * 256u], 16u);
    workgroupBarrier();
    for (var q = 0u; q < 2u; q++) {{
        let e = lane * 8u + q * 4u;
        let row = m0 + sm * {fm}u + {i16}u + e / 16u;
        let col = n0 + sn * {fnn}u + {j16}u + e % 16u;
        if (row < M && col < N) {{
            let s = sg * 256u + e;
            gC[(cbase + row * ldc + col) >> 2u] = vec4<f16>(vec4<f32>(Cs[s], Cs[s + 1u], Cs[s + 2u], Cs[s + 3u]));
        }}
    }}
    workgroupBarrier();
",
                    fm = c.frag_m * 16,
                    fnn = c.frag_n * 16,
                    i16 = i * 16,
                    j16 = j * 16
                );
            }
        }
        s
    }
}

/// The first configuration that fits the adapter's workgroup limits, for these transposes.
fn pick(ctx: &Context, trans_a: bool, trans_b: bool) -> Option<CoopConfig> {
    let l = &ctx.limits;
    CoopConfig::TABLE.into_iter().map(|c| CoopConfig { trans_a, trans_b, ..c }).find(|c| {
        c.threads() <= l.max_compute_invocations_per_workgroup
            && c.threads() <= l.max_compute_workgroup_size_x
            && c.workgroup_bytes() <= l.max_compute_workgroup_storage_size
    })
}

/// Whether the coop kernel takes this matmul: f16 on a coop-capable device, with stored
/// rows (`lda`, `ldb`, N for C) and batch starts aligned for vec4 loads and stores.
pub(super) fn eligible(ctx: &Context, dtype: DType, n: usize, (lda, ldb): (usize, usize), bs: (usize, usize)) -> bool {
    dtype == DType::F16 && ctx.has_coop && [n, lda, ldb, bs.0, bs.1].iter().all(|v| v.is_multiple_of(4))
}

/// Launches the coop kernel; `w` holds the parameters (`matmul.wgsl` layout; the flags
/// word picks the transposed variant, compiled in) and is completed per batch chunk here. `None`
/// when no configuration fits the adapter.
pub(super) fn launch(
    ctx: &Context,
    s: &Stream,
    ins: &[&GpuBuffer],
    (m, n): (usize, usize),
    batches: usize,
    (a_bs, b_bs): (usize, usize),
    mut w: MatmulParams,
) -> Result<Option<GpuBuffer>> {
    let (trans_a, trans_b) = (w.flags & 1 != 0, w.flags & 2 != 0);
    let Some(cfg) = pick(ctx, trans_a, trans_b) else { return Ok(None) };
    let (gx, gy) = (n.div_ceil(cfg.bn() as usize), m.div_ceil(cfg.bm() as usize));
    let max = ctx.limits.max_compute_workgroups_per_dimension as usize;
    if gx > max || gy > max {
        return Ok(None);
    }
    let p = pipeline(ctx, Kernel::MatmulCoop(cfg), DType::F16, "matmul_coop", &[])?;
    let o = alloc(s, DType::F16, batches * m * n)?;
    let mut first = 0usize;
    while first < batches {
        let count = (batches - first).min(max);
        w.batch = count as u32;
        w.a_off = super::u32_param("matmul", first * a_bs)?;
        w.b_off = super::u32_param("matmul", first * b_bs)?;
        w.c_off = super::u32_param("matmul", first * m * n)?;
        dispatch(s, &p, &w, &[(1, ins[0]), (2, ins[1]), (3, &o)], [gx as u32, gy as u32, count as u32])?;
        first += count;
    }
    Ok(Some(o))
}
