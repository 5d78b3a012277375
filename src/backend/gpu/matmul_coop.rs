//! The tensor-core f16 matmul: `shaders/matmul_coop.wgsl` (a template) unrolled per tile
//! configuration, and its launch. Taken for f16 where the device was created with
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` (see `context`), else the SIMT kernel runs.

use std::fmt::Write;

use super::buffer::{GpuBuffer, alloc};
use super::context::Context;
use super::encoder::dispatch;
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
}

impl CoopConfig {
    /// Preferred first; the first that fits the adapter's workgroup limits is used. Both
    /// are 128x128 tiles of 256 invocations; measured on an H200 (kernel alone, GPU
    /// timestamps; BENCHMARKS.md) the double-buffered one (45 KiB of workgroup memory) ran
    /// 66 / 146 / 121 / 124 TFLOP/s at n = 1024 / 2048 / 4096 / 8192, the single-stage one
    /// (27 KiB, for adapters with 32 KiB) 141 / 117 / 120 from n = 2048. A 128x256 tile was
    /// 5-8% faster at n = 2048 and 4096 but unsteady at 8192 (142, then 92 TFLOP/s in a later
    /// call), so it is not used.
    pub const TABLE: [CoopConfig; 2] = [
        CoopConfig { sub_m: 4, sub_n: 2, frag_m: 2, frag_n: 4, bk: 32, group_m: 8, stages: 2 },
        CoopConfig { sub_m: 4, sub_n: 2, frag_m: 2, frag_n: 4, bk: 32, group_m: 8, stages: 1 },
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
        let tiles = self.bm() * (self.bk + 8) + self.bk * (self.bn() + 8);
        self.stages * tiles * 2 + self.sub_m * self.sub_n * 1024
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
    out
}

/// Code generation for one configuration. Loads are vec4 (4 halves); thread `tid` loads
/// slots `tid + j * NT` of each tile, `j < la` (A) and `j < lb` (B).
struct Gen {
    c: CoopConfig,
    nt: u32,
    /// vec4 slots in one A / B tile.
    va: u32,
    vb: u32,
    /// vec4 loads per thread per tile.
    la: u32,
    lb: u32,
}

impl Gen {
    fn new(c: CoopConfig) -> Gen {
        let nt = c.threads();
        let (va, vb) = (c.bm() * c.bk / 4, c.bk * c.bn() / 4);
        Gen { c, nt, va, vb, la: va.div_ceil(nt), lb: vb.div_ceil(nt) }
    }

    fn config(&self) -> String {
        let c = self.c;
        format!(
            "const WGM: u32 = {}u;\nconst WGN: u32 = {}u;\nconst FM: u32 = {}u;\nconst FN: u32 = {}u;\n\
             const BK: u32 = {}u;\nconst GROUP_M: u32 = {}u;\nconst STAGES: u32 = {}u;\n",
            c.sub_m, c.sub_n, c.frag_m, c.frag_n, c.bk, c.group_m, c.stages
        )
    }

    fn declarations(&self) -> String {
        let mut s = String::new();
        for i in 0..self.c.frag_m {
            for j in 0..self.c.frag_n {
                let _ = writeln!(s, "    var c{i}_{j}: coop_mat16x16<f32, C>;");
            }
        }
        for j in 0..self.la {
            let _ = writeln!(s, "    var ra{j} = vec4<f16>(0.0h);");
        }
        for j in 0..self.lb {
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
        let (bk4, bn4) = (self.c.bk / 4, self.c.bn() / 4);
        let mut s = String::new();
        for j in 0..self.la {
            let _ = writeln!(
                s,
                "{ind}ra{j} = vec4<f16>(0.0h);\n{ind}{}{{ let v = tid + {}u; let gm = m0 + v / {bk4}u; \
                 let gk = {k0} + (v % {bk4}u) * 4u; if (gm < M && gk < K) {{ ra{j} = gA[(abase + gm * lda + gk) >> 2u]; }} }}",
                self.guard(j, self.va),
                j * self.nt
            );
        }
        for j in 0..self.lb {
            let _ = writeln!(
                s,
                "{ind}rb{j} = vec4<f16>(0.0h);\n{ind}{}{{ let v = tid + {}u; let gk = {k0} + v / {bn4}u; \
                 let gn = n0 + (v % {bn4}u) * 4u; if (gk < K && gn < N) {{ rb{j} = gB[(bbase + gk * ldb + gn) >> 2u]; }} }}",
                self.guard(j, self.vb),
                j * self.nt
            );
        }
        s
    }

    /// Registers -> workgroup memory stage `stage` (a WGSL expression).
    fn store(&self, ind: &str, stage: &str) -> String {
        let (bk4, bn4) = (self.c.bk / 4, self.c.bn() / 4);
        let scatter = |arr: &str, r: &str| {
            (0..4).map(|q| format!("{arr}[s + {q}u] = {r}.{};", ["x", "y", "z", "w"][q])).collect::<Vec<_>>().join(" ")
        };
        let mut s = String::new();
        for j in 0..self.la {
            let _ = writeln!(
                s,
                "{ind}{}{{ let v = tid + {}u; let s = {stage} * BM * SA + (v / {bk4}u) * SA + (v % {bk4}u) * 4u; {} }}",
                self.guard(j, self.va),
                j * self.nt,
                scatter("As", &format!("ra{j}"))
            );
        }
        for j in 0..self.lb {
            let _ = writeln!(
                s,
                "{ind}{}{{ let v = tid + {}u; let s = {stage} * BK * SB + (v / {bn4}u) * SB + (v % {bn4}u) * 4u; {} }}",
                self.guard(j, self.vb),
                j * self.nt,
                scatter("Bs", &format!("rb{j}"))
            );
        }
        s
    }

    /// Multiply-accumulate one slab held in workgroup memory stage `stage`.
    fn compute(&self, ind: &str, stage: &str) -> String {
        let c = self.c;
        let mut s = String::new();
        for kk in (0..c.bk).step_by(16) {
            for i in 0..c.frag_m {
                let _ = writeln!(
                    s,
                    "{ind}let a{i}_{kk} = coopLoadT<coop_mat16x16<f16, A>>(&As[{stage} * BM * SA + (sm * {}u + {}u) * SA + {kk}u], SA);",
                    c.frag_m * 16,
                    i * 16
                );
            }
            for j in 0..c.frag_n {
                let _ = writeln!(
                    s,
                    "{ind}let b{j}_{kk} = coopLoadT<coop_mat16x16<f16, B>>(&Bs[{stage} * BK * SB + {kk}u * SB + sn * {}u + {}u], SB);",
                    c.frag_n * 16,
                    j * 16
                );
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

/// The first configuration that fits the adapter's workgroup limits.
fn pick(ctx: &Context) -> Option<CoopConfig> {
    let l = &ctx.limits;
    CoopConfig::TABLE.into_iter().find(|c| {
        c.threads() <= l.max_compute_invocations_per_workgroup
            && c.threads() <= l.max_compute_workgroup_size_x
            && c.workgroup_bytes() <= l.max_compute_workgroup_storage_size
    })
}

/// Whether the coop kernel takes this matmul: f16 on a coop-capable device, with rows and
/// batch starts aligned for vec4 loads and stores.
pub(super) fn eligible(ctx: &Context, dtype: DType, n: usize, k: usize, (a_bs, b_bs): (usize, usize)) -> bool {
    dtype == DType::F16 && ctx.has_coop && [n, k, a_bs, b_bs].iter().all(|v| v.is_multiple_of(4))
}

/// Launches the coop kernel; `w` holds the parameters (`matmul.wgsl` layout, flags 0) and is
/// completed per batch chunk here. `None` when no configuration fits the adapter.
pub(super) fn launch(
    ctx: &Context,
    s: &Stream,
    ins: &[&GpuBuffer],
    (m, n): (usize, usize),
    batches: usize,
    (a_bs, b_bs): (usize, usize),
    mut w: [u32; 16],
) -> Result<Option<GpuBuffer>> {
    let Some(cfg) = pick(ctx) else { return Ok(None) };
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
        w[3] = count as u32;
        w[8] = super::u32_param("matmul", first * a_bs)?;
        w[9] = super::u32_param("matmul", first * b_bs)?;
        w[10] = super::u32_param("matmul", first * m * n)?;
        dispatch(ctx, &p, &w, &[(1, ins[0]), (2, ins[1]), (3, &o)], [gx as u32, gy as u32, count as u32])?;
        first += count;
    }
    Ok(Some(o))
}
