//! Op tables: the one place an op's code, name and dtype domain are written.
//!
//! [`op_table!`] turns a list of `Variant = code, "name", domain;` into an enum with
//! those discriminants and its `ALL`, `name()`, `code()`, `domain()` and
//! `wgsl_name()`. The GPU shaders never spell a code: [`wgsl_constants`] prepends
//! `const UNARY_EXP: u32 = 7u;` lines generated from these tables, and the shaders
//! write `case UNARY_EXP:`. Codes are explicit (not declaration order) so that
//! reordering a table cannot renumber a shader.

use crate::dtype::DType;

/// The families of dtypes a kernel is written for; each is one WGSL helper file
/// (`types_float.wgsl`, `types_sint.wgsl`, `types_uint.wgsl`, `types_bool.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DTypeClass {
    /// F16, BF16, F32, F64.
    Float,
    /// I32, I64.
    SInt,
    /// U32.
    UInt,
    /// Bool.
    Bool,
}

impl DTypeClass {
    /// Every class.
    pub const ALL: [DTypeClass; 4] = [DTypeClass::Float, DTypeClass::SInt, DTypeClass::UInt, DTypeClass::Bool];

    /// The class of a dtype.
    pub fn of(d: DType) -> DTypeClass {
        match d {
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => DTypeClass::Float,
            DType::I32 | DType::I64 => DTypeClass::SInt,
            DType::U32 => DTypeClass::UInt,
            DType::Bool => DTypeClass::Bool,
        }
    }

    fn bit(self) -> u8 {
        match self {
            DTypeClass::Float => 1,
            DTypeClass::SInt => 2,
            DTypeClass::UInt => 4,
            DTypeClass::Bool => 8,
        }
    }
}

/// The dtype classes an op is defined on. `infer` refuses others, and every shader of a
/// class in the domain must have a `case` for the op (tests/suite/shaders_naga.rs checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Domain(u8);

impl Domain {
    /// Floats only.
    pub const FLOAT: Domain = Domain(1);
    /// Floats and signed integers.
    pub const SIGNED: Domain = Domain(1 | 2);
    /// Floats and integers (not bool).
    pub const NUM: Domain = Domain(1 | 2 | 4);
    /// Bool only.
    pub const BOOL: Domain = Domain(8);
    /// Every dtype.
    pub const ANY: Domain = Domain(15);

    /// True if `class` is in the domain.
    pub fn has(self, class: DTypeClass) -> bool {
        self.0 & class.bit() != 0
    }
    /// True if `dtype`'s class is in the domain.
    pub fn contains(self, dtype: DType) -> bool {
        self.has(DTypeClass::of(dtype))
    }
    /// What the domain holds, for error messages.
    pub fn describe(self) -> &'static str {
        match self.0 {
            1 => "floating-point dtypes",
            3 => "floating-point and signed integer dtypes",
            7 => "numeric (non-bool) dtypes",
            8 => "bool",
            _ => "any dtype",
        }
    }
}

/// Declares an op enum from a table of `Variant = code, "name", domain;` rows.
macro_rules! op_table {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $prefix:literal {
            $($(#[$vmeta:meta])* $v:ident = $code:literal, $str:literal, $dom:ident;)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $v = $code,)*
        }

        impl $name {
            /// Every op of the table.
            pub const ALL: &'static [$name] = &[$($name::$v),*];
            /// Prefix of the WGSL constants (`UNARY` in `UNARY_EXP`).
            pub const WGSL_PREFIX: &'static str = $prefix;

            /// The op's name ("exp").
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$v => $str,)*
                }
            }
            /// The code the shaders switch on.
            pub fn code(self) -> u32 {
                self as u32
            }
            /// The dtype classes the op is defined on.
            pub fn domain(self) -> $crate::primitive::Domain {
                match self {
                    $($name::$v => $crate::primitive::Domain::$dom,)*
                }
            }
            /// The WGSL constant holding the code (`UNARY_EXP`).
            pub fn wgsl_name(self) -> String {
                format!("{}_{}", $prefix, self.name().to_uppercase())
            }
        }
    };
}
pub(crate) use op_table;

/// WGSL `const` declarations for every op code and dtype code, prepended to every shader
/// so the shaders name codes instead of spelling them.
#[cfg(feature = "gpu")]
pub(crate) fn wgsl_constants() -> String {
    use super::{ArgReduceOp, BinaryOp, ReduceOp, ScatterMode, UnaryOp};
    let mut s = String::from("// Generated from the Rust op tables (src/primitive/table.rs).\n");
    let mut push = |name: String, code: u32| s.push_str(&format!("const {name}: u32 = {code}u;\n"));
    UnaryOp::ALL.iter().for_each(|o| push(o.wgsl_name(), o.code()));
    BinaryOp::ALL.iter().for_each(|o| push(o.wgsl_name(), o.code()));
    ReduceOp::ALL.iter().for_each(|o| push(o.wgsl_name(), o.code()));
    ArgReduceOp::ALL.iter().for_each(|o| push(o.wgsl_name(), o.code()));
    ScatterMode::ALL.iter().for_each(|o| push(o.wgsl_name(), o.code()));
    DType::ALL.iter().for_each(|d| push(format!("DTYPE_{}", d.name().to_uppercase()), d.code()));
    s
}
