//! Getting data in and out of lazuli without needless copies: [`Array::from_vec`](crate::Array::from_vec)
//! takes a vector as the CPU buffer, and, behind the `ndarray` feature, `From`/`TryFrom`
//! conversions between [`Array`](crate::Array) and `ndarray`'s arrays and views.

mod host;
#[cfg(feature = "ndarray")]
mod ndarray;

pub(crate) use host::cpu_vec;
