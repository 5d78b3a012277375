//! The [`Array`] handle and the graph node behind it.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use smallvec::SmallVec;

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
///
/// `{}` prints the values as NumPy's `print(a)` and `{:?}` as its `repr(a)` (both read the
/// array back; see [`crate::format`]).
#[derive(Clone)]
pub struct Array(pub(crate) Arc<Node>);

/// A node of the graph.
pub(crate) struct Node {
    pub(crate) meta: Meta,
    /// The primitive's name ("data" for arrays made from host data), kept after the
    /// primitive itself is dropped, so errors can say which op failed.
    pub(crate) op_name: &'static str,
    /// Built inside a [`retaining`] scope: keeps its primitive and inputs after eval.
    pub(crate) retain: bool,
    pub(crate) stream: Stream,
    pub(crate) state: Mutex<State>,
    /// Signalled when `state` leaves `Running` with a reader waiting.
    pub(crate) done: Condvar,
    /// A copy of the ready data on another device (the device of the first op elsewhere
    /// that read it), made by `eval::transfer`, so host data used by many GPU ops is
    /// uploaded once. Ready data never changes, so the copy stays valid for the node's life.
    pub(crate) mirror: Mutex<Option<Buffer>>,
    /// The number the last walk that started while no other walk was in progress gave
    /// this node, with that walk's id (`eval::topo_order`): such a walk finds its numbers
    /// here instead of in a hash table. Only such a walk writes it, and it reads a number
    /// only after checking that the number names this node.
    pub(crate) mark: AtomicU64,
}

/// Where a node is in its life. `Pending` holds the op and inputs; evaluation takes them
/// out (detaching the node from its inputs, so their memory can go) and leaves `Ready`,
/// which keeps them only for a node built inside a [`retaining`] scope. `Running` is
/// `waited` once a reader waits on [`Node::done`]: the runner signals only then, as
/// `notify_all` is a futex system call whether or not anyone waits (one per eval of an
/// op and its read-back: strace, session 19).
pub(crate) enum State {
    Pending { op: Primitive, inputs: Inputs },
    Running { waited: bool },
    Ready { buffer: Buffer, kept: Option<Box<Kept>> },
    Failed(Error),
}

/// A node's inputs: inline up to three, the most any primitive but `Concatenate` takes.
pub(crate) type Inputs = SmallVec<[Array; 3]>;

/// What a retained node keeps after eval, for a transform to walk.
pub(crate) struct Kept {
    pub(crate) op: Primitive,
    pub(crate) inputs: Inputs,
}

impl State {
    /// The node's inputs while it still holds them (pending or retained).
    fn inputs_mut(&mut self) -> Option<&mut Inputs> {
        match self {
            State::Pending { inputs, .. } => Some(inputs),
            State::Ready { kept: Some(k), .. } => Some(&mut k.inputs),
            State::Ready { kept: None, .. } | State::Running { .. } | State::Failed(_) => None,
        }
    }
}

thread_local! {
    /// Depth of nested [`retaining`] scopes on this thread.
    static RETAIN_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` with node retention on: nodes built inside keep `(primitive, inputs)` after
/// they are evaluated, so a transform (autodiff, compile) can walk the graph it traced.
/// Nodes built outside detach after eval, so an ordinary loop holds no history.
pub(crate) fn retaining<R>(f: impl FnOnce() -> R) -> R {
    with_retain_depth(RETAIN_DEPTH.with(|d| d.get()) + 1, f)
}

/// Runs `f` with node retention off, inside any [`retaining`] scope: `checkpoint` builds
/// its forward pass so, letting the intermediate nodes go after eval (the backward pass
/// recomputes them).
pub(crate) fn not_retaining<R>(f: impl FnOnce() -> R) -> R {
    with_retain_depth(0, f)
}

/// True inside a [`retaining`] scope (a transform is tracing on this thread).
pub(crate) fn is_retaining() -> bool {
    RETAIN_DEPTH.with(|d| d.get() > 0)
}

fn with_retain_depth<R>(depth: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            RETAIN_DEPTH.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(RETAIN_DEPTH.with(|d| d.replace(depth)));
    f()
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
        let Some(inputs) = state.inputs_mut() else { return };
        // Inline: in a chain each node takes its input's inputs, so the stack stays short
        // (a heap vector here was an allocation per node dropped). Moved and pushed one by
        // one: `SmallVec`'s generic `extend` was 5% of the 1000-op chain (callgrind).
        let mut stack = std::mem::take(inputs);
        while let Some(a) = stack.pop() {
            // Only the last owner takes the inputs out; others just drop a reference.
            if let Some(mut node) = Arc::into_inner(a.0)
                && let Some(inputs) = node.state.get_mut().unwrap_or_else(|e| e.into_inner()).inputs_mut()
            {
                while let Some(i) = inputs.pop() {
                    stack.push(i);
                }
            }
        }
    }
}

impl Array {
    /// A node applying `op` to `inputs`, on the stream the device rule picks
    /// ([`crate::stream::placement`]: the scope's, else its inputs').
    /// Its shape and dtype come from the primitive's [`Rules::infer`](crate::primitive::Rules),
    /// which also rejects inputs the primitive does not take.
    pub(crate) fn from_op(op: impl Into<Primitive>, inputs: impl IntoIterator<Item = Array>) -> Result<Array> {
        let op = op.into();
        let inputs: Inputs = inputs.into_iter().collect();
        // Metas on the stack for the common arities: every op builds one node, and this
        // vector was one of its allocations (callgrind, the 1000-op chain, session 17).
        let meta = match inputs.as_slice() {
            [] => op.infer(&[])?,
            [a] => op.infer(&[a.meta()])?,
            [a, b] => op.infer(&[a.meta(), b.meta()])?,
            [a, b, c] => op.infer(&[a.meta(), b.meta(), c.meta()])?,
            many => op.infer(&many.iter().map(Array::meta).collect::<Vec<_>>())?,
        };
        // The one place every node's size is checked: no kernel, allocation or offset
        // computation downstream can overflow.
        crate::shape::check_size(op.name(), &meta.shape, meta.dtype)?;
        // Checked there: a closed stream is never recorded.
        let stream = crate::stream::placement(inputs.iter().map(|a| a.stream()))?;
        let name = op.name();
        Ok(Self::with_state(meta, stream, name, State::Pending { op, inputs }))
    }

    pub(crate) fn with_state(meta: Meta, stream: Stream, op_name: &'static str, state: State) -> Array {
        let retain = RETAIN_DEPTH.with(|d| d.get() > 0);
        Array(Arc::new(Node {
            meta,
            stream,
            op_name,
            retain,
            state: Mutex::new(state),
            done: Condvar::new(),
            mirror: Mutex::new(None),
            mark: AtomicU64::new(0),
        }))
    }

    /// The primitive and inputs of this node, while it has them (pending, or evaluated
    /// inside a [`retaining`] scope). `None` for data and detached nodes.
    pub(crate) fn graph(&self) -> Option<(Primitive, Vec<Array>)> {
        match &*self.0.lock() {
            State::Pending { op, inputs } => Some((op.clone(), inputs.to_vec())),
            State::Ready { kept: Some(k), .. } => Some((k.op.clone(), k.inputs.to_vec())),
            State::Ready { kept: None, .. } | State::Running { .. } | State::Failed(_) => None,
        }
    }

    /// An array holding a copy of `data`, laid out row-major in `shape`.
    ///
    /// Made under a GPU stream ([`crate::with_stream`]), the data is copied to that device
    /// at once, straight from `data`; otherwise it lives on the CPU, and ops on another
    /// device copy it there once, when they first run.
    ///
    /// ```
    /// let a = lazuli::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(a.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), lazuli::Error>(())
    /// ```
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Array> {
        if let Some(a) = Self::upload_now("from_slice", data, shape)? {
            return Ok(a);
        }
        // One copy: the copied vector becomes the CPU buffer (see `Array::from_vec`).
        Self::from_host_vec("from_slice", data.to_vec(), shape)
    }

    /// An array from host bytes in `dtype`'s layout (little-endian; bool one byte).
    /// The data lives on the CPU; ops on other devices copy it when they run.
    pub fn from_bytes(bytes: &[u8], shape: &[usize], dtype: DType) -> Result<Array> {
        if bytes.len() != crate::shape::check_size("from_bytes", shape, dtype)? {
            return Err(Error::shape(
                "from_bytes",
                format!("{} bytes do not hold shape {shape:?} of {dtype}", bytes.len()),
            ));
        }
        let stream = current_stream()?;
        stream.check()?;
        let cpu = crate::stream::default_stream(Device::cpu())?;
        let buf = backend_for(Device::cpu())?.upload(&cpu, dtype, bytes)?;
        Ok(Self::with_state(Meta::new(shape, dtype), stream, "data", State::Ready { buffer: buf, kept: None }))
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
        matches!(*self.0.lock(), State::Ready { .. })
    }
    /// True while the node waits to be run (not computed, running or failed).
    pub(crate) fn is_pending(&self) -> bool {
        matches!(*self.0.lock(), State::Pending { .. })
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
        backend_for(buf.device())?.download(&buf)
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
        self.eval()?;
        let _guard = crate::lifecycle::WorkGuard::enter()?;
        let buf = crate::eval::ready_buffer(self)?;
        // One copy: straight out of a CPU buffer, else out of the downloaded bytes.
        match crate::interop::cpu_vec::<T>(&buf) {
            Some(v) => Ok(v),
            None => {
                let backend = backend_for(buf.device())?;
                T::vec_filled(self.size(), &mut |out| backend.download_into(&buf, out))
            }
        }
    }

    /// The single element of a one-element array.
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::shape("item", format!("needs exactly one element, shape is {:?}", self.shape())));
        }
        Ok(self.to_vec::<T>()?[0])
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Weak};

    use super::{Array, retaining};

    /// An ordinary loop keeps no history: once a step is evaluated and the user's handle
    /// has moved on, the previous node is freed.
    #[test]
    fn evaluated_nodes_detach_outside_a_retaining_scope() {
        let mut x = Array::from_slice(&[0.0f32; 16], &[16]).unwrap();
        let mut previous: Vec<Weak<super::Node>> = Vec::new();
        for _ in 0..100 {
            previous.push(Arc::downgrade(&x.0));
            x = x.add(1.0).unwrap();
            x.eval().unwrap();
            assert!(x.graph().is_none(), "an evaluated node outside a scope detaches");
        }
        assert!(previous.iter().all(|w| w.upgrade().is_none()), "no step of the loop is kept alive");
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![100.0; 16]);
    }

    /// Inside a scope, evaluated nodes keep their primitive and inputs for a transform.
    #[test]
    fn retained_nodes_keep_their_graph_after_eval() {
        let a = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let (b, c) = retaining(|| {
            let b = a.exp().unwrap();
            let c = b.mul(&a).unwrap();
            (b, c)
        });
        let weak_b = Arc::downgrade(&b.0);
        drop(b);
        c.eval().unwrap();
        let (op, inputs) = c.graph().expect("retained");
        assert_eq!(op.name(), "mul");
        assert_eq!(inputs.len(), 2);
        assert!(weak_b.upgrade().is_some(), "the input is held by the retained node");
        let (op_b, _) = inputs[0].graph().expect("retained too");
        assert_eq!(op_b.name(), "exp");
        // Nodes built after the scope closed detach as usual.
        let d = c.add(1.0).unwrap();
        d.eval().unwrap();
        assert!(d.graph().is_none());
    }
}
