//! The [`Array`] handle and the graph node behind it.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::backend::{Buffer, backend_for};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::primitive::{Meta, Primitive};
use crate::shape::numel;
use crate::stream::{Device, Stream, current_stream};

/// A lazy n-dimensional array: a cheap-to-clone handle (`Send + Sync`) to a graph node.
///
/// Building an op only checks shapes and dtypes and records the op, its inputs and the
/// stream it will run on. Data is computed by [`crate::eval()`], [`Array::eval`] or a read
/// ([`Array::to_vec`], [`Array::item`]).
#[derive(Clone)]
pub struct Array(pub(crate) Arc<Node>);

/// A node of the graph.
pub(crate) struct Node {
    pub(crate) meta: Meta,
    pub(crate) stream: Stream,
    pub(crate) state: Mutex<State>,
    /// Signalled when `state` leaves `Running`.
    pub(crate) done: Condvar,
}

/// Where a node is in its life. `Pending` holds the op and inputs; evaluation takes them
/// out (detaching the node from its inputs, so their memory can go) and leaves `Ready`.
pub(crate) enum State {
    Pending { op: Primitive, inputs: Vec<Array> },
    Running,
    Ready(Buffer),
    Failed(Error),
}

impl Node {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Node {
    /// Drops the graph above this node iteratively: a chain of a million unevaluated ops
    /// must not recurse a million frames deep.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut stack = match state {
            State::Pending { inputs, .. } => std::mem::take(inputs),
            _ => return,
        };
        while let Some(a) = stack.pop() {
            // Only the last owner takes the inputs out; others just drop a reference.
            if let Some(mut node) = Arc::into_inner(a.0)
                && let State::Pending { inputs, .. } = node.state.get_mut().unwrap_or_else(|e| e.into_inner())
            {
                stack.append(inputs);
            }
        }
    }
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array(shape={:?}, dtype={}, device={})", self.shape(), self.dtype(), self.device())
    }
}

impl Array {
    /// A node with an op, on the current stream (see [`crate::with_stream`]).
    pub(crate) fn from_op(op: Primitive, inputs: Vec<Array>, shape: Vec<usize>, dtype: DType) -> Result<Array> {
        let stream = current_stream()?;
        stream.check()?;
        Ok(Self::with_state(Meta { shape, dtype }, stream, State::Pending { op, inputs }))
    }

    pub(crate) fn with_state(meta: Meta, stream: Stream, state: State) -> Array {
        Array(Arc::new(Node { meta, stream, state: Mutex::new(state), done: Condvar::new() }))
    }

    /// An array holding a copy of `data`, laid out row-major in `shape`.
    ///
    /// ```
    /// let a = lazuli::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(a.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Array> {
        if numel(shape) != data.len() {
            return Err(Error::shape(
                "from_slice",
                format!("{} elements cannot fill shape {shape:?} ({} elements)", data.len(), numel(shape)),
            ));
        }
        let mut bytes = Vec::with_capacity(data.len() * T::DTYPE.size());
        for &x in data {
            x.write_bytes(&mut bytes);
        }
        Self::from_bytes(&bytes, shape, T::DTYPE)
    }

    /// An array from host bytes in `dtype`'s layout (little-endian; bool one byte).
    /// The data lives on the CPU; ops on other devices copy it when they run.
    pub fn from_bytes(bytes: &[u8], shape: &[usize], dtype: DType) -> Result<Array> {
        if bytes.len() != numel(shape) * dtype.size() {
            return Err(Error::shape(
                "from_bytes",
                format!("{} bytes do not hold shape {shape:?} of {dtype}", bytes.len()),
            ));
        }
        let stream = current_stream()?;
        stream.check()?;
        let cpu = crate::stream::default_stream(Device::cpu())?;
        let buf = backend_for(Device::cpu())?.upload(&cpu, dtype, bytes)?;
        Ok(Self::with_state(Meta { shape: shape.to_vec(), dtype }, stream, State::Ready(buf)))
    }

    /// A 0-dimensional array holding `value`.
    pub fn scalar<T: Element>(value: T) -> Result<Array> {
        Self::from_slice(&[value], &[])
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.0.meta.shape
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.meta.shape.len()
    }
    /// Number of elements.
    pub fn size(&self) -> usize {
        numel(&self.0.meta.shape)
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.meta.dtype
    }
    /// The stream this array's op runs on.
    pub fn stream(&self) -> Stream {
        self.0.stream
    }
    /// The device this array's op runs on.
    pub fn device(&self) -> Device {
        self.0.stream.device
    }
    /// True once the data has been computed.
    pub fn is_evaluated(&self) -> bool {
        matches!(*self.0.lock(), State::Ready(_))
    }
    pub(crate) fn meta(&self) -> &Meta {
        &self.0.meta
    }
    pub(crate) fn ptr(&self) -> *const Node {
        Arc::as_ptr(&self.0)
    }

    /// Computes this array (and whatever it depends on).
    pub fn eval(&self) -> Result<()> {
        crate::eval::eval(&[self])
    }

    /// Evaluates and copies the data out as host bytes in the dtype's layout.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.eval()?;
        let _guard = crate::lifecycle::WorkGuard::enter()?;
        let buf = crate::eval::ready_buffer(self)?;
        backend_for(buf.device())?.download(&buf, self.dtype(), self.size())
    }

    /// Evaluates and copies the data out, row-major. `T` must match the dtype
    /// (use [`Array::astype`] to convert).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::dtype(
                "to_vec",
                T::DTYPE,
                format!("the array is {}; convert it with astype first", self.dtype()),
            ));
        }
        let bytes = self.to_bytes()?;
        Ok(bytes.chunks_exact(T::DTYPE.size()).map(T::read_bytes).collect())
    }

    /// The single element of a one-element array.
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::shape("item", format!("needs exactly one element, shape is {:?}", self.shape())));
        }
        Ok(self.to_vec::<T>()?[0])
    }
}
